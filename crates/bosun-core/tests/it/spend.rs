//! What turns spend: every response's usage reaches the event stream as it
//! arrives, and the turn's spend by bucket (main rounds, compaction, tools)
//! reaches `turn_end`, the outcome and the journal, priced per response when
//! the session has prices. A compaction asked for by the person is journaled
//! and survives a resume.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bosun_core::compaction::SUMMARY_PROMPT;
use bosun_core::{
    Event, InMemoryJournal, JournalRecord, Message, ModelError, Pricing, Session, Spend, Spent, SpentBy,
    ToolCategory, ToolOutput, TurnOptions, Usage, validate_history,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// One micro-dollar an input token, ten an output token; long prompts
/// (over 1,000 tokens) at twice that, as long-context tiers do, so a sum
/// priced as one would come out wrong.
struct Tiered;

impl Pricing for Tiered {
    fn cost_micros(&self, usage: &Usage) -> Option<u64> {
        let base = usage.input + 10 * usage.output;
        Some(if usage.input > 1_000 { 2 * base } else { base })
    }
}

fn sampling_tool() -> FnTool {
    FnTool::new("ask", ToolCategory::Read, |_, _| {
        Box::pin(async { ToolOutput::text("sampled").with_usage(Usage::new(7, 3)) })
    })
}

#[tokio::test]
async fn every_round_reports_its_usage_and_the_turn_its_spend_by_bucket() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("ask", json!({})).usage(Usage::new(900, 10)))
        .reply(Reply::new().text("done").usage(Usage::new(1_200, 20)));
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(sampling_tool())
        .pricing(Arc::new(Tiered))
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    let outcome = session.run("go", &mut events).await?;

    let rounds: Vec<(u32, Usage, Option<u64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelRoundEnd { round, usage, cost_micros, .. } => Some((*round, *usage, *cost_micros)),
            _ => None,
        })
        .collect();
    assert_eq!(
        rounds,
        [(1, Usage::new(900, 10), Some(1_000)), (2, Usage::new(1_200, 20), Some(2 * 1_400))],
        "each response priced on its own"
    );
    let mut want = Spend::default();
    want.main = Spent::new(Usage::new(2_100, 30), Some(3_800));
    want.tools = Spent::new(Usage::new(7, 3), Some(37));
    assert_eq!(outcome.spend, want);
    assert_eq!(outcome.usage, Usage::new(2_107, 33), "the total holds every bucket");
    let Some(Event::TurnEnd { spend, cost_micros, usage, .. }) = events.last() else {
        panic!("no turn_end: {events:?}")
    };
    assert_eq!((*spend, *cost_micros, *usage), (want, Some(3_837), outcome.usage));
    let ended = journal.records().into_iter().find_map(|r| match r {
        JournalRecord::TurnEnded { spend, .. } => Some(spend),
        _ => None,
    });
    assert_eq!(ended, Some(want), "the journal keeps the turn's spend");
    Ok(())
}

#[tokio::test]
async fn without_prices_a_turn_carries_tokens_and_no_cost() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().text("hi").usage(Usage::new(5, 1)));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    let outcome = session.run("hello", &mut events).await?;
    assert_eq!(outcome.spend.main, Spent::new(Usage::new(5, 1), None));
    assert!(matches!(events.last(), Some(Event::TurnEnd { cost_micros: None, .. })));
    Ok(())
}

#[tokio::test]
async fn a_failed_turn_keeps_what_its_rounds_spent() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("ask", json!({})).usage(Usage::new(100, 5)))
        .reply(Reply::new().error(ModelError::Server("down".into())));
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model).tool(sampling_tool()).journal(journal.clone()).build().await?;
    let mut events = Vec::new();
    assert!(session.run("go", &mut events).await.is_err());
    let Some(Event::TurnEnd { spend, .. }) = events.last() else { panic!("no turn_end") };
    assert_eq!(spend.main.usage, Usage::new(100, 5));
    assert_eq!(spend.tools.usage, Usage::new(7, 3));
    let ended = journal.records().into_iter().find_map(|r| match r {
        JournalRecord::TurnEnded { spend, .. } => Some(spend),
        _ => None,
    });
    assert_eq!(ended, Some(*spend));
    Ok(())
}

#[tokio::test]
async fn the_bucket_of_a_tools_spending_travels_on_its_output_not_its_name() -> TestResult {
    // A tool of any name that ran sub-agents says so on its output.
    let runner = FnTool::new("run_helpers", ToolCategory::Read, |_, _| {
        Box::pin(async { ToolOutput::text("helped").with_subagent_usage(Usage::new(40, 6)) })
    });
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("run_helpers", json!({})).tool_call("ask", json!({})))
        .reply(Reply::new().text("done"));
    let mut session = Session::builder(model).tool(runner).tool(sampling_tool()).build().await?;
    let outcome = session.run("go", &mut Vec::new()).await?;
    assert_eq!(outcome.spend.subagents.usage, Usage::new(40, 6), "{:?}", outcome.spend);
    assert_eq!(outcome.spend.tools.usage, Usage::new(7, 3), "{:?}", outcome.spend);
    // The result keeps whose spending it was; the tool's own is left out of
    // the JSON, as before the field existed.
    let results: Vec<serde_json::Value> = session
        .history()
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    assert_eq!(results[0]["spent_by"], "subagents", "{}", results[0]);
    assert!(results[1].get("spent_by").is_none(), "{}", results[1]);
    let older: Message = serde_json::from_value(json!({"role": "tool_result", "call_id":
        "01a23de0-0000-7000-8000-000000000001", "tool_name": "x", "content": [], "usage": {"input": 1}}))?;
    assert!(matches!(older, Message::ToolResult { spent_by: SpentBy::Tool, .. }), "{older:?}");
    Ok(())
}

/// Three turns of a question and an answer each.
async fn three_turns(
    model: ScriptedModel,
    journal: &InMemoryJournal,
) -> Result<Session, Box<dyn std::error::Error>> {
    let mut session =
        Session::builder(model).pricing(Arc::new(Tiered)).journal(journal.clone()).build().await?;
    for ask in ["first: use port 9090", "second: name it bosun", "third: now test it"] {
        session.run(ask, &mut Vec::new()).await?;
    }
    Ok(session)
}

#[tokio::test]
async fn compacting_on_request_summarizes_all_but_the_newest_unit_and_a_resume_sends_the_same() -> TestResult
{
    // Long answers, so the summary is smaller than what it replaces.
    let long = |label: &str| format!("{label} {}", "detail ".repeat(300));
    let model = ScriptedModel::new()
        .answer(long("Set the port."))
        .answer(long("Named it."))
        .answer("Tested.")
        .reply(Reply::new().text("The user set port 9090 and named it bosun.").usage(Usage::new(40, 12)))
        .answer("Next.");
    let journal = InMemoryJournal::new();
    let mut session = three_turns(model.clone(), &journal).await?;
    let mut events = Vec::new();
    let outcome = session.compact_now(TurnOptions::default(), &mut events).await?.expect("compacted");
    assert_eq!(outcome.spent, Spent::new(Usage::new(40, 12), Some(160)));
    assert!(outcome.after < outcome.before, "{outcome:?}");
    assert!(matches!(events.as_slice(), [Event::Compacted { tier: 2, .. }]), "{events:?}");

    let requests = model.requests();
    let summary = &requests[3];
    assert_eq!(summary.system.as_deref(), Some(SUMMARY_PROMPT));
    let transcript = summary.messages[0].text();
    assert!(transcript.contains("second: name it bosun") && transcript.contains("Named it."), "{transcript}");
    assert!(!transcript.contains("Tested."), "the newest unit is kept whole, not summarized: {transcript}");
    let record = journal.records().into_iter().find_map(|r| match r {
        JournalRecord::Compacted { tier, usage, cost_micros, .. } => Some((tier, usage, cost_micros)),
        _ => None,
    });
    assert_eq!(record, Some((2, Usage::new(40, 12), Some(160))));
    assert_eq!(session.history().len(), 6, "history keeps everything");

    session.run("fourth", &mut Vec::new()).await?;
    let next = model.requests().pop().unwrap();
    validate_history(&next.messages)?;
    let task = next.messages[0].text();
    assert!(task.starts_with("first: use port 9090"), "{task}");
    assert!(task.contains("The user set port 9090 and named it bosun."), "the summary follows the task");
    let sent: Vec<String> = next.messages.iter().map(|m| m.text()).collect();
    assert!(!sent.iter().any(|t| t.starts_with("Named it.")), "the summarized units are not sent: {sent:?}");
    assert_eq!(sent[1..], ["third: now test it", "Tested.", "fourth"], "the latest ask and the newest unit");

    // A resume rebuilds the same view.
    let resumed_model = ScriptedModel::new().answer("again");
    let mut resumed = Session::builder(resumed_model.clone()).resume(journal).await?;
    resumed.run("fifth", &mut Vec::new()).await?;
    let again = resumed_model.requests().pop().unwrap();
    assert_eq!(again.messages[0].text(), task, "the same summary after the task");
    Ok(())
}

#[tokio::test]
async fn compacting_a_short_session_does_nothing_and_a_failed_summary_changes_nothing() -> TestResult {
    let journal = InMemoryJournal::new();
    let model = ScriptedModel::new().answer("one");
    let mut session = Session::builder(model).journal(journal.clone()).build().await?;
    session.run("only", &mut Vec::new()).await?;
    assert_eq!(session.compact_now(TurnOptions::default(), &mut Vec::new()).await?, None);

    let model = ScriptedModel::new()
        .answer("a")
        .answer("b")
        .answer("c")
        .reply(Reply::new().error(ModelError::Server("no summary today".into())))
        .answer("d");
    let journal = InMemoryJournal::new();
    let mut session = three_turns(model.clone(), &journal).await?;
    let before = journal.records().len();
    assert!(session.compact_now(TurnOptions::default(), &mut Vec::new()).await.is_err());
    assert_eq!(journal.records().len(), before, "nothing journaled");
    session.run("fourth", &mut Vec::new()).await?;
    let next = model.requests().pop().unwrap();
    assert_eq!(next.messages.len(), 7, "everything is still sent");
    Ok(())
}

#[tokio::test]
async fn a_summary_made_during_a_turn_is_spent_on_compaction() -> TestResult {
    let read = FnTool::text("read", ToolCategory::Read, |args| format!("{}{}", args["n"], "r".repeat(3_999)));
    let model = (0..6)
        .fold(ScriptedModel::new(), |m, n| m.tool_call("read", json!({ "n": n })))
        .reply(Reply::new().error(ModelError::ContextOverflow("prompt is too long".into())))
        .reply(Reply::new().text("Read 0 to 5.").usage(Usage::new(300, 30)))
        .reply(Reply::new().text("done").usage(Usage::new(50, 5)));
    let journal = InMemoryJournal::new();
    let mut session =
        Session::builder(model).tool(read).pricing(Arc::new(Tiered)).journal(journal.clone()).build().await?;
    let outcome = session.run("read six", &mut Vec::new()).await?;
    assert_eq!(outcome.spend.compaction, Spent::new(Usage::new(300, 30), Some(600)));
    assert_eq!(outcome.spend.main, Spent::new(Usage::new(50, 5), Some(100)));
    let summary_cost = journal.records().into_iter().find_map(|r| match r {
        JournalRecord::Compacted { tier: 2, cost_micros, .. } => Some(cost_micros),
        _ => None,
    });
    assert_eq!(summary_cost, Some(Some(600)));
    Ok(())
}
