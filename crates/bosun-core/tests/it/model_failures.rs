//! What a turn says about a model that fails, refuses or retries (issue 13's
//! core part): the error event carries the failure's class, a refusal is
//! named as one, an adapter's retry reaches the event stream, and arguments
//! that are not JSON are reported as such to the model.

use crate::common;

use bosun_core::event::TurnOutcomeKind;
use bosun_core::{Event, ModelError, ModelEvent, Session, StopReason, TurnErrorKind, validate_history};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use common::{TestResult, tool_result};
use serde_json::json;

fn errors(events: &[Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Error { kind, class, .. } => Some((kind.clone(), class.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_error_event_carries_the_model_failures_class() -> TestResult {
    let cases = [
        (ModelError::RateLimited { message: "slow down".into(), retry_after_ms: None }, "rate_limited"),
        (ModelError::Network("connection refused".into()), "network"),
        (ModelError::ContextOverflow("too long".into()), "overflow"),
        (ModelError::Authentication("bad key".into()), "authentication"),
        (ModelError::Server("boom".into()), "server"),
    ];
    for (error, class) in cases {
        let model = ScriptedModel::new().reply(Reply::new().error(error));
        let mut session = Session::builder(model).build().await?;
        let mut events = Vec::new();
        let failed = session.run("hi", &mut events).await.unwrap_err();
        assert!(matches!(failed.kind, TurnErrorKind::Model(_)));
        assert_eq!(errors(&events), [("model".to_owned(), Some(class.to_owned()))]);
    }
    // Failures that are not the model's carry no class.
    let model = ScriptedModel::new().reply(Reply::new().reasoning("hmm"));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    session.run("hi", &mut events).await.unwrap_err();
    assert_eq!(errors(&events), [("protocol".to_owned(), None)]);
    Ok(())
}

#[tokio::test]
async fn a_refusal_with_nothing_else_is_named_a_refusal() -> TestResult {
    let model = ScriptedModel::new().reply(Reply::new().stop_reason(StopReason::Refusal));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    let failed = session.run("something it will not do", &mut events).await.unwrap_err();
    assert!(matches!(failed.kind, TurnErrorKind::Refused { .. }), "{failed}");
    assert!(failed.to_string().contains("refused"), "{failed}");
    assert_eq!(errors(&events), [("refused".to_owned(), None)]);
    assert!(session.history().is_empty());
    // The provider's explanation, when it gave one, is what the person reads.
    let explained = TurnErrorKind::Refused { explanation: Some("cyber: working malware".into()) };
    assert_eq!(explained.to_string(), "the model refused to answer (cyber: working malware)");
    // A refusal with text is an answer like any other.
    let model = ScriptedModel::new()
        .reply(Reply::new().text("I can't help with that.").stop_reason(StopReason::Refusal));
    let mut session = Session::builder(model).build().await?;
    let outcome = session.run("something it will not do", &mut Vec::new()).await?;
    assert_eq!(outcome.stop_reason, StopReason::Refusal);
    Ok(())
}

#[tokio::test]
async fn an_adapters_retry_reaches_the_event_stream() -> TestResult {
    let retrying = ModelEvent::Retrying { attempt: 2, wait_ms: 1500, reason: "HTTP 503 overloaded".into() };
    let model = ScriptedModel::new().reply(Reply::new().event(retrying).text("fine now"));
    let mut session = Session::builder(model).build().await?;
    let mut events = Vec::new();
    let outcome = session.run("hi", &mut events).await?;
    assert_eq!(outcome.answer, "fine now");
    let retries: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::ModelRetry { .. })).collect();
    assert_eq!(
        retries,
        [&Event::ModelRetry { attempt: 2, wait_ms: 1500, reason: "HTTP 503 overloaded".into() }]
    );
    assert!(matches!(events.last(), Some(Event::TurnEnd { outcome: TurnOutcomeKind::Completed, .. })));
    Ok(())
}

#[tokio::test]
async fn arguments_that_are_not_json_are_reported_as_such() -> TestResult {
    // Adapters keep argument text that does not parse as a JSON string.
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("read", json!("{\"path\": \"a.txt\""))
                .tool_call("read", json!("{\"path\": \"a.txt\"}")),
        )
        .answer("done");
    let read = FnTool::echo("read");
    let mut session = Session::builder(model).tool(read.clone()).build().await?;
    session.run("read a.txt", &mut Vec::new()).await?;
    let (broken, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert!(broken.starts_with("the arguments of `read` are not valid JSON ("), "{broken}");
    assert!(broken.contains("line 1 column"), "says where: {broken}");
    let (doubled, is_error) = tool_result(session.history(), 1);
    assert!(is_error);
    assert!(doubled.contains("a JSON string holding JSON, not an object"), "{doubled}");
    assert!(read.calls().is_empty());
    validate_history(session.history())?;
    Ok(())
}
