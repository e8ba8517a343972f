//! The conversation's keys past typing, end to end (the real `bosun` on a
//! pseudo-terminal against aimock, as in `interactive.rs`): a shell call's
//! output streamed under its line while it runs, a few lines left when it
//! ends, Ctrl+O's pager over the whole of it as the model saw it, and
//! Ctrl+R's search of the prompt history; a long diff in a tall terminal's
//! approval, and a queued follow-up's words. Nothing sleeps to synchronise:
//! the command waits on a FIFO the test writes once the screen showed what
//! it must, and every wait is on the screen with a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::interactive::{COLS, ROWS, bosun, gated_task, messages, quit, requests, text_of, wait_ready};
use crate::support;

use support::*;

const CTRL_O: &[u8] = b"\x0f";
const CTRL_R: &[u8] = b"\x12";

/// The row after the first one holding `marker`, trimmed.
fn row_after(contents: &str, marker: &str) -> Option<String> {
    let rows: Vec<&str> = contents.lines().collect();
    let at = rows.iter().position(|row| row.contains(marker))?;
    rows.get(at + 1).map(|row| row.trim_end().to_owned())
}

/// The input box's first row: the one under the rule over it (the last
/// rule on the screen).
fn input_row(contents: &str) -> Option<String> {
    let rows: Vec<&str> = contents.lines().collect();
    let rule = rows.iter().rposition(|row| row.starts_with("──────────"))?;
    rows.get(rule + 1).map(|row| row.trim_end().to_owned())
}

#[test]
fn a_shell_calls_output_streams_under_it_and_ctrl_o_pages_the_whole_of_it() {
    let task = "print forty lines";
    let answer = "It printed forty lines.";
    // Twelve lines, a wait on the gate, then 28 more.
    let command = "seq -f 'out %g' 1 12; read x < gate.fifo; seq -f 'out %g' 13 40";
    let Some(mock) = Aimock::start(&fixtures(call_then_answer(
        task,
        "shell",
        json!({"command": command}),
        "out 40",
        answer,
    ))) else {
        return;
    };
    let (_sandbox, gate, mut pty) = gated_task(&mock, task);

    // While it waits on the gate: its newest five lines under it, and how
    // many are above them.
    pty.wait_until("the running call's newest lines", |e| {
        let screen = e.contents();
        screen.contains("│ … +7 lines") && screen.contains("│ out 12")
    });
    let running = pty.contents();
    let call = running.lines().position(|r| r.contains(&format!("shell {command} · "))).unwrap();
    let under: Vec<&str> = running.lines().skip(call + 1).take(6).map(str::trim_end).collect();
    assert_eq!(
        under,
        ["  │ … +7 lines", "  │ out 8", "  │ out 9", "  │ out 10", "  │ out 11", "  │ out 12"],
        "{running}"
    );
    let writer = std::thread::spawn(move || std::fs::write(gate, "go\n").unwrap());
    pty.wait_shown(answer);
    writer.join().unwrap();

    // Ended: the last three lines stay under its line, with the count of
    // the others and the key that shows them.
    let shown = pty.shown();
    let ended =
        shown.iter().position(|r| r.starts_with("✓ shell seq")).unwrap_or_else(|| panic!("{shown:#?}"));
    let kept: Vec<&str> = shown[ended + 1..].iter().take(4).map(|r| r.trim_end()).collect();
    assert_eq!(
        kept,
        ["    … +37 lines (ctrl+o to expand)", "    out 38", "    out 39", "    out 40"],
        "{shown:#?}"
    );
    wait_ready(&mut pty);
    assert!(!pty.contents().contains("│ out"), "the live lines are gone:\n{}", pty.contents());

    // Ctrl+O: the whole result, the status line and all forty lines, as
    // the model got it.
    pty.keys(CTRL_O);
    pty.wait_on_screen("· call 1 of 1 · lines 1–11 of 41 ");
    let first = pty.contents();
    let top = first.lines().position(|r| r.contains("call 1 of 1")).unwrap();
    let page: Vec<&str> = first.lines().skip(top + 1).take(11).map(str::trim_end).collect();
    let expected: Vec<String> =
        std::iter::once("exit code: 0".to_owned()).chain((1..=10).map(|i| format!("out {i}"))).collect();
    assert_eq!(page, expected, "{first}");
    pty.keys(b"G");
    pty.wait_on_screen("· lines 31–41 of 41 ");
    assert!(pty.contents().lines().any(|r| r.trim_end() == "out 40"), "{}", pty.contents());
    pty.keys(b"q");
    wait_ready(&mut pty);

    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let result = messages(&requests[1])
        .iter()
        .find(|m| m["role"] == "tool")
        .map(text_of)
        .unwrap_or_else(|| panic!("no tool result: {:#?}", requests[1]));
    assert_eq!(result.lines().count(), 41, "the model saw what the pager showed: {result}");
    assert!(result.starts_with("exit code: 0\nout 1\n") && result.trim_end().ends_with("out 40"), "{result}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn ctrl_r_finds_an_earlier_prompt_and_enter_takes_it_into_the_input_unsent() {
    let (parser, docs) = ("fix the parser", "fix the docs");
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": parser, "turnIndex": 0}, "response": {"content": "Parser fixed."}}),
        json!({"match": {"userMessage": docs, "turnIndex": 1}, "response": {"content": "Docs fixed."}}),
        json!({"match": {"userMessage": parser, "turnIndex": 2}, "response": {"content": "Parser fixed again."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(parser);
    pty.wait_shown("Parser fixed.");
    wait_ready(&mut pty);
    pty.type_line(docs);
    pty.wait_shown("Docs fixed.");
    wait_ready(&mut pty);

    // Typing narrows to the newest match, case ignored; Ctrl+R again to an
    // older one.
    pty.keys(b"draft");
    pty.keys(CTRL_R);
    pty.keys(b"FIX");
    pty.wait_until("the newest match", |e| {
        row_after(&e.contents(), "reverse search: FIX").as_deref() == Some(&format!("› {docs}"))
    });
    pty.keys(CTRL_R);
    pty.wait_until("the older match", |e| {
        row_after(&e.contents(), "reverse search: FIX").as_deref() == Some(&format!("› {parser}"))
    });

    // Enter takes it into the input, where it waits to be sent.
    pty.keys(b"\r");
    pty.wait_until("the match in the input", |e| {
        let screen = e.contents();
        !screen.contains("reverse search") && input_row(&screen).as_deref() == Some(&format!("› {parser}"))
    });
    assert!(!pty.contents().contains("working ·"), "no turn runs:\n{}", pty.contents());
    assert_eq!(requests(&mock).len(), 2, "nothing was sent");
    pty.keys(b"\r");
    pty.wait_shown("Parser fixed again.");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let users: Vec<String> =
        messages(&requests[2]).iter().filter(|m| m["role"] == "user").map(text_of).collect();
    assert_eq!(users.len(), 3, "sent once: {users:#?}");
    assert!(users[2].contains(parser) && !users[2].contains("draft"), "as found: {users:#?}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn a_tall_terminal_shows_a_long_diff_in_the_approval() {
    let old: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    let new: String = (1..=30).map(|n| format!("LINE {n}\n")).collect();
    let task = "shout the lines";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "edit_file",
                "arguments": {"path": "lines.txt", "old_text": old, "new_text": new}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {"content": "Shouted."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    std::fs::write(sandbox.ws().join("lines.txt"), &old).unwrap();
    let mut pty = sandbox.converse(&mock, &[], 100);
    pty.type_line(task);
    pty.wait_on_screen("[y] approve once");
    let screen = pty.contents();
    let shown = screen.lines().filter(|l| l.starts_with("-line ") || l.starts_with("+LINE ")).count();
    // A 40-row terminal: the usual 14-row viewport showed 9 diff lines.
    assert!(shown >= 25, "{shown} diff lines shown:\n{screen}");
    pty.keys(b"y");
    pty.wait_shown("Shouted.");
    pty.wait_until("the modal gone", |e| !e.contents().contains("[y] approve once"));
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn a_queued_follow_up_shows_its_own_words_until_it_is_sent() {
    let task = "run the gated command";
    let follow = "then summarise the log";
    let command = "read x < gate.fifo; echo released $x";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {"content": "Released."}}),
        json!({"match": {"userMessage": follow}, "response": {"content": "Summarised."}}),
    ])) else {
        return;
    };
    let (_sandbox, gate, mut pty) = gated_task(&mock, task);
    pty.wait_on_screen(&format!("shell {command} · "));
    pty.keys(format!("{follow}\t").as_bytes());
    pty.wait_on_screen(&format!("queued (follow-up): {follow}"));
    let writer = std::thread::spawn(move || std::fs::write(gate, "go\n").unwrap());
    pty.wait_shown("Summarised.");
    writer.join().unwrap();
    pty.wait_until("the queue emptied", |e| !e.contents().contains("queued (follow-up)"));
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}
