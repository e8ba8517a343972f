//! MCP tools inside a real session: the core accepts their names and
//! schemas, asks before an `External` call, and records the server's result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use bosun_core::{Message, Mode, Session};
use bosun_testing::{RecordingApprover, Reply, ScriptedModel};
use serde_json::json;
use support::everything;

fn results(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .map(|m| (m.text(), m.is_error()))
        .collect()
}

#[tokio::test]
async fn a_session_asks_before_an_external_call_and_keeps_trusted_reads_quiet() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let config = config.with_trust_annotations(true);
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("mcp__everything__get-sum", json!({"a": 20, "b": 22}))
                .tool_call("mcp__everything__toggle-simulated-logging", json!({})),
        )
        .answer("done");
    let approver = RecordingApprover::approve_all();
    let mut session = Session::builder(model)
        .tools(servers.tools())
        .mode(Mode::Propose)
        .approver(approver.clone())
        .build()
        .await
        .unwrap();
    session.run("add and toggle", &mut Vec::new()).await.unwrap();
    let results = results(session.history());
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    assert!(results[0].0.contains("42"), "{results:?}");
    let asked: Vec<String> = approver.seen().iter().map(|r| r.tool.clone()).collect();
    assert_eq!(asked, ["mcp__everything__toggle-simulated-logging"], "a trusted read-only tool is not asked");

    let model =
        ScriptedModel::new().tool_call("mcp__everything__toggle-simulated-logging", json!({})).answer("ok");
    let mut read_only =
        Session::builder(model).tools(servers.tools()).mode(Mode::ReadOnly).build().await.unwrap();
    read_only.run("echo", &mut Vec::new()).await.unwrap();
    let results = self::results(read_only.history());
    assert!(results[0].1, "an external tool is denied read-only: {results:?}");
    servers.shutdown().await;
}
