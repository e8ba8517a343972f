//! The servers as a session's `ToolSource`: a server that dies has its tools
//! withdrawn and is restarted once, after a backoff; its tools come back
//! when it is up; a second death withdraws them for good.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use bosun_core::ToolSource;
use bosun_mcp::{McpServers, ServerEvent};
use serde_json::json;
use support::{EventLog, call, python, text};

fn names(tools: &[std::sync::Arc<dyn bosun_core::Tool>]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_dead_server_is_withdrawn_restarted_once_and_its_tools_come_back() {
    let workspace = tempfile::tempdir().unwrap();
    let (options, events) = EventLog::options(workspace.path());
    let started = McpServers::start(vec![python(workspace.path(), "py")], options).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = started.servers;
    let before = names(&servers.tools());
    let first_pid = servers.process_id("py").unwrap();
    assert!(!servers.pending(), "nothing to say while it runs");

    assert!(call(&servers, "mcp__py__die", json!({})).await.is_error);
    let (_, events) =
        events.wait_for(|e| matches!(e, ServerEvent::Exited { server, .. } if server == "py")).await;
    assert!(servers.pending());
    let changes = servers.changes().await;
    let mut withdrawn = changes.withdrawn.clone();
    withdrawn.sort();
    assert_eq!(withdrawn, before, "every tool of the dead server");
    assert!(changes.offered.is_empty());
    assert!(changes.notices[0].contains("restarting it once"), "{:?}", changes.notices);
    assert!(servers.tools().is_empty());

    // Back after the backoff: the same tools, a new process.
    let (_, events) =
        events.wait_for(|e| matches!(e, ServerEvent::Ready { server, .. } if server == "py")).await;
    // The restart task hands its server over right after saying so.
    while !servers.pending() {
        tokio::task::yield_now().await;
    }
    let changes = servers.changes().await;
    assert_eq!(names(&changes.offered), before);
    assert!(changes.withdrawn.is_empty());
    assert!(changes.notices.iter().any(|n| n == "MCP server `py` was restarted"), "{:?}", changes.notices);
    let second_pid = servers.process_id("py").unwrap();
    assert_ne!(first_pid, second_pid);
    assert!(!support::alive(first_pid), "the first process is gone");
    let env = changes.offered.iter().find(|t| t.definition().name == "mcp__py__env").unwrap();
    let output = env.execute(json!({}), support::context(&Default::default())).await;
    assert!(!output.is_error, "{}", text(&output));

    // A second death is final.
    assert!(call(&servers, "mcp__py__die", json!({})).await.is_error);
    let (_, _events) =
        events.wait_for(|e| matches!(e, ServerEvent::Exited { server, .. } if server == "py")).await;
    let changes = servers.changes().await;
    assert_eq!(changes.withdrawn.len(), before.len());
    assert!(changes.notices[0].contains("for the rest of the session"), "{:?}", changes.notices);
    assert!(!servers.pending(), "no restart is under way");
    servers.shutdown().await;
    assert!(!support::alive(second_pid));
}
