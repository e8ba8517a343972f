//! The Python MCP SDK (PyPI `mcp`, pinned with hashes in
//! `test-peers/requirements.txt` and installed by `scripts/test` into the
//! venv `test-peers/.venv`): its interpreter found for `bosun-mcp`'s tests,
//! and a server script of the test's run in Streamable HTTP mode.
//!
//! The SDK differs from the npm reference servers where a client can trip:
//! its SSE events end their lines with CRLF and carry no `id:` lines, its
//! tools have an `outputSchema` and return `structuredContent`, and pydantic
//! checks the arguments.
//!
//! A missing or broken venv FAILS the calling test, unless `BOSUN_SKIP_MCP=1`
//! says to skip it (the rule of the other MCP peers); `BOSUN_REQUIRE_PEERS`
//! wins over a skip.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

use crate::skip::{fail, skip_or_fail};

/// Longest wait for the HTTP server to listen: a hang guard, far above the
/// second or so the SDK takes to import and start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What uvicorn (the SDK's HTTP server, pinned with it) logs once it
/// accepts connections, before the address with the port the kernel chose.
const LISTENING: &str = "Uvicorn running on http://127.0.0.1:";

/// Runs the script in `sys.argv[1]` with the arguments after it, and exits
/// when its stdin reaches end of file: the test process holds the other end,
/// so a test binary that is killed (no `Drop` runs) leaves no server behind.
const WATCHDOG: &str = r#"
import os, runpy, sys, threading

def watch():
    sys.stdin.buffer.read()
    os._exit(0)

threading.Thread(target=watch, daemon=True).start()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"#;

/// Where the Python SDK's interpreter should be: `$BOSUN_MCP_PYTHON`, else
/// `test-peers/.venv/bin/python` in this workspace.
pub fn python_sdk_path() -> PathBuf {
    std::env::var_os("BOSUN_MCP_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test-peers/.venv/bin/python")
    })
}

/// The interpreter of [`python_sdk_path`] once it has been seen to import the
/// SDK's server package, or `None` when it is missing (or cannot import it)
/// and the test may skip.
///
/// # Panics
///
/// When it is missing and the test may not skip.
#[track_caller]
pub fn python_sdk() -> Option<PathBuf> {
    let path = python_sdk_path();
    // Once per test binary: importing the SDK takes most of a second.
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let missing = match CHECKED.get_or_init(|| imports_sdk(&path)) {
        Ok(()) => return Some(path),
        Err(missing) => missing,
    };
    if std::env::var_os("BOSUN_REQUIRE_PEERS").is_some() {
        fail(&format!("{missing} (BOSUN_REQUIRE_PEERS is set: the peers are required, no skipping)"));
    }
    skip_or_fail("BOSUN_SKIP_MCP", missing);
    None
}

/// Whether `python` runs and imports `mcp.server.mcpserver` (the 2.x API the
/// tests' servers use); the error says what is wrong and how to mend it.
fn imports_sdk(python: &Path) -> Result<(), String> {
    let mend = "run `scripts/test`, or make the venv with `python3 -m venv test-peers/.venv` and \
                `test-peers/.venv/bin/python -m pip install --require-hashes -r test-peers/requirements.txt`";
    if !python.is_file() {
        return Err(format!("the Python MCP SDK's interpreter is not at {}: {mend}", python.display()));
    }
    let output = Command::new(python)
        .args(["-c", "import mcp.server.mcpserver"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} for the Python MCP SDK: {e}", python.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or("no error output");
    Err(format!("{} cannot import the Python MCP SDK ({last}): {mend}", python.display()))
}

/// A server script built on the Python SDK, serving Streamable HTTP on
/// 127.0.0.1 with a port the kernel picks; killed on drop.
#[derive(Debug)]
pub struct PythonSdkHttp {
    url: String,
    port: u16,
    child: Child,
    /// Held open so that the watchdog keeps the server running.
    _stdin: ChildStdin,
}

impl PythonSdkHttp {
    /// Runs `script` with `args` under the SDK's interpreter and waits until
    /// it listens. The script must call the SDK's
    /// `run("streamable-http", host="127.0.0.1", port=0)` (uvicorn then
    /// logs the port the kernel gave it, so no port is guessed and none can
    /// be taken by another test in between). `None` when the SDK is missing
    /// and the test may skip.
    ///
    /// # Panics
    ///
    /// When the SDK is missing and the test may not skip, or the server
    /// does not listen.
    #[track_caller]
    pub fn start(script: &Path, args: &[&str]) -> Option<Self> {
        let python = python_sdk()?;
        match launch(&python, script, args) {
            Ok(server) => Some(server),
            Err(error) => fail(&error),
        }
    }

    /// The endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for PythonSdkHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn launch(python: &Path, script: &Path, args: &[&str]) -> Result<PythonSdkHttp, String> {
    let mut child = Command::new(python)
        .arg("-c")
        .arg(WATCHDOG)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {} for the Python SDK's HTTP server: {e}", python.display()))?;
    let (Some(stdin), Some(stderr)) = (child.stdin.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the Python SDK's HTTP server's stdin or stderr is not a pipe".into());
    };
    let (tx, rx) = mpsc::channel();
    // Reads until the port shows (keeping what came before, for an error),
    // then keeps draining so that the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        let mut before = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let Some(sender) = tx.as_ref() else { continue };
            let port = line.split_once(LISTENING).and_then(|(_, rest)| {
                rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|p| p.parse::<u16>().ok())
            });
            match port {
                Some(port) => {
                    let _ = sender.send(Ok(port));
                    tx = None;
                }
                None => before.push(line),
            }
        }
        if let Some(sender) = tx {
            let _ = sender.send(Err(before.join("\n")));
        }
    });
    let failed = |mut child: Child, why: String| {
        let _ = child.kill();
        let status = child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
        Err(format!("the Python SDK's HTTP server did not listen ({why}; {status})"))
    };
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(Ok(port)) => {
            Ok(PythonSdkHttp { url: format!("http://127.0.0.1:{port}/mcp"), port, child, _stdin: stdin })
        }
        Ok(Err(stderr)) => failed(child, format!("it closed stderr first; its stderr:\n{stderr}")),
        Err(error) => failed(child, format!("{error:?} within {START_TIMEOUT:?}")),
    }
}
