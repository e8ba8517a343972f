//! An operation as a tool: the request built from the arguments (path
//! segments encoded, query and headers written as the spec says, the JSON
//! body), the user's credentials added, sent once within the bounds.

use std::fmt;
use std::sync::Arc;

use bosun_core::{
    CallEffects, CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::operation::{BODY, Operation, Place};
use crate::http::{Answer, Client};
use crate::network;

/// Longest part of a body shown in the approval question.
const BODY_SHOWN: usize = 400;

/// How requests are authenticated: from the user's configuration only.
/// `Debug` never shows a secret.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ApiAuth {
    /// Nothing added.
    #[default]
    None,
    /// `Authorization: Bearer TOKEN`.
    Bearer(String),
    /// A header of the API's naming.
    Header {
        /// The header's name.
        name: String,
        /// Its value.
        value: String,
    },
    /// A query parameter of the API's naming.
    Query {
        /// The parameter's name.
        name: String,
        /// Its value.
        value: String,
    },
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for ApiAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Bearer(_) => f.write_str("Bearer(***)"),
            Self::Header { name, .. } => write!(f, "Header({name}: ***)"),
            Self::Query { name, .. } => write!(f, "Query({name}=***)"),
            Self::Basic { username, .. } => write!(f, "Basic({username}:***)"),
        }
    }
}

/// What every tool of one spec shares.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) base_url: Url,
    pub(crate) auth: ApiAuth,
    pub(crate) client: Client,
}

/// One operation's tool.
#[derive(Debug)]
pub(crate) struct OperationTool {
    definition: ToolDefinition,
    operation: Operation,
    target: Arc<Target>,
}

/// A request, built and checked, not yet sent.
struct Request {
    url: Url,
    headers: HeaderMap,
    body: Option<String>,
}

impl OperationTool {
    pub(crate) fn new(operation: Operation, target: Arc<Target>) -> Self {
        let definition = ToolDefinition::new(
            operation.tool_name.clone(),
            operation.description.clone(),
            operation.schema.clone(),
        );
        Self { definition, operation, target }
    }

    /// The request `arguments` describe, without the credentials (added
    /// when sent, so that they are never shown or journaled).
    fn request(&self, arguments: &Value) -> Result<Request, String> {
        let empty = serde_json::Map::new();
        let arguments = arguments.as_object().unwrap_or(&empty);
        let mut url = self.target.base_url.clone();
        {
            let mut segments = url.path_segments_mut().map_err(|()| "the base URL cannot take a path")?;
            segments.pop_if_empty();
            for template in self.operation.path.split('/').filter(|s| !s.is_empty()) {
                let segment = self.fill(template, arguments)?;
                // The URL parser would resolve these, taking the request
                // out of the operation's path.
                if segment == "." || segment == ".." {
                    return Err(format!("a path segment cannot be `{segment}`"));
                }
                segments.push(&segment);
            }
        }
        let mut headers = HeaderMap::new();
        let mut query: Vec<(String, String)> = Vec::new();
        for parameter in &self.operation.parameters {
            let Some(value) = arguments.get(&parameter.name).filter(|v| !v.is_null()) else { continue };
            match parameter.place {
                Place::Path => {}
                Place::Query => match value {
                    Value::Array(items) if parameter.explode => {
                        query.extend(items.iter().map(|item| (parameter.name.clone(), plain(item))));
                    }
                    Value::Array(items) => {
                        let joined: Vec<String> = items.iter().map(plain).collect();
                        query.push((parameter.name.clone(), joined.join(",")));
                    }
                    other => query.push((parameter.name.clone(), plain(other))),
                },
                Place::Header => {
                    let name = HeaderName::from_bytes(parameter.name.as_bytes())
                        .map_err(|_| format!("`{}` is not a header name", parameter.name))?;
                    let value = HeaderValue::from_str(&plain(value))
                        .map_err(|_| format!("header `{}`: not a valid header value", parameter.name))?;
                    headers.insert(name, value);
                }
            }
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(&query);
        }
        let body = match (&self.operation.body, arguments.get(BODY)) {
            (Some(media), Some(body)) => {
                let media = HeaderValue::from_str(media)
                    .map_err(|_| "the body's media type is not a header value")?;
                headers.insert(reqwest::header::CONTENT_TYPE, media);
                Some(body.to_string())
            }
            _ => None,
        };
        Ok(Request { url, headers, body })
    }

    /// A path segment template (`{id}`, `{id}.json`) with its arguments.
    fn fill(&self, template: &str, arguments: &serde_json::Map<String, Value>) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close =
                rest[open..].find('}').ok_or_else(|| format!("`{template}`: an unclosed `{{`"))? + open;
            let name = &rest[open + 1..close];
            let value = arguments
                .get(name)
                .filter(|v| !v.is_null())
                .ok_or_else(|| format!("`{name}` is required"))?;
            let value = plain(value);
            if value.is_empty() {
                return Err(format!("`{name}` is empty"));
            }
            out.push_str(&value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    async fn send(&self, request: Request) -> ToolOutput {
        let Request { mut url, mut headers, body } = request;
        match &self.target.auth {
            ApiAuth::None | ApiAuth::Basic { .. } => {}
            ApiAuth::Bearer(token) => {
                if let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}")) {
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
            }
            ApiAuth::Header { name, value } => {
                if let (Ok(name), Ok(value)) =
                    (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value))
                {
                    headers.insert(name, value);
                }
            }
            ApiAuth::Query { name, value } => {
                url.query_pairs_mut().append_pair(name, value);
            }
        }
        let basic = match &self.target.auth {
            ApiAuth::Basic { username, password } => Some((username.as_str(), password.as_str())),
            _ => None,
        };
        let shown = self.shown_url(&url);
        let sent = self.target.client.send(self.operation.method.clone(), url, headers, body, basic).await;
        match sent {
            Ok(answer) => render(answer, &shown, &self.target.client),
            // The error names the URL as sent: without a key in its query.
            Err(error) => ToolOutput::error(error.to_string().replace(&self.secret_query(), "***")),
        }
    }

    /// The URL with a key in its query shown as `***`.
    fn shown_url(&self, url: &Url) -> String {
        let secret = self.secret_query();
        if secret.is_empty() { url.to_string() } else { url.to_string().replace(&secret, "***") }
    }

    fn secret_query(&self) -> String {
        match &self.target.auth {
            ApiAuth::Query { value, .. } => url_encoded(value),
            _ => String::new(),
        }
    }
}

impl Tool for OperationTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::Interruptible
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        let name = &self.operation.tool_name;
        let what = match self.request(arguments) {
            Ok(request) => {
                let mut what = format!("`{name}` sends {} {}", self.operation.method, request.url);
                if let Some(body) = &request.body {
                    let mut shown: String = body.chars().take(BODY_SHOWN).collect();
                    if shown.len() < body.len() {
                        shown.push('…');
                    }
                    what.push_str(&format!(" with the body {shown}"));
                }
                what
            }
            Err(_) => format!(
                "`{name}` sends {} {}{}",
                self.operation.method, self.target.base_url, self.operation.path
            ),
        };
        network::effects(&what)
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let request = match self.request(&arguments) {
                Ok(request) => request,
                Err(why) => return ToolOutput::error(why),
            };
            network::cancellable(&context, self.send(request)).await
        })
    }
}

/// An argument as the text sent: a string as it is, anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn url_encoded(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The answer as the model reads it: the status, the media type, the body
/// (text as it is; other bytes named, not shown), cut to the output bound.
fn render(answer: Answer, url: &str, client: &Client) -> ToolOutput {
    let status = answer.status;
    let mut head = format!("{url}\nstatus: {status}\n");
    if status.is_redirection() {
        let to = answer.location.as_deref().unwrap_or("(no Location)");
        head.push_str(&format!("redirected to {to} (not followed)\n"));
    }
    let media = answer.media_type.as_deref().unwrap_or("unnamed");
    head.push_str(&format!("content-type: {media}\n"));
    if answer.cut {
        let max = client.limits.max_response_bytes;
        head.push_str(&format!("[the response was cut at {max} bytes; the rest was not read]\n"));
    }
    let texty = media.starts_with("text/")
        || media.ends_with("json")
        || media.ends_with("xml")
        || media == "unnamed"
        || media == "application/x-www-form-urlencoded";
    let body = match std::str::from_utf8(&answer.body) {
        Ok(text) if texty => text.to_owned(),
        _ if answer.body.is_empty() => String::new(),
        _ => format!("({} bytes of {media}, not shown)", answer.body.len()),
    };
    let output =
        bosun_tools::limits::cap(format!("{head}\n{body}"), client.limits.max_output_bytes, "output");
    if status.is_success() { ToolOutput::text(output) } else { ToolOutput::error(output) }
}
