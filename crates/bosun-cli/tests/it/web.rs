//! The web tools through the real binary (invariant 19: network tools are
//! opt-in and ask; no hidden vendors): a model asking for `web_fetch` gets
//! it only when the user's own config turns it on (a project's config,
//! trusted or not, cannot), and even then nothing is fetched until the call
//! is approved. A real page server on loopback counts what reached it.
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

/// The model calls `web_fetch` on `url`, then answers from what it got.
fn fetching(url: &str) -> Value {
    fixtures(vec![
        json!({"match": {"userMessage": "release notes", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "web_fetch", "arguments": {"url": url}}]}}),
        json!({"match": {"toolResultContains": "Release notes", "turnIndex": 1}, "response": {"content": "read them"}}),
        json!({"match": {"turnIndex": 1}, "response": {"content": "could not read them"}}),
    ])
}

/// `bosun exec --json` on Chat Completions against `mock`, with `extra`
/// flags, run off the async test's threads (the page server runs on them).
async fn exec(sandbox: &Sandbox, mock: &Aimock, extra: &[&str]) -> (Output, Vec<Value>) {
    let mut cmd: Command = sandbox.exec(Api::OpenAiChat, mock);
    cmd.arg("--json").args(extra).arg("read the release notes");
    let out = tokio::task::spawn_blocking(move || run(cmd)).await.unwrap();
    let events = json_events(&out.stdout);
    (out, events)
}

fn tool_output(events: &[Value]) -> String {
    let ends = of_type(events, "tool_end");
    assert_eq!(ends.len(), 1, "{events:#?}");
    assert_eq!(ends[0]["name"], "web_fetch");
    ends[0]["output"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_19_web_fetch_is_offered_only_by_the_users_config_and_fetches_only_when_approved() {
    let pages = Server::start().await.unwrap();
    pages.route("/notes", Route::typed("text/html", b"<h1>Release notes</h1><p>All fixed.</p>"));
    let url = pages.url("/notes");
    let Some(mock) = Aimock::start(&fetching(&url)) else { return };
    let sandbox = task_sandbox();
    let user_file = sandbox.path("xdg/bosun/config.toml");

    // Off by default: the call names no tool of the session.
    let (out, events) = exec(&sandbox, &mock, &["--mode", "autonomous", "--dangerously-approve-all"]).await;
    out.expect_code(0);
    assert!(tool_output(&events).contains("web_fetch"), "{events:#?}");
    assert!(pages.requests().is_empty());

    // A project's config, even a trusted one, cannot turn it on.
    write(&sandbox.ws().join(".bosun/config.toml"), "[web]\nfetch = true\n");
    for trusted in [false, true] {
        if trusted {
            let trust = format!(
                "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                sandbox.ws().canonicalize().unwrap().display()
            );
            write(&user_file, &trust);
        }
        let (out, events) =
            exec(&sandbox, &mock, &["--mode", "autonomous", "--dangerously-approve-all"]).await;
        out.expect_code(0);
        assert!(out.stderr.contains("project config") && out.stderr.contains(": web"), "{}", out.stderr);
        assert_eq!(of_type(&events, "approval_requested").len(), 0, "{events:#?}");
        assert!(pages.requests().is_empty(), "trusted: {trusted}");
    }
    std::fs::remove_file(sandbox.ws().join(".bosun/config.toml")).unwrap();

    // The user's config turns it on; with no one to ask (no terminal), the
    // call is refused, even in autonomous mode, and nothing is fetched.
    write(&user_file, "[web]\nfetch = true\n");
    let (out, events) = exec(&sandbox, &mock, &["--mode", "autonomous"]).await;
    out.expect_code(0);
    let refused = tool_output(&events);
    assert!(refused.contains("needs approval"), "{refused}");
    assert!(pages.requests().is_empty(), "fetched without an approval");

    // Approved, it fetches the page, shown as Markdown under its URL.
    let (out, events) = exec(&sandbox, &mock, &["--dangerously-approve-all"]).await;
    out.expect_code(0);
    let fetched = tool_output(&events);
    assert!(fetched.contains(&format!("URL: {url}")) && fetched.contains("# Release notes"), "{fetched}");
    assert_eq!(pages.requests().len(), 1);
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "read them");
}
