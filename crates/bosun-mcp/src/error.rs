//! Why a server could not be used, and why a tool was left out. Each names
//! the server; start-up failures of stdio servers carry the tail of their
//! stderr, bounded.

use std::io;
use std::time::Duration;

/// Why a server is not running: at start-up, or when asked later.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The configuration cannot be used (no command, a bad URL or header).
    #[error("MCP server `{server}`: {reason}")]
    InvalidConfig {
        /// The server.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// The command is not on the server's `PATH` (or the path does not exist).
    #[error("MCP server `{server}`: command `{command}` not found")]
    CommandNotFound {
        /// The server.
        server: String,
        /// The command as configured.
        command: String,
    },
    /// The command exists but could not be started.
    #[error("MCP server `{server}`: cannot run `{command}`: {source}")]
    Spawn {
        /// The server.
        server: String,
        /// The command as configured.
        command: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// No tool list within the start-up timeout.
    #[error("MCP server `{server}` did not start within {}{}", millis(*timeout), details(stray.as_deref(), stderr))]
    StartupTimeout {
        /// The server.
        server: String,
        /// The timeout.
        timeout: Duration,
        /// What it printed on stdout that was not JSON-RPC, if anything.
        stray: Option<String>,
        /// The tail of its stderr (empty for HTTP).
        stderr: String,
    },
    /// The `initialize` exchange failed (the process exited, the server
    /// answered with an error, the connection was refused).
    #[error("MCP server `{server}` failed to initialize: {reason}{}", details(stray.as_deref(), stderr))]
    Initialize {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
        /// What it printed on stdout that was not JSON-RPC, if anything.
        stray: Option<String>,
        /// The tail of its stderr (empty for HTTP).
        stderr: String,
    },
    /// The server asks for OAuth authorization and none could be had: no
    /// stored token is usable and nothing can ask the person, or the
    /// authorization failed.
    #[error("MCP server `{server}` needs authorization: {reason}")]
    Unauthorized {
        /// The server.
        server: String,
        /// Why none could be had.
        reason: String,
    },
    /// `tools/list` failed.
    #[error("MCP server `{server}`: listing its tools failed: {reason}")]
    ListTools {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server went away after start-up.
    #[error("MCP server `{server}` is unavailable: it {reason}")]
    Unavailable {
        /// The server.
        server: String,
        /// How it went, e.g. `exited (exit status 1)`.
        reason: String,
    },
}

impl ServerError {
    /// The server's name.
    pub fn server(&self) -> &str {
        match self {
            Self::InvalidConfig { server, .. }
            | Self::CommandNotFound { server, .. }
            | Self::Spawn { server, .. }
            | Self::StartupTimeout { server, .. }
            | Self::Initialize { server, .. }
            | Self::Unauthorized { server, .. }
            | Self::ListTools { server, .. }
            | Self::Unavailable { server, .. } => server,
        }
    }

    /// The tail of the server's stderr, when there is one.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            Self::StartupTimeout { stderr, .. } | Self::Initialize { stderr, .. } if !stderr.is_empty() => {
                Some(stderr)
            }
            _ => None,
        }
    }
}

/// Why one tool of a running server is not offered. Never fatal: the other
/// tools are offered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRejection {
    /// Its input schema cannot be lowered into bosun's vocabulary.
    #[error("MCP server `{server}`: tool `{tool}` is left out: its input schema cannot be used: {reason}")]
    Schema {
        /// The server.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// Why.
        reason: String,
    },
    /// Its session name is taken by a tool offered before it.
    #[error(
        "MCP tools `{kept_tool}` (server `{kept_server}`) and `{tool}` (server `{server}`) both become \
         `{name}`; `{tool}` is left out"
    )]
    NameCollision {
        /// The shared session name.
        name: String,
        /// The server of the tool left out.
        server: String,
        /// The MCP name of the tool left out.
        tool: String,
        /// The server of the tool that keeps the name.
        kept_server: String,
        /// The MCP name of the tool that keeps the name.
        kept_tool: String,
    },
}

pub(crate) fn millis(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms >= 1000 && ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") }
}

fn details(stray: Option<&str>, stderr: &str) -> String {
    let mut text = String::new();
    if let Some(stray) = stray {
        text.push_str("; ");
        text.push_str(stray);
    }
    if !stderr.is_empty() {
        text.push_str("; its stderr ended with:\n");
        text.push_str(stderr);
    }
    text
}
