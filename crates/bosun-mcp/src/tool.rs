//! One MCP tool as a `bosun_core::Tool`: its session name and lowered
//! schema, its category, and calls forwarded to its server. A tool the
//! server withdrew (`tools/list_changed`) answers that it was withdrawn.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bosun_core::{
    CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};

use crate::catalog::Prepared;
use crate::server::Server;

/// A tool of a running server.
pub(crate) struct McpTool {
    definition: ToolDefinition,
    category: ToolCategory,
    /// The tool's MCP name, as the server knows it.
    original: String,
    server: Arc<Server>,
    withdrawn: AtomicBool,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.definition.name)
            .field("server", &self.server.name())
            .field("original", &self.original)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(crate) fn new(prepared: Prepared, server: Arc<Server>) -> Arc<Self> {
        Arc::new(Self {
            definition: prepared.definition,
            category: prepared.category,
            original: prepared.original,
            server,
            withdrawn: AtomicBool::new(false),
        })
    }

    /// Whether `prepared` describes this tool exactly as offered.
    pub(crate) fn same_as(&self, prepared: &Prepared) -> bool {
        self.definition == prepared.definition && self.category == prepared.category
    }

    /// Calls from now on answer that the tool was withdrawn.
    pub(crate) fn withdraw(&self) {
        self.withdrawn.store(true, Ordering::SeqCst);
    }

    pub(crate) fn original(&self) -> &str {
        &self.original
    }

    pub(crate) fn server(&self) -> &Arc<Server> {
        &self.server
    }
}

impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    /// Dropping a call sends `notifications/cancelled` and leaves nothing
    /// running on bosun's side; what the server does with it is its own.
    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::Interruptible
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if self.withdrawn.load(Ordering::SeqCst) {
                return ToolOutput::error(format!(
                    "the tool `{}` was withdrawn by MCP server `{}`",
                    self.original,
                    self.server.name()
                ));
            }
            self.server.call(&self.original, arguments, context).await
        })
    }
}
