//! Shared harness for bosun-mcp's tests: the real servers' configs, a
//! hand-written Python server for what the reference servers cannot do
//! (huge results, recursive schemas, dying mid-call, changing their tools),
//! an event log to wait on, and call helpers.

#![allow(dead_code)] // each test file uses part of it
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use bosun_core::{CallId, ContentPart, Tool, ToolContext, ToolOutput};
use bosun_mcp::{McpServers, ParentEnv, ServerConfig, ServerEvent, StartOptions, StdioTransport};
use tokio_util::sync::CancellationToken;

/// A hang guard for waits on events: far above what any takes.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// bosun's environment as the tests pretend it is: enough to find `node`
/// and `python3`, and a provider key that must never reach a server.
pub fn parent_env() -> ParentEnv {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    ParentEnv::from_vars([
        ("PATH", path.as_str()),
        ("HOME", home.as_str()),
        ("LC_ALL", "C.UTF-8"),
        ("OPENAI_API_KEY", "sk-test-must-not-leak"),
        ("PASSED_THROUGH", "yes"),
    ])
}

/// The everything server on stdio, or `None` when it is missing and the
/// test may skip.
pub fn everything(name: &str) -> Option<ServerConfig> {
    let entry = bosun_testing::mcp::everything_server()?;
    let stdio = StdioTransport::new("node").arg(entry.display().to_string()).arg("stdio");
    Some(ServerConfig::new(name, stdio))
}

/// Receives every event.
pub struct EventLog {
    rx: Receiver<ServerEvent>,
}

impl EventLog {
    /// Options for `workspace` whose events go to the returned log.
    pub fn options(workspace: &Path) -> (StartOptions, EventLog) {
        let (tx, rx): (Sender<ServerEvent>, _) = channel();
        let tx = std::sync::Mutex::new(tx);
        let options = StartOptions::new(workspace, parent_env()).with_events(move |event| {
            let _ = tx.lock().unwrap().send(event.clone());
        });
        (options, EventLog { rx })
    }

    /// Waits (on a blocking thread) for the first event `pick` accepts.
    pub async fn wait_for(self, pick: impl Fn(&ServerEvent) -> bool + Send + 'static) -> (ServerEvent, Self) {
        tokio::task::spawn_blocking(move || {
            loop {
                match self.rx.recv_timeout(HANG_GUARD) {
                    Ok(event) if pick(&event) => return (event, self),
                    Ok(_) => {}
                    Err(error) => panic!("no such event within {HANG_GUARD:?}: {error}"),
                }
            }
        })
        .await
        .unwrap()
    }
}

/// The offered tool named `name`.
pub fn tool(servers: &McpServers, name: &str) -> Arc<dyn Tool> {
    let tools = servers.tools();
    let names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
    tools
        .into_iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name} in {names:?}"))
}

/// A context with its own cancellation token.
pub fn context(cancel: &CancellationToken) -> ToolContext {
    ToolContext::detached(CallId::new_v7(), cancel.clone())
}

/// Runs `name` with `arguments`.
pub async fn call(servers: &McpServers, name: &str, arguments: serde_json::Value) -> ToolOutput {
    tool(servers, name).execute(arguments, context(&CancellationToken::new())).await
}

/// The output's text parts, joined.
pub fn text(output: &ToolOutput) -> String {
    bosun_core::message::concat_text(&output.content)
}

/// Whether the output has an image part.
pub fn has_image(output: &ToolOutput) -> bool {
    output.content.iter().any(|p| matches!(p, ContentPart::Image { .. }))
}

/// Whether process `pid` exists (a zombie counts).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The pids of the processes in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            members.push(pid);
        }
    }
    members
}

/// Writes `script` into `dir` and returns its path.
pub fn write_script(dir: &Path, name: &str, script: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    path
}

/// The Python interpreter itself, not a wrapper on `PATH` (pyenv's shim is
/// a bash script that adds variables of its own to the environment).
pub fn python3() -> String {
    static REAL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    REAL.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
    .clone()
}

/// The Python server as `name`, its script written into `dir`.
pub fn python(dir: &Path, name: &str) -> ServerConfig {
    let script = write_script(dir, "py_peer.py", bosun_testing::mcp::PY_PEER);
    ServerConfig::new(name, StdioTransport::new(python3()).arg(script.display().to_string()))
}

/// Starts `configs` in `workspace` with the test environment.
pub async fn start(workspace: &Path, configs: Vec<ServerConfig>) -> bosun_mcp::Started {
    McpServers::start(configs, StartOptions::new(workspace, parent_env())).await
}
