//! Against the real everything server (npm
//! `@modelcontextprotocol/server-everything`): stdio and Streamable HTTP,
//! real results, errors as outputs, roots, cancellation and shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::time::{Duration, Instant};

use bosun_core::{ToolCategory, schema::CompiledSchema};
use bosun_mcp::{HttpTransport, McpServers, ServerConfig, ServerEvent};
use serde_json::json;
use support::{EventLog, alive, call, context, everything, text, tool};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn stdio_server_lists_prefixed_compiled_tools_and_answers_calls() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = started.servers;
    let tools = servers.tools();
    assert!(tools.len() >= 10, "{}", tools.len());
    for tool in &tools {
        let definition = tool.definition();
        assert!(definition.name.starts_with("mcp__everything__"), "{}", definition.name);
        assert!(CompiledSchema::compile(&definition.parameters).is_ok(), "{}", definition.name);
        assert_eq!(tool.category(), ToolCategory::External, "annotations are not trusted by default");
    }

    let echo = call(&servers, "mcp__everything__echo", json!({"message": "hi"})).await;
    assert!(!echo.is_error);
    assert_eq!(text(&echo), "Echo: hi");
    let sum = call(&servers, "mcp__everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(!sum.is_error);
    assert!(text(&sum).contains("42"), "{}", text(&sum));
    let image = call(&servers, "mcp__everything__get-tiny-image", json!({})).await;
    assert!(support::has_image(&image), "{image:?}");
    servers.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_comes_back_as_an_error_output() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let cancel = CancellationToken::new();
    let output = servers.call_tool("everything", "no-such-tool", json!({}), context(&cancel)).await;
    assert!(output.is_error);
    assert!(text(&output).contains("no-such-tool not found"), "{}", text(&output));
    let absent = servers.call_tool("nobody", "echo", json!({}), context(&cancel)).await;
    assert!(absent.is_error && text(&absent).contains("no running MCP server `nobody`"));
    servers.shutdown().await;
}

#[tokio::test]
async fn roots_answer_with_the_workspace_and_trusted_annotations_make_reads() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let started = support::start(workspace.path(), vec![config.with_trust_annotations(true)]).await;
    let servers = started.servers;
    let roots = call(&servers, "mcp__everything__get-roots-list", json!({})).await;
    let uri = format!("file://{}", workspace.path().display());
    assert!(text(&roots).contains(&uri), "{}", text(&roots));
    assert_eq!(tool(&servers, "mcp__everything__get-sum").category(), ToolCategory::Read);
    servers.shutdown().await;
}

#[tokio::test]
async fn elicitation_is_declined_by_default() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let output = call(&servers, "mcp__everything__trigger-elicitation-request", json!({})).await;
    assert!(text(&output).to_lowercase().contains("decline"), "{}", text(&output));
    servers.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_running_call_returns_an_error_promptly_and_the_server_goes_on() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let (options, events) = EventLog::options(workspace.path());
    let servers = McpServers::start(vec![config], options).await.servers;
    let long = tool(&servers, "mcp__everything__trigger-long-running-operation");
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let context = context(&cancel);
        async move { long.execute(json!({"duration": 60, "steps": 60}), context).await }
    });
    // The first progress notification proves the call is running on the server.
    let (progress, _events) = events.wait_for(|e| matches!(e, ServerEvent::Progress { .. })).await;
    assert!(matches!(&progress, ServerEvent::Progress { message, .. } if message == "1/60"), "{progress:?}");
    let cancelled_at = Instant::now();
    cancel.cancel();
    let output = tokio::time::timeout(support::HANG_GUARD, running).await.unwrap().unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(10), "{:?}", cancelled_at.elapsed());
    assert!(output.is_error);
    assert!(text(&output).contains("was cancelled"), "{}", text(&output));
    let echo = call(&servers, "mcp__everything__echo", json!({"message": "still here"})).await;
    assert_eq!(text(&echo), "Echo: still here");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_call_past_the_tool_timeout_is_an_error_naming_the_timeout() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let config = config.with_tool_timeout(Duration::from_millis(300));
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let output =
        call(&servers, "mcp__everything__trigger-long-running-operation", json!({"duration": 30})).await;
    assert!(output.is_error);
    assert!(text(&output).contains("timed out after 300 ms"), "{}", text(&output));
    servers.shutdown().await;
}

#[tokio::test]
async fn shutdown_reaps_the_server_that_ignores_stdin_closing() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let config = config.with_shutdown_grace(Duration::from_millis(300));
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let pid = servers.process_id("everything").unwrap();
    assert!(alive(pid));
    servers.shutdown().await;
    assert!(!alive(pid), "the server and its pid are gone once shutdown returns");
    assert!(support::group_members(pid).is_empty(), "nothing of its process group is left");
}

#[tokio::test]
async fn streamable_http_server_starts_lists_and_answers() {
    let Some(http) = bosun_testing::mcp::EverythingHttp::start() else { return };
    let workspace = tempfile::tempdir().unwrap();
    let transport = HttpTransport::new(http.url()).header("X-Bosun-Test", "1").bearer_token("not-checked");
    let started = support::start(workspace.path(), vec![ServerConfig::new("web", transport)]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = started.servers;
    assert!(servers.tools().iter().all(|t| t.definition().name.starts_with("mcp__web__")));
    assert_eq!(servers.process_id("web"), None);
    let echo = call(&servers, "mcp__web__echo", json!({"message": "over http"})).await;
    assert_eq!(text(&echo), "Echo: over http");
    let sum = call(&servers, "mcp__web__get-sum", json!({"a": 1, "b": 2})).await;
    assert!(text(&sum).contains('3'), "{}", text(&sum));
    servers.shutdown().await;
}

#[tokio::test]
async fn a_refused_http_connection_is_a_start_failure_naming_the_server() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let workspace = tempfile::tempdir().unwrap();
    let config = ServerConfig::new("nowhere", HttpTransport::new(format!("http://127.0.0.1:{port}/mcp")));
    let started = support::start(workspace.path(), vec![config]).await;
    assert_eq!(started.failures.len(), 1);
    let error = started.failures[0].to_string();
    assert!(error.starts_with("MCP server `nowhere` failed to initialize"), "{error}");
}
