//! From JSON to tool calls: the start pattern that marks JSON as a possible
//! call (`{"name"` or `[{"name"`), reading consecutive JSON values, the call
//! shape (`name` plus `arguments` or `parameters`, the latter given as an
//! object or as a JSON string), the name check against the active tools, and
//! the wording of the problems shown to the model.

use serde_json::{Map, Value};

use super::ParsedCall;

/// One thing found where a call was written: a valid call, or a problem.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Item {
    Call(ParsedCall),
    Problem(String),
}

/// How far text matches a pattern: not at all, so far (the text ended
/// inside it), or completely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pattern {
    No,
    Partial,
    Full,
}

/// What a call looks like, quoted in problems so the model can correct itself.
pub(super) const CALL_EXAMPLE: &str = r#"{"name": "<tool>", "arguments": {...}}"#;

pub(super) fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
pub(super) fn skip_ws(s: &str, mut i: usize) -> usize {
    while s.as_bytes().get(i).is_some_and(|b| is_json_ws(*b)) {
        i += 1;
    }
    i
}

/// Whether `s` starts like a call object or a list of them: `{` then `"name"`
/// as the first key, or `[` then such an object (JSON whitespace between).
/// Bare and fenced JSON is only taken for a call when it starts so, and
/// `safe_text_prefix` holds text back from the same pattern.
pub(super) fn call_start(s: &str) -> Pattern {
    const KEY: &[u8] = b"\"name\"";
    let b = s.as_bytes();
    let open = match b.first() {
        Some(b'{') => 0,
        Some(b'[') => {
            let i = skip_ws(s, 1);
            match b.get(i) {
                None => return Pattern::Partial,
                Some(b'{') => i,
                Some(_) => return Pattern::No,
            }
        }
        _ => return Pattern::No,
    };
    let rest = b.get(skip_ws(s, open + 1)..).unwrap_or_default();
    if rest.starts_with(KEY) {
        Pattern::Full
    } else if KEY.starts_with(rest) {
        Pattern::Partial
    } else {
        Pattern::No
    }
}

/// Consecutive JSON values at the start of a text.
#[derive(Debug)]
pub(super) struct Values {
    pub values: Vec<Value>,
    /// Byte offset just after the last value read.
    pub end: usize,
    /// The error that stopped the reading; `None` if only whitespace followed.
    pub error: Option<serde_json::Error>,
}

/// Reads JSON values one after another (`{..}{..}`, `{..}\n{..}`) until the
/// text ends or something that is not JSON follows.
pub(super) fn json_values(s: &str) -> Values {
    let mut stream = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    let mut values = Vec::new();
    let mut end = 0;
    loop {
        match stream.next() {
            None => return Values { values, end, error: None },
            Some(Ok(value)) => {
                values.push(value);
                end = stream.byte_offset();
            }
            Some(Err(error)) => return Values { values, end, error: Some(error) },
        }
    }
}

/// Whether a JSON object has the shape of a call.
fn call_shaped(object: &Map<String, Value>) -> bool {
    object.get("name").is_some_and(Value::is_string)
        && (object.contains_key("arguments") || object.contains_key("parameters"))
}

/// Turns JSON values (objects, or lists of objects) into calls and problems.
///
/// `strict` is for `<tool_call>`, where everything is meant as a call: any
/// value that is not a valid call becomes a problem. Otherwise (fenced or
/// bare JSON) the values are calls only if every object has the call shape,
/// and `None` means "not calls: leave it as text" (the user may have asked
/// for JSON data).
pub(super) fn classify(values: &[Value], tools: &[&str], strict: bool) -> Option<Vec<Item>> {
    let mut objects = Vec::new();
    for value in values {
        match value {
            Value::Array(list) => objects.extend(list.iter()),
            other => objects.push(other),
        }
    }
    if !strict && (objects.is_empty() || !objects.iter().all(|v| v.as_object().is_some_and(call_shaped))) {
        return None;
    }
    if objects.is_empty() {
        return Some(vec![Item::Problem(format!("empty tool call: expected {CALL_EXAMPLE}"))]);
    }
    Some(objects.into_iter().map(|value| item(value, tools)).collect())
}

/// One object meant as a call.
fn item(value: &Value, tools: &[&str]) -> Item {
    let Some(object) = value.as_object() else {
        return Item::Problem(format!(
            "invalid tool call: expected a JSON object like {CALL_EXAMPLE}, got {}",
            kind(value)
        ));
    };
    let Some(name) = object.get("name").and_then(Value::as_str) else {
        return Item::Problem(format!(
            "invalid tool call: a call needs a string `name`, like {CALL_EXAMPLE}"
        ));
    };
    let arguments = object.get("arguments").or_else(|| object.get("parameters"));
    call(name, arguments.cloned().map(Ok), tools)
}

/// A call by name with its arguments (absent: none), checked against the
/// tools. Arguments that could not be read come as `Some(Err(problem))`.
pub(super) fn call(name: &str, arguments: Option<Result<Value, String>>, tools: &[&str]) -> Item {
    let name = name.trim();
    if !tools.contains(&name) {
        return Item::Problem(unknown_tool(name, tools));
    }
    let arguments = match arguments {
        None => Ok(Value::Object(Map::new())),
        Some(Ok(value)) => object_arguments(name, value),
        Some(Err(problem)) => Err(problem),
    };
    match arguments {
        Ok(arguments) => Item::Call(ParsedCall { name: name.to_owned(), arguments }),
        Err(problem) => Item::Problem(problem),
    }
}

/// `arguments` as an object: an object as is, `null` or an empty string as
/// `{}`, a string holding a JSON object parsed.
fn object_arguments(name: &str, value: Value) -> Result<Value, String> {
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(text) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ Value::Object(_)) => Ok(parsed),
            Ok(other) => Err(format!(
                "invalid tool call `{name}`: `arguments` must be a JSON object, got a string holding {}",
                kind(&other)
            )),
            Err(error) => Err(format!(
                "invalid tool call `{name}`: `arguments` is a string that is not a JSON object ({error})"
            )),
        },
        other => Err(format!(
            "invalid tool call `{name}`: `arguments` must be a JSON object, got {}",
            kind(&other)
        )),
    }
}

/// The problem for a call to a tool that is not active.
pub(super) fn unknown_tool(name: &str, tools: &[&str]) -> String {
    let available = if tools.is_empty() { "none".to_owned() } else { tools.join(", ") };
    format!("unknown tool `{}`; available: {available}", clip(name, 80))
}

/// At most `max` characters of `text`, with an ellipsis if cut.
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::toolcall::test_support::{TOOLS, call_of};

    #[test]
    fn call_start_patterns() {
        assert_eq!(call_start(r#"{"name": 1}"#), Pattern::Full);
        assert_eq!(call_start("[ \n{ \"name\""), Pattern::Full);
        assert_eq!(call_start("{ \"na"), Pattern::Partial);
        assert_eq!(call_start("["), Pattern::Partial);
        assert_eq!(call_start("[ {"), Pattern::Partial);
        assert_eq!(call_start(r#"{"names""#), Pattern::No);
        assert_eq!(call_start(r#"{"nb"#), Pattern::No);
        assert_eq!(call_start("[1]"), Pattern::No);
        assert_eq!(call_start("x"), Pattern::No);
        assert_eq!(call_start(""), Pattern::No);
    }

    #[test]
    fn values_in_sequence() {
        let read = json_values("{\"a\":1}\n[2] {\"b\":3}  ```");
        assert_eq!(read.values.len(), 3);
        assert_eq!(read.end, 19);
        assert!(read.error.is_some());
        let read = json_values("{\"a\":1}  \n");
        assert_eq!((read.values.len(), read.error.is_none()), (1, true));
        let read = json_values("{\"a\":");
        assert!(read.values.is_empty() && read.error.as_ref().is_some_and(serde_json::Error::is_eof));
    }

    #[test]
    fn objects_and_lists_of_calls() {
        let values = [json!({"name": "read_file", "arguments": {"path": "a"}})];
        assert_eq!(classify(&values, TOOLS, false), Some(vec![call_of("read_file", json!({"path": "a"}))]));
        let values = [json!([
            {"name": "read_file", "parameters": {"path": "a"}},
            {"name": "run_shell", "arguments": "{\"command\": \"ls\"}"}
        ])];
        assert_eq!(
            classify(&values, TOOLS, false),
            Some(vec![
                call_of("read_file", json!({"path": "a"})),
                call_of("run_shell", json!({"command": "ls"}))
            ])
        );
    }

    #[test]
    fn data_is_not_a_call_unless_strict() {
        for data in [json!({"name": "Alice", "age": 3}), json!([1, 2]), json!([]), json!("x")] {
            assert_eq!(classify(std::slice::from_ref(&data), TOOLS, false), None, "{data}");
            let items = classify(&[data], TOOLS, true).unwrap();
            assert!(items.iter().all(|i| matches!(i, Item::Problem(_))), "{items:?}");
        }
        // A call shape with one odd element in the list: all of it stays text.
        let mixed = [json!([{"name": "read_file", "arguments": {}}, {"x": 1}])];
        assert_eq!(classify(&mixed, TOOLS, false), None);
    }

    #[test]
    fn unknown_names_and_bad_arguments_are_problems() {
        let values = [json!({"name": "src/main.rs", "arguments": {"path": "x"}})];
        assert_eq!(
            classify(&values, TOOLS, false),
            Some(vec![Item::Problem(
                "unknown tool `src/main.rs`; available: read_file, run_shell".to_owned()
            )])
        );
        assert_eq!(call("x", None, &[]), Item::Problem("unknown tool `x`; available: none".to_owned()));
        for bad in [json!(5), json!("[1]"), json!("{not json"), json!([1])] {
            let item = call("read_file", Some(Ok(bad.clone())), TOOLS);
            assert!(
                matches!(&item, Item::Problem(p) if p.starts_with("invalid tool call `read_file`")),
                "{bad}"
            );
        }
        for empty in [json!(null), json!(""), json!({})] {
            assert_eq!(call(" read_file ", Some(Ok(empty)), TOOLS), call_of("read_file", json!({})));
        }
        assert_eq!(
            classify(&[json!({"arguments": {}})], TOOLS, true),
            Some(vec![Item::Problem(format!(
                "invalid tool call: a call needs a string `name`, like {CALL_EXAMPLE}"
            ))])
        );
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
        assert!(unknown_tool(&"é".repeat(500), TOOLS).len() < 300);
    }
}
