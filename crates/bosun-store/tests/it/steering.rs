//! Messages queued while a session works, in a real SQLite file: a steering
//! message delivered mid-turn is a stored message of the branch, between
//! the batch and the answer; one still waiting when the process goes is
//! waiting again when the session is opened anew.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bosun_core::{Delivery, Message, Session, ToolCategory, ToolOutput};
use bosun_store::Store;
use bosun_testing::{FnTool, ScriptedModel};
use serde_json::json;
use tokio::sync::Notify;

#[tokio::test]
async fn steering_is_stored_where_it_was_delivered_and_a_waiting_follow_up_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    let wait = FnTool::new("wait", ToolCategory::Read, move |_, _| {
        let (s, r) = (Arc::clone(&s), Arc::clone(&r));
        Box::pin(async move {
            s.notify_one();
            r.notified().await;
            ToolOutput::text("waited")
        })
    });
    let model = ScriptedModel::new().tool_call("wait", json!({})).answer("done");
    let mut session = Session::builder(model).tool(wait).journal(journal).build().await.unwrap();
    let inbox = session.inbox();
    let driver = async {
        started.notified().await;
        inbox.steer("mind the tests").await.unwrap();
        release.notify_one();
    };
    let mut events = Vec::new();
    let (outcome, ()) = tokio::join!(session.run("refactor", &mut events), driver);
    outcome.unwrap();
    // A follow-up nobody runs before the process ends.
    inbox.follow_up("then release it").await.unwrap();
    // The inbox shares the session's journal (and its lease): both go.
    drop((session, inbox));
    drop(store);

    let store = Store::open(&path).unwrap();
    let detail = store.show(&id).unwrap();
    let shown: Vec<String> = detail
        .history
        .iter()
        .map(|(_, m)| match m {
            Message::User { .. } => format!("user: {}", m.text()),
            Message::Assistant { .. } if m.tool_calls().next().is_some() => "calls".to_owned(),
            Message::Assistant { .. } => format!("answer: {}", m.text()),
            Message::ToolResult { .. } => "result".to_owned(),
            _ => "other".to_owned(),
        })
        .collect();
    assert_eq!(shown, ["user: refactor", "calls", "result", "user: mind the tests", "answer: done"]);

    let journal = store.open_session(&id).unwrap();
    let resumed = Session::builder(ScriptedModel::new()).tool(FnTool::echo("wait")).resume(journal).await;
    // The tool's definition is the same (name and schema), so it resumes.
    let resumed = resumed.unwrap();
    let waiting: Vec<_> =
        resumed.queued().await.into_iter().map(|q| (q.delivery, q.message.text())).collect();
    assert_eq!(waiting, [(Delivery::FollowUp, "then release it".to_owned())]);
}
