//! Invariants 1–3: one turn at a time, delta reconciliation, what enters history.

use crate::common;

use bosun_core::{
    Capabilities, Disposition, Message, Model, ModelError, ModelRequest, ModelStream, Session, ToolCategory,
    TurnErrorKind,
};
use bosun_testing::{Reply, ScriptedModel};
use common::{Log, TestResult, logging_tool, streamed_reasoning, streamed_text};
use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Wraps a model and logs when each response starts and ends.
struct LoggedModel {
    inner: ScriptedModel,
    log: Log,
}

impl Model for LoggedModel {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        self.log.push("model start");
        let ends = EndsOnDrop(self.log.clone());
        let inner = self.inner.stream(request, cancel);
        Box::pin(inner.map(move |item| {
            let _held_until_the_stream_is_dropped = &ends;
            item
        }))
    }
}

struct EndsOnDrop(Log);

impl Drop for EndsOnDrop {
    fn drop(&mut self) {
        self.0.push("model end");
    }
}

#[tokio::test]
async fn invariant_01_model_and_tool_steps_never_overlap() -> TestResult {
    let log = Log::default();
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("a", json!({})).tool_call("b", json!({})))
        .reply(Reply::new().tool_call("a", json!({})))
        .answer("done");
    let mut session = Session::builder(LoggedModel { inner: model, log: log.clone() })
        .tool(logging_tool("a", ToolCategory::Read, &log))
        .tool(logging_tool("b", ToolCategory::Read, &log))
        .build()
        .await?;
    session.run("go", &mut Vec::new()).await?;
    // Between a model start and its end no tool runs, and no model starts
    // while a tool runs.
    let mut model_open = false;
    let mut tools_open = 0;
    for entry in log.entries() {
        match entry.as_str() {
            "model start" => {
                assert!(!model_open && tools_open == 0, "model step overlaps: {:?}", log.entries());
                model_open = true;
            }
            "model end" => model_open = false,
            e if e.starts_with("tool start") => {
                assert!(!model_open, "tool step overlaps a model step: {:?}", log.entries());
                tools_open += 1;
            }
            _ => tools_open -= 1,
        }
    }
    assert_eq!(log.entries().iter().filter(|e| *e == "model start").count(), 3);
    Ok(())
}

#[tokio::test]
async fn invariant_02_missing_suffix_is_emitted_before_completion() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().text("Hel").final_text("Hello, world"));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    let outcome = session.run("hi", &mut events).await?;
    assert_eq!(streamed_text(&events), "Hello, world");
    assert_eq!(outcome.answer, "Hello, world");
    assert_eq!(session.history()[1].text(), "Hello, world");
    let end = events.iter().position(|e| matches!(e, bosun_core::Event::TurnEnd { .. }));
    let last_delta = events.iter().rposition(|e| matches!(e, bosun_core::Event::TextDelta { .. }));
    assert!(last_delta < end, "the suffix comes before the turn ends");
    Ok(())
}

#[tokio::test]
async fn invariant_02_non_prefix_delta_fails_turn() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().text("Hi there").final_text("Hello"));
    let mut session = Session::builder(model).build().await?;
    let err = session.run("hi", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::NonPrefixText(_)), "{err}");
    assert_eq!(err.disposition, Disposition::RolledBack);
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_02_reasoning_follows_the_prefix_rule() -> TestResult {
    // No reasoning delta at all: the whole reasoning is emitted at the end.
    let model = ScriptedModel::new()
        .reply(Reply::new().text("answer").final_reasoning("thought it through"))
        .reply(Reply::new().reasoning("wrong").final_reasoning("right").text("x"));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    session.run("one", &mut events).await?;
    assert_eq!(streamed_reasoning(&events), "thought it through");
    let err = session.run("two", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::NonPrefixReasoning(_)), "{err}");
    assert_eq!(session.history().len(), 2, "the failed turn left nothing");
    Ok(())
}

#[tokio::test]
async fn invariant_03_reasoning_only_response_does_not_enter_history() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().reasoning("hmm"));
    let mut session = Session::builder(model).build().await?;
    let err = session.run("hi", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::EmptyResponse), "{err}");
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_03_stream_without_final_response_does_not_enter_history() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().text("partial").truncated())
        .reply(Reply::new().text("partial").error(ModelError::Network("reset".into())));
    let mut session = Session::builder(model).build().await?;
    let err = session.run("one", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Truncated), "{err}");
    let err = session.run("two", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(err.kind, TurnErrorKind::Model(ModelError::Network(_))), "{err}");
    assert!(session.history().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_03_answer_enters_history_with_usage_and_stop_reason() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().text("ok").usage(bosun_core::Usage::new(10, 2)));
    let mut session = Session::builder(model).build().await?;
    let outcome = session.run("hi", &mut Vec::new()).await?;
    assert_eq!(outcome.usage, bosun_core::Usage::new(10, 2));
    let Message::Assistant { usage, stop_reason, .. } = &session.history()[1] else {
        panic!("expected an assistant message: {:?}", session.history());
    };
    assert_eq!(*usage, bosun_core::Usage::new(10, 2));
    assert_eq!(*stop_reason, bosun_core::StopReason::Stop);
    Ok(())
}
