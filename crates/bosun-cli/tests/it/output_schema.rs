//! `bosun exec --output-schema FILE` through the real binary against
//! aimock: the schema reaches each API in its own field (Chat Completions'
//! `response_format`, Responses' `text.format`, Gemini's
//! `responseJsonSchema`, an instruction for Anthropic) on every round; an
//! answer that matches exits 0, one that does not exits 1 with an `error`
//! event of kind `output_schema`; a schema that cannot be used stops the
//! command before any model is asked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support;

use support::*;

fn schema() -> Value {
    json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}},
        "required": ["verdict"], "additionalProperties": false})
}

/// The schema written as `verdict.schema.json` in the sandbox (outside the
/// workspace).
fn schema_file(sandbox: &Sandbox, schema: &Value) -> PathBuf {
    let path = sandbox.path("verdict.schema.json");
    std::fs::write(&path, schema.to_string()).unwrap();
    path
}

/// `bosun exec` on a hosted API: `provider/model`, its base URL, its key's variable.
fn exec_on(sandbox: &Sandbox, (model, base, key): (&str, String, &str)) -> std::process::Command {
    let mut cmd = sandbox.bosun();
    cmd.env(key, "test").args(["exec", "--model", model, "--base-url", &base]);
    cmd
}

fn on_chat(mock: &Aimock) -> (&'static str, String, &'static str) {
    ("openai/gpt-test", format!("{}/v1", mock.url()), "OPENAI_API_KEY")
}

/// Runs `cmd` expecting exit 0 with no `error` event, and checks the
/// answer written to `answer` is the schema's.
fn passes(cmd: std::process::Command, answer: &std::path::Path, provider: &str) {
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    assert!(of_type(&events, "error").is_empty(), "{provider}: {events:#?}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(answer).unwrap()).unwrap();
    assert!(written["verdict"].is_string(), "{provider}: {written}");
}

#[test]
fn output_schema_goes_with_every_round_to_chat_and_anthropic_and_a_matching_answer_exits_0() {
    let list =
        call_then_answer("judge", "read_file", json!({"path": "greet.sh"}), "echo", r#"{"verdict": "pass"}"#);
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let providers = [on_chat(&mock), ("anthropic/claude-test", mock.url().to_owned(), "ANTHROPIC_API_KEY")];
    let schema = schema();
    let mut seen = 0;
    for provider in providers {
        let sandbox = task_sandbox();
        let file = schema_file(&sandbox, &schema);
        let answer = sandbox.path("answer.json");
        let mut cmd = exec_on(&sandbox, provider.clone());
        cmd.arg("--output-schema").arg(&file).arg("-o").arg(&answer).args(["--json", "judge greet.sh"]);
        passes(cmd, &answer, provider.0);
        let journal = mock.journal();
        let requests = &journal[seen..];
        seen = journal.len();
        // Both rounds carry it: the answer may come after tool calls.
        assert_eq!(requests.len(), 2, "{}", provider.0);
        for request in requests {
            let body = &request["body"];
            if provider.0.starts_with("openai/") {
                let format = json!({"name": "verdict", "schema": schema, "strict": true});
                assert_eq!(body["response_format"], json!({"type": "json_schema", "json_schema": format}));
            } else {
                // aimock folds Anthropic's system blocks into one system message.
                let system = body["messages"][0]["content"].as_str().unwrap();
                assert!(
                    system.contains("must be exactly one JSON value") && system.contains("\"verdict\""),
                    "{system}"
                );
            }
        }
    }
}

/// One canned streaming answer of `{"verdict": "pass"}` on each of the
/// two APIs whose request aimock's journal rewrites into Chat's form
/// (dropping the fields under test), served raw so the body is seen whole.
fn canned(api: &str) -> (&'static str, String) {
    let answer = r#"{"verdict": "pass"}"#;
    let sse = |event: Option<&str>, data: Value| match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    };
    if api == "gemini" {
        let part = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}});
        return ("/v1beta/models/gemini-test:streamGenerateContent?alt=sse", sse(None, part));
    }
    let added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}});
    let delta = json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
        "content_index": 0, "delta": answer});
    let completed = json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "output": [], "usage": {"input_tokens": 3, "output_tokens": 2}}});
    let body = sse(Some("response.output_item.added"), added)
        + &sse(Some("response.output_text.delta"), delta)
        + &sse(Some("response.completed"), completed);
    ("/v1/responses", body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_schema_reaches_responses_and_gemini_in_their_own_fields() {
    let schema = schema();
    for (model, key) in
        [("openai-responses/gpt-test", "OPENAI_API_KEY"), ("gemini/gemini-test", "GEMINI_API_KEY")]
    {
        let api = model.split('/').next().unwrap();
        let server = bosun_testing::http::Server::start().await.unwrap();
        let (path, body) = canned(api);
        server.route(path, bosun_testing::http::Route::typed("text/event-stream", body.as_bytes()));
        let base = if api == "gemini" { server.url.clone() } else { server.url("/v1") };
        let sandbox = task_sandbox();
        let file = schema_file(&sandbox, &schema);
        let answer = sandbox.path("answer.json");
        let mut cmd = exec_on(&sandbox, (model, base, key));
        cmd.arg("--output-schema").arg(&file).arg("-o").arg(&answer).args(["--json", "judge greet.sh"]);
        let (cmd_answer, cmd_model) = (answer.clone(), model.to_owned());
        tokio::task::spawn_blocking(move || passes(cmd, &cmd_answer, &cmd_model)).await.unwrap();
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{model}");
        let body: Value = serde_json::from_str(&requests[0].body).unwrap();
        if api == "gemini" {
            let config = &body["generationConfig"];
            assert_eq!(config["responseMimeType"], "application/json", "{body}");
            let mut expected = schema.clone();
            expected.as_object_mut().unwrap().remove("$schema");
            assert_eq!(config["responseJsonSchema"], expected, "{body}");
        } else {
            let format = json!({"type": "json_schema", "name": "verdict", "schema": schema, "strict": true});
            assert_eq!(body["text"], json!({ "format": format }), "{body}");
        }
        assert!(body.get("tools").is_some(), "{model}: the tools stay offered");
    }
}

#[test]
fn output_schema_an_answer_that_does_not_match_exits_1_and_says_why() {
    let list = vec![
        json!({"match": {"userMessage": "maybe"}, "response": {"content": "{\"verdict\": \"maybe\"}"}}),
        json!({"match": {"userMessage": "prose"}, "response": {"content": "It passes, I think."}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let file = schema_file(&sandbox, &schema());
    let answer = sandbox.path("answer.json");

    let mut cmd = exec_on(&sandbox, on_chat(&mock));
    cmd.arg("--output-schema").arg(&file).arg("-o").arg(&answer).args(["--json", "say maybe"]);
    let out = run(cmd);
    out.expect_code(1);
    let events = json_events(&out.stdout);
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:#?}");
    assert_eq!(errors[0]["kind"], "output_schema");
    let message = errors[0]["message"].as_str().unwrap();
    let expected =
        format!("the final answer does not match the output schema {}: at /verdict: ", file.display());
    assert!(message.starts_with(&expected), "{message}");
    assert!(message.contains("; session "), "{message}");
    assert!(!answer.exists(), "an answer that does not match is not written to -o");

    let mut cmd = exec_on(&sandbox, on_chat(&mock));
    cmd.arg("--output-schema").arg(&file).arg("answer in prose");
    let out = run(cmd);
    out.expect_code(1);
    assert!(out.stdout.contains("It passes, I think."), "the answer is still shown: {out:#?}");
    assert!(out.stderr.contains("error: the final answer is not JSON ("), "{}", out.stderr);
}

#[test]
fn output_schema_a_schema_that_cannot_be_used_stops_before_any_model_request() {
    let list = vec![json!({"match": {}, "response": {"content": "{}"}})];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let not_json = sandbox.path("not.json");
    std::fs::write(&not_json, "{ \"type\": ").unwrap();
    let not_a_schema = schema_file(&sandbox, &json!({"type": "strnig"}));
    for (file, says) in [
        (sandbox.path("missing.json"), "cannot read the output schema"),
        (not_json, "is not valid JSON"),
        (not_a_schema, "is not a valid JSON Schema"),
    ] {
        let mut cmd = exec_on(&sandbox, on_chat(&mock));
        cmd.arg("--output-schema").arg(&file).arg("anything");
        let out = run(cmd);
        out.expect_code(2);
        assert!(out.stderr.contains(says), "{}: {}", file.display(), out.stderr);
        assert!(out.stderr.contains(&file.display().to_string()), "{}", out.stderr);
    }
    assert!(mock.journal().is_empty(), "a model was asked");
}
