//! OpenAPI specs as tools through the real binary (invariant 19): a spec
//! the user's own config names becomes tools; a project's config, trusted
//! or not, cannot add one; a call sends nothing until approved, and then
//! reaches a real API server on loopback with the user's key from the
//! environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use bosun_testing::http::{Route, Server};
use serde_json::{Value, json};

use crate::support;

use support::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const SPEC: &str = r#"openapi: 3.0.3
info: {title: Builds, version: "1"}
paths:
  /builds/{id}:
    get:
      operationId: getBuild
      summary: One CI build
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200": {description: the build}
"#;

/// The model calls `ci__getBuild` for build 7, then answers from it.
fn calling() -> Value {
    fixtures(vec![
        json!({"match": {"userMessage": "build 7", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "ci__getBuild", "arguments": {"id": 7}}]}}),
        json!({"match": {"toolResultContains": "passed", "turnIndex": 1}, "response": {"content": "build 7 passed"}}),
        json!({"match": {"turnIndex": 1}, "response": {"content": "no build"}}),
    ])
}

async fn exec(sandbox: &Sandbox, mock: &Aimock, extra: &[&str]) -> (Output, Vec<Value>) {
    let mut cmd: Command = sandbox.exec(Api::OpenAiChat, mock);
    cmd.env("CI_TOKEN", "ci-secret-1").arg("--json").args(extra).arg("how did build 7 go");
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    let events = json_events(&out.stdout);
    (out, events)
}

fn tool_output(events: &[Value]) -> String {
    let ends = of_type(events, "tool_end");
    assert_eq!(ends.len(), 1, "{events:#?}");
    ends[0]["output"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_19_openapi_tools_come_only_from_the_users_config_and_call_only_when_approved() {
    let api = Server::start().await.unwrap();
    api.route("/api/builds/7", Route::json(&json!({"id": 7, "status": "passed"})));
    let Some(mock) = Aimock::start(&calling()) else { return };
    let sandbox = task_sandbox();
    let spec = sandbox.path("home/specs/ci.yaml");
    write(&spec, SPEC);
    let entry = format!(
        "[openapi.ci]\nspec = \"{}\"\nbase_url = \"{}\"\nauth = {{ type = \"bearer\", env = \"CI_TOKEN\" }}\n",
        spec.display(),
        api.url("/api")
    );
    let user_file = sandbox.path("xdg/bosun/config.toml");

    // A project's config, even a trusted one, cannot add the spec.
    write(&sandbox.ws().join(".bosun/config.toml"), &entry);
    for trusted in [false, true] {
        if trusted {
            let ws = sandbox.ws().canonicalize().unwrap();
            write(&user_file, &format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", ws.display()));
        }
        let (out, events) =
            exec(&sandbox, &mock, &["--mode", "autonomous", "--dangerously-approve-all"]).await;
        out.expect_code(0);
        assert!(out.stderr.contains(": openapi"), "{}", out.stderr);
        assert!(tool_output(&events).contains("ci__getBuild"), "no such tool: {events:#?}");
        assert!(api.requests().is_empty(), "trusted: {trusted}");
    }
    std::fs::remove_file(sandbox.ws().join(".bosun/config.toml")).unwrap();

    // The user's config names it; with no one to ask, nothing is sent.
    write(&user_file, &entry);
    let (out, events) = exec(&sandbox, &mock, &["--mode", "autonomous"]).await;
    out.expect_code(0);
    assert!(tool_output(&events).contains("needs approval"), "{events:#?}");
    assert!(api.requests().is_empty(), "called without an approval");

    // Approved, it reaches the API with the user's token.
    let (out, events) = exec(&sandbox, &mock, &["--dangerously-approve-all"]).await;
    out.expect_code(0);
    let got = tool_output(&events);
    assert!(got.contains("status: 200") && got.contains("passed"), "{got}");
    assert!(!got.contains("ci-secret-1") && !out.stdout.contains("ci-secret-1"));
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("GET", "/api/builds/7"));
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer ci-secret-1"));
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "build 7 passed");
}
