//! Test support shared by the provider tests: a real HTTP server on
//! 127.0.0.1 that serves canned responses (split into chunks exactly as
//! asked, each held until the test releases it when gated) and records
//! requests, a clock only the test moves, and loaders for the recorded
//! provider streams in `tests/fixtures/providers/`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use bosun_core::Usage;
use bosun_providers::{Api, Sleeper};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// The longest any wait of the support code may take: a hang guard, not a
/// measure of anything.
const NO_HANG: Duration = Duration::from_secs(30);

/// The four wire APIs, in the order the tests run them.
pub const APIS: [Api; 4] = [Api::OpenAiChat, Api::AnthropicMessages, Api::OpenAiResponses, Api::Gemini];

/// An SSE comment line, as servers send to keep a connection alive.
pub const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A `Usage` with cache reads and reasoning tokens.
pub fn usage(input: u64, output: u64, cache_read: u64, reasoning: u64) -> Usage {
    let mut usage = Usage::new(input, output);
    usage.cache_read = cache_read;
    usage.reasoning = reasoning;
    usage
}

/// One canned HTTP response.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, written chunk by chunk (each a separate write and flush).
    pub chunks: Vec<Vec<u8>>,
    /// Stop after this many chunks and hold the connection open, silent.
    pub stall_after: Option<usize>,
    /// When set, each chunk waits for the test to release it.
    pub gate: Option<Gate>,
    /// Read the request, then never answer: no headers, nothing, the
    /// connection held open (or reset, with `reset_after`).
    pub silent: bool,
    /// After this many chunks, reset the connection (TCP RST) instead of
    /// closing it; `Some(0)` resets it right after the headers. When gated,
    /// the reset too waits for a release.
    pub reset_after: Option<usize>,
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
            stall_after: None,
            gate: None,
            silent: false,
            reset_after: None,
        }
    }

    /// A JSON error response.
    pub fn error(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.as_bytes().to_vec()],
            stall_after: None,
            gate: None,
            silent: false,
            reset_after: None,
        }
    }

    /// A connection accepted, its request read, and never answered.
    pub fn silent() -> Self {
        Self { silent: true, ..Self::sse_chunks(Vec::new()) }
    }

    /// A connection accepted, its request read, and reset with no answer.
    pub fn reset_unanswered() -> Self {
        Self { silent: true, reset_after: Some(0), ..Self::sse_chunks(Vec::new()) }
    }

    /// Stops after `chunks` chunks and holds the connection open, silent.
    pub fn stalling_after(mut self, chunks: usize) -> Self {
        self.stall_after = Some(chunks);
        self
    }

    /// Resets the connection after `chunks` chunks.
    pub fn resetting_after(mut self, chunks: usize) -> Self {
        self.reset_after = Some(chunks);
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Holds each chunk (not the headers) until `gate` releases it.
    pub fn with_gate(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }
}

/// The test's hand on a gated response: chunks go out one per release, and
/// the test can wait until a number of them were written.
#[derive(Clone, Debug)]
pub struct Gate {
    permits: Arc<Semaphore>,
    written: Arc<watch::Sender<usize>>,
}

impl Gate {
    pub fn new() -> Self {
        Self { permits: Arc::new(Semaphore::new(0)), written: Arc::new(watch::channel(0).0) }
    }

    /// Lets `chunks` more chunks go.
    pub fn release(&self, chunks: usize) {
        self.permits.add_permits(chunks);
    }

    /// Waits until `count` chunks in all were written and flushed.
    pub async fn written(&self, count: usize) {
        let mut written = self.written.subscribe();
        let all = written.wait_for(|n| *n >= count);
        tokio::time::timeout(NO_HANG, all).await.expect("the server writes what it was let").unwrap();
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
    /// How many requests were read in all.
    received: Arc<watch::Sender<usize>>,
}

impl TestServer {
    pub async fn start(responses: Vec<Canned>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let seen = Arc::clone(&requests);
        let received = Arc::new(watch::channel(0).0);
        let counted = Arc::clone(&received);
        tokio::spawn(async move {
            let mut index = 0;
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let canned = responses[index.min(responses.len() - 1)].clone();
                index += 1;
                let seen = Arc::clone(&seen);
                let counted = Arc::clone(&counted);
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    seen.lock().unwrap().push(request);
                    counted.send_modify(|n| *n += 1);
                    if canned.silent && canned.reset_after.is_some() {
                        reset(socket);
                        return;
                    }
                    if canned.silent {
                        std::future::pending::<()>().await;
                    }
                    let reason = if canned.status == 200 { "OK" } else { "Error" };
                    let mut head = format!("HTTP/1.1 {} {reason}\r\nconnection: close\r\n", canned.status);
                    for (name, value) in &canned.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    for n in 0..=canned.chunks.len() {
                        if canned.stall_after == Some(n) {
                            std::future::pending::<()>().await;
                        }
                        let Some(chunk) = canned.chunks.get(n) else { break };
                        if let Some(gate) = &canned.gate {
                            let Ok(permit) = gate.permits.acquire().await else { return };
                            permit.forget();
                        }
                        if canned.reset_after == Some(n) {
                            reset(socket);
                            return;
                        }
                        if socket.write_all(chunk).await.is_err() || socket.flush().await.is_err() {
                            return;
                        }
                        if let Some(gate) = &canned.gate {
                            gate.written.send_modify(|n| *n += 1);
                        }
                    }
                    if canned.reset_after == Some(canned.chunks.len()) {
                        if let Some(gate) = &canned.gate {
                            let Ok(permit) = gate.permits.acquire().await else { return };
                            permit.forget();
                        }
                        reset(socket);
                        return;
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { url, requests, received }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `count` requests in all were read.
    pub async fn received(&self, count: usize) {
        let mut received = self.received.subscribe();
        let all = received.wait_for(|n| *n >= count);
        tokio::time::timeout(NO_HANG, all).await.expect("the requests arrive").unwrap();
    }
}

/// Closes `socket` with a TCP RST (SO_LINGER 0): the peer reads
/// "connection reset by peer", not an end of stream.
// tokio deprecates `set_linger` because a non-zero linger blocks the thread
// on drop; a zero one resets at once and never blocks.
#[allow(deprecated)]
fn reset(socket: tokio::net::TcpStream) {
    let _ = socket.set_linger(Some(Duration::ZERO));
    drop(socket);
}

/// A URL on 127.0.0.1 where nothing listens: connecting is refused. (The
/// port was just bound and let go, so no other test holds it.)
pub async fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

pub async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
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

/// A clock only the test moves, for `ProviderConfig::with_sleeper`: every
/// wait the transport asks for is recorded, and none ends until `advance`
/// takes the clock to its end. A loaded machine cannot make a wait end
/// early or late, nor a stream look slower than its watchdog.
#[derive(Clone, Debug)]
pub struct ManualClock {
    inner: Arc<ClockInner>,
}

#[derive(Debug)]
struct ClockInner {
    /// What `Sleeper::now` reads when the clock is at zero.
    origin: Instant,
    state: Mutex<ClockState>,
    /// Bumped on every change, for `asked`.
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct ClockState {
    now: Duration,
    waits: Vec<Wait>,
    wakers: Vec<Option<Waker>>,
}

/// One wait the transport asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The clock's time when it was asked for.
    pub at: Duration,
    pub duration: Duration,
    pub state: WaitState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitState {
    /// Still waited on.
    Waiting,
    /// The clock reached its end and the transport saw it end.
    Ended,
    /// Dropped before its end (the thing it guarded happened first).
    Abandoned,
}

impl Default for ManualClock {
    fn default() -> Self {
        let inner =
            ClockInner { origin: Instant::now(), state: Mutex::default(), changed: watch::channel(0).0 };
        Self { inner: Arc::new(inner) }
    }
}

impl ManualClock {
    fn state(&self) -> MutexGuard<'_, ClockState> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn changed(&self) {
        self.inner.changed.send_modify(|n| *n += 1);
    }

    pub fn now(&self) -> Duration {
        self.state().now
    }

    /// Every wait asked for so far, in order.
    pub fn waits(&self) -> Vec<Wait> {
        self.state().waits.clone()
    }

    /// Waits until `count` waits in all were asked for; returns them.
    pub async fn asked(&self, count: usize) -> Vec<Wait> {
        let mut changed = self.inner.changed.subscribe();
        loop {
            let waits = self.waits();
            if waits.len() >= count {
                return waits;
            }
            changed.changed().await.unwrap();
        }
    }

    /// Moves the clock on by `by`, waking every wait that it ends.
    pub fn advance(&self, by: Duration) {
        let mut state = self.state();
        state.now += by;
        let now = state.now;
        let ClockState { waits, wakers, .. } = &mut *state;
        let due: Vec<Waker> = waits
            .iter()
            .zip(wakers.iter_mut())
            .filter(|(wait, _)| wait.state == WaitState::Waiting && wait.at + wait.duration <= now)
            .filter_map(|(_, waker)| waker.take())
            .collect();
        drop(state);
        due.into_iter().for_each(Waker::wake);
        self.changed();
    }
}

/// The calendar time of a [`ManualClock`] at zero: Wed, 21 Oct 2015
/// 07:28:00 GMT, the date RFC 9110's `Retry-After` example gives.
pub const CLOCK_EPOCH: Duration = Duration::from_secs(1_445_412_480);

impl Sleeper for ManualClock {
    fn now(&self) -> Instant {
        self.inner.origin + self.now()
    }

    fn system_time(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + CLOCK_EPOCH + self.now()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut state = self.state();
        let at = state.now;
        state.waits.push(Wait { at, duration, state: WaitState::Waiting });
        state.wakers.push(None);
        let index = state.waits.len() - 1;
        drop(state);
        self.changed();
        Box::pin(ManualSleep { clock: self.clone(), index })
    }
}

struct ManualSleep {
    clock: ManualClock,
    index: usize,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.clock.state();
        let now = state.now;
        let wait = &mut state.waits[self.index];
        if wait.state == WaitState::Ended {
            return Poll::Ready(());
        }
        if wait.at + wait.duration <= now {
            wait.state = WaitState::Ended;
            drop(state);
            self.clock.changed();
            return Poll::Ready(());
        }
        state.wakers[self.index] = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let mut state = self.clock.state();
        let wait = &mut state.waits[self.index];
        if wait.state == WaitState::Waiting {
            wait.state = WaitState::Abandoned;
            state.wakers[self.index] = None;
            drop(state);
            self.clock.changed();
        }
    }
}

/// Runs `work` while moving `clock` on by `by` once `count` waits in all
/// were asked for: how a test lets one chosen wait end and no other.
pub async fn advancing<T>(
    clock: &ManualClock,
    count: usize,
    by: Duration,
    work: impl Future<Output = T>,
) -> T {
    let mover = async {
        clock.asked(count).await;
        clock.advance(by);
        std::future::pending::<()>().await
    };
    tokio::select! {
        output = work => output,
        () = mover => unreachable!(),
    }
}

/// One step of [`scripted`]: what must have happened before the clock moves.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// The server has read this many requests in all.
    Received(usize),
    /// End wait number `n` (from 1) once asked for, moving the clock to its end.
    End(usize),
    /// End the first wait from here on that `matches` picks, once asked for.
    EndNext(fn(&Wait) -> bool),
}

/// Runs `work` (under the hang guard) while taking `steps` in order, the
/// only way any wait on `clock` ends: each step waits for the server to have
/// read a number of requests, or for a chosen wait to have been asked for,
/// and then moves the clock to that wait's end, whatever its duration (a
/// backoff's jitter included).
pub async fn scripted<T>(
    server: Option<&TestServer>,
    clock: &ManualClock,
    steps: &[Step],
    work: impl Future<Output = T>,
) -> T {
    let end = |wait: Wait| {
        let now = clock.now();
        if wait.at + wait.duration > now {
            clock.advance(wait.at + wait.duration - now);
        }
    };
    let mover = async {
        let mut next = 1;
        for step in steps {
            match *step {
                Step::Received(count) => server.expect("a server to count requests").received(count).await,
                Step::End(number) => {
                    end(clock.asked(number).await[number - 1]);
                    next = number + 1;
                }
                Step::EndNext(matches) => loop {
                    let wait = clock.asked(next).await[next - 1];
                    next += 1;
                    if matches(&wait) {
                        end(wait);
                        break;
                    }
                },
            }
        }
        std::future::pending::<()>().await
    };
    let work = async { tokio::time::timeout(NO_HANG, work).await.expect("no hang") };
    tokio::select! {
        output = work => output,
        () = mover => unreachable!(),
    }
}

/// The recorded provider streams, in the repository beside these tests
/// (`tests/fixtures/providers/`, with their sources in its README).
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

/// A recording as the bytes a server would send. Raw `.sse` files are
/// returned unchanged; `.chunks.jsonl` files are re-framed per the fixtures'
/// README: `data: <line>\n\n`, preceded by `event: <type>\n` when
/// `with_event_names` (Anthropic Messages, OpenAI Responses).
pub fn recording(name: &str, with_event_names: bool) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if name.ends_with(".sse") {
        return raw;
    }
    reframe(&String::from_utf8(raw).unwrap(), with_event_names)
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
/// check that a missing peer fails a test unless skipping is
/// asked for. `name` is the full name libtest knows, module path included
/// (`aimock::…`, from `bosun_testing::test_path!`).
pub fn run_alone(name: &str, set: &[(&str, &std::ffi::OsStr)], unset: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    // A skip in the child is the point of the check, not one of this run's:
    // it stays out of the run's skip log unless `set` names one.
    command
        .args(["--exact", name, "--test-threads=1"])
        .env_remove("RUST_TEST_THREADS")
        .env_remove(bosun_testing::SKIP_LOG_VARIABLE);
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

// ==== protocol shapes (issue 13) ====
// Helpers for the wire-shape tests, in `shapes.rs`.
pub mod shapes;

// ==== faults and retries ====
// Helpers for `faults.rs` and `retries.rs`, in `faults.rs`.
pub mod faults;
pub mod routes;

// ==== Anthropic Messages ====
// Helpers for `anthropic.rs` and `anthropic_requests.rs`, in `anthropic.rs`.
pub mod anthropic;

// ==== byte-stable prefixes (issue 16) ====
// Helpers for `stable_prefix.rs`, in `replies.rs`.
pub mod replies;
