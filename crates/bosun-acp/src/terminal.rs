//! The `shell` tool in the editor's terminal, still in bosun's sandbox
//! (invariant 18). When the client offers terminals, a sandboxed shell call
//! is handed over whole (`bosun_tools::ShellCall`: the approved arguments,
//! root, PATH, HOME, limits and the sandbox's policy) to a terminal the
//! editor opens (`terminal/create`) running bosun's own binary as
//! `bosun sandboxed-shell CALL --result FILE`: that process builds the same
//! sandbox from the policy and runs the call through bosun's own shell tool
//! ([`run_far_side`]), so the command is confined as it would be here. The
//! command's output goes to the terminal as it comes, and the tool's result
//! (capped, with its exit line and sandbox notes) to FILE, in a folder of
//! this process's own, outside what the sandboxed command may write, and
//! written only once the command's group is gone. The terminal
//! is shown in the tool call; a cancelled turn kills it (`terminal/kill`;
//! the sandboxed command dies with its parent), and it is released either
//! way. Without a result (a killed terminal), the terminal's output is the
//! result.
//!
//! A call that would run outside the sandbox (`"sandbox": "off"`, or no
//! sandbox on this kernel) never goes to the terminal: bosun runs it itself,
//! as without an editor.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, SessionNotification, SessionUpdate,
    Terminal, TerminalId, TerminalOutputRequest, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest,
};
use bosun_agent::{ShellCall, ShellRunner};
use bosun_core::{ToolContext, ToolFuture, ToolOutput};
use tokio_util::sync::CancellationToken;

/// The hidden subcommand the terminal runs.
pub const SUBCOMMAND: &str = "sandboxed-shell";

/// How long a killed terminal is waited for before its output is read.
const AFTER_KILL: Duration = Duration::from_secs(5);
/// Beyond the call's own timeout, how long the editor may take to start
/// and end the terminal before the call gives up on it.
const SLACK: Duration = Duration::from_secs(30);

/// The editor's terminals, for one session.
pub(crate) struct EditorTerminal {
    connection: ConnectionTo<Client>,
    session: Arc<OnceLock<String>>,
    /// bosun's own binary.
    program: PathBuf,
}

impl std::fmt::Debug for EditorTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorTerminal").field("program", &self.program).finish_non_exhaustive()
    }
}

impl EditorTerminal {
    pub(crate) fn new(
        connection: ConnectionTo<Client>,
        session: Arc<OnceLock<String>>,
        program: PathBuf,
    ) -> Self {
        Self { connection, session, program }
    }

    async fn run_call(&self, call: ShellCall, context: &ToolContext) -> Result<ToolOutput, String> {
        let session = self.session.get().cloned().ok_or("the session is not ready")?;
        let limit = call.max_output_bytes as u64 + 4096;
        let timeout =
            call.arguments.get("timeout_ms").and_then(serde_json::Value::as_u64).unwrap_or(call.timeout_ms);
        let root = call.root.clone();
        let encoded = serde_json::to_string(&call).map_err(|e| e.to_string())?;
        let folder =
            tempfile::Builder::new().prefix("bosun-acp-shell-").tempdir().map_err(|e| e.to_string())?;
        let result = folder.path().join("result.json");
        let args = vec![SUBCOMMAND.to_owned(), encoded, "--result".to_owned(), result.display().to_string()];
        let create = CreateTerminalRequest::new(session.clone(), self.program.display().to_string())
            .args(args)
            .cwd(root)
            .output_byte_limit(limit);
        let created = self.connection.send_request(create).block_task().await.map_err(|e| e.to_string())?;
        let id = created.terminal_id;
        self.show(&session, context, &id);
        let ended = self.wait(&session, &id, &context.cancel, Duration::from_millis(timeout) + SLACK).await;
        let output = self
            .connection
            .send_request(TerminalOutputRequest::new(session.clone(), id.clone()))
            .block_task()
            .await;
        let released = ReleaseTerminalRequest::new(session, id);
        if let Err(error) = self.connection.send_request(released).block_task().await {
            tracing::debug!(%error, "acp: releasing a terminal failed");
        }
        // Written whenever the far side ended on its own terms, a cancel
        // it was signalled included.
        if let Ok(written) = std::fs::read(&result)
            && let Ok(result) = serde_json::from_slice::<FarResult>(&written)
        {
            return Ok(ToolOutput::new(vec![bosun_core::ContentPart::text(result.text)], result.is_error));
        }
        let output = output.map_err(|e| e.to_string())?;
        let mut text = output.output;
        let exit_code = output.exit_status.and_then(|status| status.exit_code);
        let is_error = match ended {
            Ended::Exited(code) => code.or(exit_code) != Some(0),
            Ended::Cancelled | Ended::TimedOut => {
                // Killed before it wrote a result: what the terminal
                // showed is all there is.
                let why = if ended == Ended::Cancelled { "cancelled" } else { "the terminal did not end" };
                text = format!("killed: {why}\n{text}");
                true
            }
        };
        Ok(ToolOutput::new(vec![bosun_core::ContentPart::text(text)], is_error))
    }

    /// The terminal in the tool call, so the editor shows it live.
    fn show(&self, session: &str, context: &ToolContext, id: &TerminalId) {
        let content = vec![ToolCallContent::Terminal(Terminal::new(id.clone()))];
        let update =
            ToolCallUpdate::new(context.call_id.to_string(), ToolCallUpdateFields::new().content(content));
        let notification =
            SessionNotification::new(session.to_owned(), SessionUpdate::ToolCallUpdate(update));
        if let Err(error) = self.connection.send_notification(notification) {
            tracing::debug!(%error, "acp: showing a terminal failed");
        }
    }

    /// Waits for the terminal to end; on cancel or after `limit`, kills it
    /// and waits a little for it to go.
    async fn wait(
        &self,
        session: &str,
        id: &TerminalId,
        cancel: &CancellationToken,
        limit: Duration,
    ) -> Ended {
        let exit = WaitForTerminalExitRequest::new(session.to_owned(), id.clone());
        let ended = tokio::select! {
            exited = tokio::time::timeout(limit, self.connection.send_request(exit).block_task()) => match exited {
                Ok(Ok(exited)) => return Ended::Exited(exited.exit_status.exit_code),
                Ok(Err(error)) => {
                    tracing::debug!(%error, "acp: waiting for a terminal failed");
                    return Ended::Exited(None);
                }
                Err(_) => Ended::TimedOut,
            },
            () = cancel.cancelled() => Ended::Cancelled,
        };
        let kill = KillTerminalRequest::new(session.to_owned(), id.clone());
        if let Err(error) = self.connection.send_request(kill).block_task().await {
            tracing::debug!(%error, "acp: killing a terminal failed");
        }
        let exit = WaitForTerminalExitRequest::new(session.to_owned(), id.clone());
        let _ = tokio::time::timeout(AFTER_KILL, self.connection.send_request(exit).block_task()).await;
        ended
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// With the far side's exit code, when the editor gave it.
    Exited(Option<u32>),
    Cancelled,
    TimedOut,
}

impl ShellRunner for EditorTerminal {
    fn run<'a>(&'a self, call: ShellCall, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.run_call(call, &context).await {
                Ok(output) => output,
                Err(error) => ToolOutput::error(format!("the editor's terminal failed: {error}")),
            }
        })
    }
}

/// The tool's result, as the far side writes it.
#[derive(serde::Serialize, serde::Deserialize)]
struct FarResult {
    text: String,
    is_error: bool,
}

/// The far side, in the editor's terminal: runs the call `encoded` names
/// inside the sandbox its policy describes. With `result`, the command's
/// output goes to stdout as it comes and the tool's result to `result`;
/// without, the result is returned to be printed. Either way it says
/// whether the call failed. SIGTERM, SIGINT and SIGHUP (a terminal killed
/// or closed) cancel the call, which kills the command's group.
///
/// # Errors
/// When `encoded` is not a call, or the sandbox cannot be built or would
/// confine nothing (then nothing runs), or `result` cannot be written.
pub async fn run_far_side(
    encoded: &str,
    result: Option<&Path>,
) -> Result<(Option<String>, bool), crate::AcpError> {
    let call: ShellCall = serde_json::from_str(encoded)
        .map_err(|e| crate::AcpError::Shell(format!("not a shell call: {e}")))?;
    let cancel = CancellationToken::new();
    let watcher = cancel.clone();
    let signals = tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
        else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        watcher.cancel();
    });
    let context = ToolContext::detached(bosun_core::CallId::new_v7(), cancel);
    let echo = result.map(|_| {
        Arc::new(|chunk: &[u8]| {
            let mut out = std::io::stdout().lock();
            // A terminal gone away is not the call's failure.
            let _ = out.write_all(chunk).and_then(|()| out.flush());
        }) as bosun_agent::OutputEcho
    });
    let ran = call.run_echoing(context, echo).await;
    signals.abort();
    let output = ran.map_err(|e| crate::AcpError::Shell(e.to_string()))?;
    let text = bosun_core::message::concat_text(&output.content);
    let Some(result) = result else { return Ok((Some(text), output.is_error)) };
    let written = serde_json::to_vec(&FarResult { text, is_error: output.is_error })
        .map_err(|e| crate::AcpError::Shell(e.to_string()))?;
    std::fs::write(result, written)
        .map_err(|e| crate::AcpError::Shell(format!("{}: {e}", result.display())))?;
    Ok((None, output.is_error))
}
