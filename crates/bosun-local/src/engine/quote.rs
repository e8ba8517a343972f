//! Quoting a file in the tool grammar: `edit_file`'s old text can only be
//! text that occurs in the file the call names, so a small model cannot
//! write `LOG_LEVEL = info` for a file that says `LOG_LEVEL=info`.
//!
//! The schema gets one alternative per quotable file, `path` fixed to that
//! file and the text argument fixed to a marker constant; after the converter
//! (`gbnf`) turned the schema into GBNF, each marker's literal is replaced by a rule
//! that matches exactly the non-empty substrings of that file's text, as a
//! JSON string: rule `k` matches the character at `k` followed, optionally,
//! by rule `k + 1`, and the text rule starts at any `k`. That is one rule
//! per character, which is why the caller bounds the text quoted.
//!
//! The grammar sampler checks the chosen token alone first (`sampling`), so
//! the many alternatives cost little while the model quotes correctly.

use serde_json::{Value, json};

use super::hints::FileTexts;

/// Most characters of file text quoted in one grammar, over all files.
pub(crate) const MAX_QUOTED: usize = 32 * 1024;

/// A file text an argument must quote, and the marker standing for it in
/// the schema until [`Quote::splice`] puts its rule there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Quote {
    marker: String,
    rule: String,
    text: String,
}

impl Quote {
    /// The grammar `gbnf` with the marker's literal replaced by the text's
    /// rule, and that rule (one per character) added.
    pub(crate) fn splice(&self, gbnf: &str) -> Result<String, String> {
        let literal = gbnf_literal(&format!("\"{}\"", self.marker));
        if !gbnf.contains(&literal) {
            return Err(format!("the grammar lost the marker of `{}`", self.rule));
        }
        let mut out = gbnf.replace(&literal, &self.rule);
        out.push_str(&self.rules());
        Ok(out)
    }

    fn rules(&self) -> String {
        let units: Vec<String> = self.text.chars().map(json_unit).map(|u| gbnf_literal(&u)).collect();
        let at = |k: usize| format!("{}-{k}", self.rule);
        let starts: Vec<String> = (0..units.len()).map(at).collect();
        let mut out = format!("{} ::= \"\\\"\" ({}) \"\\\"\"\n", self.rule, starts.join(" | "));
        for (k, unit) in units.iter().enumerate() {
            if k + 1 < units.len() {
                out.push_str(&format!("{} ::= {unit} | {unit} {}\n", at(k), at(k + 1)));
            } else {
                out.push_str(&format!("{} ::= {unit}\n", at(k)));
            }
        }
        out
    }
}

/// `text` as a GBNF string literal.
pub(crate) fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One character as a JSON string writes it.
fn json_unit(c: char) -> String {
    let quoted = serde_json::to_string(&c.to_string()).unwrap_or_default();
    quoted[1..quoted.len().saturating_sub(1)].to_owned()
}

/// `schema` (a tool's parameters, its path already narrowed to `paths`) as
/// JSON Schema text of alternatives: one per file of `texts` among `paths`,
/// with the path fixed and the text argument a marker added to `quotes`;
/// one more for the other paths, text free. In every alternative the path
/// comes first and the text second, so the file is chosen before the quote
/// starts (else a misquote would stay possible by naming another file, and
/// the grammar would then force that file's name). `None` when no file
/// applies (none listed, none with text, the schema lacking either
/// argument, or over [`MAX_QUOTED`]).
pub(crate) fn alternatives(
    schema: &Value,
    tool_index: usize,
    texts: &FileTexts,
    paths: &[String],
    quotes: &mut Vec<Quote>,
) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    if !properties.contains_key(&texts.path_argument) || !properties.contains_key(&texts.text_argument) {
        return None;
    }
    let mut quoted = Vec::new();
    let mut budget = MAX_QUOTED;
    for (path, text) in &texts.files {
        let length = text.chars().count();
        if length == 0 || length > budget || !paths.contains(path) || quoted.iter().any(|(p, _)| p == path) {
            continue;
        }
        budget -= length;
        quoted.push((path.clone(), text.clone()));
    }
    if quoted.is_empty() {
        return None;
    }
    // Built as text: the grammar takes the properties in the order written.
    let others: Vec<String> = schema
        .as_object()?
        .iter()
        .filter(|(key, _)| *key != "properties")
        .map(|(key, value)| format!("{}:{value}", Value::from(key.as_str())))
        .collect();
    let rest_of: Vec<String> = properties
        .iter()
        .filter(|(key, _)| **key != texts.path_argument && **key != texts.text_argument)
        .map(|(key, value)| format!("{}:{value}", Value::from(key.as_str())))
        .collect();
    let text_schema = properties.get(&texts.text_argument)?;
    let alternative = |path: Value, text: &Value| {
        let mut fields = vec![
            format!("{}:{path}", Value::from(texts.path_argument.as_str())),
            format!("{}:{text}", Value::from(texts.text_argument.as_str())),
        ];
        fields.extend(rest_of.iter().cloned());
        let mut object = vec![format!("\"properties\":{{{}}}", fields.join(","))];
        object.extend(others.iter().cloned());
        format!("{{{}}}", object.join(","))
    };
    let mut any_of = Vec::new();
    for (path, text) in &quoted {
        let file_index = quotes.len();
        let marker = format!("bosunquote{tool_index}x{file_index}");
        let rule = format!("bosun-quote-{tool_index}-{file_index}");
        any_of.push(alternative(json!({ "const": path }), &json!({ "const": marker })));
        quotes.push(Quote { marker, rule, text: text.clone() });
    }
    let rest: Vec<&String> = paths.iter().filter(|p| !quoted.iter().any(|(q, _)| q == *p)).collect();
    if !rest.is_empty() {
        any_of.push(alternative(json!({ "enum": rest }), text_schema));
    }
    Some(format!("{{\"anyOf\":[{}]}}", any_of.join(",")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn texts(files: &[(&str, &str)]) -> FileTexts {
        FileTexts {
            path_argument: "path".into(),
            text_argument: "old_text".into(),
            files: files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect(),
        }
    }

    fn edit_schema() -> Value {
        json!({"type": "object", "properties": {
            "path": {"enum": ["a.txt", "b.txt"]},
            "old_text": {"type": "string"},
            "new_text": {"type": "string"}
        }, "required": ["path", "old_text", "new_text"]})
    }

    #[test]
    fn json_units_are_what_a_json_string_holds() {
        assert_eq!(json_unit('a'), "a");
        assert_eq!(json_unit('\n'), "\\n");
        assert_eq!(json_unit('"'), "\\\"");
        assert_eq!(json_unit('\\'), "\\\\");
        assert_eq!(json_unit('é'), "é");
        assert_eq!(json_unit('\u{1}'), "\\u0001");
    }

    #[test]
    fn a_read_file_gets_its_own_alternative_and_the_others_stay_free() {
        let mut quotes = Vec::new();
        let paths = ["a.txt".to_owned(), "b.txt".to_owned()];
        let schema =
            alternatives(&edit_schema(), 2, &texts(&[("a.txt", "x=1\n")]), &paths, &mut quotes).unwrap();
        let key = |name: &str| schema.find(&format!("\"{name}\":")).unwrap();
        assert!(key("path") < key("old_text") && key("old_text") < key("new_text"), "path first: {schema}");
        let schema: Value = serde_json::from_str(&schema).unwrap();
        let any_of = schema["anyOf"].as_array().unwrap();
        assert_eq!(any_of.len(), 2, "{schema}");
        assert_eq!(any_of[0]["properties"]["path"], json!({"const": "a.txt"}));
        assert_eq!(any_of[0]["properties"]["old_text"], json!({"const": "bosunquote2x0"}));
        assert_eq!(any_of[0]["required"], json!(["path", "old_text", "new_text"]));
        assert_eq!(any_of[1]["properties"]["path"], json!({"enum": ["b.txt"]}));
        assert_eq!(any_of[1]["properties"]["old_text"], json!({"type": "string"}));
        assert_eq!(any_of[1]["properties"]["new_text"], json!({"type": "string"}));
        assert_eq!(quotes.len(), 1);
        // A file outside the listed paths, an empty one, or none: nothing to hold.
        assert!(alternatives(&edit_schema(), 0, &texts(&[("c.txt", "x")]), &paths, &mut quotes).is_none());
        assert!(alternatives(&edit_schema(), 0, &texts(&[("a.txt", "")]), &paths, &mut quotes).is_none());
        let huge = "y".repeat(MAX_QUOTED + 1);
        assert!(alternatives(&edit_schema(), 0, &texts(&[("a.txt", &huge)]), &paths, &mut quotes).is_none());
    }

    #[test]
    fn the_rule_matches_every_substring_and_nothing_else() {
        let quote = Quote { marker: "m".into(), rule: "q".into(), text: "a\"\n".into() };
        let rules = quote.rules();
        assert_eq!(
            rules,
            "q ::= \"\\\"\" (q-0 | q-1 | q-2) \"\\\"\"\n\
             q-0 ::= \"a\" | \"a\" q-1\n\
             q-1 ::= \"\\\\\\\"\" | \"\\\\\\\"\" q-2\n\
             q-2 ::= \"\\\\n\"\n"
        );
        let spliced = quote.splice("x ::= \"\\\"m\\\"\" space\n").unwrap();
        assert!(spliced.starts_with("x ::= q space\n"), "{spliced}");
        assert!(quote.splice("x ::= \"other\"\n").is_err());
    }
}
