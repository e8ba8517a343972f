//! Invariants 4–7: minted call ids, the authority ceiling and active subset,
//! the bounded schema vocabulary, the authority snapshot.

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use bosun_core::{
    BuildError, CallId, Event, InMemoryJournal, Message, ModelError, Session, ToolCategory, ToolOutput,
    WorkspaceIdentity,
};
use bosun_testing::{FnTool, RecordingApprover, Reply, ScriptedModel};
use common::{TestResult, exec_tool, tool_result};
use serde_json::json;
use tokio::sync::Notify;

fn proposed_ids(events: &[Event]) -> Vec<CallId> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallProposed { call_id, .. } => Some(*call_id),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn invariant_04_minted_call_ids_are_unique_and_mapped() -> TestResult {
    // The model reuses "call_0" within a response and across rounds.
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call_with_id("call_0", "echo", json!({"n": 1})).tool_call_with_id(
            "call_0",
            "echo",
            json!({"n": 2}),
        ))
        .reply(Reply::new().tool_call_with_id("call_0", "echo", json!({"n": 3})))
        .answer("done");
    let mut session = Session::builder(model.clone()).tool(FnTool::echo("echo")).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let ids = proposed_ids(&events);
    assert_eq!(ids.len(), 3);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3, "minted ids are unique");
    for id in &ids {
        assert_eq!(id.as_uuid().get_version_num(), 7, "UUIDv7");
        assert_eq!(session.provider_call_id(*id), Some("call_0"));
        assert!(session.knows_call_id(*id));
    }
    assert_eq!(session.minted_call_ids("call_0"), ids.as_slice());
    // Nothing the model sent as an id reaches history or the next request.
    let history = serde_json::to_string(session.history())?;
    assert!(!history.contains("call_0"), "{history}");
    let last_request = serde_json::to_string(&model.requests().last().map(|r| r.messages.clone()))?;
    assert!(!last_request.contains("call_0"));
    // Results answer the minted ids in call order.
    let result_ids: Vec<CallId> = session
        .history()
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { call_id, .. } => Some(*call_id),
            _ => None,
        })
        .collect();
    assert_eq!(result_ids, ids);
    Ok(())
}

#[tokio::test]
async fn invariant_04_rolled_back_turn_returns_its_minted_ids() -> TestResult {
    // A refused call (no effect), then a model failure: the turn rolls back,
    // and so do the ids it minted.
    let model = ScriptedModel::new()
        .tool_call("shell", json!({}))
        .reply(Reply::new().error(ModelError::Server("boom".into())));
    let mut session = Session::builder(model).tool(exec_tool("shell")).build().await?;
    let mut events = Vec::new();
    let err = session.run("go", &mut events).await.unwrap_err();
    assert_eq!(err.disposition, bosun_core::Disposition::RolledBack);
    let ids = proposed_ids(&events);
    assert_eq!(ids.len(), 1);
    assert!(!session.knows_call_id(ids[0]));
    assert_eq!(session.provider_call_id(ids[0]), None);
    assert!(session.history().is_empty());
    Ok(())
}

/// The mapping lives in the journal, not in the process: a crash in the
/// middle of a batch, then a resume, keeps every minted id used and mapped
/// to the model's id, for a batch that ran, one of refused calls (committed
/// without a `batch_started`) and the interrupted one.
#[tokio::test]
async fn invariant_04_call_ids_stay_unique_and_mapped_across_resume() -> TestResult {
    let journal = InMemoryJournal::new();
    let started = Arc::new(Notify::new());
    let signal = Arc::clone(&started);
    let hanging = FnTool::new("deploy", ToolCategory::Read, move |_, _| {
        let signal = Arc::clone(&signal);
        Box::pin(async move {
            signal.notify_one();
            std::future::pending::<ToolOutput>().await
        })
    });
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call_with_id("call_0", "echo", json!({"n": 1})).tool_call_with_id(
            "call_1",
            "echo",
            json!({"n": 2}),
        ))
        .reply(Reply::new().tool_call_with_id("call_0", "no_such_tool", json!({})))
        .answer("first done")
        .reply(Reply::new().tool_call_with_id("call_0", "deploy", json!({})));
    let mut session = Session::builder(model)
        .tool(FnTool::echo("echo"))
        .tool(hanging.clone())
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("first", &mut events).await?;
    {
        let run = session.run("second", &mut events);
        tokio::select! {
            _ = run => panic!("the turn cannot finish while deploy hangs"),
            () = started.notified() => {}
        }
        // Dropping the turn here is the crash.
    }
    drop(session);
    let before = proposed_ids(&events);
    assert_eq!(before.len(), 4, "two echoes, one refused call, one deploy");
    let expected_models = ["call_0", "call_1", "call_0", "call_0"];

    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call_with_id("call_0", "echo", json!({"n": 3})))
        .answer("ok");
    let mut resumed = Session::builder(model)
        .tool(FnTool::echo("echo"))
        .tool(hanging.clone())
        .resume(journal.clone())
        .await?;
    for (id, model_id) in before.iter().zip(expected_models) {
        assert!(resumed.knows_call_id(*id), "{id} is still used after the resume");
        assert_eq!(resumed.provider_call_id(*id), Some(model_id), "{id} keeps its model id");
    }
    let reused: Vec<CallId> = [0, 2, 3].iter().map(|&i| before[i]).collect();
    assert_eq!(resumed.minted_call_ids("call_0"), reused.as_slice(), "in history order");

    let mut after = Vec::new();
    resumed.run("third", &mut after).await?;
    let fresh = proposed_ids(&after);
    assert_eq!(fresh.len(), 1);
    assert!(!before.contains(&fresh[0]), "an id minted after the resume is new");
    assert_eq!(resumed.provider_call_id(fresh[0]), Some("call_0"));
    assert_eq!(resumed.minted_call_ids("call_0").len(), 4);
    // A second resume rebuilds the same mapping from the records alone.
    let again = Session::builder(ScriptedModel::new())
        .tool(FnTool::echo("echo"))
        .tool(hanging)
        .resume(journal)
        .await?;
    for id in before.iter().chain(&fresh) {
        assert_eq!(again.provider_call_id(*id), resumed.provider_call_id(*id));
    }
    Ok(())
}

#[tokio::test]
async fn invariant_05_disabled_tool_gets_error_before_approval() -> TestResult {
    let model = ScriptedModel::new().tool_call("shell", json!({"cmd": "ls"})).answer("ok");
    let approver = RecordingApprover::approve_all();
    let shell = exec_tool("shell");
    let mut session = Session::builder(model)
        .tool(shell.clone())
        .approver(approver.clone())
        .disable("shell")
        .build()
        .await?;
    session.run("list files", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty());
    assert!(shell.calls().is_empty());
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert!(text.contains("disabled"), "{text}");
    Ok(())
}

#[tokio::test]
async fn invariant_05_unknown_tool_gets_error_before_approval() -> TestResult {
    let model = ScriptedModel::new().tool_call("rm_everything", json!({})).answer("ok");
    let approver = RecordingApprover::approve_all();
    let mut session =
        Session::builder(model).tool(FnTool::echo("echo")).approver(approver.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty());
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert!(text.contains("unknown tool `rm_everything`") && text.contains("echo"), "{text}");
    Ok(())
}

#[tokio::test]
async fn invariant_05_active_subset_changes_only_within_the_ceiling() -> TestResult {
    let model = ScriptedModel::new().answer("a").answer("b").answer("c");
    let mut session = Session::builder(model.clone())
        .tool(FnTool::echo("alpha"))
        .tool(FnTool::echo("beta"))
        .build()
        .await?;
    let authority = session.authority().clone();
    // Replacing with an unknown name fails atomically.
    let err = session.set_active_tools(["alpha", "gamma"]).unwrap_err();
    assert!(matches!(err, BuildError::UnknownTool(ref n) if n == "gamma"), "{err}");
    assert_eq!(session.active_tools().collect::<Vec<_>>(), ["alpha", "beta"]);
    assert!(session.enable_tool("gamma").is_err());
    session.set_active_tools(["beta"])?;
    session.run("one", &mut Vec::new()).await?;
    session.disable_tool("beta")?;
    session.run("two", &mut Vec::new()).await?;
    session.restore_tools();
    session.run("three", &mut Vec::new()).await?;
    let offered: Vec<Vec<String>> = model.requests().into_iter().map(|r| r.tools).collect();
    assert_eq!(offered, vec![vec!["beta".to_owned()], vec![], vec!["alpha".to_owned(), "beta".to_owned()]]);
    assert_eq!(session.authority(), &authority, "the ceiling never changes");
    Ok(())
}

#[tokio::test]
async fn invariant_06_schema_outside_vocabulary_is_rejected_at_build() {
    let tool = FnTool::echo("fetch").schema(json!({
        "type": "object",
        "properties": {"url": {"type": "string", "format": "uri"}}
    }));
    let err = Session::builder(ScriptedModel::new()).tool(tool).build().await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, BuildError::Schema { .. }));
    assert!(text.contains("`fetch`") && text.contains("`format`"), "{text}");
}

#[tokio::test]
async fn invariant_06_invalid_arguments_get_error_before_approval() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call("write", json!({"path": 7}))
        .tool_call("write", json!("not an object"))
        .answer("ok");
    let approver = RecordingApprover::approve_all();
    let write = FnTool::text("write", ToolCategory::Write, |_| "wrote".into()).schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
        "additionalProperties": false
    }));
    let mut session = Session::builder(model).tool(write.clone()).approver(approver.clone()).build().await?;
    session.run("go", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty(), "invalid calls never reach approval");
    assert!(write.calls().is_empty(), "nor the tool");
    let (first, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert!(first.contains("/path: expected string, got number"), "{first}");
    assert!(first.contains("missing required property `text`"), "{first}");
    let (second, _) = tool_result(session.history(), 1);
    assert!(second.starts_with("the arguments of `write` are not valid JSON"), "{second}");
    Ok(())
}

fn builder_with(tools: &[&str]) -> bosun_core::SessionBuilder {
    let mut builder = Session::builder(ScriptedModel::new().answer("ok").answer("ok"))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 42));
    for name in tools {
        builder = builder.tool(FnTool::echo(name));
    }
    builder
}

#[tokio::test]
async fn invariant_07_authority_snapshot_is_shared_by_build_and_preview() -> TestResult {
    let builder = builder_with(&["zeta", "alpha"]);
    let preview = builder.authority_snapshot()?;
    let session = builder.build().await?;
    assert_eq!(session.authority(), &preview);
    let names: Vec<_> = preview.tools.iter().map(|t| t.definition.name.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"], "sorted by name");
    assert_eq!(preview.digest(), builder_with(&["alpha", "zeta"]).authority_snapshot()?.digest());
    assert_ne!(preview.digest(), builder_with(&["alpha"]).authority_snapshot()?.digest());
    let longer = builder_with(&["alpha", "zeta"]).max_rounds(7).authority_snapshot()?;
    assert_ne!(preview.digest(), longer.digest(), "limits are part of the authority");
    Ok(())
}

#[tokio::test]
async fn invariant_07_resume_under_different_authority_fails_closed() -> TestResult {
    let journal = InMemoryJournal::new();
    let mut session = builder_with(&["alpha"]).journal(journal.clone()).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    // The default approver cannot ask a person: a wider authority is refused.
    let err = builder_with(&["alpha", "beta"]).resume(journal.clone()).await.unwrap_err();
    let BuildError::AuthorityMismatch { change } = &err else { panic!("{err}") };
    assert!(change.widens());
    assert!(err.to_string().contains("+ new tools: beta"), "{err}");
    let moved = Session::builder(ScriptedModel::new())
        .tool(FnTool::echo("alpha"))
        .workspace(WorkspaceIdentity::new("/elsewhere", 1, 43))
        .resume(journal.clone())
        .await
        .unwrap_err();
    assert!(moved.to_string().contains("workspace was /work/project"), "{moved}");
    assert!(moved.to_string().contains("another directory"), "{moved}");
    // Refusals journal nothing.
    assert_eq!(journal.records().len(), 4, "{:?}", journal.records());
    // The same authority resumes.
    let resumed = builder_with(&["alpha"]).resume(journal).await?;
    assert_eq!(resumed.history().len(), 2);
    assert!(resumed.resumed_change().is_none());
    Ok(())
}

#[tokio::test]
async fn build_refuses_a_prompt_together_with_history() {
    let err = Session::builder(ScriptedModel::new())
        .system_prompt("be brief")
        .history(vec![Message::user("hi")])
        .build()
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::PromptAndHistory));
}

#[tokio::test]
async fn build_refuses_duplicate_and_badly_named_tools() {
    let dup = Session::builder(ScriptedModel::new())
        .tool(FnTool::echo("a"))
        .tool(FnTool::echo("a"))
        .build()
        .await
        .unwrap_err();
    assert!(matches!(dup, BuildError::DuplicateTool(_)));
    let bad =
        Session::builder(ScriptedModel::new()).tool(FnTool::echo("has space")).build().await.unwrap_err();
    assert!(matches!(bad, BuildError::ToolName(_)));
}

#[tokio::test]
async fn a_tool_is_told_the_call_and_the_turn_it_runs_in() -> TestResult {
    let seen: Arc<std::sync::Mutex<Vec<(CallId, u64)>>> = Arc::default();
    let record = Arc::clone(&seen);
    let tool = FnTool::new("look", ToolCategory::Read, move |_, context| {
        record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((context.call_id, context.turn));
        Box::pin(async { ToolOutput::text("seen") })
    });
    let model = ScriptedModel::new()
        .answer("first")
        .reply(Reply::new().tool_call("look", json!({})))
        .answer("second");
    let mut session = Session::builder(model).tool(tool).build().await?;
    session.run("one", &mut Vec::new()).await?;
    session.run("two", &mut Vec::new()).await?;
    let seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let minted: Vec<CallId> = session.history().iter().flat_map(|m| m.tool_calls().map(|c| c.id)).collect();
    assert_eq!(seen, vec![(minted[0], 2)], "the session's own id and the journal's turn number");
    Ok(())
}
