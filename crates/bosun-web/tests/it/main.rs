//! bosun-web against real HTTP servers on loopback (bosun-testing's
//! `http::Server`): pages, redirects, bounds and refusals for `web_fetch`,
//! SearxNG- and Brave-shaped providers for `web_search`, and the session's
//! permission pipeline around both (invariant 19).

mod fetch;
mod invariants;
mod openapi;
mod search;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

use bosun_core::{CallId, Tool, ToolContext, ToolOutput};
use tokio_util::sync::CancellationToken;

/// Runs `tool` once outside a session.
pub async fn call(tool: &dyn Tool, arguments: serde_json::Value) -> ToolOutput {
    tool.execute(arguments, ToolContext::detached(CallId::new_v7(), CancellationToken::new())).await
}

/// The output's text.
pub fn text(output: &ToolOutput) -> String {
    bosun_core::message::concat_text(&output.content)
}
