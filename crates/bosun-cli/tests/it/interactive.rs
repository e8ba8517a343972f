//! The interactive mode end to end: the real `bosun` with no subcommand
//! (and `bosun resume ID` with no prompt, and the session picker of `bosun
//! resume` and `bosun compact` naming no session) on a pseudo-terminal of a
//! real size, against the real mock LLM server (npm `@copilotkit/aimock`,
//! installed by `scripts/test` into `test-peers/`), with a terminal emulator
//! (the `vt100` crate) on the master side: it draws what bosun prints and
//! answers the terminal queries the UI waits on. The assertions are on the
//! screen, on the raw bytes, on the terminal's settings, on the workspace
//! and on aimock's journal (the requests it received).
//!
//! Without aimock every test here FAILS, unless `BOSUN_SKIP_AIMOCK=1` says
//! to skip (loudly). Nothing sleeps to synchronise: every wait is on the
//! screen, with a deadline that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use rustix::termios::LocalModes;
use serde_json::{Value, json};

use crate::support;

use support::*;

pub(crate) const ROWS: u16 = 30;
pub(crate) const COLS: u16 = 100;

/// `bosun -C WS --model openai/gpt-test --base-url MOCK/v1 EXTRA` with the
/// key set: the conversation, in the sandbox.
pub(crate) fn bosun(sandbox: &Sandbox, mock: &Aimock, extra: &[&str]) -> Command {
    let api = Api::OpenAiChat;
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").args(api.args(mock)).args(extra);
    cmd
}

/// The UI is up and waiting for a message.
pub(crate) fn wait_ready(pty: &mut Pty) {
    pty.wait_on_screen("message · @path attaches · /help");
}

/// The conversation in autonomous mode in a workspace holding `gate.fifo`,
/// with `task` sent: a shell call reading the gate runs until the test
/// writes it.
pub(crate) fn gated_task(mock: &Aimock, task: &str) -> (Sandbox, PathBuf, Pty) {
    let sandbox = task_sandbox();
    let gate = sandbox.fifo("gate.fifo");
    let mut pty = Pty::spawn(bosun(&sandbox, mock, &["--mode", "autonomous"]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(task);
    (sandbox, gate, pty)
}

/// Ctrl+C twice (the second once the UI says a second one quits), then the
/// exit.
pub(crate) fn quit(mut pty: Pty) -> PtyExit {
    pty.keys(b"\x03");
    pty.wait_on_screen("ctrl+c again quits");
    pty.keys(b"\x03");
    pty.finish()
}

/// The session named by the line printed after the terminal is restored.
fn session_of(exit: &PtyExit) -> String {
    let text = String::from_utf8_lossy(&exit.raw);
    let at = text.rfind("session ").unwrap_or_else(|| panic!("no session line:\n{}", exit.contents));
    let line = text[at..].lines().next().unwrap();
    let (id, rest) = line["session ".len()..].split_once(';').unwrap_or_else(|| panic!("{line:?}"));
    assert_eq!(rest.trim(), format!("continue it with `bosun resume {id}`"), "{line:?}");
    id.to_owned()
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// A message's text, whether its content is a string or a list of parts.
pub(crate) fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// The chat requests aimock received, oldest first.
pub(crate) fn requests(mock: &Aimock) -> Vec<Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

pub(crate) fn messages(request: &Value) -> Vec<Value> {
    request["body"]["messages"].as_array().unwrap().clone()
}

/// The index of the first message with `role` whose text contains `text`.
fn position(messages: &[Value], role: &str, text: &str) -> Option<usize> {
    messages.iter().position(|m| m["role"] == role && text_of(m).contains(text))
}

// ---------------------------------------------------------------- tests

#[test]
fn typing_a_task_streams_the_answer_and_ctrl_c_twice_exits_0_with_the_terminal_restored() {
    let task = "say hello please";
    let answer = "Hello from the mock, streamed in small pieces.";
    let Some(mock) = Aimock::start(&fixtures(vec![json!({
        "match": {"userMessage": task, "turnIndex": 0}, "chunkSize": 4,
        "response": {"content": answer}})]))
    else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    let before = pty.termios();
    assert!(before.local_modes.contains(LocalModes::ICANON | LocalModes::ECHO), "{before:?}");
    wait_ready(&mut pty);
    // Raw mode while the UI runs.
    let during = pty.termios();
    assert!(!during.local_modes.intersects(LocalModes::ICANON | LocalModes::ECHO), "not raw: {during:?}");
    pty.type_line(task);
    pty.wait_shown(answer);
    let screen = pty.contents();
    assert!(screen.contains(&format!("› {task}")), "the task is echoed:\n{screen}");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert!(position(&messages(&requests[0]), "user", task).is_some(), "{:#?}", requests[0]);

    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let id = session_of(&exit);
    assert!(
        exit.contents.contains(&format!("session {id}; continue it with `bosun resume {id}`")),
        "{}",
        exit.contents
    );
    // The answer stays in the terminal's scrollback, above the session line.
    assert!(exit.contents.contains(answer), "{}", exit.contents);
    // The terminal as it was: line editing and echo back, same settings.
    let after = exit.termios;
    assert!(after.local_modes.contains(LocalModes::ICANON | LocalModes::ECHO), "{after:?}");
    assert_eq!(after.local_modes, before.local_modes);
    assert_eq!(after.input_modes, before.input_modes);
    assert_eq!(after.output_modes, before.output_modes);
    // Bracketed paste was on and is off, the cursor shown, before the line.
    assert!(contains(&exit.raw, b"\x1b[?2004h"), "bracketed paste was never enabled");
    let paste_off = rfind(&exit.raw, b"\x1b[?2004l").expect("bracketed paste disabled");
    let shown = rfind(&exit.raw, b"\x1b[?25h").expect("the cursor shown");
    let line = rfind(&exit.raw, b"session ").unwrap();
    assert!(paste_off < line && shown < line, "restored after the session line");
    assert!(!exit.bracketed_paste && !exit.cursor_hidden, "{}", exit.contents);
}

#[test]
fn without_a_terminal_bosun_prints_a_hint_to_use_exec() {
    let Some(mock) = Aimock::start(&fixtures(vec![])) else { return };
    let sandbox = task_sandbox();
    let out = Running::spawn(bosun(&sandbox, &mock, &[]), Some("")).finish();
    out.expect_code(2);
    assert!(out.stderr.contains("bosun exec"), "{out:#?}");
    assert!(out.stdout.is_empty(), "{out:#?}");
    assert!(mock.journal().is_empty(), "no model request: {:#?}", mock.journal());
}

#[test]
fn steering_typed_while_a_tool_runs_reaches_the_next_request_after_the_batch() {
    let task = "run the gated command";
    let steer = "also mention the weather";
    let command = "read x < gate.fifo; echo released $x";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}}),
        // Only a request whose last user message is the steering answers.
        json!({"match": {"userMessage": steer, "turnIndex": 1}, "response": {
            "content": "Steered: the weather is fine."}}),
    ])) else {
        return;
    };
    let (_sandbox, gate, mut pty) = gated_task(&mock, task);
    // Started: the running call shows its clock.
    pty.wait_on_screen(&format!("shell {command} · "));
    pty.type_line(steer);
    pty.wait_on_screen(&format!("queued (steer): {steer}"));
    assert_eq!(requests(&mock).len(), 1, "nothing reached the model while the tool ran");
    // Release the command (the open blocks until its reader is there).
    let writer = std::thread::spawn(move || std::fs::write(gate, "go\n").unwrap());
    pty.wait_shown("Steered: the weather is fine.");
    writer.join().unwrap();

    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = messages(&requests[1]);
    let result = second
        .iter()
        .position(|m| m["role"] == "tool" && text_of(m).contains("released go"))
        .unwrap_or_else(|| panic!("no tool result in {second:#?}"));
    let steered = position(&second, "user", steer).unwrap_or_else(|| panic!("no steering in {second:#?}"));
    let asked = position(&second, "user", task).unwrap();
    assert!(
        asked < result && result < steered,
        "task {asked}, result {result}, steering {steered}: {second:#?}"
    );
    assert_eq!(steered, second.len() - 1, "the steering is the last message: {second:#?}");
    // The steering is not shown as queued any more.
    pty.wait_until("the queue emptied", |e| !e.contents().contains("queued (steer)"));
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn approving_an_edit_shows_its_diff() {
    let task = "fix the greeting";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "edit_file",
                "arguments": {"path": "greet.sh", "old_text": "wrold", "new_text": "world"}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {"content": "Fixed the typo."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    // An 80-column terminal, as many are.
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), 24, 80);
    wait_ready(&mut pty);
    pty.type_line(task);
    pty.wait_on_screen("[y] approve once");
    let asked = pty.contents();
    for text in [
        "? edit_file wants to run:",
        "-echo \"hello wrold\"",
        "+echo \"hello world\"",
        "[a] approve all later `edit_file` calls in this session",
    ] {
        assert!(asked.contains(text), "the modal does not show {text:?}:\n{asked}");
    }
    assert_eq!(sandbox.greet(), GREET, "nothing written before the approval");
    pty.keys(b"y");
    pty.wait_shown("Fixed the typo.");
    assert_eq!(sandbox.greet(), FIXED);
    // After the call: its outcome and its diff, indented, in the scrollback.
    let shown = pty.shown();
    let ok = shown
        .iter()
        .position(|r| r.starts_with("✓ edit_file greet.sh"))
        .unwrap_or_else(|| panic!("{shown:#?}"));
    let minus =
        shown.iter().position(|r| r == "    -echo \"hello wrold\"").unwrap_or_else(|| panic!("{shown:#?}"));
    let plus =
        shown.iter().position(|r| r == "    +echo \"hello world\"").unwrap_or_else(|| panic!("{shown:#?}"));
    assert!(ok < minus && minus < plus, "{shown:#?}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let second = &requests(&mock)[1];
    assert!(
        messages(second).iter().any(|m| m["role"] == "tool" && text_of(m).contains("+echo \"hello world\"")),
        "{second:#?}"
    );
}

#[test]
fn denying_a_command_with_a_reason_sends_the_reason_to_the_model() {
    let task = "make a marker";
    let reason = "no files here thanks";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "touch marker.txt"}}]}}),
        // Only a result carrying the reason answers.
        json!({"match": {"toolResultContains": reason, "turnIndex": 1}, "response": {
            "content": "Understood, no marker."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(task);
    pty.wait_on_screen("[y] approve once");
    let asked = pty.contents();
    assert!(asked.contains("$ touch marker.txt"), "{asked}");
    assert!(asked.contains("[a] approve this exact command for the rest of the session"), "{asked}");
    pty.keys(b"n");
    pty.wait_on_screen("enter denies with this reason");
    pty.keys(reason.as_bytes());
    pty.wait_on_screen(&format!("reason: {reason}"));
    pty.keys(b"\r");
    pty.wait_shown("Understood, no marker.");
    assert!(pty.shown().iter().any(|r| r.contains(&format!("denied: {reason}"))), "{:#?}", pty.shown());
    assert!(!sandbox.ws().join("marker.txt").exists(), "the denied command ran");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = messages(&requests[1]);
    assert!(
        second.iter().any(|m| m["role"] == "tool" && text_of(m).contains(reason)),
        "the reason is in the tool result: {second:#?}"
    );
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn esc_mid_stream_cancels_and_the_conversation_continues() {
    let slow = "tell a long story";
    let next = "now something short";
    let story: String = (1..=60).map(|i| format!("word{i} ")).collect();
    let Some(mock) = Aimock::start(&fixtures(vec![
        // Two characters every 100 ms: about 20 s for the whole story.
        json!({"match": {"userMessage": slow, "turnIndex": 0}, "chunkSize": 2, "latency": 100,
            "response": {"content": story}}),
        // After the cancelled turn, whatever it kept.
        json!({"match": {"userMessage": next}, "response": {"content": "Short answer."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(slow);
    // Streaming: the first words are on the screen, the last not yet.
    pty.wait_on_screen("word2 ");
    pty.keys(b"\x1b");
    pty.wait_shown("cancelled before anything was done: the turn left no trace");
    assert!(
        !pty.shown().iter().any(|r| r.contains("word60")),
        "the whole story streamed: {:#?}",
        pty.shown()
    );
    wait_ready(&mut pty);
    pty.type_line(next);
    pty.wait_shown("Short answer.");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = messages(&requests[1]);
    // Cancelled before anything committed, the turn rolled back to where
    // it started (invariants 12 and 13): no trace of it, no partial answer.
    assert!(position(&second, "user", slow).is_none(), "{second:#?}");
    assert!(!second.iter().any(|m| m["role"] == "assistant"), "{second:#?}");
    assert_eq!(position(&second, "user", next), Some(second.len() - 1), "{second:#?}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

#[test]
fn resume_picks_a_previous_session() {
    let first = "remember the codeword pelican";
    let later = "what was the codeword";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": first, "turnIndex": 0}, "response": {"content": "Noted: pelican."}}),
        // Only a request that carries the earlier turn (one assistant
        // message before) answers.
        json!({"match": {"userMessage": later, "turnIndex": 1}, "response": {"content": "It was pelican."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg(first);
    let out = run(exec);
    out.expect_code(0);
    let earlier = session_from_stderr(&out.stderr);

    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line("/resume");
    pty.wait_on_screen("resume a session");
    let picker = pty.contents();
    let short = &earlier[earlier.len() - 8..];
    assert!(picker.contains(&format!("› {short}  {first} · openai/gpt-test · 2 messages")), "{picker}");
    pty.keys(b"\r");
    pty.wait_shown(&format!("resumed session {earlier} (2 messages)"));
    let asked_row = format!("› {first}");
    pty.wait_until("the resumed prompt shown as a row", |e| e.shown().contains(&asked_row));
    wait_ready(&mut pty);
    pty.type_line(later);
    pty.wait_shown("It was pelican.");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let sent = messages(&requests[1]);
    let asked = position(&sent, "user", first).unwrap_or_else(|| panic!("{sent:#?}"));
    let answered = position(&sent, "assistant", "Noted: pelican.").unwrap_or_else(|| panic!("{sent:#?}"));
    assert!(asked < answered && answered < sent.len() - 1, "{sent:#?}");
    assert_eq!(position(&sent, "user", later), Some(sent.len() - 1), "{sent:#?}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert_eq!(session_of(&exit), earlier, "the conversation went on in the resumed session");

    // `bosun resume ID` with no prompt, in a terminal: the same
    // conversation, interactive, its messages shown; Ctrl+D leaves.
    let mut cmd = sandbox.bosun();
    cmd.env(Api::OpenAiChat.key_var(), "test").args(["resume", &earlier]).args(Api::OpenAiChat.args(&mock));
    let mut pty = Pty::spawn(cmd, ROWS, COLS);
    pty.wait_shown(&format!("resumed session {earlier} (4 messages)"));
    wait_ready(&mut pty);
    for row in [
        format!("› {first}"),
        "Noted: pelican.".to_owned(),
        format!("› {later}"),
        "It was pelican.".to_owned(),
    ] {
        pty.wait_until(&format!("{row:?} shown as a row"), |e| e.shown().contains(&row));
    }
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert_eq!(session_of(&exit), earlier);
    assert_eq!(mock.journal().len(), requests.len(), "resuming asked the model nothing");
}

#[test]
fn slash_quit_exits_0_and_clears_the_viewport() {
    let Some(mock) = Aimock::start(&fixtures(vec![])) else { return };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    let before = pty.termios();
    wait_ready(&mut pty);
    pty.type_line("/quit");
    let exit = pty.finish();
    let text = String::from_utf8_lossy(&exit.raw);
    assert_eq!(exit.status.code(), Some(0), "{}\n{}", exit.contents, text.lines().last().unwrap_or_default());
    assert!(!text.contains("the terminal failed"), "{}", exit.contents);
    session_of(&exit);
    // The viewport is gone: no input box left under the conversation.
    assert!(!exit.contents.contains("message · @path attaches · /help"), "{}", exit.contents);
    assert_eq!(exit.termios.local_modes, before.local_modes);
    assert!(!exit.bracketed_paste && !exit.cursor_hidden);
}

#[test]
fn a_resized_terminal_keeps_the_conversation_going() {
    let task = "answer after the resize";
    let Some(mock) = Aimock::start(&fixtures(vec![json!({
        "match": {"userMessage": task, "turnIndex": 0}, "response": {"content": "Answered at 80 columns."}})]))
    else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    // Shorter (a smaller viewport) and narrower: the rule over the input
    // is redrawn 80 wide.
    // Each height change makes a new inline viewport; a few, to catch a
    // redraw that hangs or fails (it asks the terminal for the cursor).
    for (rows, cols) in [(12, 80), (30, 100), (12, 80), (30, 100), (12, 80)] {
        pty.resize(rows, cols);
        let rule = "─".repeat(usize::from(cols));
        pty.wait_until(&format!("the input's rule redrawn {cols} wide"), |e| {
            e.contents().lines().any(|l| l == rule)
                && e.contents().contains("message · @path attaches · /help")
        });
    }
    pty.type_line(task);
    pty.wait_shown("Answered at 80 columns.");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert!(!String::from_utf8_lossy(&exit.raw).contains("the terminal failed"), "{}", exit.contents);
    session_of(&exit);
}

#[test]
fn slash_model_goes_on_in_the_same_session_on_another_model_keeping_the_mode() {
    let (first, later) = ("name a colour", "and another one");
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": first, "turnIndex": 0}, "response": {"content": "Teal."}}),
        json!({"match": {"userMessage": later, "turnIndex": 1}, "response": {"content": "Ochre."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &[]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(first);
    pty.wait_shown("Teal.");
    wait_ready(&mut pty);
    pty.type_line("/mode write");
    pty.wait_shown("mode: write");
    // The session is this process's (its lease): going on in it on another
    // model lets go of it first.
    pty.type_line("/model openai/gpt-other");
    pty.wait_shown("model: openai/gpt-other");
    pty.wait_on_screen("openai/gpt-other · write");
    pty.type_line(later);
    pty.wait_shown("Ochre.");
    let requests = requests(&mock);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[1]["body"]["model"], "gpt-other", "{:#?}", requests[1]);
    let sent = messages(&requests[1]);
    assert!(position(&sent, "assistant", "Teal.").is_some(), "the earlier turn went along: {sent:#?}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let id = session_of(&exit);
    let shown = run({
        let mut cmd = sandbox.bosun();
        cmd.args(["sessions", "list"]);
        cmd
    });
    assert_eq!(shown.stdout.matches(&id[..8]).count(), 1, "one session: {}", shown.stdout);
}

/// The status line in a screen's `contents`: the row holding the token count.
fn status_line(contents: &str) -> String {
    contents.lines().rev().find(|l| l.contains(" tok")).unwrap_or_default().trim().to_owned()
}

/// Waits until the status line reads `model · mode · …` and ends with the
/// short id (the last 8 characters) `short` (any id when empty).
fn wait_status(pty: &mut Pty, model: &str, mode: &str, short: &str) {
    let head = format!("{model} · {mode} · ");
    pty.wait_until(&format!("the status line {head}… {short}"), |e| {
        let line = status_line(&e.contents());
        line.starts_with(&head) && line.ends_with(short)
    });
}

/// The status line says what the session is, whatever was typed last: a
/// failing `/model` leaves the session on its model and mode (and the line
/// says so, and a command then runs as that mode decides), `/new` keeps
/// the mode, and `/resume` (by a prefix of the id) shows the resumed
/// session's own model and id.
#[test]
fn the_status_line_shows_the_sessions_mode_and_model_after_mode_a_failing_model_new_and_resume() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "earlier task"}, "response": {"content": "Earlier done."}}),
        json!({"match": {"userMessage": "make the file", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "touch made.txt"}}]}}),
        json!({"match": {"userMessage": "make the file", "turnIndex": 1}, "response": {"content": "Made."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let url = format!("{}/v1", mock.url());
    let mut exec = sandbox.bosun();
    exec.env("OPENAI_API_KEY", "test").args(["exec", "--model", "openai/gpt-earlier", "--base-url", &url]);
    let out = run({
        exec.arg("earlier task");
        exec
    });
    out.expect_code(0);
    let earlier = session_from_stderr(&out.stderr);

    // The configured model comes from the environment, not a flag: a
    // resumed session runs on its own.
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").env("BOSUN_MODEL", "openai/gpt-test").env("BOSUN_BASE_URL", &url);
    let mut pty = Pty::spawn(cmd, ROWS, COLS);
    wait_ready(&mut pty);
    wait_status(&mut pty, "openai/gpt-test", "propose", "");
    pty.type_line("/mode autonomous");
    pty.wait_shown("mode: autonomous");
    wait_status(&mut pty, "openai/gpt-test", "autonomous", "");

    pty.type_line("/model nope/broken");
    pty.wait_shown("unknown provider `nope`");
    // The UI takes messages in order: once the answer to a later command
    // is on the screen, the line shows whatever the failed one left.
    pty.type_line("/diff");
    pty.wait_shown("this session changed no file yet");
    let line = status_line(&pty.contents());
    assert!(line.starts_with("openai/gpt-test · autonomous · "), "{line:?}\n{}", pty.contents());
    // The session is autonomous indeed: the model's command runs unasked.
    pty.type_line("make the file");
    pty.wait_shown("Made.");
    // The answer shows before the turn ends; a command typed meanwhile is
    // refused as the turn's. The idle placeholder says it is over.
    pty.wait_until("the turn to end", |e| !e.contents().contains("esc cancels"));
    assert!(sandbox.ws().join("made.txt").exists(), "{}", pty.contents());
    // `@` offers the file the turn made; backspaces take the word away.
    pty.keys(b"@made");
    pty.wait_on_screen("@made.txt");
    pty.keys(b"\x7f\x7f\x7f\x7f\x7f");
    pty.wait_on_screen("message · @path attaches · /help");
    let first = status_line(&pty.contents());
    let first_short = first.rsplit(" · ").next().unwrap().to_owned();

    pty.type_line("/new");
    pty.wait_shown("new session");
    pty.wait_until("a new id on the status line", |e| !status_line(&e.contents()).ends_with(&first_short));
    wait_status(&mut pty, "openai/gpt-test", "autonomous", "");

    pty.type_line(&format!("/resume {}", &earlier[..12]));
    pty.wait_shown(&format!("resumed session {earlier}"));
    wait_status(&mut pty, "openai/gpt-earlier", "autonomous", &earlier[earlier.len() - 8..]);
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert_eq!(session_of(&exit), earlier);
}

/// `bosun ARGS` on a terminal with the key set and no model named: a
/// stored session runs on its own.
fn bosun_plain(sandbox: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = sandbox.bosun();
    cmd.env(Api::OpenAiChat.key_var(), "test").args(args);
    cmd
}

/// Two finished sessions of the sandbox's workspace, "first task" and
/// "second task" (newest), their ids in that order.
fn two_sessions(sandbox: &Sandbox, mock: &Aimock) -> [String; 2] {
    ["first task", "second task"].map(|task| {
        let mut exec = sandbox.exec(Api::OpenAiChat, mock);
        exec.arg(task);
        let out = run(exec);
        out.expect_code(0);
        session_from_stderr(&out.stderr)
    })
}

fn short(id: &str) -> &str {
    &id[id.len() - 8..]
}

#[test]
fn resume_with_no_id_on_a_terminal_picks_from_the_workspaces_recent_sessions() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "first task"}, "response": {"content": "Answer one."}}),
        json!({"match": {"userMessage": "second task"}, "response": {"content": "Answer two."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let [first, second] = two_sessions(&sandbox, &mock);

    let mut pty = Pty::spawn(bosun_plain(&sandbox, &["resume"]), ROWS, COLS);
    pty.wait_on_screen("esc cancel");
    // Newest first, chosen; each with its short id, title, model, size, age.
    let shown = pty.contents();
    let row =
        |id: &str, task: &str| format!("{}  {task} · openai/gpt-test · 2 messages · just now", short(id));
    assert!(shown.contains("resume a session"), "{shown}");
    assert!(shown.contains(&format!("› {}", row(&second, "second task"))), "{shown}");
    assert!(shown.contains(&format!("  {}", row(&first, "first task"))), "{shown}");
    assert!(shown.contains("↑/↓ choose · enter open · esc cancel"), "{shown}");
    pty.keys(b"\x1b[B");
    pty.wait_on_screen(&format!("› {}", short(&first)));
    pty.keys(b"\r");
    pty.wait_shown(&format!("resumed session {first} (2 messages)"));
    wait_ready(&mut pty);
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert_eq!(session_of(&exit), first, "the chosen session was resumed");
    assert_eq!(mock.journal().len(), 2, "choosing asked the model nothing");
}

#[test]
fn esc_in_the_session_picker_cancels_with_exit_130_and_enter_compacts_the_chosen_one() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "first task"}, "response": {"content": "Answer one."}}),
        json!({"match": {"userMessage": "second task"}, "response": {"content": "Answer two."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let [first, _] = two_sessions(&sandbox, &mock);
    for (command, heading) in [("compact", "compact a session"), ("resume", "resume a session")] {
        let mut pty = Pty::spawn(bosun_plain(&sandbox, &[command]), ROWS, COLS);
        pty.wait_on_screen("esc cancel");
        assert!(pty.contents().contains(heading), "{}", pty.contents());
        pty.keys(b"\x1b");
        let exit = pty.finish();
        assert_eq!(exit.status.code(), Some(130), "{command}: {}", exit.contents);
        assert!(
            exit.contents.contains("no session chosen; nothing was done"),
            "{command}: {}",
            exit.contents
        );
        assert!(!exit.contents.contains(heading), "{command}: the picker was cleared: {}", exit.contents);
        assert!(
            exit.termios.local_modes.contains(LocalModes::ICANON),
            "{command}: the terminal was restored"
        );
    }
    // Enter compacts the chosen session (one turn: nothing to compact).
    let mut pty = Pty::spawn(bosun_plain(&sandbox, &["compact"]), ROWS, COLS);
    pty.wait_on_screen("esc cancel");
    pty.keys(b"\x1b[B\r");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert!(exit.contents.contains(&format!("nothing to compact: session {first}")), "{}", exit.contents);
    assert_eq!(mock.journal().len(), 2, "no request was sent");
}

/// With stdout piped (`bosun compact > log`), the picker still shows on
/// the terminal (stdin and stderr), at the bottom of the screen, and
/// nothing of it reaches stdout.
#[test]
fn the_session_picker_works_with_stdout_piped() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "first task"}, "response": {"content": "Answer one."}}),
        json!({"match": {"userMessage": "second task"}, "response": {"content": "Answer two."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let [_, second] = two_sessions(&sandbox, &mock);
    let mut running = Running::spawn_in_terminal_sized(bosun_plain(&sandbox, &["compact"]), ROWS, COLS);
    running.wait_for("the picker", |r| r.stderr().contains("esc cancel"));
    assert!(running.stderr().contains(&format!("{}  second task", short(&second))), "{}", running.stderr());
    running.keys(b"\r");
    let out = running.finish();
    out.expect_code(0);
    assert!(out.stderr.contains(&format!("nothing to compact: session {second}")), "{}", out.stderr);
    // No cursor query either: the terminal would never answer one on stdout.
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", out.stdout);
}

#[test]
fn slash_rewind_restores_files_and_conversation_and_esc_esc_edits_the_previous_message() {
    let call = |turn: u64, word: &str, tool: &str, arguments: Value| {
        json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {
            "toolCalls": [{"name": tool, "arguments": arguments}]}})
    };
    let answer = |turn: u64, word: &str, text: &str| json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {"content": text}});
    let Some(mock) = Aimock::start(&fixtures(vec![
        // The edited message, sent with nothing before it (first: it holds
        // the original's words).
        answer(0, "write one, but shorter", "Edited answer."),
        call(0, "write one", "write_file", json!({"path": "notes.txt", "content": "first\n"})),
        answer(1, "write one", "Wrote one."),
        call(
            2,
            "write two",
            "edit_file",
            json!({"path": "notes.txt", "old_text": "first", "new_text": "second"}),
        ),
        answer(3, "write two", "Wrote two."),
    ])) else {
        return;
    };
    let sandbox = Sandbox::new();
    let notes = sandbox.ws().join("notes.txt");
    let mut pty = Pty::spawn(bosun(&sandbox, &mock, &["--mode", "write"]), ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line("write one");
    pty.wait_shown("Wrote one.");
    wait_ready(&mut pty);
    pty.type_line("write two");
    pty.wait_shown("Wrote two.");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second\n");
    wait_ready(&mut pty);

    // `/rewind`: pick the turn (the newest first), then what to restore.
    pty.type_line("/rewind");
    pty.wait_on_screen("rewind to the start of");
    assert!(pty.contents().contains("turn 2 · write two"), "{}", pty.contents());
    pty.keys(b"\r");
    pty.wait_on_screen("the files and the conversation");
    pty.keys(b"\r");
    pty.wait_shown("restored notes.txt");
    pty.wait_shown("conversation: goes on from before turn 2");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first\n");
    wait_ready(&mut pty);

    // Esc Esc on the empty editor: turn 1's message, to edit.
    pty.keys(b"\x1b");
    pty.wait_on_screen("esc again edits your previous message");
    pty.keys(b"\x1b");
    pty.wait_shown("editing your message of turn 1");
    pty.wait_on_screen("› write one");
    pty.type_line(", but shorter");
    pty.wait_shown("Edited answer.");
    pty.wait_shown("going on from before turn 1 as a new branch");
    let sent = requests(&mock).pop().unwrap();
    let users: Vec<String> = messages(&sent).iter().filter(|m| m["role"] == "user").map(text_of).collect();
    assert_eq!(users, ["write one, but shorter"], "{sent:#}");
    // The files were left as they were.
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first\n");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let id = session_of(&exit);

    // Every branch kept: the first (both turns), the rewind's, the edit's.
    let mut show = sandbox.bosun();
    show.args(["sessions", "show", &id, "--json"]);
    let out = run(show);
    let detail: Value = serde_json::from_str(&out.stdout).unwrap();
    let counts: Vec<i64> =
        detail["branches"].as_array().unwrap().iter().map(|b| b["message_count"].as_i64().unwrap()).collect();
    assert_eq!(counts, [8, 4, 2], "{detail:#}");
}
