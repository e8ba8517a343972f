//! Reasoning effort with the real binary against aimock: `--effort` in
//! each provider's request form, recorded with the session so a resume runs
//! at it again; `/model`'s picker (model, then effort) and `/effort` in the
//! conversation reaching the next request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support;

use support::*;

/// The requests that asked for a completion, in order.
fn completions(mock: &Aimock) -> Vec<Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

fn answers(words: &[&str]) -> Value {
    fixtures(
        words
            .iter()
            .map(|word| json!({"match": {"userMessage": word}, "response": {"content": format!("Done {word}.")}}))
            .collect(),
    )
}

#[test]
fn effort_reaches_each_providers_request_and_a_resume_keeps_it() {
    let Some(mock) = Aimock::start(&answers(&["first task", "second task", "third task"])) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--effort", "medium", "first task"]);
    let out = run(cmd);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    let mut cmd = sandbox.exec(Api::Anthropic, &mock);
    cmd.args(["--effort", "low", "second task"]);
    run(cmd).expect_code(0);
    // Resumed with no --effort: the session's own.
    let api = Api::OpenAiChat;
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").args(["resume"]).args(api.args(&mock)).args([&id, "third task"]);
    run(cmd).expect_code(0);

    let sent = completions(&mock);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert_eq!(sent[0]["body"]["reasoning_effort"], "medium", "{}", sent[0]["body"]);
    // aimock's journal keeps an Anthropic request in its chat form, without
    // `thinking`; its `max_tokens` is the thinking budget (low: 4096) plus
    // the answer's own 8192 (without thinking it is 8192 alone).
    assert_eq!(sent[1]["body"]["model"], "claude-test");
    assert_eq!(sent[1]["body"]["max_tokens"], 4096 + 8192, "{}", sent[1]["body"]);
    assert_eq!(sent[2]["body"]["reasoning_effort"], "medium", "the resume ran at the recorded effort");
}

#[test]
fn the_model_picker_and_effort_command_reach_the_next_request() {
    let Some(mock) = Aimock::start(&answers(&["picked task", "lower task"])) else { return };
    let sandbox = task_sandbox();
    // A model of the user's own, sorted first among those with a key.
    let dir = sandbox.path("xdg/bosun");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "[models.\"openai/a-picked\"]\ncontext_window = 64000\n")
        .unwrap();
    let mut pty = sandbox.converse(&mock, &[], 120);
    pty.type_line("/model");
    pty.wait_shown("Model (now openai/gpt-test)");
    assert!(!pty.contents().contains("anthropic/"), "no key, no Anthropic models: {}", pty.contents());
    pty.keys(b"\x1b[B\r"); // Down to openai/a-picked.
    pty.wait_shown("Reasoning effort");
    pty.keys(b"\x1b[B\x1b[B\x1b[B\r"); // Down to high.
    pty.wait_on_screen("openai/a-picked (high) · ");
    pty.type_line("picked task");
    pty.wait_shown("Done picked task.");
    pty.wait_on_screen("message · @path attaches");
    pty.type_line("/effort low");
    pty.wait_on_screen("openai/a-picked (low) · ");
    pty.type_line("lower task");
    pty.wait_shown("Done lower task.");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);

    let sent = completions(&mock);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[0]["body"]["model"], "a-picked");
    assert_eq!(sent[0]["body"]["reasoning_effort"], "high");
    assert_eq!(sent[1]["body"]["reasoning_effort"], "low");
}
