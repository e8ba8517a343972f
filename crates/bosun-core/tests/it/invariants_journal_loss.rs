//! Invariant 15 when the journal itself fails (issue 12, "the journal has
//! one owner"): a failed record leaves the live session where replay of the
//! durable records puts it, the session refuses further turns until it is
//! resumed from its journal, and every `turn_start` event gets a `turn_end`.
//! Invariant 21: a rolled-back turn keeps the user's prompt.

use crate::common;

use std::sync::{Arc, Mutex};

use bosun_core::journal::JournalFuture;
use bosun_core::{
    BuildError, Disposition, Event, InMemoryJournal, Journal, JournalError, JournalErrorKind, JournalRecord,
    Message, ModelError, Session, SessionBuilder, TurnErrorKind, replay,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// A journal that fails the append at position `fail_at` (counting every
/// append, `session_started` is 0) and only that one; the records written so
/// far are readable through the shared [`InMemoryJournal`].
#[derive(Clone)]
struct FailAt {
    inner: InMemoryJournal,
    fail_at: usize,
    appends: Arc<Mutex<usize>>,
}

impl FailAt {
    fn new(fail_at: usize) -> Self {
        Self { inner: InMemoryJournal::new(), fail_at, appends: Arc::default() }
    }

    fn records(&self) -> Vec<JournalRecord> {
        self.inner.records()
    }
}

impl Journal for FailAt {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        let position = match self.appends.lock() {
            Ok(mut appends) => {
                *appends += 1;
                *appends - 1
            }
            Err(_) => usize::MAX,
        };
        if position == self.fail_at {
            return Box::pin(std::future::ready(Err(JournalError::new(
                JournalErrorKind::Injected,
                format!("injected failure at {position}"),
            ))));
        }
        self.inner.append(record)
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        self.inner.load()
    }
}

/// Two tool-call replies, then an answer.
fn two_batch_model() -> ScriptedModel {
    ScriptedModel::new().tool_call("read", json!({"n": 1})).tool_call("read", json!({"n": 2})).answer("done")
}

fn builder(model: ScriptedModel, sequential: bool) -> SessionBuilder {
    let builder = Session::builder(model).tool(FnTool::echo("read"));
    if sequential { builder.sequential_tools() } else { builder }
}

fn count(events: &[Event], wanted: fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| wanted(e)).count()
}

fn balanced(events: &[Event]) -> bool {
    let starts = count(events, |e| matches!(e, Event::TurnStart { .. }));
    let ends = count(events, |e| matches!(e, Event::TurnEnd { .. }));
    starts == ends && (starts == 0 || matches!(events.last(), Some(Event::TurnEnd { .. })))
}

/// Fails with `what` unless `holds`.
fn ensure(holds: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if holds { Ok(()) } else { Err(what()) }
}

/// One failure position: every property, as a list of what broke.
async fn failure_at(sequential: bool, fail_at: usize) -> Result<(), String> {
    let journal = FailAt::new(fail_at);
    let built = builder(two_batch_model(), sequential).journal(journal.clone()).build().await;
    let mut session = built.map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    let error = session.run("go", &mut events).await.err().ok_or("no error")?;
    ensure(matches!(error.kind, TurnErrorKind::Journal(_)), || format!("error {error}"))?;
    ensure(balanced(&events), || format!("unbalanced events {events:?}"))?;

    // What the journal holds durably is what the live session holds.
    let durable = journal.records();
    ensure(durable.len() == fail_at, || format!("{} records", durable.len()))?;
    let replayed = replay(&durable).map_err(|e| format!("replay: {e}"))?;
    ensure(session.history() == replayed.messages.as_slice(), || {
        format!("live history {:?} is not replay's {:?}", session.history(), replayed.messages)
    })?;
    let kept = !session.history().is_empty();
    let disposition = if kept { Disposition::Checkpointed } else { Disposition::RolledBack };
    ensure(error.disposition == disposition, || format!("disposition {:?}", error.disposition))?;

    // The session refuses to go on, and writes nothing more.
    let mut more = Vec::new();
    let refused = session.run("again", &mut more).await.err().ok_or("a second turn ran")?;
    ensure(matches!(refused.kind, TurnErrorKind::JournalLost(_)), || format!("second run: {refused}"))?;
    ensure(refused.to_string().contains("resume"), || format!("second run: {refused}"))?;
    ensure(balanced(&more), || format!("unbalanced events {more:?}"))?;
    ensure(journal.records() == durable, || "the refused turn wrote records".to_owned())?;

    // Resuming from the durable records gives replay's view and goes on.
    let resumed = builder(ScriptedModel::new().answer("back"), sequential)
        .resume(InMemoryJournal::from_records(durable))
        .await;
    let mut resumed = resumed.map_err(|e| format!("resume: {e}"))?;
    ensure(resumed.history() == replayed.messages.as_slice(), || "resumed history".to_owned())?;
    resumed.run("again", &mut Vec::new()).await.map_err(|e| format!("resumed run: {e}"))?;
    Ok(())
}

#[tokio::test]
async fn invariant_15_a_failed_record_at_any_position_leaves_a_resumable_session() -> TestResult {
    let mut broken = Vec::new();
    for sequential in [false, true] {
        let clean = FailAt::new(usize::MAX);
        let mut session = builder(two_batch_model(), sequential).journal(clean.clone()).build().await?;
        session.run("go", &mut Vec::new()).await?;
        let total = clean.records().len();
        assert_eq!(total, 12, "{:?}", clean.records());

        let failed_build = builder(two_batch_model(), sequential).journal(FailAt::new(0)).build().await;
        assert!(matches!(failed_build, Err(BuildError::Journal(_))), "{failed_build:?}");

        for fail_at in 1..total {
            if let Err(what) = failure_at(sequential, fail_at).await {
                broken.push(format!("sequential {sequential}, failure at record {fail_at}: {what}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    Ok(())
}

/// A model that fails its first round: the turn rolls back (invariant 12).
fn failing_then(answer: &str) -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("partial").error(ModelError::Network("reset".into())))
        .answer(answer)
}

#[tokio::test]
async fn invariant_21_a_rolled_back_turn_keeps_the_prompt_live_and_after_resume() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .answer("first answer")
        .reply(Reply::new().text("partial").error(ModelError::Network("reset".into())));
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    session.run("first", &mut Vec::new()).await?;
    let error = session.run("fix the test", &mut Vec::new()).await.err().ok_or("the turn succeeded")?;
    assert_eq!(error.disposition, Disposition::RolledBack);
    assert_eq!(session.history().len(), 2, "the rolled-back turn left no trace in history");
    assert_eq!(session.interrupted_prompt(), Some(&Message::user("fix the test")));

    // After resume the prompt is there to send again.
    let model = ScriptedModel::new().answer("fixed");
    let mut resumed = Session::builder(model.clone()).resume(journal.clone()).await?;
    assert_eq!(resumed.history(), session.history());
    let prompt = resumed.interrupted_prompt().cloned().ok_or("the prompt was lost on resume")?;
    assert_eq!(prompt, Message::user("fix the test"));
    resumed.run(prompt, &mut Vec::new()).await?;
    assert_eq!(model.requests()[0].messages.last(), Some(&Message::user("fix the test")));
    // A turn that entered history clears it.
    assert_eq!(resumed.interrupted_prompt(), None);
    let again = Session::builder(ScriptedModel::new()).resume(journal).await?;
    assert_eq!(again.interrupted_prompt(), None);
    Ok(())
}

#[tokio::test]
async fn invariant_21_the_prompt_survives_a_roll_back_after_refused_calls_and_without_a_journal() -> TestResult
{
    // Refused calls (an unknown tool) are committed, then the model fails:
    // no call ran, so the turn rolls back, and its prompt is kept.
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .tool_call("nope", json!({}))
        .reply(Reply::new().error(ModelError::Network("reset".into())));
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    let error = session.run("try it", &mut Vec::new()).await.err().ok_or("the turn succeeded")?;
    assert_eq!(error.disposition, Disposition::RolledBack);
    assert!(session.history().is_empty());
    assert_eq!(session.interrupted_prompt(), Some(&Message::user("try it")));
    let resumed = Session::builder(ScriptedModel::new()).resume(journal).await?;
    assert_eq!(resumed.interrupted_prompt(), Some(&Message::user("try it")));

    let mut session = Session::builder(failing_then("ok")).build().await?;
    session.run("no journal", &mut Vec::new()).await.err().ok_or("the turn succeeded")?;
    assert_eq!(session.interrupted_prompt(), Some(&Message::user("no journal")));
    session.run("next", &mut Vec::new()).await?;
    assert_eq!(session.interrupted_prompt(), None);
    Ok(())
}
