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
//!
//! A session on a scripted model (from `bosun-testing`) with one tool: the
//! model calls the tool, then answers.
//!
//! ```rust
//! use bosun_core::{Event, Session, ToolCategory};
//! use bosun_testing::{FnTool, Reply, ScriptedModel};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sentence = "to be or not to be";
//!
//! // A model that plays two replies: a tool call, then the answer.
//! let model = ScriptedModel::new()
//!     .reply(Reply::new().text("Let me count.").tool_call("word_count", json!({ "text": sentence })))
//!     .answer("There are 6 words.");
//!
//! // A read-only tool made from a closure, with its parameter schema.
//! let word_count = FnTool::text("word_count", ToolCategory::Read, |args| {
//!     args["text"].as_str().unwrap_or_default().split_whitespace().count().to_string()
//! })
//! .description("Counts the words of a text.")
//! .schema(json!({
//!     "type": "object",
//!     "properties": { "text": { "type": "string", "description": "The text to count." } },
//!     "required": ["text"],
//!     "additionalProperties": false
//! }));
//!
//! // The default mode, `propose`, runs read tools; writes and commands would
//! // need an approver (`SessionBuilder::approver`), and the default one denies.
//! let mut session = Session::builder(model).tool(word_count.clone()).build().await?;
//!
//! // Events arrive while the turn runs; a Vec collects them.
//! let mut events: Vec<Event> = Vec::new();
//! let outcome = session.run(format!("How many words are in {sentence:?}?"), &mut events).await?;
//!
//! println!("{}", outcome.answer);
//! assert_eq!(outcome.answer, "There are 6 words.");
//! assert_eq!(word_count.calls(), vec![json!({ "text": sentence })]);
//! assert!(matches!(events.last(), Some(Event::TurnEnd { .. })));
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

pub mod artifacts;
pub mod authority;
pub mod calendar;
pub mod delegate;
pub mod env;
mod error;
pub mod event;
mod from_fn;
mod history;
pub mod hooks;
pub mod inbox;
pub mod intent;
pub mod journal;
pub mod limits;
pub mod message;
pub mod model;
pub mod permission;
pub mod plan;
mod replay;
pub mod sanitize;
pub mod schema;
mod session;
pub mod spend;
pub mod stream;
pub mod tool;
pub mod tool_source;

pub use authority::{
    AuthorityChange, AuthorityDifference, AuthorityDigest, AuthoritySnapshot, WorkspaceIdentity,
};
pub use error::{BuildError, Disposition, TurnError, TurnErrorKind};
pub use event::{Event, EventSink, NullSink, SinkError};
pub use from_fn::{FnApprover, FnTool};
pub use history::{HistoryError, validate_history};
pub use inbox::{Inbox, InboxError, Queued};
pub use intent::Intent;
pub use journal::{
    InMemoryJournal, Journal, JournalError, JournalErrorKind, JournalRecord, TurnRecordOutcome,
};
pub use limits::{Limits, Pricing, turn_tokens};
pub use message::{CallId, ContentPart, Delivery, Message, SpentBy, StopReason, Usage};
pub use model::{
    Capabilities, CountFuture, Effort, GenerationOptions, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ModelStream, OutputSchema, ResponsePart, Support, Thinking, ToolChoice,
};
pub use permission::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, ArgumentPattern, CallEffects, Capability,
    CommandLine, DenyAll, GrantScope, Mode, Permission, PermissionRule, Reason,
};
pub use replay::{ReplayError, Replayed, replay};
pub use session::{
    CompactOutcome, Compaction, OpeningCall, OpeningCalls, PROGRESS_INTERVAL, Persistence, Session,
    SessionBuilder, SessionScope, ToolExecution, TurnOptions, TurnOutcome, UserInput,
};
pub use spend::{Spend, Spent};
pub use tool::{
    CancellationPolicy, RetryPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
pub use tool_source::{ToolChanges, ToolChangesFuture, ToolSource};

/// Result texts the session writes for calls it did not run to completion.
pub mod results {
    pub use crate::replay::{INTERRUPTED_RESULT, NOT_STARTED_RESULT};
    pub use crate::session::{CANCELLED, NOT_RUN, WITHDRAWN};
}

/// Compaction's fixed parts: what it keeps, how short old results get, the
/// summary prompt (documented, stable), and the estimator of request sizes.
pub mod compaction {
    pub use crate::session::{Estimator, KEEP_UNITS, SHORT_RESULT, SUMMARY_PROMPT, chars_of};
}
