//! Tool calls parsed tolerantly from a local model's raw output, which is
//! split into answer text, reasoning and calls.
//!
//! Small models do not keep to their template's call format (see the notes
//! on Qwen2.5-Coder-0.5B), so, like llama.cpp's HERMES_2_PRO parser, this
//! accepts:
//! - `<tool_call>{json}</tool_call>`: one object, several, or a JSON list
//!   (SmolLM2/Ollama style), possibly fenced inside; unclosed at the end of
//!   the output (a stop token came first) it runs to the end;
//! - `<function=name>{json}</function>` and Qwen3-Coder's
//!   `<function=name><parameter=key>value</parameter></function>`, alone or
//!   inside `<tool_call>`;
//! - a ```` ```json ```` or unlabelled fence whose content is a call or a list
//!   of calls, and a fence of any label holding the tags above;
//! - bare JSON at the end of the output (or all of it): an object or a list
//!   of objects, or several objects in a row.
//!
//! A call is an object with `name` and `arguments` (or `parameters`, as
//! Llama 3 writes); `arguments` given as a JSON string is parsed. Fenced and
//! bare JSON counts only if it starts like a call (`{"name"` or `[{"name"`)
//! and every object in it has that shape: other JSON (the user asked for
//! data) stays text. Inside `<tool_call>` everything is meant as a call.
//!
//! What looks like a call but is not a valid one (unknown name, invalid or
//! cut-off JSON, arguments that are not an object) is not a call: its markup
//! leaves the answer and a problem is reported, for the engine to show to
//! the model. Nothing here panics, whatever the input.
//!
//! Policy on spurious calls: a valid call to an active tool is a call, even
//! where the prompt did not ask for one (the 0.5B model answers "What is
//! 2+2?" with a bare `read_file` call). The parser cannot know intent; the
//! call goes through the runtime's approval like any other, and the remedy
//! is a better model or grammar-constrained decoding ([`CALL_TRIGGERS`]).
//!
//! `<think>…</think>` anywhere becomes reasoning (unclosed, it runs to the
//! end). A template whose generation prompt already opens `<think>` leaves
//! the output with only the closing tag: prepend `<think>` before parsing.

mod calls;
mod fence;
mod tags;
#[cfg(test)]
mod test_support;

use calls::{Item, Pattern, call_start, classify, json_values};
use fence::{FENCE, FenceKind, at_line_start, closing_fence, fence, json_fence, tag_fence};
use tags::{FUNC_OPEN, Scanned, TOOL_CLOSE, TOOL_OPEN, function, tool_call};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// A model's output split into its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedOutput {
    /// The answer text with call markup removed (trimmed).
    pub text: String,
    /// The text inside `<think>…</think>`, blocks separated by blank lines.
    pub reasoning: String,
    /// Valid calls to active tools, in order.
    pub calls: Vec<ParsedCall>,
    /// Calls that looked like calls but were invalid: shown to the model.
    pub problems: Vec<String>,
}

/// A call to one of the active tools.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedCall {
    pub name: String,
    /// Always a JSON object.
    pub arguments: serde_json::Value,
}

/// Markers after which a call is being written, for the engine's lazy
/// grammar trigger. Several contain others (`[{"name"` holds `{"name"`).
pub const CALL_TRIGGERS: &[&str] =
    &["<tool_call>", "<function=", "```json", "[{\"name\"", "{\"name\"", "{ \"name\""];

/// Splits `output` into answer text, reasoning, calls and problems; `tools`
/// are the names of the active tools.
pub fn parse(output: &str, tools: &[&str]) -> ParsedOutput {
    let (head, tail) = match bare_tail(output, tools) {
        Some((at, items)) => (output.get(..at).unwrap_or_default(), items),
        None => (output, Vec::new()),
    };
    let scan = scan(head, tools);
    let mut calls = Vec::new();
    let mut problems = Vec::new();
    for item in scan.items.into_iter().chain(tail) {
        match item {
            Item::Call(call) => calls.push(call),
            Item::Problem(problem) => problems.push(problem),
        }
    }
    ParsedOutput {
        text: scan.text.trim().to_owned(),
        reasoning: scan.reasoning.join("\n\n"),
        calls,
        problems,
    }
}

/// For streaming: the byte offset where text that may be the start of a
/// call (or reasoning) begins, so the engine can stream text before it as
/// deltas and hold back the rest until the end.
///
/// Held back from: `<think>`, `<tool_call>`, `<function=` or a beginning of
/// one at the end; a fence that holds, or may yet hold, a call; `{"name"` or
/// `[{"name"`, or a beginning of one at the end. Everything [`parse`]
/// removes starts at or after this offset, so its text starts with the text
/// before it (trimmed); the offset only grows as the output grows, and is
/// always a char boundary (every marker starts with an ASCII byte).
pub fn safe_text_prefix(output: &str) -> usize {
    for (at, byte) in output.bytes().enumerate() {
        let rest = || output.get(at..).unwrap_or_default();
        let hold = match byte {
            b'<' => [THINK_OPEN, TOOL_OPEN, FUNC_OPEN]
                .iter()
                .any(|m| rest().starts_with(m) || m.starts_with(rest())),
            b'`' if rest().starts_with(FENCE) => fence(rest()).kind != FenceKind::Text,
            b'`' => FENCE.starts_with(rest()),
            b'{' | b'[' => call_start(rest()) != Pattern::No,
            _ => false,
        };
        if hold {
            return at;
        }
    }
    output.len()
}

/// The byte offset just after a `<think>…</think>` block that opens the
/// output (after whitespace), if there is one. An engine streaming a
/// reasoning model can stream `output[end..]` with
/// `safe_text_prefix(&output[end..])` once the block is closed: [`parse`]
/// gives the same text for `output` as for `output[end..]`.
pub fn leading_reasoning_end(output: &str) -> Option<usize> {
    let start = output.len() - output.trim_start().len();
    let inner = output.get(start..)?.strip_prefix(THINK_OPEN)?;
    let close = inner.find(THINK_CLOSE)?;
    Some(start + THINK_OPEN.len() + close + THINK_CLOSE.len())
}

/// Text, reasoning and markup, read left to right.
#[derive(Debug, Default)]
struct Scan {
    text: String,
    /// Whitespace around markup removed since the last text kept.
    gap: Option<String>,
    reasoning: Vec<String>,
    items: Vec<Item>,
    /// Some markup (or a text fence) was left open and took the rest.
    unclosed: bool,
}

impl Scan {
    /// Text kept in the answer.
    fn keep(&mut self, piece: &str) {
        let Some(gap) = self.gap.as_mut() else {
            self.text.push_str(piece);
            return;
        };
        let body = piece.trim_start();
        gap.push_str(piece.get(..piece.len() - body.len()).unwrap_or_default());
        if body.is_empty() {
            return;
        }
        // The whitespace around removed markup collapses to at most a blank line.
        let separator = match gap.matches('\n').count() {
            0 if gap.is_empty() => "",
            0 => " ",
            1 => "\n",
            _ => "\n\n",
        };
        self.gap = None;
        self.text.push_str(separator);
        self.text.push_str(body);
    }

    /// Markup removed after the text `before`.
    fn cut(&mut self, before: &str) {
        self.keep(before);
        let space = self.text.split_off(self.text.trim_end().len());
        self.gap.get_or_insert_with(String::new).push_str(&space);
    }
}

const MARKERS: [&str; 4] = [THINK_OPEN, TOOL_OPEN, FUNC_OPEN, FENCE];

fn scan(s: &str, tools: &[&str]) -> Scan {
    let mut out = Scan::default();
    // Where each marker next occurs: not searched yet, or found (None: no more).
    let mut next: [Option<Option<usize>>; MARKERS.len()] = [None; MARKERS.len()];
    let mut cursor = 0;
    while cursor < s.len() {
        let mut found: Option<(usize, &str)> = None;
        for (slot, marker) in next.iter_mut().zip(MARKERS) {
            let stale = match slot {
                None => true,
                Some(Some(at)) => *at < cursor,
                Some(None) => false,
            };
            if stale {
                *slot = Some(s.get(cursor..).and_then(|r| r.find(marker)).map(|i| cursor + i));
            }
            if let Some(Some(at)) = *slot
                && found.is_none_or(|(first, _)| at < first)
            {
                found = Some((at, marker));
            }
        }
        let Some((at, marker)) = found else { break };
        let before = s.get(cursor..at).unwrap_or_default();
        cursor = match marker {
            THINK_OPEN => {
                out.cut(before);
                let start = at + THINK_OPEN.len();
                let rest = s.get(start..).unwrap_or_default();
                let (inner, end) = match rest.find(THINK_CLOSE) {
                    Some(i) => (rest.get(..i).unwrap_or_default(), start + i + THINK_CLOSE.len()),
                    None => {
                        out.unclosed = true;
                        (rest, s.len())
                    }
                };
                if !inner.trim().is_empty() {
                    out.reasoning.push(inner.trim().to_owned());
                }
                end
            }
            TOOL_OPEN | FUNC_OPEN => {
                out.cut(before);
                let scanned =
                    if marker == TOOL_OPEN { tool_call(s, at, tools) } else { function(s, at, tools) };
                out.items.extend(scanned.items);
                out.unclosed |= scanned.unclosed;
                scanned.end
            }
            _ => {
                let opening = fence(s.get(at..).unwrap_or_default());
                // Ok: markup, removed; Err: text, kept.
                let outcome = match opening.kind {
                    FenceKind::Tags => Ok(tag_fence(s, at + opening.content, tools)),
                    FenceKind::Json => json_fence(s, at, opening, tools),
                    _ if at_line_start(s, at) => {
                        let end = closing_fence(s, at + FENCE.len());
                        Err(Scanned {
                            end: end.unwrap_or(s.len()),
                            items: Vec::new(),
                            unclosed: end.is_none(),
                        })
                    }
                    _ => Err(Scanned { end: at + FENCE.len(), ..Scanned::default() }),
                };
                let scanned = match outcome {
                    Ok(scanned) => {
                        out.cut(before);
                        scanned
                    }
                    Err(kept) => {
                        out.keep(s.get(cursor..kept.end).unwrap_or_default());
                        kept
                    }
                };
                out.items.extend(scanned.items);
                out.unclosed |= scanned.unclosed;
                scanned.end
            }
        };
    }
    out.keep(s.get(cursor..).unwrap_or_default());
    out
}

/// A call in bare JSON that runs to the end of the output (a stray
/// `</tool_call>` after it goes with it): where it starts, and what it holds.
/// Only JSON starting like a call and outside any markup counts; JSON cut off
/// by the end of the output is an incomplete call if it mentions `arguments`
/// (or `parameters`).
fn bare_tail(s: &str, tools: &[&str]) -> Option<(usize, Vec<Item>)> {
    // A stray closing tag after bare JSON, as if the opening one was forgotten.
    let end = s.trim_end().strip_suffix(TOOL_CLOSE).map_or(s.len(), str::len);
    let s = s.get(..end).unwrap_or_default();
    for (at, byte) in s.bytes().enumerate() {
        if !matches!(byte, b'{' | b'[') {
            continue;
        }
        let rest = s.get(at..).unwrap_or_default();
        if call_start(rest) != Pattern::Full {
            continue;
        }
        let read = json_values(rest);
        let outside_markup = || !scan(s.get(..at).unwrap_or_default(), tools).unclosed;
        match read.error {
            None => {
                let items = classify(&read.values, tools, false)?;
                return outside_markup().then_some((at, items));
            }
            // The rest is all one unfinished value: nothing later can be a call.
            Some(error) if error.is_eof() => {
                let looks_like_call = rest.contains("\"arguments\"") || rest.contains("\"parameters\"");
                if !(looks_like_call && outside_markup()) {
                    return None;
                }
                let problem = format!("incomplete tool call: the output ended inside its JSON ({error})");
                return Some((at, vec![Item::Problem(problem)]));
            }
            Some(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOOLS: &[&str] = &["read_file", "run_shell"];

    #[test]
    fn scan_keeps_text_in_order_and_reports_open_markup() {
        let s = "a <think>r</think>b <tool_call>{\"name\": \"run_shell\", \"arguments\": {}}</tool_call> c";
        let scanned = scan(s, TOOLS);
        assert_eq!(scanned.text, "a b c");
        assert_eq!(scanned.reasoning, ["r"]);
        assert_eq!(scanned.items.len(), 1);
        assert!(!scanned.unclosed);
        for open in ["x <think>", "x <tool_call>{", "```py\nx", "```json\n{\"name\": 1,", "<function=a"] {
            assert!(scan(open, TOOLS).unclosed, "{open}");
        }
        for closed in ["```py\nx\n```", "inline ``` backticks", "<b>x</b>"] {
            assert!(!scan(closed, TOOLS).unclosed, "{closed}");
        }
    }

    #[test]
    fn bare_tail_only_outside_markup() {
        let call = "{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}";
        let (at, items) = bare_tail(&format!("text {call}"), TOOLS).unwrap();
        assert_eq!(at, 5);
        let expected = ParsedCall { name: "run_shell".to_owned(), arguments: json!({"command": "ls"}) };
        assert_eq!(items, [Item::Call(expected)]);
        assert!(bare_tail(&format!("```python\n{call}"), TOOLS).is_none());
        assert!(bare_tail(&format!("<tool_call>{call}"), TOOLS).is_none());
        assert!(bare_tail(&format!("<think>{call}"), TOOLS).is_none());
        assert!(bare_tail(&format!("{call} and more"), TOOLS).is_none());
        // A cut-off list is one unfinished value, not a call in its last element.
        assert!(bare_tail(&format!("[{call}, {call}"), TOOLS).is_some_and(|(at, items)| {
            at == 0 && matches!(&items[..], [Item::Problem(p)] if p.starts_with("incomplete"))
        }));
    }
}
