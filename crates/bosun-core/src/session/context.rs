//! Context accounting and compaction: what the session estimates a request
//! costs in tokens, and the view of history it sends when history outgrows
//! the model's window. History and the journal keep every message; only
//! what is sent changes, and how is itself journaled (`compacted`), so a
//! resumed session sends the same view.
//!
//! Tiers, cheapest first, each tried only when the one before was not
//! enough:
//! 1. Tool results older than the newest [`KEEP_UNITS`] units are shown
//!    shortened to [`SHORT_RESULT`] bytes (head and tail, a marker between);
//!    when that is not enough (large results), all but the newest unit's.
//! 2. The units between the first user message (the task) and the newest
//!    [`KEEP_UNITS`] (or, when those alone would not fit, the newest one)
//!    are replaced by a summary the model writes from a fixed prompt
//!    ([`SUMMARY_PROMPT`]), appended to the task's message.
//! 3. If that fails or is not enough, those units are dropped with a note.
//!
//! A unit is a user message, or an assistant message with all its tool
//! results: nothing is ever cut inside one, so every call keeps its result
//! and batches stay whole. The task's message, the latest user message and
//! the newest units are always kept.

use crate::journal::Compaction;

use crate::limits::shorten_middle;
use crate::message::{ContentPart, Message, Usage};

/// Units at the end of history never shortened or elided.
pub const KEEP_UNITS: usize = 4;
/// Tier 1 shows an old tool result in at most this many bytes.
pub const SHORT_RESULT: usize = 2_048;
/// Tier 2's request to the model: its system prompt. The transcript of the
/// units being replaced follows as the one user message.
pub const SUMMARY_PROMPT: &str = "You are compacting the history of a coding agent's session so that it \
     fits the model's context window. Summarize the transcript you are given for the agent that will \
     continue the work. Keep: the task and every requirement the user stated; decisions made and why; \
     every file read, created or changed, with what changed; commands run and what they showed; errors \
     met and whether they were fixed; what remains to do. Be concrete (paths, names, values) and brief. \
     Write only the summary.";
/// How the summary is introduced in what the model is sent.
const SUMMARY_HEADING: &str = "[bosun: the conversation between the task above and what follows was \
     compacted to fit the context window; a summary of it:]";
/// Tier 3's note in place of what it dropped.
const DROPPED_NOTE: &str = "[bosun: earlier messages of this conversation were left out to fit the \
     context window]";
/// Longest transcript sent for a summary, in characters.
const MAX_TRANSCRIPT: usize = 200_000;
/// Characters per token before any real count calibrates it.
const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// What the window allows and what is sent: the window and the fraction
/// of it at which compaction starts, the compacted view of history, and
/// the estimator that sizes a request before it is sent.
#[derive(Debug)]
pub(crate) struct ContextBudget {
    /// The model's context window in tokens, when known; without one,
    /// compaction happens only when the provider says a request overflowed.
    window: Option<u64>,
    compact_at: f64,
    /// What is sent of history (journaled as `compacted`).
    compaction: Compaction,
    estimator: Estimator,
}

impl ContextBudget {
    pub(crate) fn new(window: Option<u64>, compact_at: f64) -> Self {
        Self { window, compact_at, compaction: Compaction::default(), estimator: Estimator::default() }
    }

    pub(crate) fn window(&self) -> Option<u64> {
        self.window
    }

    pub(crate) fn compaction(&self) -> &Compaction {
        &self.compaction
    }

    /// Sends `next` from now on (journaled by the caller first).
    pub(crate) fn compacted(&mut self, next: Compaction) {
        self.compaction = next;
    }

    /// Keeps the view inside a history a failed turn cut back to `len`.
    pub(crate) fn clamp(&mut self, len: usize) {
        self.compaction.clamp(len);
    }

    /// The estimate a request is compacted down to: `compact_at` of the
    /// window, or half of `before` when the provider said it overflowed
    /// (or no window is known).
    pub(crate) fn target(&self, before: u64, overflowed: bool) -> u64 {
        match self.window {
            Some(window) if !overflowed => (window as f64 * self.compact_at) as u64,
            _ => before / 2,
        }
    }

    /// See [`Estimator::estimate`].
    pub(crate) fn estimate(&self, chars: usize) -> u64 {
        self.estimator.estimate(chars)
    }

    /// See [`Estimator::observe`].
    pub(crate) fn observe(&mut self, chars: usize, usage: &Usage) {
        self.estimator.observe(chars, usage);
    }
}

/// The estimator: real prompt counts, and characters per token learned
/// from them for this model. Sessions keep one; public so the estimate's
/// error can be measured against a tokenizer (`bosun-local`'s benchmark).
#[derive(Clone, Debug)]
pub struct Estimator {
    chars_per_token: f64,
    /// The last response's real prompt tokens and the characters of the
    /// request that produced them.
    last: Option<(u64, usize)>,
}

impl Default for Estimator {
    fn default() -> Self {
        Self { chars_per_token: DEFAULT_CHARS_PER_TOKEN, last: None }
    }
}

impl Estimator {
    /// An estimator that knows nothing yet (4 characters a token).
    pub fn new() -> Self {
        Self::default()
    }

    /// Learns from a response: `chars` were sent, `usage` says what they
    /// were in tokens.
    pub fn observe(&mut self, chars: usize, usage: &Usage) {
        let tokens = usage.input + usage.cache_read + usage.cache_write;
        if tokens == 0 || chars == 0 {
            return;
        }
        let seen = chars as f64 / tokens as f64;
        // Weighted toward the newest: the mix of text changes as a session goes.
        self.chars_per_token =
            if self.last.is_none() { seen } else { 0.5 * self.chars_per_token + 0.5 * seen };
        self.last = Some((tokens, chars));
    }

    /// Tokens a request of `chars` characters is estimated at: the last real
    /// count plus what was added since, or, after a compaction shrank the
    /// request, its size at the learned rate.
    pub fn estimate(&self, chars: usize) -> u64 {
        let rate = |c: usize| (c as f64 / self.chars_per_token).ceil() as u64;
        match self.last {
            Some((tokens, sent)) if chars >= sent => tokens + rate(chars - sent),
            _ => rate(chars),
        }
    }
}

/// Characters of what a request carries, the estimator's measure:
/// `tools_json` is the length of the tool definitions as JSON.
pub fn chars_of(system: Option<&str>, messages: &[Message], tools_json: usize) -> usize {
    let parts: usize = messages
        .iter()
        .flat_map(Message::content)
        .map(|part| match part {
            ContentPart::Text { text } => text.len(),
            ContentPart::Reasoning { text, .. } => text.len(),
            ContentPart::ToolCall { name, arguments, .. } => name.len() + arguments.to_string().len(),
            // An image is priced by its provider per tile; count it as a
            // typical one (about 1,000 tokens).
            _ => 4_000,
        })
        .sum();
    system.map_or(0, str::len) + parts + tools_json
}

/// Start indices of the units of `history`.
pub(crate) fn unit_starts(history: &[Message]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut index = 0;
    while index < history.len() {
        starts.push(index);
        let calls = match &history[index] {
            message @ Message::Assistant { .. } => message.tool_calls().count(),
            _ => 0,
        };
        index += 1 + calls;
    }
    starts
}

/// The furthest `elided_through` that keeps the task and the newest `keep`
/// units: a unit start, so nothing is cut inside a unit. `None` when
/// nothing could be elided. (The latest user message, if it falls inside,
/// is kept by [`latest_ask`].)
pub(crate) fn elision_end(history: &[Message], keep: usize) -> Option<usize> {
    let starts = unit_starts(history);
    let end = starts.len().checked_sub(keep).map(|i| starts[i])?;
    // At least one unit after the task must go for this to be worth it.
    (end > starts.get(1).copied().unwrap_or(usize::MAX)).then_some(end)
}

/// The latest user message's index when eliding `1..end` would take it.
pub(crate) fn latest_ask(history: &[Message], end: usize) -> Option<usize> {
    let latest = history.iter().rposition(|m| matches!(m, Message::User { .. }))?;
    (latest > 0 && latest < end).then_some(latest)
}

/// The start of the newest `keep` units: tool results before it may be shortened.
pub(crate) fn shorten_start(history: &[Message], keep: usize) -> usize {
    let starts = unit_starts(history);
    starts.len().checked_sub(keep).map_or(0, |i| starts[i])
}

/// Whether shortening results in `range` of history would change any.
pub(crate) fn shortens_any(history: &[Message], range: std::ops::Range<usize>) -> bool {
    history.get(range).unwrap_or_default().iter().any(|message| match message {
        Message::ToolResult { content, .. } => content.iter().any(|part| match part {
            ContentPart::Text { text } => text.len() > SHORT_RESULT,
            _ => false,
        }),
        _ => false,
    })
}

impl Compaction {
    /// Whether the view differs from history at all.
    pub(crate) fn is_active(&self) -> bool {
        self.shorten_before > 0 || self.elided_through > 1
    }

    /// Keeps the state within `len` messages of history (a turn that rolled
    /// back took messages away).
    pub(crate) fn clamp(&mut self, len: usize) {
        self.shorten_before = self.shorten_before.min(len);
        if self.elided_through > len || self.kept_ask.is_some_and(|ask| ask >= len) {
            *self = Self { shorten_before: self.shorten_before, ..Self::default() };
        }
    }

    /// Whether history index `index` is sent.
    pub(crate) fn sends(&self, index: usize) -> bool {
        index == 0 || index >= self.elided_through || self.kept_ask == Some(index)
    }

    /// `message` (at history index `index`) as it is sent.
    pub(crate) fn show(&self, index: usize, message: &Message) -> Message {
        match message {
            Message::User { content } if index == 0 && self.elided_through > 1 => {
                let mut content = content.clone();
                if let Some(text) = &self.text {
                    content.push(ContentPart::text(format!("\n\n{text}")));
                }
                Message::User { content }
            }
            Message::ToolResult { call_id, tool_name, content, is_error, usage, spent_by }
                if index < self.shorten_before =>
            {
                Message::ToolResult {
                    call_id: *call_id,
                    tool_name: tool_name.clone(),
                    content: content.iter().map(shorten_part).collect(),
                    is_error: *is_error,
                    usage: *usage,
                    spent_by: *spent_by,
                }
            }
            other => other.clone(),
        }
    }
}

fn shorten_part(part: &ContentPart) -> ContentPart {
    match part {
        ContentPart::Text { text } => match shorten_middle(text, SHORT_RESULT) {
            Some(short) => ContentPart::text(short),
            None => part.clone(),
        },
        other => other.clone(),
    }
}

/// The text a summary is shown with.
pub(crate) fn summary_text(summary: &str) -> String {
    format!("{SUMMARY_HEADING}\n{}", summary.trim())
}

/// The text tier 3 leaves, keeping an earlier summary if there was one.
pub(crate) fn dropped_text(earlier: Option<&str>) -> String {
    match earlier {
        Some(summary) => format!("{summary}\n{DROPPED_NOTE}"),
        None => DROPPED_NOTE.to_owned(),
    }
}

/// The transcript tier 2 summarizes: an earlier summary, then
/// `history[from..to]` as plain text, tool results shortened, bounded.
pub(crate) fn transcript(history: &[Message], from: usize, to: usize, earlier: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(earlier) = earlier {
        out.push_str(&format!("Summary of what came before:\n{earlier}\n\n"));
    }
    for message in history.iter().take(to).skip(from) {
        let line = match message {
            Message::User { .. } => format!("USER: {}", message.text()),
            Message::Assistant { .. } => {
                let calls: Vec<String> =
                    message.tool_calls().map(|c| format!("{}({})", c.name, c.arguments)).collect();
                let mut line = format!("ASSISTANT: {}", message.text());
                if !calls.is_empty() {
                    line.push_str(&format!(" [calls: {}]", calls.join("; ")));
                }
                line
            }
            Message::ToolResult { tool_name, is_error, .. } => {
                let text = message.text();
                let text = shorten_middle(&text, SHORT_RESULT).unwrap_or(text);
                let failed = if *is_error { " (error)" } else { "" };
                format!("RESULT of {tool_name}{failed}: {text}")
            }
            Message::System { .. } => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
    if out.len() > MAX_TRANSCRIPT {
        // The oldest part goes first: the newest is nearest the work.
        let mut cut = out.len() - MAX_TRANSCRIPT;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = format!("[… {cut} characters of the oldest transcript left out …]\n{}", &out[cut..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::CallId;

    fn batch(calls: usize) -> Vec<Message> {
        let ids: Vec<CallId> = (0..calls).map(|_| CallId::new_v7()).collect();
        let content = ids
            .iter()
            .map(|id| ContentPart::ToolCall {
                id: *id,
                name: "read".into(),
                arguments: serde_json::json!({}),
                provider_data: None,
            })
            .collect();
        let mut out = vec![Message::Assistant {
            content,
            usage: Usage::default(),
            stop_reason: crate::message::StopReason::ToolUse,
        }];
        out.extend(ids.iter().map(|id| Message::tool_result(*id, "read", "x".repeat(5_000), false)));
        out
    }

    #[test]
    fn units_keep_a_call_with_its_results() {
        let mut history = vec![Message::user("task")];
        history.extend(batch(2));
        history.extend(batch(1));
        assert_eq!(unit_starts(&history), [0, 1, 4]);
        // Keeping 1 unit, everything between the task and the last batch goes.
        assert_eq!(elision_end(&history, 1), Some(4));
        assert_eq!(elision_end(&history, 2), None, "nothing between the task and the kept units");
    }

    #[test]
    fn the_latest_user_message_is_kept_when_its_range_is_elided() {
        let mut history = vec![Message::user("task")];
        history.extend(batch(1));
        history.extend(batch(1));
        history.push(Message::user("and now this"));
        history.extend(batch(1));
        history.extend(batch(1));
        assert_eq!(elision_end(&history, 1), Some(8));
        assert_eq!(latest_ask(&history, 8), Some(5));
        assert_eq!(latest_ask(&history, 5), None, "not inside");
        let view = Compaction { elided_through: 8, kept_ask: Some(5), ..Compaction::default() };
        let sent: Vec<usize> = (0..history.len()).filter(|i| view.sends(*i)).collect();
        assert_eq!(sent, [0, 5, 8, 9]);
    }

    #[test]
    fn the_estimate_is_the_last_count_plus_what_was_added() {
        let mut estimator = Estimator::default();
        assert_eq!(estimator.estimate(400), 100, "4 characters a token before any count");
        estimator.observe(1_000, &Usage::new(500, 10));
        assert_eq!(estimator.estimate(1_000), 500);
        assert_eq!(estimator.estimate(1_200), 600, "2 characters a token, as measured");
        assert_eq!(estimator.estimate(200), 100, "smaller than the last request: by rate alone");
    }
}
