//! Why `bosun mcp-server` could not start or serve.

/// A failure of the server as a whole (a call's failure is its result).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// An allowed root cannot be used.
    #[error("an allowed root: {0}")]
    Root(String),
    /// The MCP connection failed.
    #[error("MCP: {0}")]
    Protocol(String),
}
