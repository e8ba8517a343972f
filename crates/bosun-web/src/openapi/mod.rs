//! OpenAPI specs as tools (`[openapi.NAME]`): each operation of a 3.0 or
//! 3.1 document becomes a `Network` tool named `NAME__operationId`, its
//! parameters (path, query, header) and JSON request body one argument
//! object, lowered into bosun's schema vocabulary
//! ([`bosun_core::schema::lower_in`], `$ref`s resolved within the spec).
//!
//! A call asks in every mode, like `web_fetch` (invariant 19): it runs in
//! bosun's own process, outside the OS sandbox, and the person sees the
//! method, the URL and the body before anything is sent. Credentials come
//! only from the caller ([`ApiAuth`], read by bosun-agent from variables
//! the user's own config names), never from the spec or the model, and are
//! never shown. Redirects are not followed: one is reported with its
//! target. An operation bosun cannot call faithfully (a cookie or form
//! body, a schema that does not lower) is left out, with why.

mod call;
mod operation;

use std::sync::Arc;

use bosun_core::Tool;
use reqwest::Url;
use serde_json::{Map, Value};

pub use call::ApiAuth;

use crate::{WebError, WebLimits, checked_url};

/// Largest spec read, in bytes.
pub const MAX_SPEC_BYTES: usize = 16 << 20;

/// A parsed spec, ready to make tools.
#[derive(Debug)]
pub struct OpenApiSpec {
    name: String,
    document: Value,
    base_url: Url,
}

/// The tools a spec gave, and the operations left out with why.
#[derive(Default)]
#[non_exhaustive]
pub struct OpenApiTools {
    /// One tool per operation offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// `(operation, why)` for each one left out.
    pub skipped: Vec<(String, String)>,
}

impl std::fmt::Debug for OpenApiTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.definition().name.as_str()).collect();
        f.debug_struct("OpenApiTools").field("tools", &names).field("skipped", &self.skipped).finish()
    }
}

impl OpenApiSpec {
    /// Reads `text` (JSON or YAML) as an OpenAPI 3.0 or 3.1 document;
    /// `name` prefixes its tools' names, `base_url` (else the document's
    /// first server) is where requests go.
    ///
    /// # Errors
    /// [`WebError::Spec`] when it is not such a document or names no usable
    /// base URL.
    pub fn parse(name: &str, text: &str, base_url: Option<&str>) -> Result<Self, WebError> {
        let spec = |message: String| WebError::Spec { name: name.to_owned(), message };
        if text.len() > MAX_SPEC_BYTES {
            return Err(spec(format!("the spec is over {MAX_SPEC_BYTES} bytes")));
        }
        let mut document = match serde_json::from_str::<Value>(text) {
            Ok(value) => value,
            Err(_) => yaml_to_json(text).map_err(spec)?,
        };
        let version = document.get("openapi").and_then(Value::as_str).unwrap_or_default();
        if !(version.starts_with("3.0") || version.starts_with("3.1")) {
            let found =
                if version.is_empty() { "no `openapi` version".to_owned() } else { format!("`{version}`") };
            return Err(spec(format!(
                "not an OpenAPI 3.0 or 3.1 document ({found}; Swagger 2.0 is not read)"
            )));
        }
        if version.starts_with("3.0") {
            nullable_as_type(&mut document);
        }
        let base = match base_url {
            Some(url) => url.to_owned(),
            None => first_server(&document).ok_or_else(|| {
                spec("the spec names no absolute server URL: give one with base_url".to_owned())
            })?,
        };
        let base_url = checked_url(&base).map_err(|e| spec(format!("base URL: {e}")))?;
        Ok(Self { name: name.to_owned(), document, base_url })
    }

    /// The URL requests go to.
    pub fn base_url(&self) -> &Url {
        &self.base_url
    }

    /// A tool for each operation (only those whose operationId or tool
    /// name `only` lists, when given), calling with `auth` within `limits`.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn tools(
        &self,
        auth: ApiAuth,
        limits: WebLimits,
        only: Option<&[String]>,
    ) -> Result<OpenApiTools, WebError> {
        let client = crate::http::Client::new(limits)?;
        let shared = Arc::new(call::Target { base_url: self.base_url.clone(), auth, client });
        let mut out = OpenApiTools::default();
        let mut names: Vec<String> = Vec::new();
        for found in operation::operations(&self.name, &self.document) {
            let operation = match found {
                Ok(operation) => operation,
                Err((which, why)) => {
                    out.skipped.push((which, why));
                    continue;
                }
            };
            if only.is_some_and(|only| !only.iter().any(|o| *o == operation.id || *o == operation.tool_name))
            {
                continue;
            }
            if names.contains(&operation.tool_name) {
                out.skipped
                    .push((operation.label(), format!("a second tool named `{}`", operation.tool_name)));
                continue;
            }
            names.push(operation.tool_name.clone());
            out.tools.push(Arc::new(call::OperationTool::new(operation, Arc::clone(&shared))));
        }
        Ok(out)
    }
}

/// The first server's URL, when it is absolute (a relative one would be
/// relative to where the spec was fetched, which bosun does not know).
fn first_server(document: &Value) -> Option<String> {
    let server = document.get("servers")?.as_array()?.first()?;
    let mut url = server.get("url")?.as_str()?.to_owned();
    // Server variables take their defaults.
    if let Some(variables) = server.get("variables").and_then(Value::as_object) {
        for (name, variable) in variables {
            if let Some(default) = variable.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    (url.starts_with("http://") || url.starts_with("https://")).then_some(url)
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema says it: `null` added to
/// the `type` (3.1 writes it so already). Left as it is, lowering would drop
/// the keyword and refuse a `null` the API accepts.
fn nullable_as_type(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true))
                && let Some(Value::String(kind)) = map.get("type").cloned()
            {
                map.insert("type".into(), Value::Array(vec![Value::String(kind), Value::from("null")]));
            }
            for child in map.values_mut() {
                nullable_as_type(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_type),
        _ => {}
    }
}

/// A YAML document as JSON: keys that YAML reads as numbers or booleans
/// (`200:` in `responses`) become their text.
fn yaml_to_json(text: &str) -> Result<Value, String> {
    let yaml: yaml_serde::Value =
        yaml_serde::from_str(text).map_err(|e| format!("neither JSON nor YAML: {e}"))?;
    convert(yaml, 0)
}

/// Deepest nesting read: a spec deeper than this is not an API description.
const MAX_DEPTH: usize = 128;

fn convert(yaml: yaml_serde::Value, depth: usize) -> Result<Value, String> {
    use yaml_serde::Value as Y;
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    Ok(match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).map_err(|e| e.to_string())?,
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            Value::Array(items.into_iter().map(|item| convert(item, depth + 1)).collect::<Result<_, _>>()?)
        }
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, value) in mapping {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => return Err(format!("a mapping key that is not text: {other:?}")),
                };
                map.insert(key, convert(value, depth + 1)?);
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => convert(tagged.value, depth + 1)?,
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
