//! Calls the session makes itself before the model's first round of a
//! turn: for a small model, reading the files the prompt names, so that it
//! edits what it has seen instead of guessing at it.
//!
//! The embedder decides what to call from the prompt ([`OpeningCalls`]);
//! the calls then go through the same pipeline as the model's (permission,
//! hooks, journal, events), as one batch committed under an assistant
//! message of the session's making, so history shows what was read and
//! replay restores it. Their results do not count for the persistence
//! rules: a file the prompt names that turns out not to exist is not the
//! model's failure.

use std::sync::Arc;

use crate::message::ContentPart;

/// One call the session makes before the first round.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OpeningCall {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: serde_json::Value,
}

impl OpeningCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self { name: name.into(), arguments }
    }
}

/// What to call before the first round, given the turn's prompt. Called
/// once per turn the person started (not for a turn a `Stop` hook started).
pub type OpeningCalls = Arc<dyn Fn(&[ContentPart]) -> Vec<OpeningCall> + Send + Sync>;
