//! Tool parameter schemas: a bounded JSON Schema vocabulary (invariant 6).
//!
//! A definition is compiled once when the session is built; anything outside
//! the vocabulary is refused then, not discovered during a turn. Argument
//! objects are validated against the compiled form. Written here rather than
//! taken from a JSON Schema crate because the point is to accept *less*: a
//! full validator would silently honour `$ref`, `if`/`then` or remote schemas.

mod lower;

pub use lower::{lower, lower_in};

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

/// Keywords a tool schema may use.
pub const VOCABULARY: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "anyOf",
    "additionalProperties",
    "description",
    "default",
];

/// Deepest nesting a schema may have.
pub const MAX_DEPTH: usize = 32;
/// Most argument errors reported at once.
const MAX_REPORTED: usize = 5;

/// Why a schema is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A keyword outside [`VOCABULARY`].
    #[error("at `{path}`: keyword `{keyword}` is outside bosun's schema vocabulary")]
    Keyword {
        /// JSON pointer to the schema node.
        path: String,
        /// The keyword.
        keyword: String,
    },
    /// A keyword with a value of the wrong shape.
    #[error("at `{path}`: `{keyword}` {problem}")]
    Malformed {
        /// JSON pointer to the schema node.
        path: String,
        /// The keyword.
        keyword: String,
        /// What is wrong.
        problem: String,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("at `{path}`: nested deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// JSON pointer to the schema node.
        path: String,
    },
    /// The top level is not `{"type": "object", …}`.
    #[error("the parameter schema must be an object schema (`\"type\": \"object\"`)")]
    NotAnObject,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JsonType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
    Null,
}

impl JsonType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "object" => Self::Object,
            "array" => Self::Array,
            "null" => Self::Null,
            _ => return None,
        })
    }

    fn matches(self, value: &Value) -> bool {
        match self {
            Self::String => value.is_string(),
            Self::Number => value.is_number(),
            Self::Integer => match value {
                Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
                _ => false,
            },
            Self::Boolean => value.is_boolean(),
            Self::Object => value.is_object(),
            Self::Array => value.is_array(),
            Self::Null => value.is_null(),
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Debug, Default)]
enum Additional {
    #[default]
    Allowed,
    Forbidden,
    Schema(Box<Node>),
}

#[derive(Debug, Default)]
struct Node {
    types: Option<Vec<JsonType>>,
    properties: BTreeMap<String, Node>,
    required: Vec<String>,
    additional: Additional,
    items: Option<Box<Node>>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    pattern: Option<Regex>,
    any_of: Vec<Node>,
}

/// A compiled parameter schema.
#[derive(Debug)]
pub struct CompiledSchema {
    root: Node,
}

impl CompiledSchema {
    /// Compiles a tool's parameter schema, refusing anything outside the
    /// vocabulary.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        let root = compile_node(schema, "", 0)?;
        if root.types.as_deref() != Some(&[JsonType::Object]) {
            return Err(SchemaError::NotAnObject);
        }
        Ok(Self { root })
    }

    /// Checks an argument value; the error lists what is wrong, with paths.
    pub fn validate(&self, value: &Value) -> Result<(), ArgumentError> {
        let mut problems = Vec::new();
        check(&self.root, value, "", &mut problems);
        if problems.is_empty() { Ok(()) } else { Err(ArgumentError { problems }) }
    }
}

/// Why an argument object does not satisfy its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct ArgumentError {
    problems: Vec<String>,
}

impl ArgumentError {
    /// Each problem, as `path: what is wrong`.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

fn malformed(path: &str, keyword: &str, problem: &str) -> SchemaError {
    SchemaError::Malformed {
        path: display_path(path),
        keyword: keyword.to_owned(),
        problem: problem.to_owned(),
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() { "/".to_owned() } else { path.to_owned() }
}

fn number(path: &str, keyword: &str, value: &Value) -> Result<f64, SchemaError> {
    value.as_f64().ok_or_else(|| malformed(path, keyword, "must be a number"))
}

fn count(path: &str, keyword: &str, value: &Value) -> Result<u64, SchemaError> {
    value.as_u64().ok_or_else(|| malformed(path, keyword, "must be a non-negative integer"))
}

fn compile_node(schema: &Value, path: &str, depth: usize) -> Result<Node, SchemaError> {
    if depth > MAX_DEPTH {
        return Err(SchemaError::TooDeep { path: display_path(path) });
    }
    let object: &Map<String, Value> = match schema {
        Value::Object(object) => object,
        Value::Bool(true) => return Ok(Node::default()),
        _ => return Err(malformed(path, "schema", "must be an object")),
    };
    let mut node = Node::default();
    for (keyword, value) in object {
        match keyword.as_str() {
            "type" => node.types = Some(compile_types(path, value)?),
            "properties" => {
                let Value::Object(props) = value else {
                    return Err(malformed(path, keyword, "must be an object"));
                };
                for (name, sub) in props {
                    let sub_path = format!("{path}/properties/{name}");
                    node.properties.insert(name.clone(), compile_node(sub, &sub_path, depth + 1)?);
                }
            }
            "required" => {
                let names = value
                    .as_array()
                    .and_then(|items| {
                        items.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| malformed(path, keyword, "must be an array of strings"))?;
                node.required = names;
            }
            "items" => {
                let sub_path = format!("{path}/items");
                node.items = Some(Box::new(compile_node(value, &sub_path, depth + 1)?));
            }
            "enum" => {
                let values = value.as_array().ok_or_else(|| malformed(path, keyword, "must be an array"))?;
                node.enumeration = Some(values.clone());
            }
            "const" => node.constant = Some(value.clone()),
            "minimum" => node.minimum = Some(number(path, keyword, value)?),
            "maximum" => node.maximum = Some(number(path, keyword, value)?),
            "exclusiveMinimum" => node.exclusive_minimum = Some(number(path, keyword, value)?),
            "exclusiveMaximum" => node.exclusive_maximum = Some(number(path, keyword, value)?),
            "minLength" => node.min_length = Some(count(path, keyword, value)?),
            "maxLength" => node.max_length = Some(count(path, keyword, value)?),
            "minItems" => node.min_items = Some(count(path, keyword, value)?),
            "maxItems" => node.max_items = Some(count(path, keyword, value)?),
            "pattern" => {
                let text = value.as_str().ok_or_else(|| malformed(path, keyword, "must be a string"))?;
                let regex = Regex::new(text).map_err(|e| {
                    malformed(path, keyword, &format!("is not a valid regular expression: {e}"))
                })?;
                node.pattern = Some(regex);
            }
            "anyOf" => {
                let options = value
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| malformed(path, keyword, "must be a non-empty array"))?;
                for (i, option) in options.iter().enumerate() {
                    let sub_path = format!("{path}/anyOf/{i}");
                    node.any_of.push(compile_node(option, &sub_path, depth + 1)?);
                }
            }
            "additionalProperties" => {
                node.additional = match value {
                    Value::Bool(true) => Additional::Allowed,
                    Value::Bool(false) => Additional::Forbidden,
                    other => {
                        let sub_path = format!("{path}/additionalProperties");
                        Additional::Schema(Box::new(compile_node(other, &sub_path, depth + 1)?))
                    }
                }
            }
            "description" => {
                if !value.is_string() {
                    return Err(malformed(path, keyword, "must be a string"));
                }
            }
            "default" => {}
            other => {
                return Err(SchemaError::Keyword { path: display_path(path), keyword: other.to_owned() });
            }
        }
    }
    Ok(node)
}

fn compile_types(path: &str, value: &Value) -> Result<Vec<JsonType>, SchemaError> {
    let parse = |v: &Value| {
        v.as_str().and_then(JsonType::parse).ok_or_else(|| {
            malformed(
                path,
                "type",
                "must name JSON types (string, number, integer, boolean, object, array, null)",
            )
        })
    };
    match value {
        Value::Array(names) if !names.is_empty() => names.iter().map(parse).collect(),
        Value::String(_) => Ok(vec![parse(value)?]),
        _ => Err(malformed(path, "type", "must be a type name or a non-empty array of them")),
    }
}

fn check(node: &Node, value: &Value, path: &str, problems: &mut Vec<String>) {
    if problems.len() >= MAX_REPORTED {
        return;
    }
    let at = display_path(path);
    if let Some(types) = &node.types
        && !types.iter().any(|t| t.matches(value))
    {
        let wanted: Vec<String> = types.iter().map(|t| format!("{t:?}").to_lowercase()).collect();
        problems.push(format!("{at}: expected {}, got {}", wanted.join(" or "), type_name(value)));
        return;
    }
    if let Some(values) = &node.enumeration
        && !values.contains(value)
    {
        problems.push(format!("{at}: must be one of {}", Value::Array(values.clone())));
    }
    if let Some(constant) = &node.constant
        && constant != value
    {
        problems.push(format!("{at}: must equal {constant}"));
    }
    match value {
        Value::Number(n) => check_number(node, n.as_f64().unwrap_or(f64::NAN), &at, problems),
        Value::String(s) => check_string(node, s, &at, problems),
        Value::Array(items) => {
            let len = items.len() as u64;
            if node.min_items.is_some_and(|min| len < min) || node.max_items.is_some_and(|max| len > max) {
                problems.push(format!("{at}: has {len} items, outside the allowed count"));
            }
            if let Some(item_schema) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}/{i}"), problems);
                }
            }
        }
        Value::Object(fields) => check_object(node, fields, path, problems),
        Value::Null | Value::Bool(_) => {}
    }
    if !node.any_of.is_empty() {
        let matches_one = node.any_of.iter().any(|option| {
            let mut scratch = Vec::new();
            check(option, value, path, &mut scratch);
            scratch.is_empty()
        });
        if !matches_one {
            problems.push(format!("{at}: matches none of the allowed forms (anyOf)"));
        }
    }
}

fn check_number(node: &Node, n: f64, at: &str, problems: &mut Vec<String>) {
    if node.minimum.is_some_and(|m| n < m) || node.exclusive_minimum.is_some_and(|m| n <= m) {
        problems.push(format!("{at}: {n} is below the minimum"));
    }
    if node.maximum.is_some_and(|m| n > m) || node.exclusive_maximum.is_some_and(|m| n >= m) {
        problems.push(format!("{at}: {n} is above the maximum"));
    }
}

fn check_string(node: &Node, s: &str, at: &str, problems: &mut Vec<String>) {
    let len = s.chars().count() as u64;
    if node.min_length.is_some_and(|min| len < min) {
        problems.push(format!("{at}: shorter than {} characters", node.min_length.unwrap_or_default()));
    }
    if node.max_length.is_some_and(|max| len > max) {
        problems.push(format!("{at}: longer than {} characters", node.max_length.unwrap_or_default()));
    }
    if let Some(pattern) = &node.pattern
        && !pattern.is_match(s)
    {
        problems.push(format!("{at}: does not match the pattern `{}`", pattern.as_str()));
    }
}

fn check_object(node: &Node, fields: &Map<String, Value>, path: &str, problems: &mut Vec<String>) {
    let at = display_path(path);
    for name in &node.required {
        if !fields.contains_key(name) {
            problems.push(format!("{at}: missing required property `{name}`"));
        }
    }
    for (name, field) in fields {
        let field_path = format!("{path}/{name}");
        match node.properties.get(name) {
            Some(sub) => check(sub, field, &field_path, problems),
            None => match &node.additional {
                Additional::Allowed => {}
                Additional::Forbidden => problems.push(format!("{at}: unknown property `{name}`")),
                Additional::Schema(sub) => check(sub, field, &field_path, problems),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keyword_outside_vocabulary_is_refused_with_its_path() {
        let err = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"a": {"type": "string", "format": "uri"}}
        }))
        .unwrap_err();
        assert_eq!(err, SchemaError::Keyword { path: "/properties/a".into(), keyword: "format".into() });
    }

    #[test]
    fn ref_is_refused() {
        let err = CompiledSchema::compile(&json!({"type": "object", "$ref": "#/x"})).unwrap_err();
        assert!(matches!(err, SchemaError::Keyword { keyword, .. } if keyword == "$ref"));
    }

    #[test]
    fn top_level_must_be_object() {
        assert_eq!(
            CompiledSchema::compile(&json!({"type": "string"})).unwrap_err(),
            SchemaError::NotAnObject
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut schema = json!({"type": "string"});
        for _ in 0..40 {
            schema = json!({"type": "array", "items": schema});
        }
        let top = json!({"type": "object", "properties": {"x": schema}});
        assert!(matches!(CompiledSchema::compile(&top).unwrap_err(), SchemaError::TooDeep { .. }));
    }

    #[test]
    fn validation_reports_paths() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "pattern": "^[a-z/]+$"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(
            schema
                .validate(&json!({"path": "src/a", "limit": 3, "mode": "a", "tags": ["x"], "either": null}))
                .is_ok()
        );
        let err = schema
            .validate(&json!({"path": "A", "limit": 11, "mode": "c", "tags": [1], "extra": 1}))
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/path: does not match"), "{text}");
        assert!(text.contains("/limit: 11 is above the maximum"), "{text}");
        assert!(text.contains("/mode: must be one of"), "{text}");
        assert!(text.contains("/tags/0: expected string, got number"), "{text}");
        assert!(text.contains("unknown property `extra`"), "{text}");
        let missing = schema.validate(&json!({})).unwrap_err();
        assert!(missing.to_string().contains("missing required property `path`"));
        let not_object = schema.validate(&json!("raw text")).unwrap_err();
        assert!(not_object.to_string().contains("expected object, got string"));
    }

    #[test]
    fn integer_accepts_whole_floats_only() {
        let schema =
            CompiledSchema::compile(&json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
                .unwrap();
        assert!(schema.validate(&json!({"n": 2.0})).is_ok());
        assert!(schema.validate(&json!({"n": 2.5})).is_err());
    }
}
