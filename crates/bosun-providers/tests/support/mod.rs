//! Test support shared by the provider tests: a real HTTP server on
//! 127.0.0.1 that serves canned responses (split into chunks exactly as
//! asked) and records requests, and loaders for the recorded provider
//! streams in `../shared/fixtures/providers/`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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

/// `../shared/fixtures/providers`, or `None` (with a loud message) when the
/// folder is missing, so tests can skip instead of failing.
pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/providers");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "\n!!! SKIPPED: the recorded provider streams are missing ({}); \
             these conformance tests did not run !!!\n",
            dir.display()
        );
        None
    }
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
