//! Stored sessions as a person comes back to them, with the real `bosun`
//! against aimock and a real SQLite store: a session resumes on the model
//! and base URL it ran with (`--model` names another), `sessions show`
//! prints them, and every command that takes a session id accepts a unique
//! prefix of at least 8 characters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

/// The chat requests aimock received, oldest first.
fn requests(mock: &Aimock) -> Vec<serde_json::Value> {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect()
}

#[test]
fn resume_runs_on_the_sessions_own_model_and_base_url_unless_another_is_named() {
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "fix the typo", "turnIndex": 0}, "response": {"content": "Done."}}),
        json!({"match": {"userMessage": "now add a test", "turnIndex": 1}, "response": {"content": "Added."}}),
        json!({"match": {"userMessage": "and one more", "turnIndex": 2}, "response": {"content": "More."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg("fix the typo");
    let out = run(exec);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);

    // The README's line: no --model, no --base-url, only the key.
    let mut resume = sandbox.bosun();
    resume.env("OPENAI_API_KEY", "test").args(["resume", "--last", "now add a test"]);
    let out = run(resume);
    out.expect_code(0);
    assert!(out.stdout.contains("Added."), "{}\n{}", out.stdout, out.stderr);
    let sent = requests(&mock);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[1]["body"]["model"], "gpt-test", "{:#?}", sent[1]);

    let mut show = sandbox.bosun();
    show.args(["sessions", "show", &id]);
    let out = run(show);
    out.expect_code(0);
    let url = format!("{}/v1", mock.url());
    assert!(out.stdout.contains(&format!("model: openai/gpt-test\nbase URL: {url}\n")), "{}", out.stdout);

    // A model named for the command wins, and is recorded from then on.
    let mut resume = sandbox.bosun();
    resume.env("OPENAI_API_KEY", "test").args(["resume", &id, "and one more"]);
    resume.args(["--model", "openai/gpt-other", "--base-url", &url]);
    let out = run(resume);
    out.expect_code(0);
    let sent = requests(&mock);
    assert_eq!(sent[2]["body"]["model"], "gpt-other", "{:#?}", sent[2]);
    let mut show = sandbox.bosun();
    show.args(["sessions", "show", &id, "--json"]);
    let out = run(show);
    let detail: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(detail["summary"]["model"], "openai/gpt-other");
    assert_eq!(detail["summary"]["base_url"], url.as_str());
}

/// Runs `bosun ARGS` in the sandbox with the OpenAI key set.
fn bosun(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").args(args);
    run(cmd)
}

#[test]
fn every_command_that_takes_a_session_id_accepts_a_unique_prefix_of_8_characters() {
    let answers: Vec<_> = (0..4)
        .map(|n| json!({"match": {"userMessage": format!("task {n}")}, "response": {"content": "Done."}}))
        .collect();
    let Some(mock) = Aimock::start(&fixtures(answers)) else { return };
    let sandbox = task_sandbox();
    let mut ids: Vec<String> = Vec::new();
    // Sessions started within the same ~65 s share their first 8
    // characters (UUIDv7's time): two such make an ambiguous prefix.
    for n in 0..3 {
        let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
        exec.arg(format!("task {n}"));
        let out = run(exec);
        out.expect_code(0);
        ids.push(session_from_stderr(&out.stderr));
        if n > 0 && ids[n][..8] == ids[n - 1][..8] {
            break;
        }
    }
    let (one, two) = (&ids[ids.len() - 2], &ids[ids.len() - 1]);
    assert_eq!(one[..8], two[..8], "two sessions in a row share their first 8 characters");
    let common = one.chars().zip(two.chars()).take_while(|(a, b)| a == b).count();
    let unique = &two[..common + 1];
    let ambiguous = &two[..8];

    let out = bosun(&sandbox, &["sessions", "show", unique]);
    out.expect_code(0);
    assert!(out.stdout.starts_with(&format!("session {two} ")), "{}", out.stdout);
    let out = bosun(&sandbox, &["sessions", "export", unique]);
    out.expect_code(0);
    assert!(out.stdout.contains(two.as_str()), "{}", out.stdout);

    let out = bosun(&sandbox, &["sessions", "show", ambiguous]);
    out.expect_code(2);
    assert!(out.stderr.contains("ambiguous"), "{}", out.stderr);
    assert!(out.stderr.contains(one.as_str()) && out.stderr.contains(two.as_str()), "{}", out.stderr);
    let out = bosun(&sandbox, &["resume", &two[..7], "task 3"]);
    out.expect_code(2);
    assert!(out.stderr.contains("at least 8 characters"), "{}", out.stderr);

    let out = bosun(&sandbox, &["resume", unique, "task 3"]);
    out.expect_code(0);
    assert!(out.stderr.contains(&format!("resumed session {two}")), "{}", out.stderr);
    let out = bosun(&sandbox, &["fork", unique]);
    out.expect_code(0);
    assert!(out.stderr.contains(&format!("forked session {two}")), "{}", out.stderr);
    let out = bosun(&sandbox, &["compact", unique]);
    assert!(out.stderr.contains(two.as_str()), "{}", out.stderr);
    let out = bosun(&sandbox, &["sessions", "rm", unique]);
    out.expect_code(0);
    assert!(out.stderr.contains(&format!("deleted session {two}")), "{}", out.stderr);
    let out = bosun(&sandbox, &["sessions", "show", ambiguous]);
    out.expect_code(0);
    assert!(out.stdout.starts_with(&format!("session {one} ")), "only one is left: {}", out.stdout);
}

/// A first turn that failed before anything was done leaves its prompt
/// unanswered: `resume --last "new words"` sends it again before the new
/// words, and says so, instead of dropping it (invariant 21).
#[test]
fn invariant_21_resume_with_new_words_sends_the_unanswered_prompt_too_and_says_so() {
    // The first fixture that matches answers: both words are in the resumed request.
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "now in order"}, "response": {"content": "Both done."}}),
        json!({"match": {"userMessage": "doomed"}, "response": {
            "error": {"message": "bad request", "type": "invalid_request_error"}, "status": 400}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg("rename the doomed file");
    run(exec).expect_code(1);

    let out = bosun(&sandbox, &["resume", "--last", "now in order"]);
    out.expect_code(0);
    assert!(out.stdout.contains("Both done."), "{}\n{}", out.stdout, out.stderr);
    let told = "the last turn's prompt never reached an answer; it is sent again before yours: rename the doomed file";
    assert!(out.stderr.contains(told), "{}", out.stderr);
    let sent = requests(&mock);
    let last = sent.last().unwrap();
    let user: Vec<&serde_json::Value> =
        last["body"]["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(user.len(), 1, "one user message carrying both: {last:#}");
    let text = user[0]["content"].to_string();
    let (old, new) = (text.find("rename the doomed file"), text.find("now in order"));
    assert!(matches!((old, new), (Some(o), Some(n)) if o < n), "the old prompt first: {text}");
}
