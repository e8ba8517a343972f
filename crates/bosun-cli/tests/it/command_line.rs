//! The command line as a shell user meets it, with the real binary:
//! `bosun "PROMPT"` starts the conversation with that message, as Claude
//! Code and Codex do (on a pseudo-terminal against aimock; without a
//! terminal bosun names the `exec` command that runs it), and listings piped
//! into a reader that stops early (`| head`) end quietly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

#[test]
fn bosun_with_a_prompt_starts_the_conversation_with_it() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "explain greet.sh"}, "response": {"content": "It greets the world."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let api = Api::OpenAiChat;
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").args(api.args(&mock)).arg("explain greet.sh");
    let mut pty = Pty::spawn(cmd, 30, 100);
    pty.wait_shown("It greets the world.");
    assert!(pty.shown().iter().any(|row| row == "› explain greet.sh"), "{:?}", pty.shown());
    pty.wait_on_screen("message · @path attaches · /help");
    // `/status` says what the conversation runs on; `/clear` starts over.
    pty.type_line("/status");
    pty.wait_shown("MCP servers: none");
    let shown = pty.shown();
    let id = shown.iter().find_map(|row| row.strip_prefix("session ")).unwrap_or_else(|| panic!("{shown:?}"));
    assert!(id.ends_with("(2 messages)"), "{shown:?}");
    let workspace = format!("workspace: {}", sandbox.ws().canonicalize().unwrap().display());
    for row in ["model: openai/gpt-test", "mode: propose", &workspace, "sandbox: workspace-write"] {
        assert!(shown.iter().any(|r| r == row), "{row:?} in {shown:#?}");
    }
    // Shift+Tab cycles the modes the line shows, never into autonomous.
    for mode in ["write", "plan", "read-only", "propose"] {
        pty.keys(b"\x1b[Z");
        pty.wait_until(&format!("the line at {mode}"), |e| {
            e.contents().lines().any(|l| l.starts_with(&format!("openai/gpt-test · {mode} · ")))
        });
    }
    pty.type_line("/clear");
    pty.wait_shown("new session");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    let sent: Vec<_> = mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect();
    assert_eq!(sent.len(), 1, "the first message was sent once: {sent:#?}");

    // No terminal: the command that runs the task instead, quoted for a shell.
    let mut cmd = sandbox.bosun();
    cmd.arg("it's done");
    let out = run(cmd);
    out.expect_code(2);
    assert!(out.stderr.contains(r"run this task with `bosun exec 'it'\''s done'`"), "{}", out.stderr);
}

/// `bosun completions bash | head` and `bosun sessions list | head`: a
/// reader gone before bosun writes is no panic and no error, exit 0.
#[test]
fn a_closed_stdout_ends_listings_quietly() {
    let sandbox = task_sandbox();
    for args in [&["completions", "bash"][..], &["sessions", "list", "--all"], &["config", "show"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // Every write now fails with EPIPE.
        let mut cmd = sandbox.bosun();
        cmd.args(args).stdout(writer).stderr(std::process::Stdio::piped());
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        for said in ["panicked", "Broken pipe", "bosun:"] {
            assert!(!stderr.contains(said), "{args:?} printed: {stderr}");
        }
    }
}
