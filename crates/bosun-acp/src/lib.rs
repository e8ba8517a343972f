//! `bosun acp`: bosun as an Agent Client Protocol agent over stdio, so an
//! editor (Zed, or any ACP client) can run bosun sessions in its project.
//!
//! The editor opens a session in its folder (`session/new`) or a stored one
//! (`session/load`, its history replayed as updates), sends prompts
//! (`session/prompt`) and watches the turn as `session/update`
//! notifications: message and thought chunks, tool calls with their kind,
//! locations, status and diffs, plan entries. A call bosun's permission
//! pipeline leaves to a person is asked of the editor
//! (`session/request_permission`: allow once, allow for the session,
//! reject); `session/cancel` stops the turn. bosun's modes are the
//! session's ACP modes, none looser than the user's own. When the client
//! reads or writes text files, bosun's file tools read its buffers
//! (`fs/read_text_file`) and write through it (`fs/write_text_file`),
//! their checks unchanged; when it runs terminals, a shell call runs in one
//! as bosun's own binary (`bosun sandboxed-shell`), inside bosun's sandbox.
//! MCP servers it passes are started beside the configured ones.
//!
//! Sessions are built through `bosun-agent`, under the same trust gate and
//! sandbox as the CLI's. Not here: the protocol itself (the
//! `agent-client-protocol` SDK), printing (notices go where the front end
//! says; stdout is the protocol's).
#![deny(missing_docs)]

mod approve;
mod error;
mod fs;
mod mcp;
mod model;
mod modes;
mod prompt;
mod sessions;
mod terminal;
mod updates;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, McpCapabilities, NewSessionRequest, PromptCapabilities, PromptRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, ConnectTo, Stdio};
use bosun_agent::Notices;
use bosun_core::env::Env;

pub use error::AcpError;
pub use terminal::{SUBCOMMAND as SANDBOXED_SHELL, run_far_side as run_sandboxed_shell};

use sessions::Sessions;

/// How the agent runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct AcpOptions {
    /// The environment sessions' configuration is read with.
    pub env: Env,
    /// Where the agents' notices go (stderr for the CLI; stdout is the
    /// protocol's).
    pub notices: Notices,
}

impl AcpOptions {
    /// Options reading configuration with `env`, notices dropped.
    pub fn new(env: Env) -> Self {
        Self { env, notices: Notices::ignored() }
    }
}

/// Serves ACP over this process's stdin and stdout until the client
/// closes; then every session's turn is cancelled and its servers stopped.
///
/// # Errors
/// When the transport fails.
pub async fn serve_stdio(options: AcpOptions) -> Result<(), AcpError> {
    serve(options, Stdio::new()).await
}

/// Serves ACP over `transport` (stdio for the CLI; a test's channel).
///
/// # Errors
/// When the transport fails.
pub async fn serve(options: AcpOptions, transport: impl ConnectTo<Agent> + 'static) -> Result<(), AcpError> {
    let sessions = Arc::new(Sessions::new(options));
    let (init, new, load, prompt, cancel, mode, option) = (
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
    );
    let served = Agent
        .v1()
        .name("bosun")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _connection| {
                let fs = &request.client_capabilities.fs;
                init.client_files(fs::ClientFiles { reads: fs.read_text_file, writes: fs.write_text_file });
                init.client_terminals(request.client_capabilities.terminal);
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .mcp_capabilities(McpCapabilities::new().http(true))
                                .prompt_capabilities(
                                    PromptCapabilities::new().embedded_context(true).image(true),
                                ),
                        )
                        .agent_info(Implementation::new("bosun", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, connection| {
                let sessions = new.clone();
                connection.clone().spawn(async move {
                    responder.respond_with_result(sessions.create(request, connection).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, connection| {
                let sessions = load.clone();
                connection.clone().spawn(async move {
                    responder.respond_with_result(sessions.load(request, connection).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, connection| {
                // Begun here, in order, so a cancel sent after it finds it.
                let turn = match prompt.begin(&request.session_id.0) {
                    Ok(turn) => turn,
                    Err(error) => return responder.respond_with_error(error),
                };
                let sessions = prompt.clone();
                connection.clone().spawn(async move {
                    responder.respond_with_result(sessions.prompt(turn, request, connection).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _connection| {
                responder.respond_with_result(mode.set_mode(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, connection| {
                let sessions = option.clone();
                connection.clone().spawn(async move {
                    responder.respond_with_result(sessions.set_option(request, connection).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _connection| {
                cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    sessions.shutdown().await;
    served.map_err(|e| AcpError::Protocol(e.to_string()))
}
