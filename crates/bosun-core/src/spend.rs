//! What a turn spent on models, by what it was spent on: the conversation's
//! own rounds, compaction's summary requests, and model calls made for tools
//! (MCP sampling; sub-agents). Each response is priced on its own when the
//! session has prices, since long-context tiers price a request by its own
//! size and a sum of responses is not priced as one.

use serde::{Deserialize, Serialize};

use crate::limits::Pricing;
use crate::message::Usage;

/// Tokens, and their cost when the session can price them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Spent {
    /// The tokens.
    pub usage: Usage,
    /// Their cost in millionths of a dollar; `None` when the session has no
    /// prices for its model (a cost is never guessed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl Spent {
    /// Nothing spent.
    pub fn is_zero(&self) -> bool {
        self.usage.is_zero()
    }

    /// `usage` at a known or unknown cost.
    pub fn new(usage: Usage, cost_micros: Option<u64>) -> Self {
        Self { usage, cost_micros }
    }

    /// One response's usage, priced by `pricing`.
    pub fn priced(usage: Usage, pricing: Option<&dyn Pricing>) -> Self {
        Self { usage, cost_micros: pricing.and_then(|p| p.cost_micros(&usage)) }
    }

    /// Adds `other`: the cost stays known only while both are.
    pub fn add(&mut self, other: Spent) {
        if other.is_zero() {
            return;
        }
        self.cost_micros = if self.is_zero() {
            other.cost_micros
        } else {
            self.cost_micros.zip(other.cost_micros).map(|(a, b)| a + b)
        };
        self.usage += other.usage;
    }
}

/// What a turn spent, by bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Spend {
    /// The conversation's own model rounds.
    #[serde(default, skip_serializing_if = "Spent::is_zero")]
    pub main: Spent,
    /// Compaction's summary requests (tier 2).
    #[serde(default, skip_serializing_if = "Spent::is_zero")]
    pub compaction: Spent,
    /// Model calls tools made and reported with their results (an MCP
    /// server's sampling), priced at the session model's prices.
    #[serde(default, skip_serializing_if = "Spent::is_zero")]
    pub tools: Spent,
    /// What `delegate_tasks`' children spent, priced at the session model's
    /// prices.
    #[serde(default, skip_serializing_if = "Spent::is_zero")]
    pub subagents: Spent,
}

impl Spend {
    /// Nothing spent in any bucket.
    pub fn is_zero(&self) -> bool {
        self.main.is_zero() && self.compaction.is_zero() && self.tools.is_zero() && self.subagents.is_zero()
    }

    /// Every bucket together.
    pub fn total(&self) -> Spent {
        let mut total = self.main;
        total.add(self.compaction);
        total.add(self.tools);
        total.add(self.subagents);
        total
    }

    /// Adds `other`, bucket by bucket.
    pub fn add(&mut self, other: &Spend) {
        self.main.add(other.main);
        self.compaction.add(other.compaction);
        self.tools.add(other.tools);
        self.subagents.add(other.subagents);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct PerToken;
    impl Pricing for PerToken {
        fn cost_micros(&self, usage: &Usage) -> Option<u64> {
            Some(usage.input + 10 * usage.output)
        }
    }

    struct Unpriced;
    impl Pricing for Unpriced {
        fn cost_micros(&self, _: &Usage) -> Option<u64> {
            None
        }
    }

    #[test]
    fn a_cost_is_known_only_while_every_part_of_it_is() {
        let mut spent = Spent::default();
        spent.add(Spent::priced(Usage::new(100, 10), Some(&PerToken)));
        spent.add(Spent::priced(Usage::new(50, 1), Some(&PerToken)));
        assert_eq!(spent, Spent { usage: Usage::new(150, 11), cost_micros: Some(260) });
        spent.add(Spent::priced(Usage::new(1, 1), Some(&Unpriced)));
        assert_eq!(spent.cost_micros, None);
        assert_eq!(spent.usage, Usage::new(151, 12));
        // Nothing spent adds nothing, not even an unknown.
        let mut free = Spent::priced(Usage::new(1, 0), Some(&PerToken));
        free.add(Spent::priced(Usage::default(), None));
        assert_eq!(free.cost_micros, Some(1));
    }

    #[test]
    fn the_total_sums_the_buckets_and_json_leaves_out_empty_ones() {
        let spend = Spend {
            main: Spent::priced(Usage::new(100, 10), Some(&PerToken)),
            compaction: Spent::priced(Usage::new(20, 5), Some(&PerToken)),
            tools: Spent::default(),
            subagents: Spent::default(),
        };
        assert_eq!(spend.total(), Spent { usage: Usage::new(120, 15), cost_micros: Some(270) });
        let json = serde_json::to_value(spend).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "main": {"usage": {"input": 100, "output": 10, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                         "cost_micros": 200},
                "compaction": {"usage": {"input": 20, "output": 5, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                               "cost_micros": 70},
            })
        );
        let back: Spend = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, spend);
    }
}
