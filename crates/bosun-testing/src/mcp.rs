//! The MCP reference servers (npm `@modelcontextprotocol/server-everything`
//! and `@modelcontextprotocol/server-filesystem`, installed into
//! `test-peers/` by `scripts/test`), found for `bosun-mcp`'s tests, and the
//! everything server's Streamable HTTP mode as a child process. The Python
//! SDK (PyPI `mcp`, in the venv `test-peers/.venv`): its interpreter,
//! [`python_sdk()`], and a server script of a test's over HTTP,
//! [`PythonSdkHttp`].
//!
//! A missing server FAILS the calling test, unless `BOSUN_SKIP_MCP=1` says
//! to skip it (loudly, see [`skip_or_fail`]); `BOSUN_REQUIRE_PEERS` (set by
//! `scripts/test`) wins over a skip.
//!
//! The everything server's HTTP mode listens on `PORT` on **all**
//! interfaces and has no host option. [`EverythingHttp`] keeps it on
//! loopback with a `--require` shim that passes `127.0.0.1` to `listen` and
//! starts it with `PORT=0`, so the kernel picks a free port (no race with
//! other tests) and the shim reports it on stderr. A network namespace
//! (`unshare -n`) would do too, but the test process could not reach it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::skip::{fail, skip_or_fail};

mod python_sdk;
pub use python_sdk::{PythonSdkHttp, python_sdk, python_sdk_path};

/// Longest wait for the HTTP server to listen: a hang guard.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What the shim prints before the port.
const LISTENING: &str = "bosun-test-listening ";

/// Forces `listen(port, cb)` onto 127.0.0.1 and reports the real port.
const LOOPBACK_SHIM: &str = r#"
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portFirst = typeof args[0] === "number" || typeof args[0] === "string";
  if (portFirst && typeof args[1] !== "string") {
    this.once("listening", () => process.stderr.write(`bosun-test-listening ${this.address().port}\n`));
    return listen.call(this, Number(args[0]), "127.0.0.1", ...args.slice(1));
  }
  return listen.apply(this, args);
};
"#;

fn peer(variable: &str, package: &str) -> PathBuf {
    std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../test-peers/node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js")
    })
}

/// Where the everything server's entry point should be:
/// `$BOSUN_MCP_EVERYTHING`, else `test-peers/`'s copy.
pub fn everything_path() -> PathBuf {
    peer("BOSUN_MCP_EVERYTHING", "server-everything")
}

/// Where the filesystem server's entry point should be:
/// `$BOSUN_MCP_FILESYSTEM`, else `test-peers/`'s copy.
pub fn filesystem_path() -> PathBuf {
    peer("BOSUN_MCP_FILESYSTEM", "server-filesystem")
}

/// The everything server's `dist/index.js` (run it with `node … stdio`), or
/// `None` when it is missing and the test may skip.
///
/// # Panics
///
/// When it is missing and the test may not skip.
#[track_caller]
pub fn everything_server() -> Option<PathBuf> {
    found(everything_path())
}

/// The filesystem server's `dist/index.js` (run it with `node … DIR`), or
/// `None` when it is missing and the test may skip.
///
/// # Panics
///
/// When it is missing and the test may not skip.
#[track_caller]
pub fn filesystem_server() -> Option<PathBuf> {
    found(filesystem_path())
}

#[track_caller]
fn found(path: PathBuf) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path);
    }
    let missing = format!(
        "the MCP test server is not installed at {}: run `scripts/test` or `npm ci --prefix test-peers`",
        path.display()
    );
    if std::env::var_os("BOSUN_REQUIRE_PEERS").is_some() {
        fail(&format!("{missing} (BOSUN_REQUIRE_PEERS is set: the peers are required, no skipping)"));
    }
    skip_or_fail("BOSUN_SKIP_MCP", &missing);
    None
}

/// The everything server in Streamable HTTP mode on a free port of
/// 127.0.0.1, killed on drop.
#[derive(Debug)]
pub struct EverythingHttp {
    url: String,
    child: Child,
    _shim: tempfile::NamedTempFile,
}

impl EverythingHttp {
    /// Starts it and waits until it listens. `None` when the server is
    /// missing and the test may skip.
    ///
    /// # Panics
    ///
    /// When it is missing and the test may not skip, or it does not listen.
    #[track_caller]
    pub fn start() -> Option<Self> {
        let entry = everything_server()?;
        match launch(&entry) {
            Ok(server) => Some(server),
            Err(error) => fail(&error),
        }
    }

    /// The endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn launch(entry: &std::path::Path) -> Result<EverythingHttp, String> {
    let shim = tempfile::Builder::new()
        .prefix("bosun-loopback-")
        .suffix(".cjs")
        .tempfile()
        .map_err(|e| format!("cannot create the loopback shim: {e}"))?;
    std::fs::write(shim.path(), LOOPBACK_SHIM).map_err(|e| format!("cannot write the loopback shim: {e}"))?;
    let mut child = Command::new("node")
        .arg("--require")
        .arg(shim.path())
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `node {}` for the MCP HTTP server: {e}", entry.display()))?;
    let Some(stderr) = child.stderr.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the MCP HTTP server's stderr is not a pipe".into());
    };
    let (tx, rx) = mpsc::channel();
    // Reads until the port shows, then keeps draining so that the server
    // never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(port) = line.strip_prefix(LISTENING)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(port.trim().to_owned());
            }
        }
    });
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(port) => Ok(EverythingHttp { url: format!("http://127.0.0.1:{port}/mcp"), child, _shim: shim }),
        Err(error) => {
            let _ = child.kill();
            let status = child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
            Err(format!("the MCP HTTP server did not listen ({error:?}; {status})"))
        }
    }
}

/// A hand-written MCP server for what the reference servers cannot be made
/// to do: newline-delimited JSON-RPC on stdio, `initialize`, `tools/list`,
/// `tools/call`, nothing else. Its tools: `big` (a 10 MB result), `env`
/// (its environment), `die` (exits 3), `swap` (changes its list: `big`
/// gone, `env` changed, `fresh` new, then `notifications/tools/list_changed`),
/// `hold` (never answers), `fail` (a JSON-RPC error), `flood` (`count`
/// progress notifications, 200,000 by default, then a result), `huge` (a
/// result of `mib` MiB on one line, 100 by default), `tree` (a recursive
/// schema), `point` (a `$ref` to inline). Run it with `python3`.
pub const PY_PEER: &str = r##"
import json, os, subprocess, sys

def tool(name, schema=None, description=None):
    t = {"name": name, "inputSchema": schema or {"type": "object", "properties": {}}}
    if description:
        t["description"] = description
    return t

RECURSIVE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}},
    "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
}
DEFS = {
    "type": "object",
    "properties": {"p": {"$ref": "#/definitions/point"}},
    "required": ["p"],
    "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
}
tools = [tool(n) for n in ["big", "env", "die", "swap", "hold", "fail", "flood", "huge"]] + [tool("tree", RECURSIVE), tool("point", DEFS)]

def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def result(id, text):
    send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "py-peer", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
    elif method == "tools/call":
        name = params.get("name")
        if name == "big":
            result(id, "x" * 10_000_000)
        elif name == "env":
            result(id, json.dumps(dict(os.environ)))
        elif name == "point":
            result(id, "x=%s" % params["arguments"]["p"]["x"])
        elif name == "die":
            log("py-peer: dying on purpose")
            os._exit(3)
        elif name == "swap":
            tools = [t for t in tools if t["name"] != "big"]
            tools = [tool("env", None, "changed") if t["name"] == "env" else t for t in tools]
            tools.append(tool("fresh"))
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            result(id, "swapped")
        elif name == "hold":
            log("holding %s" % id)  # and never answers
        elif name == "flood":
            token = (params.get("_meta") or {}).get("progressToken")
            total = (params.get("arguments") or {}).get("count", 200_000)
            for i in range(1, total + 1):
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": i, "total": total}})
            result(id, "flooded %d" % total)
        elif name == "huge":
            size = (params.get("arguments") or {}).get("mib", 100) * 1024 * 1024
            head = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "' % json.dumps(id)
            sys.stdout.write(head)
            chunk = "x" * (1024 * 1024)
            for _ in range(size // len(chunk)):
                sys.stdout.write(chunk)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "backend is down"}})
        else:
            send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "unknown"}], "isError": True}})
    elif method == "notifications/cancelled":
        log("cancelled %s: %s" % (params.get("requestId"), params.get("reason")))
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"##;
