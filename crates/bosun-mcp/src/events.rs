//! What happens to servers, for whoever shows it: start-up progress, exits,
//! changed tool lists, progress of calls, the servers' own logs and stderr.
//! Presentation only; nothing waits on the hook.

use std::fmt;
use std::sync::Arc;

/// One thing that happened to a server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// Spawning or connecting.
    Starting {
        /// The server.
        server: String,
    },
    /// Initialized, with its tools listed.
    Ready {
        /// The server.
        server: String,
        /// Tools the server listed (before filters and rejections).
        tools: usize,
    },
    /// Start-up failed.
    Failed {
        /// The server.
        server: String,
        /// Why, as [`ServerError`](crate::ServerError) says it.
        error: String,
    },
    /// A running server went away (not at shutdown).
    Exited {
        /// The server.
        server: String,
        /// How, e.g. `exited (exit status 1)`.
        reason: String,
    },
    /// The server said its tool list changed (`notifications/tools/list_changed`).
    ToolsChanged {
        /// The server.
        server: String,
    },
    /// A running call reported progress.
    Progress {
        /// The server.
        server: String,
        /// The MCP tool.
        tool: String,
        /// E.g. `2/5` or `2/5: indexing`.
        message: String,
    },
    /// A log message the server sent (`notifications/message`).
    Log {
        /// The server.
        server: String,
        /// Its level, e.g. `info`.
        level: String,
        /// The message (JSON data shown as text).
        message: String,
    },
    /// Bytes a stdio server wrote to stderr.
    Stderr {
        /// The server.
        server: String,
        /// The text (lossily decoded).
        text: String,
    },
}

/// Receives every [`ServerEvent`]; called from the runtime's tasks, so it
/// must return quickly.
pub type EventHook = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

/// The hook, or none.
#[derive(Clone, Default)]
pub(crate) struct Events(Option<EventHook>);

impl Events {
    pub(crate) fn new(hook: Option<EventHook>) -> Self {
        Self(hook)
    }

    pub(crate) fn emit(&self, event: ServerEvent) {
        if let Some(hook) = &self.0 {
            hook(&event);
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Events").field(&self.0.is_some()).finish()
    }
}
