//! The client the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`, run by `scripts/mcp-conformance`)
//! drives, behind the hidden `bosun mcp conformance URL`. [`run`] connects to
//! the suite's test server through bosun-mcp's real client, lists the tools,
//! calls each one with arguments made from its schema ([`arguments_for`])
//! and returns what each call answered ([`Report`]); elicitation is answered
//! with the schema's defaults. The scenario's name comes in
//! `MCP_CONFORMANCE_SCENARIO`, its extra facts (pre-registered OAuth client
//! credentials) in `MCP_CONFORMANCE_CONTEXT`.
//!
//! For the `auth/*` scenarios the client also plays the browser, which only
//! a test may do: it fetches the authorization URL without following the
//! redirect and hands the code in the `Location` header back to the client.
//! The suite's authorization server redirects at once.

use std::sync::Arc;
use std::time::Duration;

use bosun_core::{CallId, ToolContext};
use bosun_mcp::{
    AcceptDefaults, Authorization, AuthorizationResponse, AuthorizeFuture, Authorizer, HttpTransport,
    McpServers, OAuthConfig, ParentEnv, Secret, ServerConfig, StartOptions, Started,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::Env;
use crate::error::{Context, Result, bail};
use crate::notice::Notices;

/// The server's name in bosun (tools become `mcp__conformance__TOOL`).
pub const SERVER: &str = "conformance";
/// Under the suite's own 30 s per scenario.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// The redirect URI registered; nothing listens there, as the browser's part
/// is played by [`Headless`].
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
/// The Client ID Metadata Document URL the suite's authorization servers
/// expect (`auth/basic-cimd`): the document a client would publish.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// One tool call made.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// The tool's name in bosun (`mcp__conformance__TOOL`).
    pub tool: String,
    /// The arguments it was called with.
    pub arguments: Value,
    /// The text of its answer (the server's words, unsanitised).
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
}

/// What a run found: each call, in the order made.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// The calls made, one a tool.
    pub calls: Vec<Call>,
}

impl Report {
    /// The tools whose call failed.
    pub fn failed(&self) -> impl Iterator<Item = &str> {
        self.calls.iter().filter(|call| call.is_error).map(|call| call.tool.as_str())
    }

    /// An error naming the calls that failed, if any did.
    pub fn check(&self) -> Result<()> {
        let failed: Vec<&str> = self.failed().collect();
        if !failed.is_empty() {
            bail!("these calls failed: {}", failed.join(", "));
        }
        Ok(())
    }
}

/// Runs the scenario against `url`, in the current directory: what each
/// call answered, or an error when the server could not be used.
/// `notices` is told the scenario, each authorization visited and each tool
/// the server offers that bosun does not.
pub async fn run(url: &str, env: &Env, notices: &Notices) -> Result<Report> {
    let scenario = env.get("MCP_CONFORMANCE_SCENARIO").unwrap_or("(unnamed)").to_owned();
    let context: Value = match env.get("MCP_CONFORMANCE_CONTEXT") {
        Some(text) => serde_json::from_str(text).context("MCP_CONFORMANCE_CONTEXT is not JSON")?,
        None => Value::Null,
    };
    notices.info(format!("conformance scenario {scenario} against {url}"));
    let mut oauth = OAuthConfig::new()
        .with_client_metadata_url(CLIENT_METADATA_URL)
        .with_authorizer(Arc::new(Headless::new(notices.clone())?));
    if let Some(client_id) = context.get("client_id").and_then(Value::as_str) {
        let secret = context.get("client_secret").and_then(Value::as_str).map(Secret::new);
        oauth = oauth.with_client(client_id, secret);
    }
    let transport = HttpTransport::new(url).with_oauth(oauth);
    let config = ServerConfig::new(SERVER, transport).with_startup_timeout(STARTUP_TIMEOUT);
    let workspace = std::env::current_dir().context("cannot read the current directory")?;
    let options = StartOptions::new(workspace, ParentEnv::from_vars(env.vars()))
        .with_elicitor(Arc::new(AcceptDefaults));
    let Started { servers, failures, rejected, .. } = McpServers::start(vec![config], options).await;
    if let Some(failure) = failures.into_iter().next() {
        return Err(failure.into());
    }
    for rejected in &rejected {
        notices.warn(rejected.to_string());
    }
    let mut report = Report::default();
    for tool in servers.tools() {
        let definition = tool.definition();
        let arguments = arguments_for(&definition.parameters);
        let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        let output = tool.execute(arguments.clone(), context).await;
        let text = bosun_core::message::concat_text(&output.content);
        report.calls.push(Call { tool: definition.name.clone(), arguments, text, is_error: output.is_error });
    }
    servers.shutdown().await;
    Ok(report)
}

/// The browser's part, for the suite's authorization servers only: the
/// authorization URL is fetched without following its redirect, and the
/// redirect's `Location` is the answer.
struct Headless {
    http: reqwest::Client,
    notices: Notices,
}

impl Headless {
    fn new(notices: Notices) -> Result<Self> {
        bosun_providers::tls::install_default_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .context("cannot build an HTTP client")?;
        Ok(Self { http, notices })
    }

    async fn visit(&self, url: &str) -> Result<AuthorizationResponse, String> {
        let response = self.http.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
        if !response.status().is_redirection() {
            return Err(format!("the authorization endpoint answered {}, not a redirect", response.status()));
        }
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or("the redirect has no Location")?;
        let target = response.url().join(location).map_err(|e| format!("the Location is not a URL: {e}"))?;
        if !target.as_str().starts_with(REDIRECT_URI) {
            return Err(format!("redirected to {target}, not to the redirect URI"));
        }
        AuthorizationResponse::from_redirect_url(target.as_str())
    }
}

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        REDIRECT_URI.to_owned()
    }

    fn authorize(&self, authorization: Authorization) -> AuthorizeFuture<'_> {
        Box::pin(async move {
            self.notices.info(format!("authorizing at {}", authorization.url));
            self.visit(&authorization.url).await
        })
    }
}

/// An argument object a schema accepts: each property a value of its type
/// (its `enum`'s first, its `default`, or a plain one: `1`, `"test"`, `true`).
pub fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            arguments.insert(name.clone(), value_for(property, 0));
        }
    }
    Value::Object(arguments)
}

fn value_for(schema: &Value, depth: usize) -> Value {
    if let Some(value) = schema.get("default").or_else(|| schema.get("const")) {
        return value.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => {
            kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null")
        }
        _ => "string",
    };
    match kind {
        "integer" | "number" => Value::from(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "boolean" => Value::Bool(true),
        "array" => Value::Array(Vec::new()),
        "object" if depth < 4 => {
            let mut object = Map::new();
            for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten()
            {
                object.insert(name.clone(), value_for(property, depth + 1));
            }
            Value::Object(object)
        }
        "object" => Value::Object(Map::new()),
        "null" => Value::Null,
        _ => Value::from("test"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_follow_the_schema_types() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer", "minimum": 3}, "s": {"type": "string"},
            "flag": {"type": "boolean"}, "mode": {"enum": ["x", "y"]}, "d": {"type": "string", "default": "z"},
            "o": {"type": "object", "properties": {"n": {"type": ["null", "integer"]}}}
        }});
        assert_eq!(
            arguments_for(&schema),
            json!({"a": 1, "b": 3, "s": "test", "flag": true, "mode": "x", "d": "z", "o": {"n": 1}})
        );
        assert_eq!(arguments_for(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn the_report_names_the_calls_that_failed() {
        let call = |tool: &str, is_error| Call {
            tool: tool.into(),
            arguments: json!({}),
            text: "t".into(),
            is_error,
        };
        let fine = Report { calls: vec![call("a", false)] };
        assert!(fine.check().is_ok() && fine.failed().next().is_none());
        let failed = Report { calls: vec![call("a", true), call("b", false), call("c", true)] };
        assert_eq!(failed.failed().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(failed.check().unwrap_err().to_string(), "these calls failed: a, c");
    }

    #[tokio::test]
    async fn a_server_that_cannot_be_reached_is_the_error_after_the_scenario_is_told() {
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let shared = Arc::clone(&told);
        let notices = Notices::new(move |notice| shared.lock().unwrap().push(notice.text().to_owned()));
        let env = Env::from_pairs(&[("MCP_CONFORMANCE_SCENARIO", "initialize")]);
        let error = run("http://127.0.0.1:9/mcp", &env, &notices).await.unwrap_err();
        assert!(matches!(error, crate::Error::Mcp(_)), "{error:#}");
        assert_eq!(*told.lock().unwrap(), ["conformance scenario initialize against http://127.0.0.1:9/mcp"]);
        let env = Env::from_pairs(&[("MCP_CONFORMANCE_CONTEXT", "{")]);
        let error = run("http://127.0.0.1:9/mcp", &env, &notices).await.unwrap_err();
        assert!(format!("{error:#}").starts_with("MCP_CONFORMANCE_CONTEXT is not JSON: "), "{error:#}");
    }
}
