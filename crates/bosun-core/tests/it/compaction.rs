//! Compaction: what is sent shrinks in tiers when it outgrows the window or
//! the provider says it overflowed; history and the journal keep every
//! message, each step is journaled and a resume sends the same view.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use bosun_core::compaction::SUMMARY_PROMPT;
use bosun_core::{
    Event, InMemoryJournal, JournalRecord, Message, ModelError, Session, ToolCategory, TurnErrorKind,
    validate_history,
};
use bosun_testing::{FnTool, RecordedRequest, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// Each call's result: 4,000 characters, about 1,000 tokens at the
/// estimator's starting rate (the scripted model reports no usage).
fn read() -> FnTool {
    FnTool::text("read", ToolCategory::Read, |args| format!("{}{}", args["n"], "r".repeat(3_999)))
}

fn reads(model: ScriptedModel, from: usize, to: usize) -> ScriptedModel {
    (from..to).fold(model, |m, n| m.tool_call("read", json!({"n": n % 10})))
}

fn tiers(events: &[Event]) -> Vec<u8> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Compacted { tier, before, after, .. } => {
                assert!(after < before, "tier {tier}: {before} -> {after}");
                Some(*tier)
            }
            _ => None,
        })
        .collect()
}

fn text_of(request: &RecordedRequest, index: usize) -> String {
    request.messages[index].text()
}

#[tokio::test]
async fn past_the_threshold_old_results_are_shortened_and_later_rounds_send_the_same_prefix() -> TestResult {
    let model = reads(ScriptedModel::new(), 0, 9).answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone())
        .tool(read())
        .context_window(10_000)
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("read them all", &mut events).await?;
    assert_eq!(tiers(&events), [1], "shortening was enough");
    // The oldest result is the first shortened: the prompt cache keeps the
    // task and the first call before it, a few tokens, not a result's 1,000.
    let cached: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compacted { cached_prefix, .. } => Some(*cached_prefix),
            _ => None,
        })
        .collect();
    assert!(cached.len() == 1 && cached[0] > 0 && cached[0] < 100, "{cached:?}");
    let requests = model.requests();
    // Round 9 is the first over 8,000 estimated tokens (8 results).
    let first =
        requests.iter().position(|r| r.messages.iter().any(|m| m.text().contains("bytes cut"))).unwrap();
    assert_eq!(first, 8);
    for (index, request) in requests.iter().enumerate() {
        validate_history(&request.messages)?;
        assert_eq!(text_of(request, 0), "read them all", "request {index} keeps the task");
    }
    // The newest units are whole; the four oldest results are shortened.
    let shortened =
        |r: &RecordedRequest| r.messages.iter().filter(|m| m.text().contains("bytes cut")).count();
    assert_eq!(shortened(&requests[8]), 4);
    assert_eq!(
        requests[9].messages[..requests[8].messages.len()],
        requests[8].messages[..],
        "a stable prefix"
    );
    // History keeps every real result.
    assert!(session.history().iter().all(|m| !m.text().contains("bytes cut")));
    assert_eq!(common::tool_result(session.history(), 0).0.len(), 4_000);
    let compacted = journal.records().iter().filter(|r| matches!(r, JournalRecord::Compacted { .. })).count();
    assert_eq!(compacted, 1);
    Ok(())
}

/// Six reads, then the provider refuses the seventh request as too long.
fn overflowing(then: Reply) -> ScriptedModel {
    reads(ScriptedModel::new(), 0, 6)
        .reply(Reply::new().error(ModelError::ContextOverflow("prompt is too long".into())))
        .answer("Read 0 to 5; all started with their number.")
        .reply(then)
}

#[tokio::test]
async fn an_overflow_compacts_through_the_tiers_retries_once_and_resume_sends_the_same_view() -> TestResult {
    let model = overflowing(Reply::new().text("done"));
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone()).tool(read()).journal(journal.clone()).build().await?;
    let mut events = Vec::new();
    let outcome = session.run("read six", &mut events).await?;
    assert_eq!(outcome.answer, "done");
    assert_eq!(tiers(&events), [1, 2], "shortening, then a summary was needed");

    let requests = model.requests();
    assert_eq!(requests.len(), 9, "six rounds, the overflow, the summary, the retry");
    let summary = &requests[7];
    assert_eq!(summary.system.as_deref(), Some(SUMMARY_PROMPT));
    assert!(summary.tools.is_empty());
    let transcript = text_of(summary, 0);
    assert!(transcript.contains("ASSISTANT:  [calls: read({\"n\":0})]"), "{transcript}");
    assert!(transcript.contains("RESULT of read: 0rrr"), "{transcript}");

    let retry = &requests[8];
    validate_history(&retry.messages)?;
    let task = text_of(retry, 0);
    assert!(task.starts_with("read six"), "{task}");
    assert!(task.contains("Read 0 to 5; all started with their number."), "the summary follows the task");
    assert!(!task.contains("left out to fit the context window"), "nothing dropped: {task}");
    assert_eq!(
        retry.messages.len(),
        9,
        "the task and the newest four units (their results shortened but the newest)"
    );
    assert!(outcome.usage.input == 0, "the scripted model reports no usage");
    assert_eq!(session.history().len(), 14, "history keeps all six batches and the answer");

    let resumed = Session::builder(ScriptedModel::new()).tool(read()).resume(journal).await?;
    assert_eq!(resumed.compaction(), session.compaction());
    assert_eq!(resumed.history(), session.history());
    Ok(())
}

#[tokio::test]
async fn a_failed_summary_drops_the_older_units_instead() -> TestResult {
    let model = reads(ScriptedModel::new(), 0, 6)
        .reply(Reply::new().error(ModelError::ContextOverflow("prompt is too long".into())))
        .reply(Reply::new().error(ModelError::Server("no summaries today".into())))
        .answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone()).tool(read()).journal(journal.clone()).build().await?;
    let mut events = Vec::new();
    assert_eq!(session.run("read six", &mut events).await?.answer, "done");
    assert_eq!(tiers(&events), [1, 3], "shortening, then dropping");
    let retry = model.requests().pop().unwrap();
    validate_history(&retry.messages)?;
    let task = text_of(&retry, 0);
    assert!(task.starts_with("read six") && task.contains("left out to fit the context window"), "{task}");
    assert_eq!(retry.messages.len(), 3, "the task and the newest unit");
    let resumed = Session::builder(ScriptedModel::new()).tool(read()).resume(journal).await?;
    assert_eq!(resumed.compaction(), session.compaction());
    Ok(())
}

#[tokio::test]
async fn a_second_overflow_fails_the_turn_with_the_providers_error() -> TestResult {
    let model = overflowing(Reply::new().error(ModelError::ContextOverflow("still too long".into())));
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let error = session.run("read six", &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(&error.kind, TurnErrorKind::Model(ModelError::ContextOverflow(m)) if m == "still too long")
    );
    assert_eq!(model.requests().len(), 9, "one retry, not two");
    assert_eq!(session.history().len(), 13, "the six batches stay: a checkpoint");
    Ok(())
}

#[tokio::test]
async fn an_overflow_with_nothing_to_compact_fails_at_once() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"n": 1}))
        .reply(Reply::new().error(ModelError::ContextOverflow("too long".into())));
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let error = session.run("read one", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(error.kind, TurnErrorKind::Model(ModelError::ContextOverflow(_))), "{error:?}");
    assert_eq!(model.requests().len(), 2);
    assert!(session.history().iter().all(|m| !matches!(m, Message::System { .. })));
    Ok(())
}

/// A model that counts its own prompt tokens (as a local engine does with
/// its tokenizer): here two characters a token, half the estimator's rate.
struct Counting(ScriptedModel);

impl bosun_core::Model for Counting {
    fn capabilities(&self) -> bosun_core::Capabilities {
        self.0.capabilities()
    }

    fn stream<'a>(
        &'a self,
        request: bosun_core::ModelRequest<'a>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> bosun_core::ModelStream<'a> {
        self.0.stream(request, cancel)
    }

    fn count_tokens<'a>(&'a self, request: &'a bosun_core::ModelRequest<'a>) -> bosun_core::CountFuture<'a> {
        let chars = bosun_core::compaction::chars_of(request.system, &request.messages, 0);
        Box::pin(async move { Some(chars as u64 / 2) })
    }
}

#[tokio::test]
async fn a_model_that_counts_its_tokens_is_believed_over_the_estimate() -> TestResult {
    let model = reads(ScriptedModel::new(), 0, 5).answer("done");
    let mut session =
        Session::builder(Counting(model.clone())).tool(read()).context_window(12_000).build().await?;
    let mut events = Vec::new();
    session.run("read them all", &mut events).await?;
    assert_eq!(tiers(&events), [1]);
    // At two characters a token, five results pass 0.8 of the window; at
    // the estimator's four (the scripted model reports no usage) they are
    // half of it.
    let requests = model.requests();
    let first =
        requests.iter().position(|r| r.messages.iter().any(|m| m.text().contains("bytes cut"))).unwrap();
    assert_eq!(first, 5);
    Ok(())
}

/// Three reads of 4,000 characters (about 3,000 tokens at the starting
/// rate) answered with `answer`, then a resume in a new session on a
/// 10,000-token window and one more turn: that turn's events.
async fn resumed_turn_after_three_reads(answer: Reply) -> Result<Vec<Event>, Box<dyn std::error::Error>> {
    let model = reads(ScriptedModel::new(), 0, 3).reply(answer);
    let journal = InMemoryJournal::new();
    let mut session =
        Session::builder(model).tool(read()).context_window(10_000).journal(journal.clone()).build().await?;
    session.run("read three", &mut Vec::new()).await?;
    drop(session);
    let mut resumed = Session::builder(ScriptedModel::new().answer("ok"))
        .tool(read())
        .context_window(10_000)
        .resume(journal)
        .await?;
    let mut events = Vec::new();
    resumed.run("and now?", &mut events).await?;
    Ok(events)
}

#[tokio::test]
async fn a_resumed_session_estimates_from_its_last_real_count() -> TestResult {
    // The provider said the last request was 9,500 tokens: past 0.8 of the
    // window, so the resumed turn's first request is compacted.
    let counted = Reply::new().text("read three").usage(bosun_core::Usage::new(9_500, 10));
    let events = resumed_turn_after_three_reads(counted).await?;
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { before, .. } if *before > 9_500)),
        "estimated from the real count: {events:?}"
    );
    // Without a count to go by, the default rate says it fits.
    let events = resumed_turn_after_three_reads(Reply::new().text("read three")).await?;
    assert!(!events.iter().any(|e| matches!(e, Event::Compacted { .. })), "{events:?}");
    Ok(())
}
