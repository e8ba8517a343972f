//! Invariant 15: the journal records every step durably before the next
//! model round, and resume replays it strictly without re-running anything.

use crate::common;

use std::sync::Arc;

use bosun_core::{
    BuildError, Capabilities, Disposition, InMemoryJournal, JournalRecord, Message, Model, ModelRequest,
    ModelStream, Session, ToolCategory, ToolOutput, TurnErrorKind,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::{Log, TestResult, tool_result};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn record_kind(record: &JournalRecord) -> String {
    serde_json::to_value(record)
        .ok()
        .and_then(|v| v["record"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn kinds(journal: &InMemoryJournal) -> Vec<String> {
    journal.records().iter().map(record_kind).collect()
}

#[tokio::test]
async fn invariant_15_journal_records_each_step_in_order() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("read", json!({})).answer("done");
    let mut session =
        Session::builder(model).tool(FnTool::echo("read")).journal(journal.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    assert_eq!(
        kinds(&journal),
        [
            "session_started",
            "turn_started",
            "batch_started",
            "invocation_started",
            "invocation_finished",
            "committed",
            "committed",
            "turn_ended"
        ]
    );
    Ok(())
}

/// A model that notes, at each request, how many batches the journal holds.
struct JournalWatcher {
    inner: ScriptedModel,
    journal: InMemoryJournal,
    log: Log,
}

impl Model for JournalWatcher {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        let commits = self.journal.records().iter().filter(|r| record_kind(r) == "committed").count();
        self.log.push(format!("request after {commits} commits"));
        self.inner.stream(request, cancel)
    }
}

#[tokio::test]
async fn invariant_15_batch_durable_before_next_round() -> TestResult {
    let journal = InMemoryJournal::new();
    let log = Log::default();
    let model = JournalWatcher {
        inner: ScriptedModel::new().tool_call("read", json!({})).tool_call("read", json!({})).answer("done"),
        journal: journal.clone(),
        log: log.clone(),
    };
    let mut session =
        Session::builder(model).tool(FnTool::echo("read")).journal(journal.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    assert_eq!(
        log.entries(),
        ["request after 0 commits", "request after 1 commits", "request after 2 commits"]
    );
    Ok(())
}

#[tokio::test]
async fn invariant_15_resume_replays_committed_history_strictly() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("read", json!({"a": 1})).answer("one").answer("two");
    let mut session = Session::builder(model)
        .tool(FnTool::echo("read"))
        .system_prompt("be terse")
        .journal(journal.clone())
        .build()
        .await?;
    session.run("first", &mut Vec::new()).await?;
    session.run("second", &mut Vec::new()).await?;
    let model = ScriptedModel::new().answer("three");
    let mut resumed =
        Session::builder(model.clone()).tool(FnTool::echo("read")).resume(journal.clone()).await?;
    assert_eq!(resumed.history(), session.history());
    assert_eq!(resumed.system_prompt(), Some("be terse"));
    assert_eq!(resumed.turns(), 2);
    resumed.run("third", &mut Vec::new()).await?;
    assert_eq!(model.requests()[0].messages.len(), session.history().len() + 1);
    assert_eq!(model.requests()[0].system.as_deref(), Some("be terse"));
    Ok(())
}

#[tokio::test]
async fn invariant_15_started_invocation_is_reported_interrupted_never_rerun() -> TestResult {
    let journal = InMemoryJournal::new();
    let started = Arc::new(Notify::new());
    let signal = Arc::clone(&started);
    let effect = FnTool::new("deploy", ToolCategory::Read, move |_, _| {
        let signal = Arc::clone(&signal);
        Box::pin(async move {
            signal.notify_one();
            // The process "dies" while the deploy runs.
            std::future::pending::<ToolOutput>().await
        })
    });
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("deploy", json!({})).tool_call("read", json!({})))
        .answer("never");
    let mut session = Session::builder(model)
        .tool(effect.clone())
        .tool(FnTool::echo("read"))
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    {
        let run = session.run("ship it", &mut events);
        tokio::select! {
            _ = run => panic!("the turn cannot finish while deploy hangs"),
            () = started.notified() => {}
        }
        // Dropping the turn's future here is the crash.
    }
    drop(session);
    let resume = || {
        Session::builder(ScriptedModel::new().answer("ok"))
            .tool(effect.clone())
            .tool(FnTool::echo("read"))
            .resume(journal.clone())
    };
    let resumed = resume().await?;
    let history = resumed.history();
    assert_eq!(history.len(), 4, "{history:?}");
    let (deploy, is_error) = tool_result(history, 0);
    assert!(is_error);
    assert_eq!(deploy, bosun_core::results::INTERRUPTED_RESULT);
    assert_eq!(effect.calls().len(), 1, "deploy was not run again");
    // The recovery was journaled: a second resume sees a closed turn.
    assert_eq!(kinds(&journal).last().map(String::as_str), Some("turn_ended"));
    let again = resume().await?;
    assert_eq!(again.history(), history);
    Ok(())
}

#[tokio::test]
async fn invariant_15_interrupted_turn_without_effect_leaves_no_trace() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().reply(Reply::new().text("…").hang());
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    let streaming = Arc::new(Notify::new());
    let signal = Arc::clone(&streaming);
    let mut sink = bosun_core::event::FnSink(move |event| {
        if matches!(event, bosun_core::Event::TextDelta { .. }) {
            signal.notify_one();
        }
        Ok(())
    });
    {
        let run = session.run("lost prompt", &mut sink);
        tokio::select! {
            _ = run => panic!("hangs"),
            () = streaming.notified() => {}
        }
    }
    drop(session);
    let resumed = Session::builder(ScriptedModel::new()).resume(journal).await?;
    assert!(resumed.history().is_empty());
    assert_eq!(resumed.interrupted_prompt(), Some(&Message::user("lost prompt")));
    Ok(())
}

#[tokio::test]
async fn invariant_15_journal_failure_fails_the_turn() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().answer("ok");
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    journal.fail_after(1); // turn_started is written, the commit is not
    let err = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Journal(_)), "{err}");
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_15_out_of_order_journal_is_refused() -> TestResult {
    let journal = InMemoryJournal::new();
    let mut session =
        Session::builder(ScriptedModel::new().answer("ok")).journal(journal.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    let mut records = journal.records();
    records.insert(2, JournalRecord::InvocationStarted { call_id: bosun_core::CallId::new_v7(), attempt: 1 });
    let err = Session::builder(ScriptedModel::new())
        .resume(InMemoryJournal::from_records(records))
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::Replay(_)), "{err}");
    let empty = Session::builder(ScriptedModel::new()).resume(InMemoryJournal::new()).await.unwrap_err();
    assert!(empty.to_string().contains("session_started"), "{empty}");
    Ok(())
}
