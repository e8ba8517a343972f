//! The real aimock mock-LLM server (npm `@copilotkit/aimock`, installed into
//! `test-peers/` by `scripts/test`) as a child process: started with a
//! fixture file on a free port of 127.0.0.1, waited for until it listens,
//! killed on drop.
//!
//! A missing aimock FAILS the calling test, unless `BOSUN_SKIP_AIMOCK=1`
//! says to skip it (loudly, on stderr, see [`skip_or_fail`]);
//! `BOSUN_REQUIRE_PEERS` (set by `scripts/test`) wins over a skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::skip::{fail, skip_or_fail};

/// Longest wait for aimock to start listening: a hang guard, far above the
/// second or so it takes.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for aimock's journal.
const JOURNAL_TIMEOUT: Duration = Duration::from_secs(10);

/// What aimock prints before its address once it accepts connections.
const LISTENING: &str = "listening on ";

/// Where aimock's CLI should be: `$BOSUN_AIMOCK_CLI`, else `test-peers/`'s
/// copy in this workspace.
pub fn aimock_path() -> PathBuf {
    std::env::var_os("BOSUN_AIMOCK_CLI").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../test-peers/node_modules/@copilotkit/aimock/dist/cli.js")
    })
}

/// aimock's CLI ([`aimock_path`]), or `None` when it is missing and the
/// test may skip: `BOSUN_SKIP_AIMOCK=1` and no `BOSUN_REQUIRE_PEERS`.
///
/// # Panics
///
/// When aimock is missing and the test may not skip.
#[track_caller]
pub fn aimock_cli() -> Option<PathBuf> {
    let path = aimock_path();
    if path.is_file() {
        return Some(path);
    }
    let missing = format!(
        "aimock is not installed at {}: run `scripts/test` or `npm ci --prefix test-peers`",
        path.display()
    );
    if std::env::var_os("BOSUN_REQUIRE_PEERS").is_some() {
        fail(&format!("{missing} (BOSUN_REQUIRE_PEERS is set: the peers are required, no skipping)"));
    }
    skip_or_fail("BOSUN_SKIP_AIMOCK", &missing);
    None
}

/// A running aimock with its own fixtures, killed on drop.
///
/// A fixture's `turnIndex` is strict (`AIMOCK_STRICT_TURN_INDEX=1`): it
/// answers only a request holding exactly that many assistant messages, so
/// no test passes on a fixture written for another turn.
#[derive(Debug)]
pub struct Aimock {
    url: String,
    child: Child,
    _fixtures: tempfile::NamedTempFile,
}

impl Aimock {
    /// Starts aimock serving `fixtures` (its fixture file's JSON,
    /// `{"fixtures": [...]}`). `None` when aimock is missing and the test
    /// may skip (see [`aimock_cli`]).
    ///
    /// # Panics
    ///
    /// When aimock is missing and the test may not skip, or it does not
    /// start listening.
    #[track_caller]
    pub fn start(fixtures: &Value) -> Option<Self> {
        Self::start_with(fixtures, &[])
    }

    /// [`Aimock::start`] with more command-line arguments (`--latency`,
    /// `--chaos-drop`, …).
    ///
    /// # Panics
    ///
    /// As [`Aimock::start`].
    #[track_caller]
    pub fn start_with(fixtures: &Value, args: &[&str]) -> Option<Self> {
        let cli = aimock_cli()?;
        match launch(&cli, fixtures, args) {
            Ok(aimock) => Some(aimock),
            Err(error) => fail(&error),
        }
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests aimock received, oldest first.
    ///
    /// # Panics
    ///
    /// When the journal cannot be read.
    #[track_caller]
    pub fn journal(&self) -> Vec<Value> {
        match read_journal(&self.url) {
            Ok(journal) => journal,
            Err(error) => fail(&format!("aimock's journal: {error}")),
        }
    }

    /// The last request's body, as JSON text.
    ///
    /// # Panics
    ///
    /// When the journal cannot be read or holds no request.
    #[track_caller]
    pub fn last_request(&self) -> String {
        match self.journal().last() {
            Some(request) => request["body"].to_string(),
            None => fail("aimock saw no request"),
        }
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn launch(cli: &std::path::Path, fixtures: &Value, args: &[&str]) -> Result<Aimock, String> {
    let file = tempfile::Builder::new()
        .prefix("aimock-fixtures-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("cannot create aimock's fixture file: {e}"))?;
    std::fs::write(file.path(), fixtures.to_string())
        .map_err(|e| format!("cannot write aimock's fixture file: {e}"))?;
    let mut child = Command::new("node")
        .arg(cli)
        .args(["-p", "0", "-h", "127.0.0.1", "--log-level", "info", "-f"])
        .arg(file.path())
        .args(args)
        .env("AIMOCK_STRICT_TURN_INDEX", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `node {}` for aimock: {e}", cli.display()))?;
    let Some(stdout) = child.stdout.take() else {
        return Err(stop(child, "aimock's stdout is not a pipe".into()));
    };
    let (tx, rx) = mpsc::channel();
    // Reads until the address shows, then keeps draining so that aimock
    // never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find(LISTENING)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(line[at + LISTENING.len()..].trim().to_owned());
            }
        }
    });
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(url) => Ok(Aimock { url, child, _fixtures: file }),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(stop(child, format!("aimock did not start listening within {} s", START_TIMEOUT.as_secs())))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let status = child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
            Err(format!("aimock exited before listening ({status})"))
        }
    }
}

/// Kills a child that failed to start, leaving nothing behind.
fn stop(mut child: Child, why: String) -> String {
    let _ = child.kill();
    let _ = child.wait();
    why
}

fn read_journal(url: &str) -> Result<Vec<Value>, String> {
    let host = url.strip_prefix("http://").ok_or_else(|| format!("not an http URL: {url}"))?;
    let mut stream = TcpStream::connect(host).map_err(|e| format!("cannot connect to {host}: {e}"))?;
    stream.set_read_timeout(Some(JOURNAL_TIMEOUT)).map_err(|e| e.to_string())?;
    write!(stream, "GET /__aimock/journal HTTP/1.0\r\nHost: {host}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(|e| e.to_string())?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or_else(|| format!("not HTTP: {response}"))?;
    if !head.lines().next().unwrap_or_default().contains(" 200 ") {
        return Err(format!("not a success: {head}"));
    }
    serde_json::from_str(body).map_err(|e| format!("not a JSON array ({e}): {body}"))
}
