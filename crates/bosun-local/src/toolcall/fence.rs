//! Code fences, told apart by their label and first content bytes: a fence
//! holding call tags (any label), a ```` ```json ```` or unlabelled fence
//! whose content starts like a call (its JSON up to the closing fence), or
//! text (up to a closing fence at a line start).

use super::calls::{CALL_EXAMPLE, Item, Pattern, call_start, classify, json_values, skip_ws};
use super::tags::{FUNC_OPEN, Scanned, TOOL_OPEN, function, tool_call};

pub(super) const FENCE: &str = "```";

/// What a code fence holds, judged from its opening and first content bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FenceKind {
    /// Not decided yet: the text ends in the label or before the content.
    Partial,
    /// Content starts with `<tool_call>` or `<function=` (any label).
    Tags,
    /// Label `json` (or none) and content starting like a call.
    Json,
    /// Anything else: text.
    Text,
}

/// An opening fence: its kind and where its content starts (after the label
/// and JSON whitespace), relative to the fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fence {
    pub kind: FenceKind,
    pub content: usize,
}

/// Reads the opening of a fence; `rest` starts with ```` ``` ````.
pub(super) fn fence(rest: &str) -> Fence {
    let label_len = rest
        .bytes()
        .skip(FENCE.len())
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.' | b'#'))
        .count();
    let label = rest.get(FENCE.len()..FENCE.len() + label_len).unwrap_or_default();
    let content = skip_ws(rest, FENCE.len() + label_len);
    let body = rest.get(content..).unwrap_or_default();
    let json_label = ["", "json", "json5", "jsonc"].iter().any(|l| label.eq_ignore_ascii_case(l));
    let kind = if body.is_empty() {
        FenceKind::Partial
    } else if body.starts_with(TOOL_OPEN) || body.starts_with(FUNC_OPEN) {
        FenceKind::Tags
    } else if TOOL_OPEN.starts_with(body) || FUNC_OPEN.starts_with(body) {
        FenceKind::Partial
    } else if !json_label {
        FenceKind::Text
    } else {
        match call_start(body) {
            Pattern::Full => FenceKind::Json,
            Pattern::Partial => FenceKind::Partial,
            Pattern::No => FenceKind::Text,
        }
    };
    Fence { kind, content }
}

/// Whether byte `at` of `s` starts a line, after spaces or tabs.
pub(super) fn at_line_start(s: &str, at: usize) -> bool {
    let before = s.get(..at).unwrap_or_default();
    let line = before.rsplit('\n').next().unwrap_or_default();
    line.bytes().all(|b| b == b' ' || b == b'\t')
}

/// The end of the first ```` ``` ```` at a line start at or after `from`.
pub(super) fn closing_fence(s: &str, from: usize) -> Option<usize> {
    let mut search = from;
    while let Some(i) = s.get(search..).and_then(|r| r.find(FENCE)) {
        let at = search + i;
        if at_line_start(s, at) {
            return Some(at + FENCE.len());
        }
        search = at + FENCE.len();
    }
    None
}

/// Call tags inside a fence (kind [`FenceKind::Tags`]), the first at `from`:
/// the tags, then the closing fence if it follows.
pub(super) fn tag_fence(s: &str, from: usize, tools: &[&str]) -> Scanned {
    let mut out = Scanned { end: from, ..Scanned::default() };
    loop {
        let rest = s.get(out.end..).unwrap_or_default();
        let scanned = if rest.starts_with(TOOL_OPEN) {
            tool_call(s, out.end, tools)
        } else if rest.starts_with(FUNC_OPEN) {
            function(s, out.end, tools)
        } else {
            break;
        };
        out.items.extend(scanned.items);
        out.end = scanned.end;
        if scanned.unclosed {
            out.unclosed = true;
            return out;
        }
        let next = skip_ws(s, out.end);
        if s.get(next..).is_some_and(|r| r.starts_with(FENCE)) {
            out.end = next + FENCE.len();
            return out;
        }
        if !s.get(next..).is_some_and(|r| r.starts_with(TOOL_OPEN) || r.starts_with(FUNC_OPEN)) {
            return out;
        }
        out.end = next;
    }
    out
}

/// A JSON fence (kind [`FenceKind::Json`]) at `at`, with `fence` its opening.
/// `Err`: not calls, the fence up to its `end` stays text.
pub(super) fn json_fence(s: &str, at: usize, fence: Fence, tools: &[&str]) -> Result<Scanned, Scanned> {
    let start = at + fence.content;
    let content = s.get(start..).unwrap_or_default();
    let read = json_values(content);
    let after = content.get(read.end..).unwrap_or_default();
    let rest = after.trim_start_matches([' ', '\t', '\n', '\r']);
    let clean_end = match &read.error {
        _ if read.values.is_empty() => None,
        None => Some((s.len(), true)),
        Some(_) if rest.starts_with(FENCE) => {
            Some((start + read.end + (after.len() - rest.len()) + FENCE.len(), false))
        }
        Some(_) => None,
    };
    if let Some((end, unclosed)) = clean_end {
        return match classify(&read.values, tools, false) {
            Some(items) => Ok(Scanned { end, items, unclosed }),
            None => Err(Scanned { end, items: Vec::new(), unclosed }),
        };
    }
    // Not clean JSON up to a closing fence: a call gone wrong, or text.
    let close = content.find(FENCE);
    let inner = close.and_then(|c| content.get(..c)).unwrap_or(content);
    let end = close.map_or(s.len(), |c| start + c + FENCE.len());
    if !(inner.contains("\"arguments\"") || inner.contains("\"parameters\"")) {
        return Err(Scanned { end, items: Vec::new(), unclosed: close.is_none() });
    }
    let problem = match read.error {
        Some(error) if close.is_none() && error.is_eof() => {
            format!("incomplete tool call: the output ended inside a ```json block ({error})")
        }
        Some(error) => {
            format!("invalid tool call: the ```json block is not valid JSON ({error}); write {CALL_EXAMPLE}")
        }
        None => format!("invalid tool call: the ```json block is not valid JSON; write {CALL_EXAMPLE}"),
    };
    Ok(Scanned { end, items: vec![Item::Problem(problem)], unclosed: close.is_none() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::toolcall::test_support::{TOOLS, call_of};

    #[test]
    fn fence_kinds() {
        let kind = |s: &str| fence(s).kind;
        assert_eq!(kind("```json\n{\"name\": 1}```"), FenceKind::Json);
        assert_eq!(kind("```{\"name\""), FenceKind::Json);
        assert_eq!(kind("```JSON [ {\"name\""), FenceKind::Json);
        assert_eq!(kind("```xml\n<tool_call>"), FenceKind::Tags);
        assert_eq!(kind("```python\n{\"name\": 1}"), FenceKind::Text);
        assert_eq!(kind("```json\n{\"users\": []}"), FenceKind::Text);
        assert_eq!(kind("```json\n{\"na"), FenceKind::Partial);
        assert_eq!(kind("```js"), FenceKind::Partial);
        assert_eq!(kind("```\n  <tool"), FenceKind::Partial);
        assert_eq!(kind("````"), FenceKind::Text);
        assert_eq!(fence("```json \n{").content, 9);
    }

    #[test]
    fn closing_fences_start_lines() {
        let s = "```py\nx = '```'\n  ```\nafter";
        assert_eq!(closing_fence(s, 3), Some(21));
        assert_eq!(closing_fence("```py\nx", 3), None);
    }

    #[test]
    fn json_fences() {
        let s = "```json {\"name\":\"run_shell\",\"arguments\":{\"command\":\"cargo test\"}}``` after";
        let f = fence(s);
        let scanned = json_fence(s, 0, f, TOOLS).unwrap();
        assert_eq!(scanned.items, vec![call_of("run_shell", json!({"command": "cargo test"}))]);
        assert_eq!(scanned.end, s.len() - " after".len());

        let data = "```json\n{\"name\": \"Alice\", \"age\": 3}\n```\nmore";
        assert_eq!(json_fence(data, 0, fence(data), TOOLS).unwrap_err().end, data.len() - "\nmore".len());

        let broken = "```json\n{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}\n```";
        let scanned = json_fence(broken, 0, fence(broken), TOOLS).unwrap();
        assert!(matches!(&scanned.items[..], [Item::Problem(p)] if p.contains("not valid JSON")));
        assert_eq!(scanned.end, broken.len());

        let cut = "```json\n{\"name\": \"run_shell\", \"arguments\": {\"comm";
        let scanned = json_fence(cut, 0, fence(cut), TOOLS).unwrap();
        assert!(matches!(&scanned.items[..], [Item::Problem(p)] if p.starts_with("incomplete")));
    }
}
