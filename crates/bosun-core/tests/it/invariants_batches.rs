//! Invariants 11–14: complete ordered batches, roll back or checkpoint,
//! cancellation, a failing sink.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bosun_core::{
    CancellationPolicy, Disposition, Event, InMemoryJournal, JournalRecord, ModelError, Session,
    ToolCategory, ToolOutput, TurnErrorKind, TurnOptions, TurnRecordOutcome, validate_history,
};
use bosun_testing::{FailingSink, FnTool, RecordingApprover, Reply, ScriptedModel};
use common::{TestResult, tool_result};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn sleeper(name: &str, millis: u64) -> FnTool {
    let answer = name.to_owned();
    FnTool::new(name, ToolCategory::Read, move |_, _| {
        let answer = answer.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            ToolOutput::text(answer)
        })
    })
}

fn committed(journal: &InMemoryJournal) -> Vec<Vec<bosun_core::Message>> {
    journal
        .records()
        .into_iter()
        .filter_map(|r| match r {
            JournalRecord::Committed { messages, .. } => Some(messages),
            _ => None,
        })
        .collect()
}

fn turn_end(journal: &InMemoryJournal) -> Option<TurnRecordOutcome> {
    journal.records().into_iter().rev().find_map(|r| match r {
        JournalRecord::TurnEnded { outcome, .. } => Some(outcome),
        _ => None,
    })
}

#[tokio::test(start_paused = true)]
async fn invariant_11_parallel_calls_commit_as_one_batch_in_call_order() -> TestResult {
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("slow", json!({}))
                .tool_call("fast", json!({}))
                .tool_call("mid", json!({})),
        )
        .answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(sleeper("slow", 30))
        .tool(sleeper("fast", 10))
        .tool(sleeper("mid", 20))
        .journal(journal.clone())
        .build()
        .await?;
    let started = tokio::time::Instant::now();
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    assert_eq!(started.elapsed(), Duration::from_millis(30), "calls ran in parallel");
    let finished_order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolEnd { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished_order, ["fast", "mid", "slow"], "they finished out of order");
    let batches = committed(&journal);
    assert_eq!(batches.len(), 2, "one batch, one answer");
    let texts: Vec<String> = batches[0].iter().skip(1).map(|m| m.text()).collect();
    assert_eq!(texts, ["slow", "fast", "mid"], "committed in call order");
    assert_eq!(&session.history()[1..5], batches[0].as_slice());
    validate_history(session.history())?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_11_sequential_mode_runs_calls_one_after_another() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("slow", json!({})).tool_call("fast", json!({})))
        .answer("done");
    let mut session = Session::builder(model)
        .tool(sleeper("slow", 30))
        .tool(sleeper("fast", 10))
        .sequential_tools()
        .build()
        .await?;
    let started = tokio::time::Instant::now();
    session.run("go", &mut Vec::new()).await?;
    assert_eq!(started.elapsed(), Duration::from_millis(40));
    Ok(())
}

#[tokio::test]
async fn invariant_12_failure_before_any_effect_rolls_back() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .answer("first")
        .reply(Reply::new().text("half an ans").error(ModelError::Server("overloaded".into())));
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    session.run("one", &mut Vec::new()).await?;
    let before = session.history().to_vec();
    let err = session.run("two", &mut Vec::new()).await.unwrap_err();
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert_eq!(session.history(), before.as_slice());
    assert_eq!(turn_end(&journal), Some(TurnRecordOutcome::RolledBack));
    assert_eq!(session.turns(), 2);
    Ok(())
}

#[tokio::test]
async fn invariant_12_failure_after_an_effect_checkpoints_every_call() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("read", json!({})).tool_call("write", json!({})))
        .reply(Reply::new().error(ModelError::Network("reset".into())));
    let mut session = Session::builder(model)
        .tool(FnTool::echo("read"))
        .tool(common::write_tool("write"))
        .journal(journal.clone())
        .build()
        .await?;
    let err = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert_eq!(err.disposition, Disposition::Checkpointed);
    assert_eq!(session.history().len(), 4, "user, assistant, two results");
    validate_history(session.history())?;
    assert!(
        tool_result(session.history(), 1).0.contains("no approver"),
        "the refused call has its result too"
    );
    assert_eq!(turn_end(&journal), Some(TurnRecordOutcome::Checkpointed));
    Ok(())
}

#[tokio::test]
async fn invariant_12_round_limit_after_effects_keeps_the_checkpoint() -> TestResult {
    let model = ScriptedModel::new().tool_call("read", json!({})).tool_call("read", json!({}));
    let mut session = Session::builder(model).tool(FnTool::echo("read")).max_rounds(2).build().await?;
    let err = session.run("loop", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::RoundLimit(2)), "{err}");
    assert_eq!(err.disposition, Disposition::Checkpointed);
    assert_eq!(session.history().len(), 5);
    Ok(())
}

#[tokio::test]
async fn invariant_12_refused_calls_alone_do_not_prevent_roll_back() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new()
        .tool_call("write", json!({}))
        .reply(Reply::new().error(ModelError::Server("boom".into())));
    let mut session =
        Session::builder(model).tool(common::write_tool("write")).journal(journal.clone()).build().await?;
    let err = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(session.history().is_empty());
    // The journal agrees: a replay gives the same empty history.
    let resumed =
        Session::builder(ScriptedModel::new()).tool(common::write_tool("write")).resume(journal).await?;
    assert!(resumed.history().is_empty());
    Ok(())
}

/// A tool that cancels the turn itself, then finishes.
fn canceller(token: &CancellationToken) -> FnTool {
    let token = token.clone();
    FnTool::new("cancel", ToolCategory::Read, move |_, _| {
        let token = token.clone();
        Box::pin(async move {
            token.cancel();
            ToolOutput::text("cancelled the turn and finished")
        })
    })
}

#[tokio::test]
async fn invariant_12_cancel_mid_batch_gives_unstarted_calls_a_not_run_result() -> TestResult {
    let token = CancellationToken::new();
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("cancel", json!({})).tool_call("write", json!({})))
        .answer("never");
    let write = common::write_tool("write");
    let mut session = Session::builder(model.clone())
        .tool(canceller(&token))
        .tool(write.clone())
        .approver(RecordingApprover::approve_all())
        .sequential_tools()
        .build()
        .await?;
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled));
    assert_eq!(err.disposition, Disposition::Checkpointed);
    assert_eq!(tool_result(session.history(), 0), ("cancelled the turn and finished".into(), false));
    let (text, is_error) = tool_result(session.history(), 1);
    assert!(is_error && text.starts_with("not run"), "{text}");
    assert!(write.calls().is_empty());
    assert_eq!(model.remaining(), 1, "no model round after the cancellation");
    Ok(())
}

#[tokio::test]
async fn invariant_13_cancel_stops_model_generation_and_rolls_back() -> TestResult {
    let token = CancellationToken::new();
    let model = ScriptedModel::new().reply(Reply::new().text("thinking about").hang());
    let mut session = Session::builder(model).build().await?;
    let trigger = token.clone();
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if matches!(event, Event::TextDelta { .. }) {
            trigger.cancel();
        }
        Ok(())
    });
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled), "{err}");
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_13_cancellation_wins_ties_cancelled_before_the_turn() -> TestResult {
    let token = CancellationToken::new();
    token.cancel();
    let model = ScriptedModel::new().answer("ready at once");
    let mut session = Session::builder(model).build().await?;
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled));
    assert!(session.history().is_empty());
    Ok(())
}

/// A model whose stream cancels the turn in the very poll that yields its
/// final response: the cancel and the response arrive together.
struct AnswersAndCancels {
    token: CancellationToken,
    response: bosun_core::ModelResponse,
}

impl bosun_core::Model for AnswersAndCancels {
    fn capabilities(&self) -> bosun_core::Capabilities {
        bosun_core::Capabilities::default()
    }

    fn stream<'a>(
        &'a self,
        _: bosun_core::ModelRequest<'a>,
        _: CancellationToken,
    ) -> bosun_core::ModelStream<'a> {
        let token = self.token.clone();
        let response = self.response.clone();
        Box::pin(futures_util::stream::once(async move {
            token.cancel();
            Ok(bosun_core::ModelEvent::Done(response))
        }))
    }
}

#[tokio::test]
async fn invariant_13_cancellation_wins_a_tie_with_the_final_response() -> TestResult {
    use bosun_core::{ModelResponse, ResponsePart, StopReason, Usage};
    let answer = ModelResponse::new(vec![ResponsePart::text("answered")], Usage::default(), StopReason::Stop);
    let call = ModelResponse::new(
        vec![ResponsePart::tool_call("c1", "write", json!({}))],
        Usage::default(),
        StopReason::ToolUse,
    );
    for response in [answer, call] {
        let token = CancellationToken::new();
        let model = AnswersAndCancels { token: token.clone(), response };
        let write = common::write_tool("write");
        let journal = InMemoryJournal::new();
        let mut session = Session::builder(model)
            .tool(write.clone())
            .approver(RecordingApprover::approve_all())
            .journal(journal.clone())
            .build()
            .await?;
        let err = session.run_with("go", TurnOptions::cancel_on(token), &mut Vec::new()).await.unwrap_err();
        assert!(matches!(err.kind, TurnErrorKind::Cancelled), "{err}");
        assert_eq!(err.disposition, Disposition::RolledBack);
        assert!(session.history().is_empty(), "the response that came with the cancel is not committed");
        assert!(write.calls().is_empty());
        assert!(committed(&journal).is_empty());
    }
    Ok(())
}

/// The sink cancels on the text delta; the final response is ready in the
/// same poll of the turn loop as the cancel.
#[tokio::test]
async fn invariant_13_cancellation_wins_a_tie_with_a_model_chunk() -> TestResult {
    let token = CancellationToken::new();
    let model = ScriptedModel::new().reply(Reply::new().text("ans").final_text("answer"));
    let mut session = Session::builder(model.clone()).build().await?;
    let trigger = token.clone();
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if matches!(event, Event::TextDelta { .. }) {
            trigger.cancel();
        }
        Ok(())
    });
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled), "{err}");
    assert!(session.history().is_empty());
    Ok(())
}

/// A tool cancels the turn and returns its result in the same poll, while a
/// second call's result is ready too: both results are kept (they ran), and
/// no further model round starts.
#[tokio::test]
async fn invariant_13_cancellation_wins_a_tie_with_tool_results() -> TestResult {
    let token = CancellationToken::new();
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("cancel", json!({})).tool_call("read", json!({})))
        .answer("never");
    let read = FnTool::echo("read");
    let mut session =
        Session::builder(model.clone()).tool(canceller(&token)).tool(read.clone()).build().await?;
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled), "{err}");
    assert_eq!(err.disposition, Disposition::Checkpointed);
    assert_eq!(tool_result(session.history(), 0), ("cancelled the turn and finished".into(), false));
    assert_eq!(read.calls().len(), 1);
    assert_eq!(model.remaining(), 1, "no model round after the cancellation");
    Ok(())
}

/// The approver cancels the turn and approves in the same poll: the call
/// does not run.
#[tokio::test]
async fn invariant_13_cancellation_wins_a_tie_with_an_approval() -> TestResult {
    struct ApprovesAndCancels(CancellationToken);
    impl bosun_core::ApprovalHandler for ApprovesAndCancels {
        fn decide<'a>(
            &'a self,
            _: &'a bosun_core::ApprovalRequest,
        ) -> bosun_core::permission::ApprovalFuture<'a> {
            self.0.cancel();
            Box::pin(std::future::ready(bosun_core::ApprovalDecision::ApproveOnce))
        }
    }
    let token = CancellationToken::new();
    let model = ScriptedModel::new().tool_call("write", json!({})).answer("never");
    let write = common::write_tool("write");
    let mut session = Session::builder(model)
        .tool(write.clone())
        .approver(ApprovesAndCancels(token.clone()))
        .build()
        .await?;
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled), "{err}");
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(write.calls().is_empty(), "an approval that came with the cancel runs nothing");
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_13_cancel_drops_interruptible_calls_and_awaits_the_rest() -> TestResult {
    let token = CancellationToken::new();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let stuck = FnTool::new("stuck", ToolCategory::Read, move |_, _| {
        let guard = SetOnDrop(Arc::clone(&flag));
        Box::pin(async move {
            let _guard = guard;
            std::future::pending::<ToolOutput>().await
        })
    })
    .cancellation(CancellationPolicy::Interruptible);
    // Must not be cut off: it finishes its atomic step after the cancel.
    let atomic = FnTool::new("atomic", ToolCategory::Read, |_, context| {
        Box::pin(async move {
            context.cancel.cancelled().await;
            tokio::task::yield_now().await;
            ToolOutput::text("renamed into place")
        })
    });
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("stuck", json!({})).tool_call("atomic", json!({})))
        .answer("never");
    let mut session = Session::builder(model).tool(stuck).tool(atomic.clone()).build().await?;
    let trigger = token.clone();
    let mut starts = 0;
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if matches!(event, Event::ToolStart { .. }) {
            starts += 1;
            if starts == 2 {
                trigger.cancel();
            }
        }
        Ok(())
    });
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled));
    assert_eq!(err.disposition, Disposition::Checkpointed);
    assert!(dropped.load(Ordering::SeqCst), "the interruptible call was dropped before run returned");
    assert_eq!(atomic.finished(), 1, "the finish-once-started call completed before run returned");
    assert_eq!(tool_result(session.history(), 0).0, bosun_core::results::CANCELLED);
    assert_eq!(tool_result(session.history(), 1), ("renamed into place".into(), false));
    Ok(())
}

#[tokio::test]
async fn invariant_13_cancel_while_awaiting_approval_rolls_back() -> TestResult {
    let token = CancellationToken::new();
    let model = ScriptedModel::new().tool_call("write", json!({})).answer("never");
    let write = common::write_tool("write");
    let mut session =
        Session::builder(model).tool(write.clone()).approver(RecordingApprover::never()).build().await?;
    let trigger = token.clone();
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if matches!(event, Event::ApprovalRequested { .. }) {
            trigger.cancel();
        }
        Ok(())
    });
    let err = session.run_with("go", TurnOptions::cancel_on(token), &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Cancelled));
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(write.calls().is_empty() && session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_14_failing_sink_cancels_the_turn_and_commits_nothing() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().answer("first").reply(Reply::new().text("streaming…").hang());
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    session.run("one", &mut Vec::new()).await?;
    let before = session.history().to_vec();
    let mut sink = FailingSink::when(|e| matches!(e, Event::TextDelta { .. }));
    // The model would hang forever: only the sink's failure ends the turn.
    let err = session.run("two", &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Sink(_)), "{err}");
    assert!(err.is_cancelled());
    assert_eq!(session.history(), before.as_slice());
    assert_eq!(committed(&journal).len(), 1, "nothing new was committed");
    assert_eq!(turn_end(&journal), Some(TurnRecordOutcome::RolledBack));
    Ok(())
}

#[tokio::test]
async fn invariant_14_failing_sink_during_tools_keeps_a_complete_checkpoint() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("slow", json!({})).tool_call("read", json!({})))
        .answer("never");
    let slow = FnTool::until_cancelled("slow", ToolCategory::Read);
    let mut session = Session::builder(model).tool(slow).tool(FnTool::echo("read")).build().await?;
    let mut sink = FailingSink::when(|e| matches!(e, Event::ToolEnd { .. }));
    let err = session.run("go", &mut sink).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Sink(_)), "{err}");
    assert_eq!(err.disposition, Disposition::Checkpointed);
    validate_history(session.history())?;
    assert_eq!(session.history().len(), 4);
    Ok(())
}

#[tokio::test]
async fn panicking_tool_becomes_an_error_result_with_its_message() -> TestResult {
    let model = ScriptedModel::new().tool_call("boom", json!({})).answer("recovered");
    let mut session = Session::builder(model).tool(FnTool::panicking("boom", "disk on fire")).build().await?;
    let outcome = session.run("go", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "recovered");
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert_eq!(text, "the tool panicked: disk on fire");
    Ok(())
}
