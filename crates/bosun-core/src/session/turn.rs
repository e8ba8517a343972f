//! One turn: model rounds, each either an answer (commit, done) or a tool
//! batch (run through `batch.rs`, commit, next round). A failure rolls the
//! turn back when no tool could have acted, and otherwise keeps the latest
//! complete checkpoint (invariants 2, 3, 11–14).
//!
//! [`Session::record`] is the one place the turn loop writes the journal:
//! write first, then apply the record to history with the ledger replay uses
//! (invariant 15). A record that cannot be written loses the journal: the
//! turn ends as a resume of the durable records would end it, and the session
//! refuses further turns until it is resumed from its journal.

use std::borrow::Cow;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Session, TurnOptions, TurnOutcome, UserInput};
use crate::error::{Disposition, TurnError, TurnErrorKind};
use crate::event::{Event, EventSink, SinkError, TurnOutcomeKind};
use crate::journal::{JournalError, JournalErrorKind, JournalRecord, TurnRecordOutcome};
use crate::message::{ContentPart, Message, StopReason, Usage, concat_reasoning, concat_text};
use crate::model::{
    GenerationOptions, ModelEvent, ModelRequest, ModelResponse, ModelStream, ResponsePart, Support, Thinking,
};
use crate::stream::DeltaReconciler;

/// Passes events to the caller's sink. The first failure cancels the turn
/// (invariant 14) and silences the sink for the rest of it.
pub(crate) struct Emitter<'s> {
    sink: &'s mut dyn EventSink,
    cancel: CancellationToken,
    failed: Option<SinkError>,
}

impl Emitter<'_> {
    pub(crate) fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        self.sink.emit(event).inspect_err(|error| {
            self.cancel.cancel();
            self.failed = Some(error.clone());
        })
    }

    pub(crate) fn failure(&self) -> Option<&SinkError> {
        self.failed.as_ref()
    }
}

/// The state of one running turn.
pub(crate) struct TurnState {
    pub(crate) turn: u64,
    pub(crate) entry: usize,
    pub(crate) ids_mark: usize,
    pub(crate) usage: Usage,
    /// Fires on caller cancellation and on sink failure.
    pub(crate) cancel: CancellationToken,
    /// The caller's own token, to tell its cancellation from a sink failure.
    pub(crate) caller: CancellationToken,
    /// Tool results seen this turn (tool name and result text), for
    /// repeated-call detection.
    pub(crate) seen_results: std::collections::HashSet<(String, String)>,
    /// The next round is offered no tools: the model repeated itself.
    pub(crate) answer_only: bool,
    /// History ranges (a call message and its results) whose results all
    /// repeated earlier ones; left out of the answer-only round's request.
    pub(crate) repeats: Vec<std::ops::Range<usize>>,
}

impl TurnState {
    /// The error for a turn that stopped because `cancel` fired.
    pub(crate) fn cancelled(&self, emitter: &Emitter<'_>) -> TurnErrorKind {
        match emitter.failure() {
            Some(error) if !self.caller.is_cancelled() => TurnErrorKind::Sink(error.clone()),
            _ => TurnErrorKind::Cancelled,
        }
    }
}

impl Session {
    /// Runs one turn: the user's message, then model rounds and tool batches
    /// until the model answers. Events go to `sink`.
    pub async fn run(
        &mut self,
        input: impl Into<UserInput>,
        sink: &mut dyn EventSink,
    ) -> Result<TurnOutcome, TurnError> {
        self.run_with(input, TurnOptions::default(), sink).await
    }

    /// [`Session::run`] with per-turn options: generation overrides and a
    /// cancellation token.
    pub async fn run_with(
        &mut self,
        input: impl Into<UserInput>,
        options: TurnOptions,
        sink: &mut dyn EventSink,
    ) -> Result<TurnOutcome, TurnError> {
        let rolled_back = |kind| TurnError { kind, disposition: Disposition::RolledBack };
        if let Some(lost) = &self.journal_lost {
            return Err(rolled_back(TurnErrorKind::JournalLost(lost.clone())));
        }
        let content = input.into().0.map_err(|what| rolled_back(TurnErrorKind::NotUserInput(what)))?;
        let generation = self.options.layered(&options.generation);
        self.check_turn_capabilities(&generation).map_err(rolled_back)?;
        let cancel = options.cancel.child_token();
        let mut emitter = Emitter { sink, cancel: cancel.clone(), failed: None };
        let mut state = TurnState {
            turn: self.ledger.turns() + 1,
            entry: self.history.len(),
            ids_mark: self.call_ids.mark(),
            usage: Usage::default(),
            cancel,
            caller: options.cancel,
            seen_results: std::collections::HashSet::new(),
            answer_only: false,
            repeats: Vec::new(),
        };
        // From here on every path emits `turn_end` (if the sink still works).
        emitter.emit(Event::TurnStart { turn: state.turn }).map_err(|e| rolled_back(e.into()))?;
        let record = JournalRecord::TurnStarted { turn: state.turn, message: Message::User { content } };
        let rounds = match self.record(record).await {
            Ok(()) => self.turn_rounds(&mut state, &generation, &mut emitter).await,
            Err(kind) => Err(kind),
        };
        match rounds {
            Ok(outcome) => Ok(outcome),
            Err(kind) => Err(self.fail(&state, kind, &mut emitter).await),
        }
    }

    /// Thinking on/off is refused up front when the model cannot toggle it.
    fn check_turn_capabilities(&self, generation: &GenerationOptions) -> Result<(), TurnErrorKind> {
        if matches!(generation.thinking, Some(Thinking::On { .. } | Thinking::Off))
            && self.capabilities.thinking_toggle == Support::No
        {
            return Err(TurnErrorKind::Capability("turning thinking on or off"));
        }
        Ok(())
    }

    async fn turn_rounds(
        &mut self,
        state: &mut TurnState,
        generation: &GenerationOptions,
        emitter: &mut Emitter<'_>,
    ) -> Result<TurnOutcome, TurnErrorKind> {
        for round in 1..=self.limits.max_rounds {
            emitter.emit(Event::ModelRoundStart { turn: state.turn, round })?;
            let response = self.model_round(state, generation, emitter).await?;
            state.usage += response.usage;
            // Cancellation wins ties (invariant 13): a cancel that came with
            // the response, in the same poll, stops the turn before the
            // response is committed or any of its calls is considered.
            if state.cancel.is_cancelled() {
                return Err(state.cancelled(emitter));
            }
            let assistant = self.mint_assistant(response);
            if assistant.tool_calls().next().is_none() {
                let answer = assistant.text();
                let stop_reason = match &assistant {
                    Message::Assistant { stop_reason, .. } => *stop_reason,
                    _ => StopReason::Stop,
                };
                self.commit(state, vec![assistant]).await?;
                self.end_turn(state, TurnRecordOutcome::Completed).await?;
                emitter.emit(Event::TurnEnd {
                    turn: state.turn,
                    outcome: TurnOutcomeKind::Completed,
                    usage: state.usage,
                    stop_reason: Some(stop_reason),
                })?;
                return Ok(TurnOutcome {
                    turn: state.turn,
                    answer,
                    usage: state.usage,
                    stop_reason,
                    rounds: round,
                });
            }
            let batch = self.run_batch(state, &assistant, emitter).await;
            if let Some(lost) = &self.journal_lost {
                // Nothing more is written; `fail` closes the turn as the
                // durable records end it.
                return Err(batch.stopped.unwrap_or_else(|| TurnErrorKind::Journal(lost.clone())));
            }
            match batch.results {
                Some(results) => {
                    state.answer_only = repeats_itself(&mut state.seen_results, &results);
                    if state.answer_only {
                        let start = self.history.len();
                        state.repeats.push(start..start + results.len() + 1);
                    }
                    let mut messages = Vec::with_capacity(results.len() + 1);
                    messages.push(assistant);
                    messages.extend(results);
                    self.commit(state, messages).await?;
                }
                None => {
                    // Stopped before any call ran: the batch leaves no trace.
                    return Err(batch.stopped.unwrap_or(TurnErrorKind::Cancelled));
                }
            }
            if let Some(stopped) = batch.stopped {
                return Err(stopped);
            }
            if state.cancel.is_cancelled() {
                return Err(state.cancelled(emitter));
            }
        }
        Err(TurnErrorKind::RoundLimit(self.limits.max_rounds))
    }

    /// Streams one response, forwarding deltas and reconciling them with the
    /// final text (invariant 2). Cancellation wins ties; the stream is
    /// drained before returning so the model's work ends with the round.
    async fn model_round(
        &self,
        state: &TurnState,
        generation: &GenerationOptions,
        emitter: &mut Emitter<'_>,
    ) -> Result<ModelResponse, TurnErrorKind> {
        // The answer-only round sees the conversation without the batches
        // that repeated earlier ones: they add nothing, and a small model
        // reading its own repeated calls imitates them instead of answering.
        let repeated = |index: &usize| state.answer_only && state.repeats.iter().any(|r| r.contains(index));
        let strip = self.capabilities.reasoning_replay == Support::No;
        let messages = if strip || state.answer_only {
            let kept = self.history.iter().enumerate().filter(|(index, _)| !repeated(index));
            Cow::Owned(kept.map(|(_, m)| if strip { m.without_reasoning() } else { m.clone() }).collect())
        } else {
            Cow::Borrowed(self.history.as_slice())
        };
        let request = ModelRequest {
            system: self.system.as_deref(),
            messages,
            // A model that only repeats calls it already made gets one round
            // without tools, so it has to answer with what it has.
            tools: if state.answer_only {
                Cow::Borrowed(&[])
            } else {
                Cow::Borrowed(self.advertised.as_slice())
            },
            options: generation.clone(),
        };
        let mut stream = self.model.stream(request, state.cancel.clone());
        let mut text = DeltaReconciler::new();
        let mut reasoning = DeltaReconciler::new();
        loop {
            let item = tokio::select! {
                biased;
                () = state.cancel.cancelled() => None,
                item = stream.next() => Some(item),
            };
            let event = match item {
                None => {
                    drain(stream).await;
                    return Err(state.cancelled(emitter));
                }
                Some(None) => return Err(TurnErrorKind::Truncated),
                Some(Some(Err(error))) => {
                    drain(stream).await;
                    if state.cancel.is_cancelled() {
                        return Err(state.cancelled(emitter));
                    }
                    return Err(error.into());
                }
                Some(Some(Ok(event))) => event,
            };
            let forwarded = match event {
                ModelEvent::TextDelta(delta) => {
                    text.push(&delta);
                    emitter.emit(Event::TextDelta { text: delta })
                }
                ModelEvent::ReasoningDelta(delta) => {
                    reasoning.push(&delta);
                    emitter.emit(Event::ReasoningDelta { text: delta })
                }
                ModelEvent::Retrying { attempt, wait_ms, reason } => {
                    emitter.emit(Event::ModelRetry { attempt, wait_ms, reason })
                }
                ModelEvent::Done(response) => {
                    drop(stream);
                    return finish_response(response, &text, &reasoning, emitter);
                }
                _ => Ok(()),
            };
            if forwarded.is_err() {
                drain(stream).await;
                return Err(state.cancelled(emitter));
            }
        }
    }

    /// Replaces the model's call ids with session-minted ones (invariant 4).
    fn mint_assistant(&mut self, response: ModelResponse) -> Message {
        let mut content: Vec<ContentPart> = response
            .content
            .into_iter()
            .map(|part| match part {
                ResponsePart::ToolCall { provider_id, name, arguments, provider_data } => {
                    ContentPart::ToolCall {
                        id: self.call_ids.mint(&provider_id),
                        name,
                        arguments,
                        provider_data,
                    }
                }
                ResponsePart::Content(ContentPart::ToolCall { id, name, arguments, provider_data }) => {
                    ContentPart::ToolCall {
                        id: self.call_ids.mint(&id.to_string()),
                        name,
                        arguments,
                        provider_data,
                    }
                }
                ResponsePart::Content(part) => part,
            })
            .collect();
        // History lives as long as the session; do not keep the spare room
        // the model's response was built with.
        content.shrink_to_fit();
        Message::Assistant { content, usage: response.usage, stop_reason: response.stop_reason }
    }

    /// The one writer of the turn's records. Checks `record` against the
    /// ledger, writes it (awaited: durable before the loop goes on,
    /// invariant 15), then applies it to history exactly as replay would.
    /// A record that cannot be written is not applied and loses the journal.
    pub(crate) async fn record(&mut self, record: JournalRecord) -> Result<(), TurnErrorKind> {
        if let Some(lost) = &self.journal_lost {
            return Err(TurnErrorKind::JournalLost(lost.clone()));
        }
        let written = match self.ledger.check(&record) {
            Err(problem) => Err(JournalError::new(
                JournalErrorKind::OutOfOrder,
                format!("refused an out-of-order record: {problem}"),
            )),
            Ok(()) => match self.journal.as_mut() {
                Some(journal) => journal.append(&record).await,
                None => Ok(()),
            },
        };
        if let Err(error) = written {
            self.journal_lost = Some(error.clone());
            return Err(error.into());
        }
        self.ledger.apply(&mut self.history, record);
        Ok(())
    }

    /// Commits messages (invariant 11: one complete batch at a time).
    async fn commit(&mut self, state: &TurnState, messages: Vec<Message>) -> Result<(), TurnErrorKind> {
        let provider_ids = messages.first().map(|m| self.call_ids.origins_of(m)).unwrap_or_default();
        self.record(JournalRecord::Committed { turn: state.turn, messages, provider_ids }).await
    }

    async fn end_turn(&mut self, state: &TurnState, outcome: TurnRecordOutcome) -> Result<(), TurnErrorKind> {
        self.record(JournalRecord::TurnEnded { turn: state.turn, outcome }).await
    }

    /// Ends a failed turn: roll back when no tool acted, else keep the
    /// checkpoint (invariant 12). With the journal lost, the turn ends as a
    /// resume of the durable records will end it, so live history never
    /// drops what the journal holds nor keeps what it lacks. Reports the
    /// error if the sink still works.
    async fn fail(&mut self, state: &TurnState, kind: TurnErrorKind, emitter: &mut Emitter<'_>) -> TurnError {
        if self.journal_lost.is_none() && self.ledger.is_open() {
            let outcome = if self.ledger.acted() {
                TurnRecordOutcome::Checkpointed
            } else {
                TurnRecordOutcome::RolledBack
            };
            if let Err(error) = self.end_turn(state, outcome).await {
                tracing::warn!(%error, "could not journal the end of a failed turn");
            }
        }
        if self.journal_lost.is_some() {
            self.ledger.close_open(&mut self.history);
        }
        let disposition = if self.history.len() > state.entry {
            Disposition::Checkpointed
        } else {
            self.call_ids.rollback(state.ids_mark);
            Disposition::RolledBack
        };
        let outcome = match kind {
            TurnErrorKind::Cancelled | TurnErrorKind::Sink(_) => TurnOutcomeKind::Cancelled,
            _ => TurnOutcomeKind::Failed,
        };
        if emitter.failure().is_none() {
            let class = match &kind {
                TurnErrorKind::Model(error) => Some(error.class().to_owned()),
                _ => None,
            };
            let _ =
                emitter.emit(Event::Error { kind: kind.code().to_owned(), class, message: kind.to_string() });
            let _ = emitter.emit(Event::TurnEnd {
                turn: state.turn,
                outcome,
                usage: state.usage,
                stop_reason: None,
            });
        }
        TurnError { kind, disposition }
    }
}

/// Checks the final response against the streamed deltas, emits what is
/// missing, and refuses a response that cannot enter history (invariant 3).
fn finish_response(
    response: ModelResponse,
    text: &DeltaReconciler,
    reasoning: &DeltaReconciler,
    emitter: &mut Emitter<'_>,
) -> Result<ModelResponse, TurnErrorKind> {
    let parts: Vec<ContentPart> = response
        .content
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Content(c) => Some(c.clone()),
            ResponsePart::ToolCall { .. } => None,
        })
        .collect();
    let final_text = concat_text(&parts);
    let final_reasoning = concat_reasoning(&parts);
    let text_suffix = text.finish(&final_text).map_err(TurnErrorKind::NonPrefixText)?;
    let reasoning_suffix = reasoning.finish(&final_reasoning).map_err(TurnErrorKind::NonPrefixReasoning)?;
    if !reasoning_suffix.is_empty() {
        emitter.emit(Event::ReasoningDelta { text: reasoning_suffix.to_owned() })?;
    }
    if !text_suffix.is_empty() {
        emitter.emit(Event::TextDelta { text: text_suffix.to_owned() })?;
    }
    if response.stop_reason == StopReason::Error {
        return Err(TurnErrorKind::Model(crate::model::ModelError::Other(
            "the model ended its response with an error".into(),
        )));
    }
    let has_calls = response.content.iter().any(|p| {
        matches!(p, ResponsePart::ToolCall { .. } | ResponsePart::Content(ContentPart::ToolCall { .. }))
    });
    if final_text.is_empty() && !has_calls {
        return Err(if response.stop_reason == StopReason::Refusal {
            TurnErrorKind::Refused
        } else {
            TurnErrorKind::EmptyResponse
        });
    }
    Ok(response)
}

/// Repeated-call detection: true when every result of a batch is one this
/// turn already produced (same tool, same output), i.e. the calls taught the
/// model nothing new. Records the results as seen.
fn repeats_itself(seen: &mut std::collections::HashSet<(String, String)>, results: &[Message]) -> bool {
    let mut all_seen = !results.is_empty();
    for result in results {
        if let Message::ToolResult { tool_name, .. } = result {
            all_seen &= !seen.insert((tool_name.clone(), result.text()));
        }
    }
    all_seen
}

/// Polls a model stream to its end so no generation outlives the round.
async fn drain(mut stream: ModelStream<'_>) {
    while stream.next().await.is_some() {}
}
