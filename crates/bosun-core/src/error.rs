//! Errors of building a session and of running a turn.

use crate::authority::AuthorityChange;
use crate::event::SinkError;
use crate::history::HistoryError;
use crate::journal::JournalError;
use crate::model::ModelError;
use crate::replay::ReplayError;
use crate::schema::SchemaError;
use crate::stream::NonPrefix;

/// Why a session could not be built or resumed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool's parameter schema is not acceptable.
    #[error("tool `{tool}`: {source}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong with its schema.
        source: SchemaError,
    },
    /// Two tools share a name.
    #[error("two tools are named `{0}`")]
    DuplicateTool(String),
    /// A tool name outside `[A-Za-z0-9_-]{{1,64}}`.
    #[error("tool name `{0}` must be 1 to 64 characters of A-Z, a-z, 0-9, `_` or `-`")]
    ToolName(String),
    /// A name given to enable or disable is not a tool of the session.
    #[error("`{0}` is not a tool of this session")]
    UnknownTool(String),
    /// Both a system prompt and resumed history were given.
    #[error("a system prompt and resumed history were both given; the history carries its own")]
    PromptAndHistory,
    /// Resumed history breaks the structural rules.
    #[error("resumed history is malformed: {0}")]
    History(#[from] HistoryError),
    /// The journal could not be replayed.
    #[error("the journal cannot be replayed: {0}")]
    Replay(#[from] ReplayError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The authority resumed under is wider than the recorded one, and the
    /// person did not accept the difference (invariant 7).
    #[error(
        "not accepted: resuming widens the authority the session was recorded under ({} → {}):\n{change}",
        change.stored,
        change.current
    )]
    AuthorityMismatch {
        /// The recorded and current digests, and each difference.
        change: AuthorityChange,
    },
    /// The model lacks something the configuration needs.
    #[error("the model does not support {0}")]
    Capability(&'static str),
}

/// What happened to history when a turn failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// No tool could have had an effect: history is as before the turn.
    RolledBack,
    /// The turn's committed messages stay in history, each batch complete:
    /// tools may have had effects, or the journal already holds them.
    Checkpointed,
}

/// A failed turn, and what it left in history.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct TurnError {
    /// What failed.
    pub kind: TurnErrorKind,
    /// What history holds now.
    pub disposition: Disposition,
}

impl TurnError {
    /// Whether the turn was cancelled (by the caller or a failing sink).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, TurnErrorKind::Cancelled | TurnErrorKind::Sink(_))
    }
}

/// What failed during a turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnErrorKind {
    /// The model failed.
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// Streamed text was not a prefix of the final text (invariant 2).
    #[error("answer text: {0}")]
    NonPrefixText(NonPrefix),
    /// Streamed reasoning was not a prefix of the final reasoning.
    #[error("reasoning: {0}")]
    NonPrefixReasoning(NonPrefix),
    /// The model's stream ended without a final response.
    #[error("the model stream ended without a final response")]
    Truncated,
    /// The final response had neither answer text nor tool calls.
    #[error("the model's response has neither answer text nor tool calls")]
    EmptyResponse,
    /// The model (or its provider's content filter) refused, with nothing
    /// else to show but the provider's explanation, when it gave one.
    #[error("the model refused to answer ({})", explanation.as_deref().unwrap_or("its provider's content filter or its own refusal"))]
    Refused {
        /// The provider's explanation (Anthropic's `stop_details`).
        explanation: Option<String>,
    },
    /// The turn used all its model rounds.
    #[error("the turn reached its limit of {0} model rounds")]
    RoundLimit(u32),
    /// The turn spent its tokens.
    #[error("the turn reached its limit of {limit} tokens ({spent} spent)")]
    TokenLimit {
        /// The limit.
        limit: u64,
        /// Spent when it was checked.
        spent: u64,
    },
    /// The turn ran out of time.
    #[error("the turn reached its time limit of {} s", *.0 as f64 / 1000.0)]
    TimeLimit(u64),
    /// The turn spent its money, or its cost could not be told.
    #[error("{}", cost_limit(*limit_micros, *spent_micros))]
    CostLimit {
        /// The limit, in millionths of a dollar.
        limit_micros: u64,
        /// Spent when it was checked; `None` when the usage could not be priced.
        spent_micros: Option<u64>,
    },
    /// The event sink failed; the turn was cancelled.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// An earlier record could not be written, so the session refuses every
    /// further turn: the journal no longer follows it. Build a new session
    /// from the journal with `SessionBuilder::resume`.
    #[error("the session's journal failed earlier ({0}); resume the session from its journal to go on")]
    JournalLost(JournalError),
    /// The turn was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The input was not a user message.
    #[error("a turn takes a user message, not {0}")]
    NotUserInput(&'static str),
    /// The turn's options need something the model lacks.
    #[error("the model does not support {0}")]
    Capability(&'static str),
    /// A hook refused the prompt, or stopped the turn.
    #[error("the hook `{hook}` {}: {reason}", if *.prompt { "blocked the prompt" } else { "stopped the turn" })]
    HookBlocked {
        /// The hook.
        hook: String,
        /// Why.
        reason: String,
        /// Whether it refused the prompt (no turn started) rather than
        /// stopping a running turn.
        prompt: bool,
    },
    /// A required hook panicked or timed out.
    #[error(transparent)]
    Hook(#[from] crate::hooks::HookFailure),
}

impl TurnErrorKind {
    /// A short stable name for events (`model`, `protocol`, `limit`, …).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Model(_) => "model",
            Self::Refused { .. } => "refused",
            Self::NonPrefixText(_) | Self::NonPrefixReasoning(_) | Self::Truncated | Self::EmptyResponse => {
                "protocol"
            }
            Self::RoundLimit(_) | Self::TokenLimit { .. } | Self::TimeLimit(_) | Self::CostLimit { .. } => {
                "limit"
            }
            Self::Sink(_) => "sink",
            Self::Journal(_) | Self::JournalLost(_) => "journal",
            Self::Cancelled => "cancelled",
            Self::NotUserInput(_) => "input",
            Self::Capability(_) => "capability",
            Self::HookBlocked { .. } | Self::Hook(_) => "hook",
        }
    }
}

fn dollars(micros: u64) -> String {
    format!("${}.{:06}", micros / 1_000_000, micros % 1_000_000)
}

fn cost_limit(limit: u64, spent: Option<u64>) -> String {
    match spent {
        Some(spent) => {
            format!("the turn reached its cost limit of {} ({} spent)", dollars(limit), dollars(spent))
        }
        None => format!("the turn has a cost limit of {} but its usage cannot be priced", dollars(limit)),
    }
}
