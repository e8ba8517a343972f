//! Against a hand-written Python MCP server (see `support`): what the
//! reference servers cannot be made to do. Huge results, schemas to lower or
//! refuse, the environment a server sees, tool lists that change.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::collections::BTreeMap;

use bosun_core::schema::CompiledSchema;
use bosun_mcp::{MAX_TEXT, McpServers, ServerEvent, ToolRejection};
use serde_json::json;
use support::{EventLog, call, python, text, tool};

#[tokio::test]
async fn a_ten_megabyte_result_is_cut_to_the_bound_with_a_marker() {
    let workspace = tempfile::tempdir().unwrap();
    let servers = support::start(workspace.path(), vec![python(workspace.path(), "py")]).await.servers;
    let output = call(&servers, "mcp__py__big", json!({})).await;
    assert!(!output.is_error);
    let shown = text(&output);
    assert!(shown.len() < MAX_TEXT + 200, "{}", shown.len());
    assert!(shown.starts_with("xxxx"));
    let cut = 10_000_000 - MAX_TEXT;
    assert!(
        shown.ends_with(&format!(
            "[… {cut} bytes cut: the result had 10000000 bytes of text, {MAX_TEXT} are shown]"
        )),
        "{}",
        &shown[shown.len() - 120..]
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_recursive_schema_rejects_that_tool_only_and_refs_are_inlined() {
    let workspace = tempfile::tempdir().unwrap();
    let started = support::start(workspace.path(), vec![python(workspace.path(), "py")]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    assert_eq!(started.rejected.len(), 1, "{:?}", started.rejected);
    let ToolRejection::Schema { server, tool: rejected, reason } = &started.rejected[0] else {
        panic!("{:?}", started.rejected)
    };
    assert_eq!((server.as_str(), rejected.as_str()), ("py", "tree"));
    assert!(reason.contains("`#/$defs/node` is recursive"), "{reason}");
    let servers = started.servers;
    let names: Vec<String> = servers.tools().iter().map(|t| t.definition().name.clone()).collect();
    let expected = ["big", "die", "env", "fail", "flood", "hold", "huge", "point", "swap"]
        .map(|n| format!("mcp__py__{n}"));
    assert_eq!(names, expected);

    let point = tool(&servers, "mcp__py__point");
    let schema = CompiledSchema::compile(&point.definition().parameters).unwrap();
    assert!(schema.validate(&json!({"p": {"x": 1.5}})).is_ok());
    assert!(schema.validate(&json!({"p": {}})).is_err(), "the inlined definition's `required` holds");
    assert_eq!(text(&call(&servers, "mcp__py__point", json!({"p": {"x": 1.5}})).await), "x=1.5");
    servers.shutdown().await;
}

#[tokio::test]
async fn the_server_sees_a_cleared_environment() {
    let workspace = tempfile::tempdir().unwrap();
    let mut config = python(workspace.path(), "py");
    if let bosun_mcp::Transport::Stdio(stdio) = &mut config.transport {
        *stdio = stdio.clone().env_var("PASSED_THROUGH").env_var("NOT_SET_ANYWHERE").env("FROM_CONFIG", "1");
    }
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let output = call(&servers, "mcp__py__env", json!({})).await;
    let env: BTreeMap<String, String> = serde_json::from_str(&text(&output)).unwrap();
    assert!(!env.contains_key("OPENAI_API_KEY"), "{env:?}");
    assert!(env.contains_key("PATH") && env.contains_key("HOME"), "{env:?}");
    assert_eq!(env.get("PASSED_THROUGH").map(String::as_str), Some("yes"));
    assert_eq!(env.get("FROM_CONFIG").map(String::as_str), Some("1"));
    let allowed = ["PATH", "HOME", "LANG", "PASSED_THROUGH", "FROM_CONFIG"];
    for name in env.keys() {
        assert!(allowed.contains(&name.as_str()) || name.starts_with("LC_"), "unexpected variable {name}");
    }
    servers.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_applied_by_refresh() {
    let workspace = tempfile::tempdir().unwrap();
    let open = python(workspace.path(), "open").with_allow_new_tools(true);
    let closed = python(workspace.path(), "closed");
    let (options, events) = EventLog::options(workspace.path());
    let servers = McpServers::start(vec![open, closed], options).await.servers;
    assert!(!servers.tools_changed());
    let big = tool(&servers, "mcp__open__big");
    let env = tool(&servers, "mcp__open__env");

    assert_eq!(text(&call(&servers, "mcp__open__swap", json!({})).await), "swapped");
    let (_, events) =
        events.wait_for(|e| matches!(e, ServerEvent::ToolsChanged { server } if server == "open")).await;
    assert_eq!(text(&call(&servers, "mcp__closed__swap", json!({})).await), "swapped");
    events.wait_for(|e| matches!(e, ServerEvent::ToolsChanged { server } if server == "closed")).await;
    assert!(servers.tools_changed());

    let change = servers.refresh().await;
    assert!(!servers.tools_changed(), "the flags are cleared");
    assert!(change.errors.is_empty() && change.rejected.len() == 2, "{change:?}");
    let mut removed = change.removed.clone();
    removed.sort();
    assert_eq!(removed, ["mcp__closed__big", "mcp__closed__env", "mcp__open__big", "mcp__open__env"]);
    let added: Vec<&str> = change.added.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(added, ["mcp__open__env", "mcp__open__fresh"], "only the server that allows new tools");
    assert_eq!(change.withheld, ["mcp__closed__env", "mcp__closed__fresh"]);
    assert_eq!(change.added[0].definition().description, "changed");

    let withdrawn = big.execute(json!({}), support::context(&Default::default())).await;
    assert!(withdrawn.is_error);
    assert_eq!(text(&withdrawn), "the tool `big` was withdrawn by MCP server `open`");
    let stale = env.execute(json!({}), support::context(&Default::default())).await;
    assert!(text(&stale).contains("withdrawn"), "the old `env` is withdrawn too");
    let fresh = call(&servers, "mcp__open__fresh", json!({})).await;
    assert!(fresh.is_error && text(&fresh) == "unknown", "the new tool is offered and reaches the server");
    let offered: Vec<String> = servers.tools().iter().map(|t| t.definition().name.clone()).collect();
    assert!(
        !offered.contains(&"mcp__closed__fresh".to_owned())
            && !offered.contains(&"mcp__open__big".to_owned())
    );
    assert!(servers.refresh().await.is_empty(), "nothing new since");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_call_the_server_never_answers_is_cancelled_when_the_servers_shut_down() {
    let workspace = tempfile::tempdir().unwrap();
    let servers = support::start(workspace.path(), vec![python(workspace.path(), "py")]).await.servers;
    let hold = tool(&servers, "mcp__py__hold");
    let running =
        tokio::spawn(async move { hold.execute(json!({}), support::context(&Default::default())).await });
    // Nothing to wait on from a server that says nothing; shutdown must end
    // the call whenever it started.
    servers.shutdown().await;
    let output = tokio::time::timeout(support::HANG_GUARD, running).await.unwrap().unwrap();
    assert!(output.is_error);
    let said = text(&output);
    assert!(said.starts_with("MCP server `py`") && said.contains("was shut down"), "{said}");
}

#[tokio::test]
async fn a_json_rpc_error_is_an_error_output_with_the_servers_message() {
    let workspace = tempfile::tempdir().unwrap();
    let servers = support::start(workspace.path(), vec![python(workspace.path(), "py")]).await.servers;
    let output = call(&servers, "mcp__py__fail", json!({})).await;
    assert!(output.is_error);
    assert_eq!(
        text(&output),
        "MCP server `py` refused the call of `fail`: backend is down (JSON-RPC error -32000)"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn cancelling_or_dropping_a_call_tells_the_server() {
    let workspace = tempfile::tempdir().unwrap();
    let (options, events) = EventLog::options(workspace.path());
    let servers = McpServers::start(vec![python(workspace.path(), "py")], options).await.servers;
    let stderr = |needle: &'static str| move |e: &ServerEvent| matches!(e, ServerEvent::Stderr { text, .. } if text.contains(needle));

    let cancel = tokio_util::sync::CancellationToken::new();
    let hold = tool(&servers, "mcp__py__hold");
    let running = tokio::spawn({
        let context = support::context(&cancel);
        async move { hold.execute(json!({}), context).await }
    });
    let (_, events) = events.wait_for(stderr("holding")).await;
    cancel.cancel();
    let output = tokio::time::timeout(support::HANG_GUARD, running).await.unwrap().unwrap();
    assert_eq!(text(&output), "the call of `hold` on MCP server `py` was cancelled");
    let (said, events) = events.wait_for(stderr("cancelled")).await;
    assert!(
        matches!(&said, ServerEvent::Stderr { text, .. } if text.contains(": cancelled by bosun")),
        "{said:?}"
    );

    // The session drops an interruptible call's future once it cancelled it.
    let hold = tool(&servers, "mcp__py__hold");
    let dropped =
        tokio::spawn(async move { hold.execute(json!({}), support::context(&Default::default())).await });
    let (_, events) = events.wait_for(stderr("holding")).await;
    dropped.abort();
    let (said, _) = events.wait_for(stderr("cancelled")).await;
    assert!(matches!(&said, ServerEvent::Stderr { text, .. } if text.contains("abandoned")), "{said:?}");
    servers.shutdown().await;
}
