//! Invariant 8's tool policy (issue 12): a hard ceiling on calls that must
//! finish, panics anywhere in `execute`, disabled tools withdrawn from the
//! request, and the second argument check on the value dispatched.

use crate::common;

use std::time::Duration;

use bosun_core::limits::Limits;
use bosun_core::{
    CancellationPolicy, InMemoryJournal, JournalRecord, Session, ToolCategory, ToolOutput, validate_history,
};
use bosun_testing::{FnTool, RecordingApprover, ScriptedModel};
use common::{TestResult, tool_result};
use serde_json::json;

/// Far beyond any ceiling: a run still going then has hung.
const HUNG: Duration = Duration::from_secs(24 * 3600);

/// A tool that never finishes and never looks at its token.
fn hung_write(name: &str) -> FnTool {
    FnTool::new(name, ToolCategory::Read, |_, _| Box::pin(std::future::pending::<ToolOutput>()))
        .cancellation(CancellationPolicy::FinishOnceStarted)
}

#[tokio::test(start_paused = true)]
async fn invariant_08_a_call_that_never_finishes_is_given_up_at_the_ceiling() -> TestResult {
    let model = ScriptedModel::new().tool_call("write", json!({})).answer("moved on");
    let journal = InMemoryJournal::new();
    let timeout = Duration::from_secs(10);
    let mut session = Session::builder(model)
        .tool(hung_write("write"))
        .tool_timeout(timeout)
        .journal(journal.clone())
        .build()
        .await?;
    let started = tokio::time::Instant::now();
    let run = tokio::time::timeout(HUNG, session.run("go", &mut Vec::new())).await;
    let Ok(outcome) = run else {
        return Err("the turn hung on a tool that ignores its token".into());
    };
    assert_eq!(outcome?.answer, "moved on");
    let ceiling = Limits::default().with_tool_timeout(timeout).tool_ceiling();
    assert_eq!(ceiling, timeout + Limits::TOOL_GRACE);
    assert_eq!(started.elapsed(), ceiling, "the session waits exactly up to the ceiling");
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert!(text.contains("may have had an effect"), "{text}");
    validate_history(session.history())?;
    // Journaled like any finished invocation.
    let finished: Vec<String> = journal
        .records()
        .into_iter()
        .filter_map(|r| match r {
            JournalRecord::InvocationFinished { result, .. } => Some(result.text()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [text]);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_08_the_ceiling_also_bounds_sequential_calls() -> TestResult {
    let model = ScriptedModel::new().tool_call("write", json!({})).answer("moved on");
    let builder = Session::builder(model)
        .tool(hung_write("write"))
        .tool_timeout(Duration::from_secs(1))
        .sequential_tools();
    let mut session = builder.build().await?;
    let run = tokio::time::timeout(HUNG, session.run("go", &mut Vec::new())).await;
    let Ok(outcome) = run else {
        return Err("the turn hung on a tool that ignores its token".into());
    };
    assert_eq!(outcome?.answer, "moved on");
    assert!(tool_result(session.history(), 0).0.contains("may have had an effect"));
    Ok(())
}

#[test]
fn invariant_08_the_ceiling_has_a_hard_maximum() {
    let longest = Limits::default().with_tool_timeout(Duration::from_secs(24 * 3600));
    assert_eq!(longest.tool_ceiling(), Limits::HARD_MAX_TOOL_CEILING);
    assert_eq!(Limits::HARD_MAX_TOOL_CEILING, Limits::HARD_MAX_TOOL_TIMEOUT + Limits::TOOL_GRACE);
}

#[tokio::test]
async fn invariant_08_a_panic_before_the_future_is_returned_is_caught() -> TestResult {
    let model = ScriptedModel::new().tool_call("boom", json!({})).answer("recovered");
    #[allow(clippy::panic)]
    let boom = FnTool::new("boom", ToolCategory::Read, |_, _| panic!("bad setup"));
    let mut session = Session::builder(model).tool(boom).build().await?;
    let outcome = session.run("go", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "recovered");
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert_eq!(text, "the tool panicked: bad setup");
    Ok(())
}

#[tokio::test]
async fn invariant_05_disabled_tools_are_withdrawn_from_the_request() -> TestResult {
    let model = ScriptedModel::new().tool_call("read", json!({})).answer("a").answer("b").answer("c");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("read"))
        .tool(FnTool::echo("other"))
        .build()
        .await?;
    session.run("one", &mut Vec::new()).await?;
    session.disable_tool("read")?;
    session.run("two", &mut Vec::new()).await?;
    session.enable_tool("read")?;
    session.run("three", &mut Vec::new()).await?;
    let offered: Vec<Vec<String>> = model.requests().into_iter().map(|r| r.tools).collect();
    let both = vec!["other".to_owned(), "read".to_owned()];
    assert_eq!(offered, vec![both.clone(), both.clone(), vec!["other".to_owned()], both]);
    Ok(())
}

#[tokio::test]
async fn invariant_06_the_value_dispatched_is_the_value_validated() -> TestResult {
    // The approver sees, and the tool receives, exactly the model's object:
    // no step between the two checks can change it (`ApprovalDecision` and
    // `Tool::effects` get no way to rewrite arguments).
    let arguments = json!({"path": "a.txt", "n": 1.5, "tags": ["x", "y"], "nested": {"k": null}});
    let model = ScriptedModel::new().tool_call("write", arguments.clone()).answer("done");
    let write = common::write_tool("write").schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "n": {"type": "number"}},
        "required": ["path", "n"]
    }));
    let approver = RecordingApprover::approve_all();
    let mut session = Session::builder(model).tool(write.clone()).approver(approver.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    assert_eq!(
        approver.seen().into_iter().map(|r| r.arguments).collect::<Vec<_>>(),
        std::slice::from_ref(&arguments)
    );
    assert_eq!(write.calls(), std::slice::from_ref(&arguments));
    let called: Vec<_> =
        session.history().iter().flat_map(|m| m.tool_calls().map(|c| c.arguments.clone())).collect();
    assert_eq!(called, [arguments]);
    Ok(())
}
