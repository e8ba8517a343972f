//! Invariants 8–10: the pipeline order, modes, exact one-shot approvals.

use crate::common;

use std::time::Duration;

use bosun_core::{
    ApprovalDecision, ArgumentPattern, CancellationPolicy, Event, GrantScope, InMemoryJournal, Mode,
    Permission, PermissionRule, Reason, Session, ToolCategory, ToolOutput,
};
use bosun_testing::{FnTool, RecordingApprover, Reply, ScriptedModel};
use common::{Log, TestResult, exec_tool, kinds, tool_result, write_tool};
use serde_json::json;

#[tokio::test]
async fn invariant_08_pipeline_order_is_permission_approval_execute_observe() -> TestResult {
    let log = Log::default();
    let model = ScriptedModel::new().tool_call("write", json!({"path": "a"})).answer("done");
    let tool_log = log.clone();
    let write = FnTool::new("write", ToolCategory::Write, move |_, _| {
        let log = tool_log.clone();
        Box::pin(async move {
            log.push("execute");
            ToolOutput::text("wrote a")
        })
    });
    let mut events = Vec::new();
    let sink_log = log.clone();
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        sink_log.push(kinds(std::slice::from_ref(&event))[0].clone());
        events.push(event);
        Ok(())
    });
    let mut session = Session::builder(model.clone())
        .tool(write)
        .approver(RecordingApprover::approve_all())
        .build()
        .await?;
    session.run("go", &mut sink).await?;
    let order: Vec<String> = log.entries();
    let position = |what: &str| order.iter().position(|e| e == what).unwrap();
    assert!(position("tool_call_proposed") < position("approval_requested"));
    assert!(position("approval_requested") < position("approval_decided"));
    assert!(position("approval_decided") < position("tool_start"));
    assert!(position("tool_start") < position("execute"));
    assert!(position("execute") < position("tool_end"));
    // The observation is in history before the next model round sees it.
    let second = &model.requests()[1];
    assert_eq!(second.messages.last().map(|m| m.text()), Some("wrote a".to_owned()));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn invariant_08_tool_policy_times_out_a_hanging_call() -> TestResult {
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("stuck", json!({})).tool_call("polite", json!({})))
        .answer("done");
    let stuck = FnTool::new("stuck", ToolCategory::Read, |_, _| Box::pin(std::future::pending()))
        .cancellation(CancellationPolicy::Interruptible);
    let polite = FnTool::until_cancelled("polite", ToolCategory::Read);
    let mut session = Session::builder(model)
        .tool(stuck)
        .tool(polite.clone())
        .tool_timeout(Duration::from_secs(5))
        .build()
        .await?;
    let started = tokio::time::Instant::now();
    session.run("go", &mut Vec::new()).await?;
    assert_eq!(started.elapsed(), Duration::from_secs(5), "both calls ran at once and timed out together");
    let (stuck_text, stuck_error) = tool_result(session.history(), 0);
    assert!(stuck_error && stuck_text.contains("timed out after 5.0 s"), "{stuck_text}");
    // A finish-once-started tool is asked to stop and its own output is kept.
    let (polite_text, polite_error) = tool_result(session.history(), 1);
    assert!(
        polite_error && polite_text.contains("timed out") && polite_text.contains("stopped on cancellation")
    );
    assert_eq!(polite.finished(), 1);
    Ok(())
}

#[tokio::test]
async fn invariant_08_tool_policy_bounds_output() -> TestResult {
    let model = ScriptedModel::new().tool_call("loud", json!({})).answer("done");
    let loud = FnTool::text("loud", ToolCategory::Read, |_| format!("HEAD{}TAIL", "x".repeat(100_000)));
    let mut session = Session::builder(model).tool(loud).tool_output_bytes(1_000).build().await?;
    session.run("go", &mut Vec::new()).await?;
    let (text, _) = tool_result(session.history(), 0);
    assert!(text.len() < 1_100, "{}", text.len());
    assert!(text.starts_with("HEAD") && text.ends_with("TAIL"));
    assert!(text.contains("bytes cut"));
    Ok(())
}

#[tokio::test]
async fn invariant_09_read_only_mode_denies_without_asking() -> TestResult {
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("read", json!({}))
                .tool_call("write", json!({}))
                .tool_call("shell", json!({})),
        )
        .answer("done");
    let approver = RecordingApprover::approve_all();
    let (write, shell) = (write_tool("write"), exec_tool("shell"));
    let mut session = Session::builder(model)
        .tool(FnTool::echo("read"))
        .tool(write.clone())
        .tool(shell.clone())
        .mode(Mode::ReadOnly)
        // Rules cannot lift the read-only ceiling.
        .rule(PermissionRule::tool("shell", Permission::Allow))
        .approver(approver.clone())
        .build()
        .await?;
    session.run("go", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty());
    assert!(write.calls().is_empty() && shell.calls().is_empty());
    assert!(!tool_result(session.history(), 0).1, "reads run");
    assert!(tool_result(session.history(), 1).0.starts_with("denied: "));
    assert!(tool_result(session.history(), 2).0.contains("read-only"));
    Ok(())
}

#[tokio::test]
async fn invariant_09_default_approval_policy_denies() -> TestResult {
    let model = ScriptedModel::new().tool_call("write", json!({})).answer("done");
    let write = write_tool("write");
    let mut session = Session::builder(model).tool(write.clone()).build().await?;
    assert_eq!(session.mode(), Mode::Propose, "propose is the default mode");
    session.run("go", &mut Vec::new()).await?;
    assert!(write.calls().is_empty());
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error && text.contains("no approver is configured"), "{text}");
    Ok(())
}

#[tokio::test]
async fn invariant_09_each_mode_asks_for_what_it_must() -> TestResult {
    // (mode, which of [write, shell, fetch] the approver is asked about)
    let table = [
        (Mode::Propose, vec!["write", "shell", "fetch"]),
        (Mode::Write, vec!["shell", "fetch"]),
        (Mode::Autonomous, vec!["fetch"]),
    ];
    for (mode, asked) in table {
        let model = ScriptedModel::new()
            .reply(
                Reply::new()
                    .tool_call("write", json!({}))
                    .tool_call("shell", json!({}))
                    .tool_call("fetch", json!({})),
            )
            .answer("done");
        let approver = RecordingApprover::approve_all();
        let fetch = FnTool::text("fetch", ToolCategory::Network, |_| "page".into());
        let mut session = Session::builder(model)
            .tool(write_tool("write"))
            .tool(exec_tool("shell"))
            .tool(fetch)
            .mode(mode)
            .approver(approver.clone())
            .build()
            .await?;
        session.run("go", &mut Vec::new()).await?;
        let seen: Vec<String> = approver.seen().into_iter().map(|r| r.tool).collect();
        assert_eq!(seen, asked, "{mode}");
    }
    Ok(())
}

#[tokio::test]
async fn invariant_09_rules_refine_a_mode_by_argument() -> TestResult {
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("shell", json!({"command": "git status"}))
                .tool_call("shell", json!({"command": "git push"}))
                .tool_call("shell", json!({"command": "rm -rf /"})),
        )
        .answer("done");
    let approver = RecordingApprover::approve_all();
    let shell = exec_tool("shell");
    let mut session = Session::builder(model)
        .tool(shell.clone())
        .rule(PermissionRule::matching(
            "shell",
            ArgumentPattern::prefix("/command", "git status"),
            Permission::Allow,
        ))
        .rule(PermissionRule::matching("shell", ArgumentPattern::prefix("/command", "rm"), Permission::Deny))
        .approver(approver.clone())
        .build()
        .await?;
    session.run("go", &mut Vec::new()).await?;
    let asked: Vec<_> = approver.seen().into_iter().map(|r| r.arguments["command"].clone()).collect();
    assert_eq!(asked, vec![json!("git push")]);
    assert_eq!(shell.calls().len(), 2);
    assert!(tool_result(session.history(), 2).0.starts_with("denied: the rule deny `rm`"));
    Ok(())
}

#[tokio::test]
async fn invariant_10_approval_is_exact_and_one_shot() -> TestResult {
    let args = json!({"path": "src/lib.rs", "text": "fn main() {}"});
    let model =
        ScriptedModel::new().tool_call("write", args.clone()).tool_call("write", args.clone()).answer("done");
    let approver = RecordingApprover::scripted([ApprovalDecision::ApproveOnce]);
    let write = write_tool("write");
    let mut session = Session::builder(model).tool(write.clone()).approver(approver.clone()).build().await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let seen = approver.seen();
    assert_eq!(seen.len(), 2, "the second identical call asks again");
    assert_eq!(seen[0].arguments, args, "the approver sees the exact arguments");
    let first_id = events.iter().find_map(|e| match e {
        Event::ToolCallProposed { call_id, .. } => Some(*call_id),
        _ => None,
    });
    assert_eq!(Some(seen[0].call_id), first_id, "and the exact call");
    assert_eq!(write.calls().len(), 1, "the script ran out and the second was denied");
    Ok(())
}

#[tokio::test]
async fn invariant_10_session_grant_is_scoped_and_never_persisted() -> TestResult {
    let journal = InMemoryJournal::new();
    let a = json!({"command": "cargo test"});
    let b = json!({"command": "cargo build"});
    let model = ScriptedModel::new()
        .tool_call("shell", a.clone())
        .tool_call("shell", a.clone())
        .tool_call("shell", b.clone())
        .answer("done");
    let approver = RecordingApprover::scripted([
        ApprovalDecision::ApproveForSession { scope: GrantScope::SameCall },
        ApprovalDecision::ApproveOnce,
    ]);
    let shell = exec_tool("shell");
    let mut session = Session::builder(model)
        .tool(shell.clone())
        .approver(approver.clone())
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    let asked: Vec<_> = approver.seen().into_iter().map(|r| r.arguments).collect();
    assert_eq!(asked, vec![a.clone(), b], "the same call is granted, another asks");
    assert_eq!(shell.calls().len(), 3);
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::ApprovalDecided { decision: bosun_core::event::Decision::Granted, .. }
        ))
    );
    // No grant reaches the journal, so a resumed session asks again.
    let stored = serde_json::to_string(&journal.records())?;
    assert!(!stored.contains("grant") && !stored.contains("approve"), "{stored}");
    let model = ScriptedModel::new().tool_call("shell", a).answer("done");
    let approver = RecordingApprover::approve_all();
    let mut resumed =
        Session::builder(model).tool(exec_tool("shell")).approver(approver.clone()).resume(journal).await?;
    resumed.run("again", &mut Vec::new()).await?;
    assert_eq!(approver.seen().len(), 1);
    Ok(())
}

#[tokio::test]
async fn invariant_10_denial_reason_reaches_the_model_bounded_and_single_line() -> TestResult {
    let reason = Reason::new("not on a Friday")?;
    let model = ScriptedModel::new().tool_call("shell", json!({})).answer("ok");
    let approver = RecordingApprover::scripted([ApprovalDecision::Deny { reason }]);
    let mut session =
        Session::builder(model.clone()).tool(exec_tool("shell")).approver(approver).build().await?;
    session.run("go", &mut Vec::new()).await?;
    let (text, is_error) = tool_result(session.history(), 0);
    assert!(is_error);
    assert_eq!(text, "denied by the approver: not on a Friday");
    assert!(Reason::new("two\nlines").is_err());
    assert!(Reason::new("").is_err());
    assert!(Reason::new("x".repeat(Reason::MAX_CHARS + 1)).is_err());
    Ok(())
}

/// Records, when asked (not when awaited), what the log holds, then approves.
struct EagerApprover(Log);

impl bosun_core::ApprovalHandler for EagerApprover {
    fn decide<'a>(
        &'a self,
        _request: &'a bosun_core::ApprovalRequest,
    ) -> bosun_core::permission::ApprovalFuture<'a> {
        self.0.push("asked");
        Box::pin(async { ApprovalDecision::ApproveOnce })
    }
}

#[tokio::test]
async fn invariant_08_an_approver_is_asked_before_the_request_is_told() -> TestResult {
    // An approver that files the request where clients look (bosun serve's
    // list of approvals) must have it there by the time a client sees the
    // `approval_requested` event.
    let log = Log::default();
    let model = ScriptedModel::new().tool_call("write", json!({"path": "a"})).answer("done");
    let sink_log = log.clone();
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        sink_log.push(kinds(std::slice::from_ref(&event))[0].clone());
        Ok(())
    });
    let mut session = Session::builder(model)
        .tool(write_tool("write"))
        .approver(EagerApprover(log.clone()))
        .build()
        .await?;
    session.run("go", &mut sink).await?;
    let order = log.entries();
    let position = |what: &str| order.iter().position(|e| e == what).unwrap();
    assert!(position("asked") < position("approval_requested"), "{order:?}");
    assert!(position("approval_requested") < position("approval_decided"), "{order:?}");
    Ok(())
}
