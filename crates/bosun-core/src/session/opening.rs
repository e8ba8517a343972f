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

use crate::error::TurnErrorKind;
use crate::message::{ContentPart, StopReason, Usage};
use crate::model::{ModelResponse, ResponsePart};

use super::Session;
use super::turn::{Emitter, TurnState};

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

impl Session {
    /// Runs `calls` as one batch ahead of the first round.
    pub(super) async fn opening_round(
        &mut self,
        state: &mut TurnState,
        calls: Vec<OpeningCall>,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        let parts = calls
            .into_iter()
            .enumerate()
            .map(|(index, call)| ResponsePart::ToolCall {
                provider_id: format!("bosun-opening-{index}"),
                name: call.name,
                arguments: call.arguments,
                provider_data: None,
            })
            .collect();
        let assistant = self.mint_assistant(ModelResponse::new(parts, Usage::default(), StopReason::ToolUse));
        self.batch_round(state, assistant, false, emitter).await
    }
}
