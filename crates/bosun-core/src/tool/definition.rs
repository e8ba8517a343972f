//! What a tool is as the authority records it and the permission pipeline
//! decides on it: its definition, category and cancellation policy. Plain
//! data, below the [`Tool`](super::Tool) trait, so the authority snapshot
//! and the pipeline name them without the trait and what it carries.

use serde::{Deserialize, Serialize};

/// Name, description and JSON Schema of a tool's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Unique name within a session: `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What the tool does, written for a model.
    pub description: String,
    /// A JSON Schema (bosun's bounded vocabulary) for the argument object.
    pub parameters: serde_json::Value,
}

impl ToolDefinition {
    /// A definition.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self { name: name.into(), description: description.into(), parameters }
    }
}

/// The kind of effect a tool has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    /// Reads the workspace only.
    Read,
    /// Changes files in the workspace.
    Write,
    /// Runs programs.
    Execute,
    /// Reaches the network.
    Network,
    /// Runs in another program whose effects bosun cannot see (an MCP
    /// server's tool): asks unless the mode is autonomous, denied read-only.
    External,
}

/// What cancelling the turn may do to a call that has started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancellationPolicy {
    /// The call's token is cancelled, then the session waits for it to finish
    /// and records its real result. In sequential mode, no later call of the
    /// batch starts. The wait is bounded by
    /// [`Limits::tool_ceiling`](crate::limits::Limits::tool_ceiling): a call
    /// still running then is given up with a "may have had an effect" result.
    #[default]
    FinishOnceStarted,
    /// The call's token is cancelled and its future is dropped. Only for tools
    /// whose drop stops all their work (a killed process group, an aborted
    /// request); never for work that must not be cut off.
    Interruptible,
}
