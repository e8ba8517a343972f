//! JSON Schema to GBNF, the grammar language of llama.cpp's sampler.
//!
//! Written here rather than taken from llama.cpp's `common` library, whose
//! build is 53 of llama.cpp's 128 objects (half its compile time) and which
//! bosun would build for this one converter (the crates that exist cover a
//! fraction of JSON Schema: no optional properties, no `$ref`, no bounds). The output keeps
//! that converter's conventions, which the tool grammar builds on:
//! - a property's rule is named after the path of property names leading
//!   to it (`bosun-call`, `bosun-call-0-arguments`), punctuation as `-`;
//! - a constant is the literal of its compact JSON text;
//! - whitespace (`space`) may follow `{`, `[`, `,` and `:`, and precede the
//!   closing bracket; a value itself carries none;
//! - properties come in the schema's order, the required ones first, then
//!   the optional ones, each present or not.
//!
//! What is read: `type` (one or a list), `const`, `enum`, `anyOf`/`oneOf`,
//! `allOf` over objects, local `$ref`s (`#/…`, cycles allowed), objects'
//! `properties`, `required`, `additionalProperties`, arrays' `items`,
//! `prefixItems`, `minItems`, `maxItems`, strings' `minLength`,
//! `maxLength`, `pattern` (anchored, see [`pattern`]) and `format` (`date`,
//! `time`, `date-time`, `uuid`), integers' bounds (see [`integers`]).
//! Everything else (numbers' bounds, `not`, `if`) constrains nothing: the
//! grammar may then allow more than the schema, never less.

mod integers;
mod pattern;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::quote::gbnf_literal;

/// Why a schema has no grammar.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum SchemaError {
    /// A `$ref` that does not point into the same document, or at nothing.
    #[error("cannot resolve $ref `{0}`")]
    Reference(String),
    /// A keyword whose value has the wrong shape.
    #[error("at {path}: {problem}")]
    Malformed { path: String, problem: String },
}

/// The GBNF of `schema`, its root rule `root`.
pub(crate) fn schema_to_gbnf(schema: &Value) -> Result<String, SchemaError> {
    let mut converter = Converter::new(schema);
    converter.visit(schema, "", "#")?;
    Ok(converter.format())
}

const SPACE: &str = r#"| " " | "\n"{1,2} [ \t]{0,20}"#;
const CHAR: &str = r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#;

/// The rules every grammar may use, with the rules they use in turn.
const PRIMITIVES: &[(&str, &str, &[&str])] = &[
    ("boolean", r#"("true" | "false")"#, &[]),
    ("decimal-part", "[0-9]{1,16}", &[]),
    ("integral-part", "[0] | [1-9] [0-9]{0,15}", &[]),
    (
        "number",
        r#"("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?"#,
        &["integral-part", "decimal-part"],
    ),
    ("integer", r#"("-"? integral-part)"#, &["integral-part"]),
    (
        "value",
        "object | array | string | number | boolean | null",
        &["object", "array", "string", "number", "boolean", "null"],
    ),
    (
        "object",
        r#""{" space ( string ":" space value ("," space string ":" space value)* )? space "}""#,
        &["string", "value"],
    ),
    ("array", r#""[" space ( value ("," space value)* )? space "]""#, &["value"]),
    (
        "uuid",
        r#""\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"""#,
        &[],
    ),
    ("char", CHAR, &[]),
    ("string", r#""\"" char* "\"""#, &["char"]),
    ("null", r#""null""#, &[]),
    ("date", r#"[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] )"#, &[]),
    (
        "time",
        r#"([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )"#,
        &[],
    ),
    ("date-time", r#"date "T" time"#, &["date", "time"]),
    ("date-string", r#""\"" date "\"""#, &["date"]),
    ("time-string", r#""\"" time "\"""#, &["time"]),
    ("date-time-string", r#""\"" date-time "\"""#, &["date-time"]),
];

struct Converter<'a> {
    document: &'a Value,
    rules: BTreeMap<String, String>,
    /// Each `$ref` met so far and the rule it names: fixed before the
    /// target is built, so a reference back to it (recursion) and later uses
    /// name the same rule.
    references: HashMap<String, String>,
}

impl<'a> Converter<'a> {
    fn new(document: &'a Value) -> Self {
        let mut rules = BTreeMap::new();
        rules.insert("space".to_owned(), SPACE.to_owned());
        Self { document, rules, references: HashMap::new() }
    }

    fn format(&self) -> String {
        self.rules.iter().map(|(name, body)| format!("{name} ::= {body}\n")).collect()
    }

    /// Adds `body` under `name` (punctuation made `-`), or under `name`
    /// with a number when another body holds the name; returns the name used.
    fn add_rule(&mut self, name: &str, body: String) -> String {
        let name = rule_name(name);
        let free = |rules: &BTreeMap<String, String>, candidate: &str| {
            rules.get(candidate).is_none_or(|existing| *existing == body)
        };
        let chosen = if free(&self.rules, &name) {
            name
        } else {
            (0..).map(|i| format!("{name}{i}")).find(|candidate| free(&self.rules, candidate)).unwrap_or(name)
        };
        self.rules.insert(chosen.clone(), body);
        chosen
    }

    /// Adds a built-in rule and those it uses; returns its name.
    fn primitive(&mut self, name: &str) -> String {
        let Some((_, body, uses)) = PRIMITIVES.iter().find(|(n, _, _)| *n == name) else {
            return String::new();
        };
        // Added before the rules it uses, which may use it in turn.
        let added = self.add_rule(name, (*body).to_owned());
        for used in *uses {
            if !self.rules.contains_key(*used) {
                self.primitive(used);
            }
        }
        added
    }

    /// `rule` as another name of a built-in rule (`root ::= string`), so
    /// that every property has a rule named after it.
    fn aliased(&mut self, rule: &str, primitive: &str) -> String {
        let used = self.primitive(primitive);
        self.add_rule(rule, used)
    }

    /// The rule for `schema` at property path `name`; `path` is its JSON
    /// pointer, for errors.
    fn visit(&mut self, schema: &Value, name: &str, path: &str) -> Result<String, SchemaError> {
        let rule = if name.is_empty() {
            "root".to_owned()
        } else if PRIMITIVES.iter().any(|(n, _, _)| *n == name) {
            format!("{name}-")
        } else {
            name.to_owned()
        };
        let malformed =
            |problem: &str| SchemaError::Malformed { path: path.to_owned(), problem: problem.to_owned() };
        let object = match schema {
            Value::Bool(true) => return Ok(self.aliased(&rule, "value")),
            Value::Object(object) => object,
            _ => return Err(malformed("a schema must be an object")),
        };
        if let Some(reference) = object.get("$ref") {
            let reference = reference.as_str().ok_or_else(|| malformed("$ref must be a string"))?;
            let target = self.resolve(reference)?;
            return Ok(self.add_rule(&rule, target));
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alternatives) = object.get(key) {
                let alternatives = alternatives.as_array().ok_or_else(|| malformed("must be a list"))?;
                let mut rules = Vec::with_capacity(alternatives.len());
                for (i, alternative) in alternatives.iter().enumerate() {
                    let sub = alternative_name(name, i);
                    rules.push(self.visit(alternative, &sub, &format!("{path}/{key}/{i}"))?);
                }
                return Ok(self.add_rule(&rule, rules.join(" | ")));
            }
        }
        let kind = object.get("type");
        if let Some(Value::Array(kinds)) = kind {
            if kinds.is_empty() {
                return Err(malformed("type must not be empty"));
            }
            let mut rules = Vec::with_capacity(kinds.len());
            for (i, kind) in kinds.iter().enumerate() {
                let mut alternative = object.clone();
                alternative.insert("type".to_owned(), kind.clone());
                let sub = alternative_name(name, i);
                rules.push(self.visit(&Value::Object(alternative), &sub, &format!("{path}/type/{i}"))?);
            }
            return Ok(self.add_rule(&rule, rules.join(" | ")));
        }
        if let Some(value) = object.get("const") {
            return Ok(self.add_rule(&rule, constant(value)));
        }
        if let Some(values) = object.get("enum") {
            let values = values.as_array().filter(|v| !v.is_empty());
            let values = values.ok_or_else(|| malformed("enum must be a non-empty list"))?;
            let literals: Vec<String> = values.iter().map(constant).collect();
            return Ok(self.add_rule(&rule, format!("({})", literals.join(" | "))));
        }
        let kind = match kind {
            None => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return Err(malformed("type must be a string or a list of strings")),
        };
        let has_properties = object.contains_key("properties")
            || object.get("additionalProperties").is_some_and(|a| *a != Value::Bool(true));
        let stringy = ["pattern", "minLength", "maxLength", "format"].iter().any(|k| object.contains_key(*k));
        match kind {
            None if has_properties => self.object(object, name, &rule, path),
            None if object.contains_key("allOf") => self.all_of(object, name, &rule, path),
            None if object.contains_key("items") || object.contains_key("prefixItems") => {
                self.array(object, name, &rule, path)
            }
            None if stringy => self.string(object, &rule, path),
            None => Ok(self.aliased(&rule, "value")),
            Some("object") if !has_properties && object.contains_key("allOf") => {
                self.all_of(object, name, &rule, path)
            }
            Some("object") => self.object(object, name, &rule, path),
            Some("array") => self.array(object, name, &rule, path),
            Some("string") => self.string(object, &rule, path),
            Some("integer") => {
                let bounds = integers::Bounds::of(object);
                match integers::range(bounds) {
                    Some(body) => Ok(self.add_rule(&rule, body)),
                    None => Ok(self.aliased(&rule, "integer")),
                }
            }
            Some(primitive @ ("number" | "boolean" | "null")) => Ok(self.aliased(&rule, primitive)),
            Some(other) => Err(malformed(&format!("unknown type `{other}`"))),
        }
    }

    /// The rule a `$ref` names, built on first use under a name no other
    /// rule or reference holds.
    fn resolve(&mut self, reference: &str) -> Result<String, SchemaError> {
        if let Some(name) = self.references.get(reference) {
            return Ok(name.clone());
        }
        let target = self.target(reference)?;
        let last = reference.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("ref");
        let base = format!("ref-{}", rule_name(last));
        let taken = |this: &Self, name: &str| {
            this.rules.contains_key(name) || this.references.values().any(|n| n == name)
        };
        let name = std::iter::once(base.clone())
            .chain((0..).map(|i| format!("{base}{i}")))
            .find(|candidate| !taken(self, candidate))
            .unwrap_or(base);
        self.references.insert(reference.to_owned(), name.clone());
        let built = self.visit(target, &name, reference)?;
        if built != name {
            self.rules.insert(name.clone(), built);
        }
        Ok(name)
    }

    /// What a local `$ref` (`#/…`) points at in the document.
    fn target(&self, reference: &str) -> Result<&'a Value, SchemaError> {
        let unresolved = || SchemaError::Reference(reference.to_owned());
        let pointer = reference.strip_prefix('#').ok_or_else(unresolved)?;
        self.document.pointer(pointer).ok_or_else(unresolved)
    }

    fn object(
        &mut self,
        object: &serde_json::Map<String, Value>,
        name: &str,
        rule: &str,
        path: &str,
    ) -> Result<String, SchemaError> {
        let required = required_names(object);
        let mut properties = Vec::new();
        if let Some(listed) = object.get("properties") {
            let listed = listed.as_object().ok_or_else(|| SchemaError::Malformed {
                path: path.to_owned(),
                problem: "properties must be an object".to_owned(),
            })?;
            for (key, schema) in listed {
                properties.push((key.as_str(), schema, required.contains(key.as_str())));
            }
        }
        let additional = match object.get("additionalProperties") {
            Some(Value::Bool(allowed)) => allowed.then_some(&Value::Bool(true)),
            Some(schema @ Value::Object(_)) => Some(schema),
            Some(_) => {
                return Err(SchemaError::Malformed {
                    path: path.to_owned(),
                    problem: "additionalProperties must be a boolean or a schema".to_owned(),
                });
            }
            // A bare `{"type": "object"}` is any object.
            None => (!object.contains_key("properties")).then_some(&Value::Bool(true)),
        };
        if properties.is_empty() && additional == Some(&Value::Bool(true)) {
            return Ok(self.aliased(rule, "object"));
        }
        let body = self.object_body(&properties, name, additional, path)?;
        Ok(self.add_rule(rule, body))
    }

    /// `{…}` with `properties` (key, schema, required) in order, the
    /// required ones first; an optional one may be left out, and then the
    /// ones after it still may follow.
    fn object_body(
        &mut self,
        properties: &[(&str, &Value, bool)],
        name: &str,
        additional: Option<&Value>,
        path: &str,
    ) -> Result<String, SchemaError> {
        let prefix = child_prefix(name);
        let mut required = Vec::new();
        let mut optional = Vec::new();
        for (key, schema, is_required) in properties {
            let value = self.visit(schema, &format!("{prefix}{key}"), &format!("{path}/properties/{key}"))?;
            let kv = format!("{} space \":\" space {value}", constant(&Value::String((*key).to_owned())));
            let kv = self.add_rule(&format!("{prefix}{key}-kv"), kv);
            if *is_required { required.push(kv) } else { optional.push((kv, false)) }
        }
        if let Some(schema) = additional {
            let value = match schema {
                Value::Bool(true) => self.primitive("value"),
                schema => self.visit(
                    schema,
                    &format!("{prefix}additional-value"),
                    &format!("{path}/additionalProperties"),
                )?,
            };
            let keys: Vec<&str> = properties.iter().map(|(key, _, _)| *key).collect();
            let key = if keys.is_empty() {
                self.primitive("string")
            } else {
                let body = self.other_keys(&keys, &format!("{prefix}additional-k"));
                self.add_rule(&format!("{prefix}additional-k"), body)
            };
            let kv =
                self.add_rule(&format!("{prefix}additional-kv"), format!("{key} space \":\" space {value}"));
            optional.push((kv, true));
        }
        if required.is_empty() && optional.is_empty() {
            return Ok(r#""{" space "}""#.to_owned());
        }
        let mut body = String::from(r#""{" space "#);
        body.push_str(&required.join(r#" "," space "#));
        if !optional.is_empty() {
            let mut starts = Vec::with_capacity(optional.len());
            for first in 0..optional.len() {
                starts.push(self.optional_run(&optional[first..], false));
            }
            let starts = starts.join(" | ");
            if required.is_empty() {
                body.push_str(&format!(" ({starts})?"));
            } else {
                body.push_str(&format!(r#" ( "," space ( {starts} ) )?"#));
            }
        }
        body.push_str(r#" space "}""#);
        Ok(body)
    }

    /// The optional properties from the first of `run` on, the first
    /// present (or, with `after_another`, each preceded by a comma and
    /// optional); additional properties (`true`) may repeat.
    fn optional_run(&mut self, run: &[(String, bool)], after_another: bool) -> String {
        let Some(((kv, repeats), rest)) = run.split_first() else { return String::new() };
        let comma = format!(r#"( "," space {kv} )"#);
        let mut out = match (after_another, repeats) {
            (true, true) => format!("{comma}*"),
            (true, false) => format!("{comma}?"),
            (false, true) => format!("{kv} {comma}*"),
            (false, false) => kv.clone(),
        };
        if !rest.is_empty() {
            let tail = self.optional_run(rest, true);
            let stem = kv.strip_suffix("-kv").unwrap_or(kv);
            let named = self.add_rule(&format!("{stem}-rest"), tail);
            out.push(' ');
            out.push_str(&named);
        }
        out
    }

    /// A JSON string that is none of `keys`: it leaves their common
    /// prefixes at some character, or ends where no key does, or runs on
    /// past one.
    fn other_keys(&mut self, keys: &[&str], name: &str) -> String {
        let chars: Vec<Vec<char>> = keys.iter().map(|k| k.chars().collect()).collect();
        let tail = self.primitive("char");
        let node = self.other_keys_from(&chars, 0, name, &tail);
        format!(r#""\"" ({node})"#)
    }

    fn other_keys_from(&mut self, keys: &[Vec<char>], depth: usize, name: &str, tail: &str) -> String {
        let mut next: BTreeMap<char, Vec<Vec<char>>> = BTreeMap::new();
        let mut ends_here = false;
        for key in keys {
            match key.get(depth) {
                Some(c) => next.entry(*c).or_default().push(key.clone()),
                None => ends_here = true,
            }
        }
        let mut excluded = String::from(r#"\"\\\x7F\x00-\x1F"#);
        let mut alternatives = Vec::new();
        for (i, (c, group)) in next.iter().enumerate() {
            excluded.push_str(&class_char(*c));
            let child = self.other_keys_from(group, depth + 1, &format!("{name}-{i}"), tail);
            let child = self.add_rule(&format!("{name}-{i}"), child);
            alternatives.push(format!("{} {child}", gbnf_literal(&c.to_string())));
        }
        alternatives
            .push(format!(r#"([^{excluded}] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{{4}})) {tail}* "\"""#));
        if !ends_here {
            alternatives.push(r#""\"""#.to_owned());
        }
        alternatives.join(" | ")
    }

    fn array(
        &mut self,
        object: &serde_json::Map<String, Value>,
        name: &str,
        rule: &str,
        path: &str,
    ) -> Result<String, SchemaError> {
        let sub = child_prefix(name);
        let key = if object.contains_key("items") { "items" } else { "prefixItems" };
        let items = object.get(key);
        if let Some(Value::Array(tuple)) = items {
            let mut body = String::from(r#""[" space "#);
            for (i, item) in tuple.iter().enumerate() {
                if i > 0 {
                    body.push_str(r#" "," space "#);
                }
                body.push_str(&self.visit(item, &format!("{sub}tuple-{i}"), &format!("{path}/{key}/{i}"))?);
            }
            body.push_str(r#" space "]""#);
            return Ok(self.add_rule(rule, body));
        }
        let min = count(object, "minItems", path)?.unwrap_or(0);
        let max = count(object, "maxItems", path)?;
        let any_items =
            items.is_none_or(|i| *i == Value::Bool(true) || i.as_object().is_some_and(|o| o.is_empty()));
        if any_items && min == 0 && max.is_none() {
            return Ok(self.aliased(rule, "array"));
        }
        let item = match items {
            Some(item) => self.visit(item, &format!("{sub}item"), &format!("{path}/{key}"))?,
            None => self.primitive("value"),
        };
        let repeated = repetition(&item, min, max, Some(r#""," space"#));
        Ok(self.add_rule(rule, format!(r#""[" space {repeated} space "]""#)))
    }

    fn string(
        &mut self,
        object: &serde_json::Map<String, Value>,
        rule: &str,
        path: &str,
    ) -> Result<String, SchemaError> {
        if let Some(pattern) = object.get("pattern").and_then(Value::as_str) {
            return Ok(match pattern::to_gbnf(pattern) {
                Some(body) => {
                    // A pattern's rule may use `char`, the rule of that name.
                    self.primitive("char");
                    self.add_rule(rule, body)
                }
                None => {
                    tracing::debug!(pattern, "a string pattern the grammar cannot hold; any string allowed");
                    self.aliased(rule, "string")
                }
            });
        }
        match object.get("format").and_then(Value::as_str) {
            Some("uuid") => return Ok(self.aliased(rule, "uuid")),
            Some(format @ ("date" | "time" | "date-time")) => {
                let used = self.primitive(&format!("{format}-string"));
                return Ok(self.add_rule(rule, used));
            }
            _ => {}
        }
        let min = count(object, "minLength", path)?.unwrap_or(0);
        let max = count(object, "maxLength", path)?;
        if min > 0 || max.is_some() {
            let char_rule = self.primitive("char");
            let body = format!(r#""\"" {} "\"""#, repetition(&char_rule, min, max, None));
            return Ok(self.add_rule(rule, body));
        }
        Ok(self.aliased(rule, "string"))
    }

    /// `allOf`: the objects' properties merged (required unless they came
    /// from an `anyOf` inside), or the values every `enum` lists.
    fn all_of(
        &mut self,
        object: &serde_json::Map<String, Value>,
        name: &str,
        rule: &str,
        path: &str,
    ) -> Result<String, SchemaError> {
        let parts = object.get("allOf").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut properties: Vec<(String, Value, bool)> = Vec::new();
        let mut enums: BTreeMap<String, usize> = BTreeMap::new();
        for part in &parts {
            let alternatives = part.get("anyOf").and_then(Value::as_array);
            match alternatives {
                Some(alternatives) => {
                    for alternative in alternatives {
                        self.merge(alternative, false, &mut properties, &mut enums)?;
                    }
                }
                None => self.merge(part, true, &mut properties, &mut enums)?,
            }
        }
        let shared: Vec<&String> = enums.iter().filter(|(_, n)| **n == parts.len()).map(|(v, _)| v).collect();
        if !shared.is_empty() {
            let literals: Vec<&str> = shared.iter().map(|s| s.as_str()).collect();
            return Ok(self.add_rule(rule, format!("({})", literals.join(" | "))));
        }
        let properties: Vec<(&str, &Value, bool)> =
            properties.iter().map(|(key, schema, required)| (key.as_str(), schema, *required)).collect();
        let body = self.object_body(&properties, name, None, path)?;
        Ok(self.add_rule(rule, body))
    }

    fn merge(
        &self,
        part: &Value,
        required: bool,
        properties: &mut Vec<(String, Value, bool)>,
        enums: &mut BTreeMap<String, usize>,
    ) -> Result<(), SchemaError> {
        let mut part = part;
        let mut hops = 0;
        while let Some(reference) = part.get("$ref").and_then(Value::as_str) {
            part = self.target(reference)?;
            hops += 1;
            if hops > 32 {
                return Err(SchemaError::Reference(reference.to_owned()));
            }
        }
        if let Some(listed) = part.get("properties").and_then(Value::as_object) {
            let needed = part.as_object().map(required_names).unwrap_or_default();
            for (key, schema) in listed {
                properties.push((key.clone(), schema.clone(), required && needed.contains(key.as_str())));
            }
        } else if let Some(values) = part.get("enum").and_then(Value::as_array) {
            for value in values {
                *enums.entry(constant(value)).or_default() += 1;
            }
        }
        Ok(())
    }
}

/// The names listed in an object schema's `required`.
fn required_names(object: &serde_json::Map<String, Value>) -> HashSet<&str> {
    let listed = object.get("required").and_then(Value::as_array);
    listed.map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// The name of alternative `i` of the rule `name` (`anyOf`, a list of types).
fn alternative_name(name: &str, i: usize) -> String {
    if name.is_empty() { format!("alternative-{i}") } else { format!("{name}-{i}") }
}

/// What the rules under the rule `name` start with (nothing at the root).
fn child_prefix(name: &str) -> String {
    if name.is_empty() { String::new() } else { format!("{name}-") }
}

/// `name` with every run of characters other than letters, digits and `-`
/// made one `-`, as GBNF rule names allow.
fn rule_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out
}

/// The literal of `value`'s compact JSON text.
fn constant(value: &Value) -> String {
    gbnf_literal(&value.to_string())
}

/// `c` inside a GBNF character class.
fn class_char(c: char) -> String {
    match c {
        '\\' | ']' | '-' | '^' | '"' | '[' => format!("\\{c}"),
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c if (c as u32) < 0x20 || c as u32 == 0x7F => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    }
}

/// `item` between `min` and `max` times (no `max`: any number), joined by
/// `separator`.
fn repetition(item: &str, min: u64, max: Option<u64>, separator: Option<&str>) -> String {
    if max == Some(0) {
        return String::new();
    }
    let Some(separator) = separator else {
        return match (min, max) {
            (0, None) => format!("{item}*"),
            (1, None) => format!("{item}+"),
            (min, None) => format!("{item}{{{min},}}"),
            (0, Some(1)) => format!("{item}?"),
            (min, Some(max)) if min == max => format!("{item}{{{min}}}"),
            (min, Some(max)) => format!("{item}{{{min},{max}}}"),
        };
    };
    let rest = repetition(
        &format!("({separator} {item})"),
        min.saturating_sub(1),
        max.map(|m| m.saturating_sub(1)),
        None,
    );
    let run = if rest.is_empty() { item.to_owned() } else { format!("{item} {rest}") };
    if min == 0 { format!("({run})?") } else { format!("({run})") }
}

/// A non-negative count keyword (`minItems`), if present.
fn count(object: &serde_json::Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, SchemaError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => {
            value.as_u64().or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)).map(Some).ok_or(
                SchemaError::Malformed {
                    path: path.to_owned(),
                    problem: format!("{key} must be a non-negative integer"),
                },
            )
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
