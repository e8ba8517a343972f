//! What sessions spent, as the store keeps it: the model a session ran on,
//! each turn's spend by bucket from its `turn_ended` record, and session
//! totals that count every response once, including those that never
//! entered history and summaries made outside a turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bosun_core::{
    Journal, JournalRecord, Message, Pricing, Session, Spend, Spent, TurnOptions, TurnRecordOutcome, Usage,
};
use bosun_store::Store;
use bosun_testing::{Reply, ScriptedModel};

/// One micro-dollar a token, either way.
struct PerToken;

impl Pricing for PerToken {
    fn cost_micros(&self, usage: &Usage) -> Option<u64> {
        Some(usage.input + usage.output)
    }
}

fn answers(replies: &[(&str, u64)]) -> ScriptedModel {
    replies.iter().fold(ScriptedModel::new(), |m, (text, tokens)| {
        m.reply(Reply::new().text(*text).usage(Usage::new(*tokens, 1)))
    })
}

#[tokio::test]
async fn a_session_records_its_model_and_what_each_turn_spent() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let journal = store.new_session().with_model("anthropic/claude-x");
    let id = journal.session_id().to_owned();
    let mut session = Session::builder(answers(&[("one", 100), ("two", 200)]))
        .pricing(Arc::new(PerToken))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run("first", &mut Vec::new()).await.unwrap();
    session.run("second", &mut Vec::new()).await.unwrap();
    drop(session);
    assert_eq!(store.show(&id).unwrap().summary.model.as_deref(), Some("anthropic/claude-x"));

    // Resumed on another model: the session's model is the newest.
    let journal = store.open_session(&id).unwrap().with_model("openai/gpt-y");
    let mut session = Session::builder(answers(&[("three", 300)]))
        .pricing(Arc::new(PerToken))
        .resume(journal)
        .await
        .unwrap();
    session.run("third", &mut Vec::new()).await.unwrap();
    drop(session);

    let detail = store.show(&id).unwrap();
    assert_eq!(detail.summary.model.as_deref(), Some("openai/gpt-y"));
    let turns: Vec<(u64, TurnRecordOutcome, Spent)> =
        detail.turns.iter().map(|t| (t.turn, t.outcome, t.spend.main)).collect();
    assert_eq!(
        turns,
        [
            (1, TurnRecordOutcome::Completed, Spent::new(Usage::new(100, 1), Some(101))),
            (2, TurnRecordOutcome::Completed, Spent::new(Usage::new(200, 1), Some(201))),
            (3, TurnRecordOutcome::Completed, Spent::new(Usage::new(300, 1), Some(301))),
        ]
    );
    assert_eq!(detail.summary.spend.main, Spent::new(Usage::new(600, 3), Some(603)));
    assert_eq!(detail.summary.usage, Usage::new(600, 3), "each response counted once");
}

#[tokio::test]
async fn usage_spent_outside_history_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let builder = Session::builder(ScriptedModel::new());
    let authority = builder.authority_snapshot().unwrap();
    let mut journal = store.new_session();
    let id = journal.session_id().to_owned();
    // A turn whose answer used 10 tokens in, but which also spent a round
    // that never entered history (a response cancelled as it arrived).
    let mut spend = Spend::default();
    spend.main = Spent::new(Usage::new(25, 2), None);
    let records = [
        JournalRecord::SessionStarted { authority, system: None },
        JournalRecord::TurnStarted { turn: 1, message: Message::user("hi"), queued: vec![] },
        JournalRecord::Committed {
            turn: 1,
            messages: vec![Message::Assistant {
                content: vec![bosun_core::ContentPart::text("hello")],
                usage: Usage::new(10, 1),
                stop_reason: bosun_core::StopReason::Stop,
            }],
            provider_ids: Default::default(),
        },
        JournalRecord::TurnEnded { turn: 1, outcome: TurnRecordOutcome::Completed, spend },
    ];
    for record in &records {
        journal.append(record).await.unwrap();
    }
    drop(journal);
    let detail = store.show(&id).unwrap();
    assert_eq!(detail.summary.usage, Usage::new(25, 2));
    assert_eq!(detail.summary.spend, spend);
}

#[tokio::test]
async fn a_compaction_asked_for_outside_a_turn_is_spent_on_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let long = "detail ".repeat(300);
    let model = answers(&[(&long, 10), (&long, 10), ("c", 10), ("short summary", 40)]);
    let mut session =
        Session::builder(model).pricing(Arc::new(PerToken)).journal(journal).build().await.unwrap();
    for ask in ["a", "b", "c"] {
        session.run(ask, &mut Vec::new()).await.unwrap();
    }
    session.compact_now(TurnOptions::default(), &mut Vec::new()).await.unwrap().unwrap();
    drop(session);
    let summary = store.show(&id).unwrap().summary;
    assert_eq!(summary.spend.compaction, Spent::new(Usage::new(40, 1), Some(41)));
    assert_eq!(summary.spend.main, Spent::new(Usage::new(30, 3), Some(33)));
    assert_eq!(summary.usage, Usage::new(70, 4));
}
