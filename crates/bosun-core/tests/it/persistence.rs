//! Holding a model to its task (`SessionBuilder::persistence`) and the
//! session's own opening reads (`SessionBuilder::opening_calls`): what each
//! request asked of the model, what history kept, and what the outcome says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bosun_core::{
    ContentPart, Message, Mode, OpeningCall, Persistence, Session, ToolCategory, ToolChoice, ToolOutput,
};
use bosun_testing::{FnTool, RecordedRequest, ScriptedModel};
use serde_json::json;

use crate::common::{self, TestResult};

fn choices(requests: &[RecordedRequest]) -> Vec<Option<ToolChoice>> {
    requests.iter().map(|r| r.options.tool_choice).collect()
}

/// The last text part of the last message a request carried.
fn closing_text(request: &RecordedRequest) -> String {
    let last = request.messages.last().expect("a request has messages");
    match last.content().last() {
        Some(ContentPart::Text { text }) => text.clone(),
        _ => String::new(),
    }
}

fn failing(name: &str) -> FnTool {
    FnTool::new(name, ToolCategory::Write, |_, _| {
        Box::pin(async { ToolOutput::error("old_text was not found") })
    })
}

#[tokio::test]
async fn after_a_failed_call_the_next_two_rounds_must_be_calls() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("edit", json!({"n": 1}))
        .tool_call("edit", json!({"n": 2}))
        .tool_call("edit", json!({"n": 3}))
        .answer("I could not make the edit.");
    let mut session = Session::builder(model.clone())
        .tool(failing("edit"))
        .persistence(Persistence::for_small_models())
        .build()
        .await?;
    let outcome = session.run("What would the edit look like?", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(
        choices(&requests),
        [None, Some(ToolChoice::Required), Some(ToolChoice::Required), None],
        "two retries after failures, then the model may answer"
    );
    assert!(
        closing_text(&requests[1]).contains("The last tool call failed"),
        "{}",
        closing_text(&requests[1])
    );
    assert!(!closing_text(&requests[3]).contains("[bosun]"), "no note once the rule lets go");
    assert!(!outcome.unfinished_change, "a question asks for no change");
    // The notes were for the requests only.
    let stored = session
        .history()
        .iter()
        .flat_map(Message::content)
        .any(|part| matches!(part, ContentPart::Text { text } if text.contains("[bosun]")));
    assert!(!stored, "history holds what the model and tools said, not the notes");
    Ok(())
}

#[tokio::test]
async fn a_change_turn_is_held_until_a_write_succeeds() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "run.sh"}))
        .tool_call("write", json!({"path": "run.sh"}))
        .answer("Fixed.");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .tool(common::write_tool("write"))
        .mode(Mode::Autonomous)
        .persistence(Persistence::for_small_models())
        .build()
        .await?;
    let outcome = session.run("Fix the typo in run.sh.", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(
        choices(&requests),
        [Some(ToolChoice::Required), Some(ToolChoice::Required), None],
        "calls until the write, then the answer is free"
    );
    assert!(
        closing_text(&requests[1]).contains("Nothing has been changed yet"),
        "{}",
        closing_text(&requests[1])
    );
    assert!(!outcome.unfinished_change);
    Ok(())
}

#[tokio::test]
async fn a_change_never_made_is_reported_by_the_outcome_after_three_pushes() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "b"}))
        .tool_call("read", json!({"path": "c"}))
        .answer("The file is now fixed.");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .persistence(Persistence::for_small_models())
        .build()
        .await?;
    let outcome = session.run("Fix the typo in run.sh.", &mut Vec::new()).await?;
    assert_eq!(
        choices(&model.requests()),
        [Some(ToolChoice::Required), Some(ToolChoice::Required), Some(ToolChoice::Required), None],
        "three pushes, then the model may answer"
    );
    assert!(outcome.unfinished_change, "the answer claims a change no call made");
    Ok(())
}

#[tokio::test]
async fn without_persistence_nothing_is_required_and_the_outcome_still_tells() -> TestResult {
    let model = ScriptedModel::new().tool_call("edit", json!({})).answer("Done.");
    let mut session = Session::builder(model.clone()).tool(failing("edit")).build().await?;
    let outcome = session.run("Fix the typo in run.sh.", &mut Vec::new()).await?;
    assert_eq!(choices(&model.requests()), [None, None]);
    assert!(outcome.unfinished_change, "the failed edit changed nothing");
    Ok(())
}

#[tokio::test]
async fn the_files_a_prompt_names_are_read_before_the_first_round() -> TestResult {
    let model = ScriptedModel::new().answer("It prints hello.");
    let read = FnTool::text("read", ToolCategory::Read, |args| format!("contents of {}", args["path"]));
    let mut session = Session::builder(model.clone())
        .tool(read.clone())
        .first_round_tool_choice(ToolChoice::Required)
        .opening_calls(Arc::new(|prompt: &[ContentPart]| {
            let asked = prompt
                .iter()
                .any(|part| matches!(part, ContentPart::Text { text } if text.contains("greet.sh")));
            if asked { vec![OpeningCall::new("read", json!({"path": "greet.sh"}))] } else { Vec::new() }
        }))
        .build()
        .await?;
    session.run("What does greet.sh print?", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(read.calls(), [json!({"path": "greet.sh"})], "the session read the named file once");
    assert_eq!(choices(&requests), [None], "the read stands for the first round's required call");
    let first = &requests[0].messages;
    assert!(matches!(
        first.as_slice(),
        [Message::User { .. }, Message::Assistant { .. }, Message::ToolResult { .. }]
    ));
    let (text, is_error) = common::tool_result(session.history(), 0);
    assert_eq!((text.as_str(), is_error), ("contents of \"greet.sh\"", false));

    // A prompt that names nothing gets no opening read, and round 1 is a call.
    session.run("What is 17 times 23?", &mut Vec::new()).await.ok();
    assert_eq!(read.calls().len(), 1, "no opening read for a prompt that names nothing");
    assert_eq!(choices(&model.requests()).last(), Some(&Some(ToolChoice::Required)));
    Ok(())
}
