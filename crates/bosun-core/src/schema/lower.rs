//! A tool's input schema from elsewhere (an MCP server's, an OpenAPI
//! operation's: any JSON Schema, any draft) lowered into bosun's bounded
//! vocabulary ([`VOCABULARY`]), which the session compiles and checks every
//! call against.
//!
//! Lowering only ever loosens: local `$ref`s (to `$defs`, `definitions`, or
//! any pointer into the document) are inlined, `oneOf` becomes `anyOf`,
//! `allOf` and `$ref` siblings are merged, and keywords outside the
//! vocabulary are dropped: annotations (`title`, `format`, `examples`, …)
//! change nothing, and the validation keywords bosun does not check
//! (`uniqueItems`, `not`, `if`, …) are still checked by the server. What
//! cannot be lowered is refused, and the tool with it: a recursive or remote
//! `$ref`, a schema that grows past a bound once inlined, an `allOf` whose
//! parts conflict. The result still has to compile (`CompiledSchema`).

use serde_json::{Map, Value};

use super::{CompiledSchema, VOCABULARY};

/// Deepest chain of `$ref`s followed.
const MAX_REF_DEPTH: usize = 16;
/// Most schema nodes a lowered schema may have (inlining can multiply them).
const MAX_NODES: usize = 4096;

/// Lowers `schema` and checks that bosun compiles it; the error says why
/// the tool cannot be offered. Its `$ref`s point into itself.
///
/// # Errors
/// What cannot be lowered, in words.
pub fn lower(schema: &Map<String, Value>) -> Result<Value, String> {
    let root = Value::Object(schema.clone());
    lower_in(&root, &root)
}

/// [`lower`] a schema whose `$ref`s point into `document` (an OpenAPI
/// operation's, into the whole spec).
///
/// # Errors
/// What cannot be lowered, in words.
pub fn lower_in(schema: &Value, document: &Value) -> Result<Value, String> {
    let mut lowering = Lowering { root: document, refs: Vec::new(), nodes: 0 };
    let mut lowered = lowering.node(schema)?;
    if let Value::Object(top) = &mut lowered {
        let object = match top.get("type") {
            // `{}` and `{"properties": …}` are how many servers say "an object".
            None => true,
            // Arguments are always an object: `["object", "null"]` narrows.
            Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
            Some(_) => false,
        };
        if object {
            top.insert("type".into(), Value::from("object"));
        }
    }
    CompiledSchema::compile(&lowered).map_err(|e| e.to_string())?;
    Ok(lowered)
}

struct Lowering<'a> {
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first: a repeat is a cycle.
    refs: Vec<String>,
    nodes: usize,
}

impl Lowering<'_> {
    fn node(&mut self, schema: &Value) -> Result<Value, String> {
        let map = match schema {
            Value::Bool(true) => return Ok(Value::Object(Map::new())),
            Value::Object(map) => map,
            Value::Bool(false) => return Err("a `false` schema (nothing is valid) cannot be lowered".into()),
            _ => return Err("a schema is not an object".into()),
        };
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!("more than {MAX_NODES} schema nodes once references are inlined"));
        }
        let mut out = match map.get("$ref") {
            Some(reference) => self.inline(reference)?,
            None => Map::new(),
        };
        let mut own = Map::new();
        let mut parts = Vec::new();
        for (keyword, value) in map {
            match keyword.as_str() {
                "$ref" => {}
                "properties" => {
                    let Value::Object(props) = value else {
                        return Err("`properties` is not an object".into());
                    };
                    let mut lowered = Map::new();
                    for (name, sub) in props {
                        lowered.insert(name.clone(), self.node(sub)?);
                    }
                    own.insert(keyword.clone(), Value::Object(lowered));
                }
                "items" => {
                    let items = match value {
                        // The tuple form: position is not checked, each item
                        // must match one of the listed schemas.
                        Value::Array(list) if list.is_empty() => continue,
                        Value::Array(list) => any_of(self.list(list)?),
                        other => self.node(other)?,
                    };
                    own.insert(keyword.clone(), items);
                }
                "additionalProperties" => {
                    let lowered = if value.is_boolean() { value.clone() } else { self.node(value)? };
                    own.insert(keyword.clone(), lowered);
                }
                "anyOf" | "oneOf" => {
                    let Value::Array(list) = value else {
                        return Err(format!("`{keyword}` is not an array"));
                    };
                    if own.contains_key("anyOf") {
                        return Err("both `anyOf` and `oneOf`".into());
                    }
                    own.insert("anyOf".into(), Value::Array(self.list(list)?));
                }
                "allOf" => {
                    let Value::Array(list) = value else { return Err("`allOf` is not an array".into()) };
                    parts = self.list(list)?;
                }
                "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() => {
                    // Draft 4: a flag on `minimum` / `maximum`, read below.
                }
                "description" if !value.is_string() => {}
                other if VOCABULARY.contains(&other) => {
                    own.insert(keyword.clone(), value.clone());
                }
                // Annotations, unknown keywords and validation the server does.
                _ => {}
            }
        }
        draft4_exclusive(map, &mut own);
        if map.get("patternProperties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
            // Properties matching a pattern are allowed however
            // `additionalProperties` reads; without the patterns, it would
            // refuse them.
            own.remove("additionalProperties");
        }
        // The node's own keywords win over what a `$ref` brought.
        merge(&mut out, own, Prefer::Incoming)?;
        for part in parts {
            let Value::Object(part) = part else { continue };
            merge(&mut out, part, Prefer::Existing)?;
        }
        Ok(Value::Object(out))
    }

    fn list(&mut self, list: &[Value]) -> Result<Vec<Value>, String> {
        list.iter().map(|s| self.node(s)).collect()
    }

    fn inline(&mut self, reference: &Value) -> Result<Map<String, Value>, String> {
        let Some(reference) = reference.as_str() else { return Err("`$ref` is not a string".into()) };
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(format!("the reference `{reference}` is not local to the schema"));
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return Err(format!("the reference `{reference}` names an anchor, which is not supported"));
        }
        if self.refs.iter().any(|r| r == reference) {
            return Err(format!("the reference `{reference}` is recursive and cannot be inlined"));
        }
        if self.refs.len() >= MAX_REF_DEPTH {
            return Err(format!("references nest deeper than {MAX_REF_DEPTH}"));
        }
        let pointer = percent_decode(fragment);
        let target = self
            .root
            .pointer(&pointer)
            .ok_or_else(|| format!("the reference `{reference}` points at nothing"))?;
        self.refs.push(reference.to_owned());
        let lowered = self.node(target);
        self.refs.pop();
        match lowered? {
            Value::Object(map) => Ok(map),
            _ => Err(format!("the reference `{reference}` is not a schema object")),
        }
    }
}

fn any_of(mut options: Vec<Value>) -> Value {
    options.dedup();
    if options.len() == 1 {
        return options.remove(0);
    }
    let mut map = Map::new();
    map.insert("anyOf".into(), Value::Array(options));
    Value::Object(map)
}

/// Draft 4's `"exclusiveMinimum": true` next to `minimum` means what later
/// drafts write as `"exclusiveMinimum": <number>`.
fn draft4_exclusive(map: &Map<String, Value>, own: &mut Map<String, Value>) {
    for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if map.get(flag) == Some(&Value::Bool(true))
            && let Some(limit) = own.remove(bound)
        {
            own.insert(flag.into(), limit);
        }
    }
}

/// Which side a merge keeps when both carry an annotation.
#[derive(Clone, Copy)]
enum Prefer {
    Existing,
    Incoming,
}

/// Merges `incoming` into `into` as both having to hold (`allOf`).
fn merge(into: &mut Map<String, Value>, incoming: Map<String, Value>, prefer: Prefer) -> Result<(), String> {
    for (keyword, value) in incoming {
        let Some(existing) = into.get_mut(&keyword) else {
            into.insert(keyword, value);
            continue;
        };
        if *existing == value {
            continue;
        }
        match keyword.as_str() {
            "description" | "default" => {
                if let Prefer::Incoming = prefer {
                    *existing = value;
                }
            }
            "properties" => {
                let (Value::Object(have), Value::Object(add)) = (existing, value) else {
                    return Err("`properties` is not an object".into());
                };
                for (name, schema) in add {
                    match (have.get_mut(&name), schema) {
                        (None, schema) => {
                            have.insert(name, schema);
                        }
                        (Some(Value::Object(a)), Value::Object(b)) => merge(a, b, prefer)?,
                        (Some(_), _) => return Err(format!("conflicting schemas for property `{name}`")),
                    }
                }
            }
            "required" => {
                let (Value::Array(have), Value::Array(add)) = (existing, value) else {
                    return Err("`required` is not an array".into());
                };
                for name in add {
                    if !have.contains(&name) {
                        have.push(name);
                    }
                }
            }
            "type" => *existing = intersect_types(existing, &value)?,
            "additionalProperties" => match (&*existing, value) {
                (Value::Bool(false), _) => {}
                (_, Value::Bool(false)) => *existing = Value::Bool(false),
                (_, Value::Bool(true)) => {}
                (Value::Bool(true), schema) => *existing = schema,
                (Value::Object(_), Value::Object(b)) => {
                    if let Value::Object(a) = existing {
                        merge(a, b, prefer)?;
                    }
                }
                _ => return Err("conflicting `additionalProperties`".into()),
            },
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" => tighten(existing, &value, f64::max),
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" => tighten(existing, &value, f64::min),
            other => return Err(format!("`allOf` parts disagree on `{other}`")),
        }
    }
    Ok(())
}

fn tighten(existing: &mut Value, other: &Value, pick: fn(f64, f64) -> f64) {
    if let (Some(a), Some(b)) = (existing.as_f64(), other.as_f64()) {
        // Keep the original number (an integer stays an integer).
        if pick(a, b) == b {
            *existing = other.clone();
        }
    }
}

fn intersect_types(a: &Value, b: &Value) -> Result<Value, String> {
    let names = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(list) => list.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        }
    };
    let b_names = names(b);
    // An integer is a number: `number` and `integer` meet at `integer`.
    let both: Vec<String> = names(a)
        .into_iter()
        .flat_map(|t| {
            b_names.iter().filter_map(move |u| match (t.as_str(), u.as_str()) {
                (x, y) if x == y => Some(x.to_owned()),
                ("number", "integer") | ("integer", "number") => Some("integer".to_owned()),
                _ => None,
            })
        })
        .collect();
    match both.as_slice() {
        [] => Err("`allOf` parts allow no common type".into()),
        [one] => Ok(Value::from(one.as_str())),
        many => Ok(Value::from(many.to_vec())),
    }
}

/// A URI fragment's `%XX` escapes decoded (the JSON pointer's own `~0` and
/// `~1` are left to `Value::pointer`).
fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "lower_tests.rs"]
mod tests;
