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
use std::collections::HashSet;
use std::ops::Range;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{Session, TurnOptions, TurnOutcome, UserInput};
use crate::error::{Disposition, TurnError, TurnErrorKind};
use crate::event::{Event, EventSink, SinkError, TurnOutcomeKind};
use crate::hooks::{HookSet, MAX_STOP_CONTINUATIONS};
use crate::journal::Compaction;
use crate::journal::{JournalRecord, TurnRecordOutcome};
use crate::message::{ContentPart, Delivery, Message, StopReason, Usage, concat_reasoning, concat_text};
use crate::model::{
    GenerationOptions, ModelError, ModelEvent, ModelRequest, ModelResponse, ModelStream, ResponsePart,
    Support, Thinking,
};
use crate::spend::{Spend, Spent};
use crate::stream::DeltaReconciler;

/// Passes events to the caller's sink. The first failure cancels the turn
/// (invariant 14) and silences the sink for the rest of it.
pub(crate) struct Emitter<'s> {
    sink: &'s mut dyn EventSink,
    cancel: CancellationToken,
    failed: Option<SinkError>,
    /// Hooks that observe every event (`SessionHooks::on_event`).
    observers: Option<HookSet>,
}

impl<'s> Emitter<'s> {
    /// Passes events to `sink`; a failure of it fires `cancel`.
    pub(crate) fn new(sink: &'s mut dyn EventSink, cancel: CancellationToken) -> Self {
        Self { sink, cancel, failed: None, observers: None }
    }

    /// Shows every event to `hooks` too, before the sink.
    pub(crate) fn observed_by(mut self, hooks: &HookSet) -> Self {
        self.observers = (!hooks.is_empty()).then(|| hooks.clone());
        self
    }

    pub(crate) fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if let Some(observers) = &self.observers {
            observers.observe(&event);
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

/// What goes with one request beyond history: a `BeforeModel` hook's note,
/// and the persistence rules' required call with its note.
#[derive(Clone, Copy)]
pub(crate) struct RoundNotes<'a> {
    hook: Option<&'a str>,
    required: Option<super::persist::Required>,
}

/// The state of one running turn.
pub(crate) struct TurnState {
    pub(crate) turn: u64,
    pub(crate) entry: usize,
    pub(crate) ids_mark: usize,
    /// What the turn spent so far, by bucket.
    pub(crate) spend: Spend,
    /// Fires on caller cancellation and on sink failure.
    pub(crate) cancel: CancellationToken,
    /// The caller's own token, to tell its cancellation from a sink failure.
    pub(crate) caller: CancellationToken,
    /// The repeated-call rule's view of this turn.
    pub(crate) repeats: Repeats,
    /// How many turns `Stop` hooks already kept this run going.
    pub(crate) continued: u32,
    /// Set by a `Stop` hook that keeps the agent going: the next prompt.
    pub(crate) go_on: Option<String>,
    /// What the prompt asked and what the calls did, for the persistence
    /// rules.
    pub(crate) progress: super::persist::Progress,
    /// The calls the session makes itself before the first round.
    pub(crate) opening: Vec<super::opening::OpeningCall>,
    /// Whether those calls ran.
    pub(crate) opened: bool,
}

impl TurnState {
    /// Every bucket's tokens together.
    pub(crate) fn usage(&self) -> Usage {
        self.spend.total().usage
    }

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
    ///
    /// A `Stop` hook that blocks keeps the agent going: the turn ends as
    /// completed and the next one starts with the hook's reason as its
    /// prompt, at most [`MAX_STOP_CONTINUATIONS`] times; the outcome is the
    /// last turn's.
    pub async fn run_with(
        &mut self,
        input: impl Into<UserInput>,
        options: TurnOptions,
        sink: &mut dyn EventSink,
    ) -> Result<TurnOutcome, TurnError> {
        let rolled_back = |kind| TurnError { kind, disposition: Disposition::RolledBack };
        if let Some(lost) = self.durable.lost() {
            return Err(rolled_back(TurnErrorKind::JournalLost(lost.clone())));
        }
        let content = input.into().0.map_err(|what| rolled_back(TurnErrorKind::NotUserInput(what)))?;
        let generation = self.options.layered(&options.generation);
        self.check_turn_capabilities(&generation).map_err(rolled_back)?;
        // Refused before anything is journaled or sent: the caller still
        // holds the message, and no request goes out without its images.
        if self.capabilities.images == Support::No
            && content.iter().any(|p| matches!(p, ContentPart::Image { .. }))
        {
            return Err(rolled_back(TurnErrorKind::Capability("images")));
        }
        self.turns_from(content, Vec::new(), &generation, &options.cancel, sink).await
    }

    /// Runs what the queue holds as turns (steering left waiting by a turn
    /// that ended early, then follow-ups), as [`Session::run_with`] runs
    /// them after a turn; `None` when nothing waits.
    pub async fn run_queued(
        &mut self,
        options: TurnOptions,
        sink: &mut dyn EventSink,
    ) -> Option<Result<TurnOutcome, TurnError>> {
        let rolled_back = |kind| TurnError { kind, disposition: Disposition::RolledBack };
        if let Some(lost) = self.durable.lost() {
            return Some(Err(rolled_back(TurnErrorKind::JournalLost(lost.clone()))));
        }
        let generation = self.options.layered(&options.generation);
        if let Err(kind) = self.check_turn_capabilities(&generation) {
            return Some(Err(rolled_back(kind)));
        }
        let (queued, content) = self.durable.claim_next().await?;
        Some(self.turns_from(content, queued, &generation, &options.cancel, sink).await)
    }

    /// A turn from `content`, then the turns a `Stop` hook asks for, then
    /// one for each message queued meanwhile; the last one's outcome.
    async fn turns_from(
        &mut self,
        mut content: Vec<ContentPart>,
        mut queued: Vec<(u64, Delivery)>,
        generation: &GenerationOptions,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> Result<TurnOutcome, TurnError> {
        let mut continued = 0;
        loop {
            if self.mode() == crate::Mode::Plan {
                crate::plan::note_plan_mode(&mut content);
            }
            let (outcome, go_on) =
                self.one_turn(content, &queued, generation, cancel, continued, sink).await?;
            match go_on {
                Some(prompt) if continued < MAX_STOP_CONTINUATIONS => {
                    continued += 1;
                    content = vec![ContentPart::text(prompt)];
                    queued = Vec::new();
                }
                _ => match self.durable.claim_next().await {
                    Some((next_queued, next)) => {
                        continued = 0;
                        content = next;
                        queued = next_queued;
                    }
                    None => return Ok(outcome),
                },
            }
        }
    }

    /// One turn; with the prompt a `Stop` hook gave to go on, if one did.
    async fn one_turn(
        &mut self,
        content: Vec<ContentPart>,
        queued: &[(u64, Delivery)],
        generation: &GenerationOptions,
        caller: &CancellationToken,
        continued: u32,
        sink: &mut dyn EventSink,
    ) -> Result<(TurnOutcome, Option<String>), TurnError> {
        let rolled_back = |kind| TurnError { kind, disposition: Disposition::RolledBack };
        let cancel = caller.child_token();
        let mut emitter = Emitter::new(sink, cancel.clone()).observed_by(self.hooks.set());
        let mut state = TurnState {
            turn: self.durable.ledger().turns() + 1,
            entry: self.history.len(),
            ids_mark: self.call_ids.mark(),
            spend: Spend::default(),
            cancel,
            caller: caller.clone(),
            repeats: Repeats::default(),
            continued,
            go_on: None,
            progress: super::persist::Progress::new(&content),
            opening: match &self.opening {
                Some(opening) if continued == 0 => opening(&content),
                _ => Vec::new(),
            },
            opened: false,
        };
        // From here on every path emits `turn_end` (if the sink still works).
        if let Err(error) = emitter.emit(Event::TurnStart { turn: state.turn }) {
            self.durable.unclaim(queued).await;
            return Err(rolled_back(error.into()));
        }
        let mut content = content;
        // A turn a `Stop` hook started is not a prompt the person submitted.
        let prompted = if continued == 0 {
            self.prompt_hooks(state.turn, &mut content, &state.cancel.clone(), &mut emitter).await
        } else {
            Ok(())
        };
        let rounds = match prompted {
            Ok(()) => {
                let record = JournalRecord::TurnStarted {
                    turn: state.turn,
                    message: Message::User { content },
                    queued: queued.iter().map(|(id, _)| *id).collect(),
                };
                match self.record(record).await {
                    Ok(()) => {
                        let delivered = queued.iter().try_for_each(|(id, delivery)| {
                            emitter.emit(Event::MessageDelivered {
                                turn: state.turn,
                                id: *id,
                                delivery: *delivery,
                            })
                        });
                        match delivered {
                            Ok(()) => self.timed_rounds(&mut state, generation, &mut emitter).await,
                            Err(error) => Err(error.into()),
                        }
                    }
                    Err(kind) => Err(kind),
                }
            }
            Err(kind) => Err(kind),
        };
        // Claimed messages whose turn never started wait again.
        self.durable.unclaim(queued).await;
        match rounds {
            Ok(outcome) => Ok((outcome, state.go_on.take())),
            Err(kind) => Err(self.fail(&state, kind, &mut emitter).await),
        }
    }

    /// The rounds under the turn's time limit: at the deadline the turn is
    /// cancelled as the caller would cancel it (running calls are wound
    /// down and awaited, invariant 13), and ends as over time.
    async fn timed_rounds(
        &mut self,
        state: &mut TurnState,
        generation: &GenerationOptions,
        emitter: &mut Emitter<'_>,
    ) -> Result<TurnOutcome, TurnErrorKind> {
        let Some(ms) = self.limits.max_turn_ms else {
            return self.turn_rounds(state, generation, emitter).await;
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        let cancel = state.cancel.clone();
        let rounds = self.turn_rounds(state, generation, emitter);
        tokio::pin!(rounds);
        let result = tokio::select! {
            result = &mut rounds => return result,
            () = tokio::time::sleep_until(deadline) => {
                cancel.cancel();
                rounds.await
            }
        };
        match result {
            Err(TurnErrorKind::Cancelled) => Err(TurnErrorKind::TimeLimit(ms)),
            other => other,
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
        if !state.opening.is_empty() {
            let calls = std::mem::take(&mut state.opening);
            self.opening_round(state, calls, emitter).await?;
            state.opened = true;
        }
        for round in 1..=self.limits.max_rounds {
            if round > 1 {
                self.deliver_steering(state, emitter).await?;
                self.check_budget(state)?;
            }
            // Between rounds, never inside a batch.
            self.apply_tool_changes(state, emitter).await?;
            self.compact(state, emitter, false).await?;
            let note = self.before_model_hooks(state, round, emitter).await?;
            let required = state.progress.next_round(&self.persistence, round, state.opened);
            emitter.emit(Event::ModelRoundStart { turn: state.turn, round })?;
            let notes = RoundNotes { hook: note.as_deref(), required };
            let mut response = self.model_round(state, round, generation, notes, emitter).await;
            // A provider that says the request is too long: compact, and
            // try once more; a second overflow fails the turn.
            if matches!(&response, Err(TurnErrorKind::Model(ModelError::ContextOverflow(_))))
                && self.compact(state, emitter, true).await?
            {
                response = self.model_round(state, round, generation, notes, emitter).await;
            }
            let (response, sent) = response?;
            self.context.observe(sent, &response.usage);
            let spent = Spent::priced(response.usage, self.pricing.as_deref());
            state.spend.main.add(spent);
            emitter.emit(Event::ModelRoundEnd {
                turn: state.turn,
                round,
                usage: response.usage,
                cost_micros: spent.cost_micros,
            })?;
            // Cancellation wins ties (invariant 13): a cancel that came with
            // the response, in the same poll, stops the turn before the
            // response is committed or any of its calls is considered.
            if state.cancel.is_cancelled() {
                return Err(state.cancelled(emitter));
            }
            self.after_model_hooks(state, round, &response, emitter).await?;
            let assistant = self.mint_assistant(response);
            if assistant.tool_calls().next().is_none() {
                let answer = assistant.text();
                let stop_reason = match &assistant {
                    Message::Assistant { stop_reason, .. } => *stop_reason,
                    _ => StopReason::Stop,
                };
                self.commit(state, vec![assistant]).await?;
                // The answer is committed; a required `Stop` hook that fails
                // ends the turn with it as the checkpoint.
                let cancel = state.cancel.clone();
                state.go_on = self.stop_hooks(state.turn, &answer, state.continued, &cancel, emitter).await?;
                self.end_turn(state, TurnRecordOutcome::Completed).await?;
                emitter.emit(Event::TurnEnd {
                    turn: state.turn,
                    outcome: TurnOutcomeKind::Completed,
                    usage: state.usage(),
                    spend: state.spend,
                    cost_micros: self.turn_cost(state),
                    stop_reason: Some(stop_reason),
                })?;
                return Ok(TurnOutcome {
                    turn: state.turn,
                    answer,
                    usage: state.usage(),
                    spend: state.spend,
                    stop_reason,
                    rounds: round,
                    unfinished_change: state.progress.unfinished_change(),
                });
            }
            self.batch_round(state, assistant, true, emitter).await?;
        }
        Err(TurnErrorKind::RoundLimit(self.limits.max_rounds))
    }

    /// The turn's token and cost limits, checked before a round: a turn
    /// stops at the first round boundary past either, so it may exceed them
    /// by one round's spend, never start a round beyond them.
    fn check_budget(&self, state: &TurnState) -> Result<(), TurnErrorKind> {
        let spent = crate::limits::turn_tokens(&state.usage());
        if let Some(limit) = self.limits.max_turn_tokens
            && spent >= limit
        {
            return Err(TurnErrorKind::TokenLimit { limit, spent });
        }
        if let Some(limit_micros) = self.limits.max_turn_cost_micros {
            let spent_micros = self.turn_cost(state);
            if spent_micros.is_none_or(|spent| spent >= limit_micros) {
                return Err(TurnErrorKind::CostLimit { limit_micros, spent_micros });
            }
        }
        Ok(())
    }

    /// Streams one response, forwarding deltas and reconciling them with the
    /// final text (invariant 2). Cancellation wins ties; the stream is
    /// drained before returning so the model's work ends with the round.
    async fn model_round(
        &self,
        state: &TurnState,
        round: u32,
        generation: &GenerationOptions,
        notes: RoundNotes<'_>,
        emitter: &mut Emitter<'_>,
    ) -> Result<(ModelResponse, usize), TurnErrorKind> {
        let mut messages = self.request_messages(&state.repeats, self.context.compaction());
        if let Some(note) = notes.hook {
            super::persist::add_request_note(messages.to_mut(), note);
        }
        // A model that keeps repeating calls it already made is offered no
        // tools, so it has to answer with what it has.
        let answer_only = state.repeats.answer_only();
        let tools = self.tools.offered(answer_only);
        // The estimator learns from what this very request carried.
        let sent = self.request_chars(&state.repeats, &messages);
        let mut options = generation.clone();
        if let Some(required) = notes.required
            && !tools.is_empty()
            && options.tool_choice.is_none()
        {
            options.tool_choice = Some(super::persist::Required::CHOICE);
            if let Some(note) = required.note {
                super::persist::add_closing_note(messages.to_mut(), note);
            }
        }
        // The files the session read first are what a first call would
        // have looked at.
        if round == 1 && !state.opened && !tools.is_empty() && options.tool_choice.is_none() {
            options.tool_choice = self.first_round;
        }
        let request =
            ModelRequest { system: self.system.as_deref(), messages, tools: Cow::Borrowed(tools), options };
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
                    return finish_response(response, &text, &reasoning, emitter).map(|r| (r, sent));
                }
                _ => Ok(()),
            };
            if forwarded.is_err() {
                drain(stream).await;
                return Err(state.cancelled(emitter));
            }
        }
    }

    /// The conversation as the model is shown it this round. History and the
    /// journal keep every real result (so replay is unaffected); only the
    /// request changes: reasoning is stripped for a model that would not
    /// keep it, images become a note for a model that takes none, and repeated batches are noted or left out (see [`Repeats`]).
    pub(crate) fn request_messages<'v>(
        &'v self,
        repeats: &Repeats,
        compaction: &Compaction,
    ) -> Cow<'v, [Message]> {
        let strip = self.capabilities.reasoning_replay == Support::No;
        let blind = self.capabilities.images == Support::No;
        if !strip && !blind && !repeats.any() && !compaction.is_active() {
            return Cow::Borrowed(self.history.as_slice());
        }
        let answer_only = repeats.answer_only();
        let mut view = Vec::with_capacity(self.history.len());
        for (index, message) in self.history.iter().enumerate() {
            if !compaction.sends(index) {
                continue;
            }
            let repeated = repeats.contains(index);
            let shown;
            let message = if compaction.is_active() {
                shown = compaction.show(index, message);
                &shown
            } else {
                message
            };
            match message {
                // The answer-only round sees the conversation without the
                // repeated batches: they add nothing, and a small model
                // reading its own repeated calls imitates them instead of
                // answering.
                _ if repeated && answer_only => {}
                // Before that, the call stays (each result still answers
                // its call) and the result it repeats, shown earlier, is
                // replaced by a note that says so.
                Message::ToolResult { call_id, tool_name, is_error, usage, spent_by, .. } if repeated => {
                    view.push(Message::ToolResult {
                        call_id: *call_id,
                        tool_name: tool_name.clone(),
                        content: vec![ContentPart::text(REPEATED_RESULT_NOTE)],
                        is_error: *is_error,
                        usage: *usage,
                        spent_by: *spent_by,
                    });
                }
                _ if strip && blind => view.push(message.without_reasoning().without_images()),
                _ if strip => view.push(message.without_reasoning()),
                _ if blind => view.push(message.without_images()),
                _ => view.push(message.clone()),
            }
        }
        Cow::Owned(view)
    }

    /// Replaces the model's call ids with session-minted ones (invariant 4).
    pub(super) fn mint_assistant(&mut self, response: ModelResponse) -> Message {
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

    /// Commits messages (invariant 11: one complete batch at a time).
    pub(super) async fn commit(
        &mut self,
        state: &TurnState,
        messages: Vec<Message>,
    ) -> Result<(), TurnErrorKind> {
        let provider_ids = messages.first().map(|m| self.call_ids.origins_of(m)).unwrap_or_default();
        self.record(JournalRecord::Committed { turn: state.turn, messages, provider_ids }).await
    }

    async fn end_turn(&mut self, state: &TurnState, outcome: TurnRecordOutcome) -> Result<(), TurnErrorKind> {
        self.record(JournalRecord::TurnEnded { turn: state.turn, outcome, spend: state.spend }).await
    }

    /// What the turn cost so far: known when every response was priced
    /// (nothing spent costs nothing, on a session with prices).
    fn turn_cost(&self, state: &TurnState) -> Option<u64> {
        let total = state.spend.total();
        match &self.pricing {
            Some(_) if total.is_zero() => Some(0),
            _ => total.cost_micros,
        }
    }

    /// Ends a failed turn: roll back when no tool acted, else keep the
    /// checkpoint (invariant 12). With the journal lost, the turn ends as a
    /// resume of the durable records will end it, so live history never
    /// drops what the journal holds nor keeps what it lacks. Reports the
    /// error if the sink still works.
    async fn fail(&mut self, state: &TurnState, kind: TurnErrorKind, emitter: &mut Emitter<'_>) -> TurnError {
        if self.durable.lost().is_none() && self.durable.ledger().is_open() {
            let outcome = if self.durable.ledger().acted() {
                TurnRecordOutcome::Checkpointed
            } else {
                TurnRecordOutcome::RolledBack
            };
            if let Err(error) = self.end_turn(state, outcome).await {
                tracing::warn!(%error, "could not journal the end of a failed turn");
            }
        }
        self.durable.close_as_resumed(&mut self.history);
        self.context.clamp(self.history.len());
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
                usage: state.usage(),
                spend: state.spend,
                cost_micros: self.turn_cost(state),
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
            TurnErrorKind::Refused { explanation: response.stop_details.clone() }
        } else {
            TurnErrorKind::EmptyResponse
        });
    }
    Ok(response)
}

/// What the model is shown, in place of a result it already had, after its
/// first repeated batch.
const REPEATED_RESULT_NOTE: &str = "[bosun: this call returned the same result as an earlier call in \
     this turn; that result is above. Do not repeat it: use another tool, or answer.]";

/// The repeated-call rule. A batch repeats when every one of its results is
/// one this turn already produced (same tool, same output): the calls taught
/// the model nothing new.
///
/// - After the first repeated batch the model keeps its tools (a small model
///   often repeats one read, then goes on to the step that needs it), and
///   the request shows a note in place of the repeated results.
/// - After the second, every later round offers no tools and leaves the
///   repeated batches out of the request: the model is looping, and has to
///   answer with what it has.
///
/// The count is per turn and only grows: a batch with something new between
/// two repeats does not reset it, or a model alternating one new call with
/// one repeat would never be stopped. Held by the tests in
/// `tests/it/repeated_calls.rs`.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    /// Tool results seen this turn: tool name and result text.
    seen: HashSet<(String, String)>,
    /// History ranges (a call message and its results) of the batches that
    /// repeated, in order; their number is how often the model repeated.
    batches: Vec<Range<usize>>,
}

impl Repeats {
    /// Records a batch's results as seen; when all were seen before, records
    /// the batch, about to be committed at history index `at`, as a repeat.
    pub(crate) fn observe(&mut self, at: usize, results: &[Message]) {
        let mut all_seen = !results.is_empty();
        for result in results {
            if let Message::ToolResult { tool_name, .. } = result {
                all_seen &= !self.seen.insert((tool_name.clone(), result.text()));
            }
        }
        if all_seen {
            self.batches.push(at..at + results.len() + 1);
        }
    }

    /// Whether any batch this turn repeated.
    fn any(&self) -> bool {
        !self.batches.is_empty()
    }

    /// Whether the model has repeated itself twice: from then on it is
    /// offered no tools.
    pub(crate) fn answer_only(&self) -> bool {
        self.batches.len() >= 2
    }

    /// Whether history index `index` belongs to a repeated batch.
    fn contains(&self, index: usize) -> bool {
        self.batches.iter().any(|batch| batch.contains(&index))
    }
}

/// Polls a model stream to its end so no generation outlives the round.
pub(crate) async fn drain(mut stream: ModelStream<'_>) {
    while stream.next().await.is_some() {}
}
