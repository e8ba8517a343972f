//! Prices and what a response cost, in integers: a price is micro-dollars
//! per million tokens, so tokens × price is exactly picodollars and no
//! rounding happens until a cost is shown.

use std::fmt;

use bosun_core::Usage;

use super::ModelTableError;

/// A price in US dollars per million tokens, held as micro-dollars per
/// million tokens (so `$0.125` is `125_000`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(u64);

/// Largest price accepted, dollars per million tokens: far above any
/// published price, low enough that a token count times it cannot overflow.
const MAX_DOLLARS_PER_MILLION: f64 = 1_000_000.0;

impl Price {
    /// A price from dollars per million tokens, as written in the table or a
    /// config file: not negative, finite, at most a millionth of a dollar's
    /// precision.
    pub fn from_dollars_per_million(dollars: f64) -> Result<Self, ModelTableError> {
        if !dollars.is_finite() || dollars < 0.0 {
            return Err(ModelTableError::Price {
                value: dollars,
                why: "not a price (negative or not a number)",
            });
        }
        if dollars > MAX_DOLLARS_PER_MILLION {
            return Err(ModelTableError::Price {
                value: dollars,
                why: "above $1,000,000 per million tokens",
            });
        }
        let micros = dollars * 1e6;
        let rounded = micros.round();
        // A price written with more decimals than a micro-dollar would be
        // silently changed by the integer form; refuse it instead.
        if (micros - rounded).abs() > 1e-6 {
            return Err(ModelTableError::Price { value: dollars, why: "finer than a millionth of a dollar" });
        }
        // Non-negative, at most 1e12 and integral, checked above.
        Ok(Self(rounded as u64))
    }

    /// The price in micro-dollars per million tokens.
    pub fn micros_per_million(self) -> u64 {
        self.0
    }

    /// What `tokens` cost at this price, in picodollars: exact.
    fn of(self, tokens: u64) -> u128 {
        u128::from(tokens) * u128::from(self.0)
    }
}

/// The prices of one tier, per million tokens; `None` is not confirmed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Prices {
    /// Prompt tokens not read from or written to a cache.
    pub input: Option<Price>,
    /// Prompt tokens read from the provider's cache.
    pub cached_input: Option<Price>,
    /// Prompt tokens written to the provider's cache, where it bills them.
    pub cache_write: Option<Price>,
    /// Generated tokens.
    pub output: Option<Price>,
    /// Reasoning tokens, only where they are billed unlike output; `None`
    /// bills them as output.
    pub reasoning: Option<Price>,
}

impl Prices {
    /// Whether any price is known.
    pub fn any(&self) -> bool {
        [self.input, self.cached_input, self.cache_write, self.output, self.reasoning]
            .iter()
            .any(Option::is_some)
    }
}

/// Prices for requests whose prompt (input, cache reads and cache writes
/// together) is larger than a threshold: every token of such a request is
/// billed at them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongContext {
    /// The largest prompt still billed at the base prices.
    pub above_prompt_tokens: u64,
    /// The prices above it.
    pub prices: Prices,
}

/// What a model's usage costs: its prices and how its provider counts
/// tokens. Built by [`super::ModelTable::pricing`], or [`Pricing::free`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pricing {
    /// The base prices.
    pub prices: Prices,
    /// Higher prices for long prompts, if the provider has them.
    pub long_context: Option<LongContext>,
    /// Whether the usage's `output` already counts its `reasoning` tokens
    /// (OpenAI, Anthropic, Gemini as bosun decodes it) or leaves them out
    /// (xAI).
    pub output_includes_reasoning: bool,
    /// Whether bosun's decoder for the provider's API reports cache writes
    /// apart from input (Anthropic Messages only). Where it does not, a
    /// model that bills writes may have had some of its `input` billed at
    /// the write price, and the cost is a lower bound.
    pub usage_separates_cache_writes: bool,
}

impl Pricing {
    /// A model that costs nothing: the local engine.
    pub fn free() -> Self {
        let zero = Some(Price(0));
        Self {
            prices: Prices {
                input: zero,
                cached_input: zero,
                cache_write: zero,
                output: zero,
                reasoning: zero,
            },
            long_context: None,
            output_includes_reasoning: true,
            usage_separates_cache_writes: true,
        }
    }

    /// What one response cost, or `None` when a price it needs is unknown.
    /// The tier is chosen by the response's own prompt size.
    pub fn cost_of_response(&self, usage: &Usage) -> Option<Cost> {
        let prices = match &self.long_context {
            Some(long) if prompt(usage) > long.above_prompt_tokens => &long.prices,
            _ => &self.prices,
        };
        self.at(prices, usage)
    }

    /// What several responses cost together.
    pub fn cost_of_responses<'a>(&self, responses: impl IntoIterator<Item = &'a Usage>) -> Option<Cost> {
        responses.into_iter().try_fold(Cost::ZERO, |total, usage| Some(total + self.cost_of_response(usage)?))
    }

    /// What a sum of responses cost (a turn's or a session's usage), when
    /// that can be told from the sum: always with flat prices, and with a
    /// long-context tier only while the summed prompt is within the base
    /// tier (then every response was). Otherwise `None`: which responses
    /// crossed the threshold is not in the sum.
    pub fn cost_of_total(&self, usage: &Usage) -> Option<Cost> {
        match self.long_context {
            Some(long) if prompt(usage) > long.above_prompt_tokens => None,
            _ => self.at(&self.prices, usage),
        }
    }

    /// At most what a sum of responses cost: [`Pricing::cost_of_total`]
    /// where that is exact, otherwise every token at the higher of its two
    /// tiers' prices. What a limit is kept against when the tier of each
    /// response is not in the sum.
    pub fn upper_bound_of_total(&self, usage: &Usage) -> Option<Cost> {
        let Some(long) = self.long_context.filter(|long| prompt(usage) > long.above_prompt_tokens) else {
            return self.at(&self.prices, usage);
        };
        let (base, high) = (self.prices, long.prices);
        let higher = |a: Option<Price>, b: Option<Price>| Some(a?.max(b?));
        let worst = Prices {
            input: higher(base.input, high.input),
            cached_input: higher(base.cached_input, high.cached_input),
            cache_write: higher(base.cache_write, high.cache_write),
            output: higher(base.output, high.output),
            reasoning: higher(base.reasoning.or(base.output), high.reasoning.or(high.output)),
        };
        self.at(&worst, usage)
    }

    fn at(&self, prices: &Prices, usage: &Usage) -> Option<Cost> {
        let bucket = |tokens: u64, price: Option<Price>| match (tokens, price) {
            (0, _) => Some(0),
            (_, Some(price)) => Some(price.of(tokens)),
            (_, None) => None,
        };
        let (plain_output, reasoning) = if self.output_includes_reasoning {
            let reasoning = usage.reasoning.min(usage.output);
            (usage.output - reasoning, reasoning)
        } else {
            (usage.output, usage.reasoning)
        };
        let picodollars = bucket(usage.input, prices.input)?
            + bucket(usage.cache_read, prices.cached_input)?
            + bucket(usage.cache_write, prices.cache_write)?
            + bucket(plain_output, prices.output)?
            + bucket(reasoning, prices.reasoning.or(prices.output))?;
        let hidden_writes = !self.usage_separates_cache_writes
            && usage.input > 0
            && prices.cache_write.is_some_and(|write| Some(write) > prices.input);
        Some(Cost { picodollars, at_least: hidden_writes })
    }
}

/// For a turn's cost limit (bosun-core holds no prices): exact where the
/// sum tells, else the upper bound, so a limit stops a turn early rather
/// than late. A lower bound (OpenAI's undecoded cache writes) is what is
/// known and is used as it is.
impl bosun_core::Pricing for Pricing {
    fn cost_micros(&self, usage: &Usage) -> Option<u64> {
        let cost = self.cost_of_total(usage).or_else(|| self.upper_bound_of_total(usage))?;
        u64::try_from(cost.micro_dollars()).ok()
    }
}

/// A response's prompt: the tokens a long-context threshold counts.
fn prompt(usage: &Usage) -> u64 {
    usage.input.saturating_add(usage.cache_read).saturating_add(usage.cache_write)
}

/// An amount in US dollars, exact to the picodollar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    picodollars: u128,
    at_least: bool,
}

impl Cost {
    /// Nothing.
    pub const ZERO: Self = Self { picodollars: 0, at_least: false };

    /// An exact amount, in picodollars (10⁻¹² USD).
    pub fn from_picodollars(picodollars: u128) -> Self {
        Self { picodollars, at_least: false }
    }

    /// The amount in picodollars (10⁻¹² USD).
    pub fn picodollars(self) -> u128 {
        self.picodollars
    }

    /// The amount in micro-dollars, rounded half up.
    pub fn micro_dollars(self) -> u128 {
        (self.picodollars + 500_000) / 1_000_000
    }

    /// Whether the amount is a lower bound (see
    /// [`Pricing::usage_separates_cache_writes`]).
    pub fn is_lower_bound(self) -> bool {
        self.at_least
    }
}

impl std::ops::Add for Cost {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            picodollars: self.picodollars.saturating_add(other.picodollars),
            at_least: self.at_least || other.at_least,
        }
    }
}

/// `$0.0123`: dollars to four decimals, rounded half up; `<$0.0001` for
/// less than that but not nothing; `at least …` for a lower bound.
impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const TEN_THOUSANDTH: u128 = 100_000_000; // picodollars in $0.0001
        if self.at_least {
            f.write_str("at least ")?;
        }
        let units = (self.picodollars + TEN_THOUSANDTH / 2) / TEN_THOUSANDTH;
        if units == 0 && self.picodollars > 0 {
            return f.write_str("<$0.0001");
        }
        write!(f, "${}.{:04}", units / 10_000, units % 10_000)
    }
}
