//! Property tests: delta reconciliation, and batch completeness under random
//! failure points.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns build runtimes

use crate::common;

use std::time::Duration;

use bosun_core::stream::DeltaReconciler;
use bosun_core::{
    CancellationPolicy, InMemoryJournal, ModelError, Session, ToolCategory, ToolOutput, TurnErrorKind,
    TurnOptions, validate_history,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::streamed_text;
use proptest::prelude::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap()
}

/// Splits `text` at the given fractions, on character boundaries.
fn split(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.push(0);
    points.push(chars.len());
    points.sort_unstable();
    points.windows(2).map(|w| chars[w[0]..w[1]].iter().collect()).collect()
}

proptest! {
    #[test]
    fn any_split_of_the_final_text_reconciles(text in "[a-zé ✓]{1,40}", cuts in prop::collection::vec(0usize..64, 0..8), keep in 0usize..9) {
        let parts = split(&text, &cuts);
        // Stream only the first `keep` parts: the rest is the suffix to emit.
        let kept = keep.min(parts.len());
        let mut reconciler = DeltaReconciler::new();
        for part in &parts[..kept] {
            reconciler.push(part);
        }
        let suffix = reconciler.finish(&text).unwrap();
        prop_assert_eq!(format!("{}{}", reconciler.streamed(), suffix), text.clone());

        let mut reply = Reply::new();
        for part in &parts[..kept] {
            reply = reply.text(part.clone());
        }
        let model = ScriptedModel::new().reply(reply.final_text(text.clone()));
        let (events, history_text) = runtime().block_on(async {
            let mut session = Session::builder(model).build().await.unwrap();
            let mut events = Vec::new();
            session.run("go", &mut events).await.unwrap();
            (events, session.history()[1].text())
        });
        prop_assert_eq!(streamed_text(&events), text.clone());
        prop_assert_eq!(history_text, text);
    }

    #[test]
    fn any_non_prefix_stream_fails_the_turn(streamed in "[ab]{1,12}", final_text in "[ab]{0,12}") {
        prop_assume!(!final_text.starts_with(&streamed));
        prop_assert!(DeltaReconciler::new().finish(&final_text).is_ok());
        let model = ScriptedModel::new().reply(Reply::new().text(streamed).final_text(final_text).tool_call("t", json!({})));
        let (kind, history_len) = runtime().block_on(async {
            let mut session = Session::builder(model).tool(FnTool::echo("t")).build().await.unwrap();
            let err = session.run("go", &mut Vec::new()).await.unwrap_err();
            (err.kind, session.history().len())
        });
        prop_assert!(matches!(kind, TurnErrorKind::NonPrefixText(_)));
        prop_assert_eq!(history_len, 0);
    }
}

#[derive(Clone, Copy, Debug)]
enum Behaviour {
    Answer,
    Fail,
    Panic,
    HangInterruptible,
    HangCooperative,
    CancelTurn,
    Sleep(u64),
    Unknown,
    NeedsApproval,
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        3 => Just(Behaviour::Answer),
        1 => Just(Behaviour::Fail),
        1 => Just(Behaviour::Panic),
        1 => Just(Behaviour::HangInterruptible),
        1 => Just(Behaviour::HangCooperative),
        1 => Just(Behaviour::CancelTurn),
        2 => (1u64..50).prop_map(Behaviour::Sleep),
        1 => Just(Behaviour::Unknown),
        1 => Just(Behaviour::NeedsApproval),
    ]
}

#[derive(Clone, Debug)]
enum Round {
    Batch(Vec<Behaviour>),
    ModelError,
    Answer,
}

fn round() -> impl Strategy<Value = Round> {
    prop_oneof![
        4 => prop::collection::vec(behaviour(), 1..5).prop_map(Round::Batch),
        1 => Just(Round::ModelError),
        2 => Just(Round::Answer),
    ]
}

fn tool_name(b: Behaviour) -> String {
    match b {
        Behaviour::Answer => "answer".into(),
        Behaviour::Fail => "fail".into(),
        Behaviour::Panic => "panic".into(),
        Behaviour::HangInterruptible => "hang_interruptible".into(),
        Behaviour::HangCooperative => "hang_cooperative".into(),
        Behaviour::CancelTurn => "cancel_turn".into(),
        Behaviour::Sleep(_) => "sleep".into(),
        Behaviour::Unknown => "no_such_tool".into(),
        Behaviour::NeedsApproval => "write".into(),
    }
}

fn tools(cancel: &CancellationToken) -> Vec<FnTool> {
    let token = cancel.clone();
    vec![
        FnTool::echo("answer"),
        FnTool::new("fail", ToolCategory::Read, |_, _| Box::pin(async { ToolOutput::error("failed") })),
        FnTool::panicking("panic", "random panic"),
        FnTool::new("hang_interruptible", ToolCategory::Read, |_, _| Box::pin(std::future::pending()))
            .cancellation(CancellationPolicy::Interruptible),
        FnTool::until_cancelled("hang_cooperative", ToolCategory::Read),
        FnTool::new("cancel_turn", ToolCategory::Read, move |_, _| {
            let token = token.clone();
            Box::pin(async move {
                token.cancel();
                ToolOutput::text("cancelled")
            })
        }),
        FnTool::new("sleep", ToolCategory::Read, |args, _| {
            Box::pin(async move {
                let ms = args["ms"].as_u64().unwrap_or(1);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                ToolOutput::text("slept")
            })
        }),
        common::write_tool("write"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// After every turn, whatever failed and wherever, history is well
    /// formed (each call has exactly one result, ids unique, no partial
    /// batch), and replaying the journal gives the same history.
    #[test]
    fn batches_stay_complete_under_random_failure_points(
        turns in prop::collection::vec(prop::collection::vec(round(), 1..4), 1..4),
        sequential in any::<bool>(),
    ) {
        runtime().block_on(async {
            let journal = InMemoryJournal::new();
            let mut script = ScriptedModel::new();
            for rounds in &turns {
                for round in rounds {
                    script = script.reply(match round {
                        Round::Batch(calls) => calls.iter().fold(Reply::new(), |reply, b| {
                            let args = match b { Behaviour::Sleep(ms) => json!({"ms": ms}), _ => json!({}) };
                            reply.tool_call(tool_name(*b), args)
                        }),
                        Round::ModelError => Reply::new().text("partial").error(ModelError::Network("reset".into())),
                        Round::Answer => Reply::new().text("done"),
                    });
                }
                // Each turn ends with an answer if it gets that far.
                script = script.answer("final");
            }
            // The cancel_turn tool fires the token all turns share, so the
            // turns after it start cancelled and must roll back cleanly:
            // one more failure point.
            let token = CancellationToken::new();
            let mut builder = Session::builder(script).journal(journal.clone()).tool_timeout(Duration::from_secs(1));
            if sequential {
                builder = builder.sequential_tools();
            }
            for tool in tools(&token) {
                builder = builder.tool(tool);
            }
            let mut session = builder.build().await.unwrap();
            for _ in &turns {
                let before = session.history().len();
                let result = session.run_with("go", TurnOptions::cancel_on(token.clone()), &mut Vec::new()).await;
                validate_history(session.history()).unwrap();
                if let Err(err) = &result
                    && err.disposition == bosun_core::Disposition::RolledBack
                {
                    assert_eq!(session.history().len(), before);
                }
                let replayed = bosun_core::replay(&journal.records()).unwrap();
                assert_eq!(replayed.messages.as_slice(), session.history());
            }
        });
    }
}
