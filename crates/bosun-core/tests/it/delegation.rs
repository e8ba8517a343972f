//! Sub-agents (`bosun_core::delegate`): children run the parent's tasks in
//! parallel under the parent's authority, narrowed by a named agent's list
//! and never widened by a task's preferences; their approvals reach the
//! parent's approver; their tokens count in the parent's `tools` bucket.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;

use bosun_core::delegate::{AgentProfile, Delegation, DelegationExt, InMemoryChildren};
use bosun_core::model::{ModelRequest, ModelStream};
use bosun_core::{Capabilities, Event, Mode, Model, Session, ToolCategory, Usage};
use bosun_testing::{FnTool, RecordedRequest, RecordingApprover, Reply, ScriptedModel};
use common::TestResult;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Sends each request to the script whose key its first user message
/// starts with: the parent's prompt, or one child's task.
#[derive(Clone)]
struct Routed(Arc<HashMap<&'static str, ScriptedModel>>);

impl Routed {
    fn new(routes: impl IntoIterator<Item = (&'static str, ScriptedModel)>) -> Self {
        Self(Arc::new(routes.into_iter().collect()))
    }
    fn requests(&self, key: &str) -> Vec<RecordedRequest> {
        self.0[key].requests()
    }
}

impl Model for Routed {
    fn capabilities(&self) -> Capabilities {
        ScriptedModel::new().capabilities()
    }
    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        let first = request.messages.first().map(|m| m.text()).unwrap_or_default();
        let key = self.0.keys().find(|key| first.starts_with(**key)).copied().unwrap_or("?");
        match self.0.get(key) {
            Some(model) => model.stream(request, cancel),
            None => panic!("no route for {first:?}"),
        }
    }
}

fn tools() -> Vec<FnTool> {
    vec![
        FnTool::text("read_file", ToolCategory::Read, |args| format!("contents of {}", args["path"])),
        FnTool::text("write_file", ToolCategory::Write, |_| "wrote".into()),
        FnTool::text("shell", ToolCategory::Execute, |_| "ran".into()),
    ]
}

fn builder(model: &Routed) -> bosun_core::SessionBuilder {
    let mut builder = Session::builder(model.clone());
    for tool in tools() {
        builder = builder.tool(tool);
    }
    builder
}

fn delegate(tasks: serde_json::Value) -> ScriptedModel {
    ScriptedModel::new().tool_call("delegate_tasks", json!({ "tasks": tasks })).answer("all done")
}

fn answer(text: &str, usage: Usage) -> ScriptedModel {
    ScriptedModel::new().reply(Reply::new().text(text).usage(usage))
}

#[tokio::test]
async fn children_answer_in_task_order_and_their_tokens_count_for_the_parent() -> TestResult {
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "one: count"}, {"task": "two: list"}]))),
        ("one", answer("one is 1", Usage::new(10, 2))),
        ("two", answer("two is 2", Usage::new(20, 3))),
    ]);
    let mut session = builder(&model).delegation(Delegation::default()).build().await?;
    let mut events = Vec::new();
    let outcome = session.run("parent task", &mut events).await?;
    assert_eq!(outcome.answer, "all done");
    let (result, is_error) = common::tool_result(session.history(), 0);
    assert!(!is_error, "{result}");
    let first = result.find("one is 1").unwrap();
    let second = result.find("two is 2").unwrap();
    assert!(first < second && result.starts_with("## task 1"), "{result}");
    assert_eq!(
        outcome.spend.subagents.usage,
        Usage::new(30, 5),
        "the children's tokens, in their own bucket"
    );
    assert!(outcome.spend.tools.is_zero(), "not counted twice");
    let children: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Subagent { child, event, .. } if matches!(**event, Event::TurnEnd { .. }) => {
                Some(child.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(children.len(), 2, "each child's events reach the parent tagged: {children:?}");
    // A child's system prompt says it is one; it is shown the parent's tools
    // but not delegate_tasks (one level deeper it gets its own).
    let child = &model.requests("one")[0];
    assert!(child.system.as_deref().unwrap().starts_with(bosun_core::delegate::CHILD_PROMPT));
    let mut shown = child.tools.clone();
    shown.sort();
    assert_eq!(shown, ["delegate_tasks", "read_file", "shell", "write_file"]);
    Ok(())
}

#[tokio::test]
async fn a_named_agents_list_narrows_and_a_preference_never_widens() -> TestResult {
    let reviewer =
        AgentProfile::new("reviewer", "Reviews code", Some(vec!["read_file".into()]), None, "You review.");
    let model = Routed::new([
        (
            "parent",
            delegate(json!([
                {"task": "review: look", "agent": "reviewer", "tools": ["shell", "write_file"]},
                {"task": "plain: go", "tools": ["read_file", "nonexistent"]},
            ])),
        ),
        ("review", ScriptedModel::new().tool_call("shell", json!({})).answer("reviewed")),
        ("plain", ScriptedModel::new().tool_call("find_tools", json!({"query": "shell"})).answer("found")),
    ]);
    let delegation = Delegation::new(Arc::new(InMemoryChildren)).agents(vec![reviewer]);
    let mut session = builder(&model).mode(Mode::Autonomous).delegation(delegation).build().await?;
    session.run("parent task", &mut Vec::new()).await?;
    // The reviewer's authority is read_file alone: its preferences for shell
    // and write_file gave it nothing, and its shell call was refused.
    let review = model.requests("review");
    assert_eq!(review[0].tools, ["read_file"]);
    assert_eq!(review[0].system.as_deref().unwrap().lines().next(), Some("You review."));
    let refusal = review[1].messages.iter().find_map(|m| match m {
        bosun_core::Message::ToolResult { .. } => Some(m.text()),
        _ => None,
    });
    assert!(refusal.unwrap().starts_with("unknown tool `shell`"), "outside its authority");
    // The plain child was shown its preference (read_file) plus find_tools,
    // found shell through it, and was offered it from the next round on.
    let plain = model.requests("plain");
    let mut first = plain[0].tools.clone();
    first.sort();
    assert_eq!(
        first,
        ["delegate_tasks", "find_tools", "read_file"],
        "its own delegate_tasks, one level deeper"
    );
    assert!(plain[1].tools.contains(&"shell".to_owned()), "{:?}", plain[1].tools);
    assert!(!plain[1].tools.contains(&"write_file".to_owned()), "only what matched");
    Ok(())
}

#[tokio::test]
async fn a_childs_approval_goes_to_the_parents_approver_naming_the_child() -> TestResult {
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "writer: make a file"}]))),
        ("writer", ScriptedModel::new().tool_call("shell", json!({})).answer("made")),
    ]);
    let approver = RecordingApprover::approve_all();
    let mut session = builder(&model)
        .mode(Mode::ReadOnly)
        .approver(approver.clone())
        .delegation(Delegation::default())
        .build()
        .await?;
    session.run("parent task", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty(), "read-only: the child's write is denied, as the parent's would be");
    let child = model.requests("writer");
    let result =
        child[1].messages.iter().rev().find(|m| matches!(m, bosun_core::Message::ToolResult { .. })).unwrap();
    assert!(result.text().starts_with("denied:"), "{}", result.text());

    let model = Routed::new([
        ("parent", delegate(json!([{"task": "writer: make a file"}]))),
        ("writer", ScriptedModel::new().tool_call("shell", json!({})).answer("made")),
    ]);
    let approver = RecordingApprover::approve_all();
    let mut session = builder(&model)
        .mode(Mode::Write)
        .approver(approver.clone())
        .delegation(Delegation::default())
        .build()
        .await?;
    session.run("parent task", &mut Vec::new()).await?;
    let asked = approver.seen();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "shell");
    assert!(
        asked[0].reason.starts_with("sub-agent ") && asked[0].reason.contains("(writer: make a file) asks:"),
        "{}",
        asked[0].reason
    );
    Ok(())
}

#[tokio::test]
async fn an_unknown_agent_fails_its_task_only() -> TestResult {
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "x: a", "agent": "nobody"}, {"task": "y: b"}]))),
        ("y", answer("fine", Usage::default())),
    ]);
    let mut session = builder(&model).delegation(Delegation::default()).build().await?;
    session.run("parent task", &mut Vec::new()).await?;
    let (result, is_error) = common::tool_result(session.history(), 0);
    assert!(!is_error);
    assert!(result.contains("failed: no agent named `nobody`; named agents: none"), "{result}");
    assert!(result.contains("fine"));
    Ok(())
}

#[tokio::test]
async fn cancelling_the_parent_cancels_and_awaits_every_child() -> TestResult {
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "a: wait"}, {"task": "b: wait"}]))),
        ("a", ScriptedModel::new().reply(Reply::new().hang())),
        ("b", ScriptedModel::new().reply(Reply::new().hang())),
    ]);
    let mut session = builder(&model).delegation(Delegation::default()).build().await?;
    let options = bosun_core::TurnOptions::default();
    let cancel = options.cancel.clone();
    let mut started = 0;
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if let Event::Subagent { event, .. } = &event
            && matches!(**event, Event::ModelRoundStart { .. })
        {
            started += 1;
            if started == 2 {
                cancel.cancel();
            }
        }
        Ok(())
    });
    let error = session.run_with("parent task", options, &mut sink).await.unwrap_err();
    assert!(error.is_cancelled(), "{error}");
    // The call ended, so both children ended: its result is in history.
    let (result, _) = common::tool_result(session.history(), 0);
    assert_eq!(result.matches("failed: cancelled").count(), 2, "{result}");
    Ok(())
}

#[tokio::test]
async fn more_than_ten_tasks_in_one_call_are_refused_before_any_child_starts() -> TestResult {
    let tasks: Vec<_> = (0..11).map(|n| json!({"task": format!("t{n}: go")})).collect();
    let model = Routed::new([("parent", delegate(json!(tasks)))]);
    let mut session = builder(&model).delegation(Delegation::default()).build().await?;
    session.run("parent task", &mut Vec::new()).await?;
    let (result, is_error) = common::tool_result(session.history(), 0);
    assert!(is_error && result.starts_with("invalid arguments for `delegate_tasks`"), "{result}");
    Ok(())
}

#[tokio::test]
async fn a_tool_not_found_yet_is_refused_with_the_way_to_find_it() -> TestResult {
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "reader: look", "tools": ["read_file"]}]))),
        ("reader", ScriptedModel::new().tool_call("shell", json!({})).answer("looked")),
    ]);
    let mut session =
        builder(&model).mode(Mode::Autonomous).delegation(Delegation::default()).build().await?;
    session.run("parent task", &mut Vec::new()).await?;
    let child = model.requests("reader");
    let result =
        child[1].messages.iter().rev().find(|m| matches!(m, bosun_core::Message::ToolResult { .. })).unwrap();
    assert_eq!(
        result.text(),
        format!("tool `shell` is not available now: {}", bosun_core::delegate::NOT_FOUND_YET),
        "inside its authority but not shown: it is told how to get it, not that a server went away"
    );
    Ok(())
}

#[tokio::test]
async fn a_child_reads_its_parents_artifacts_by_id() -> TestResult {
    let artifacts = bosun_core::artifacts::InMemoryArtifacts::new();
    let id = {
        use bosun_core::artifacts::Artifacts;
        artifacts.put("the whole long output").await?
    };
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "reader: read it"}]))),
        ("reader", ScriptedModel::new().tool_call("read_artifact", json!({"id": id})).answer("read")),
    ]);
    let mut session = builder(&model)
        .artifacts(Arc::new(artifacts.clone()))
        .delegation(Delegation::default())
        .build()
        .await?;
    session.run("parent task", &mut Vec::new()).await?;
    let child = model.requests("reader");
    assert!(child[0].tools.contains(&"read_artifact".to_owned()), "{:?}", child[0].tools);
    let result =
        child[1].messages.iter().rev().find(|m| matches!(m, bosun_core::Message::ToolResult { .. })).unwrap();
    assert!(result.text().contains("the whole long output"), "{}", result.text());
    Ok(())
}

#[tokio::test]
async fn a_parents_session_grant_does_not_cover_its_children() -> TestResult {
    use bosun_core::permission::{ApprovalDecision, GrantScope};
    let model = Routed::new([
        (
            "parent",
            ScriptedModel::new()
                .tool_call("shell", json!({}))
                .tool_call("delegate_tasks", json!({"tasks": [{"task": "runner: run it"}]}))
                .answer("done"),
        ),
        ("runner", ScriptedModel::new().tool_call("shell", json!({})).answer("ran")),
    ]);
    let approver = RecordingApprover::scripted([
        ApprovalDecision::ApproveForSession { scope: GrantScope::Tool },
        ApprovalDecision::ApproveOnce,
    ]);
    let mut session = builder(&model)
        .mode(Mode::Write)
        .approver(approver.clone())
        .delegation(Delegation::default())
        .build()
        .await?;
    session.run("parent task", &mut Vec::new()).await?;
    let asked = approver.seen();
    assert_eq!(asked.len(), 2, "the child asks again: {asked:?}");
    assert!(!asked[0].reason.contains("sub-agent"), "{}", asked[0].reason);
    assert!(asked[1].reason.starts_with("sub-agent "), "{}", asked[1].reason);
    Ok(())
}

/// The parent's script, and one child script every child draws from; it
/// counts the children streaming at once. Every child waits at the gate
/// until the test opens it.
struct Gate {
    parent: ScriptedModel,
    child: ScriptedModel,
    running: Arc<std::sync::atomic::AtomicUsize>,
    most: std::sync::atomic::AtomicUsize,
    open: Arc<tokio::sync::Semaphore>,
    ten: tokio::sync::Notify,
}

struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Model for Gate {
    fn capabilities(&self) -> Capabilities {
        ScriptedModel::new().capabilities()
    }
    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        use futures_util::StreamExt;
        use std::sync::atomic::Ordering::SeqCst;
        let first = request.messages.first().map(|m| m.text()).unwrap_or_default();
        if first.starts_with("parent") {
            return self.parent.stream(request, cancel);
        }
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        if now == 10 {
            self.ten.notify_one();
        }
        let (open, running) = (Arc::clone(&self.open), Arc::clone(&self.running));
        let wait = futures_util::stream::once(async move {
            let _ = open.acquire().await.map(tokio::sync::SemaphorePermit::forget);
        });
        // Dropped when the stream ends or is dropped unfinished.
        let guard = Running(running);
        let done = futures_util::stream::once(async move { drop(guard) });
        let nothing = |()| async { None };
        Box::pin(
            wait.filter_map(nothing)
                .chain(self.child.stream(request, cancel))
                .chain(done.filter_map(nothing)),
        )
    }
}

#[tokio::test(start_paused = true)]
async fn twelve_tasks_in_two_calls_of_one_batch_run_at_most_ten_at_once() -> TestResult {
    let six =
        |from: usize| -> Vec<_> { (from..from + 6).map(|n| json!({"task": format!("t{n}: go")})).collect() };
    let parent = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("delegate_tasks", json!({"tasks": six(0)}))
                .tool_call("delegate_tasks", json!({"tasks": six(6)})),
        )
        .answer("all done");
    let mut child = ScriptedModel::new();
    for _ in 0..12 {
        child = child.answer("ok");
    }
    let gate = Arc::new(Gate {
        parent,
        child,
        running: Arc::default(),
        most: Default::default(),
        open: Arc::new(tokio::sync::Semaphore::new(0)),
        ten: tokio::sync::Notify::new(),
    });
    let mut session = Session::builder_shared(Arc::clone(&gate) as Arc<dyn Model>)
        .delegation(Delegation::default())
        .build()
        .await?;
    let mut events = Vec::new();
    let run = session.run("parent task", &mut events);
    let watch = async {
        gate.ten.notified().await;
        // Paused time moves on only once every task waits: whatever could
        // start beside the ten has started.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let most = gate.most.load(std::sync::atomic::Ordering::SeqCst);
        gate.open.add_permits(100);
        most
    };
    let (outcome, most) = tokio::join!(run, watch);
    assert_eq!(most, 10, "ten at once, never more");
    assert_eq!(outcome?.answer, "all done");
    assert_eq!(gate.child.remaining(), 0, "all twelve ran");
    for index in [0, 1] {
        let (result, is_error) = common::tool_result(session.history(), index);
        assert!(!is_error && result.matches("\nok").count() == 6, "{result}");
    }
    Ok(())
}

#[tokio::test]
async fn a_session_that_delegates_frees_its_model_and_tools_when_dropped() -> TestResult {
    // `delegate_tasks` keeps the session's scope, and the scope lists the
    // session's tools: were the tool itself among them, the two would keep
    // each other, and with them the model, the tools and what they hold
    // (a store's connection, never closed), alive for ever.
    let model = Routed::new([
        ("parent", delegate(json!([{"task": "one: count"}]))),
        ("one", answer("one is 1", Usage::new(10, 2))),
    ]);
    let routes = Arc::downgrade(&model.0);
    let mut session = builder(&model).delegation(Delegation::default()).build().await?;
    let outcome = session.run("parent task", &mut Vec::new()).await?;
    assert_eq!(outcome.answer, "all done");
    drop((session, model));
    assert!(routes.upgrade().is_none(), "the model outlived its session: a reference cycle holds it");
    Ok(())
}
