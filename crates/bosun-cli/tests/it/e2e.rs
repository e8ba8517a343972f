//! End to end: the real `bosun` binary against a real mock LLM server, npm
//! `@copilotkit/aimock` (installed by `scripts/test` into `test-peers/`),
//! started on 127.0.0.1 with a fixture file per test. A task that reads a
//! file, edits it, runs a command and answers, on OpenAI Chat Completions and
//! Anthropic; the edit approved by flag, approved and denied on a terminal
//! (a pseudo-terminal), denied without a terminal; Ctrl-C and resume; the
//! usage errors, `--json`, `-o`, stdin, the session commands, `config show`,
//! completions, `--version` and `--help`.
//!
//! Every command runs with a cleared environment: `HOME`, `XDG_CONFIG_HOME`
//! and `BOSUN_HOME` point into a temporary directory, so neither the
//! developer's configuration nor their sessions nor their API keys are read.
//! Every child runs under a deadline: a hang fails the test. Without aimock
//! every test here that needs it FAILS, unless `BOSUN_SKIP_AIMOCK=1` says to
//! skip (loudly).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::{Value, json};

use crate::support;

use support::*;

/// Read greet.sh, then `second` (the answer to the result of the read).
fn read_then(word: &str, second: Value) -> Vec<Value> {
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "content": "Reading.",
            "toolCalls": [{"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": second}),
    ]
}

/// The edit of greet.sh the model proposes after reading it.
fn edit_call() -> Value {
    json!({"toolCalls": [{"name": "edit_file",
        "arguments": {"path": "greet.sh", "old_text": "wrold", "new_text": "world"}}]})
}

/// The whole task for prompts containing `word`: read, edit, run, answer.
fn task_fixtures(word: &str) -> Vec<Value> {
    let mut fixtures = read_then(word, edit_call());
    fixtures.extend([
        json!({"match": {"userMessage": word, "turnIndex": 2}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "bash greet.sh"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 3}, "response": {"content": "Fixed the typo."}}),
    ]);
    fixtures
}

/// Read, edit; when the edit's result contains `denial`, the model answers
/// `answer`. Nothing else matches, so a denial that does not reach the model
/// fails the turn.
fn denial_fixtures(word: &str, denial: &str, answer: &str) -> Vec<Value> {
    let mut fixtures = vec![json!({
        "match": {"toolResultContains": denial, "turnIndex": 2},
        "response": {"content": answer}})];
    fixtures.extend(read_then(word, edit_call()));
    fixtures
}

/// The roles and texts of a session's history, via `sessions show --json`.
fn history(sandbox: &Sandbox, id: &str) -> Vec<(String, String)> {
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", id, "--json"]);
    let out = run(cmd);
    out.expect_code(0);
    let detail: Value = serde_json::from_str(&out.stdout).expect("JSON");
    detail["history"]
        .as_array()
        .expect("a history")
        .iter()
        .map(|pair| {
            let message = &pair[1];
            let text: Vec<String> = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|part| match part["type"].as_str() {
                    Some("text") => part["text"].as_str().unwrap_or_default().to_owned(),
                    Some("tool_call") => format!("call {}", part["name"].as_str().unwrap_or_default()),
                    _ => String::new(),
                })
                .collect();
            (message["role"].as_str().unwrap_or_default().to_owned(), text.join(" "))
        })
        .collect()
}

// ---------------------------------------------------------------- the task

#[test]
fn approved_by_flag_the_task_reads_edits_runs_and_answers() {
    let Some(mock) = Aimock::start(&fixtures(task_fixtures("fix"))) else { return };
    for api in APIS {
        // Human output: the answer on stdout, progress on stderr, `-o`.
        let sandbox = task_sandbox();
        let answer = sandbox.path("answer.txt");
        let mut cmd = sandbox.exec(api, &mock);
        cmd.arg("--dangerously-approve-all").arg("-o").arg(&answer).arg(TASK);
        let out = run(cmd);
        out.expect_code(0);
        assert_eq!(out.stdout, "Reading.\nFixed the typo.\n", "{api:?}");
        for shown in [
            "● read_file greet.sh",
            "● edit_file greet.sh",
            "-echo \"hello wrold\"",
            "+echo \"hello world\"",
            "● shell bash greet.sh",
            "exit code: 0",
        ] {
            assert!(out.stderr.contains(shown), "{api:?}: no {shown:?} in stderr:\n{}", out.stderr);
        }
        assert!(!out.stderr.contains("denied"), "{api:?}: {}", out.stderr);
        assert_eq!(sandbox.greet(), FIXED, "{api:?}");
        assert_eq!(std::fs::read_to_string(&answer).unwrap(), "Fixed the typo.", "{api:?}");
        let id = session_from_stderr(&out.stderr);
        let roles: Vec<String> = history(&sandbox, &id).into_iter().map(|(role, _)| role).collect();
        let expected = ["user", "assistant", "tool_result", "assistant", "tool_result"];
        assert_eq!(roles[..5], expected, "{api:?}");
        assert_eq!(roles.len(), 8, "{api:?}: {roles:?}");

        // `--json`: only JSON on stdout, the same story as events.
        let sandbox = task_sandbox();
        let mut cmd = sandbox.exec(api, &mock);
        cmd.args(["--json", "--dangerously-approve-all", TASK]);
        let out = run(cmd);
        out.expect_code(0);
        assert!(out.stderr.trim().is_empty(), "{api:?}: --json writes nothing else: {}", out.stderr);
        let events = json_events(&out.stdout);
        // `init` first: the session, model and mode before the turn says anything.
        assert_eq!(events[0]["type"], "init", "{api:?}");
        assert_eq!(events[0]["session_id"], events[1]["session_id"]);
        assert!(events[0]["mode"].is_string() && events[0]["workspace"].is_string(), "{}", events[0]);
        assert!(events[0]["model"].as_str().unwrap().ends_with("-test"), "{}", events[0]);
        assert_eq!(events[1]["type"], "turn_start", "{api:?}");
        assert_ended(&events, "completed");
        // `result` last: the answer, the stop reason and the turn's usage.
        let result = events.last().unwrap();
        assert_eq!(result["stop_reason"], "stop", "{result}");
        assert!(result["answer"].as_str().unwrap().contains("Fixed the typo."), "{result}");
        assert!(result["usage"]["input"].is_u64() && result["rounds"] == 4, "{result}");
        assert!(result["duration_ms"].is_u64(), "{result}");
        let text: String =
            of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(text, "Reading.Fixed the typo.", "{api:?}");
        let ends: Vec<(&Value, &Value)> =
            of_type(&events, "tool_end").iter().map(|e| (&e["name"], &e["is_error"])).collect();
        assert_eq!(
            ends,
            [
                (&json!("read_file"), &json!(false)),
                (&json!("edit_file"), &json!(false)),
                (&json!("shell"), &json!(false))
            ],
            "{api:?}"
        );
        let shell = of_type(&events, "tool_end")[2];
        assert!(shell["output"].as_str().unwrap().contains("hello world"), "{api:?}: {shell}");
        // Propose mode asks for the edit and the command; the flag approves both.
        let asked: Vec<&Value> = of_type(&events, "approval_requested").iter().map(|e| &e["name"]).collect();
        assert_eq!(asked, [&json!("edit_file"), &json!("shell")], "{api:?}");
        let decided: Vec<&Value> =
            of_type(&events, "approval_decided").iter().map(|e| &e["decision"]).collect();
        assert_eq!(decided, [&json!("approve_once"), &json!("approve_once")], "{api:?}");
        assert_eq!(sandbox.greet(), FIXED, "{api:?}");
        // The model saw the command's output.
        assert!(mock.last_request().contains("hello world"), "{api:?}");
    }
}

#[test]
fn without_a_terminal_the_edit_is_denied_and_the_model_sees_it() {
    let answer = "The edit was denied, so greet.sh is unchanged.";
    let list = denial_fixtures("fix", "without a terminal to ask on", answer);
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    for api in APIS {
        // stdin null and stderr piped: no terminal to ask on.
        let sandbox = task_sandbox();
        let mut cmd = sandbox.exec(api, &mock);
        cmd.args(["--json", TASK]);
        let out = run(cmd);
        out.expect_code(0);
        let events = json_events(&out.stdout);
        let requested = of_type(&events, "approval_requested");
        assert_eq!(requested.len(), 1, "{api:?}: {requested:?}");
        assert_eq!(requested[0]["name"], "edit_file", "{api:?}");
        let decided = of_type(&events, "approval_decided");
        assert_eq!(decided.len(), 1, "{api:?}");
        assert_eq!(decided[0]["decision"], "deny", "{api:?}");
        assert!(decided[0]["reason"].as_str().unwrap().contains("--dangerously-approve-all"), "{api:?}");
        let edit = of_type(&events, "tool_end").into_iter().find(|e| e["name"] == "edit_file").unwrap();
        assert_eq!(edit["is_error"], true, "{api:?}");
        assert!(edit["output"].as_str().unwrap().contains("denied"), "{api:?}: {edit}");
        let text: String =
            of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(text, format!("Reading.{answer}"), "{api:?}");
        assert!(mock.last_request().contains("without a terminal to ask on"), "{api:?}");
        assert_eq!(sandbox.greet(), GREET, "{api:?}");

        // The same in human output: the denial on stderr, the answer on stdout.
        let sandbox = task_sandbox();
        let mut cmd = sandbox.exec(api, &mock);
        cmd.arg(TASK);
        let out = run(cmd);
        out.expect_code(0);
        assert_eq!(out.stdout, format!("Reading.\n{answer}\n"), "{api:?}");
        assert!(out.stderr.contains("denied: `edit_file` needs approval"), "{api:?}: {}", out.stderr);
        assert_eq!(sandbox.greet(), GREET, "{api:?}");
    }
}

// ---------------------------------------------------------------- terminal

/// `bosun exec` in propose mode on a pseudo-terminal; `answer` types the
/// answers as the prompts appear.
fn in_terminal(mock: &Aimock, sandbox: &Sandbox, answer: impl FnOnce(&mut Running)) -> Output {
    let mut cmd = sandbox.exec(Api::OpenAiChat, mock);
    cmd.arg(TASK);
    let mut running = Running::spawn_in_terminal(cmd);
    answer(&mut running);
    running.finish()
}

fn prompts(running: &Running, text: &str) -> usize {
    running.stderr().matches(text).count()
}

#[test]
fn on_a_terminal_the_edit_and_the_command_are_approved_at_the_prompt() {
    let Some(mock) = Aimock::start(&fixtures(task_fixtures("fix"))) else { return };
    let sandbox = task_sandbox();
    let out = in_terminal(&mock, &sandbox, |running| {
        running.wait_for("the edit's approval prompt", |r| prompts(r, "approve?") == 1);
        let screen = running.stderr();
        assert!(screen.contains("edit_file") && screen.contains("wants to run:"), "{screen}");
        assert!(screen.contains("- wrold") && screen.contains("+ world"), "the change is shown: {screen}");
        assert_eq!(sandbox.greet(), GREET, "nothing is edited before the answer");
        running.type_line("y");
        running.wait_for("the command's approval prompt", |r| prompts(r, "approve?") == 2);
        assert!(running.stderr().contains("$ bash greet.sh"), "{}", running.stderr());
        running.type_line("y");
    });
    out.expect_code(0);
    assert_eq!(out.stdout, "Reading.\nFixed the typo.\n");
    assert_eq!(sandbox.greet(), FIXED);
    assert!(!out.stderr.contains("denied"), "{}", out.stderr);
    assert!(mock.last_request().contains("hello world"));
}

#[test]
fn on_a_terminal_a_denial_with_a_reason_reaches_the_model() {
    let reason = "use sed instead";
    let answer = "Understood, I left greet.sh alone.";
    let Some(mock) = Aimock::start(&fixtures(denial_fixtures("fix", reason, answer))) else { return };
    let sandbox = task_sandbox();
    let out = in_terminal(&mock, &sandbox, |running| {
        running.wait_for("the edit's approval prompt", |r| prompts(r, "approve?") == 1);
        running.type_line("n");
        running.wait_for("the reason prompt", |r| prompts(r, "reason (optional, one line):") == 1);
        running.type_line(reason);
    });
    out.expect_code(0);
    assert_eq!(out.stdout, format!("Reading.\n{answer}\n"));
    assert!(out.stderr.contains(&format!("denied: {reason}")), "{}", out.stderr);
    assert_eq!(sandbox.greet(), GREET);
    assert!(mock.last_request().contains(reason));
}

// ---------------------------------------------------------------- Ctrl-C

#[test]
fn ctrl_c_mid_turn_exits_130_and_resume_last_continues() {
    // The second round streams slowly: 5 characters every 100 ms.
    let slow: String = (0..400).map(|i| format!("word{i} ")).collect();
    let mut list = read_then("slow", json!({"content": slow}));
    list[1]["latency"] = json!(100);
    list[1]["chunkSize"] = json!(5);
    list.push(json!({"match": {"userMessage": "continue"}, "response": {"content": "Continued."}}));
    list.push(json!({"match": {"userMessage": "left off"}, "response": {"content": "Nothing left to do."}}));
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg("a slow task");
    let mut running = Running::spawn(cmd, None);
    running.wait_for("the slow answer to stream", |r| r.stdout().contains("word3 "));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&running.child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = running.finish();
    out.expect_code(130);
    assert!(!out.stdout.contains("word399"), "interrupted mid-stream: {}", out.stdout);
    let (_, rest) = out.stderr.split_once("continue with `bosun resume ").expect("a resume hint");
    let id = rest.split('`').next().unwrap().to_owned();
    assert!(out.stderr.contains("bosun resume --last"), "{}", out.stderr);

    // The same with --json: only events on stdout, the last one says cancelled.
    let other = task_sandbox();
    let mut cmd = other.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "another slow task"]);
    let mut running = Running::spawn(cmd, None);
    // "Reading." and three chunks of the slow answer.
    running.wait_for("the slow answer to stream", |r| r.stdout().matches("\"text_delta\"").count() >= 4);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&running.child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let json = running.finish();
    json.expect_code(130);
    let events = json_events(&json.stdout);
    assert_ended(&events, "cancelled");

    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test")
        .args(["resume", "--last", "continue"])
        .args(Api::OpenAiChat.args(&mock));
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "Continued.\n");
    assert!(out.stderr.contains(&format!("resumed session {id} (3 messages)")), "{}", out.stderr);
    // The model saw the interrupted turn's completed round.
    let request = mock.last_request();
    assert!(request.contains("a slow task") && request.contains("hello wrold"), "{request}");
    // By id and without a prompt: bosun asks the model to go on.
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").args(["resume", &id]).args(Api::OpenAiChat.args(&mock));
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "Nothing left to do.\n");
    assert!(out.stderr.contains(&format!("resumed session {id} (5 messages)")), "{}", out.stderr);

    let expected = [
        ("user", "a slow task"),
        ("assistant", "Reading. call read_file"),
        ("tool_result", ""),
        ("user", "continue"),
        ("assistant", "Continued."),
        ("user", "Continue where you left off."),
        ("assistant", "Nothing left to do."),
    ];
    let history = history(&sandbox, &id);
    assert_eq!(history.len(), expected.len(), "{history:?}");
    for ((role, text), (want_role, want_text)) in history.iter().zip(expected) {
        assert_eq!(role, want_role, "{history:?}");
        if want_role == "tool_result" {
            assert!(text.contains("hello wrold"), "{history:?}");
        } else {
            assert_eq!(text, want_text, "{history:?}");
        }
    }
    // Still one session: resuming continued it.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "list", "--json"]);
    let out = run(cmd);
    out.expect_code(0);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}

// ---------------------------------------------------------------- usage

#[test]
fn usage_and_configuration_errors_exit_2_with_a_clear_message() {
    let sandbox = task_sandbox();
    let case = |args: &[&str], key: Option<&str>, wanted: &[&str]| {
        let mut cmd = sandbox.bosun();
        cmd.args(args);
        if let Some(var) = key {
            cmd.env(var, "test");
        }
        let out = run(cmd);
        out.expect_code(2);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        for text in wanted {
            assert!(out.stderr.contains(text), "{args:?}: no {text:?} in {}", out.stderr);
        }
    };
    case(&["exec", "hi"], None, &["no model is configured", "--model"]);
    case(&["exec", "--model", "nowhere/x", "hi"], None, &["unknown provider `nowhere`"]);
    case(&["exec", "--model", "gpt-5", "hi"], None, &["not PROVIDER/MODEL"]);
    case(&["exec", "--model", "openai/gpt-test", "hi"], None, &["OPENAI_API_KEY"]);
    case(&["exec", "--model", "anthropic/claude-test", "hi"], None, &["ANTHROPIC_API_KEY"]);
    case(&["exec", "--no-such-flag", "hi"], None, &["--no-such-flag"]);
    case(&["resume", "--model", "openai/gpt-test"], Some("OPENAI_API_KEY"), &["--last"]);
    case(&["sessions", "show", "no-such-session"], None, &["no-such-session"]);
    // A base URL that cannot be used is configuration, not a network failure.
    let model = ["exec", "--model", "openai/gpt-test", "--base-url"];
    let key = Some("OPENAI_API_KEY");
    case(&[&model[..], &["not a url", "hi"]].concat(), key, &["the base URL `not a url` is not a URL"]);
    case(&[&model[..], &["ftp://host/v1", "hi"]].concat(), key, &["must be http:// or https://, not ftp://"]);
    // A bad configuration file names itself.
    std::fs::create_dir(sandbox.ws().join(".bosun")).unwrap();
    std::fs::write(sandbox.ws().join(".bosun/config.toml"), "modle = \"openai/x\"\n").unwrap();
    case(&["config", "show"], None, &["config.toml", "modle"]);
    // Nothing was written to the workspace.
    assert_eq!(sandbox.greet(), GREET);
}

#[test]
fn exec_dash_reads_the_task_from_stdin_and_o_writes_the_answer() {
    let Some(mock) = Aimock::start(&fixtures(task_fixtures("fix"))) else { return };
    let sandbox = task_sandbox();
    let answer = sandbox.path("answer.txt");
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test")
        .args(["exec", "-", "--dangerously-approve-all", "-o"])
        .arg(&answer)
        .args(Api::OpenAiChat.args(&mock));
    let out = Running::spawn(cmd, Some(&format!("{TASK}\n"))).finish();
    out.expect_code(0);
    assert_eq!(out.stdout, "Reading.\nFixed the typo.\n");
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), "Fixed the typo.");
    assert_eq!(sandbox.greet(), FIXED);
    let id = session_from_stderr(&out.stderr);
    assert_eq!(history(&sandbox, &id)[0], ("user".to_owned(), format!("{TASK}\n")));

    // An empty stdin is a usage error.
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").args(["exec", "-"]).args(Api::OpenAiChat.args(&mock));
    let out = Running::spawn(cmd, Some("  \n")).finish();
    out.expect_code(2);
    assert!(out.stderr.contains("the task is empty"), "{}", out.stderr);
}

// ---------------------------------------------------------------- sessions

#[test]
fn sessions_list_show_export_import_and_rm() {
    let Some(mock) = Aimock::start(&fixtures(task_fixtures("fix"))) else { return };
    let sandbox = task_sandbox();
    let mut ids = Vec::new();
    for api in APIS {
        std::fs::write(sandbox.ws().join("greet.sh"), GREET).unwrap();
        let mut cmd = sandbox.exec(api, &mock);
        cmd.args(["--dangerously-approve-all", TASK]);
        let out = run(cmd);
        out.expect_code(0);
        ids.push(session_from_stderr(&out.stderr));
    }
    let sessions = |extra: &[&str]| {
        let mut cmd = sandbox.bosun();
        cmd.args(["sessions", "list"]).args(extra);
        let out = run(cmd);
        out.expect_code(0);
        out
    };

    // list: newest first, human and JSON.
    let out = sessions(&[]);
    let listed: Vec<&str> = out.stdout.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(listed, [ids[1].as_str(), ids[0].as_str()]);
    assert!(out.stdout.lines().all(|l| l.contains("8 msgs") && l.ends_with(TASK)), "{}", out.stdout);
    let json: Value = serde_json::from_str(&sessions(&["--json"]).stdout).unwrap();
    let listed: Vec<&str> = json.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [ids[1].as_str(), ids[0].as_str()]);
    assert_eq!(json[0]["message_count"], 8);
    assert_eq!(json[0]["title"], TASK);

    // show: human.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &ids[0]]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.starts_with(&format!("session {}", ids[0])), "{}", out.stdout);
    for line in
        ["user  please fix greet.sh", "read_file({\"path\":\"greet.sh\"})", "tool  shell: exit code: 0"]
    {
        assert!(out.stdout.contains(line), "no {line:?} in {}", out.stdout);
    }
    let last = out.stdout.trim_end().lines().last().unwrap_or_default();
    assert!(last.ends_with("assistant  Fixed the typo.  [130 in, 4 out]"), "{}", out.stdout);

    // export to a file and to stdout: the same JSON Lines.
    let file = sandbox.path("export.jsonl");
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "export", &ids[0], "-o"]).arg(&file);
    run(cmd).expect_code(0);
    let exported = std::fs::read_to_string(&file).unwrap();
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "export", &ids[0]]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, exported);
    assert!(exported.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "{exported}");

    // import into another store: the same history; into the same one: refused.
    let other = sandbox.path("other-bosun");
    std::fs::create_dir(&other).unwrap();
    let mut cmd = sandbox.bosun_at(&other);
    cmd.args(["sessions", "import"]).arg(&file);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout.trim(), ids[0]);
    let show = |home: &Path| {
        let mut cmd = sandbox.bosun_at(home);
        cmd.args(["sessions", "show", &ids[0], "--json"]);
        let out = run(cmd);
        out.expect_code(0);
        let detail: Value = serde_json::from_str(&out.stdout).unwrap();
        detail["history"].clone()
    };
    assert_eq!(show(&other), show(&sandbox.path("bosun")));
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "import", "-"]);
    let out = Running::spawn(cmd, Some(&exported)).finish();
    out.expect_code(2);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);

    // rm: gone from the list and from show.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "rm", &ids[0]]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stderr.contains(&format!("deleted session {}", ids[0])), "{}", out.stderr);
    let out = sessions(&[]);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    assert!(out.stdout.starts_with(&ids[1]));
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &ids[0]]);
    run(cmd).expect_code(2);

    // Another workspace has none; --all shows them.
    let mut cmd = sandbox.bosun_in(&sandbox.path("home"), &sandbox.path("bosun"));
    cmd.args(["sessions", "list"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.is_empty() && out.stderr.contains("no sessions"), "{out:?}");
    let all: Value = serde_json::from_str(&sessions(&["--all", "--json"]).stdout).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 1);
}

#[test]
fn invariant_21_a_rolled_back_turn_shows_its_prompt_as_failed() {
    let fixture = json!({"match": {"userMessage": "doomed"}, "response": {
        "error": {"message": "bad request", "type": "invalid_request_error"}, "status": 400}});
    let Some(mock) = Aimock::start(&fixtures(vec![fixture])) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(APIS[0], &mock);
    cmd.arg("a doomed prompt");
    let out = run(cmd);
    out.expect_code(1);
    // The error is printed once, with the session to go back to.
    assert_eq!(out.stderr.matches("bad request").count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("the turn failed; session "), "{}", out.stderr);
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "list", "--json"]);
    let out = run(cmd);
    out.expect_code(0);
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed[0]["title"], "a doomed prompt", "{listed}");
    let id = listed[0]["id"].as_str().unwrap().to_owned();

    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &id]);
    let out = run(cmd);
    out.expect_code(0);
    let line = "user  a doomed prompt  (turn failed, not sent again automatically)";
    assert!(out.stdout.contains(line), "{}", out.stdout);
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &id, "--json"]);
    let out = run(cmd);
    out.expect_code(0);
    let detail: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(detail["history"], json!([]), "not in the history resuming rebuilds");
    assert_eq!(detail["failed_turns"][0]["failed"], true, "{detail}");
    assert_eq!(detail["failed_turns"][0]["message"]["content"][0]["text"], "a doomed prompt");
}

/// An answer cut at the output limit exits 0 but says so; the JSON error
/// event of a model failure carries its class.
#[test]
fn a_cut_answer_is_marked_and_a_model_failure_names_its_class() {
    let cut = json!({"match": {"userMessage": "long"}, "response": {
        "content": "The first half of a long", "finishReason": "length"}});
    let refused = json!({"match": {"userMessage": "doomed"}, "response": {
        "error": {"message": "bad request", "type": "invalid_request_error"}, "status": 400}});
    let Some(mock) = Aimock::start(&fixtures(vec![cut, refused])) else { return };
    let sandbox = task_sandbox();
    for api in APIS {
        let mut cmd = sandbox.exec(api, &mock);
        cmd.arg("a long answer please");
        let out = run(cmd);
        out.expect_code(0);
        assert!(out.stdout.contains("The first half of a long"), "{api:?}: {}", out.stdout);
        assert!(out.stderr.contains("the answer was cut"), "{api:?}: {}", out.stderr);
        let mut cmd = sandbox.exec(api, &mock);
        cmd.args(["--json", "a long answer please"]);
        let out = run(cmd);
        out.expect_code(0);
        let events = json_events(&out.stdout);
        assert_eq!(of_type(&events, "turn_end")[0]["stop_reason"], "length", "{api:?}: {}", out.stdout);
    }
    let mut cmd = sandbox.exec(APIS[0], &mock);
    cmd.args(["--json", "a doomed prompt"]);
    let out = run(cmd);
    out.expect_code(1);
    let events = json_events(&out.stdout);
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{}", out.stdout);
    assert_eq!(errors[0]["kind"], "model");
    assert_eq!(errors[0]["class"], "invalid_request", "{}", errors[0]);
}

/// `[providers.NAME]` in the user's config reaches the adapter: with no
/// retries, a 503 is one request; by default it is retried.
#[test]
fn provider_transport_settings_from_the_config_apply() {
    let overloaded = json!({"match": {"userMessage": "busy"}, "response": {
        "error": {"message": "overloaded", "type": "server_error"}, "status": 503}});
    let requests = |config: Option<&str>| {
        let mock = Aimock::start(&fixtures(vec![overloaded.clone()]))?;
        let sandbox = task_sandbox();
        if let Some(config) = config {
            std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
            std::fs::write(sandbox.path("xdg/bosun/config.toml"), config).unwrap();
        }
        let mut cmd = sandbox.exec(APIS[0], &mock);
        cmd.arg("a busy server");
        let out = run(cmd);
        out.expect_code(1);
        Some((mock.journal().len(), out.stderr))
    };
    let Some((once, stderr)) = requests(Some("[providers.openai]\nrequest_max_retries = 0\n")) else {
        return;
    };
    assert_eq!(once, 1, "{stderr}");
    assert!(!stderr.contains("retrying"), "{stderr}");
    let Some((default, stderr)) = requests(None) else { return };
    assert_eq!(default, 4, "three retries by default: {stderr}");
    assert_eq!(stderr.matches("retrying (attempt").count(), 3, "{stderr}");
}

/// `disabled_tools` in the config takes the tool away: not offered to the
/// model, and a call to it is refused without running.
#[test]
fn a_disabled_tool_is_not_offered_and_a_call_to_it_does_not_run() {
    let word = "disabled";
    let script = vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "touch ran.txt"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"content": "Could not run it."}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(sandbox.path("xdg/bosun/config.toml"), "disabled_tools = [\"shell\"]\n").unwrap();
    let mut cmd = sandbox.exec(APIS[0], &mock);
    cmd.args(["--mode", "autonomous", "--json", "the disabled tool"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(!sandbox.ws().join("ran.txt").exists(), "the shell ran");
    let events = json_events(&out.stdout);
    let ended = of_type(&events, "tool_end");
    assert_eq!(ended[0]["is_error"], true, "{}", out.stdout);
    assert!(ended[0]["output"].as_str().unwrap().contains("disabled"), "{}", ended[0]);
    let first = &mock.journal()[0]["body"];
    let offered: Vec<&str> =
        first["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(!offered.is_empty() && !offered.contains(&"shell"), "{offered:?}");
    // A name that is no tool is a configuration error naming it.
    std::fs::write(sandbox.path("xdg/bosun/config.toml"), "disabled_tools = [\"shel\"]\n").unwrap();
    let mut cmd = sandbox.exec(APIS[0], &mock);
    cmd.arg("the disabled tool");
    let out = run(cmd);
    out.expect_code(2);
    assert!(out.stderr.contains("`shel` is not a tool"), "{}", out.stderr);
}

// ---------------------------------------------------------------- the rest

#[test]
fn config_show_names_where_each_value_came_from() {
    let sandbox = task_sandbox();
    let project = sandbox.ws().join(".bosun/config.toml");
    std::fs::create_dir(sandbox.ws().join(".bosun")).unwrap();
    // An untrusted project may narrow the mode, not choose the model.
    std::fs::write(&project, "model = \"anthropic/from-project\"\nmode = \"read-only\"\n").unwrap();
    let user = sandbox.path("xdg/bosun/config.toml");
    std::fs::create_dir(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(&user, "max_rounds = 7\nmode = \"write\"\n").unwrap();
    let mut cmd = sandbox.bosun();
    cmd.env("BOSUN_MODEL", "openai/from-env").args(["config", "show"]);
    let out = run(cmd);
    out.expect_code(0);
    let project = std::fs::canonicalize(&project).unwrap();
    let user = std::fs::canonicalize(&user).unwrap();
    for line in [
        "model = openai/from-env    # environment BOSUN_MODEL".to_owned(),
        format!("mode = read-only    # {}", project.display()),
        format!("max_rounds = 7    # {}", user.display()),
        format!(
            "# project {} (untrusted: its config may only narrow)",
            sandbox.ws().canonicalize().unwrap().display()
        ),
        format!("# ignored from {}: model", project.display()),
        "project_docs = true    # default".to_owned(),
    ] {
        assert!(out.stdout.lines().any(|l| l == line), "no {line:?} in\n{}", out.stdout);
    }

    // Without a model anywhere, it says how to set one.
    let sandbox = task_sandbox();
    let mut cmd = sandbox.bosun();
    cmd.args(["config", "show"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.contains("mode = propose    # default"), "{}", out.stdout);
    assert!(out.stdout.contains("model: not set") && out.stdout.contains("--model"), "{}", out.stdout);
}

#[test]
fn completions_version_and_help() {
    let sandbox = task_sandbox();
    let out = |args: &[&str]| {
        let mut cmd = sandbox.bosun();
        cmd.args(args);
        let out = run(cmd);
        out.expect_code(0);
        out.stdout
    };
    let bash = out(&["completions", "bash"]);
    assert!(bash.contains("_bosun") && bash.contains("complete"), "{bash}");
    assert!(out(&["completions", "zsh"]).contains("#compdef bosun"));
    assert_eq!(out(&["--version"]), format!("bosun {}\n", env!("CARGO_PKG_VERSION")));
    let help = out(&["--help"]);
    for command in ["exec", "resume", "fork", "sessions", "config", "completions", "Usage: bosun"] {
        assert!(help.contains(command), "no {command:?} in --help:\n{help}");
    }
    let help = out(&["exec", "--help"]);
    for flag in ["--model", "--json", "--dangerously-approve-all", "--output", "--mode"] {
        assert!(help.contains(flag), "no {flag:?} in exec --help:\n{help}");
    }
}

// ---------------------------------------------------------------- cost

#[test]
fn exec_shows_the_turns_cost_and_sessions_show_prices_the_stored_usage() {
    let answer = json!({"match": {"userMessage": "price", "turnIndex": 0}, "response": {
        "content": "Done.", "usage": {"input_tokens": 1200, "output_tokens": 300}}});
    let Some(mock) = Aimock::start(&fixtures(vec![answer])) else { return };
    let sandbox = task_sandbox();
    let tokens_line = |out: &Output| {
        out.stderr.lines().find(|l| l.starts_with("tokens: ")).expect("a tokens line").to_owned()
    };
    // A model the table lacks: its tokens and "cost unknown", never a figure.
    let mut cmd = sandbox.exec(Api::Anthropic, &mock);
    cmd.arg("price this");
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(tokens_line(&out), "tokens: 1200 in, 300 out, cost unknown");
    let unpriced = session_from_stderr(&out.stderr);

    // Priced in the user's config: 1,200 × $3 + 300 × $15 per million
    // = 3,600 + 4,500 micro-dollars.
    let config = "[models.\"anthropic/claude-test\"]\nprice_input = 3\nprice_output = 15\n";
    std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(sandbox.path("xdg/bosun/config.toml"), config).unwrap();
    let mut cmd = sandbox.exec(Api::Anthropic, &mock);
    cmd.arg("price this");
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(tokens_line(&out), "tokens: 1200 in, 300 out, $0.0081");

    // `sessions show` names the model and shows the cost each turn
    // recorded as it ran, whatever is configured now.
    let id = session_from_stderr(&out.stderr);
    let mut cmd = sandbox.bosun();
    cmd.env("BOSUN_MODEL", "openai/gpt-4o").args(["sessions", "show", &id]);
    let shown = run(cmd);
    shown.expect_code(0);
    for line in [
        "model: anthropic/claude-test\n",
        "usage: 1200 in (0 written), 300 out (0 reasoning); cost: $0.0081\n",
        "turn 1   completed    1200 in, 300 out, $0.0081\n",
        "assistant  Done.  [1200 in, 300 out, $0.0081]\n",
    ] {
        assert!(shown.stdout.contains(line), "no {line:?} in {}", shown.stdout);
    }
    // A session that ran unpriced is priced by its recorded model's prices
    // once bosun has them.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &unpriced]);
    let shown = run(cmd);
    shown.expect_code(0);
    let line = "usage: 1200 in (0 written), 300 out (0 reasoning); cost: $0.0081 at anthropic/claude-test prices \
                (the session's model)";
    assert!(shown.stdout.contains(line), "no {line:?} in {}", shown.stdout);
}
