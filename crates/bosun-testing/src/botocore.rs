//! AWS stand-ins written in Python on botocore (the Bedrock runtime and STS
//! peers in `crates/bosun-providers/tests/peers/`): started under the test
//! venv's interpreter, which must import botocore, and killed when dropped.
//! Each peer prints `PORT <n>` once it listens.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running peer and its loopback URL.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `script` with `args` under the test venv's Python
/// ([`crate::mcp::python_sdk_path`]). `None` only when the venv cannot
/// import botocore and the test may skip (`BOSUN_SKIP_MCP`).
///
/// # Panics
///
/// When botocore is missing and the test may not skip, or the peer does
/// not start.
#[allow(clippy::expect_used, clippy::panic)]
pub fn start(script: &Path, args: &[&str]) -> Option<Peer> {
    let python = crate::mcp::python_sdk_path();
    let imports = Command::new(&python).args(["-c", "import botocore"]).output();
    if !imports.is_ok_and(|o| o.status.success()) {
        crate::skip_or_fail(
            "BOSUN_SKIP_MCP",
            &format!(
                "{} cannot import botocore: run scripts/test (test-peers/requirements.txt)",
                python.display()
            ),
        );
        return None;
    }
    let mut child = Command::new(&python)
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufReader::new(stdout).read_line(&mut line).expect("the peer's first line");
    let port =
        line.trim().strip_prefix("PORT ").unwrap_or_else(|| panic!("{} said {line:?}", script.display()));
    Some(Peer { url: format!("http://127.0.0.1:{port}"), child })
}
