//! Rewind and branches as a person uses them, with the real `bosun` against
//! aimock and a real SQLite store: three turns change files with
//! `edit_file`, `apply_patch` and the shell, a person edits one of them in
//! between, and `bosun rewind` takes the files, the conversation, or both
//! back to the start of a turn, reporting the file changed outside instead
//! of overwriting it; a fork keeps both branches, and `resume --branch`
//! continues either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support;

use support::*;

/// The chat requests aimock received, oldest first.
fn requests(mock: &Aimock) -> Vec<Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

/// The user messages' texts of a request.
fn user_texts(request: &Value) -> Vec<String> {
    request["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Runs `bosun ARGS` in the sandbox with the OpenAI key set.
fn bosun(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").args(args);
    run(cmd)
}

fn file(sandbox: &Sandbox, name: &str) -> Option<String> {
    std::fs::read_to_string(sandbox.ws().join(name)).ok()
}

/// `sessions show ID --json`.
fn detail(sandbox: &Sandbox, id: &str) -> Value {
    let out = bosun(sandbox, &["sessions", "show", id, "--json"]);
    out.expect_code(0);
    serde_json::from_str(&out.stdout).unwrap()
}

/// The texts of the head branch's user messages.
fn prompts(sandbox: &Sandbox, id: &str) -> Vec<String> {
    detail(sandbox, id)["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|pair| pair[1]["role"] == "user")
        .map(|pair| pair[1]["content"][0]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const PATCH: &str =
    "*** Begin Patch\n*** Update File: b.txt\n@@\n-beta\n+BETA\n*** Add File: d.txt\n+added\n*** End Patch";

#[test]
fn rewind_restores_the_files_of_edit_patch_and_shell_and_reports_a_file_changed_outside() {
    let call = |turn: u64, word: &str, tool: &str, arguments: Value| {
        json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {
            "toolCalls": [{"name": tool, "arguments": arguments}]}})
    };
    let answer = |turn: u64, word: &str, text: &str| json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {"content": text}});
    let Some(mock) = Aimock::start(&fixtures(vec![
        call(0, "turn one", "edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"})),
        answer(1, "turn one", "One done."),
        call(2, "turn two", "apply_patch", json!({"patch": PATCH})),
        answer(3, "turn two", "Two done."),
        call(4, "turn three", "shell", json!({"command": "echo GAMMA > c.txt; rm b.txt; echo made > e.txt"})),
        answer(5, "turn three", "Three done."),
        // After the conversation went back to before turn 2: turn 1's call
        // and answer in it.
        answer(2, "once more", "Again."),
    ])) else {
        return;
    };
    let sandbox = Sandbox::new();
    for (name, text) in [("a.txt", "alpha\n"), ("b.txt", "beta\n"), ("c.txt", "gamma\n")] {
        std::fs::write(sandbox.ws().join(name), text).unwrap();
    }
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.args(["--dangerously-approve-all", "turn one"]);
    let out = run(exec);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    bosun(&sandbox, &["resume", &id, "--dangerously-approve-all", "turn two"]).expect_code(0);
    assert_eq!(
        (file(&sandbox, "b.txt").as_deref(), file(&sandbox, "d.txt").as_deref()),
        (Some("BETA\n"), Some("added\n"))
    );
    // A person edits a file bosun changed, between turns.
    std::fs::write(sandbox.ws().join("a.txt"), "ALPHA\nmine\n").unwrap();
    bosun(&sandbox, &["resume", &id, "--dangerously-approve-all", "turn three"]).expect_code(0);
    assert_eq!(file(&sandbox, "c.txt").as_deref(), Some("GAMMA\n"));
    assert_eq!((file(&sandbox, "b.txt"), file(&sandbox, "e.txt").as_deref()), (None, Some("made\n")));

    // `sessions show` numbers the turns `rewind --to` takes.
    let shown = bosun(&sandbox, &["sessions", "show", &id]);
    for turn in ["── turn 1", "── turn 2", "── turn 3"] {
        assert!(shown.stdout.contains(turn), "{}", shown.stdout);
    }
    // A turn the session does not have: a clear error, nothing done.
    let out = bosun(&sandbox, &["rewind", &id, "--to", "9"]);
    out.expect_code(2);
    assert!(out.stderr.contains("has no turn 9: its turns are 1 to 3"), "{}", out.stderr);

    // The files only, back to the start of turn 2: the patch's and the
    // shell's changes undone; a.txt (turn 1) as it is; the conversation too.
    let out = bosun(&sandbox, &["rewind", &id, "--to", "2", "--files"]);
    out.expect_code(0);
    for line in [
        "restored b.txt",
        "restored c.txt",
        "deleted d.txt",
        "deleted e.txt",
        "conversation: goes on as it is",
    ] {
        assert!(out.stdout.contains(line), "no {line:?} in {}", out.stdout);
    }
    assert!(!out.stdout.contains("a.txt"), "{}", out.stdout);
    assert_eq!(file(&sandbox, "b.txt").as_deref(), Some("beta\n"));
    assert_eq!(file(&sandbox, "c.txt").as_deref(), Some("gamma\n"));
    assert_eq!((file(&sandbox, "d.txt"), file(&sandbox, "e.txt")), (None, None));
    assert_eq!(file(&sandbox, "a.txt").as_deref(), Some("ALPHA\nmine\n"));
    assert_eq!(prompts(&sandbox, &id), ["turn one", "turn two", "turn three"]);

    // Back to the start of turn 1: a.txt was changed outside since bosun
    // left it, so it is reported and kept; exit 1 says so.
    let out = bosun(&sandbox, &["rewind", &id, "--to", "1", "--files"]);
    out.expect_code(1);
    assert!(out.stdout.contains("skipped a.txt: changed since bosun left it"), "{}", out.stdout);
    assert_eq!(file(&sandbox, "a.txt").as_deref(), Some("ALPHA\nmine\n"));
    let out = bosun(&sandbox, &["rewind", &id, "--to", "1", "--files", "--force"]);
    out.expect_code(0);
    assert!(out.stdout.contains("restored a.txt"), "{}", out.stdout);
    assert_eq!(file(&sandbox, "a.txt").as_deref(), Some("alpha\n"));

    // The conversation only, back to before turn 2: a new branch, the
    // files as they are, and the next turn sees only turn 1.
    std::fs::write(sandbox.ws().join("a.txt"), "kept\n").unwrap();
    let out = bosun(&sandbox, &["rewind", &id, "--to", "2", "--conversation"]);
    out.expect_code(0);
    assert!(out.stdout.contains("files: left as they are"), "{}", out.stdout);
    assert!(out.stdout.contains("the branch it left stays"), "{}", out.stdout);
    assert_eq!(file(&sandbox, "a.txt").as_deref(), Some("kept\n"));
    assert_eq!(prompts(&sandbox, &id), ["turn one"]);
    assert_eq!(detail(&sandbox, &id)["branches"].as_array().unwrap().len(), 2);
    let out = bosun(&sandbox, &["resume", &id, "once more"]);
    out.expect_code(0);
    let last = requests(&mock).pop().unwrap();
    assert_eq!(user_texts(&last), ["turn one", "once more"], "{last:#}");
}

#[test]
fn a_fork_keeps_both_branches_and_resume_branch_continues_either() {
    let answer = |turn: u64, word: &str, text: &str| json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {"content": text}});
    let Some(mock) = Aimock::start(&fixtures(vec![
        answer(0, "first", "First."),
        answer(1, "second", "Second."),
        answer(1, "on the fork", "Forked."),
        answer(2, "on the old branch", "Old."),
    ])) else {
        return;
    };
    let sandbox = Sandbox::new();
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg("first");
    let out = run(exec);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    bosun(&sandbox, &["resume", &id, "second"]).expect_code(0);
    let first_answer = detail(&sandbox, &id)["history"][1][0].as_i64().unwrap();

    let out = bosun(&sandbox, &["fork", &id, "--at", &first_answer.to_string()]);
    out.expect_code(0);
    // It says how to go back.
    let old_branch = out.stderr.split("--branch ").nth(1).unwrap().split('`').next().unwrap().to_owned();
    assert!(old_branch.len() >= 8, "{}", out.stderr);
    let shown = bosun(&sandbox, &["sessions", "show", &id]);
    assert!(shown.stdout.contains(&format!("session {id}  (2 branches)")), "{}", shown.stdout);
    let listed: Vec<&str> = shown.stdout.lines().filter(|l| l.contains(" msgs  ")).collect();
    assert_eq!(listed.len(), 2, "{}", shown.stdout);
    assert!(listed[0].contains("   4 msgs") && listed[0].contains("the first"), "{listed:?}");
    assert!(
        listed[1].starts_with("* ") && listed[1].contains(&format!("forked at #{first_answer}")),
        "{listed:?}"
    );

    // The fork, as the head.
    bosun(&sandbox, &["resume", &id, "on the fork"]).expect_code(0);
    let sent = requests(&mock).pop().unwrap();
    assert_eq!(user_texts(&sent), ["first", "on the fork"]);
    // The old branch, by the part of its id the fork printed.
    bosun(&sandbox, &["resume", &id, "--branch", &old_branch, "on the old branch"]).expect_code(0);
    let sent = requests(&mock).pop().unwrap();
    assert_eq!(user_texts(&sent), ["first", "second", "on the old branch"]);
    assert_eq!(prompts(&sandbox, &id), ["first", "second", "on the old branch"]);
    // Nothing was lost on the fork either.
    let branches = detail(&sandbox, &id)["branches"].clone();
    let counts: Vec<i64> =
        branches.as_array().unwrap().iter().map(|b| b["message_count"].as_i64().unwrap()).collect();
    assert_eq!(counts, [6, 4]);
    // A part of an id no branch has, or too short, is refused.
    let out = bosun(&sandbox, &["resume", &id, "--branch", "0000000", "x"]);
    out.expect_code(2);
    assert!(out.stderr.contains("at least 8"), "{}", out.stderr);
    let out = bosun(&sandbox, &["compact", &id, "--branch", "ffffffffffff"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no branch of this session"), "{}", out.stderr);
}
