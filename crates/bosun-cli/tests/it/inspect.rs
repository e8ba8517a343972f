//! `/permissions` and `/review` with the real binary in a terminal against
//! aimock: the rules listed, a deny added for the session (and saved to the
//! user's config) refusing the model's next call; a review sending the
//! session's diff. (`/mcp` is in `mcp.rs`, beside the servers it lists.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support;

use support::*;

const IDLE: &str = "message · @path attaches";

fn conversation(sandbox: &Sandbox, mock: &Aimock, mode: &str) -> Pty {
    sandbox.converse(mock, &["--mode", mode], 120)
}

fn completions(mock: &Aimock) -> Vec<Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

#[test]
fn permissions_lists_the_rules_and_a_rule_added_for_the_session_decides_the_next_call() {
    let task = "clean up";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "rm greet.sh"}}]}}),
        json!({"match": {"toolResultContains": "rm", "turnIndex": 1}, "response": {"content": "Left it."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let config = sandbox.path("xdg/bosun/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[permissions]\nshell = { deny = [\"curl\"] }\n").unwrap();
    let mut pty = conversation(&sandbox, &mock, "autonomous");
    pty.type_line("/permissions");
    pty.wait_shown("approved for the session: nothing yet");
    let listed = pty.shown().iter().any(|row| row == "  1. the rule deny `curl` for `shell` (yours)");
    assert!(listed, "{:#?}", pty.shown());
    pty.type_line("/permissions deny shell rm --save");
    pty.wait_shown("added for this session: the rule deny `rm` for `shell`");
    let saved = std::fs::read_to_string(&config).unwrap();
    assert!(saved.contains(r#"shell = { deny = ["curl", "rm"] }"#), "{saved}");
    pty.type_line(task);
    pty.wait_shown("Left it.");
    assert!(sandbox.ws().join("greet.sh").exists(), "autonomous, yet the session's deny held");
    pty.wait_on_screen(IDLE);
    pty.type_line("/permissions remove 2");
    pty.wait_shown("removed for this session: the rule deny `rm` for `shell`");
    pty.type_line("/permissions allow nosuch(x)");
    pty.wait_shown("permissions.nosuch(x)");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let sent = completions(&mock);
    assert!(sent[1]["body"]["messages"].to_string().contains("deny"), "the model was told why");
}

#[test]
fn review_sends_the_sessions_diff_to_the_model() {
    let task = "fix the greeting";
    let list = call_then_answer(
        task,
        "edit_file",
        json!({"path": "greet.sh", "old_text": "wrold", "new_text": "world"}),
        "greet.sh",
        "Fixed.",
    );
    let mut list = list;
    list.push(json!({"match": {"userMessage": "Review the changes made in this session"},
        "response": {"content": "Looks right."}}));
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut pty = conversation(&sandbox, &mock, "write");
    pty.type_line(task);
    pty.wait_shown("Fixed.");
    pty.wait_on_screen(IDLE);
    pty.type_line("/review error handling");
    pty.wait_shown("Looks right.");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let sent = completions(&mock);
    let last = sent.last().unwrap()["body"]["messages"].to_string();
    assert!(last.contains("```diff"), "{last}");
    assert!(last.contains("+echo \\\"hello world\\\""), "{last}");
    assert!(last.contains("Focus on: error handling"), "{last}");
}
