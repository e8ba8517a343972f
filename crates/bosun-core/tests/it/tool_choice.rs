//! The first round's tool choice: `SessionBuilder::first_round_tool_choice`
//! sets `options.tool_choice` on round 1 of each turn, only when tools are
//! offered and the turn's options set none; later rounds are left to the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use bosun_core::{GenerationOptions, Session, ToolChoice, TurnOptions};
use bosun_testing::{FnTool, RecordedRequest, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// The tool choice each request carried, in order.
fn choices(requests: &[RecordedRequest]) -> Vec<Option<ToolChoice>> {
    requests.iter().map(|r| r.options.tool_choice).collect()
}

/// A model that calls `read` once, then answers.
fn read_then_answer() -> ScriptedModel {
    ScriptedModel::new().tool_call("read", json!({"path": "a"})).answer("done")
}

#[tokio::test]
async fn the_first_round_carries_the_chosen_tool_choice_and_the_second_none() -> TestResult {
    let model = read_then_answer();
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .first_round_tool_choice(ToolChoice::Required)
        .build()
        .await?;
    session.run("what does a say?", &mut Vec::new()).await?;
    assert_eq!(choices(&model.requests()), [Some(ToolChoice::Required), None]);
    Ok(())
}

#[tokio::test]
async fn a_turn_that_sets_a_tool_choice_keeps_its_own() -> TestResult {
    let model = read_then_answer();
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .first_round_tool_choice(ToolChoice::Required)
        .build()
        .await?;
    let mut generation = GenerationOptions::default();
    generation.tool_choice = Some(ToolChoice::Auto);
    let turn = TurnOptions::default().with_generation(generation);
    session.run_with("what does a say?", turn, &mut Vec::new()).await?;
    assert_eq!(
        choices(&model.requests()),
        [Some(ToolChoice::Auto), Some(ToolChoice::Auto)],
        "the turn's choice holds for every round, the first included"
    );
    Ok(())
}

#[tokio::test]
async fn a_session_without_tools_sends_no_tool_choice() -> TestResult {
    let model = ScriptedModel::new().answer("hello");
    let mut session =
        Session::builder(model.clone()).first_round_tool_choice(ToolChoice::Required).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    let requests = model.requests();
    assert!(requests[0].tools.is_empty());
    assert_eq!(choices(&requests), [None], "a required call with nothing to call cannot be met");
    Ok(())
}

#[tokio::test]
async fn without_the_builder_option_no_tool_choice_is_sent() -> TestResult {
    let model = read_then_answer();
    let mut session = Session::builder(model.clone()).tool(FnTool::echo("read")).build().await?;
    session.run("what does a say?", &mut Vec::new()).await?;
    assert_eq!(choices(&model.requests()), [None, None]);
    Ok(())
}

#[tokio::test]
async fn every_turn_s_first_round_carries_it_again() -> TestResult {
    let model = read_then_answer().tool_call("read", json!({"path": "b"})).answer("done too");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .first_round_tool_choice(ToolChoice::Required)
        .build()
        .await?;
    session.run("what does a say?", &mut Vec::new()).await?;
    session.run("and b?", &mut Vec::new()).await?;
    assert_eq!(
        choices(&model.requests()),
        [Some(ToolChoice::Required), None, Some(ToolChoice::Required), None],
        "round 1 of each turn, not of the session"
    );
    Ok(())
}
