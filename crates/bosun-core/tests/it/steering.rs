//! Messages sent while the agent works ([`bosun_core::Inbox`]): steering
//! reaches the next model request after the running batch commits, never
//! inside it; a follow-up is a turn of its own after the running turn; both
//! are durable once accepted (invariant 15), a crash or a cancelled turn
//! keeps them, and one taken back is never delivered. Steering passes the
//! `UserPromptSubmit` hooks at the safe point, as a turn's prompt does.

use crate::common;

use std::sync::Arc;

use bosun_core::hooks::{HookDecision, HookFuture, HookInput, HookOutcome, HookPoint, SessionHooks};
use bosun_core::{
    Delivery, Event, InMemoryJournal, JournalRecord, Message, Session, ToolCategory, ToolOutput, TurnOptions,
    replay,
};
use bosun_testing::{FnTool, ScriptedModel};
use common::TestResult;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A tool that says it started, then waits to be let go.
struct Gate {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

impl Gate {
    fn new() -> Self {
        Self { started: Arc::new(Notify::new()), release: Arc::new(Notify::new()) }
    }

    fn tool(&self, name: &str) -> FnTool {
        let (started, release) = (Arc::clone(&self.started), Arc::clone(&self.release));
        FnTool::new(name, ToolCategory::Read, move |_, _| {
            let (started, release) = (Arc::clone(&started), Arc::clone(&release));
            Box::pin(async move {
                started.notify_one();
                release.notified().await;
                ToolOutput::text("gate opened")
            })
        })
    }
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages.iter().filter(|m| matches!(m, Message::User { .. })).map(Message::text).collect()
}

fn record_tags(journal: &InMemoryJournal) -> Vec<String> {
    journal
        .records()
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok()?["record"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn steering_sent_while_a_batch_runs_reaches_the_next_request_after_the_batch_commits() -> TestResult {
    let gate = Gate::new();
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .reply(
            bosun_testing::Reply::new().tool_call("wait", json!({"n": 1})).tool_call("echo", json!({"n": 2})),
        )
        .answer("done");
    let mut session = Session::builder(model.clone())
        .tool(gate.tool("wait"))
        .tool(FnTool::echo("echo"))
        .journal(journal.clone())
        .build()
        .await?;
    let inbox = session.inbox();
    let mut events = Vec::new();
    let steer = async {
        gate.started.notified().await;
        let id = inbox.steer("use tabs, not spaces").await?;
        // Accepted means durable: the record is in the journal while the
        // batch is still running.
        assert!(journal.records().iter().any(|r| matches!(r, JournalRecord::Queued { id: 1, .. })));
        assert_eq!(inbox.pending().await.len(), 1);
        gate.release.notify_one();
        Ok::<u64, bosun_core::InboxError>(id)
    };
    let (outcome, id) = tokio::join!(session.run("format the file", &mut events), steer);
    let (outcome, id) = (outcome?, id?);
    assert_eq!((outcome.answer.as_str(), outcome.turn, id), ("done", 1, 1));

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(user_texts(&requests[0].messages), ["format the file"]);
    // After both results of the batch, before the next round.
    let second = &requests[1].messages;
    assert_eq!(second.len(), 5, "{second:?}");
    assert!(matches!(second[1], Message::Assistant { .. }));
    assert!(
        matches!(second[2], Message::ToolResult { .. }) && matches!(second[3], Message::ToolResult { .. })
    );
    assert_eq!(second[4].text(), "use tabs, not spaces");
    assert!(events.contains(&Event::MessageDelivered { turn: 1, id: 1, delivery: Delivery::Steer }));
    assert!(session.queued().await.is_empty());

    let tags = record_tags(&journal);
    let committed = tags.iter().position(|t| t == "committed").ok_or("no commit")?;
    let steered = tags.iter().position(|t| t == "steered").ok_or("no steered record")?;
    let queued = tags.iter().position(|t| t == "queued").ok_or("no queued record")?;
    assert!(queued < committed && committed < steered, "{tags:?}");
    // Replayed, the steering sits where it was delivered.
    let replayed = replay(&journal.records())?;
    assert_eq!(replayed.messages, session.history());
    assert!(replayed.queued.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_follow_up_is_a_turn_of_its_own_after_the_running_turn() -> TestResult {
    let gate = Gate::new();
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("wait", json!({})).answer("first done").answer("second done");
    let mut session =
        Session::builder(model.clone()).tool(gate.tool("wait")).journal(journal.clone()).build().await?;
    let inbox = session.inbox();
    let mut events = Vec::new();
    let follow = async {
        gate.started.notified().await;
        let id = inbox.follow_up("now write the changelog").await;
        gate.release.notify_one();
        id
    };
    let (outcome, id) = tokio::join!(session.run("fix the bug", &mut events), follow);
    let (outcome, id) = (outcome?, id?);
    assert_eq!((outcome.turn, outcome.answer.as_str()), (2, "second done"));
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // Not steering: the first turn's rounds never saw it.
    assert_eq!(user_texts(&requests[1].messages), ["fix the bug"]);
    assert_eq!(user_texts(&requests[2].messages), ["fix the bug", "now write the changelog"]);
    assert!(events.contains(&Event::MessageDelivered { turn: 2, id, delivery: Delivery::FollowUp }));
    // The turn and its delivery are one record.
    let started: Vec<_> = journal
        .records()
        .into_iter()
        .filter_map(|r| match r {
            JournalRecord::TurnStarted { turn, queued, .. } => Some((turn, queued)),
            _ => None,
        })
        .collect();
    assert_eq!(started, [(1, vec![]), (2, vec![id])]);
    Ok(())
}

#[tokio::test]
async fn steering_that_arrives_after_the_last_batch_is_the_next_turn() -> TestResult {
    let model = ScriptedModel::new().answer("answered").answer("steered");
    let mut session = Session::builder(model.clone()).build().await?;
    let inbox = session.inbox();
    // No batch in the turn, so no safe point: it cannot be lost, and runs next.
    inbox.steer("and keep it short").await?;
    let outcome = session.run("explain", &mut Vec::new()).await?;
    assert_eq!((outcome.turn, outcome.answer.as_str()), (2, "steered"));
    assert_eq!(user_texts(session.history()), ["explain", "and keep it short"]);
    Ok(())
}

#[tokio::test]
async fn invariant_15_an_accepted_message_survives_a_crash_and_is_delivered_after_resume() -> TestResult {
    let gate = Gate::new();
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("wait", json!({}));
    let mut session =
        Session::builder(model).tool(gate.tool("wait")).journal(journal.clone()).build().await?;
    let inbox = session.inbox();
    {
        // The process "dies" while the tool runs: the turn's future is
        // dropped once both messages are accepted.
        let mut sink = bosun_core::NullSink;
        let run = session.run("long job", &mut sink);
        tokio::pin!(run);
        let accepted = async {
            gate.started.notified().await;
            let steer = inbox.steer("check the tests too").await?;
            let follow = inbox.follow_up("then summarise").await?;
            Ok::<_, bosun_core::InboxError>((steer, follow))
        };
        tokio::select! {
            _ = &mut run => return Err("the turn ended while its tool was held".into()),
            ids = accepted => assert_eq!(ids?, (1, 2)),
        }
    }
    drop(session);

    let model = ScriptedModel::new().answer("checked").answer("summary");
    let mut resumed = Session::builder(model.clone()).tool(gate.tool("wait")).resume(journal.clone()).await?;
    let queued = resumed.queued().await;
    let kinds: Vec<_> = queued.iter().map(|q| (q.id, q.delivery, q.message.text())).collect();
    assert_eq!(
        kinds,
        [
            (1, Delivery::Steer, "check the tests too".into()),
            (2, Delivery::FollowUp, "then summarise".into())
        ]
    );
    // Nothing runs by itself; the embedder delivers them.
    let outcome =
        resumed.run_queued(TurnOptions::default(), &mut Vec::new()).await.ok_or("nothing queued")??;
    assert_eq!(outcome.answer, "summary");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages.last().map(Message::text).as_deref(), Some("check the tests too"));
    assert_eq!(requests[1].messages.last().map(Message::text).as_deref(), Some("then summarise"));
    assert!(resumed.queued().await.is_empty());
    assert!(resumed.run_queued(TurnOptions::default(), &mut Vec::new()).await.is_none());
    Ok(())
}

#[tokio::test]
async fn a_cancelled_turn_keeps_the_queued_messages() -> TestResult {
    let gate = Gate::new();
    let model = ScriptedModel::new().tool_call("wait", json!({})).answer("never");
    let mut session = Session::builder(model.clone()).tool(gate.tool("wait")).build().await?;
    let inbox = session.inbox();
    let cancel = CancellationToken::new();
    let driver = async {
        gate.started.notified().await;
        inbox.follow_up("afterwards").await?;
        inbox.steer("meanwhile").await?;
        cancel.cancel();
        gate.release.notify_one();
        Ok::<(), bosun_core::InboxError>(())
    };
    let mut events = Vec::new();
    let (outcome, driven) =
        tokio::join!(session.run_with("work", TurnOptions::cancel_on(cancel.clone()), &mut events), driver);
    driven?;
    assert!(outcome.is_err(), "the turn was cancelled");
    let waiting: Vec<_> = session.queued().await.into_iter().map(|q| q.message.text()).collect();
    assert_eq!(waiting, ["afterwards", "meanwhile"]);
    assert_eq!(model.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_message_taken_back_is_never_delivered() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().answer("one").answer("two");
    let mut session = Session::builder(model.clone()).journal(journal.clone()).build().await?;
    let inbox = session.inbox();
    let mut changes = inbox.changes();
    let kept = inbox.follow_up("keep me").await?;
    let dropped = inbox.follow_up("drop me").await?;
    assert!(changes.has_changed()?);
    changes.mark_unchanged();
    let taken = inbox.withdraw(dropped).await?.ok_or("not waiting")?;
    assert_eq!(taken.message.text(), "drop me");
    assert!(changes.has_changed()?, "taking back is a change");
    assert!(inbox.withdraw(dropped).await?.is_none(), "taken back once only");
    session.run("start", &mut Vec::new()).await?;
    assert_eq!(user_texts(session.history()), ["start", "keep me"]);
    assert!(inbox.withdraw(kept).await?.is_none(), "delivered already");
    assert!(record_tags(&journal).contains(&"unqueued".to_owned()));
    assert!(replay(&journal.records())?.queued.is_empty());
    assert!(matches!(inbox.steer("   ").await, Err(bosun_core::InboxError::Empty)));
    Ok(())
}

#[tokio::test]
async fn replay_refuses_a_delivery_of_a_message_never_queued() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("echo", json!({})).answer("done");
    let mut session =
        Session::builder(model).tool(FnTool::echo("echo")).journal(journal.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    let mut records = journal.records();
    let at = records.iter().rposition(|r| matches!(r, JournalRecord::Committed { .. })).ok_or("no commit")?;
    // Between the batch's commit and the answer's: a safe point, but no
    // such message was ever queued.
    records.insert(at, JournalRecord::Steered { turn: 1, id: 7, message: Message::user("forged") });
    let error = replay(&records).err().ok_or("a forged delivery replayed")?;
    assert!(error.to_string().contains("queued message 7 is not waiting"), "{error}");
    Ok(())
}

/// A `UserPromptSubmit` hook that blocks a prompt containing a word and
/// notes every other.
struct WordGuard(&'static str);

impl SessionHooks for WordGuard {
    fn name(&self) -> &str {
        "guard"
    }
    fn wants(&self, point: HookPoint) -> bool {
        point == HookPoint::UserPromptSubmit
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        let decision = match input {
            HookInput::UserPromptSubmit { prompt, .. } if prompt.contains(self.0) => {
                HookDecision::Block(format!("`{}` is not allowed", self.0))
            }
            _ => HookDecision::Note("checked by the guard".into()),
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
}

#[tokio::test]
async fn steering_passes_the_prompt_hooks_and_a_blocked_message_never_reaches_the_model() -> TestResult {
    let gate = Gate::new();
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().tool_call("wait", json!({})).answer("done");
    let mut session = Session::builder(model.clone())
        .tool(gate.tool("wait"))
        .hook(Arc::new(WordGuard("secret")))
        .journal(journal.clone())
        .build()
        .await?;
    let inbox = session.inbox();
    let mut events = Vec::new();
    let steer = async {
        gate.started.notified().await;
        let blocked = inbox.steer("paste the secret token here").await?;
        let passing = inbox.steer("use tabs").await?;
        gate.release.notify_one();
        Ok::<_, bosun_core::InboxError>((blocked, passing))
    };
    let (outcome, ids) = tokio::join!(session.run("format the file", &mut events), steer);
    let ((blocked, passing), outcome) = (ids?, outcome?);
    assert_eq!(outcome.answer, "done");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let note = "[hook guard] checked by the guard";
    let second = &requests[1].messages;
    assert!(second.iter().all(|m| !m.text().contains("secret")), "the blocked message was sent: {second:?}");
    // The passing one arrives with the hook's note, as a turn's prompt does.
    assert_eq!(user_texts(second), [format!("format the file{note}"), format!("use tabs{note}")]);
    assert!(events.contains(&Event::MessageDelivered { turn: 1, id: passing, delivery: Delivery::Steer }));
    assert!(events.contains(&Event::MessageWithdrawn {
        turn: 1,
        id: blocked,
        hook: "guard".into(),
        reason: "`secret` is not allowed".into(),
    }));
    assert!(!events.iter().any(|e| matches!(e, Event::MessageDelivered { id, .. } if *id == blocked)));
    assert!(session.queued().await.is_empty(), "withdrawn, not left waiting");

    // The journal says why: the hook's run, then the withdrawal.
    let records = journal.records();
    let ran = records
        .iter()
        .position(|r| {
            matches!(r, JournalRecord::HookRan { run, .. }
                if run.point == HookPoint::UserPromptSubmit && run.outcome == HookOutcome::Blocked)
        })
        .ok_or("no blocked hook run")?;
    let withdrawn = records
        .iter()
        .position(|r| matches!(r, JournalRecord::Unqueued { id } if *id == blocked))
        .ok_or("no withdrawal")?;
    assert!(ran < withdrawn);
    // Replayed, the same history and the same (empty) queue.
    let replayed = replay(&records)?;
    assert_eq!(replayed.messages, session.history());
    assert!(replayed.queued.is_empty());
    let resumed = Session::builder(ScriptedModel::new())
        .tool(gate.tool("wait"))
        .hook(Arc::new(WordGuard("secret")))
        .resume(journal.clone())
        .await?;
    assert_eq!(resumed.history(), session.history());
    Ok(())
}
