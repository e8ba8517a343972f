//! Test support shared by the provider tests: a real HTTP server on
//! 127.0.0.1 that serves canned responses (split into chunks exactly as
//! asked) and records requests, and loaders for the recorded provider
//! streams in `../shared/fixtures/providers/` (`$BOSUN_FIXTURES/providers/`
//! when set). A missing fixture folder FAILS the tests that need it, unless
//! `BOSUN_SKIP_FIXTURES=1` says to skip.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned HTTP response.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, written chunk by chunk (each a separate write and flush).
    pub chunks: Vec<Vec<u8>>,
    /// Pause before each chunk (paused tokio time makes this instant).
    pub pause: Duration,
    /// Stop after this many chunks and hold the connection open, silent.
    pub stall_after: Option<usize>,
}

impl Canned {
    /// An SSE response with the whole body in one chunk.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::sse_chunks(vec![body.into()])
    }

    /// An SSE response written in the given chunks.
    pub fn sse_chunks(chunks: Vec<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            pause: Duration::ZERO,
            stall_after: None,
        }
    }

    /// A JSON error response.
    pub fn error(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.as_bytes().to_vec()],
            pause: Duration::ZERO,
            stall_after: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A server answering each connection with the next canned response (the
/// last one repeats).
pub struct TestServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    pub async fn start(responses: Vec<Canned>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let seen = Arc::clone(&requests);
        tokio::spawn(async move {
            let mut index = 0;
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let canned = responses[index.min(responses.len() - 1)].clone();
                index += 1;
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    seen.lock().unwrap().push(request);
                    let reason = if canned.status == 200 { "OK" } else { "Error" };
                    let mut head = format!("HTTP/1.1 {} {reason}\r\nconnection: close\r\n", canned.status);
                    for (name, value) in &canned.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    for (n, chunk) in canned.chunks.iter().enumerate() {
                        if canned.stall_after == Some(n) {
                            std::future::pending::<()>().await;
                        }
                        if !canned.pause.is_zero() {
                            tokio::time::sleep(canned.pause).await;
                        }
                        if socket.write_all(chunk).await.is_err() || socket.flush().await.is_err() {
                            return;
                        }
                    }
                    if canned.stall_after == Some(canned.chunks.len()) {
                        std::future::pending::<()>().await;
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':').map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned())))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buffer[header_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded { method, path, headers, body })
}

/// Whether a test may skip for want of something: only when `variable` is
/// `1`. Then it says so with one line starting `!!! SKIPPED (<variable>=1)`,
/// written straight to stderr, past the test harness's capture, so that it
/// shows in every run and `scripts/test` counts it (once per test); else it
/// fails the test, naming `missing` and the way to skip.
pub fn skip_or_fail(variable: &str, missing: &str) {
    if std::env::var_os(variable).is_none_or(|value| value != "1") {
        panic!("{missing} (set {variable}=1 to skip instead)");
    }
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.contains(&test) {
        return;
    }
    said.push(test.clone());
    // One write, so that the harness's own output cannot land inside it.
    let line = format!("\n!!! SKIPPED ({variable}=1) {test}: {missing}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The shared fixtures, `$BOSUN_FIXTURES` when set, else `../shared/fixtures`
/// beside the workspace.
pub fn fixtures_root() -> PathBuf {
    std::env::var_os("BOSUN_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"))
}

/// The recorded provider streams, `providers/` in [`fixtures_root`]. When the
/// folder is missing the test FAILS, unless `BOSUN_SKIP_FIXTURES=1`: then
/// `None`, said loudly, and the test returns having tested nothing.
pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = fixtures_root().join("providers");
    if dir.is_dir() {
        return Some(dir);
    }
    skip_or_fail(
        "BOSUN_SKIP_FIXTURES",
        &format!(
            "the recorded provider streams are missing ({}): put the shared fixtures there or point \
             BOSUN_FIXTURES at them",
            dir.display()
        ),
    );
    None
}

/// A recording as the bytes a server would send. Raw `.sse` files are
/// returned unchanged; `.chunks.jsonl` files are re-framed per the fixtures'
/// README: `data: <line>\n\n`, preceded by `event: <type>\n` when
/// `with_event_names` (Anthropic Messages, OpenAI Responses).
pub fn recording(name: &str, with_event_names: bool) -> Option<Vec<u8>> {
    let path = fixtures_dir()?.join(name);
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if name.ends_with(".sse") {
        return Some(raw);
    }
    Some(reframe(&String::from_utf8(raw).unwrap(), with_event_names))
}

/// Re-frames chunks.jsonl lines as SSE.
pub fn reframe(jsonl: &str, with_event_names: bool) -> Vec<u8> {
    let mut out = String::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        if with_event_names {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push_str(&format!("event: {}\n", value["type"].as_str().unwrap()));
        }
        out.push_str(&format!("data: {line}\n\n"));
    }
    out.into_bytes()
}

/// Splits `bytes` at the given cut points (sorted and deduplicated here).
pub fn split_at(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// Runs the test `name` of this test binary alone in a child process, with
/// `set` added to its environment and `unset` removed from it: how the tests
/// check that a missing peer or fixture fails a test unless skipping is
/// asked for.
pub fn run_alone(name: &str, set: &[(&str, &std::ffi::OsStr)], unset: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", name, "--test-threads=1"]).env_remove("RUST_TEST_THREADS");
    for variable in unset {
        command.env_remove(variable);
    }
    for (variable, value) in set {
        command.env(variable, value);
    }
    command.output().unwrap()
}

/// A child's stdout and stderr, for assertion messages.
pub fn describe(output: &std::process::Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Whether a child printed a line starting `!!! SKIPPED (<variable>=1)`.
pub fn said_skipped(output: &std::process::Output, variable: &str) -> bool {
    let prefix = format!("!!! SKIPPED ({variable}=1)");
    String::from_utf8_lossy(&output.stderr).lines().any(|line| line.starts_with(&prefix))
}

/// Checks that each of `tests` (tests of this binary that read the recorded
/// streams) FAILS when the fixtures are missing, and passes, saying
/// `!!! SKIPPED (BOSUN_SKIP_FIXTURES=1)`, only when told to skip.
pub fn assert_fixture_tests_cannot_skip_silently(tests: &[&str]) {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("no-fixtures-here");
    for test in tests {
        let failed = run_alone(
            test,
            &[("BOSUN_FIXTURES", missing.as_os_str())],
            &["BOSUN_SKIP_FIXTURES", "BOSUN_REQUIRE_PEERS"],
        );
        assert!(!failed.status.success(), "{test} passed without its fixtures:\n{}", describe(&failed));
        assert!(
            String::from_utf8_lossy(&failed.stdout).contains("BOSUN_SKIP_FIXTURES=1"),
            "{test}: the failure names the way to skip:\n{}",
            describe(&failed)
        );
        assert!(!said_skipped(&failed, "BOSUN_SKIP_FIXTURES"), "{test}:\n{}", describe(&failed));

        let skipped = run_alone(
            test,
            &[("BOSUN_FIXTURES", missing.as_os_str()), ("BOSUN_SKIP_FIXTURES", "1".as_ref())],
            &["BOSUN_REQUIRE_PEERS"],
        );
        assert!(skipped.status.success(), "{test} failed though told to skip:\n{}", describe(&skipped));
        assert!(
            said_skipped(&skipped, "BOSUN_SKIP_FIXTURES"),
            "{test} skipped without saying so:\n{}",
            describe(&skipped)
        );
    }
}
