//! Compaction under random sessions: random tool output sizes, windows,
//! turns and injected overflows. Every request sent is a valid history,
//! within the window, keeps the task, the latest ask and the newest result
//! whole; and the journal replays to the same history and the same view.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use bosun_core::compaction::SUMMARY_PROMPT;
use bosun_core::{
    Capabilities, ContentPart, InMemoryJournal, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ModelStream, ResponsePart, Session, StopReason, ToolCategory, Usage, validate_history,
};
use bosun_testing::FnTool;
use futures_util::stream;
use proptest::prelude::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A model that calls `read` with the planned sizes, one per round, then
/// answers; answers summary requests; and refuses the first attempt of the
/// rounds in `overflow` as too long. It records what it was sent.
struct Planned {
    sizes: Vec<usize>,
    round: AtomicUsize,
    overflow: HashSet<usize>,
    refused: Mutex<HashSet<usize>>,
    sent: Mutex<Vec<(Option<String>, Vec<Message>)>>,
}

impl Model for Planned {
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, _cancel: CancellationToken) -> ModelStream<'a> {
        let system = request.system.map(str::to_owned);
        self.sent.lock().unwrap().push((system.clone(), request.messages.to_vec()));
        let done = |content: Vec<ResponsePart>, stop| {
            let response = ModelResponse::new(content, Usage::default(), stop);
            Box::pin(stream::iter([Ok(ModelEvent::Done(response))])) as ModelStream<'a>
        };
        if system.as_deref() == Some(SUMMARY_PROMPT) {
            return done(vec![ResponsePart::Content(ContentPart::text("the work so far"))], StopReason::Stop);
        }
        let round = self.round.load(Ordering::SeqCst);
        if self.overflow.contains(&round) && self.refused.lock().unwrap().insert(round) {
            return Box::pin(stream::iter([Err(ModelError::ContextOverflow("too long".into()))]));
        }
        self.round.fetch_add(1, Ordering::SeqCst);
        match self.sizes.get(round) {
            Some(size) => done(
                vec![ResponsePart::ToolCall {
                    provider_id: format!("c{round}"),
                    name: "read".into(),
                    arguments: json!({"size": size, "n": round}),
                    provider_data: None,
                }],
                StopReason::ToolUse,
            ),
            None => {
                self.round.store(0, Ordering::SeqCst);
                done(vec![ResponsePart::Content(ContentPart::text("done"))], StopReason::Stop)
            }
        }
    }
}

fn read() -> FnTool {
    // Each result differs (the round's number first), so the repeated-call
    // rule never leaves one out and compaction alone keeps requests small.
    FnTool::text("read", ToolCategory::Read, |args| {
        let size = args["size"].as_u64().unwrap() as usize;
        format!("{}:{}", args["n"], "r".repeat(size))
    })
}

/// What a request carries, in characters (text, call names and arguments).
fn chars(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(Message::content)
        .map(|part| match part {
            ContentPart::Text { text } => text.len(),
            ContentPart::ToolCall { name, arguments, .. } => name.len() + arguments.to_string().len(),
            _ => 0,
        })
        .sum()
}

fn check(window: u64, sizes: Vec<usize>, turns: usize, overflow: HashSet<usize>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async move {
        let model = std::sync::Arc::new(Planned {
            sizes,
            round: AtomicUsize::new(0),
            overflow,
            refused: Mutex::new(HashSet::new()),
            sent: Mutex::new(Vec::new()),
        });
        let journal = InMemoryJournal::new();
        let mut session = Session::builder_shared(model.clone())
            .tool(read())
            .context_window(window)
            .max_rounds(200)
            .journal(journal.clone())
            .build()
            .await
            .unwrap();
        for turn in 0..turns {
            let ask = format!("ask number {turn}");
            let before = model.sent.lock().unwrap().len();
            session.run(ask.as_str(), &mut Vec::new()).await.unwrap();
            for (system, messages) in model.sent.lock().unwrap().iter().skip(before) {
                if system.as_deref() == Some(SUMMARY_PROMPT) {
                    continue;
                }
                validate_history(messages).unwrap();
                assert!(messages[0].text().starts_with("ask number 0"), "the task is kept");
                let latest = messages.iter().rev().find(|m| matches!(m, Message::User { .. })).unwrap();
                assert!(latest.text().starts_with(&ask) || turn == 0, "the latest ask is kept");
                if let Some(last @ Message::ToolResult { .. }) = messages.last() {
                    assert!(!last.text().contains("bytes cut"), "the newest result is whole");
                }
                // The estimator's starting rate: 4 characters a token.
                assert!(
                    (chars(messages) as u64).div_ceil(4) <= window,
                    "{} chars over {window}",
                    chars(messages)
                );
            }
        }
        let resumed = Session::builder(bosun_testing::ScriptedModel::new())
            .tool(read())
            .context_window(window)
            .max_rounds(200)
            .resume(journal)
            .await
            .unwrap();
        assert_eq!(resumed.history(), session.history());
        assert_eq!(resumed.compaction(), session.compaction());
    });
}

proptest! {
    // 250 random sessions in the default tier, 2,000 in `scripts/test --full`.
    #![proptest_config(ProptestConfig { cases: bosun_testing::by_tier(250, 2_000), ..ProptestConfig::default() })]

    #[test]
    fn random_sessions_stay_valid_within_the_window_and_replay_the_same(
        window in 2_000u64..20_000,
        fractions in prop::collection::vec(1u64..100, 1..40),
        turns in 1usize..4,
        overflow in prop::collection::hash_set(6usize..40, 0..3),
    ) {
        // One result is at most a fifth of the window (in characters at 4 a
        // token, a twentieth): tier 3 always leaves room for the newest.
        let sizes = fractions.iter().map(|f| (window * 4 / 5 * f / 100) as usize).collect();
        check(window, sizes, turns, overflow);
    }
}

#[tokio::test]
async fn three_hundred_rounds_of_20_kb_results_on_a_16k_window_keep_going_within_it() {
    let model = std::sync::Arc::new(Planned {
        sizes: vec![20_000; 300],
        round: AtomicUsize::new(0),
        overflow: HashSet::new(),
        refused: Mutex::new(HashSet::new()),
        sent: Mutex::new(Vec::new()),
    });
    let mut session = Session::builder_shared(model.clone())
        .tool(read())
        .context_window(16_000)
        .max_rounds(301)
        .build()
        .await
        .unwrap();
    let mut events = Vec::new();
    let outcome = session.run("read a lot", &mut events).await.unwrap();
    assert_eq!((outcome.answer.as_str(), outcome.rounds), ("done", 301));
    let sent = model.sent.lock().unwrap();
    let rounds: Vec<&Vec<Message>> =
        sent.iter().filter(|(system, _)| system.as_deref() != Some(SUMMARY_PROMPT)).map(|(_, m)| m).collect();
    assert_eq!(rounds.len(), 301);
    let largest = rounds.iter().map(|m| chars(m)).max().unwrap();
    assert!((largest as u64).div_ceil(4) <= 16_000, "the largest request had {largest} characters");
    let compactions = events.iter().filter(|e| matches!(e, bosun_core::Event::Compacted { .. })).count();
    assert!(compactions > 10, "{compactions}");
    assert_eq!(session.history().len(), 1 + 2 * 300 + 1, "history keeps every result");
}
