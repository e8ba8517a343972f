//! What is recorded of a hook's run: the point it ran at and how it ended,
//! as the `hook_run` event and the `hook_ran` journal record carry it.
//! Plain data, below the hooks' trait and runner, which emit events.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A point where hooks are asked. The JSON names are the ones command hooks
/// of other agents are configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum HookPoint {
    /// The first turn of a session object, before its prompt is submitted.
    SessionStart,
    /// A user's prompt, before its turn starts.
    UserPromptSubmit,
    /// A call that passed its schema check, before the permission pipeline.
    PreToolUse,
    /// A call's result, before it is recorded.
    PostToolUse,
    /// Before a compaction.
    PreCompact,
    /// The model answered and the turn is about to end.
    Stop,
    /// A delegated child's session answered.
    SubagentStop,
    /// Before each model request (library only).
    BeforeModel,
    /// After each model response, before it is committed (library only).
    AfterModel,
}

impl HookPoint {
    /// The name, as in configuration and the hook's JSON input.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::BeforeModel => "BeforeModel",
            Self::AfterModel => "AfterModel",
        }
    }

    /// The point named `name` (as [`HookPoint::name`] gives it).
    pub fn from_name(name: &str) -> Option<Self> {
        ALL_POINTS.into_iter().find(|point| point.name() == name)
    }
}

impl fmt::Display for HookPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every point, in the order of a session's life.
pub const ALL_POINTS: [HookPoint; 9] = [
    HookPoint::SessionStart,
    HookPoint::UserPromptSubmit,
    HookPoint::PreToolUse,
    HookPoint::PostToolUse,
    HookPoint::PreCompact,
    HookPoint::Stop,
    HookPoint::SubagentStop,
    HookPoint::BeforeModel,
    HookPoint::AfterModel,
];

/// How one hook run ended, as events and the journal show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookOutcome {
    /// Nothing to say.
    Continued,
    /// Added a note.
    Noted,
    /// Blocked (see [`HookDecision::Block`](super::HookDecision::Block)).
    Blocked,
    /// Asked for approval.
    Asked,
    /// Replaced a call's arguments.
    UpdatedInput,
    /// Decided something that does not fit the point; ignored.
    Ignored,
    /// Failed and was not counted ([`HookError`](super::HookError)).
    Failed,
    /// Ran past its timeout.
    TimedOut,
    /// Panicked.
    Panicked,
}

/// One hook's run, as the `hook_run` event and the `hook_ran` record carry it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HookRun {
    /// The point.
    pub point: HookPoint,
    /// The hook's name.
    pub hook: String,
    /// How long it ran.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: HookOutcome,
    /// The reason, note or error it gave (bounded), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set when the run switched an advisory hook off for the session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub switched_off: bool,
}
