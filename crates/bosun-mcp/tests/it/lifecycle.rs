//! Servers that fail to start, hang, print garbage, die mid-call, or ignore
//! every polite request to stop: each failure is one clear error naming the
//! server, the others keep running, and no process is left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_mcp::{ServerConfig, ServerError, StdioTransport};
use serde_json::json;
use support::{alive, call, everything, python, text, write_script};

#[tokio::test]
async fn a_missing_command_is_one_line_naming_the_server_and_the_others_start() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let ghost = ServerConfig::new("ghost", StdioTransport::new("bosun-test-no-such-command"));
    let started = support::start(workspace.path(), vec![ghost, config]).await;
    assert_eq!(started.failures.len(), 1);
    let error = started.failures[0].to_string();
    assert_eq!(error, "MCP server `ghost`: command `bosun-test-no-such-command` not found");
    assert!(matches!(&started.failures[0], ServerError::CommandNotFound { .. }));
    assert_eq!(started.servers.server_names(), ["everything"]);
    let echo = call(&started.servers, "mcp__everything__echo", json!({"message": "ok"})).await;
    assert_eq!(text(&echo), "Echo: ok");
    started.servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_gone_afterwards() {
    let workspace = tempfile::tempdir().unwrap();
    let pid_file = workspace.path().join("pid");
    let hung = StdioTransport::new("sh")
        .args(["-c", r#"echo $$ > "$0"; echo 'waiting for nothing' >&2; exec sleep 1000"#])
        .arg(pid_file.display().to_string());
    let config = ServerConfig::new("hung", hung).with_startup_timeout(Duration::from_millis(300));
    let started = support::start(workspace.path(), vec![config]).await;
    assert_eq!(started.failures.len(), 1);
    let error = &started.failures[0];
    assert!(matches!(error, ServerError::StartupTimeout { .. }), "{error:?}");
    assert!(error.to_string().starts_with("MCP server `hung` did not start within 300 ms"), "{error}");
    assert_eq!(error.stderr(), Some("waiting for nothing"));
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(!alive(pid), "the hung server was killed and reaped");
}

#[tokio::test]
async fn garbage_on_stdout_is_a_clear_failure_not_a_hang() {
    let workspace = tempfile::tempdir().unwrap();
    let script = "import sys\nprint('Server ready! Listening...', flush=True)\nprint('more noise', flush=True)\nsys.stdin.read()\n";
    let path = write_script(workspace.path(), "noisy.py", script);
    let noisy = StdioTransport::new(support::python3()).arg(path.display().to_string());
    let config = ServerConfig::new("noisy", noisy).with_startup_timeout(Duration::from_millis(1500));
    let started = support::start(workspace.path(), vec![config]).await;
    let error = started.failures[0].to_string();
    assert!(
        error.contains(
            "it printed 2 lines on stdout that are not JSON-RPC, the first: `Server ready! Listening...`"
        ),
        "{error}"
    );

    let script = "print('usage: srv --port N')\nraise SystemExit(2)\n";
    let path = write_script(workspace.path(), "exits.py", script);
    let config =
        ServerConfig::new("exits", StdioTransport::new(support::python3()).arg(path.display().to_string()));
    let started = support::start(workspace.path(), vec![config]).await;
    let error = started.failures[0].to_string();
    assert!(
        error.starts_with("MCP server `exits` failed to initialize: it exited (exit status 2)"),
        "{error}"
    );
    assert!(error.contains("`usage: srv --port N`"), "{error}");
}

#[tokio::test]
async fn a_server_dying_mid_call_is_an_error_and_then_unavailable() {
    let workspace = tempfile::tempdir().unwrap();
    let started = support::start(workspace.path(), vec![python(workspace.path(), "py")]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = started.servers;
    let died = call(&servers, "mcp__py__die", json!({})).await;
    assert!(died.is_error);
    assert_eq!(
        text(&died),
        "MCP server `py` exited (exit status 3) during the call of `die`; its stderr ended with:\n\
         py-peer: dying on purpose"
    );
    let later = call(&servers, "mcp__py__env", json!({})).await;
    assert!(later.is_error);
    assert!(
        text(&later).starts_with("MCP server `py` is unavailable: it exited (exit status 3)"),
        "{}",
        text(&later)
    );
    let unavailable = servers.unavailable("py").unwrap();
    assert_eq!(unavailable.to_string(), "MCP server `py` is unavailable: it exited (exit status 3)");
    servers.shutdown().await;
}

#[tokio::test]
async fn an_oversized_message_fails_the_call_naming_its_size_and_the_limit() {
    let workspace = tempfile::tempdir().unwrap();
    // A long tool timeout: the call must fail because of the message, not
    // run into the timeout as it did when rmcp dropped the line silently.
    let config = python(workspace.path(), "py").with_tool_timeout(Duration::from_secs(600));
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = started.servers;
    let huge = call(&servers, "mcp__py__huge", json!({"mib": 100})).await;
    assert!(huge.is_error);
    assert_eq!(
        text(&huge),
        "MCP server `py` sent a message of 100.0 MiB on stdout, over the limit of 16 MiB for one message, \
         so bosun closed the connection during the call of `huge`"
    );
    let later = call(&servers, "mcp__py__env", json!({})).await;
    assert!(
        text(&later).starts_with("MCP server `py` is unavailable: it sent a message of 100.0 MiB"),
        "{}",
        text(&later)
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_second_server_with_the_same_name_is_refused() {
    let workspace = tempfile::tempdir().unwrap();
    let configs = vec![python(workspace.path(), "py"), python(workspace.path(), "py")];
    let started = support::start(workspace.path(), configs).await;
    assert_eq!(started.servers.server_names(), ["py"]);
    assert_eq!(started.failures[0].to_string(), "MCP server `py`: another server has the same name");
    started.servers.shutdown().await;
}

/// A server that ignores stdin closing and `SIGTERM`, with a child in its
/// group; both hold the write end of `fifo` open, so its reader sees the
/// end of file only once every one of them is dead.
const STUBBORN: &str = r#"
import json, signal, subprocess, sys, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child too
held = open(sys.argv[1], "w")
subprocess.Popen(["sleep", "1000"], stdout=held)
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "stubborn", "version": "1"}}})
    elif m.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}})
threading.Event().wait()  # stdin closed: carry on regardless
"#;

/// Makes a fifo and starts reading it on a thread (the open blocks until
/// the server opens it); the receiver gets the bytes read once every writer
/// is gone.
fn watch_fifo(dir: &Path) -> (PathBuf, std::sync::mpsc::Receiver<usize>) {
    let fifo = dir.join("held");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let mut reader = std::fs::File::open(path).unwrap();
        let mut all = Vec::new();
        let _ = reader.read_to_end(&mut all);
        let _ = tx.send(all.len());
    });
    (fifo, rx)
}

fn stubborn(dir: &Path, fifo: &Path) -> ServerConfig {
    let script = write_script(dir, "stubborn.py", STUBBORN);
    let transport = StdioTransport::new(support::python3())
        .arg(script.display().to_string())
        .arg(fifo.display().to_string());
    ServerConfig::new("stubborn", transport).with_shutdown_grace(Duration::from_millis(200))
}

#[tokio::test]
async fn shutdown_escalates_to_killing_the_whole_group() {
    let workspace = tempfile::tempdir().unwrap();
    let (fifo, gone) = watch_fifo(workspace.path());
    let started = support::start(workspace.path(), vec![stubborn(workspace.path(), &fifo)]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let pid = started.servers.process_id("stubborn").unwrap();
    started.servers.shutdown().await;
    assert!(!alive(pid), "the leader is reaped once shutdown returns");
    assert_eq!(gone.recv_timeout(support::HANG_GUARD), Ok(0), "the leader and its child are dead");
}

#[tokio::test]
async fn dropping_the_servers_kills_the_whole_group() {
    let workspace = tempfile::tempdir().unwrap();
    let (fifo, gone) = watch_fifo(workspace.path());
    let started = support::start(workspace.path(), vec![stubborn(workspace.path(), &fifo)]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    drop(started);
    assert_eq!(gone.recv_timeout(support::HANG_GUARD), Ok(0), "no orphan survives the drop");
}

/// The escape suite (`bosun_testing::escape`) as an MCP server's process: a
/// stdio server runs in the session's sandbox, and none of the attempts'
/// effects happen. The "server" runs the attempts into a file and exits, so
/// its start fails once they are done.
#[tokio::test]
async fn invariant_18_escape_suite_holds_in_a_stdio_servers_process() {
    use bosun_core::permission::{PROTECTED_DIRS, PROTECTED_FILES};
    use bosun_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
    use bosun_testing::escape::EscapeScene;

    let scene = EscapeScene::new().unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, scene.workspace())
        .with_protected_names(PROTECTED_DIRS.iter().chain(PROTECTED_FILES).copied())
        .with_default_secrets(&scene.home(), Some(&scene.xdg_config_home()));
    let sandbox = std::sync::Arc::new(Sandbox::new(policy).unwrap());
    let log = scene.workspace().join("attempts.log");
    let script = format!("( {} ) > {} 2>&1 </dev/null", scene.script(), log.display());
    let server = ServerConfig::new("hostile", StdioTransport::new("bash").args(["-c", &script]))
        .with_startup_timeout(Duration::from_secs(60));
    let options =
        bosun_mcp::StartOptions::new(scene.workspace(), support::parent_env()).with_sandbox(sandbox);
    let started = bosun_mcp::McpServers::start(vec![server], options).await;
    assert_eq!(started.failures.len(), 1, "the attempts' server is not an MCP server");
    let output = std::fs::read_to_string(&log).unwrap();
    let violations = scene.violations(&output);
    scene.clean_up_survivors();
    assert!(violations.is_empty(), "{violations:#?}\n{output}");
    assert!(output.contains("== tar --checkpoint-action"), "every attempt ran: {output}");
}
