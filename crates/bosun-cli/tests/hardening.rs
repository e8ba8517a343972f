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

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BOSUN: &str = env!("CARGO_BIN_EXE_bosun");
const ANTHROPIC_KEY: &str = "sk-ant-test-9f8e7d6c5b4a39281706";
const OPENAI_KEY: &str = "sk-openai-test-1a2b3c4d5e6f7a8b9c0d";
const GITHUB_TOKEN: &str = "ghp_testtoken0123456789abcdef";
const COMMAND: &str = "cat /proc/$PPID/environ | tr '\\0' '\\n'; grep -i 'core file' /proc/$PPID/limits";

fn aimock_cli() -> Option<PathBuf> {
    let path = std::env::var_os("BOSUN_AIMOCK_CLI").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../test-peers/node_modules/@copilotkit/aimock/dist/cli.js")
    });
    if path.is_file() {
        return Some(path);
    }
    // BOSUN_REQUIRE_PEERS (scripts/test) wins over a skip.
    let skip = std::env::var_os("BOSUN_SKIP_AIMOCK").is_some_and(|v| v == "1");
    if skip && std::env::var_os("BOSUN_REQUIRE_PEERS").is_none() {
        eprintln!("\n!!! SKIPPED (BOSUN_SKIP_AIMOCK=1): aimock is not installed ({}) !!!\n", path.display());
        return None;
    }
    panic!(
        "aimock is not installed at {}: run scripts/test to install it, or set BOSUN_SKIP_AIMOCK=1 to skip",
        path.display()
    );
}

/// A running aimock with its fixtures, killed on drop.
struct Aimock {
    url: String,
    child: Child,
    _fixtures: tempfile::NamedTempFile,
}

impl Aimock {
    fn start(fixtures: &Value) -> Option<Self> {
        let cli = aimock_cli()?;
        let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
        std::fs::write(file.path(), fixtures.to_string()).unwrap();
        let mut child = Command::new("node")
            .arg(cli)
            .args(["-p", "0", "-h", "127.0.0.1", "--log-level", "info", "-f"])
            .arg(file.path())
            .env("AIMOCK_STRICT_TURN_INDEX", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(line[at + "listening on ".len()..].trim().to_owned());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => Some(Self { url, child, _fixtures: file }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("aimock did not start listening within 30 s");
            }
        }
    }

    /// The requests aimock received, oldest first.
    fn journal(&self) -> Vec<Value> {
        let host = self.url.strip_prefix("http://").expect("an http URL");
        let mut stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET /__aimock/journal HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (_, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        serde_json::from_str(body).expect("the journal is a JSON array")
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_shell_cannot_read_the_keys_from_bosuns_environment() {
    let fixtures = json!({"fixtures": [
        {"match": {"userMessage": "environ", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": COMMAND}}]}},
        {"match": {"userMessage": "environ", "turnIndex": 1}, "response": {"content": "Looked."}},
    ]});
    let Some(mock) = Aimock::start(&fixtures) else { return };
    let root = tempfile::tempdir().unwrap();
    for dir in ["home", "xdg", "bosun", "ws"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    let mut child = Command::new(BOSUN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        .env("HOME", root.path().join("home"))
        .env("XDG_CONFIG_HOME", root.path().join("xdg"))
        .env("BOSUN_HOME", root.path().join("bosun"))
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
        .arg("-C")
        .arg(root.path().join("ws"))
        .args(["exec", "--model", "anthropic/claude-test", "--base-url", &mock.url])
        .args(["--json", "--dangerously-approve-all", "read your environ"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bosun starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("bosun hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(!stderr.contains("warning"), "hardening warned: {stderr}");

    let events: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let shell = events
        .iter()
        .find(|e| e["type"] == "tool_end" && e["name"] == "shell")
        .unwrap_or_else(|| panic!("no shell result: {stdout}"));
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
