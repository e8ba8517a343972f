//! Per-turn limits on tokens, wall time and cost: the turn stops cleanly at
//! a round boundary (or, for time, as a cancellation stops it), keeps what
//! its tools did as a checkpoint, and says which limit it hit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bosun_core::{
    Disposition, Event, Limits, Pricing, Session, ToolCategory, TurnErrorKind, Usage, turn_tokens,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// A model that calls `read` every round, each response using `usage`.
fn reading(rounds: usize, usage: Usage) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for _ in 0..rounds {
        model = model.reply(Reply::new().tool_call("read", json!({})).usage(usage));
    }
    model.answer("done")
}

fn read() -> FnTool {
    FnTool::text("read", ToolCategory::Read, |_| "text".into())
}

/// One millionth of a dollar per token of any kind.
struct MicroPerToken;

impl Pricing for MicroPerToken {
    fn cost_micros(&self, usage: &Usage) -> Option<u64> {
        Some(turn_tokens(usage))
    }
}

/// Prices nothing.
struct Unpriced;

impl Pricing for Unpriced {
    fn cost_micros(&self, _: &Usage) -> Option<u64> {
        None
    }
}

fn usage(input: u64, cache_read: u64, output: u64) -> Usage {
    let mut usage = Usage::new(input, output);
    usage.cache_read = cache_read;
    usage
}

#[tokio::test]
async fn a_turn_past_its_tokens_stops_before_the_next_round_keeping_its_batches() -> TestResult {
    let model = reading(5, usage(400, 100, 100));
    let mut session = Session::builder(model.clone()).tool(read()).max_turn_tokens(1_000).build().await?;
    let mut events = Vec::new();
    let error = session.run("go", &mut events).await.unwrap_err();
    // 600 after round 1 (under), 1200 after round 2: no third round.
    assert!(
        matches!(error.kind, TurnErrorKind::TokenLimit { limit: 1_000, spent: 1_200 }),
        "{:?}",
        error.kind
    );
    assert_eq!(error.disposition, Disposition::Checkpointed);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(session.history().len(), 5, "the prompt and both batches stay");
    assert_eq!(error.kind.to_string(), "the turn reached its limit of 1000 tokens (1200 spent)");
    let reported = events.iter().any(|e| matches!(e, Event::Error { kind, .. } if kind == "limit"));
    assert!(reported, "{events:?}");
    Ok(())
}

#[tokio::test]
async fn a_turn_past_its_cost_stops_and_an_unpriced_one_stops_saying_so() -> TestResult {
    let model = reading(5, usage(300, 0, 100));
    let mut session = Session::builder(model.clone())
        .tool(read())
        .max_turn_cost(700, Arc::new(MicroPerToken))
        .build()
        .await?;
    let error = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(error.kind, TurnErrorKind::CostLimit { limit_micros: 700, spent_micros: Some(800) }),
        "{:?}",
        error.kind
    );
    assert_eq!(error.kind.to_string(), "the turn reached its cost limit of $0.000700 ($0.000800 spent)");
    assert_eq!(model.requests().len(), 2);

    let model = reading(5, usage(300, 0, 100));
    let mut session =
        Session::builder(model.clone()).tool(read()).max_turn_cost(700, Arc::new(Unpriced)).build().await?;
    let error = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(error.kind, TurnErrorKind::CostLimit { limit_micros: 700, spent_micros: None }),
        "{:?}",
        error.kind
    );
    assert!(error.kind.to_string().contains("cannot be priced"), "{}", error.kind);
    assert_eq!(model.requests().len(), 1, "no round is started on an unknown cost");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_turn_past_its_time_is_stopped_as_a_cancellation_and_awaits_its_call() -> TestResult {
    let model = ScriptedModel::new().tool_call("read", json!({})).tool_call("wait", json!({})).answer("late");
    let mut session = Session::builder(model.clone())
        .tool(read())
        .tool(FnTool::until_cancelled("wait", ToolCategory::Read))
        .max_turn_time(Duration::from_secs(5))
        .build()
        .await?;
    let started = tokio::time::Instant::now();
    let error = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(matches!(error.kind, TurnErrorKind::TimeLimit(5_000)), "{:?}", error.kind);
    assert_eq!(error.kind.to_string(), "the turn reached its time limit of 5 s");
    assert_eq!(error.disposition, Disposition::Checkpointed);
    // The waiting call was wound down by its token and its result kept.
    assert_eq!(common::tool_result(session.history(), 1), ("stopped on cancellation".into(), true));
    assert_eq!(model.requests().len(), 2);
    Ok(())
}

#[test]
fn unset_turn_limits_leave_the_recorded_form_as_it_was() {
    let form = serde_json::to_value(Limits::default()).unwrap();
    assert_eq!(form, json!({"max_rounds": 50, "tool_timeout_ms": 120_000, "tool_output_bytes": 65_536}));
    let set = serde_json::to_value(Limits::default().with_max_turn_tokens(9)).unwrap();
    assert_eq!(set["max_turn_tokens"], 9);
}

/// A tool that spent tokens on a model of its own (as an MCP server's
/// sampling does): 500 in, 500 out per call.
fn sampling_tool() -> FnTool {
    FnTool::new("sample", ToolCategory::Read, |_, _| {
        Box::pin(async { bosun_core::ToolOutput::text("sampled").with_usage(Usage::new(500, 500)) })
    })
}

#[tokio::test]
async fn what_a_tool_spent_on_a_model_counts_in_the_turn_its_budget_and_its_record() -> TestResult {
    let model = ScriptedModel::new().tool_call("sample", json!({})).answer("done");
    let journal = bosun_core::InMemoryJournal::new();
    let mut session = Session::builder(model).tool(sampling_tool()).journal(journal.clone()).build().await?;
    let outcome = session.run("go", &mut Vec::new()).await?;
    assert_eq!(outcome.usage, Usage::new(500, 500), "the scripted model spent nothing itself");
    let kept = journal.records().into_iter().any(|r| {
        matches!(r, bosun_core::JournalRecord::InvocationFinished {
            result: bosun_core::Message::ToolResult { usage, .. }, ..
        } if usage == Usage::new(500, 500))
    });
    assert!(kept, "the result's usage is journaled");

    let model =
        ScriptedModel::new().tool_call("sample", json!({})).tool_call("sample", json!({})).answer("x");
    let mut session =
        Session::builder(model.clone()).tool(sampling_tool()).max_turn_tokens(800).build().await?;
    let error = session.run("go", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(error.kind, TurnErrorKind::TokenLimit { limit: 800, spent: 1_000 }), "{:?}", error.kind);
    assert_eq!(model.requests().len(), 1);
    Ok(())
}
