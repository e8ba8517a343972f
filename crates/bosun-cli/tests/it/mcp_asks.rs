//! End to end: what MCP servers ask of bosun, through the real `bosun`
//! binary with the everything server (npm
//! `@modelcontextprotocol/server-everything`, from `test-peers/`) and aimock
//! as the model. Elicitation answered at a pseudo-terminal's prompt, and
//! declined without a terminal; sampling (`sampling = true`) approved at
//! the prompt and answered by the session's model, and refused without a
//! terminal; the resource tools offered beside the server's own.
//!
//! Without the server or aimock every test FAILS, unless `BOSUN_SKIP_MCP=1`
//! (or `BOSUN_SKIP_AIMOCK=1`) says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::json;

use crate::support;

use support::*;

const ELICIT: &str = "mcp__everything__trigger-elicitation-request";
const SAMPLE: &str = "mcp__everything__trigger-sampling-request";

/// A sandbox whose user config starts the everything server, with `extra`
/// lines in its table and `after` after it.
fn sandbox_with(entry: &Path, extra: &str, after: &str) -> Sandbox {
    let sandbox = task_sandbox();
    let entry = serde_json::to_string(&entry.display().to_string()).unwrap();
    let config = format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{entry}, \"stdio\"]\n{extra}\n{after}"
    );
    std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(sandbox.path("xdg/bosun/config.toml"), config).unwrap();
    sandbox
}

fn count(running: &Running, text: &str) -> usize {
    running.stderr().matches(text).count()
}

/// The form's field prompts shown so far: `LABEL (HINT…)…: ` lines.
fn field_prompts(screen: &str) -> Vec<String> {
    screen
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_owned())
        .filter(|l| {
            !l.starts_with(' ')
                && !["approve?", "answer?", "send?", "?"].iter().any(|p| l.starts_with(p))
                && (l.contains("): ") || l.contains("]: ") || l.ends_with("):") || l.ends_with("]:"))
        })
        .collect()
}

#[test]
fn an_elicitation_is_answered_at_the_terminal_and_the_values_reach_the_model() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let list =
        call_then_answer("form", ELICIT, json!({}), "User provided the requested information", "thanks");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = sandbox_with(&entry, "", "");
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.env("NO_COLOR", "1").arg("please fill the form");
    let mut running = Running::spawn_in_terminal(cmd);
    running.wait_for("the tool's approval prompt", |r| count(r, "approve? [y/a/n]") == 1);
    running.type_line("y");
    running.wait_for("the elicitation prompt", |r| count(r, "answer? [a/d/c]") == 1);
    let screen = running.stderr();
    assert!(screen.contains("? MCP server `everything` asks for input:"), "{screen}");
    assert!(screen.contains("Please provide inputs for the following fields:"), "{screen}");
    running.type_line("a");
    // Thirteen fields; the required one first, the others kept or left empty.
    for asked in 1..=13 {
        running.wait_for("the next field", |r| field_prompts(&r.stderr()).len() == asked);
        let prompt = field_prompts(&running.stderr())[asked - 1].clone();
        if asked == 1 {
            assert!(prompt.starts_with("String (text, required)"), "the required field first: {prompt}");
        }
        let typed = if prompt.starts_with("String (text, required)") {
            "Ann"
        } else if prompt.starts_with("Boolean (y/n)") {
            "y"
        } else if prompt.starts_with("String with email format (text, email)") {
            "ann@example.com"
        } else {
            ""
        };
        running.type_line(typed);
    }
    running.wait_for("the summary", |r| count(r, "send? [y/d/c]") == 1);
    let screen = running.stderr();
    for shown in ["send to `everything`:", "  name: Ann\r\n", "  integer: 42\r\n", "  check: y\r\n"] {
        assert!(screen.contains(shown), "no {shown:?} in:\n{screen}");
    }
    running.type_line("y");
    let out = running.finish();
    out.expect_code(0);
    assert_eq!(out.stdout, "thanks\n");
    let request = mock.last_request();
    for sent in
        ["- Name: Ann", "- Agreed to terms: true", "- Email: ann@example.com", "- Favorite Integer: 42"]
    {
        assert!(request.contains(sent), "no {sent:?} in {request}");
    }
}

#[test]
fn without_a_terminal_an_elicitation_is_declined_saying_why() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let list = call_then_answer("form", ELICIT, json!({}), "User declined", "understood");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = sandbox_with(&entry, "", "");
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", "please fill the form"]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "understood\n");
    let request = mock.last_request();
    assert!(
        request.contains("without a terminal to ask the user on"),
        "the server got the reason: {request}"
    );
}

#[test]
fn sampling_is_approved_at_the_terminal_and_answered_by_the_sessions_model() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let mut list =
        vec![json!({"match": {"userMessage": "context: ping-7"}, "response": {"content": "pong-sampled"}})];
    list.extend(call_then_answer(
        "sample",
        SAMPLE,
        json!({"prompt": "ping-7"}),
        "pong-sampled",
        "it said pong",
    ));
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = sandbox_with(&entry, "sampling = true", "");
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.env("NO_COLOR", "1").arg("please sample");
    let mut running = Running::spawn_in_terminal(cmd);
    running.wait_for("the tool's approval prompt", |r| count(r, "approve? [y/a/n]") == 1);
    running.type_line("y");
    running.wait_for("the sampling approval prompt", |r| count(r, "approve? [y/a/n]") == 2);
    let screen = running.stderr();
    for shown in [
        "? MCP server `everything` asks the model for a completion:",
        "  system: You are a helpful test server.",
        "  user: Resource trigger-sampling-request context: ping-7",
        "  (at most 100 tokens)",
        "[a] approve all later sampling requests of `everything` in this run",
    ] {
        assert!(screen.contains(shown), "no {shown:?} in:\n{screen}");
    }
    running.type_line("y");
    let out = running.finish();
    out.expect_code(0);
    assert_eq!(out.stdout, "it said pong\n");
    assert!(out.stderr.contains("mcp: everything sampled the model ("), "{}", out.stderr);
    // The server's request went to the model as it was written.
    let journal = mock.journal();
    let sampled = journal
        .iter()
        .find(|r| r["body"].to_string().contains("context: ping-7") && r["body"]["tools"].is_null())
        .unwrap_or_else(|| panic!("no sampling request in {journal:#?}"));
    assert!(sampled["body"].to_string().contains("You are a helpful test server."), "{sampled}");
    let body = &sampled["body"];
    let cap = body.get("max_completion_tokens").or_else(|| body.get("max_tokens"));
    assert_eq!(cap, Some(&json!(100)), "the server's maxTokens: {sampled}");
}

#[test]
fn without_a_terminal_sampling_is_refused_unless_the_mode_is_autonomous() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let refused = "without a terminal to ask on";
    let mut list =
        vec![json!({"match": {"userMessage": "context: ping-8"}, "response": {"content": "pong-8"}})];
    list.extend(call_then_answer("refuse", SAMPLE, json!({"prompt": "ping-8"}), refused, "refused"));
    list.extend(call_then_answer("allow", SAMPLE, json!({"prompt": "ping-8"}), "pong-8", "allowed"));
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    // The tool itself is allowed by a rule, so only sampling asks.
    let rule = format!("[permissions]\n\"{SAMPLE}\" = \"allow\"\n");
    let sandbox = sandbox_with(&entry, "sampling = true", &rule);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg("please refuse");
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "refused\n", "{}", out.stderr);
    assert!(!mock.journal().iter().any(|r| r["body"].to_string().contains("pong-8")));

    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--mode", "autonomous", "please allow"]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "allowed\n", "{}", out.stderr);
}

#[test]
fn the_resource_tools_are_offered_beside_the_servers_own() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let list = call_then_answer(
        "list",
        "list_mcp_resources",
        json!({}),
        "demo://resource/static/document/",
        "listed",
    );
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = sandbox_with(&entry, "", "");
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", "please list"]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "listed\n", "{}", out.stderr);
    let journal = mock.journal();
    let tools = journal[0]["body"]["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    for name in ["list_mcp_resources", "read_mcp_resource", "mcp__everything__echo"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
}
