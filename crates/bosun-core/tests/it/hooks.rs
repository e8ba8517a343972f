//! Hooks (`bosun_core::hooks`): each point asked where the issue puts it,
//! decisions that only narrow, containment of a hook that panics or hangs,
//! and every run emitted and journaled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_core::hooks::{
    HookDecision, HookError, HookFuture, HookInput, HookOutcome, HookPoint, SessionHooks,
};
use bosun_core::journal::JournalRecord;
use bosun_core::{
    ApprovalDecision, Event, InMemoryJournal, Mode, Session, ToolCategory, TurnErrorKind, TurnOptions,
};
use bosun_testing::{FnTool, RecordingApprover, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// What a test hook does when asked.
#[derive(Clone)]
enum Act {
    Decide(HookDecision),
    Fail(&'static str),
    Panic,
    Hang,
}

type Script = Arc<dyn Fn(&HookInput) -> Act + Send + Sync>;

/// A hook that plays a script and keeps every input it was shown.
#[derive(Clone)]
struct TestHook {
    name: &'static str,
    points: Vec<HookPoint>,
    required: bool,
    timeout: Duration,
    script: Script,
    seen: Arc<Mutex<Vec<HookInput>>>,
    events: Arc<Mutex<Vec<Event>>>,
}

impl TestHook {
    fn new(
        name: &'static str,
        points: &[HookPoint],
        script: impl Fn(&HookInput) -> Act + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            points: points.to_vec(),
            required: false,
            timeout: Duration::from_secs(60),
            script: Arc::new(script),
            seen: Arc::default(),
            events: Arc::default(),
        }
    }

    fn required(mut self) -> Self {
        self.required = true;
        self
    }

    fn seen(&self) -> Vec<HookInput> {
        self.seen.lock().unwrap().clone()
    }

    fn shared(&self) -> Arc<dyn SessionHooks> {
        Arc::new(self.clone())
    }
}

impl SessionHooks for TestHook {
    fn name(&self) -> &str {
        self.name
    }
    fn wants(&self, point: HookPoint) -> bool {
        self.points.contains(&point)
    }
    fn required(&self) -> bool {
        self.required
    }
    fn timeout(&self) -> Duration {
        self.timeout
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        self.seen.lock().unwrap().push(input.clone());
        let act = (self.script)(input);
        Box::pin(async move {
            match act {
                Act::Decide(decision) => Ok(decision),
                Act::Fail(message) => Err(HookError::new(message)),
                Act::Panic => panic!("the hook broke"),
                Act::Hang => std::future::pending().await,
            }
        })
    }
    fn on_event(&self, event: &Event) {
        self.events.lock().unwrap().push(event.clone());
    }
}

fn hook_runs(events: &[Event]) -> Vec<(HookPoint, HookOutcome, bool)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::HookRun { run } => Some((run.point, run.outcome, run.switched_off)),
            _ => None,
        })
        .collect()
}

fn journaled_runs(journal: &InMemoryJournal) -> Vec<(HookPoint, HookOutcome)> {
    journal
        .records()
        .into_iter()
        .filter_map(|record| match record {
            JournalRecord::HookRan { run, .. } => Some((run.point, run.outcome)),
            _ => None,
        })
        .collect()
}

fn shell() -> FnTool {
    FnTool::text("shell", ToolCategory::Execute, |args| format!("ran {}", args["command"])).schema(json!({
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    }))
}

#[tokio::test]
async fn a_pre_tool_use_block_refuses_the_call_and_the_model_is_told_why() -> TestResult {
    let guard = TestHook::new("guard", &[HookPoint::PreToolUse], |input| match input {
        HookInput::PreToolUse { tool_input, .. } if tool_input["command"] == "rm -rf /" => {
            Act::Decide(HookDecision::Block("no deleting".into()))
        }
        _ => Act::Decide(HookDecision::Continue),
    });
    let model = ScriptedModel::new()
        .tool_call("shell", json!({"command": "rm -rf /"}))
        .tool_call("shell", json!({"command": "ls"}))
        .answer("done");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(shell())
        .mode(Mode::Autonomous)
        .hook(guard.shared())
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("clean up", &mut events).await?;
    let (text, is_error) = common::tool_result(session.history(), 0);
    assert!(is_error);
    assert_eq!(text, "blocked by the hook `guard`: no deleting");
    assert_eq!(common::tool_result(session.history(), 1), ("ran \"ls\"".into(), false), "the next call ran");
    let seen = guard.seen();
    assert_eq!(seen.len(), 2);
    assert!(matches!(&seen[0], HookInput::PreToolUse { tool_name, .. } if tool_name == "shell"));
    let runs = hook_runs(&events);
    assert_eq!(
        runs,
        [
            (HookPoint::PreToolUse, HookOutcome::Blocked, false),
            (HookPoint::PreToolUse, HookOutcome::Continued, false)
        ]
    );
    assert_eq!(
        journaled_runs(&journal),
        [(HookPoint::PreToolUse, HookOutcome::Blocked), (HookPoint::PreToolUse, HookOutcome::Continued)]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ApprovalDecided { decision: bosun_core::event::Decision::DeniedByHook, .. }
    )));
    Ok(())
}

#[tokio::test]
async fn a_hooks_ask_makes_an_allowed_call_ask_but_cannot_lift_a_deny() -> TestResult {
    let asker = TestHook::new("asker", &[HookPoint::PreToolUse], |_| {
        Act::Decide(HookDecision::Ask("check it".into()))
    });
    // Autonomous allows the shell: the hook's ask reaches the approver.
    let approver = RecordingApprover::scripted([ApprovalDecision::ApproveOnce]);
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"})).answer("ok");
    let mut session = Session::builder(model)
        .tool(shell())
        .mode(Mode::Autonomous)
        .approver(approver.clone())
        .hook(asker.shared())
        .build()
        .await?;
    session.run("list", &mut Vec::new()).await?;
    let asked = approver.seen();
    assert_eq!(asked.len(), 1, "the approver was asked");
    assert!(asked[0].reason.contains("the hook `asker` asks: check it"), "{}", asked[0].reason);
    assert_eq!(common::tool_result(session.history(), 0).0, "ran \"ls\"");

    // Read-only denies the shell: the hook's ask does not turn that into a question.
    let approver = RecordingApprover::approve_all();
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"})).answer("ok");
    let mut session = Session::builder(model)
        .tool(shell())
        .mode(Mode::ReadOnly)
        .approver(approver.clone())
        .hook(asker.shared())
        .build()
        .await?;
    session.run("list", &mut Vec::new()).await?;
    assert!(approver.seen().is_empty(), "a denial stays a denial");
    let (text, is_error) = common::tool_result(session.history(), 0);
    assert!(is_error && text.starts_with("denied:"), "{text}");
    Ok(())
}

#[tokio::test]
async fn replaced_arguments_are_checked_against_the_schema_and_gated_again() -> TestResult {
    let rewrite = TestHook::new("rewrite", &[HookPoint::PreToolUse], |input| match input {
        HookInput::PreToolUse { tool_input, .. } if tool_input["command"] == "bad" => {
            Act::Decide(HookDecision::UpdateInput(json!({"command": 7})))
        }
        _ => Act::Decide(HookDecision::UpdateInput(json!({"command": "ls -la"}))),
    });
    let post = TestHook::new("post", &[HookPoint::PostToolUse], |_| Act::Decide(HookDecision::Continue));
    let model = ScriptedModel::new()
        .tool_call("shell", json!({"command": "bad"}))
        .tool_call("shell", json!({"command": "ls"}))
        .answer("ok");
    let approver = RecordingApprover::approve_all();
    let mut session = Session::builder(model)
        .tool(shell())
        .mode(Mode::Write)
        .approver(approver.clone())
        .hook(rewrite.shared())
        .hook(post.shared())
        .build()
        .await?;
    session.run("list", &mut Vec::new()).await?;
    let (text, is_error) = common::tool_result(session.history(), 0);
    assert!(is_error && text.contains("replaced the arguments of `shell` with invalid ones"), "{text}");
    assert_eq!(common::tool_result(session.history(), 1), ("ran \"ls -la\"".into(), false));
    // The approver saw the replaced command (the pipeline ran on it), once:
    // the invalid replacement was refused before permission.
    let asked = approver.seen();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].arguments, json!({"command": "ls -la"}));
    let seen = post.seen();
    assert!(
        matches!(&seen[..], [HookInput::PostToolUse { tool_input, .. }] if *tool_input == json!({"command": "ls -la"}))
    );
    Ok(())
}

#[tokio::test]
async fn post_tool_use_adds_its_reason_to_the_result_before_it_is_recorded() -> TestResult {
    let post = TestHook::new("lint", &[HookPoint::PostToolUse], |input| match input {
        HookInput::PostToolUse { tool_response, .. } if tool_response.contains("ls") => {
            Act::Decide(HookDecision::Block("the listing is stale".into()))
        }
        _ => Act::Decide(HookDecision::Continue),
    });
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"})).answer("ok");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(shell())
        .mode(Mode::Autonomous)
        .hook(post.shared())
        .journal(journal.clone())
        .build()
        .await?;
    session.run("list", &mut Vec::new()).await?;
    let expected = "ran \"ls\"[hook lint] the listing is stale";
    assert_eq!(common::tool_result(session.history(), 0).0, expected);
    let recorded = journal.records().into_iter().find_map(|record| match record {
        JournalRecord::InvocationFinished { result, .. } => Some(result.text()),
        _ => None,
    });
    assert_eq!(recorded.as_deref(), Some(expected), "the journal holds what the model saw");
    Ok(())
}

#[tokio::test]
async fn prompt_notes_are_stored_with_the_prompt_and_a_block_starts_no_turn() -> TestResult {
    let start = TestHook::new("start", &[HookPoint::SessionStart], |_| {
        Act::Decide(HookDecision::Note("branch main".into()))
    });
    let prompt = TestHook::new("prompt", &[HookPoint::UserPromptSubmit], |input| match input {
        HookInput::UserPromptSubmit { prompt, .. } if prompt.contains("secret") => {
            Act::Decide(HookDecision::Block("prompts may not name secrets".into()))
        }
        _ => Act::Decide(HookDecision::Note("today is Tuesday".into())),
    });
    let model = ScriptedModel::new().answer("hi").answer("again");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model.clone())
        .hook(start.shared())
        .hook(prompt.shared())
        .journal(journal.clone())
        .build()
        .await?;
    let error = session.run("show the secret", &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(&error.kind, TurnErrorKind::HookBlocked { hook, prompt: true, .. } if hook == "prompt"),
        "{error}"
    );
    assert!(session.history().is_empty(), "no turn started");
    assert!(model.requests().is_empty(), "the model was not asked");

    session.run("hello", &mut Vec::new()).await?;
    let user = &session.history()[0];
    assert_eq!(
        user.text(),
        "hello[hook start] branch main\n[hook prompt] today is Tuesday",
        "SessionStart ran once; its note waited for the first prompt that started a turn"
    );
    assert_eq!(start.seen().len(), 1);
    assert_eq!(model.requests()[0].messages[0], *user, "the model saw the note");
    let resumed = Session::builder(ScriptedModel::new()).resume(journal.clone()).await?;
    assert_eq!(resumed.history(), session.history(), "replay runs no hook and rebuilds the same history");
    let runs = journaled_runs(&journal);
    assert_eq!(
        runs,
        [
            (HookPoint::SessionStart, HookOutcome::Noted),
            (HookPoint::UserPromptSubmit, HookOutcome::Blocked),
            (HookPoint::UserPromptSubmit, HookOutcome::Noted),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn the_session_start_note_joins_the_first_prompt() -> TestResult {
    let start = TestHook::new("start", &[HookPoint::SessionStart], |_| {
        Act::Decide(HookDecision::Note("branch main".into()))
    });
    let model = ScriptedModel::new().answer("hi");
    let mut session = Session::builder(model).hook(start.shared()).build().await?;
    session.run("hello", &mut Vec::new()).await?;
    assert_eq!(session.history()[0].text(), "hello[hook start] branch main");
    assert!(matches!(
        &start.seen()[..],
        [HookInput::SessionStart { source: bosun_core::hooks::StartSource::Startup }]
    ));
    Ok(())
}

#[tokio::test]
async fn a_before_model_note_is_sent_once_and_never_stored() -> TestResult {
    let before = TestHook::new("before", &[HookPoint::BeforeModel], |input| match input {
        HookInput::BeforeModel { round: 1, .. } => Act::Decide(HookDecision::Note("be brief".into())),
        _ => Act::Decide(HookDecision::Continue),
    });
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"})).answer("ok");
    let mut session = Session::builder(model.clone())
        .tool(shell())
        .mode(Mode::Autonomous)
        .hook(before.shared())
        .build()
        .await?;
    session.run("list", &mut Vec::new()).await?;
    let requests = model.requests();
    assert_eq!(requests[0].messages[0].text(), "list[hook before] be brief");
    assert_eq!(requests[1].messages[0].text(), "list", "the second round had no note");
    assert_eq!(session.history()[0].text(), "list", "history never held it");
    Ok(())
}

#[tokio::test]
async fn after_model_may_stop_the_turn_before_the_response_is_committed() -> TestResult {
    let after = TestHook::new("after", &[HookPoint::AfterModel], |input| match input {
        HookInput::AfterModel { tool_calls, .. } if !tool_calls.is_empty() => {
            Act::Decide(HookDecision::Block("no tools today".into()))
        }
        _ => Act::Decide(HookDecision::Continue),
    });
    let ran = Arc::new(Mutex::new(0));
    let count = Arc::clone(&ran);
    let tool = FnTool::text("shell", ToolCategory::Execute, move |_| {
        *count.lock().unwrap() += 1;
        "ran".into()
    });
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"}));
    let mut session =
        Session::builder(model).tool(tool).mode(Mode::Autonomous).hook(after.shared()).build().await?;
    let error = session.run("list", &mut Vec::new()).await.unwrap_err();
    assert!(matches!(&error.kind, TurnErrorKind::HookBlocked { prompt: false, .. }), "{error}");
    assert_eq!(*ran.lock().unwrap(), 0, "no call ran");
    assert!(session.history().is_empty(), "the turn rolled back");
    Ok(())
}

#[tokio::test]
async fn a_stop_hook_keeps_the_agent_going_up_to_the_cap() -> TestResult {
    let stop = TestHook::new("tests", &[HookPoint::Stop], |_| {
        Act::Decide(HookDecision::Block("the tests fail".into()))
    });
    let model = ScriptedModel::cycle([bosun_testing::Reply::new().text("done")]);
    let mut session = Session::builder(model.clone()).hook(stop.shared()).build().await?;
    let outcome = session.run("fix it", &mut Vec::new()).await?;
    let cap = bosun_core::hooks::MAX_STOP_CONTINUATIONS as u64;
    assert_eq!(outcome.turn, 1 + cap, "one turn, then one per continuation");
    let active: Vec<bool> = stop
        .seen()
        .iter()
        .map(|input| match input {
            HookInput::Stop { stop_hook_active, .. } => *stop_hook_active,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(active.len() as u64, 1 + cap);
    assert!(!active[0] && active[1..].iter().all(|a| *a), "{active:?}");
    assert_eq!(session.history()[2].text(), "[hook tests] the tests fail", "the reason is the next prompt");
    Ok(())
}

#[tokio::test]
async fn an_advisory_hook_that_panics_is_switched_off_and_the_turn_goes_on() -> TestResult {
    let broken = TestHook::new("broken", &[HookPoint::PreToolUse], |_| Act::Panic);
    let model = ScriptedModel::new()
        .tool_call("shell", json!({"command": "ls"}))
        .tool_call("shell", json!({"command": "pwd"}))
        .answer("ok");
    let mut session =
        Session::builder(model).tool(shell()).mode(Mode::Autonomous).hook(broken.shared()).build().await?;
    let mut events = Vec::new();
    session.run("list", &mut events).await?;
    assert_eq!(common::tool_result(session.history(), 0).0, "ran \"ls\"");
    assert_eq!(common::tool_result(session.history(), 1).0, "ran \"pwd\"");
    assert_eq!(broken.seen().len(), 1, "off after its panic");
    assert_eq!(hook_runs(&events), [(HookPoint::PreToolUse, HookOutcome::Panicked, true)]);
    Ok(())
}

#[tokio::test]
async fn a_hook_error_is_shown_and_the_point_goes_on() -> TestResult {
    let failing = TestHook::new("flaky", &[HookPoint::PreToolUse], |_| Act::Fail("exit status 1: oops"));
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"})).answer("ok");
    let mut session =
        Session::builder(model).tool(shell()).mode(Mode::Autonomous).hook(failing.shared()).build().await?;
    let mut events = Vec::new();
    session.run("list", &mut events).await?;
    assert_eq!(common::tool_result(session.history(), 0).0, "ran \"ls\"");
    assert_eq!(hook_runs(&events), [(HookPoint::PreToolUse, HookOutcome::Failed, false)]);
    assert!(events.iter().any(
        |e| matches!(e, Event::HookRun { run } if run.reason.as_deref() == Some("exit status 1: oops"))
    ));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_required_hook_that_times_out_fails_the_turn_cleanly() -> TestResult {
    let mut slow = TestHook::new("slow", &[HookPoint::PreToolUse], |_| Act::Hang).required();
    slow.timeout = Duration::from_secs(5);
    let ran = Arc::new(Mutex::new(0));
    let count = Arc::clone(&ran);
    let tool = FnTool::text("shell", ToolCategory::Execute, move |_| {
        *count.lock().unwrap() += 1;
        "ran".into()
    });
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"}));
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(tool)
        .mode(Mode::Autonomous)
        .hook(slow.shared())
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    let error = session.run("list", &mut events).await.unwrap_err();
    assert!(matches!(&error.kind, TurnErrorKind::Hook(failure) if failure.hook == "slow"), "{error}");
    assert_eq!(error.disposition, bosun_core::Disposition::RolledBack);
    assert_eq!(*ran.lock().unwrap(), 0);
    assert_eq!(hook_runs(&events), [(HookPoint::PreToolUse, HookOutcome::TimedOut, false)]);
    assert_eq!(journaled_runs(&journal), [(HookPoint::PreToolUse, HookOutcome::TimedOut)]);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn an_advisory_hook_that_hangs_is_switched_off_after_its_timeout() -> TestResult {
    let mut slow = TestHook::new("slow", &[HookPoint::UserPromptSubmit], |_| Act::Hang);
    slow.timeout = Duration::from_secs(5);
    let model = ScriptedModel::new().answer("one").answer("two");
    let mut session = Session::builder(model).hook(slow.shared()).build().await?;
    let mut events = Vec::new();
    session.run("first", &mut events).await?;
    session.run("second", &mut events).await?;
    assert_eq!(slow.seen().len(), 1, "asked once, then off");
    assert_eq!(hook_runs(&events), [(HookPoint::UserPromptSubmit, HookOutcome::TimedOut, true)]);
    Ok(())
}

#[tokio::test]
async fn cancelling_the_turn_stops_a_hook_that_hangs() -> TestResult {
    let slow = TestHook::new("slow", &[HookPoint::PreToolUse], |_| Act::Hang);
    let model = ScriptedModel::new().tool_call("shell", json!({"command": "ls"}));
    let mut session =
        Session::builder(model).tool(shell()).mode(Mode::Autonomous).hook(slow.shared()).build().await?;
    let options = TurnOptions::default();
    let cancel = options.cancel.clone();
    // The sink cancels once the call is proposed: the hook is then running.
    let mut sink = bosun_core::event::FnSink(move |event: Event| {
        if matches!(event, Event::ToolCallProposed { .. }) {
            cancel.cancel();
        }
        Ok(())
    });
    let error = session.run_with("list", options, &mut sink).await.unwrap_err();
    assert!(matches!(error.kind, TurnErrorKind::Cancelled), "{error}");
    Ok(())
}

#[tokio::test]
async fn an_observer_sees_every_event_of_the_turn() -> TestResult {
    let watcher = TestHook::new("watcher", &[], |_| Act::Decide(HookDecision::Continue));
    let model = ScriptedModel::new().answer("hi");
    let mut session = Session::builder(model).hook(watcher.shared()).build().await?;
    let mut events = Vec::new();
    session.run("hello", &mut events).await?;
    assert_eq!(*watcher.events.lock().unwrap(), events);
    assert!(watcher.seen().is_empty(), "it wants no point");
    Ok(())
}

#[tokio::test]
async fn pre_compact_runs_before_a_compaction_asked_for() -> TestResult {
    let pre = TestHook::new("pre", &[HookPoint::PreCompact], |_| Act::Decide(HookDecision::Continue));
    let model = ScriptedModel::new().answer("a").answer("b").answer("summary");
    let mut session = Session::builder(model).hook(pre.shared()).build().await?;
    session.run("one", &mut Vec::new()).await?;
    session.run("two", &mut Vec::new()).await?;
    let mut events = Vec::new();
    let compacted = session.compact_now(TurnOptions::default(), &mut events).await?;
    assert!(compacted.is_some());
    assert!(matches!(
        &pre.seen()[..],
        [HookInput::PreCompact { turn: None, trigger: bosun_core::hooks::CompactTrigger::Manual }]
    ));
    assert_eq!(hook_runs(&events), [(HookPoint::PreCompact, HookOutcome::Continued, false)]);
    Ok(())
}

/// A hook that takes only calls of one tool.
struct OnlyShell(TestHook);

impl SessionHooks for OnlyShell {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn wants_input(&self, input: &HookInput) -> bool {
        input.point() == HookPoint::PreToolUse && input.tool_name() == Some("shell")
    }
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        self.0.run(input)
    }
}

#[tokio::test]
async fn an_input_the_hook_does_not_want_is_not_a_run() -> TestResult {
    let inner =
        TestHook::new("only-shell", &[HookPoint::PreToolUse], |_| Act::Decide(HookDecision::Continue));
    let hook = OnlyShell(inner.clone());
    let read = FnTool::text("read", ToolCategory::Read, |_| "text".into());
    let model = ScriptedModel::new()
        .tool_call("read", json!({}))
        .tool_call("shell", json!({"command": "ls"}))
        .answer("ok");
    let journal = InMemoryJournal::new();
    let mut session = Session::builder(model)
        .tool(read)
        .tool(shell())
        .mode(Mode::Autonomous)
        .hook(Arc::new(hook))
        .journal(journal.clone())
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("go", &mut events).await?;
    assert_eq!(inner.seen().len(), 1, "run for the shell call only");
    assert_eq!(hook_runs(&events), [(HookPoint::PreToolUse, HookOutcome::Continued, false)]);
    assert_eq!(journaled_runs(&journal).len(), 1);
    Ok(())
}

#[test]
fn a_blocked_message_names_the_hook() {
    let kind = TurnErrorKind::HookBlocked { hook: "guard".into(), reason: "no".into(), prompt: true };
    assert_eq!(kind.to_string(), "the hook `guard` blocked the prompt: no");
    assert_eq!(kind.code(), "hook");
}
