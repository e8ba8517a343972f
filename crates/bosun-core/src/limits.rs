//! Bounds on a turn and its tools, clamped by hard maxima.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Effective bounds of a session. Built through [`Limits::default`] and the
/// setters, which clamp every value into `1..=HARD_MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Model rounds a single turn may take.
    pub max_rounds: u32,
    /// Longest a tool call may run, in milliseconds.
    pub tool_timeout_ms: u64,
    /// Most bytes of tool output kept in history; the middle of longer output
    /// is cut with a note saying how much.
    pub tool_output_bytes: usize,
    /// Most tokens a turn may spend (prompt, cached prompt and output, summed
    /// over its rounds); checked before each round after the first.
    /// Left out of the serialised form while unset, so snapshots recorded
    /// before it existed, and their digests, are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_tokens: Option<u64>,
    /// Longest a turn may take, in milliseconds: then it is stopped as a
    /// cancellation is (running calls wound down, invariant 13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_ms: Option<u64>,
    /// Most a turn may cost, in millionths of a dollar, priced by the
    /// session's [`Pricing`](crate::Pricing); checked before each round
    /// after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turn_cost_micros: Option<u64>,
}

impl Limits {
    /// Hard maximum of [`Limits::max_rounds`].
    pub const HARD_MAX_ROUNDS: u32 = 1_000;
    /// Hard maximum tool timeout: 20 minutes, one long build or test run.
    pub const HARD_MAX_TOOL_TIMEOUT: Duration = Duration::from_secs(20 * 60);
    /// How long past its timeout the session still waits for a call that
    /// must finish once started ([`CancellationPolicy::FinishOnceStarted`]):
    /// its token is cancelled at the timeout, and a tool that honours it has
    /// this long to wind down. 30 s, enough for an atomic write to sync.
    ///
    /// [`CancellationPolicy::FinishOnceStarted`]: crate::CancellationPolicy::FinishOnceStarted
    pub const TOOL_GRACE: Duration = Duration::from_secs(30);
    /// Hard maximum of [`Limits::tool_ceiling`]: the hard maximum timeout
    /// plus the grace.
    pub const HARD_MAX_TOOL_CEILING: Duration =
        Duration::from_secs(Self::HARD_MAX_TOOL_TIMEOUT.as_secs() + Self::TOOL_GRACE.as_secs());
    /// Hard maximum of [`Limits::tool_output_bytes`]: 1 MiB.
    pub const HARD_MAX_TOOL_OUTPUT: usize = 1 << 20;

    /// Sets the rounds per turn, clamped to `1..=HARD_MAX_ROUNDS`.
    pub fn with_max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds.clamp(1, Self::HARD_MAX_ROUNDS);
        self
    }

    /// Sets the tool timeout, clamped to `1 ms..=HARD_MAX_TOOL_TIMEOUT`.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.tool_timeout_ms = ms.clamp(1, Self::HARD_MAX_TOOL_TIMEOUT.as_millis() as u64);
        self
    }

    /// Sets the output ceiling, clamped to `256..=HARD_MAX_TOOL_OUTPUT`.
    pub fn with_tool_output_bytes(mut self, bytes: usize) -> Self {
        self.tool_output_bytes = bytes.clamp(256, Self::HARD_MAX_TOOL_OUTPUT);
        self
    }

    /// Sets the tokens a turn may spend (at least 1).
    pub fn with_max_turn_tokens(mut self, tokens: u64) -> Self {
        self.max_turn_tokens = Some(tokens.max(1));
        self
    }

    /// Sets how long a turn may take (at least 1 ms).
    pub fn with_max_turn_time(mut self, time: Duration) -> Self {
        self.max_turn_ms = Some(u64::try_from(time.as_millis()).unwrap_or(u64::MAX).max(1));
        self
    }

    /// Sets what a turn may cost, in millionths of a dollar (at least 1).
    pub fn with_max_turn_cost_micros(mut self, micros: u64) -> Self {
        self.max_turn_cost_micros = Some(micros.max(1));
        self
    }

    /// The tool timeout as a duration.
    pub fn tool_timeout(&self) -> Duration {
        Duration::from_millis(self.tool_timeout_ms)
    }

    /// The longest the session waits for any call: the tool timeout plus
    /// [`Limits::TOOL_GRACE`], at most [`Limits::HARD_MAX_TOOL_CEILING`].
    /// A call still running then is given up: its future is dropped and its
    /// result says it timed out and may have had an effect (it is journaled
    /// and committed like any finished call, so history stays complete).
    /// This is the one exception to waiting for started work (invariant 13):
    /// a tool that ignores its token past the grace cannot hang the turn.
    pub fn tool_ceiling(&self) -> Duration {
        (self.tool_timeout() + Self::TOOL_GRACE).min(Self::HARD_MAX_TOOL_CEILING)
    }

    /// Each limit `now` sets differently: its name, the two values in
    /// words, and whether `now` is the looser (a larger bound, or none).
    pub fn differences(&self, now: &Limits) -> Vec<(&'static str, String, String, bool)> {
        let mut out = Vec::new();
        let mut bound = |name, was: Option<u64>, is: Option<u64>, unit: &str| {
            if was != is {
                let words =
                    |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |v| format!("{v}{unit}"));
                let looser = match (was, is) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(was), Some(is)) => is > was,
                };
                out.push((name, words(was), words(is), looser));
            }
        };
        bound("max rounds", Some(u64::from(self.max_rounds)), Some(u64::from(now.max_rounds)), "");
        bound("the tool timeout", Some(self.tool_timeout_ms), Some(now.tool_timeout_ms), " ms");
        bound(
            "tool output",
            Some(self.tool_output_bytes as u64),
            Some(now.tool_output_bytes as u64),
            " bytes",
        );
        bound("max tokens per turn", self.max_turn_tokens, now.max_turn_tokens, "");
        bound("max time per turn", self.max_turn_ms, now.max_turn_ms, " ms");
        bound("max cost per turn", self.max_turn_cost_micros, now.max_turn_cost_micros, " micro-dollars");
        out
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_rounds: 50,
            tool_timeout_ms: 120_000,
            tool_output_bytes: 64 * 1024,
            max_turn_tokens: None,
            max_turn_ms: None,
            max_turn_cost_micros: None,
        }
    }
}

/// Prices usage for a cost limit: what `usage` cost, in millionths of a
/// dollar, or `None` when it cannot be priced. bosun-core holds no prices;
/// the embedder brings them.
pub trait Pricing: Send + Sync {
    /// The cost of `usage` on the session's model.
    fn cost_micros(&self, usage: &crate::message::Usage) -> Option<u64>;
}

/// The tokens [`Limits::max_turn_tokens`] counts: every prompt token, cached
/// or not, and every output token.
pub fn turn_tokens(usage: &crate::message::Usage) -> u64 {
    usage.input + usage.cache_read + usage.cache_write + usage.output
}

/// Keeps the head and tail of `text` within `max_bytes`, with a line in the
/// middle saying how much was cut. Cuts only at character boundaries.
pub(crate) fn shorten_middle(text: &str, max_bytes: usize) -> Option<String> {
    if text.len() <= max_bytes {
        return None;
    }
    let keep = max_bytes.saturating_sub(80) / 2;
    let mut head_end = keep.min(text.len());
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len().saturating_sub(keep);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    Some(format!(
        "{}\n[… {cut} bytes cut by bosun's output limit …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_clamp_to_hard_maxima() {
        let limits = Limits::default()
            .with_max_rounds(0)
            .with_tool_timeout(Duration::from_secs(3600))
            .with_tool_output_bytes(usize::MAX);
        assert_eq!(limits.max_rounds, 1);
        assert_eq!(limits.tool_timeout(), Limits::HARD_MAX_TOOL_TIMEOUT);
        assert_eq!(limits.tool_output_bytes, Limits::HARD_MAX_TOOL_OUTPUT);
        assert_eq!(Limits::default().with_max_rounds(5000).max_rounds, Limits::HARD_MAX_ROUNDS);
    }

    #[test]
    fn shorten_keeps_head_and_tail_on_char_boundaries() {
        let text = format!("{}{}", "é".repeat(500), "z".repeat(500));
        let short = shorten_middle(&text, 400).unwrap();
        assert!(short.len() <= 400 + 60);
        assert!(short.starts_with('é'));
        assert!(short.ends_with('z'));
        assert!(short.contains("bytes cut"));
        assert_eq!(shorten_middle("small", 400), None);
    }
}
