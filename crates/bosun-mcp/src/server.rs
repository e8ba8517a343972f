//! One running server: whether it is still there, its calls (progress,
//! cancellation, timeout, the server going away mid-call), listing its
//! tools again, and its shutdown.
//!
//! A call is sent with rmcp's request handle so that its progress token is
//! known and its cancellation is ours: when bosun cancels the call, the call
//! times out, or its future is dropped (the session drops an interruptible
//! call it cancelled), `notifications/cancelled` goes to the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bosun_core::{ToolContext, ToolOutput};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    RequestId, ServerResult, Tool as McpToolInfo,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use rmcp::{Peer, ServiceError};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client::Shared;
use crate::config::ServerConfig;
use crate::error::millis;
use crate::events::{Events, ServerEvent};
use crate::process::{Exit, STDERR_DRAIN, ServerProcess, StderrTail};
use crate::result;
use crate::stdout::StrayOutput;

/// Longest wait, after the connection dropped mid-call, for the process's
/// exit status to name in the message.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);
/// Longest wait for rmcp's connection task to end at shutdown.
const CLOSE_WAIT: Duration = Duration::from_secs(3);

/// Whether the server can take calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Running,
    /// Gone, and how: `exited (exit status 1)`, `closed the connection`,
    /// `was shut down`.
    Gone(String),
}

/// A request as its failures name it.
pub(crate) struct Request<'a> {
    /// For messages: "the call of \`echo\`", "the read of \`demo://a\`".
    pub(crate) what: String,
    /// What its progress notifications are shown under.
    pub(crate) progress: &'a str,
    /// What the answer should be, for a server that answers with something else.
    pub(crate) expected: &'a str,
}

/// The parts of a started server.
pub(crate) struct Parts {
    pub(crate) config: ServerConfig,
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) events: Events,
    pub(crate) cancel: CancellationToken,
    pub(crate) process: Option<ServerProcess>,
    /// Ends when rmcp's connection task ends.
    pub(crate) connection: JoinHandle<()>,
    /// What a stdio server printed that rmcp could not take.
    pub(crate) stray: Option<StrayOutput>,
}

/// A started server.
pub(crate) struct Server {
    pub(crate) config: ServerConfig,
    peer: Peer<RoleClient>,
    pub(crate) shared: Arc<Shared>,
    /// The process leader's pid (stdio).
    pid: Option<u32>,
    /// Cancels rmcp's connection task, which closes the transport (for
    /// stdio: the server's stdin).
    cancel: CancellationToken,
    state: watch::Receiver<State>,
    state_tx: Arc<watch::Sender<State>>,
    shutting_down: Arc<AtomicBool>,
    process: tokio::sync::Mutex<Option<ServerProcess>>,
    stderr: Option<StderrTail>,
    monitor: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .field("state", &*self.state.borrow())
            .finish()
    }
}

impl Server {
    /// Starts watching `parts`: when the connection ends or the process
    /// exits (other than at shutdown), the server is gone, and says how.
    pub(crate) fn new(parts: Parts) -> Arc<Self> {
        let (state_tx, state) = watch::channel(State::Running);
        let state_tx = Arc::new(state_tx);
        let shutting_down = Arc::new(AtomicBool::new(false));
        let exit = parts.process.as_ref().map(ServerProcess::exit_watch);
        let stderr = parts.process.as_ref().map(ServerProcess::stderr);
        let pid = parts.process.as_ref().and_then(ServerProcess::pid);
        let signs = Signs { exit, stderr: stderr.clone(), stray: parts.stray };
        let monitor = tokio::spawn(watch_until_gone(
            parts.config.name.clone(),
            parts.connection,
            signs,
            Arc::clone(&state_tx),
            Arc::clone(&shutting_down),
            parts.events,
        ));
        Arc::new(Self {
            config: parts.config,
            peer: parts.peer,
            shared: parts.shared,
            pid,
            cancel: parts.cancel,
            state,
            state_tx,
            shutting_down,
            process: tokio::sync::Mutex::new(parts.process),
            stderr,
            monitor: std::sync::Mutex::new(Some(monitor)),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether bosun is stopping it (so its going is no death).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// How the server went, when it is gone.
    pub(crate) fn gone(&self) -> Option<String> {
        match &*self.state.borrow() {
            State::Running => None,
            State::Gone(why) => Some(why.clone()),
        }
    }

    /// Lists the server's tools again, under its start-up timeout.
    pub(crate) async fn list_tools(&self) -> Result<Vec<McpToolInfo>, String> {
        if let Some(why) = self.gone() {
            return Err(format!("the server {why}"));
        }
        match tokio::time::timeout(self.config.startup_timeout, self.peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {}", millis(self.config.startup_timeout))),
        }
    }

    /// Calls MCP tool `tool`. Every failure is an error output.
    pub(crate) async fn call(&self, tool: &str, arguments: Value, context: ToolContext) -> ToolOutput {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return ToolOutput::error("the arguments must be a JSON object"),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let what =
            Request { what: format!("the call of `{tool}`"), progress: tool, expected: "a tool result" };
        let output = match self.request(&what, request, &context).await {
            Ok(response) => server_result(response),
            Err(message) => ToolOutput::error(message),
        };
        output.with_usage(self.shared.take_sampled())
    }

    /// Sends `request` and waits for the answer, under the call's
    /// cancellation and the server's tool timeout; a server that is or goes
    /// away ends the wait. Every failure is a message naming `what`.
    pub(crate) async fn request(
        &self,
        what: &Request<'_>,
        request: ClientRequest,
        context: &ToolContext,
    ) -> Result<ServerResult, String> {
        let name = &self.config.name;
        let label = &what.what;
        if let Some(why) = self.gone() {
            let stderr = self.stderr_suffix();
            return Err(format!("MCP server `{name}` is unavailable: it {why}{stderr}"));
        }
        let sent = self.peer.send_request_with_option(request, PeerRequestOptions::no_options()).await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => return Err(self.failed(what, error).await),
        };
        let _route =
            self.shared.route(handle.progress_token.clone(), what.progress, context.progress.clone());
        let mut guard = CancelGuard { peer: Some(self.peer.clone()), id: handle.id.clone() };
        let mut state = self.state.clone();
        let timeout = self.config.tool_timeout;
        tokio::select! {
            biased;
            _ = context.cancel.cancelled() => {
                guard.cancel("cancelled by bosun");
                Err(format!("{label} on MCP server `{name}` was cancelled"))
            }
            response = handle.await_response() => {
                guard.disarm();
                match response {
                    Ok(response) => Ok(response),
                    Err(error) => Err(self.failed(what, error).await),
                }
            }
            () = gone(&mut state) => {
                guard.disarm();
                let why = self.gone().unwrap_or_default();
                let stderr = self.stderr_suffix();
                Err(format!("MCP server `{name}` {why} during {label}{stderr}"))
            }
            () = tokio::time::sleep(timeout) => {
                guard.cancel("timed out");
                Err(format!("{label} on MCP server `{name}` timed out after {}", millis(timeout)))
            }
        }
    }

    async fn failed(&self, what: &Request<'_>, error: ServiceError) -> String {
        let (name, label) = (&self.config.name, &what.what);
        match error {
            ServiceError::McpError(error) => format!(
                "MCP server `{name}` refused {label}: {} (JSON-RPC error {})",
                error.message, error.code.0
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                // The connection went first; the exit status follows soon.
                let mut state = self.state.clone();
                let _ = tokio::time::timeout(EXIT_STATUS_WAIT, gone(&mut state)).await;
                let why = self.gone().unwrap_or_else(|| "closed the connection".to_owned());
                let stderr = self.stderr_suffix();
                format!("MCP server `{name}` {why} during {label}{stderr}")
            }
            ServiceError::UnexpectedResponse => {
                format!("MCP server `{name}` answered {label} with something that is not {}", what.expected)
            }
            other => format!("{label} on MCP server `{name}` failed: {other}"),
        }
    }

    /// Whether the server said (in `initialize`) that it has resources.
    pub(crate) fn offers_resources(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| info.capabilities.resources.is_some())
    }

    /// The shutdown sequence: close the connection (a stdio server's stdin),
    /// then wait, `SIGTERM`, wait, `SIGKILL` for its process group.
    pub(crate) async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        // First, so that calls in flight end saying so, not as a lost connection.
        self.state_tx.send_replace(State::Gone("was shut down".into()));
        self.cancel.cancel();
        let monitor = self.monitor.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(monitor) = monitor {
            let abort = monitor.abort_handle();
            if tokio::time::timeout(CLOSE_WAIT, monitor).await.is_err() {
                abort.abort();
            }
        }
        if let Some(process) = self.process.lock().await.as_mut() {
            let exit = process.shutdown(self.config.shutdown_grace).await;
            tracing::debug!(server = %self.config.name, %exit, "mcp: server shut down");
        }
    }

    /// Stops the server now, without waiting: the connection is cancelled
    /// and the process group killed (reaped when the server is dropped).
    pub(crate) fn abort(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.cancel.cancel();
        if let Ok(mut process) = self.process.try_lock()
            && let Some(process) = process.as_mut()
        {
            process.kill_group();
        }
        self.state_tx.send_if_modified(|state| {
            let running = *state == State::Running;
            if running {
                *state = State::Gone("was shut down".into());
            }
            running
        });
    }

    /// The stderr tail for a message about the server going away.
    fn stderr_suffix(&self) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() || self.shutting_down.load(Ordering::SeqCst) {
            return String::new();
        }
        format!("; its stderr ended with:\n{tail}")
    }

    /// The pid of a stdio server's process (the leader of its group).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The tail of a stdio server's stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.as_ref().map(StderrTail::text).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Resolves once the server is gone (never holding the state's lock after).
async fn gone(state: &mut watch::Receiver<State>) {
    let _ = state.wait_for(|s| matches!(s, State::Gone(_))).await;
}

/// The monitor: marks the server gone when its connection ends or its
/// process exits, unless that is the shutdown.
async fn watch_until_gone(
    server: String,
    mut connection: JoinHandle<()>,
    signs: Signs,
    state: Arc<watch::Sender<State>>,
    shutting_down: Arc<AtomicBool>,
    events: Events,
) {
    let Signs { mut exit, stderr, stray } = signs;
    let exited = async {
        match exit.as_mut() {
            Some(exit) => match exit.wait_for(Option::is_some).await {
                Ok(status) => *status,
                Err(_) => None,
            },
            None => std::future::pending().await,
        }
    };
    let status = tokio::select! {
        _ = &mut connection => None,
        status = exited => status,
    };
    if shutting_down.load(Ordering::SeqCst) {
        return;
    }
    let status = match (status, &exit) {
        (Some(status), _) => Some(status),
        // The connection ended first: the process is likely on its way out.
        (None, Some(exit)) => {
            let mut exit = exit.clone();
            match tokio::time::timeout(EXIT_STATUS_WAIT, exit.wait_for(Option::is_some)).await {
                Ok(Ok(status)) => *status,
                _ => None,
            }
        }
        (None, None) => None,
    };
    if let (Some(_), Some(stderr)) = (status, &stderr) {
        stderr.ended_within(STDERR_DRAIN).await;
    }
    let why = match (stray.as_ref().and_then(StrayOutput::oversized), status) {
        (Some(oversized), _) => format!("{oversized}, so bosun closed the connection"),
        (None, Some(status)) => format!("exited ({status})"),
        (None, None) => "closed the connection".to_owned(),
    };
    let tail = stderr.as_ref().map(StderrTail::text).unwrap_or_default();
    let reason = if tail.is_empty() { why.clone() } else { format!("{why}; its stderr ended with:\n{tail}") };
    tracing::warn!(%server, %reason, "mcp: server gone");
    state.send_replace(State::Gone(why));
    events.emit(ServerEvent::Exited { server, reason });
}

/// What tells how a stdio server went (all `None` for HTTP).
struct Signs {
    exit: Option<watch::Receiver<Option<Exit>>>,
    stderr: Option<StderrTail>,
    stray: Option<StrayOutput>,
}

/// Sends `notifications/cancelled` for a request unless disarmed, also when
/// dropped with the call's future.
struct CancelGuard {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelGuard {
    fn disarm(&mut self) {
        self.peer = None;
    }

    fn cancel(&mut self, reason: &str) {
        let Some(peer) = self.peer.take() else { return };
        let params = CancelledNotificationParam::new(Some(self.id.clone()), Some(reason.to_owned()));
        // Spawned, so that it is sent even when the call's future is dropped
        // right after.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = peer.notify_cancelled(params).await {
                    tracing::debug!(%error, "mcp: sending a cancellation failed");
                }
            });
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        self.cancel("the call was abandoned");
    }
}

/// A `tools/call` answer as an output.
fn server_result(response: ServerResult) -> ToolOutput {
    match response {
        ServerResult::CallToolResult(result) => result::to_output(result),
        ServerResult::EmptyResult(_) => result::to_output(CallToolResult::default()),
        ServerResult::CustomResult(custom) => match serde_json::from_value::<CallToolResult>(custom.0) {
            Ok(result) => result::to_output(result),
            Err(_) => ToolOutput::error("the MCP server answered with something that is not a tool result"),
        },
        ServerResult::InputRequiredResult(_) => {
            ToolOutput::error("the MCP server asked for more input mid-call, which bosun does not support")
        }
        ServerResult::CreateTaskResult(_) => {
            ToolOutput::error("the MCP server made the call a task, which bosun does not support")
        }
        _ => ToolOutput::error("the MCP server answered with something that is not a tool result"),
    }
}
