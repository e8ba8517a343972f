//! Custom slash commands with the real binary in a terminal, against
//! aimock: a trusted project's `.claude/commands/` file run with arguments,
//! its `allowed-tools` narrowing that turn and its `model` choosing that
//! turn's model, a user's command from `~/.claude/commands/`, both in
//! `/help`; an untrusted project's commands not read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::{Value, json};

use crate::support;

use support::*;

const FIX_ISSUE: &str = "---
description: Fix an issue by its number
argument-hint: [number] [priority]
allowed-tools: Read, Grep
---
Fix issue #$1 with priority $2. Everything typed: $ARGUMENTS
";

/// The input's placeholder when no turn runs (a command typed while one
/// runs is refused).
const IDLE: &str = "message · @path attaches";

/// The user's config: the workspace trusted or not.
fn user_config(sandbox: &Sandbox, trusted: bool) {
    let ws = sandbox.ws().canonicalize().unwrap();
    let level = if trusted { "trusted" } else { "untrusted" };
    let dir = sandbox.path("xdg/bosun");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[projects.\"{}\"]\ntrust_level = \"{level}\"\n", ws.display()),
    )
    .unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The names of the tools a request offered (OpenAI chat's shape).
fn offered(request: &Value) -> Vec<String> {
    let tools = request["body"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

/// The requests that asked for a completion, in order.
fn completions(mock: &Aimock) -> Vec<Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

#[test]
fn a_trusted_projects_claude_command_runs_with_its_arguments_tools_and_model() {
    let list = vec![
        json!({"match": {"userMessage": "Fix issue #42 with priority high"}, "response": {"content": "Fixed issue 42."}}),
        json!({"match": {"userMessage": "Say hello to the team"}, "response": {"content": "Hello, team."}}),
        json!({"match": {"userMessage": "Summarize the changes"}, "response": {"content": "Summary done."}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    user_config(&sandbox, true);
    write(&sandbox.ws().join(".claude/commands/fix-issue.md"), FIX_ISSUE);
    write(
        &sandbox.ws().join(".bosun/commands/git/summary.md"),
        "---\nmodel: openai/gpt-other\n---\nSummarize the changes.\n",
    );
    write(&sandbox.path("home/.claude/commands/hello.md"), "# Greet someone\nSay hello to $ARGUMENTS.\n");
    let mut pty = sandbox.converse(&mock, &[], 120);

    pty.type_line("/help");
    // The heading after the commands (completion shows some of them too).
    pty.wait_until("the help's keys", |e| e.shown().iter().any(|row| row == "keys"));
    let shown = pty.shown();
    let listed = |name: &str, help: &str| shown.iter().any(|row| row.contains(name) && row.contains(help));
    assert!(listed("/fix-issue", "Fix an issue by its number [number] [priority] (project)"), "{shown:#?}");
    assert!(listed("/hello", "Greet someone (user)"), "{shown:#?}");
    assert!(listed("/git:summary", "Summarize the changes. (project)"), "{shown:#?}");

    pty.type_line("/fix-issue 42 high");
    pty.wait_shown("Fixed issue 42.");
    pty.wait_on_screen(IDLE);
    assert!(pty.shown().iter().any(|r| r == "this turn's tools: read_file, search"), "{:#?}", pty.shown());
    pty.type_line("/hello the team");
    pty.wait_shown("Hello, team.");
    pty.wait_on_screen(IDLE);
    pty.type_line("/git:summary");
    pty.wait_shown("Summary done.");
    pty.wait_until("back on the session's model", |e| {
        e.contents().lines().any(|l| l.starts_with("openai/gpt-test · "))
    });
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);

    let sent = completions(&mock);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    let user = |request: &Value| {
        let messages = request["body"]["messages"].as_array().unwrap();
        messages.iter().rev().find(|m| m["role"] == "user").map(|m| m["content"].to_string()).unwrap()
    };
    assert!(
        user(&sent[0]).contains("Fix issue #42 with priority high. Everything typed: 42 high"),
        "{}",
        user(&sent[0])
    );
    assert_eq!(offered(&sent[0]), ["read_file", "search"], "allowed-tools narrowed the turn");
    assert!(user(&sent[1]).contains("Say hello to the team."), "{}", user(&sent[1]));
    assert!(offered(&sent[1]).contains(&"shell".to_owned()), "the tools are back: {:?}", offered(&sent[1]));
    assert_eq!(sent[1]["body"]["model"], "gpt-test");
    assert_eq!(sent[2]["body"]["model"], "gpt-other", "the command's model ran its turn");
}

#[test]
fn invariant_20_an_untrusted_projects_commands_are_not_read() {
    let Some(mock) = Aimock::start(&fixtures(Vec::new())) else { return };
    let sandbox = task_sandbox();
    user_config(&sandbox, false);
    write(&sandbox.ws().join(".claude/commands/fix-issue.md"), FIX_ISSUE);
    let mut pty = sandbox.converse(&mock, &[], 120);
    pty.wait_shown("the project's commands (.claude/commands) are not read");
    pty.type_line("/fix-issue 42 high");
    pty.wait_shown("unknown command /fix-issue; /help lists them");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert!(completions(&mock).is_empty(), "nothing was sent to the model");
}
