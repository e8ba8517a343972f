//! The text of one generation: token pieces joined into UTF-8, how much of it
//! may be streamed, where a stop sequence cuts it, and the final
//! [`ModelResponse`] built from it.
//!
//! The prefix invariant (bosun-core's invariant 2) is held here: a delta is
//! only ever a slice of the output up to [`toolcall::safe_text_prefix`] (so
//! tool-call markup never streams) and before any partial stop sequence, and
//! [`finish`] makes the final text start with everything streamed.

use bosun_core::{ContentPart, ModelResponse, ResponsePart, StopReason, Usage};

use crate::toolcall;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Joins token pieces, which may split a UTF-8 character, into text.
#[derive(Debug, Default)]
pub(crate) struct Utf8Joiner {
    pending: Vec<u8>,
}

impl Utf8Joiner {
    /// Appends `bytes`, pushing every complete character onto `out`; invalid
    /// bytes become U+FFFD, an incomplete tail waits for the next piece.
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut String) {
        self.pending.extend_from_slice(bytes);
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match error.error_len() {
                        None => {
                            self.pending.drain(..valid);
                            return;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Flushes an incomplete tail (the output ended inside a character).
    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// The openings of tagged tool calls. When a response is offered no tools,
/// the output is cut where one of them appears: a small model given a round
/// without tools (bosun-core does that after repeated calls) tends to write
/// a call anyway, and then more, until its token limit.
pub(crate) const CALL_TAGS: [&str; 2] = ["<tool_call>", "<function="];

/// Where the output begins a JSON call (`{"name":`, in a list or a fence
/// or not) that the parser would read, if it does; reasoning that opens the
/// output is skipped. Used when tools were withdrawn after calls: the output
/// is cut there, as at [`CALL_TAGS`]. Not when no tools were ever offered,
/// where such JSON may be the answer the person asked for.
pub(crate) fn json_call_start(output: &str) -> Option<usize> {
    let from = toolcall::leading_reasoning_end(output).unwrap_or(0);
    let region = output.get(from..)?;
    let safe = toolcall::safe_text_prefix(region);
    opens_json_call(region.get(safe..)?).then_some(from + safe)
}

/// Whether `held` opens with a JSON call, up to its `"name":`.
fn opens_json_call(held: &str) -> bool {
    let mut rest = held;
    if let Some(fenced) = rest.strip_prefix("```") {
        rest = fenced.strip_prefix("json").unwrap_or(fenced);
    }
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('[').map_or(rest, str::trim_start);
    rest.strip_prefix('{')
        .and_then(|rest| rest.trim_start().strip_prefix("\"name\""))
        .is_some_and(|rest| rest.trim_start().starts_with(':'))
}

/// The note appended when the output was cut at a call while no tools were offered.
const WITHHELD_CALL_NOTE: &str =
    "[bosun: the model began a tool call, but no tools were offered for this response.]";

/// Where the first stop sequence in `output` begins, looking only at text a
/// piece appended at byte `appended_at` could have completed.
pub(crate) fn find_stop<S: AsRef<str>>(output: &str, appended_at: usize, stops: &[S]) -> Option<usize> {
    stops
        .iter()
        .map(AsRef::as_ref)
        .filter(|stop| !stop.is_empty())
        .filter_map(|stop| {
            let mut from = appended_at.saturating_sub(stop.len() - 1);
            while !output.is_char_boundary(from) {
                from -= 1;
            }
            output[from..].find(stop).map(|at| from + at)
        })
        .min()
}

/// What of an output has been streamed, and the next deltas.
///
/// An output that opens with `<think>` (after whitespace) streams its
/// reasoning as it grows, trimmed as the parser trims it and short of a
/// partial `</think>`; its text streams once the block is closed. Otherwise
/// the text streams from the start. Text never streams past
/// [`toolcall::safe_text_prefix`] nor into a possible stop sequence.
#[derive(Debug, Default)]
pub(crate) struct Streamer {
    /// `None` until the output shows whether it opens with reasoning.
    opens_with_reasoning: Option<bool>,
    reasoning: String,
    text: String,
}

impl Streamer {
    /// The reasoning and text deltas `output` adds to what was streamed.
    pub(crate) fn advance(&mut self, output: &str, stops: &[String]) -> (Option<String>, Option<String>) {
        let body = output.trim_start();
        let base = output.len() - body.len();
        let opens = match self.opens_with_reasoning {
            Some(opens) => opens,
            None if body.is_empty() || (body.len() < THINK_OPEN.len() && THINK_OPEN.starts_with(body)) => {
                return (None, None);
            }
            None => *self.opens_with_reasoning.insert(body.starts_with(THINK_OPEN)),
        };
        let mut reasoning_delta = None;
        let text_from = if opens {
            let inner = &body[THINK_OPEN.len()..];
            let (visible, closed_at) = match inner.find(THINK_CLOSE) {
                Some(at) => (&inner[..at], Some(base + THINK_OPEN.len() + at + THINK_CLOSE.len())),
                None => (&inner[..inner.len() - partial_suffix(inner, THINK_CLOSE)], None),
            };
            let visible = visible.trim();
            if visible.len() > self.reasoning.len() && visible.starts_with(self.reasoning.as_str()) {
                reasoning_delta = Some(visible[self.reasoning.len()..].to_owned());
                self.reasoning = visible.to_owned();
            }
            match closed_at {
                Some(at) => at,
                None => return (reasoning_delta, None),
            }
        } else {
            0
        };
        let region = &output[text_from..];
        let end = streamable_end(region, stops);
        let text_delta = (end > self.text.len()).then(|| {
            let delta = region[self.text.len()..end].to_owned();
            self.text.push_str(&delta);
            delta
        });
        (reasoning_delta, text_delta)
    }

    /// The text streamed so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The reasoning streamed so far.
    pub(crate) fn reasoning(&self) -> &str {
        &self.reasoning
    }
}

/// How much of `region` may be streamed as text now: up to the tool-call
/// parser's safe prefix, and short of a tail that may begin a stop sequence.
fn streamable_end(region: &str, stops: &[String]) -> usize {
    let mut end = toolcall::safe_text_prefix(region).min(region.len());
    for stop in stops {
        end = end.min(region.len() - partial_suffix(region, stop));
    }
    while !region.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The length of the longest suffix of `output` that is a proper prefix of `stop`.
fn partial_suffix(output: &str, stop: &str) -> usize {
    let longest = stop.len().saturating_sub(1).min(output.len());
    (1..=longest)
        .rev()
        .find(|&n| stop.as_bytes().starts_with(&output.as_bytes()[output.len() - n..]))
        .unwrap_or(0)
}

/// The final response: the whole output parsed for text, reasoning and tool
/// calls. The text and reasoning start with what `streamer` streamed
/// whatever the parser says (the prefix invariant, see [`reconcile`]); calls
/// get ids `call_0`, `call_1`, …; parser problems (a call that was not valid
/// JSON, named no offered tool, …) are appended to the text as a note, so
/// the person sees them and the model reads them back on its next turn. So
/// is a note when the output was cut at a call no tool was offered for
/// (`cut_at_call`, see [`CALL_TAGS`]).
pub(crate) fn finish(
    output: &str,
    streamer: &Streamer,
    tools: &[&str],
    stop_reason: StopReason,
    usage: Usage,
    cut_at_call: bool,
) -> ModelResponse {
    let parsed = toolcall::parse(output, tools);
    let mut text = reconcile(streamer.text(), parsed.text);
    if !parsed.problems.is_empty() {
        append_note(&mut text, &problem_note(&parsed.problems));
    }
    if cut_at_call {
        append_note(&mut text, WITHHELD_CALL_NOTE);
    }
    let reasoning = reconcile(streamer.reasoning(), parsed.reasoning);
    let mut content = Vec::new();
    if !reasoning.is_empty() {
        content.push(ResponsePart::Content(ContentPart::reasoning(reasoning)));
    }
    if !text.is_empty() {
        content.push(ResponsePart::text(text));
    }
    let called = !parsed.calls.is_empty();
    for (n, call) in parsed.calls.into_iter().enumerate() {
        content.push(ResponsePart::tool_call(format!("call_{n}"), call.name, call.arguments));
    }
    let stop_reason =
        if called && stop_reason == StopReason::Stop { StopReason::ToolUse } else { stop_reason };
    ModelResponse::new(content, usage, stop_reason)
}

/// The final text: `parsed` made to start with `streamed`. The parser trims
/// (the streamed text may begin with whitespace it dropped); beyond that the
/// two agree, since the parser changes nothing before its safe prefix. Should
/// they still differ, what was streamed stands and the parsed text continues
/// after the part they share.
fn reconcile(streamed: &str, parsed: String) -> String {
    if parsed.starts_with(streamed) {
        return parsed;
    }
    let body = streamed.trim_start();
    let common = common_prefix(&parsed, body);
    if !body[common..].trim().is_empty() {
        tracing::warn!(
            streamed = streamed.len(),
            parsed = parsed.len(),
            "the parsed text does not continue the streamed text; keeping what was streamed"
        );
    }
    format!("{streamed}{}", &parsed[common..])
}

/// Appends `note` to `text` as its own paragraph (or as the whole text).
fn append_note(text: &mut String, note: &str) {
    if !text.trim().is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(note);
}

/// The note appended to the answer when tool calls could not be used.
fn problem_note(problems: &[String]) -> String {
    let mut note = String::from("[bosun: tool call not used:");
    for problem in problems {
        note.push(' ');
        note.push_str(problem.trim());
        if !problem.trim_end().ends_with('.') {
            note.push('.');
        }
    }
    note.push(']');
    note
}

/// The byte length of the longest common prefix of `a` and `b`, on a
/// character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or_else(|| a.len().min(b.len()), |((at, _), _)| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_are_joined_and_bad_bytes_replaced() {
        let mut joiner = Utf8Joiner::default();
        let mut out = String::new();
        let e_acute = "é".as_bytes();
        joiner.push(&e_acute[..1], &mut out);
        assert_eq!(out, "");
        joiner.push(&e_acute[1..], &mut out);
        assert_eq!(out, "é");
        joiner.push(&[b'a', 0xff, b'b'], &mut out);
        assert_eq!(out, "éa\u{fffd}b");
        joiner.push(&"€".as_bytes()[..2], &mut out);
        joiner.finish(&mut out);
        assert_eq!(out, "éa\u{fffd}b\u{fffd}");
    }

    #[test]
    fn stop_sequences_are_found_across_pieces_and_held_back_while_partial() {
        let stops = vec!["STOP".to_owned()];
        assert_eq!(find_stop("abcST", 3, &stops), None);
        assert_eq!(find_stop("abcSTOP", 5, &stops), Some(3));
        assert_eq!(partial_suffix("abcST", "STOP"), 2);
        assert_eq!(partial_suffix("abcSTOP", "STOP"), 0);
        assert_eq!(partial_suffix("S", "STOP"), 1);
        assert!(streamable_end("abcST", &stops) <= 3);
    }

    #[test]
    fn reasoning_streams_trimmed_then_text_after_the_block() {
        let mut streamer = Streamer::default();
        let mut events = Vec::new();
        let output = "\n<think>\n Let me see. </think>\n\nParis is the capital.";
        for end in 0..=output.len() {
            if output.is_char_boundary(end) {
                events.push(streamer.advance(&output[..end], &[]));
            }
        }
        assert_eq!(streamer.reasoning(), "Let me see.");
        assert_eq!(streamer.text(), "\n\nParis is the capital.");
        let reasoning: String = events.iter().filter_map(|(r, _)| r.clone()).collect();
        assert_eq!(reasoning, "Let me see.");
        let response = finish(output, &streamer, &[], StopReason::Stop, Usage::default(), false);
        let text = bosun_core::message::concat_text(
            &response
                .content
                .iter()
                .filter_map(|p| match p {
                    ResponsePart::Content(c) => Some(c.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        );
        assert!(text.starts_with(streamer.text()), "{text:?}");
    }

    #[test]
    fn plain_text_streams_up_to_call_markup() {
        let mut streamer = Streamer::default();
        let output = "Sure. <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>";
        for end in 0..=output.len() {
            streamer.advance(&output[..end], &[]);
        }
        assert_eq!(streamer.text(), "Sure. ");
        let response = finish(output, &streamer, &["read_file"], StopReason::Stop, Usage::default(), false);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert!(
            matches!(&response.content[0], ResponsePart::Content(ContentPart::Text { text }) if text.starts_with("Sure. "))
        );
    }

    #[test]
    fn json_calls_are_found_after_text_in_fences_lists_and_after_reasoning() {
        assert_eq!(json_call_start(r#"Sure. {"name": "read_file", "arg"#), Some(6));
        assert_eq!(json_call_start("Sure.\n```json\n[ {\"name\" :"), Some(6));
        assert_eq!(json_call_start(r#"<think>hmm</think>{"name":"#), Some(18));
        assert_eq!(json_call_start(r#"{"name""#), None, "not yet a call: the colon is missing");
        assert_eq!(json_call_start(r#"Here: {"names": 1}"#), None);
        assert_eq!(json_call_start("plain text"), None);
    }

    #[test]
    fn reconcile_keeps_streamed_whitespace_the_parser_trimmed() {
        assert_eq!(reconcile(" Paris", "Paris is big".into()), " Paris is big");
        assert_eq!(reconcile("Hello ", "Hello".into()), "Hello ");
        assert_eq!(reconcile("Hello ", "Hello world".into()), "Hello world");
        assert_eq!(reconcile("Hi", "Bye".into()), "HiBye");
    }

    #[test]
    fn common_prefix_respects_character_boundaries() {
        assert_eq!(common_prefix("héllo", "hé"), "hé".len());
        assert_eq!(common_prefix("hé", "hè"), 1);
        assert_eq!(common_prefix("", "x"), 0);
    }

    #[test]
    fn the_problem_note_names_each_problem() {
        let note = problem_note(&["unknown tool `x`".to_owned(), "bad JSON.".to_owned()]);
        assert_eq!(note, "[bosun: tool call not used: unknown tool `x`. bad JSON.]");
        let mut text = "Here.".to_owned();
        append_note(&mut text, &note);
        assert_eq!(text, "Here.\n\n[bosun: tool call not used: unknown tool `x`. bad JSON.]");
        let mut text = "\n".to_owned();
        append_note(&mut text, WITHHELD_CALL_NOTE);
        assert_eq!(text, format!("\n{WITHHELD_CALL_NOTE}"));
    }
}
