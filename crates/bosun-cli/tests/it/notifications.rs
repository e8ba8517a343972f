//! Notifications with the real binary in a terminal: once the terminal
//! reports it lost focus, a waiting approval and a turn's end are told as
//! OSC 9 (the user's `notifications = "osc9"`); while focused, nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

const APPROVAL: &[u8] = b"\x1b]9;bosun: approval needed for edit_file\x07";
const DONE: &[u8] = b"\x1b]9;bosun: the turn is done\x07";

#[test]
fn an_unfocused_terminal_is_told_of_an_approval_and_a_turns_end() {
    let task = "fix the greeting";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "just say hi"}, "response": {"content": "Hi."}}),
        // After "Hi.": the model's turns so far count one.
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {
            "toolCalls": [{"name": "edit_file",
                "arguments": {"path": "greet.sh", "old_text": "wrold", "new_text": "world"}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 2}, "response": {"content": "Fixed the typo."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let dir = sandbox.path("xdg/bosun");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "notifications = \"osc9\"\n").unwrap();
    let mut pty = sandbox.converse(&mock, &[], 100);
    // Focused (no report yet): a turn ends untold.
    pty.type_line("just say hi");
    pty.wait_shown("Hi.");
    pty.wait_on_screen("message · @path attaches");
    assert!(!contains(&pty.raw(), DONE), "told while focused");

    pty.keys(b"\x1b[O"); // The terminal reports it lost focus.
    pty.type_line(task);
    // Each is written before the frame that follows it is drawn.
    pty.wait_on_screen("[y] approve once");
    assert!(contains(&pty.raw(), APPROVAL), "the approval was told");
    pty.keys(b"y");
    pty.wait_shown("Fixed the typo.");
    pty.wait_on_screen("message · @path attaches");
    assert!(contains(&pty.raw(), DONE), "the turn's end was told");
    pty.keys(b"\x1b[I\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}
