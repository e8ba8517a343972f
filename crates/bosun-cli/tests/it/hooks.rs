//! Command hooks through the real binary against aimock (docs/hooks.md):
//! hooks from the user's config and a trusted project's
//! `.claude/settings.json` shape a run (a prompt note reaches the model, a
//! `Bash`-matched guard blocks `rm -rf` with its stderr as the reason, a
//! failing hook is one line on stderr), and an untrusted project's hooks are
//! not run and are named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::support;

use support::*;

const WORD: &str = "tidy the build";

/// A guard in Claude Code's form: reads the call on stdin, exit 2 on `rm -rf`.
const GUARD: &str = r#"#!/bin/bash
input=$(cat)
echo "$input" > "$CLAUDE_PROJECT_DIR/guard-saw.json"
case "$input" in
  *'rm -rf'*) echo "no rm -rf in this repo, use make clean" >&2; exit 2 ;;
esac
exit 0
"#;

const SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(make clean)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 10}]}
    ]
  }
}"#;

/// The workspace's `.claude/` with the guard and its settings.
fn claude_project(ws: &Path) {
    std::fs::create_dir_all(ws.join(".claude/hooks")).unwrap();
    std::fs::write(ws.join(".claude/settings.json"), SETTINGS).unwrap();
    let guard = ws.join(".claude/hooks/guard.sh");
    std::fs::write(&guard, GUARD).unwrap();
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The user's config: `hooks`, and the workspace trusted when `trusted`.
fn user_config(sandbox: &Sandbox, hooks: &str, trusted: bool) {
    let ws = sandbox.ws().canonicalize().unwrap();
    let trust = if trusted {
        format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", ws.display())
    } else {
        String::new()
    };
    let dir = sandbox.path("xdg/bosun");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), format!("{hooks}\n{trust}")).unwrap();
}

fn script() -> Value {
    fixtures(vec![
        json!({"match": {"userMessage": WORD, "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "shell", "arguments": {"command": "rm -rf build"}}]}}),
        json!({"match": {"userMessage": WORD, "turnIndex": 1}, "response": {"content": "left it alone"}}),
    ])
}

#[test]
fn hooks_from_the_user_and_a_trusted_projects_claude_settings_shape_a_run() {
    let Some(mock) = Aimock::start(&script()) else { return };
    let sandbox = task_sandbox();
    claude_project(&sandbox.ws());
    let hooks = r#"
[[hooks.UserPromptSubmit]]
command = "echo 'NOTE FROM THE HOOK 31'"

[[hooks.Stop]]
command = "echo 'stop hook broke' >&2; exit 3"
"#;
    user_config(&sandbox, hooks, true);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg(WORD);
    let out = run(cmd);
    out.expect_code(0);

    let journal = mock.journal();
    assert_eq!(journal.len(), 2, "{journal:#?}");
    let first = journal[0]["body"]["messages"].to_string();
    assert!(first.contains("NOTE FROM THE HOOK 31"), "the prompt's note reaches the model: {first}");
    let second = journal[1]["body"]["messages"].to_string();
    assert!(second.contains("no rm -rf in this repo, use make clean"), "the block's reason: {second}");

    let ws = sandbox.ws().canonicalize().unwrap();
    let saw: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("guard-saw.json")).unwrap()).unwrap();
    assert_eq!(saw["hook_event_name"], "PreToolUse");
    assert_eq!(saw["tool_name"], "shell", "bosun's tool name, matched by `Bash`");
    assert_eq!(saw["tool_input"], json!({"command": "rm -rf build"}));
    assert_eq!(saw["cwd"], ws.display().to_string());
    assert_eq!(saw["session_id"].as_str(), Some(session_from_stderr(&out.stderr).as_str()));

    let blocked = "hook PreToolUse:Bash#1 (\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh) blocked the call";
    assert!(out.stderr.contains(blocked), "{}", out.stderr);
    assert!(
        out.stderr.contains("hook Stop#1 (echo 'stop hook broke' >&2; exit 3) failed at Stop"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("exited with code 3; stderr: stop hook broke"), "{}", out.stderr);
}

#[test]
fn invariant_20_an_untrusted_projects_claude_hooks_are_not_run_and_are_named() {
    let Some(mock) = Aimock::start(&script()) else { return };
    let sandbox = task_sandbox();
    claude_project(&sandbox.ws());
    user_config(&sandbox, "", false);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", WORD]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(!sandbox.ws().join("guard-saw.json").exists(), "the guard never ran");
    assert!(
        out.stderr.contains(".claude/settings.json has hooks, which an untrusted project cannot run"),
        "{}",
        out.stderr
    );
    let events = json_events(&out.stdout);
    assert!(of_type(&events, "hook_run").is_empty(), "{}", out.stdout);
}
