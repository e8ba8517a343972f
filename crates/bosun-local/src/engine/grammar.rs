//! The lazy tool-call grammar: GBNF built from the active tools' schemas
//! (through [`super::gbnf`]) and the patterns that switch it on, so a call
//! that has started is always well formed and names a real tool.
//!
//! One schema carries everything: a `bosun-call` property (one alternative
//! per tool: `{"name": "<tool>", "arguments": <that tool's schema>}`) and a
//! `bosun-args-N` property per tool. The converter names a property's rule
//! after the property, so the wrapper rules below can use `bosun-call` and
//! `bosun-args-N` however the converter spelled the rest; the schema's own
//! root rule is unused.
//!
//! Two ways in: lazily, from [`ROOT`], once a trigger pattern appears (the
//! model may answer in words); or from the start, from
//! [`ToolGrammar::required_root`], when the response must call a tool
//! (`ToolChoice::Required`): then the output is exactly one call, in the
//! template's own markup with JSON arguments. One, because a small model
//! forced to call repeats the call (or, given Qwen3-Coder's parameter tags,
//! one parameter) until its token limit.
//!
//! Argument values (see [`crate::engine::ArgumentValues`]) narrow string
//! arguments in the grammar only: the model is shown each tool's own schema,
//! and a listed argument can only be written as one of its values.
//!
//! An answer held to a JSON Schema (`GenerationOptions::output_schema`) is
//! a third way in, [`answer_grammar`]: from the first token, the response is
//! one JSON value of that schema, or (tools offered) one call, as under
//! `ToolChoice::Required`; the schema rides in the same carrier as a
//! `bosun-answer` property.

use bosun_core::ToolDefinition;

use super::gbnf;
use super::hints::ArgumentValues;
use super::quote::{self, Quote, gbnf_literal};
use crate::template::CallFormat;

/// The grammar rule the wrapper grammar starts at.
pub(crate) const ROOT: &str = "bosun-root";
/// The Hermes call tags.
const TOOL_OPEN: &str = "<tool_call>";
const TOOL_CLOSE: &str = "</tool_call>";
/// The function tags (Llama 3.1, Functionary, Qwen3-Coder).
const FUNC_OPEN: &str = "<function=";
const FUNC_CLOSE: &str = "</function>";
const PARAM_OPEN: &str = "<parameter=";
const PARAM_CLOSE: &str = "</parameter>";

/// A lazy grammar for tool calls: GBNF text and the patterns that switch it on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolGrammar {
    /// The grammar, rooted at [`ROOT`].
    pub(crate) gbnf: String,
    /// Regular expressions (the `regex` crate's, kept to what ECMAScript
    /// writes alike) over the output so far; the grammar applies from the
    /// first capture group on.
    pub(crate) patterns: Vec<String>,
    /// The rule a response that must call a tool starts at: the calls in the
    /// markup of the template's [`CallFormat`].
    pub(crate) required_root: &'static str,
}

/// Builds the tool-call grammar for `tools`, or says why it cannot.
///
/// A call is `{"name": "<tool>", "arguments": <object valid for that tool's
/// schema>}`, or a JSON list of them. The parser's triggers switch the
/// grammar on:
/// - `<tool_call>` anywhere: then one or more `<tool_call>` blocks, each
///   holding a call, a list, or function tags (below), closed by `</tool_call>`;
/// - `<function=` anywhere: then `<function=NAME>` with a JSON object valid
///   for that tool, or Qwen3-Coder's `<parameter=KEY>value</parameter>` tags
///   naming its properties, closed by `</function>`; several may follow;
/// - `{"name"` or `[{"name"` (spaces allowed) at the very start of the
///   output, possibly inside a ```` ```json ```` fence: then one call or one
///   list (and the closing fence, if one opened), and the end (a small model
///   otherwise repeats the call until its token limit);
/// - later in the output, a ```` ```json ```` fence opening `{"name":
///   "<one of the tools>"`: the same. Only with a tool's name, so JSON the
///   person asked for is not forced into a call.
pub(crate) fn tool_grammar(
    tools: &[ToolDefinition],
    triggers: &[&str],
    format: CallFormat,
    values: &ArgumentValues,
) -> Result<ToolGrammar, String> {
    build(tools, triggers, format, values, None)
}

/// The rule a response that answers in the schema or calls a tool starts at.
const ANSWER_OR_CALL: &str = "bosun-answer-or-call";

/// The grammar of a response that must be one JSON value matching
/// `schema`, or, with `tools`, one call of them (as under
/// `ToolChoice::Required`); its [`ToolGrammar::required_root`] starts at
/// the first token. `$defs` (and `definitions`) of the schema move to the
/// carrier's root, where its `#/$defs/…` references then point.
pub(crate) fn answer_grammar(
    tools: &[ToolDefinition],
    triggers: &[&str],
    format: CallFormat,
    values: &ArgumentValues,
    schema: &serde_json::Value,
) -> Result<ToolGrammar, String> {
    if tools.is_empty() {
        let gbnf =
            gbnf::schema_to_gbnf(schema).map_err(|e| format!("the output schema has no grammar: {e}"))?;
        return Ok(ToolGrammar { gbnf, patterns: Vec::new(), required_root: "root" });
    }
    let mut grammar = build(tools, triggers, format, values, Some(schema))?;
    grammar.gbnf.push_str(&format!("{ANSWER_OR_CALL} ::= bosun-answer | {}\n", grammar.required_root));
    grammar.required_root = ANSWER_OR_CALL;
    Ok(grammar)
}

fn build(
    tools: &[ToolDefinition],
    triggers: &[&str],
    format: CallFormat,
    values: &ArgumentValues,
    answer: Option<&serde_json::Value>,
) -> Result<ToolGrammar, String> {
    if tools.is_empty() {
        return Err("no tools".into());
    }
    let mut quotes = Vec::new();
    let schema = carrier_schema(tools, values, &mut quotes, answer)?;
    let schema: serde_json::Value = serde_json::from_str(&schema).map_err(|e| e.to_string())?;
    let mut gbnf =
        gbnf::schema_to_gbnf(&schema).map_err(|e| format!("the tool schemas have no grammar: {e}"))?;
    for quote in &quotes {
        gbnf = quote.splice(&gbnf)?;
    }
    let answered = answer.map(|_| "bosun-answer".to_owned());
    let rules =
        std::iter::once("bosun-call".to_owned()).chain((0..tools.len()).map(args_rule)).chain(answered);
    let defined = |rule: &String| gbnf.lines().any(|line| line.starts_with(&format!("{rule} ::=")));
    if let Some(missing) = rules.into_iter().find(|rule| !defined(rule)) {
        return Err(format!("the grammar has no rule `{missing}`"));
    }
    let mut forms = Vec::new();
    let mut patterns = Vec::new();
    if triggers.contains(&TOOL_OPEN) {
        forms.push("bosun-tagged");
        patterns.push(regex_escape(TOOL_OPEN));
    }
    if triggers.contains(&FUNC_OPEN) {
        forms.push("bosun-functions");
        patterns.push(regex_escape(FUNC_OPEN));
    }
    if triggers.iter().any(|t| t.trim_start_matches('[').replace(' ', "") == "{\"name\"") {
        forms.push("bosun-bare");
        patterns.push(r#"^\s*((?:```(?:json)?\s*)?\[?\s*\{\s*"name")[\s\S]*$"#.to_owned());
        if triggers.contains(&"```json") {
            let names: Vec<String> = tools.iter().map(|t| regex_escape(&t.name)).collect();
            patterns.push(format!(r#"(```(?:json)?\s*\[?\s*\{{\s*"name"\s*:\s*"(?:{})")"#, names.join("|")));
        }
    }
    if forms.is_empty() {
        return Err("the tool-call parser offers no trigger the grammar knows".into());
    }
    gbnf.push_str(&wrapper(tools, &forms));
    let required_root = match format {
        CallFormat::Tagged => "bosun-required-tagged",
        CallFormat::Functions => "bosun-function",
        _ => "bosun-call",
    };
    Ok(ToolGrammar { gbnf, patterns, required_root })
}

fn args_rule(index: usize) -> String {
    format!("bosun-args-{index}")
}

/// The JSON Schema whose properties give the rules `bosun-call` and
/// `bosun-args-N` (and `bosun-answer`, for an `answer` schema); the file
/// texts that arguments must quote are added to `quotes`, their places in
/// the schema held by markers.
fn carrier_schema(
    tools: &[ToolDefinition],
    values: &ArgumentValues,
    quotes: &mut Vec<Quote>,
    answer: Option<&serde_json::Value>,
) -> Result<String, String> {
    // Built as text, `name` before `arguments`: the grammar takes properties
    // in the order written, which the parse in `build` keeps (serde_json's
    // `preserve_order`).
    let mut alternatives = Vec::with_capacity(tools.len());
    let mut arguments = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let name = serde_json::to_string(&tool.name).map_err(|e| e.to_string())?;
        let parameters = parameters(tool, index, values, quotes)?;
        alternatives.push(format!(
            r#"{{"type":"object","properties":{{"name":{{"const":{name}}},"arguments":{parameters}}},"required":["name","arguments"],"additionalProperties":false}}"#
        ));
        arguments.push(format!(r#""{}":{parameters}"#, args_rule(index)));
    }
    let mut root = String::new();
    if let Some(answer) = answer {
        let mut answer = answer.clone();
        if let Some(object) = answer.as_object_mut() {
            for key in ["$defs", "definitions"] {
                if let Some(defs) = object.remove(key) {
                    root.push_str(&format!(",{}:{defs}", serde_json::json!(key)));
                }
            }
        }
        arguments.push(format!(r#""bosun-answer":{answer}"#));
    }
    Ok(format!(
        r#"{{"type":"object","properties":{{"bosun-call":{{"anyOf":[{}]}},{}}}{root}}}"#,
        alternatives.join(","),
        arguments.join(",")
    ))
}

/// The tool's schema as the grammar sees it: each string argument with
/// listed values becomes an `enum` of them (its description kept); with
/// file texts listed, one alternative per file holds the text argument to
/// that file's text (see [`quote`]).
fn parameters(
    tool: &ToolDefinition,
    index: usize,
    values: &ArgumentValues,
    quotes: &mut Vec<Quote>,
) -> Result<String, String> {
    if !tool.parameters.is_object() {
        return Ok(r#"{"type":"object"}"#.to_owned());
    }
    let mut schema = tool.parameters.clone();
    if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        for (name, property) in properties.iter_mut() {
            let is_string = property.get("type").and_then(|t| t.as_str()) == Some("string");
            let Some(allowed) = values.get(&tool.name, name).filter(|v| !v.is_empty()) else { continue };
            if is_string {
                *property = serde_json::json!({ "enum": allowed });
            }
        }
    }
    if let Some(texts) = values.texts(&tool.name)
        && let Some(paths) = values.get(&tool.name, &texts.path_argument).filter(|v| !v.is_empty())
        && let Some(quoted) = quote::alternatives(&schema, index, texts, paths, quotes)
    {
        return Ok(quoted);
    }
    serde_json::to_string(&schema).map_err(|e| e.to_string())
}

/// The rules over `bosun-call` and `bosun-args-N`: the forms, lists, tags.
fn wrapper(tools: &[ToolDefinition], forms: &[&str]) -> String {
    let (open, close) = (gbnf_literal(TOOL_OPEN), gbnf_literal(TOOL_CLOSE));
    let functions: Vec<String> = (0..tools.len()).map(|i| format!("bosun-fn-{i}")).collect();
    let mut out = format!(
        "\n{ROOT} ::= {}\n\
         bosun-calls ::= bosun-call | \"[\" space bosun-call (space \",\" space bosun-call)* space \"]\"\n\
         bosun-tagged ::= {open} space bosun-tag-body space {close} (space {open} space bosun-tag-body space {close})*\n\
         bosun-tag-body ::= bosun-calls | bosun-functions\n\
         bosun-bare ::= bosun-calls | \"```\" \"json\"? space bosun-calls space \"```\"\n\
         bosun-functions ::= bosun-function (space bosun-function)*\n\
         bosun-function ::= {} ({})\n\
         bosun-param-value ::= ([^<] | \"<\" [^/] | \"</\" [^p])*\n\
         bosun-required-tagged ::= {open} space bosun-call space {close}\n",
        forms.join(" | "),
        gbnf_literal(FUNC_OPEN),
        functions.join(" | "),
    );
    for (index, tool) in tools.iter().enumerate() {
        let head = gbnf_literal(&format!("{}>", tool.name));
        let close = gbnf_literal(FUNC_CLOSE);
        let keys: Vec<String> = tool
            .parameters
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().map(|k| gbnf_literal(k)).collect())
            .unwrap_or_default();
        let required =
            tool.parameters.get("required").and_then(|r| r.as_array()).is_some_and(|r| !r.is_empty());
        let mut bodies = vec![args_rule(index)];
        if !keys.is_empty() {
            bodies.push(format!("bosun-params-{index}"));
            out.push_str(&format!(
                "bosun-params-{index} ::= bosun-param-{index} (space bosun-param-{index})*\n\
                 bosun-param-{index} ::= {} ({}) \">\" bosun-param-value {}\n",
                gbnf_literal(PARAM_OPEN),
                keys.join(" | "),
                gbnf_literal(PARAM_CLOSE),
            ));
        }
        let optional = if required { "" } else { "?" };
        out.push_str(&format!(
            "bosun-fn-{index} ::= {head} space ({}){optional} space {close}\n",
            bodies.join(" | ")
        ));
    }
    out
}

/// `text` as an ECMAScript regular expression matching it literally.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read_file() -> ToolDefinition {
        let schema =
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        ToolDefinition::new("read_file", "", schema)
    }

    #[test]
    fn the_call_schema_puts_name_before_arguments() {
        let schema = carrier_schema(&[read_file()], &ArgumentValues::default(), &mut Vec::new(), None)
            .unwrap_or_default();
        let name = schema.find("\"name\"").unwrap_or(usize::MAX);
        let arguments = schema.find("\"arguments\"").unwrap_or(0);
        assert!(name < arguments, "{schema}");
    }

    #[test]
    fn every_trigger_has_its_form_and_pattern() {
        let tools = [read_file(), ToolDefinition::new("now", "", json!({"type": "object"}))];
        let none = ArgumentValues::default();
        let grammar =
            tool_grammar(&tools, crate::toolcall::CALL_TRIGGERS, CallFormat::Tagged, &none).unwrap();
        assert_eq!(grammar.required_root, "bosun-required-tagged");
        assert!(
            grammar.gbnf.contains(
                "bosun-required-tagged ::= \"<tool_call>\" space bosun-call space \"</tool_call>\""
            ),
            "one call in Hermes tags: {}",
            grammar.gbnf
        );
        assert!(
            grammar.gbnf.contains("bosun-root ::= bosun-tagged | bosun-functions | bosun-bare"),
            "{}",
            grammar.gbnf
        );
        assert_eq!(grammar.patterns[0], "<tool_call>");
        assert_eq!(grammar.patterns[1], "<function=");
        assert!(grammar.patterns[2].starts_with('^') && grammar.patterns[2].ends_with('$'));
        assert!(grammar.patterns[3].contains("(?:read_file|now)"), "{}", grammar.patterns[3]);
        assert!(grammar.gbnf.contains("bosun-param-0 ::= \"<parameter=\" (\"path\")"), "{}", grammar.gbnf);
        // A tool with required arguments needs a body; one without may be empty.
        assert!(
            grammar
                .gbnf
                .contains("bosun-fn-0 ::= \"read_file>\" space (bosun-args-0 | bosun-params-0) space")
        );
        assert!(grammar.gbnf.contains("bosun-fn-1 ::= \"now>\" space (bosun-args-1)? space"));
        assert!(tool_grammar(&tools, &["<function="], CallFormat::Functions, &none).is_ok());
        assert!(tool_grammar(&tools, &["<nothing>"], CallFormat::Tagged, &none).is_err());
        assert!(tool_grammar(&[], crate::toolcall::CALL_TRIGGERS, CallFormat::Tagged, &none).is_err());
        let bare = tool_grammar(&tools, crate::toolcall::CALL_TRIGGERS, CallFormat::Bare, &none).unwrap();
        assert_eq!(bare.required_root, "bosun-call");
        let functions =
            tool_grammar(&tools, crate::toolcall::CALL_TRIGGERS, CallFormat::Functions, &none).unwrap();
        assert_eq!(functions.required_root, "bosun-function");
    }

    #[test]
    fn listed_values_narrow_only_their_string_argument() {
        let mut values = ArgumentValues::default();
        values.insert("read_file", "path", vec!["a.txt".into(), "src/b.rs".into()]);
        values.insert("read_file", "offset", vec!["1".into()]);
        values.insert("other_tool", "path", vec!["x".into()]);
        let schema = parameters(&read_file(), 0, &values, &mut Vec::new()).unwrap();
        let schema: serde_json::Value = serde_json::from_str(&schema).unwrap();
        assert_eq!(schema["properties"]["path"], json!({"enum": ["a.txt", "src/b.rs"]}));
        assert_eq!(schema["required"], json!(["path"]), "the rest of the schema is kept");
        // No values, or empty ones: the argument stays free.
        let free = parameters(&read_file(), 0, &ArgumentValues::default(), &mut Vec::new()).unwrap();
        assert!(free.contains(r#""path":{"type":"string"}"#), "{free}");
        let mut empty = ArgumentValues::default();
        empty.insert("read_file", "path", Vec::new());
        assert_eq!(parameters(&read_file(), 0, &empty, &mut Vec::new()).unwrap(), free);
    }

    #[test]
    fn an_answer_schema_is_an_alternative_to_one_call_from_the_first_token() {
        let none = ArgumentValues::default();
        let schema = json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/verdict"}}, "required": ["v"],
            "$defs": {"verdict": {"enum": ["pass", "fail"]}}});
        let triggers = crate::toolcall::CALL_TRIGGERS;
        let grammar = answer_grammar(&[read_file()], triggers, CallFormat::Tagged, &none, &schema).unwrap();
        assert_eq!(grammar.required_root, ANSWER_OR_CALL);
        assert!(grammar.gbnf.contains("bosun-answer-or-call ::= bosun-answer | bosun-required-tagged"));
        assert!(grammar.gbnf.lines().any(|line| line.starts_with("bosun-answer ::=")), "{}", grammar.gbnf);
        assert!(grammar.gbnf.contains("pass"), "the $defs moved with it: {}", grammar.gbnf);
        let alone = answer_grammar(&[], triggers, CallFormat::Tagged, &none, &schema).unwrap();
        assert_eq!((alone.required_root, alone.patterns.len()), ("root", 0));
        assert!(alone.gbnf.lines().any(|line| line.starts_with("root ::=")), "{}", alone.gbnf);
        let nowhere = json!({"$ref": "#/$defs/missing"});
        assert!(answer_grammar(&[], triggers, CallFormat::Tagged, &none, &nowhere).is_err());
    }

    #[test]
    fn regex_escape_quotes_metacharacters() {
        assert_eq!(regex_escape("a.b[c]{d}"), r"a\.b\[c\]\{d\}");
        let odd = ToolDefinition::new("a.b/c(d)|e*f+g?h^i$j\\k", "", json!({"type": "object"}));
        let triggers = crate::toolcall::CALL_TRIGGERS;
        let grammar = tool_grammar(&[odd], triggers, CallFormat::Bare, &ArgumentValues::default()).unwrap();
        for pattern in &grammar.patterns {
            let compiled = regex::Regex::new(pattern);
            assert!(compiled.is_ok(), "the sampler compiles every trigger: {pattern}: {compiled:?}");
        }
        let fenced = regex::Regex::new(&grammar.patterns[3]).unwrap();
        assert!(fenced.is_match("```json {\"name\": \"a.b/c(d)|e*f+g?h^i$j\\k\""));
    }

    #[test]
    fn gbnf_literals_escape_quotes_and_newlines() {
        assert_eq!(gbnf_literal("a\"b\\\n"), r#""a\"b\\\n""#);
    }
}
