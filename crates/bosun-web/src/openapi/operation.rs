//! A spec's operations read into what a tool needs: its name, words, the
//! argument schema (parameters and body, lowered), and how each argument
//! goes into the request.

use serde_json::{Map, Value, json};

/// The HTTP methods an operation may have, as OpenAPI writes them.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Longest tool name providers take.
const MAX_TOOL_NAME: usize = 64;

/// Longest description kept: the model reads every tool's on every request.
const MAX_DESCRIPTION: usize = 1024;

/// The argument that carries the request body.
pub(crate) const BODY: &str = "body";

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Path,
    Query,
    Header,
}

/// One parameter of an operation.
#[derive(Clone, Debug)]
pub(crate) struct Parameter {
    pub(crate) name: String,
    pub(crate) place: Place,
    /// A query array as `a=1&a=2` (`explode`, the default for `form`), else `a=1,2`.
    pub(crate) explode: bool,
}

/// An operation, ready to be a tool.
#[derive(Clone, Debug)]
pub(crate) struct Operation {
    /// Its `operationId`, or `method_path` when it has none.
    pub(crate) id: String,
    pub(crate) tool_name: String,
    pub(crate) method: reqwest::Method,
    /// The path template, `/pets/{id}`.
    pub(crate) path: String,
    pub(crate) description: String,
    pub(crate) parameters: Vec<Parameter>,
    /// Whether it takes a JSON body, and its media type.
    pub(crate) body: Option<String>,
    /// The argument schema, lowered.
    pub(crate) schema: Value,
}

impl Operation {
    /// `METHOD /path (id)`, for a notice.
    pub(crate) fn label(&self) -> String {
        format!("{} {} ({})", self.method, self.path, self.id)
    }
}

/// Each operation of `document`, read or refused with why.
pub(crate) fn operations(spec: &str, document: &Value) -> Vec<Result<Operation, (String, String)>> {
    let mut out = Vec::new();
    let Some(paths) = document.get("paths").and_then(Value::as_object) else { return out };
    for (path, item) in paths {
        let item = match resolve(document, item) {
            Ok(item) => item,
            Err(why) => {
                out.push(Err((path.clone(), why)));
                continue;
            }
        };
        let shared = item.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
        for method in METHODS {
            let Some(operation) = item.get(*method) else { continue };
            let label = || {
                let id = operation.get("operationId").and_then(Value::as_str).unwrap_or("no operationId");
                format!("{} {path} ({id})", method.to_uppercase())
            };
            out.push(read(spec, document, method, path, operation, &shared).map_err(|why| (label(), why)));
        }
    }
    out
}

fn read(
    spec: &str,
    document: &Value,
    method: &str,
    path: &str,
    operation: &Value,
    shared: &[Value],
) -> Result<Operation, String> {
    let id = match operation.get("operationId").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => format!("{method}{}", path.replace(['/', '{', '}'], "_")),
    };
    let tool_name = tool_name(spec, &id);
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut parameters = Vec::new();
    // Operation-level parameters replace path-level ones of the same name and place.
    let own = operation.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut all: Vec<Value> = Vec::new();
    for parameter in shared.iter().chain(own.iter()) {
        let parameter = resolve(document, parameter)?.clone();
        let key = |p: &Value| (p.get("name").cloned(), p.get("in").cloned());
        all.retain(|p| key(p) != key(&parameter));
        all.push(parameter);
    }
    for parameter in &all {
        let name = parameter.get("name").and_then(Value::as_str).ok_or("a parameter without a name")?;
        let place = match parameter.get("in").and_then(Value::as_str) {
            Some("path") => Place::Path,
            Some("query") => Place::Query,
            Some("header") => Place::Header,
            Some("cookie") => {
                if parameter.get("required") == Some(&Value::Bool(true)) {
                    return Err(format!("its required cookie `{name}` is not sent by bosun"));
                }
                continue;
            }
            other => return Err(format!("parameter `{name}` in {other:?}")),
        };
        if name == BODY || properties.contains_key(name) {
            return Err(format!("two arguments would be named `{name}`"));
        }
        let is_required = place == Place::Path || parameter.get("required") == Some(&Value::Bool(true));
        let mut schema = match parameter.get("schema") {
            Some(schema) => schema.clone(),
            None => {
                return Err(format!("parameter `{name}` has no schema (a `content` parameter is not read)"));
            }
        };
        if let (Value::Object(map), Some(description)) = (&mut schema, parameter.get("description")) {
            map.entry("description").or_insert_with(|| description.clone());
        }
        let style = parameter.get("style").and_then(Value::as_str).unwrap_or("form");
        if place == Place::Query && !matches!(style, "form") {
            return Err(format!("query parameter `{name}` has style `{style}`, which bosun does not write"));
        }
        let explode = parameter.get("explode").and_then(Value::as_bool).unwrap_or(style == "form");
        properties.insert(name.to_owned(), schema);
        if is_required {
            required.push(Value::from(name));
        }
        parameters.push(Parameter { name: name.to_owned(), place, explode });
    }
    let body = match operation.get("requestBody") {
        Some(body) => {
            let body = resolve(document, body)?;
            let (media, schema) = json_content(body)?;
            properties.insert(BODY.to_owned(), schema);
            if body.get("required") == Some(&Value::Bool(true)) {
                required.push(Value::from(BODY));
            }
            Some(media)
        }
        None => None,
    };
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let schema = bosun_core::schema::lower_in(&schema, document)?;
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).map_err(|e| e.to_string())?;
    let description = describe(operation, &method, path);
    Ok(Operation { id, tool_name, method, path: path.to_owned(), description, parameters, body, schema })
}

/// The JSON media type of a request body and its schema; a body of any
/// other type cannot be written from JSON arguments faithfully.
fn json_content(body: &Value) -> Result<(String, Value), String> {
    let content = body.get("content").and_then(Value::as_object).ok_or("a request body without content")?;
    let json = content.iter().find(|(media, _)| {
        let media = media.split(';').next().unwrap_or_default().trim();
        media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
    });
    match json {
        Some((media, entry)) => {
            Ok((media.clone(), entry.get("schema").cloned().unwrap_or_else(|| json!({}))))
        }
        None => {
            let types: Vec<&str> = content.keys().map(String::as_str).collect();
            Err(format!("its request body is {} (only JSON bodies are sent)", types.join(", ")))
        }
    }
}

/// The tool's description: the operation's summary and description, its
/// method and path, and that it asks.
fn describe(operation: &Value, method: &reqwest::Method, path: &str) -> String {
    let text =
        |key: &str| operation.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let mut words = match (text("summary"), text("description")) {
        (Some(summary), Some(description)) if !description.starts_with(summary) => {
            format!("{summary}. {description}")
        }
        (Some(summary), _) => summary.to_owned(),
        (None, Some(description)) => description.to_owned(),
        (None, None) => String::new(),
    };
    if words.len() > MAX_DESCRIPTION {
        let mut end = MAX_DESCRIPTION;
        while !words.is_char_boundary(end) {
            end -= 1;
        }
        words.truncate(end);
        words.push('…');
    }
    let sep = if words.is_empty() { "" } else { "\n\n" };
    format!(
        "{words}{sep}{method} {path}. Every call asks the user first; the response's status and body come back."
    )
}

/// `SPEC__ID`, in the characters providers allow, at most 64 of them.
fn tool_name(spec: &str, id: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
    };
    let mut name = format!("{}__{}", clean(spec), clean(id));
    name.truncate(MAX_TOOL_NAME);
    name
}

/// `value`, or what its `$ref` (`#/…` within the document) points at.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> Result<&'a Value, String> {
    let mut value = value;
    for _ in 0..16 {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else { return Ok(value) };
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            format!("`{reference}` is outside the spec (only `#/…` references are followed)")
        })?;
        value = document.pointer(pointer).ok_or_else(|| format!("`{reference}` points at nothing"))?;
    }
    Err("a chain of more than 16 references".into())
}
