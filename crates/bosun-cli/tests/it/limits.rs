//! Per-task limits and compaction through the real binary against aimock:
//! a task past its token budget ends after the round that spent it (the
//! checkpoint kept, the limit named, exit code 1); a provider's
//! context-overflow error makes the session compact, with a summary request
//! carrying the documented prompt, and retry the round once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support;

use support::*;

#[test]
fn a_task_past_its_token_limit_stops_between_rounds_with_exit_code_1() {
    let list = vec![
        json!({"match": {"userMessage": "limited", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"toolResultContains": "echo", "turnIndex": 1}, "response": {"content": "never"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "--max-tokens", "1", "a limited task"]);
    let out = run(cmd);
    out.expect_code(1);
    let events = json_events(&out.stdout);
    let error = of_type(&events, "error");
    assert_eq!(error.len(), 1, "{events:#?}");
    assert_eq!(error[0]["kind"], "limit");
    assert!(
        error[0]["message"].as_str().unwrap().starts_with("the turn reached its limit of 1 tokens"),
        "{}",
        error[0]
    );
    assert_eq!(of_type(&events, "tool_end").len(), 1, "the first round's call ran and was kept");
    assert_eq!(mock.journal().len(), 1, "no second request");
}

#[test]
fn a_provider_overflow_compacts_with_a_summary_and_the_retry_finishes() {
    let read = |path: &str| json!({"toolCalls": [{"name": "read_file", "arguments": {"path": path}}]});
    // First match wins, so the later a request, the earlier its fixture.
    let list = vec![
        // The summary request: its transcript names the results.
        json!({"match": {"userMessage": "RESULT of read_file"}, "response": {"content": "SUMMARY: five files read"}}),
        // The retried round: the summary follows the task.
        json!({"match": {"userMessage": "SUMMARY: five files read"}, "response": {"content": "done after compacting"}}),
        json!({"match": {"toolResultContains": "echo-file"}, "response": {
            "error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error",
                "code": "context_length_exceeded"}, "status": 400}}),
        json!({"match": {"toolResultContains": "delta"}, "response": read("e.txt")}),
        json!({"match": {"toolResultContains": "charlie"}, "response": read("d.txt")}),
        json!({"match": {"toolResultContains": "bravo"}, "response": read("c.txt")}),
        json!({"match": {"toolResultContains": "alpha"}, "response": read("b.txt")}),
        json!({"match": {"userMessage": "compact me"}, "response": read("a.txt")}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    for (file, text) in [
        ("a.txt", "alpha"),
        ("b.txt", "bravo"),
        ("c.txt", "charlie"),
        ("d.txt", "delta"),
        ("e.txt", "echo-file"),
    ] {
        std::fs::write(sandbox.ws().join(file), text).unwrap();
    }
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "compact me"]);
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "done after compacting", "{}", out.stderr);
    let tiers: Vec<&Value> = of_type(&events, "compacted").iter().map(|e| &e["tier"]).collect();
    assert!(tiers.contains(&&json!(2)), "a summary was made: {tiers:?}");

    let journal = mock.journal();
    assert_eq!(journal.len(), 8, "five reads, the overflow, the summary, the retry: {journal:#?}");
    let summary = journal
        .iter()
        .find(|r| r["body"]["messages"][0]["content"] == bosun_core::compaction::SUMMARY_PROMPT)
        .expect("the summary request, with the documented prompt");
    assert!(
        summary["body"].get("tools").is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{summary}"
    );
    let retry = journal.last().unwrap()["body"]["messages"].to_string();
    assert!(retry.contains("SUMMARY: five files read") && retry.contains("compact me"), "{retry}");
    assert!(!retry.contains("alpha"), "the summarized results are not sent again: {retry}");
}

/// `bosun SUBCOMMAND ARGS… --model … --base-url …` against `mock`.
fn bosun_on(sandbox: &Sandbox, mock: &Aimock, args: &[&str]) -> std::process::Command {
    let mut cmd = sandbox.bosun();
    cmd.env(Api::OpenAiChat.key_var(), "test").args(args).args(Api::OpenAiChat.args(mock));
    cmd
}

#[test]
fn bosun_compact_summarizes_a_stored_session_and_the_next_turn_sends_the_summary() {
    let long = format!("answer one: the port is 9090. {}", "details ".repeat(400));
    let list = vec![
        // The summary request: its transcript holds the first answer.
        json!({"match": {"userMessage": "answer one"}, "response": {"content": "SUMMARY: port 9090 chosen",
            "usage": {"input_tokens": 900, "output_tokens": 12}}}),
        json!({"match": {"userMessage": "first task"}, "response": {"content": long}}),
        json!({"match": {"userMessage": "second task"}, "response": {"content": "answer two"}}),
        json!({"match": {"userMessage": "third task"}, "response": {"content": "answer three"}}),
        json!({"match": {"userMessage": "fourth task"}, "response": {"content": "answer four"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let out = run(bosun_on(&sandbox, &mock, &["exec", "first task"]));
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    for ask in ["second task", "third task"] {
        run(bosun_on(&sandbox, &mock, &["resume", &id, ask])).expect_code(0);
    }

    let out = run(bosun_on(&sandbox, &mock, &["compact", &id]));
    out.expect_code(0);
    assert!(out.stderr.contains("context compacted (older work summarized)"), "{}", out.stderr);
    assert!(out.stderr.contains("the summary took 900 in, 12 out"), "{}", out.stderr);
    let journal = mock.journal();
    let summary = journal.last().unwrap();
    assert_eq!(summary["body"]["messages"][0]["content"], bosun_core::compaction::SUMMARY_PROMPT);
    let transcript = summary["body"]["messages"][1]["content"].to_string();
    assert!(transcript.contains("second task") && !transcript.contains("answer three"), "{transcript}");

    run(bosun_on(&sandbox, &mock, &["resume", &id, "fourth task"])).expect_code(0);
    let sent = mock.journal().last().unwrap()["body"]["messages"].to_string();
    assert!(sent.contains("SUMMARY: port 9090 chosen") && sent.contains("first task"), "{sent}");
    assert!(
        !sent.contains("answer one") && !sent.contains("answer two"),
        "summarized turns are not sent: {sent}"
    );
    assert!(sent.contains("answer three"), "the newest turn is sent whole: {sent}");

    // History keeps every message; the summary's tokens count as compaction.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", "--json", &id]);
    let shown: Value = serde_json::from_str(&run(cmd).stdout).unwrap();
    assert_eq!(shown["history"].as_array().unwrap().len(), 8);
    assert_eq!(shown["summary"]["spend"]["compaction"]["usage"]["input"], 900);

    // A session with nothing between its task and its newest turn.
    let out = run(bosun_on(&sandbox, &mock, &["exec", "fourth task"]));
    let short = session_from_stderr(&out.stderr);
    let out = run(bosun_on(&sandbox, &mock, &["compact", &short]));
    out.expect_code(0);
    assert!(out.stderr.contains("nothing to compact"), "{}", out.stderr);
}

#[test]
fn an_unknown_hosted_model_is_given_the_documented_window_and_told_so() {
    let list = vec![json!({"match": {"userMessage": "hi"}, "response": {"content": "hello"}})];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let out = run(bosun_on(&sandbox, &mock, &["exec", "hi"]));
    out.expect_code(0);
    let notice = "bosun: the context window of openai/gpt-test is not known; assuming 128000 tokens";
    assert!(out.stderr.contains(notice), "{}", out.stderr);
    // A window from the config: no notice.
    std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(
        sandbox.path("xdg/bosun/config.toml"),
        "[models.\"openai/gpt-test\"]\ncontext_window = 32000\n",
    )
    .unwrap();
    let out = run(bosun_on(&sandbox, &mock, &["exec", "hi"]));
    out.expect_code(0);
    assert!(!out.stderr.contains("is not known"), "{}", out.stderr);
}

#[test]
fn a_task_past_its_round_limit_stops_with_exit_code_1() {
    let list = vec![
        json!({"match": {"userMessage": "loop"}, "response": {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"toolResultContains": "echo"}, "response": {
            "toolCalls": [{"name": "list_files", "arguments": {}}]}}),
        json!({"match": {"toolResultContains": "greet.sh"}, "response": {"content": "never"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "--max-rounds", "2", "loop please"]);
    let out = run(cmd);
    out.expect_code(1);
    let events = json_events(&out.stdout);
    let error = of_type(&events, "error");
    assert_eq!(error.len(), 1, "{events:#?}");
    assert!(error[0]["message"].as_str().unwrap().contains("2"), "{}", error[0]);
    assert_eq!(mock.journal().len(), 2, "two rounds, no third request");
    // Zero rounds is refused before anything runs.
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--max-rounds", "0", "loop please"]);
    let out = run(cmd);
    out.expect_code(2);
}

#[test]
fn a_long_tool_output_is_kept_as_an_artifact_the_model_can_read() {
    let list = vec![
        json!({"match": {"toolResultContains": "kept as artifact"}, "response": {"content": "saw the note"}}),
        json!({"match": {"userMessage": "count"}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "seq 1 40000"}}]}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "--dangerously-approve-all", "count to forty thousand"]);
    let out = run(cmd);
    out.expect_code(0);
    let journal = mock.journal();
    let tools = journal[0]["body"]["tools"].to_string();
    assert!(tools.contains("read_artifact"), "the tool is offered: {tools}");
    // The answer comes from the fixture that matches the note only.
    let events = json_events(&out.stdout);
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "saw the note", "the result the model was sent names its artifact");
    // seq's 228,894 bytes were not sent: the request holds the bounded view.
    let size = journal.last().unwrap()["body"]["originalByteSize"].as_u64().unwrap_or(0);
    assert!(size > 64_000 && size < 100_000, "{size} bytes sent");
}
