//! `bosun mcp-server`: bosun as an MCP server over stdio, so another agent
//! can hand it a task.
//!
//! Two tools: `bosun_task` starts a session on a task in a workspace (which
//! must be under a folder the user allowed) and `bosun_continue` sends a
//! stored session a follow-up. Each runs the whole turn and answers with the
//! session's answer (and, as structured content, its id, outcome, usage and
//! cost). While it runs, progress notifications say what it does, when the
//! caller gave a progress token. Approvals are asked of the calling client
//! through elicitation when it supports it, and denied otherwise: the caller
//! can never widen what the user's configuration allows, and a mode it asks
//! for may only be as loose as the user's own for that workspace. Sessions
//! are built through `bosun-agent`, under the same trust gate and sandbox as
//! the CLI's.

mod approve;
mod error;
mod progress;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use bosun_agent::Notices;
use bosun_core::env::Env;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

pub use error::McpServerError;
pub use tools::{CONTINUE_TOOL, TASK_TOOL};

/// How the server runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct McpServerOptions {
    /// The environment sessions' configuration is read with.
    pub env: Env,
    /// Folders a caller's workspace must be inside (canonical paths).
    pub allowed_roots: Vec<PathBuf>,
    /// Where the agents' notices go (stderr for the CLI; stdout is the
    /// protocol's).
    pub notices: Notices,
}

impl McpServerOptions {
    /// Options allowing workspaces under `allowed_roots`.
    ///
    /// # Errors
    /// When a root does not exist (roots are compared canonically).
    pub fn new(env: Env, allowed_roots: &[PathBuf]) -> Result<Self, McpServerError> {
        let allowed_roots = allowed_roots
            .iter()
            .map(|root| {
                root.canonicalize().map_err(|e| McpServerError::Root(format!("{}: {e}", root.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { env, allowed_roots, notices: Notices::ignored() })
    }
}

/// The handler rmcp serves.
#[derive(Clone)]
pub struct BosunServer {
    options: Arc<McpServerOptions>,
}

impl std::fmt::Debug for BosunServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BosunServer").field("allowed_roots", &self.options.allowed_roots).finish()
    }
}

impl BosunServer {
    /// A server under `options`.
    pub fn new(options: McpServerOptions) -> Self {
        Self { options: Arc::new(options) }
    }

    /// Serves over this process's stdin and stdout until the client closes.
    ///
    /// # Errors
    /// When the MCP handshake or the transport fails.
    pub async fn serve_stdio(self) -> Result<(), McpServerError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpServerError::Protocol(e.to_string()))?;
        running.waiting().await.map_err(|e| McpServerError::Protocol(e.to_string()))?;
        Ok(())
    }
}

impl ServerHandler for BosunServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bosun", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "bosun runs a coding task in a workspace on the user's machine: `bosun_task` starts one, \
                 `bosun_continue` follows one up by its session id.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            TASK_TOOL => tools::task(&self.options, &arguments, &context).await,
            CONTINUE_TOOL => tools::follow_up(&self.options, &arguments, &context).await,
            other => return Err(ErrorData::invalid_params(format!("no tool `{other}`"), None)),
        };
        Ok(match result {
            Ok(result) => result,
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
        .into())
    }
}
