//! The repeated-call rule. A batch repeats when each of its results is one
//! the turn already produced (same tool, same output). After the first
//! repeat the model keeps its tools and the request shows a note in place of
//! the repeated results; after the second, every later round of the turn
//! offers no tools and leaves the repeated batches out. History and the
//! journal always keep the real results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use bosun_core::{CallId, Capabilities, InMemoryJournal, Message, Mode, Session, Support, ToolCategory};
use bosun_testing::{FnTool, RecordedRequest, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// A read tool whose answer depends on the path only, so calls that differ
/// in other arguments can still return the same result.
fn read() -> FnTool {
    FnTool::text("read", ToolCategory::Read, |args| format!("content of {}", args["path"]))
}

/// How many tools each request offered.
fn offered(requests: &[RecordedRequest]) -> Vec<usize> {
    requests.iter().map(|r| r.tools.len()).collect()
}

/// The call id and text of a tool-result message.
fn result(message: &Message) -> (CallId, String) {
    match message {
        Message::ToolResult { call_id, .. } => (*call_id, message.text()),
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Whether `text` is bosun's note in place of a repeated result.
fn is_note(text: &str) -> bool {
    text.starts_with("[bosun: ") && text.contains("Do not repeat it")
}

#[tokio::test]
async fn a_first_repeat_keeps_the_tools_and_the_request_notes_it_in_place_of_the_result() -> TestResult {
    // Step 1 read twice (the second read adds nothing), then step 2: write.
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a", "limit": 9}))
        .tool_call("write", json!({"path": "b"}))
        .answer("Copied.");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone())
        .tool(read())
        .tool(common::write_tool("write"))
        .mode(Mode::Write)
        .journal(journal.clone())
        .build()
        .await?;
    let outcome = session.run("copy a to b", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "Copied.");
    assert_eq!(common::tool_result(session.history(), 2), ("wrote".into(), false), "step 2 ran");
    let requests = model.requests();
    assert_eq!(offered(&requests), [2, 2, 2, 2], "one repeat withdraws no tool");

    // history: user, call a, "content of a", call a again, "content of a", ...
    let history = session.history();
    let (repeat_id, real) = result(&history[4]);
    assert_eq!(real, r#"content of "a""#, "history keeps the real result");
    let shown = &requests[2].messages;
    assert_eq!(shown[..4], history[..4], "the repeated call stays, so its result still answers it");
    let (shown_id, note) = result(&shown[4]);
    assert_eq!(shown_id, repeat_id);
    assert!(is_note(&note), "the repeated result is replaced by the note: {note:?}");
    assert_eq!(shown.len(), 5);
    assert!(is_note(&result(&requests[3].messages[4]).1), "later rounds keep the note");

    // The journal holds what history holds: a resume shows the real result.
    let resumed = Session::builder(ScriptedModel::new())
        .tool(read())
        .tool(common::write_tool("write"))
        .resume(journal)
        .await?;
    assert_eq!(resumed.history(), history);
    Ok(())
}

#[tokio::test]
async fn a_second_repeat_withdraws_the_tools_and_leaves_the_repeats_out() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a", "limit": 9}))
        .tool_call("read", json!({"path": "a", "limit": 3}))
        .answer("It says hello.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let outcome = session.run("what does a say?", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "It says hello.", "the turn ends with the answer-only round's answer");
    assert_eq!(outcome.rounds, 4);
    let requests = model.requests();
    assert_eq!(offered(&requests), [1, 1, 1, 0], "the second repeat leaves the model no tools");
    // The answer-only round sees the first call and its result, not the
    // repeats: a small model reading its repeated calls imitates them.
    let history = session.history();
    assert_eq!(history.len(), 8, "the repeats stay in the history: {history:?}");
    assert_eq!(requests[3].messages, history[..3].to_vec());
    Ok(())
}

/// Our choice: the count of repeats is per turn and never reset by a batch
/// that taught something, or a model alternating a new call with a repeat
/// would never be stopped.
#[tokio::test]
async fn a_new_result_between_two_repeats_does_not_reset_the_loop_protection() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a", "limit": 9}))
        .tool_call("read", json!({"path": "b"}))
        .tool_call("read", json!({"path": "a", "limit": 3}))
        .answer("a and b read.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let outcome = session.run("read a and b", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "a and b read.");
    let requests = model.requests();
    assert_eq!(offered(&requests), [1, 1, 1, 1, 0], "the second repeat counts though b came between");
    let history = session.history();
    assert!(is_note(&result(&requests[3].messages[4]).1), "the first repeat is still noted after b");
    assert_eq!(requests[3].messages[5..], history[5..7], "b's batch is shown as it is");
    let kept: Vec<Message> = [0, 1, 2, 5, 6].map(|i| history[i].clone()).into();
    assert_eq!(requests[4].messages, kept, "both repeats are left out, b's batch stays");
    Ok(())
}

#[tokio::test]
async fn once_answer_only_the_rest_of_the_turn_stays_without_tools() -> TestResult {
    // The model calls a tool it was not offered; the call runs, and the
    // loop protection still holds for the next round.
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a", "limit": 9}))
        .tool_call("read", json!({"path": "a", "limit": 3}))
        .tool_call("read", json!({"path": "b"}))
        .answer("a and b read.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let outcome = session.run("read a and b", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "a and b read.");
    assert_eq!(offered(&model.requests()), [1, 1, 1, 0, 0]);
    Ok(())
}

#[tokio::test]
async fn each_turn_starts_without_repeats() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a"}))
        .tool_call("read", json!({"path": "a"}))
        .answer("It says a.")
        .tool_call("read", json!({"path": "a"}))
        .answer("Still a.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    session.run("what does a say?", &mut Vec::new()).await?;
    session.run("read it again", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(offered(&requests), [1, 1, 1, 0, 1, 1], "a new turn has its tools back");
    let last = &requests[5];
    assert_eq!(last.messages, session.history()[..last.messages.len()].to_vec(), "nothing noted or left out");
    Ok(())
}

#[tokio::test]
async fn a_batch_with_one_new_result_is_not_a_repeat() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("read", json!({"path": "a"}))
        .reply(Reply::new().tool_call("read", json!({"path": "a"})).tool_call("read", json!({"path": "b"})))
        .answer("Both read.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    let outcome = session.run("read a and b", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "Both read.");
    let requests = model.requests();
    assert_eq!(offered(&requests), [1, 1, 1], "a batch that taught something keeps the tools");
    assert_eq!(requests[2].messages, session.history()[..6].to_vec(), "nothing is noted or left out");
    Ok(())
}

#[tokio::test]
async fn a_noted_repeat_is_also_stripped_of_reasoning_for_a_model_that_cannot_take_it_back() -> TestResult {
    let mut caps = Capabilities::all();
    caps.reasoning_replay = Support::No;
    let model = ScriptedModel::with_capabilities(caps)
        .tool_call("read", json!({"path": "a"}))
        .reply(Reply::new().reasoning("read it again").tool_call("read", json!({"path": "a"})))
        .answer("It says a.");
    let mut session = Session::builder(model.clone()).tool(read()).build().await?;
    session.run("what does a say?", &mut Vec::new()).await?;
    let shown = &model.requests()[2].messages;
    assert_eq!(shown[3], session.history()[3].without_reasoning());
    assert_ne!(shown[3], session.history()[3], "history keeps the reasoning");
    assert!(is_note(&result(&shown[4]).1));
    Ok(())
}
