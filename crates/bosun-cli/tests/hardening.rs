//! Process hardening, end to end: the real `bosun` binary, started with API
//! keys in its environment, runs (through the shell tool, against the real
//! aimock server) a command that reads its parent's environment and limits:
//! `/proc/$PPID/environ` is bosun's. The keys' values must not be there, in
//! the tool's output or in what reached the model.
//!
//! The tests run as root here, and root reads a non-dumpable process's
//! `/proc/PID/environ` all the same: only overwriting the values in place
//! (harden.rs) passes this test.
//!
//! Without aimock this test FAILS, unless `BOSUN_SKIP_AIMOCK=1` says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::json;
use support::*;

const ANTHROPIC_KEY: &str = "sk-ant-test-9f8e7d6c5b4a39281706";
const OPENAI_KEY: &str = "sk-openai-test-1a2b3c4d5e6f7a8b9c0d";
const GITHUB_TOKEN: &str = "ghp_testtoken0123456789abcdef";
const COMMAND: &str = "cat /proc/$PPID/environ | tr '\\0' '\\n'; grep -i 'core file' /proc/$PPID/limits";

#[test]
fn the_shell_cannot_read_the_keys_from_bosuns_environment() {
    let fixtures = json!({"fixtures": [
        {"match": {"userMessage": "environ", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": COMMAND}}]}},
        {"match": {"userMessage": "environ", "turnIndex": 1}, "response": {"content": "Looked."}},
    ]});
    let Some(mock) = Aimock::start(&fixtures) else { return };
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.bosun();
    cmd.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
        .args(["exec", "--model", "anthropic/claude-test", "--base-url", mock.url()])
        .args(["--json", "--dangerously-approve-all", "read your environ"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(!out.stderr.contains("warning"), "hardening warned: {}", out.stderr);

    let events = json_events(&out.stdout);
    let shell = of_type(&events, "tool_end")
        .into_iter()
        .find(|e| e["name"] == "shell")
        .unwrap_or_else(|| panic!("no shell result: {}", out.stdout));
    let output = shell["output"].as_str().unwrap();
    // The next request carries the result to the model.
    let sent: String = mock.journal().iter().map(|r| r["body"].to_string()).collect();
    for seen in [output, sent.as_str()] {
        // It did read bosun's environment …
        assert!(seen.contains("BOSUN_HOME="), "not bosun's environment: {seen}");
        // … and no key was in it.
        for key in [ANTHROPIC_KEY, OPENAI_KEY, GITHUB_TOKEN, "sk-ant-test", "ghp_test"] {
            assert!(!seen.contains(key), "{key} is readable through /proc/$PPID/environ:\n{seen}");
        }
    }
    // No core dumps: `Max core file size  0  0  bytes` (soft and hard).
    let core = output.lines().find(|l| l.starts_with("Max core file size")).expect("the core limit");
    assert_eq!(core.split_whitespace().collect::<Vec<_>>()[4..6], ["0", "0"], "{core}");
}
