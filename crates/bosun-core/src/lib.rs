//! bosun-core: the agent runtime. A [`Session`] runs one turn at a time
//! against a [`Model`], sends each tool call through the permission pipeline
//! to a [`Tool`], reports what happens as [`Event`]s, and records every step
//! in a [`Journal`].
//!
//! Not here: HTTP, SQLite, llama.cpp, MCP, terminals, config files,
//! environment variables. Adapter crates bring those, and only through these
//! traits. The core reads no files and no environment on its own.
//!
//! The invariants it holds are numbered as in the project's `MISSION.md`;
//! each is stated beside the code that holds it and has a test named
//! `invariant_NN_…` in `tests/`.
//!
//! # Example
#![doc = include_str!("../README_EXAMPLE.md")]
#![deny(missing_docs)]

pub mod authority;
mod error;
pub mod event;
mod history;
pub mod journal;
pub mod limits;
pub mod message;
pub mod model;
pub mod permission;
mod replay;
pub mod schema;
mod session;
pub mod stream;
pub mod tool;

pub use authority::{AuthorityDigest, AuthoritySnapshot, WorkspaceIdentity};
pub use error::{BuildError, Disposition, TurnError, TurnErrorKind};
pub use event::{Event, EventSink, NullSink, SinkError};
pub use history::{HistoryError, validate_history};
pub use journal::{InMemoryJournal, Journal, JournalError, JournalRecord, TurnRecordOutcome};
pub use message::{CallId, ContentPart, Message, StopReason, Usage};
pub use model::{
    Capabilities, GenerationOptions, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, ModelStream,
    ResponsePart, Support, Thinking,
};
pub use permission::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, ArgumentPattern, DenyAll, GrantScope, Mode,
    Permission, PermissionRule, Reason,
};
pub use replay::{ReplayError, Replayed, replay};
pub use session::{Session, SessionBuilder, ToolExecution, TurnOptions, TurnOutcome, UserInput};
pub use tool::{CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};

/// Result texts the session writes for calls it did not run to completion.
pub mod results {
    pub use crate::replay::{INTERRUPTED_RESULT, NOT_STARTED_RESULT};
    pub use crate::session::{CANCELLED, NOT_RUN};
}
