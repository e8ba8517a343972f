//! A session's `ToolSource` (an MCP server's tools): withdrawn tools leave
//! the request and are refused, offered-again tools come back, new tools are
//! an authority change journaled as a new snapshot that resume checks
//! (invariant 7), and all of it only between rounds, never inside a batch.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bosun_core::results::WITHDRAWN;
use bosun_core::{
    Event, InMemoryJournal, JournalRecord, Mode, Session, Tool, ToolCategory, ToolChanges, ToolChangesFuture,
    ToolSource, TurnErrorKind, TurnOptions,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::{Log, TestResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A source whose next changes the test (or a tool) stages; it counts how
/// often the session asked.
#[derive(Default)]
struct Staged {
    next: Mutex<Option<ToolChanges>>,
    asked: AtomicUsize,
    /// Never answers `changes` (to test cancellation).
    stuck: AtomicBool,
}

impl Staged {
    fn stage(&self, changes: ToolChanges) {
        *self.next.lock().unwrap() = Some(changes);
    }
}

impl ToolSource for Staged {
    fn pending(&self) -> bool {
        self.stuck.load(Ordering::SeqCst) || self.next.lock().unwrap().is_some()
    }

    fn changes(&self) -> ToolChangesFuture<'_> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.stuck.load(Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        let changes = self.next.lock().unwrap().take().unwrap_or_default();
        Box::pin(std::future::ready(changes))
    }
}

fn read(name: &str, answer: &'static str) -> FnTool {
    FnTool::text(name, ToolCategory::Read, move |_| answer.into())
}

fn shared(tool: FnTool) -> Arc<dyn Tool> {
    Arc::new(tool)
}

/// A tool that stages `changes` on `source` when called, so they come
/// during a batch.
fn trigger(source: &Arc<Staged>, changes: impl Fn() -> ToolChanges + Send + Sync + 'static) -> FnTool {
    let source = Arc::clone(source);
    FnTool::text("trigger", ToolCategory::Read, move |_| {
        source.stage(changes());
        "staged".into()
    })
}

fn records_named(journal: &InMemoryJournal, tag: &str) -> usize {
    journal.records().iter().filter(|r| serde_json::to_value(r).unwrap()["record"] == tag).count()
}

#[tokio::test]
async fn invariant_07_a_tool_added_between_rounds_is_a_journaled_authority_change_resume_checks() -> TestResult
{
    let source = Arc::new(Staged::default());
    let model =
        ScriptedModel::new().tool_call("trigger", json!({})).tool_call("late", json!({})).answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone())
        .tool(trigger(&source, || ToolChanges::default().offering([shared(read("late", "late result"))])))
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .journal(journal.clone())
        .build()
        .await?;
    let built = session.authority().clone();
    let mut events = Vec::new();
    let outcome = session.run("go", &mut events).await?;
    assert_eq!(outcome.answer, "done");
    let offered: Vec<Vec<String>> = model.requests().into_iter().map(|r| r.tools).collect();
    assert_eq!(offered, [vec!["trigger"], vec!["late", "trigger"], vec!["late", "trigger"]]);
    assert_eq!(common::tool_result(session.history(), 1), ("late result".into(), false));
    assert!(events.contains(&Event::ToolsChanged {
        withdrawn: vec![],
        restored: vec![],
        added: vec!["late".into()],
        notices: vec![],
    }));

    // The new snapshot is journaled, after the batch that caused it.
    let grown = session.authority().clone();
    assert_ne!(grown.digest(), built.digest());
    assert!(grown.tools.iter().any(|t| t.definition.name == "late"));
    assert!(grown.enabled.contains(&"late".to_owned()));
    let records = journal.records();
    let at = records.iter().position(|r| matches!(r, JournalRecord::AuthorityChanged { .. })).unwrap();
    assert!(matches!(records[at - 1], JournalRecord::Committed { .. }), "between rounds: {records:?}");
    assert_eq!(records_named(&journal, "authority_changed"), 1);

    // Resume compares against the newest snapshot: without the new tool it
    // narrows, and resumes saying so; with it, it is the same authority.
    let without = Session::builder(ScriptedModel::new())
        .tool(trigger(&source, ToolChanges::default))
        .resume(journal.clone())
        .await?;
    let change = without.resumed_change().ok_or("the narrowing is told")?;
    assert_eq!(change.to_string(), "- tools gone: late");
    drop(without);
    let resumed = Session::builder(ScriptedModel::new())
        .tool(trigger(&source, ToolChanges::default))
        .tool(read("late", "late result"))
        .resume(journal)
        .await?;
    assert_eq!(resumed.authority().digest(), grown.digest());
    assert_eq!(resumed.history(), session.history());
    Ok(())
}

#[tokio::test]
async fn a_withdrawn_tool_leaves_the_request_is_refused_and_returns_when_offered_again() -> TestResult {
    let source = Arc::new(Staged::default());
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = {
        let ran = Arc::clone(&ran);
        move || {
            let ran = Arc::clone(&ran);
            FnTool::text("lookup", ToolCategory::Read, move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
                "found".into()
            })
        }
    };
    let model = ScriptedModel::new()
        .tool_call("trigger", json!({}))
        .tool_call("lookup", json!({}))
        .tool_call("trigger", json!({}))
        .tool_call("lookup", json!({}))
        .answer("done");
    let journal = InMemoryJournal::new();
    let step = Arc::new(AtomicUsize::new(0));
    let replacement = counted();
    let replacement: Arc<dyn Tool> = Arc::new(replacement);
    let changes = {
        let step = Arc::clone(&step);
        move || match step.fetch_add(1, Ordering::SeqCst) {
            0 => ToolChanges::withdraw(["lookup".to_owned()]).notice("server `s` exited (exit status 1)"),
            _ => ToolChanges::default().offering([Arc::clone(&replacement)]),
        }
    };
    let mut session = Session::builder(model.clone())
        .tool(trigger(&source, changes))
        .tool(counted())
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .journal(journal.clone())
        .build()
        .await?;
    let before = session.authority().digest();
    let mut events = Vec::new();
    session.run("go", &mut events).await?;

    let offered: Vec<Vec<String>> = model.requests().into_iter().map(|r| r.tools).collect();
    assert_eq!(offered[1], ["trigger"], "withdrawn from the request");
    assert_eq!(offered[3], ["lookup", "trigger"], "back once offered again");
    let (refused, is_error) = common::tool_result(session.history(), 1);
    assert!(is_error && refused.contains(WITHDRAWN), "{refused}");
    assert_eq!(common::tool_result(session.history(), 3), ("found".into(), false), "the new one runs");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the withdrawn call never ran");
    assert!(events.contains(&Event::ToolsChanged {
        withdrawn: vec!["lookup".into()],
        restored: vec![],
        added: vec![],
        notices: vec!["server `s` exited (exit status 1)".into()],
    }));
    assert!(events.contains(&Event::ToolsChanged {
        withdrawn: vec![],
        restored: vec!["lookup".into()],
        added: vec![],
        notices: vec![],
    }));
    // Neither withdrawing nor restoring the same tool changes the authority.
    assert_eq!(session.authority().digest(), before);
    assert_eq!(records_named(&journal, "authority_changed"), 0);
    assert_eq!(session.withdrawn_tools().count(), 0);
    Ok(())
}

#[tokio::test]
async fn tool_changes_wait_for_the_batch_to_commit() -> TestResult {
    // Sequential calls: the first withdraws the tool of the second, which
    // still runs, because a batch is gated against one tool set.
    let source = Arc::new(Staged::default());
    let log = Log::default();
    let second = {
        let log = log.clone();
        FnTool::text("second", ToolCategory::Read, move |_| {
            log.push("second ran");
            "second result".into()
        })
    };
    let first = {
        let (source, log) = (Arc::clone(&source), log.clone());
        FnTool::text("first", ToolCategory::Read, move |_| {
            source.stage(ToolChanges::withdraw(["second".to_owned()]));
            log.push("first ran");
            "first result".into()
        })
    };
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("first", json!({})).tool_call("second", json!({})))
        .answer("done");
    let mut session = Session::builder(model.clone())
        .tool(first)
        .tool(second)
        .sequential_tools()
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    assert_eq!(log.entries(), ["first ran", "second ran"]);
    assert_eq!(common::tool_result(session.history(), 1), ("second result".into(), false));
    assert_eq!(source.asked.load(Ordering::SeqCst), 1, "asked once, after the batch");
    let kinds = common::kinds(&events);
    let changed = kinds.iter().position(|k| k == "tools_changed").unwrap();
    let last_end = kinds.iter().rposition(|k| k == "tool_end").unwrap();
    assert!(changed > last_end, "{kinds:?}");
    assert_eq!(model.requests()[1].tools, ["first"]);
    Ok(())
}

#[tokio::test]
async fn cancelling_the_turn_abandons_a_source_that_does_not_answer() -> TestResult {
    let source = Arc::new(Staged::default());
    source.stuck.store(true, Ordering::SeqCst);
    let model = ScriptedModel::new().answer("never");
    let mut session = Session::builder(model.clone())
        .tool(read("a", "a"))
        .mode(Mode::ReadOnly)
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .build()
        .await?;
    let cancel = CancellationToken::new();
    let asked = {
        let (source, cancel) = (Arc::clone(&source), cancel.clone());
        async move {
            // Cancel once the session is waiting on the source.
            while source.asked.load(Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
            cancel.cancel();
        }
    };
    let mut events = Vec::new();
    let (result, ()) =
        tokio::join!(session.run_with("go", TurnOptions::cancel_on(cancel), &mut events), asked);
    let error = result.unwrap_err();
    assert!(matches!(error.kind, TurnErrorKind::Cancelled), "{error:?}");
    assert!(model.requests().is_empty(), "no model round after an abandoned question");
    assert!(session.history().is_empty(), "rolled back");
    Ok(())
}

#[tokio::test]
async fn an_authority_change_inside_a_batch_is_refused_by_replay() -> TestResult {
    let source = Arc::new(Staged::default());
    let model = ScriptedModel::new().tool_call("trigger", json!({})).answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(trigger(&source, || ToolChanges::default().offering([shared(read("late", "x"))])))
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .journal(journal.clone())
        .build()
        .await?;
    session.run("go", &mut Vec::new()).await?;
    let mut records = journal.records();
    let changed = records.iter().position(|r| matches!(r, JournalRecord::AuthorityChanged { .. })).unwrap();
    let moved = records.remove(changed);
    let batch = records.iter().position(|r| matches!(r, JournalRecord::BatchStarted { .. })).unwrap();
    records.insert(batch + 1, moved);
    let error = bosun_core::replay(&records).unwrap_err();
    assert!(error.to_string().contains("inside a batch"), "{error}");
    Ok(())
}
