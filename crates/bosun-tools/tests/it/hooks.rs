//! Command hooks against real bash and python3 scripts in a workspace:
//! Claude Code's protocol (stdin JSON, exit codes, JSON output) end to end,
//! the cleared environment, the bounds on output, and the process group
//! killed when a hung hook's run is dropped, as the session drops it at the
//! hook's timeout.
//!
//! Killed processes are reparented and may stay zombies when the
//! container's pid 1 does not reap them, so "gone" means "no process of the
//! group is alive" (zombies, state `Z`, do not count).

// Helpers outside #[test] fns fail the test the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use bosun_core::CallId;
use bosun_core::hooks::{
    CompactTrigger, HookDecision, HookError, HookInput, HookPoint, SessionHooks, StartSource,
};
use bosun_tools::ShellConfig;
use bosun_tools::hooks::{CommandHook, CommandHookSpec};
use serde_json::{Value, json};

use crate::common::{DEADLINE, POLL, live_members, wait_for_file, workspace};

const SESSION: &str = "0190e9e2-hook-test-session";

/// Writes an executable script into the workspace.
fn script(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn spec(point: HookPoint, command: &str) -> CommandHookSpec {
    CommandHookSpec::new(point, command).unwrap()
}

fn hook(root: &Path, spec: CommandHookSpec) -> CommandHook {
    CommandHook::new(spec, SESSION, root, &ShellConfig::from_process_env(root))
}

/// Runs `hook` as the session does: raced against its timeout, the run
/// dropped when the timeout wins.
async fn run(hook: &CommandHook, input: &HookInput) -> Result<HookDecision, HookError> {
    match tokio::time::timeout(hook.timeout(), hook.run(input)).await {
        Ok(result) => result,
        Err(_) => panic!("hook {} timed out", hook.name()),
    }
}

/// Runs `command` at `input`'s point.
async fn decide(root: &Path, command: &str, input: &HookInput) -> Result<HookDecision, HookError> {
    run(&hook(root, spec(input.point(), command)), input).await
}

fn pre_tool(tool: &str, arguments: Value) -> HookInput {
    HookInput::PreToolUse {
        turn: 1,
        call_id: CallId::new_v7(),
        tool_name: tool.into(),
        tool_input: arguments,
    }
}

fn shell_call() -> HookInput {
    pre_tool("shell", json!({"command": "rm -rf build"}))
}

fn prompt(text: &str) -> HookInput {
    HookInput::UserPromptSubmit { turn: 1, prompt: text.into() }
}

/// Whether `pid` is a live process: `kill(pid, 0)` succeeds and it is not
/// a zombie.
fn alive(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
    if rustix::process::test_kill_process(pid).is_err() {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).unwrap_or_default();
    let state = stat.rfind(')').and_then(|at| stat[at + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z" | "X"))
}

/// Polls until neither `pids` nor any process of their group is alive,
/// failing at the deadline.
async fn assert_gone(pgid: i32, pids: &[i32]) {
    let start = Instant::now();
    loop {
        let members = live_members(pgid);
        let living: Vec<i32> = pids.iter().copied().filter(|pid| alive(*pid)).collect();
        if members.is_empty() && living.is_empty() {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "group {pgid} still has {members:?}; alive: {living:?}");
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn exit_0_without_output_lets_the_call_go_on() {
    let (_dir, root) = workspace();
    assert_eq!(decide(&root, "exit 0", &shell_call()).await, Ok(HookDecision::Continue));
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_as_the_reason() {
    let (_dir, root) = workspace();
    script(&root, "deny.sh", "#!/bin/bash\necho 'some stdout'\necho '  no rm -rf here  ' >&2\nexit 2\n");
    let decision = decide(&root, "./deny.sh", &shell_call()).await;
    assert_eq!(decision, Ok(HookDecision::Block("no rm -rf here".into())));

    let silent = hook(&root, spec(HookPoint::PreToolUse, "exit 2").numbered(3));
    let Ok(HookDecision::Block(reason)) = run(&silent, &shell_call()).await else { panic!("not a block") };
    assert_eq!(reason, "blocked by hook PreToolUse#3 (exit 2)");
}

#[tokio::test]
async fn other_exit_codes_are_errors_naming_the_hook_the_status_and_stderr() {
    let (_dir, root) = workspace();
    for code in [1, 3, 127] {
        let command = format!("echo 'first line' >&2; echo 'it broke' >&2; exit {code}");
        let error = decide(&root, &command, &shell_call()).await.unwrap_err();
        let message = error.message();
        assert!(message.starts_with("hook PreToolUse (echo 'first line'"), "{message}");
        assert!(
            message.contains(&format!("exited with code {code}; stderr: first line\nit broke")),
            "{message}"
        );
    }
    let error = decide(&root, "exit 1", &shell_call()).await.unwrap_err();
    assert_eq!(error.message(), "hook PreToolUse (exit 1) exited with code 1");
}

#[tokio::test]
async fn a_hook_killed_by_a_signal_is_an_error() {
    let (_dir, root) = workspace();
    script(
        &root,
        "die.py",
        "#!/usr/bin/env python3\nimport os, signal, sys\nprint('dying', file=sys.stderr, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
    );
    let error = decide(&root, "exec ./die.py", &shell_call()).await.unwrap_err();
    assert!(error.message().contains("was killed by signal 9; stderr: dying"), "{}", error.message());
    let error = decide(&root, "kill -TERM $$", &prompt("hi")).await.unwrap_err();
    assert!(error.message().contains("was killed by signal 15"), "{}", error.message());
}

/// A python3 hook that writes its stdin to `seen.json` and exits 0.
const ECHO_STDIN: &str =
    "#!/usr/bin/env python3\nimport sys\nopen('seen.json', 'w').write(sys.stdin.read())\n";

async fn seen(root: &Path, input: &HookInput) -> Value {
    script(root, "echo_stdin.py", ECHO_STDIN);
    let _ = std::fs::remove_file(root.join("seen.json"));
    assert_eq!(decide(root, "./echo_stdin.py", input).await, Ok(HookDecision::Continue));
    serde_json::from_str(&std::fs::read_to_string(root.join("seen.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn the_stdin_json_carries_claude_codes_fields_for_every_point() {
    let (_dir, root) = workspace();
    let cwd = root.display().to_string();
    let base = |point: &str| json!({"session_id": SESSION, "cwd": cwd, "hook_event_name": point});
    let with = |point: &str, fields: Value| {
        let mut object = base(point);
        object.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        object
    };

    let arguments = json!({"path": "src/lib.rs", "old": "a", "new": "b"});
    assert_eq!(
        seen(&root, &pre_tool("edit_file", arguments.clone())).await,
        with("PreToolUse", json!({"tool_name": "edit_file", "tool_input": arguments}))
    );
    let post = HookInput::PostToolUse {
        turn: 2,
        call_id: CallId::new_v7(),
        tool_name: "shell".into(),
        tool_input: json!({"command": "cargo test"}),
        tool_response: "exit code: 101\nfailed".into(),
        is_error: true,
    };
    assert_eq!(
        seen(&root, &post).await,
        with(
            "PostToolUse",
            json!({
                "tool_name": "shell",
                "tool_input": {"command": "cargo test"},
                "tool_response": {"output": "exit code: 101\nfailed", "is_error": true}
            })
        )
    );
    assert_eq!(
        seen(&root, &prompt("fix the build — ünïcode")).await,
        with("UserPromptSubmit", json!({"prompt": "fix the build — ünïcode"}))
    );
    let stop = HookInput::Stop { turn: 1, answer: "done".into(), stop_hook_active: true };
    assert_eq!(seen(&root, &stop).await, with("Stop", json!({"stop_hook_active": true})));
    let child = HookInput::SubagentStop { turn: 1, answer: "done".into(), stop_hook_active: false };
    assert_eq!(seen(&root, &child).await, with("SubagentStop", json!({"stop_hook_active": false})));
    for (trigger, name) in [(CompactTrigger::Auto, "auto"), (CompactTrigger::Manual, "manual")] {
        let input = HookInput::PreCompact { turn: None, trigger };
        assert_eq!(seen(&root, &input).await, with("PreCompact", json!({"trigger": name})));
    }
    for (source, name) in [(StartSource::Startup, "startup"), (StartSource::Resume, "resume")] {
        let input = HookInput::SessionStart { source };
        assert_eq!(seen(&root, &input).await, with("SessionStart", json!({"source": name})));
    }
}

/// A hook printing `output` as its stdout, exit 0.
async fn printing(root: &Path, output: Value, input: &HookInput) -> Result<HookDecision, HookError> {
    std::fs::write(root.join("out.json"), output.to_string()).unwrap();
    decide(root, "cat out.json", input).await
}

#[tokio::test]
async fn json_decision_block_and_continue_false_block_and_approve_is_ignored() {
    let (_dir, root) = workspace();
    let call = shell_call();
    let block = json!({"decision": "block", "reason": "use make clean"});
    assert_eq!(printing(&root, block, &call).await, Ok(HookDecision::Block("use make clean".into())));
    let bare = printing(&root, json!({"decision": "block"}), &call).await;
    assert_eq!(bare, Ok(HookDecision::Block("blocked by hook PreToolUse (cat out.json)".into())));
    let stop = json!({"continue": false, "stopReason": "the build is frozen", "decision": "approve"});
    assert_eq!(printing(&root, stop, &call).await, Ok(HookDecision::Block("the build is frozen".into())));
    let approve = json!({"decision": "approve", "reason": "fine", "continue": true, "suppressOutput": true});
    assert_eq!(printing(&root, approve, &call).await, Ok(HookDecision::Continue));
    let stop_hook = HookInput::Stop { turn: 1, answer: "done".into(), stop_hook_active: false };
    let again = json!({"decision": "block", "reason": "the tests still fail; fix them"});
    assert_eq!(
        printing(&root, again, &stop_hook).await,
        Ok(HookDecision::Block("the tests still fail; fix them".into()))
    );
}

#[tokio::test]
async fn permission_decisions_deny_and_ask_narrow_and_allow_never_widens() {
    let (_dir, root) = workspace();
    let call = shell_call();
    let specific = |fields: Value| json!({"hookSpecificOutput": fields});
    let deny = specific(json!({
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not on main"
    }));
    assert_eq!(printing(&root, deny, &call).await, Ok(HookDecision::Block("not on main".into())));
    let ask = specific(json!({"permissionDecision": "ask", "permissionDecisionReason": "touches prod"}));
    assert_eq!(printing(&root, ask, &call).await, Ok(HookDecision::Ask("touches prod".into())));
    let ask_bare = printing(&root, specific(json!({"permissionDecision": "ask"})), &call).await;
    assert_eq!(ask_bare, Ok(HookDecision::Ask("hook PreToolUse (cat out.json) asks for approval".into())));
    let allow = specific(json!({"permissionDecision": "allow", "permissionDecisionReason": "trusted"}));
    assert_eq!(printing(&root, allow, &call).await, Ok(HookDecision::Continue));
}

#[tokio::test]
async fn updated_input_replaces_the_arguments_at_pre_tool_use_only() {
    let (_dir, root) = workspace();
    let updated = json!({"command": "rm -rf build --one-file-system"});
    let output = json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": updated}});
    assert_eq!(printing(&root, output.clone(), &shell_call()).await, Ok(HookDecision::UpdateInput(updated)));
    let post = HookInput::PostToolUse {
        turn: 1,
        call_id: CallId::new_v7(),
        tool_name: "shell".into(),
        tool_input: json!({}),
        tool_response: "ok".into(),
        is_error: false,
    };
    assert_eq!(printing(&root, output, &post).await, Ok(HookDecision::Continue));
    let bad = json!({"hookSpecificOutput": {"updatedInput": "rm"}});
    let error = printing(&root, bad, &shell_call()).await.unwrap_err();
    assert!(error.message().contains("`hookSpecificOutput.updatedInput`"), "{}", error.message());
}

#[tokio::test]
async fn additional_context_is_a_note() {
    let (_dir, root) = workspace();
    let output = json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": " the CI is red \n"}});
    assert_eq!(printing(&root, output, &prompt("go")).await, Ok(HookDecision::Note("the CI is red".into())));
    let start = HookInput::SessionStart { source: StartSource::Startup };
    let output = json!({"hookSpecificOutput": {"additionalContext": "branch: main"}});
    assert_eq!(printing(&root, output, &start).await, Ok(HookDecision::Note("branch: main".into())));
}

#[tokio::test]
async fn plain_stdout_is_a_note_at_prompt_and_start_and_ignored_elsewhere() {
    let (_dir, root) = workspace();
    let command = "printf '\\n  today is release day\\n\\n'";
    assert_eq!(
        decide(&root, command, &prompt("go")).await,
        Ok(HookDecision::Note("today is release day".into()))
    );
    let start = HookInput::SessionStart { source: StartSource::Resume };
    assert_eq!(decide(&root, command, &start).await, Ok(HookDecision::Note("today is release day".into())));
    assert_eq!(decide(&root, command, &shell_call()).await, Ok(HookDecision::Continue));
    assert_eq!(decide(&root, "echo '   '", &prompt("go")).await, Ok(HookDecision::Continue));
    assert_eq!(decide(&root, "echo '[1, 2]'", &shell_call()).await, Ok(HookDecision::Continue));
}

#[tokio::test]
async fn json_meant_but_malformed_or_of_the_wrong_shape_is_an_error() {
    let (_dir, root) = workspace();
    let error = decide(&root, "echo '{\"decision\": \"block\",'", &shell_call()).await.unwrap_err();
    assert!(error.message().contains("printed JSON that does not parse"), "{}", error.message());
    for (output, named) in [
        (json!({"decision": "deny"}), "`decision` = \"deny\""),
        (json!({"decision": 2}), "`decision` in its JSON output is not a string"),
        (json!({"continue": "no"}), "`continue`"),
        (
            json!({"hookSpecificOutput": {"permissionDecision": "maybe"}}),
            "`hookSpecificOutput.permissionDecision`",
        ),
        (json!({"hookSpecificOutput": []}), "`hookSpecificOutput`"),
    ] {
        let error = printing(&root, output, &shell_call()).await.unwrap_err();
        assert!(error.message().contains(named), "{named}: {}", error.message());
    }
    let big = format!("{{\"reason\": \"{}\"}}", "x".repeat(100_000));
    std::fs::write(root.join("big.json"), big).unwrap();
    let error = decide(&root, "cat big.json", &shell_call()).await.unwrap_err();
    assert!(error.message().contains("printed over 64 KiB"), "{}", error.message());
}

#[tokio::test]
async fn the_matcher_picks_tools_by_bosun_or_claude_code_name_before_anything_starts() {
    let (_dir, root) = workspace();
    let marking = |pattern: &str| {
        hook(&root, spec(HookPoint::PreToolUse, "touch ran; exit 2").with_matcher(pattern).unwrap())
    };
    let read = pre_tool("read_file", json!({"path": "a"}));
    let edit = pre_tool("edit_file", json!({"path": "a"}));
    let write = pre_tool("write_file", json!({"path": "a"}));
    let mcp = pre_tool("mcp__github__create_issue", json!({}));
    let cases = [
        ("Bash", &shell_call(), true),
        ("Bash", &read, false),
        ("shell", &shell_call(), true),
        ("Edit|Write", &edit, true),
        ("Edit|Write", &write, true),
        ("Edit|Write", &shell_call(), false),
        ("mcp__github__.*", &mcp, true),
        ("mcp__github", &mcp, false),
        ("*", &read, true),
        ("", &read, true),
    ];
    for (pattern, input, matched) in cases {
        let _ = std::fs::remove_file(root.join("ran"));
        let decision = run(&marking(pattern), input).await.unwrap();
        assert_eq!(
            matches!(decision, HookDecision::Block(_)),
            matched,
            "{pattern} on {:?}",
            input.tool_name()
        );
        assert_eq!(root.join("ran").exists(), matched, "{pattern}: started only when matched");
    }
    let resume_only =
        hook(&root, spec(HookPoint::SessionStart, "echo hello").with_matcher("resume").unwrap());
    let startup = HookInput::SessionStart { source: StartSource::Startup };
    assert_eq!(run(&resume_only, &startup).await, Ok(HookDecision::Continue));
    let resumed = HookInput::SessionStart { source: StartSource::Resume };
    assert_eq!(run(&resume_only, &resumed).await, Ok(HookDecision::Note("hello".into())));
}

#[tokio::test]
async fn a_hook_wants_its_own_point_only() {
    let (_dir, root) = workspace();
    let hook = hook(&root, spec(HookPoint::PostToolUse, "exit 2").with_required(true));
    assert!(
        hook.wants(HookPoint::PostToolUse)
            && !hook.wants(HookPoint::PreToolUse)
            && !hook.wants(HookPoint::Stop)
    );
    assert!(hook.required());
    // Asked at another point anyway, it starts nothing.
    assert_eq!(run(&hook, &shell_call()).await, Ok(HookDecision::Continue));
}

/// Writes its pid and a backgrounded sleeper's, then hangs.
const HANG: &str = "#!/bin/bash\nsleep 300 &\necho \"$$ $!\" > pids.tmp && mv pids.tmp pids\nsleep 300\n";

#[tokio::test]
async fn a_hung_hook_dropped_at_its_timeout_leaves_no_process_behind() {
    let (_dir, root) = workspace();
    script(&root, "hang.sh", HANG);
    let timeout = Duration::from_secs(2);
    let hook = hook(&root, spec(HookPoint::PreToolUse, "./hang.sh").with_timeout(timeout).unwrap());
    let input = shell_call();
    let started = Instant::now();
    // As the session runs it: raced against the hook's timeout.
    let pids_file = root.join("pids");
    let mut running = Box::pin(tokio::time::timeout(hook.timeout(), hook.run(&input)));
    let pids = tokio::select! {
        ended = &mut running => panic!("the hook ended before it was seen running: {ended:?}"),
        pids = wait_for_file(&pids_file) => pids,
    };
    let pids: Vec<i32> = pids.split_whitespace().map(|pid| pid.parse().unwrap()).collect();
    assert!(pids.len() == 2 && pids.iter().all(|pid| alive(*pid)), "{pids:?}");
    let ended = (&mut running).await;
    assert!(ended.is_err(), "the hook should have hung: {ended:?}");
    assert!(pids.iter().all(|pid| alive(*pid)), "killed only when the run is dropped");
    drop(running);
    assert!(started.elapsed() < timeout + Duration::from_secs(3));
    // The run's future is dropped: its guard has killed the group.
    assert_gone(pids[0], &pids).await;
}

#[tokio::test]
async fn what_a_hook_leaves_in_the_background_dies_when_it_exits() {
    let (_dir, root) = workspace();
    // The sleeper holds stdout open; the run must not wait for it.
    let command = "sleep 300 & echo \"$$ $!\" > pids; echo 'note from the hook'";
    let started = Instant::now();
    assert_eq!(
        decide(&root, command, &prompt("go")).await,
        Ok(HookDecision::Note("note from the hook".into()))
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let pids: Vec<i32> = std::fs::read_to_string(root.join("pids"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_gone(pids[0], &pids).await;
}

#[tokio::test]
async fn ten_megabytes_of_output_are_drained_and_the_run_ends_with_an_ordinary_decision() {
    let (_dir, root) = workspace();
    let flood = "head -c 10000000 /dev/zero | tr '\\0' x";
    assert_eq!(decide(&root, flood, &shell_call()).await, Ok(HookDecision::Continue));
    let Ok(HookDecision::Note(note)) = decide(&root, flood, &prompt("go")).await else {
        panic!("not a note")
    };
    assert_eq!(note.len(), bosun_tools::hooks::MAX_STDOUT_BYTES);
    let both = format!("{flood}; {flood} >&2; echo 'the end' >&2; exit 2");
    let Ok(HookDecision::Block(reason)) = decide(&root, &both, &shell_call()).await else {
        panic!("not a block")
    };
    assert_eq!(reason.len(), bosun_tools::hooks::MAX_STDERR_BYTES - 1, "the tail, trimmed");
    assert!(reason.ends_with("xxxthe end"), "{}", &reason[reason.len() - 20..]);
}

#[tokio::test]
async fn a_hook_that_never_reads_a_large_input_still_runs_to_its_end() {
    let (_dir, root) = workspace();
    let large = prompt(&"p".repeat(4 * 1024 * 1024));
    assert_eq!(
        decide(&root, "echo ignored-input", &large).await,
        Ok(HookDecision::Note("ignored-input".into()))
    );
}

#[tokio::test]
async fn the_hook_runs_in_the_workspace_root() {
    let (_dir, root) = workspace();
    std::fs::create_dir(root.join("sub")).unwrap();
    assert_eq!(decide(&root, "pwd -P > sub/cwd", &shell_call()).await, Ok(HookDecision::Continue));
    assert_eq!(std::fs::read_to_string(root.join("sub/cwd")).unwrap().trim(), root.display().to_string());
}

#[tokio::test]
async fn a_hook_that_cannot_start_is_an_error() {
    let (_dir, root) = workspace();
    let gone = root.join("removed");
    let hook = CommandHook::new(
        spec(HookPoint::Stop, "true"),
        SESSION,
        &gone,
        &ShellConfig::from_process_env(&gone),
    );
    let stop = HookInput::Stop { turn: 1, answer: String::new(), stop_hook_active: false };
    let error = run(&hook, &stop).await.unwrap_err();
    assert!(error.message().starts_with("hook Stop (true) could not be started"), "{}", error.message());
}

const ENV_BEGIN: &str = "--- hook env begin ---";
const ENV_END: &str = "--- hook env end ---";

/// Run by `the_environment_is_cleared_but_for_path_home_locale_and_the_project_dir`
/// in a child test process whose environment holds `BOSUN_TEST_SECRET`
/// (setting it in this process would need `unsafe`).
#[tokio::test]
#[ignore = "helper, run in a child process by the_environment_is_cleared_but_for_path_home_locale_and_the_project_dir"]
async fn hook_env_helper() {
    let (_dir, root) = workspace();
    let config = ShellConfig::from_process_env(&root).with_home(Some("/nonexistent/home"));
    let hook = CommandHook::new(spec(HookPoint::PreToolUse, "env > env.txt"), SESSION, &root, &config);
    assert_eq!(run(&hook, &shell_call()).await, Ok(HookDecision::Continue));
    let env = std::fs::read_to_string(root.join("env.txt")).unwrap();
    println!("{ENV_BEGIN}\nROOT={}\n{env}\n{ENV_END}", root.display());
}

#[test]
fn the_environment_is_cleared_but_for_path_home_locale_and_the_project_dir() {
    let name = bosun_testing::test_path!("hook_env_helper");
    let mut helper = std::process::Command::new(std::env::current_exe().unwrap());
    helper.args(["--exact", name.as_str(), "--ignored", "--nocapture", "--test-threads=1"]);
    helper.env("BOSUN_TEST_SECRET", "secret-value-of-the-test");
    let output = helper.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let env = &stdout[stdout.find(ENV_BEGIN).unwrap() + ENV_BEGIN.len()..stdout.find(ENV_END).unwrap()];
    let mut lines = env.trim().lines();
    let root = lines.next().unwrap().strip_prefix("ROOT=").unwrap();
    let mut keys: Vec<&str> = lines.filter_map(|line| line.split_once('=')).map(|(key, _)| key).collect();
    keys.sort_unstable();
    let allowed = [
        "BOSUN_PROJECT_DIR",
        "CLAUDE_PROJECT_DIR",
        "HOME",
        "LANG",
        "LC_ALL",
        "OLDPWD",
        "PATH",
        "PWD",
        "SHLVL",
        "_",
    ];
    assert!(keys.iter().all(|key| allowed.contains(key)), "{env}");
    assert!(!env.contains("BOSUN_TEST_SECRET") && !env.contains("secret-value"), "{env}");
    assert!(env.contains(&format!("\nCLAUDE_PROJECT_DIR={root}\n")), "{env}");
    assert!(env.contains(&format!("\nBOSUN_PROJECT_DIR={root}\n")), "{env}");
    assert!(env.contains("\nHOME=/nonexistent/home\n") && env.contains("\nLC_ALL=C.UTF-8\n"), "{env}");
}

/// The escape suite (`bosun_testing::escape`) as a command hook's command:
/// a hook built from a sandboxed shell runs inside the sandbox, and none of
/// the attempts' effects happen.
#[tokio::test]
async fn invariant_18_escape_suite_holds_in_a_command_hook() {
    use bosun_core::permission::{PROTECTED_DIRS, PROTECTED_FILES};
    use bosun_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
    use bosun_testing::escape::EscapeScene;

    let scene = EscapeScene::new().unwrap();
    let root = scene.workspace();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &root)
        .with_protected_names(PROTECTED_DIRS.iter().chain(PROTECTED_FILES).copied())
        .with_default_secrets(&scene.home(), Some(&scene.xdg_config_home()));
    let sandbox = std::sync::Arc::new(Sandbox::new(policy).unwrap());
    let shell = ShellConfig::from_process_env(&root)
        .with_home(Some(&scene.home().display().to_string()))
        .with_sandbox(sandbox);
    let log = root.join("attempts.log");
    let command = format!("( {} ) > {} 2>&1; exit 0", scene.script(), log.display());
    let spec = spec(HookPoint::UserPromptSubmit, &command).with_timeout(Duration::from_secs(60)).unwrap();
    let hook = CommandHook::new(spec, SESSION, &root, &shell);
    let decision = run(&hook, &HookInput::UserPromptSubmit { turn: 1, prompt: "go".into() }).await;
    assert!(decision.is_ok(), "{decision:?}");
    let output = std::fs::read_to_string(&log).unwrap();
    let violations = scene.violations(&output);
    scene.clean_up_survivors();
    assert!(violations.is_empty(), "{violations:#?}\n{output}");
    assert!(output.contains("== tar --checkpoint-action"), "every attempt ran: {output}");
}
