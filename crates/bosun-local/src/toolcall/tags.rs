//! Call tags: `<tool_call>…</tool_call>` (one object, several, or a list,
//! possibly fenced inside; unclosed, it runs to the end) and
//! `<function=name>…</function>` (a JSON body, or Qwen3-Coder's
//! `<parameter=key>value</parameter>` tags).

use serde_json::{Map, Value};

use super::calls::{CALL_EXAMPLE, Item, call, classify, clip, json_values, skip_ws};
use super::fence::{FENCE, fence};

pub(super) const TOOL_OPEN: &str = "<tool_call>";
pub(super) const TOOL_CLOSE: &str = "</tool_call>";
pub(super) const FUNC_OPEN: &str = "<function=";
const FUNC_CLOSE: &str = "</function>";
const PARAM_OPEN: &str = "<parameter=";
const PARAM_CLOSE: &str = "</parameter>";

/// What a piece of markup yielded and where it ended.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    pub end: usize,
    pub items: Vec<Item>,
    /// The markup was not closed and took the rest of the text.
    pub unclosed: bool,
}

/// `<tool_call>…</tool_call>` at `at`; unclosed, it runs to the end.
pub(super) fn tool_call(s: &str, at: usize, tools: &[&str]) -> Scanned {
    let start = at + TOOL_OPEN.len();
    let rest = s.get(start..).unwrap_or_default();
    let (body, end, closed) = match rest.find(TOOL_CLOSE) {
        Some(i) => (rest.get(..i).unwrap_or_default(), start + i + TOOL_CLOSE.len(), true),
        None => (rest, s.len(), false),
    };
    Scanned { end, items: tool_call_body(body, closed, tools), unclosed: !closed }
}

fn tool_call_body(body: &str, closed: bool, tools: &[&str]) -> Vec<Item> {
    let mut body = body.trim();
    if body.starts_with(FENCE) {
        body = body.get(fence(body).content..).unwrap_or_default().trim_end();
        body = body.strip_suffix(FENCE).unwrap_or(body).trim_end();
    }
    if body.is_empty() {
        let problem = if closed {
            format!("empty <tool_call>: expected <tool_call>{CALL_EXAMPLE}</tool_call>")
        } else {
            "incomplete tool call: the output ended right after <tool_call>".to_owned()
        };
        return vec![Item::Problem(problem)];
    }
    if body.starts_with(FUNC_OPEN) {
        let mut items = Vec::new();
        let mut pos = 0;
        while body.get(pos..).is_some_and(|r| r.starts_with(FUNC_OPEN)) {
            let scanned = function(body, pos, tools);
            items.extend(scanned.items);
            pos = skip_ws(body, scanned.end);
        }
        return items;
    }
    let read = json_values(body);
    let mut items = Vec::new();
    if !read.values.is_empty() {
        items = classify(&read.values, tools, true).unwrap_or_default();
    }
    if let Some(error) = read.error {
        items.push(Item::Problem(if !closed && error.is_eof() {
            format!("incomplete tool call: the output ended inside <tool_call> ({error})")
        } else {
            format!(
                "invalid tool call: the content of <tool_call> is not valid JSON ({error}); \
                 write <tool_call>{CALL_EXAMPLE}</tool_call>"
            )
        }));
    }
    items
}

/// `<function=name>…</function>` at `at`; unclosed, it runs to the end.
pub(super) fn function(s: &str, at: usize, tools: &[&str]) -> Scanned {
    let start = at + FUNC_OPEN.len();
    let rest = s.get(start..).unwrap_or_default();
    let Some(gt) = rest.find('>') else {
        let problem = "incomplete tool call: the output ended inside <function=…>".to_owned();
        return Scanned { end: s.len(), items: vec![Item::Problem(problem)], unclosed: true };
    };
    let name = rest.get(..gt).unwrap_or_default().trim().trim_matches('"');
    let rest = rest.get(gt + 1..).unwrap_or_default();
    let body_start = start + gt + 1;
    let (body, end, closed) = match rest.find(FUNC_CLOSE) {
        Some(i) => (rest.get(..i).unwrap_or_default(), body_start + i + FUNC_CLOSE.len(), true),
        None => (rest, s.len(), false),
    };
    let item = if name.is_empty() {
        Item::Problem("invalid tool call: <function=…> needs a tool name".to_owned())
    } else {
        call(name, Some(function_arguments(name, body.trim(), closed)), tools)
    };
    Scanned { end, items: vec![item], unclosed: !closed }
}

fn function_arguments(name: &str, body: &str, closed: bool) -> Result<Value, String> {
    let name = clip(name, 80);
    if body.is_empty() {
        Ok(Value::Object(Map::new()))
    } else if body.starts_with('{') {
        serde_json::from_str::<Value>(body).map_err(|error| {
            if !closed && error.is_eof() {
                format!("incomplete tool call `{name}`: the output ended inside its arguments ({error})")
            } else {
                format!("invalid tool call `{name}`: the arguments are not valid JSON ({error})")
            }
        })
    } else if body.starts_with(PARAM_OPEN) {
        parameters(&name, body, closed)
    } else {
        Err(format!(
            "invalid tool call `{name}`: the body of <function={name}> must be a JSON object \
             or <parameter=key>value</parameter> tags"
        ))
    }
}

/// `<parameter=key>value</parameter>` tags into an object. A value holding a
/// JSON object or list is parsed; any other value stays a string (no schema
/// here to tell `"42"` from `42`).
fn parameters(name: &str, body: &str, closed: bool) -> Result<Value, String> {
    let mut arguments = Map::new();
    let mut rest = body;
    while let Some(i) = rest.find(PARAM_OPEN) {
        let after = rest.get(i + PARAM_OPEN.len()..).unwrap_or_default();
        let Some(gt) = after.find('>') else {
            return Err(format!("incomplete tool call `{name}`: the output ended inside <parameter=…>"));
        };
        let key = after.get(..gt).unwrap_or_default().trim().trim_matches('"');
        let after = after.get(gt + 1..).unwrap_or_default();
        let (raw, next) = match (after.find(PARAM_CLOSE), after.find(PARAM_OPEN)) {
            (Some(close), next) if next.is_none_or(|n| close < n) => {
                (after.get(..close).unwrap_or_default(), after.get(close + PARAM_CLOSE.len()..))
            }
            (_, Some(next)) => (after.get(..next).unwrap_or_default(), after.get(next..)),
            (_, None) if closed => (after, None),
            (_, None) => {
                return Err(format!(
                    "incomplete tool call `{name}`: the output ended inside parameter `{}`",
                    clip(key, 80)
                ));
            }
        };
        arguments.insert(key.to_owned(), parameter_value(raw));
        rest = next.unwrap_or_default();
    }
    Ok(Value::Object(arguments))
}

fn parameter_value(raw: &str) -> Value {
    let raw = raw.strip_prefix("\r\n").or_else(|| raw.strip_prefix('\n')).unwrap_or(raw);
    let raw = raw.strip_suffix("\r\n").or_else(|| raw.strip_suffix('\n')).unwrap_or(raw);
    let trimmed = raw.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
    {
        return value;
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::toolcall::test_support::{TOOLS, call_of};

    #[test]
    fn tool_call_bodies() {
        let s = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call> x";
        let scanned = tool_call(s, 0, TOOLS);
        assert_eq!(scanned.items, vec![call_of("read_file", json!({"path": "a"}))]);
        assert_eq!((scanned.end, scanned.unclosed), (s.len() - 2, false));

        let body = "```json\n[{\"name\": \"run_shell\", \"arguments\": {}}]\n```";
        assert_eq!(tool_call_body(body, true, TOOLS), vec![call_of("run_shell", json!({}))]);
        let two = "{\"name\": \"run_shell\", \"arguments\": {}}\n{\"name\": \"x\", \"arguments\": {}}";
        let items = tool_call_body(two, true, TOOLS);
        assert_eq!(items[0], call_of("run_shell", json!({})));
        assert!(matches!(&items[1], Item::Problem(p) if p.starts_with("unknown tool `x`")));

        let bad = tool_call_body("{\"name\": \"run_shell\", ", true, TOOLS);
        assert!(matches!(&bad[..], [Item::Problem(p)] if p.starts_with("invalid tool call: the content")));
        let cut = tool_call_body("{\"name\": \"run_shell\", ", false, TOOLS);
        assert!(matches!(&cut[..], [Item::Problem(p)] if p.starts_with("incomplete tool call")));
        let empty = tool_call_body(" \n", true, TOOLS);
        assert!(matches!(&empty[..], [Item::Problem(p)] if p.starts_with("empty <tool_call>")));
        let listed = tool_call_body("[]", true, TOOLS);
        assert!(matches!(&listed[..], [Item::Problem(p)] if p.starts_with("empty tool call")));
    }

    #[test]
    fn function_tags() {
        let s = "<function=run_shell>{\"command\": \"ls\"}</function>";
        let scanned = function(s, 0, TOOLS);
        assert_eq!(scanned.items, vec![call_of("run_shell", json!({"command": "ls"}))]);
        assert_eq!(scanned.end, s.len());

        let qwen3_coder = "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n\
                           <parameter=range>\n[1, 5]\n</parameter>\n</function>\n</tool_call>";
        let scanned = tool_call(qwen3_coder, 0, TOOLS);
        assert_eq!(
            scanned.items,
            vec![call_of("read_file", json!({"path": "src/main.rs", "range": [1, 5]}))]
        );

        let no_close = "<function=run_shell><parameter=command>ls<parameter=cwd>/tmp</function>";
        let scanned = function(no_close, 0, TOOLS);
        assert_eq!(scanned.items, vec![call_of("run_shell", json!({"command": "ls", "cwd": "/tmp"}))]);

        let cut = function("<function=run_shell><parameter=command>ls -", 0, TOOLS);
        assert!(
            matches!(&cut.items[..], [Item::Problem(p)] if p.starts_with("incomplete tool call `run_shell`"))
        );
        assert!(cut.unclosed);
        let cut = function("<function=run_sh", 0, TOOLS);
        assert!(matches!(&cut.items[..], [Item::Problem(p)] if p.starts_with("incomplete tool call")));
        let unknown = function("<function=ls>{}</function>", 0, TOOLS);
        assert!(matches!(&unknown.items[..], [Item::Problem(p)] if p.starts_with("unknown tool `ls`")));
        let prose = function("<function=run_shell>please run ls</function>", 0, TOOLS);
        assert!(matches!(&prose.items[..], [Item::Problem(p)] if p.contains("must be a JSON object")));
    }
}
