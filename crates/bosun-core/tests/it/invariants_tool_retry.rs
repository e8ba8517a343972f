//! Invariant 8's retries: a tool that declares itself idempotent has its
//! transient failures run again with a doubling delay, each attempt
//! journaled before it starts; any other failure, or any other tool, runs
//! once. Time is paused, so the delays are real waits measured exactly.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bosun_core::{
    CancellationPolicy, Event, EventSink, InMemoryJournal, JournalRecord, RetryPolicy, Session, SinkError,
    ToolCategory, ToolOutput, TurnOptions, validate_history,
};
use bosun_testing::{FnTool, ScriptedModel};
use common::{TestResult, tool_result};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A read tool whose first `failures` calls fail transiently (or
/// permanently), then succeed.
fn flaky(failures: u32, transient: bool) -> FnTool {
    let calls = Arc::new(AtomicU32::new(0));
    FnTool::new("fetch", ToolCategory::Read, move |_, _| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move {
            match (n <= failures, transient) {
                (true, true) => ToolOutput::transient(format!("busy (attempt {n})")),
                (true, false) => ToolOutput::error(format!("no such page (attempt {n})")),
                (false, _) => ToolOutput::text(format!("page (attempt {n})")),
            }
        })
    })
}

fn attempts(journal: &InMemoryJournal) -> Vec<u32> {
    journal
        .records()
        .into_iter()
        .filter_map(|r| match r {
            JournalRecord::InvocationStarted { attempt, .. } => Some(attempt),
            _ => None,
        })
        .collect()
}

fn retries(events: &[Event]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolRetry { attempt, delay_ms, error, .. } => Some((*attempt, *delay_ms, error.clone())),
            _ => None,
        })
        .collect()
}

async fn run_one(
    tool: FnTool,
    journal: &InMemoryJournal,
) -> Result<(Session, Vec<Event>, Duration), TestResult> {
    let model = ScriptedModel::new().tool_call("fetch", json!({"url": "u"})).answer("done");
    let mut session = Session::builder(model)
        .tool(tool)
        .journal(journal.clone())
        .build()
        .await
        .map_err(|e| Err(e.into()))?;
    let mut events = Vec::new();
    let started = tokio::time::Instant::now();
    session.run("get it", &mut events).await.map_err(|e| Err(e.into()))?;
    Ok((session, events, started.elapsed()))
}

#[tokio::test(start_paused = true)]
async fn invariant_08_idempotent_tool_retries_transient_failures_with_backoff() -> TestResult {
    let journal = InMemoryJournal::new();
    let tool = flaky(2, true).retry(RetryPolicy::Idempotent { attempts: 3 });
    let Ok((session, events, elapsed)) = run_one(tool.clone(), &journal).await else {
        return Err("the turn failed".into());
    };
    assert_eq!(tool.calls().len(), 3, "two failures, then the success");
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(!is_error);
    assert_eq!(text, "page (attempt 3)", "only the last attempt's result enters history");
    assert_eq!(attempts(&journal), [1, 2, 3], "each attempt journaled before it starts");
    let first = RetryPolicy::FIRST_DELAY;
    assert_eq!(
        retries(&events),
        [
            (2, first.as_millis() as u64, "busy (attempt 1)".to_owned()),
            (3, 2 * first.as_millis() as u64, "busy (attempt 2)".to_owned()),
        ]
    );
    assert_eq!(elapsed, first * 3, "the waits were real: 500 ms, then 1 s");
    // One start and one end for the call, however many attempts.
    let starts = events.iter().filter(|e| matches!(e, Event::ToolStart { .. })).count();
    let ends = events.iter().filter(|e| matches!(e, Event::ToolEnd { .. })).count();
    assert_eq!((starts, ends), (1, 1));
    // The journal with retries replays to the same history.
    let resumed = Session::builder(ScriptedModel::new()).tool(tool).resume(journal).await?;
    assert_eq!(resumed.history(), session.history());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_08_tools_are_never_retried_unless_idempotent() -> TestResult {
    let journal = InMemoryJournal::new();
    let tool = flaky(1, true);
    let Ok((session, events, elapsed)) = run_one(tool.clone(), &journal).await else {
        return Err("the turn failed".into());
    };
    assert_eq!(tool.calls().len(), 1);
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert_eq!(text, "busy (attempt 1)");
    assert_eq!(attempts(&journal), [1]);
    assert!(retries(&events).is_empty());
    assert_eq!(elapsed, Duration::ZERO);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_08_a_permanent_failure_is_not_retried() -> TestResult {
    let journal = InMemoryJournal::new();
    let tool = flaky(1, false).retry(RetryPolicy::Idempotent { attempts: 3 });
    let Ok((session, _, _)) = run_one(tool.clone(), &journal).await else {
        return Err("the turn failed".into());
    };
    assert_eq!(tool.calls().len(), 1);
    assert_eq!(tool_result(session.history(), 0), ("no such page (attempt 1)".to_owned(), true));
    assert_eq!(attempts(&journal), [1]);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_08_retries_stop_at_the_declared_attempts_and_the_hard_maximum() -> TestResult {
    for (declared, expected) in [(2, 2), (50, RetryPolicy::MAX_ATTEMPTS)] {
        let journal = InMemoryJournal::new();
        let tool = flaky(u32::MAX, true).retry(RetryPolicy::Idempotent { attempts: declared });
        let Ok((session, _, _)) = run_one(tool.clone(), &journal).await else {
            return Err("the turn failed".into());
        };
        assert_eq!(tool.calls().len(), expected as usize, "declared {declared}");
        let (text, is_error) = tool_result(session.history(), 0);
        assert!(is_error);
        assert_eq!(text, format!("busy (attempt {expected})"), "the last failure is the result");
        assert_eq!(attempts(&journal), (1..=expected).collect::<Vec<_>>());
    }
    Ok(())
}

/// An idempotent, interruptible tool that overruns its timeout is run again:
/// the attempt that timed out was dropped, so the next cannot overlap it.
#[tokio::test(start_paused = true)]
async fn invariant_08_a_timed_out_idempotent_call_is_retried() -> TestResult {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let tool = FnTool::new("fetch", ToolCategory::Read, move |_, _| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move {
            if n == 1 {
                std::future::pending::<()>().await;
            }
            ToolOutput::text("fast this time")
        })
    })
    .cancellation(CancellationPolicy::Interruptible)
    .retry(RetryPolicy::Idempotent { attempts: 2 });
    let model = ScriptedModel::new().tool_call("fetch", json!({})).answer("done");
    let mut session = Session::builder(model).tool(tool).tool_timeout(Duration::from_secs(5)).build().await?;
    let mut events = Vec::new();
    session.run("get it", &mut events).await?;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(tool_result(session.history(), 0), ("fast this time".to_owned(), false));
    let retried = retries(&events);
    assert_eq!(retried.len(), 1);
    assert!(retried[0].2.contains("timed out"), "{retried:?}");
    Ok(())
}

/// Cancels the turn when it sees the first `tool_retry`, so the cancel lands
/// inside the wait before attempt 2.
struct CancelOnRetry {
    token: CancellationToken,
    events: Vec<Event>,
}

impl EventSink for CancelOnRetry {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if matches!(event, Event::ToolRetry { .. }) {
            self.token.cancel();
        }
        self.events.push(event);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn invariant_08_cancelling_during_the_wait_ends_the_call_with_its_failure() -> TestResult {
    for parallel in [true, false] {
        let journal = InMemoryJournal::new();
        let tool = flaky(u32::MAX, true).retry(RetryPolicy::Idempotent { attempts: 5 });
        let model = ScriptedModel::new().tool_call("fetch", json!({})).answer("never");
        let mut builder = Session::builder(model).tool(tool.clone()).journal(journal.clone());
        if !parallel {
            builder = builder.sequential_tools();
        }
        let mut session = builder.build().await?;
        let token = CancellationToken::new();
        let mut sink = CancelOnRetry { token: token.clone(), events: Vec::new() };
        let started = tokio::time::Instant::now();
        let error = session.run_with("get it", TurnOptions::cancel_on(token), &mut sink).await.unwrap_err();
        assert!(error.is_cancelled(), "{error}");
        assert_eq!(started.elapsed(), Duration::ZERO, "the wait was cut short (parallel: {parallel})");
        assert_eq!(tool.calls().len(), 1, "no attempt after the cancel (parallel: {parallel})");
        assert_eq!(attempts(&journal), [1]);
        let (text, is_error) = tool_result(session.history(), 0);
        assert_eq!((text.as_str(), is_error), ("busy (attempt 1)", true));
        validate_history(session.history())?;
    }
    Ok(())
}

/// A crash during attempt 2 resumes like any started call: reported
/// interrupted, never run a third time by the resume.
#[tokio::test(start_paused = true)]
async fn invariant_08_a_crash_during_a_retry_is_reported_interrupted() -> TestResult {
    let journal = InMemoryJournal::new();
    let calls = Arc::new(AtomicU32::new(0));
    let second = Arc::new(Notify::new());
    let (counter, signal) = (Arc::clone(&calls), Arc::clone(&second));
    let tool = FnTool::new("fetch", ToolCategory::Read, move |_, _| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let signal = Arc::clone(&signal);
        Box::pin(async move {
            if n == 1 {
                return ToolOutput::transient("busy");
            }
            signal.notify_one();
            std::future::pending().await
        })
    })
    .retry(RetryPolicy::Idempotent { attempts: 3 });
    let model = ScriptedModel::new().tool_call("fetch", json!({})).answer("never");
    let mut session = Session::builder(model).tool(tool.clone()).journal(journal.clone()).build().await?;
    let mut events = Vec::new();
    {
        let run = session.run("get it", &mut events);
        tokio::select! {
            _ = run => return Err("the turn cannot finish while attempt 2 hangs".into()),
            () = second.notified() => {}
        }
    }
    drop(session);
    assert_eq!(attempts(&journal), [1, 2]);
    let resumed = Session::builder(ScriptedModel::new()).tool(tool).resume(journal).await?;
    let (text, is_error) = tool_result(resumed.history(), 0);
    assert!(is_error);
    assert_eq!(text, bosun_core::results::INTERRUPTED_RESULT);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the resume ran nothing");
    Ok(())
}

/// Replay takes attempts only in order: a journal missing attempt 2 is
/// refused, as is a second attempt 1.
#[tokio::test(start_paused = true)]
async fn invariant_08_attempts_replay_only_in_order() -> TestResult {
    let journal = InMemoryJournal::new();
    let tool = flaky(2, true).retry(RetryPolicy::Idempotent { attempts: 3 });
    if run_one(tool.clone(), &journal).await.is_err() {
        return Err("the turn failed".into());
    }
    let records = journal.records();
    let second = |r: &JournalRecord| matches!(r, JournalRecord::InvocationStarted { attempt: 2, .. });
    let Some(at) = records.iter().position(second) else { return Err("no attempt 2".into()) };
    let mut gap = records.clone();
    gap.remove(at);
    let mut repeat = records.clone();
    if let JournalRecord::InvocationStarted { attempt, .. } = &mut repeat[at] {
        *attempt = 1;
    }
    for broken in [gap, repeat] {
        let resumed = Session::builder(ScriptedModel::new())
            .tool(tool.clone())
            .resume(InMemoryJournal::from_records(broken))
            .await;
        assert!(matches!(resumed, Err(bosun_core::BuildError::Replay(_))), "{resumed:?}");
    }
    Ok(())
}
