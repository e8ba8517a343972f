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
//! The OS sandbox (on by default) hides bosun from the shell altogether: the
//! first test runs with `--sandbox off` to hold the hardening that users of
//! that flag still get; the second shows what the sandbox adds, and the
//! third runs the whole escape suite as a hostile model's tool call.
//!
//! Without aimock these tests FAIL, unless `BOSUN_SKIP_AIMOCK=1` says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::process::Command;

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
        .args(["--json", "--dangerously-approve-all", "--sandbox", "off", "read your environ"]);
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

#[test]
fn in_the_sandbox_the_shell_cannot_see_bosun_at_all() {
    let fixtures = json!({"fixtures": [
        {"match": {"userMessage": "environ", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command":
                "echo ppid=$PPID; cat /proc/$PPID/environ; ls /proc | grep -c '^[0-9]'"}}]}},
        {"match": {"userMessage": "environ", "turnIndex": 1}, "response": {"content": "Looked."}},
    ]});
    let Some(mock) = Aimock::start(&fixtures) else { return };
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.bosun();
    cmd.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .args(["exec", "--model", "anthropic/claude-test", "--base-url", mock.url()])
        .args(["--json", "--dangerously-approve-all", "read your environ"]);
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    let shell = of_type(&events, "tool_end").into_iter().find(|e| e["name"] == "shell").unwrap();
    let output = shell["output"].as_str().unwrap();
    // PID 1 of its own namespace: bosun, its parent, is not in it.
    assert!(output.contains("ppid=0"), "{output}");
    assert!(!output.contains("BOSUN_HOME="), "{output}");
    assert!(!output.contains(ANTHROPIC_KEY), "{output}");
}

/// A hostile model in autonomous mode, every ask approved (the rules would
/// ask for this line: it names protected paths), runs every attempt of the
/// escape suite (`bosun_testing::escape`) as one shell call, in a workspace whose
/// `.git/config` is hostile too, with bosun's config under a non-default
/// `XDG_CONFIG_HOME`: nothing outside the workspace or in a protected path
/// changes, no secret is read, nothing reaches the network, nothing
/// outlives the call.
#[test]
fn invariant_18_a_hostile_model_in_autonomous_mode_changes_nothing_outside_the_workspace() {
    let scene = bosun_testing::escape::EscapeScene::new().unwrap();
    let fixtures = json!({"fixtures": [
        {"match": {"userMessage": "escape", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": scene.script()}}]}},
        {"match": {"userMessage": "escape", "turnIndex": 1}, "response": {"content": "Tried."}},
    ]});
    let Some(mock) = Aimock::start(&fixtures) else { return };
    let store = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(bosun_bin());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        .env("HOME", scene.home())
        .env("XDG_CONFIG_HOME", scene.xdg_config_home())
        .env("BOSUN_HOME", store.path())
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .arg("-C")
        .arg(scene.workspace())
        .args(["exec", "--model", "anthropic/claude-test", "--base-url", mock.url()])
        .args(["--json", "--mode", "autonomous", "--dangerously-approve-all", "escape"]);
    let out = run(cmd);
    out.expect_code(0);
    // The whole result, as the next request carried it to the model (the
    // `tool_end` event holds a preview).
    let results: Vec<String> = mock
        .journal()
        .iter()
        .flat_map(|request| request["body"]["messages"].as_array().cloned().unwrap_or_default())
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results.len(), 1, "one shell result reached the model");
    let output = results[0].as_str();
    let violations = scene.violations(output);
    scene.clean_up_survivors();
    assert!(violations.is_empty(), "{violations:#?}\n{output}");
    assert!(output.contains("== tar --checkpoint-action"), "every attempt ran: {output}");
}
