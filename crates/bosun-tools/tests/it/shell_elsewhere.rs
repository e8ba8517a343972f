//! `shell` calls handed to a [`ShellRunner`] (an editor's terminal): only a
//! call the sandbox confines goes there, whole (its arguments and the
//! sandbox's policy), and [`ShellCall::run`] on the far side runs it in the
//! same sandbox, refusing any call that would run unconfined.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext, ToolFuture, ToolOutput};
use bosun_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
use bosun_tools::{ShellCall, ShellCallError, ShellConfig, ShellRunner, ShellTool};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
struct Recorder {
    calls: Mutex<Vec<ShellCall>>,
}

impl ShellRunner for Recorder {
    fn run<'a>(&'a self, call: ShellCall, _context: ToolContext) -> ToolFuture<'a> {
        self.calls.lock().unwrap().push(call);
        Box::pin(async { ToolOutput::text("ran elsewhere") })
    }
}

fn context() -> ToolContext {
    ToolContext::detached(CallId::new_v7(), CancellationToken::new())
}

/// A confining sandbox over `root`, or `None` where the kernel has none.
fn sandbox(root: &std::path::Path) -> Option<Arc<Sandbox>> {
    let sandbox = Sandbox::new(SandboxPolicy::new(SandboxMode::WorkspaceWrite, root)).ok()?;
    sandbox.confines().then(|| Arc::new(sandbox))
}

#[tokio::test]
async fn a_confined_call_goes_to_the_runner_and_runs_there_in_the_same_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some(sandbox) = sandbox(&root) else { return };
    let recorder = Arc::new(Recorder::default());
    let config = ShellConfig::from_process_env(&root).with_sandbox(sandbox).with_runner(recorder.clone());
    let tool = ShellTool::new(config);
    let arguments = json!({"command": "echo far; touch made.txt"});
    let output = tool.execute(arguments.clone(), context()).await;
    assert_eq!(concat_text(&output.content), "ran elsewhere");
    assert!(!root.join("made.txt").exists(), "the call also ran here");
    let call = recorder.calls.lock().unwrap().pop().unwrap();
    assert_eq!(call.arguments, arguments);
    assert_eq!(call.root, root);
    assert_eq!(call.policy.workspace, root);

    // The far side, from the call as serialised: it runs, confined, its
    // output echoed as it comes.
    let call: ShellCall = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
    let echoed = Arc::new(Mutex::new(Vec::new()));
    let sink = echoed.clone();
    let echo: bosun_tools::OutputEcho = Arc::new(move |chunk| sink.lock().unwrap().extend_from_slice(chunk));
    let output = call.run_echoing(context(), Some(echo)).await.unwrap();
    let text = concat_text(&output.content);
    assert!(text.starts_with("exit code: 0\nfar"), "{text}");
    assert_eq!(*echoed.lock().unwrap(), b"far\n");
    assert!(root.join("made.txt").exists());
}

#[tokio::test]
async fn a_call_that_would_leave_the_sandbox_never_goes_to_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some(sandbox) = sandbox(&root) else { return };
    let recorder = Arc::new(Recorder::default());
    let config = ShellConfig::from_process_env(&root).with_sandbox(sandbox).with_runner(recorder.clone());
    let output =
        ShellTool::new(config).execute(json!({"command": "echo here", "sandbox": "off"}), context()).await;
    assert!(concat_text(&output.content).contains("here"));
    assert!(recorder.calls.lock().unwrap().is_empty());

    // Nor does the far side run one, whatever it is handed.
    let call = |arguments, mode| ShellCall {
        arguments,
        root: root.clone(),
        path: "/usr/bin:/bin".to_owned(),
        home: None,
        max_output_bytes: 4096,
        timeout_ms: 5_000,
        policy: SandboxPolicy::new(mode, &root),
    };
    let off = call(json!({"command": "touch off.txt", "sandbox": "off"}), SandboxMode::WorkspaceWrite);
    assert!(matches!(off.run(context()).await, Err(ShellCallError::Unconfined)));
    let unsandboxed = call(json!({"command": "touch off.txt"}), SandboxMode::Off);
    assert!(matches!(unsandboxed.run(context()).await, Err(ShellCallError::Unconfined)));
    assert!(!root.join("off.txt").exists());
}
