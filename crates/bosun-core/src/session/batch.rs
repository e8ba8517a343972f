//! One tool batch: every call of a response goes through the pipeline in
//! call order — known and enabled, valid arguments, permission, approval —
//! then approved calls run (in parallel by default) under the tool policy
//! (timeout, output bound, panic capture). Results come back in call order,
//! one per call (invariants 5, 6, 8–13).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::invoke::{Bounds, Runnable, Step, attempt, backoff, wait_before_retry};
use super::opening::OpeningCall;
use super::progress::ProgressQueue;
use super::tools::ResolvedTool;
use super::turn::{Emitter, TurnState};
use super::{Session, ToolExecution};
use crate::error::TurnErrorKind;
use crate::event::{Decision, Event};
use crate::hooks::{HookInput, HookPoint};
use crate::journal::JournalRecord;
use crate::limits::shorten_middle;
use crate::message::{CallId, ContentPart, Message, SpentBy, StopReason, Usage, concat_text};
use crate::model::{ModelResponse, ResponsePart};
use crate::permission::{ApprovalDecision, ApprovalRequest, Permission, ProposedCall};
use crate::spend::Spent;
use crate::tool::{ProgressRoute, ProgressSink, ToolContext, ToolOutput};

/// Result text of a call that was not run because the batch stopped first.
pub const NOT_RUN: &str = "not run: the turn stopped before this call started";
/// Why a call to a tool its source withdrew is refused (the tool may come
/// back, so the model is told to go on without it for now).
pub const WITHDRAWN: &str =
    "its source withdrew it (for an MCP tool: the server stopped or no longer lists it); do without it";
/// Longest failure shown in a `tool_retry` event.
const EVENT_OUTPUT_CHARS: usize = 2_000;

/// What a batch produced.
pub(crate) struct BatchRun {
    /// One result per call in call order, or `None` when the batch stopped
    /// before any call could act (it then leaves no trace).
    pub(crate) results: Option<Vec<Message>>,
    /// Why the batch stopped early, if it did.
    pub(crate) stopped: Option<TurnErrorKind>,
}

struct Call {
    id: CallId,
    name: String,
    arguments: serde_json::Value,
}

enum Gate {
    Run(Arc<ResolvedTool>),
    Done(Message),
}

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

    /// Runs the calls of `assistant` and commits it with their results.
    /// `counted`: the results are the model's own doing, for the
    /// persistence rules (the session's opening reads are not).
    pub(super) async fn batch_round(
        &mut self,
        state: &mut TurnState,
        assistant: Message,
        counted: bool,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        let batch = self.run_batch(state, &assistant, emitter).await;
        if let Some(lost) = self.durable.lost() {
            // Nothing more is written; `fail` closes the turn as the
            // durable records end it.
            return Err(batch.stopped.unwrap_or_else(|| TurnErrorKind::Journal(lost.clone())));
        }
        let Some(results) = batch.results else {
            // Stopped before any call ran: the batch leaves no trace.
            return Err(batch.stopped.unwrap_or(TurnErrorKind::Cancelled));
        };
        state.repeats.observe(self.history.len(), &results);
        if counted {
            state.progress.observe(&results, |name| self.tools.get(name).map(|tool| tool.category));
        }
        // What the tools spent on models counts like a round's.
        for result in &results {
            if let Message::ToolResult { usage, spent_by, .. } = result {
                let spent = Spent::priced(*usage, self.pricing.as_deref());
                match spent_by {
                    SpentBy::Subagents => state.spend.subagents.add(spent),
                    _ => state.spend.tools.add(spent),
                }
            }
        }
        let mut messages = Vec::with_capacity(results.len() + 1);
        messages.push(assistant);
        messages.extend(results);
        self.commit(state, messages).await?;
        if let Some(stopped) = batch.stopped {
            return Err(stopped);
        }
        if state.cancel.is_cancelled() {
            return Err(state.cancelled(emitter));
        }
        Ok(())
    }

    pub(crate) async fn run_batch(
        &mut self,
        state: &mut TurnState,
        assistant: &Message,
        emitter: &mut Emitter<'_>,
    ) -> BatchRun {
        let mut calls: Vec<Call> = assistant
            .tool_calls()
            .map(|c| Call { id: c.id, name: c.name.to_owned(), arguments: c.arguments.clone() })
            .collect();
        let mut gates = Vec::with_capacity(calls.len());
        for call in &mut calls {
            match self.gate(state, call, emitter).await {
                Ok(gate) => gates.push(gate),
                Err(stopped) => return BatchRun { results: None, stopped: Some(stopped) },
            }
        }
        if gates.iter().any(|g| matches!(g, Gate::Run(_))) {
            let record = JournalRecord::BatchStarted {
                turn: state.turn,
                assistant: assistant.clone(),
                provider_ids: self.call_ids.origins_of(assistant),
            };
            if let Err(stopped) = self.record(record).await {
                return BatchRun { results: None, stopped: Some(stopped) };
            }
        }
        let mut results: Vec<Option<Message>> = Vec::with_capacity(calls.len());
        let mut runnable = Vec::new();
        for (index, (call, gate)) in calls.iter().zip(gates).enumerate() {
            match gate {
                Gate::Done(result) => {
                    end_event(emitter, &result);
                    results.push(Some(result));
                }
                Gate::Run(tool) => match dispatchable(&tool, call) {
                    Ok(arguments) => {
                        runnable.push(Runnable { index, tool, arguments });
                        results.push(None);
                    }
                    Err(result) => {
                        end_event(emitter, &result);
                        results.push(Some(result));
                    }
                },
            }
        }
        let stopped = match self.execution {
            ToolExecution::Parallel => {
                self.run_parallel(state, &calls, runnable, &mut results, emitter).await
            }
            ToolExecution::Sequential => {
                self.run_sequential(state, &calls, runnable, &mut results, emitter).await
            }
        };
        let results = calls
            .iter()
            .zip(results)
            .map(|(call, result)| {
                result.unwrap_or_else(|| Message::tool_result(call.id, &call.name, NOT_RUN, true))
            })
            .collect();
        BatchRun { results: Some(results), stopped }
    }

    /// The pipeline before execution for one call (invariants 5, 6, 8–10).
    /// `PreToolUse` hooks run after the schema check: they may refuse the
    /// call, make it ask, or replace its arguments (checked again, then
    /// gated from the permission step on). `Err` when the turn is cancelled,
    /// the sink fails or a required hook fails while deciding.
    async fn gate(
        &mut self,
        state: &TurnState,
        call: &mut Call,
        emitter: &mut Emitter<'_>,
    ) -> Result<Gate, TurnErrorKind> {
        let proposed = Event::ToolCallProposed {
            call_id: call.id,
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        };
        emitter.emit(proposed).map_err(|_| state.cancelled(emitter))?;
        // Invariant 5: a call to an unknown or disabled tool gets a synthetic
        // error result before any approval or execution.
        let tool = match self.tools.callable(&call.name) {
            Ok(tool) => tool,
            Err(why) => return Ok(Gate::Done(refusal(call, why))),
        };
        // Invariant 6, first check: before approval.
        if let Err(error) = tool.schema.validate(&call.arguments) {
            return Ok(Gate::Done(refusal(call, invalid_arguments(call, &error))));
        }
        let mut hook_ask = None;
        if self.hooks_want(HookPoint::PreToolUse) {
            let input = HookInput::PreToolUse {
                turn: state.turn,
                call_id: call.id,
                tool_name: call.name.clone(),
                tool_input: call.arguments.clone(),
            };
            let verdict = match self.run_hooks(input, &state.cancel, emitter).await {
                Ok(verdict) => verdict,
                Err(TurnErrorKind::Cancelled) => return Err(state.cancelled(emitter)),
                Err(other) => return Err(other),
            };
            if let Some((hook, reason)) = verdict.block {
                let decided = Event::ApprovalDecided {
                    call_id: call.id,
                    decision: Decision::DeniedByHook,
                    reason: Some(format!("{hook}: {reason}")),
                };
                emitter.emit(decided).map_err(|_| state.cancelled(emitter))?;
                return Ok(Gate::Done(refusal(call, format!("blocked by the hook `{hook}`: {reason}"))));
            }
            if let Some((hook, arguments)) = verdict.update {
                if let Err(error) = tool.schema.validate(&arguments) {
                    let text = format!(
                        "the hook `{hook}` replaced the arguments of `{}` with invalid ones: {error}",
                        call.name
                    );
                    return Ok(Gate::Done(refusal(call, text)));
                }
                call.arguments = arguments;
            }
            hook_ask = verdict.ask;
        }
        // The tool reads its own arguments for the pipeline (paths written,
        // the command line run); a panic there refuses the call.
        let effects = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.tool.effects(&call.arguments)))
        {
            Ok(effects) => effects,
            Err(_) => {
                let text = format!("`{}` could not describe what this call would do", call.name);
                return Ok(Gate::Done(refusal(call, text)));
            }
        };
        let proposed = ProposedCall::new(&call.name, tool.category, &call.arguments, &effects);
        let decided = self.policy.decide(&proposed);
        let (permission, why, protected) = (decided.permission, decided.reason, decided.protected);
        // A hook's ask makes an allowed or granted call ask; a denial stays.
        if let Some((hook, reason)) = hook_ask
            && permission != Permission::Deny
        {
            let why = format!("the hook `{hook}` asks: {reason}");
            return self.ask(state, call, tool, why, protected, emitter).await;
        }
        match permission {
            Permission::Allow => Ok(Gate::Run(tool)),
            Permission::Deny => {
                let decided = Event::ApprovalDecided {
                    call_id: call.id,
                    decision: Decision::DeniedByPolicy,
                    reason: Some(why.clone()),
                };
                emitter.emit(decided).map_err(|_| state.cancelled(emitter))?;
                Ok(Gate::Done(refusal(call, format!("denied: {why}"))))
            }
            Permission::Ask if self.policy.granted(&call.name, &call.arguments, protected) => {
                let decided =
                    Event::ApprovalDecided { call_id: call.id, decision: Decision::Granted, reason: None };
                emitter.emit(decided).map_err(|_| state.cancelled(emitter))?;
                Ok(Gate::Run(tool))
            }
            Permission::Ask => self.ask(state, call, tool, why, protected, emitter).await,
        }
    }

    async fn ask(
        &mut self,
        state: &TurnState,
        call: &Call,
        tool: Arc<ResolvedTool>,
        why: String,
        protected: bool,
        emitter: &mut Emitter<'_>,
    ) -> Result<Gate, TurnErrorKind> {
        let request = ApprovalRequest {
            call_id: call.id,
            tool: call.name.clone(),
            category: tool.category,
            arguments: call.arguments.clone(),
            reason: why.clone(),
            protected,
        };
        let requested = Event::ApprovalRequested {
            call_id: call.id,
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            reason: why,
        };
        let approver = self.policy.approver();
        // Asked before the request is told: an approver that files it where
        // others look (the server's list of approvals) has it there by the
        // time the event is seen. Dropped unanswered if the event cannot go.
        let deciding = approver.decide(&request);
        emitter.emit(requested).map_err(|_| state.cancelled(emitter))?;
        let decision = tokio::select! {
            biased;
            () = state.cancel.cancelled() => return Err(state.cancelled(emitter)),
            decision = deciding => decision,
        };
        let (shown, reason, gate) = match decision {
            ApprovalDecision::ApproveOnce => (Decision::ApproveOnce, None, Gate::Run(tool)),
            ApprovalDecision::ApproveForSession { scope } => {
                self.policy.grant(scope, &call.name, &call.arguments);
                (Decision::ApproveForSession, None, Gate::Run(tool))
            }
            ApprovalDecision::Deny { reason } => {
                let result = refusal(call, format!("denied by the approver: {reason}"));
                (Decision::Deny, Some(reason.to_string()), Gate::Done(result))
            }
        };
        emitter
            .emit(Event::ApprovalDecided { call_id: call.id, decision: shown, reason })
            .map_err(|_| state.cancelled(emitter))?;
        Ok(gate)
    }

    async fn run_parallel(
        &mut self,
        state: &mut TurnState,
        calls: &[Call],
        runnable: Vec<Runnable>,
        results: &mut [Option<Message>],
        emitter: &mut Emitter<'_>,
    ) -> Option<TurnErrorKind> {
        if state.cancel.is_cancelled() {
            return Some(state.cancelled(emitter));
        }
        let bounds = Bounds::of(&self.limits);
        let (progress_tx, mut progress) = ProgressQueue::channel();
        let mut running = FuturesUnordered::new();
        for run in runnable {
            let call = &calls[run.index];
            if let Err(stopped) = self.start_invocation(call, 1, emitter).await {
                // Calls already started keep running to completion below.
                return self.finish_running(state, calls, running, results, emitter, Some(stopped)).await;
            }
            running.push(
                attempt(run, 1, self.context(state, call, &progress_tx), bounds).map(Step::Ended).boxed(),
            );
        }
        loop {
            let step = tokio::select! {
                Some((call_id, message)) = progress.next() => {
                    let _ = emitter.emit(message.into_event(call_id));
                    continue;
                }
                step = running.next() => step,
            };
            let stopped = match step {
                None => break,
                Some(Step::Ended(mut ended)) => {
                    let call = &calls[ended.index];
                    forward_progress(&mut progress, call.id, emitter);
                    match ended.retry(&state.cancel) {
                        Some((run, delay)) => {
                            let next = ended.attempt + 1;
                            retrying(emitter, call, next, delay, &ended.output);
                            running.push(backoff(run, next, ended.output, delay, state.cancel.clone()));
                            continue;
                        }
                        None => self
                            .finish_invocation(state, ended.index, call, ended.output, results, emitter)
                            .await
                            .err(),
                    }
                }
                Some(Step::Due { run, attempt: number, last }) => {
                    let call = &calls[run.index];
                    if state.cancel.is_cancelled() {
                        self.finish_invocation(state, run.index, call, last, results, emitter).await.err()
                    } else if let Err(stopped) = self.start_invocation(call, number, emitter).await {
                        self.keep_in_memory(run.index, call, last, results, emitter);
                        Some(stopped)
                    } else {
                        let context = self.context(state, call, &progress_tx);
                        running.push(attempt(run, number, context, bounds).map(Step::Ended).boxed());
                        continue;
                    }
                }
            };
            if let Some(stopped) = stopped {
                return self.finish_running(state, calls, running, results, emitter, Some(stopped)).await;
            }
        }
        state.cancel.is_cancelled().then(|| state.cancelled(emitter))
    }

    /// Waits for calls already running after the journal failed, so no tool
    /// outlives the turn; their results stay in memory only. A call waiting
    /// to retry ends with the failure it had.
    async fn finish_running(
        &mut self,
        state: &mut TurnState,
        calls: &[Call],
        mut running: FuturesUnordered<BoxFuture<'static, Step>>,
        results: &mut [Option<Message>],
        emitter: &mut Emitter<'_>,
        stopped: Option<TurnErrorKind>,
    ) -> Option<TurnErrorKind> {
        state.cancel.cancel();
        while let Some(step) = running.next().await {
            let (index, output) = step.into_final();
            self.keep_in_memory(index, &calls[index], output, results, emitter);
        }
        stopped
    }

    /// A call's result when the journal can no longer take it.
    fn keep_in_memory(
        &self,
        index: usize,
        call: &Call,
        output: ToolOutput,
        results: &mut [Option<Message>],
        emitter: &mut Emitter<'_>,
    ) {
        let result = self.result_message(call, output);
        end_event(emitter, &result);
        results[index] = Some(result);
    }

    async fn run_sequential(
        &mut self,
        state: &mut TurnState,
        calls: &[Call],
        runnable: Vec<Runnable>,
        results: &mut [Option<Message>],
        emitter: &mut Emitter<'_>,
    ) -> Option<TurnErrorKind> {
        let bounds = Bounds::of(&self.limits);
        let (progress_tx, mut progress) = ProgressQueue::channel();
        for run in runnable {
            if state.cancel.is_cancelled() {
                return Some(state.cancelled(emitter));
            }
            let (index, call) = (run.index, &calls[run.index]);
            if let Err(stopped) = self.start_invocation(call, 1, emitter).await {
                return Some(stopped);
            }
            let mut work = attempt(run, 1, self.context(state, call, &progress_tx), bounds);
            let output = loop {
                let mut ended = loop {
                    tokio::select! {
                        Some((call_id, message)) = progress.next() => {
                            let _ = emitter.emit(message.into_event(call_id));
                        }
                        ended = &mut work => break ended,
                    }
                };
                forward_progress(&mut progress, call.id, emitter);
                let Some((run, delay)) = ended.retry(&state.cancel) else { break ended.output };
                let next = ended.attempt + 1;
                retrying(emitter, call, next, delay, &ended.output);
                wait_before_retry(delay, &state.cancel).await;
                if state.cancel.is_cancelled() {
                    break ended.output;
                }
                if let Err(stopped) = self.start_invocation(call, next, emitter).await {
                    self.keep_in_memory(index, call, ended.output, results, emitter);
                    return Some(stopped);
                }
                work = attempt(run, next, self.context(state, call, &progress_tx), bounds);
            };
            if let Err(stopped) = self.finish_invocation(state, index, call, output, results, emitter).await {
                return Some(stopped);
            }
        }
        state.cancel.is_cancelled().then(|| state.cancelled(emitter))
    }

    fn context(&self, state: &TurnState, call: &Call, progress: &ProgressRoute) -> ToolContext {
        ToolContext {
            call_id: call.id,
            turn: state.turn,
            cancel: state.cancel.child_token(),
            progress: ProgressSink::new(call.id, progress.clone()),
        }
    }

    /// Journals that an attempt of a call may act from now on; the first
    /// is announced, later ones were announced by `tool_retry`.
    async fn start_invocation(
        &mut self,
        call: &Call,
        attempt: u32,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        self.record(JournalRecord::InvocationStarted { call_id: call.id, attempt }).await?;
        if attempt == 1 {
            let _ = emitter.emit(Event::ToolStart { call_id: call.id, name: call.name.clone() });
        }
        Ok(())
    }

    /// Records a call's result, after the `PostToolUse` hooks added what
    /// they had to say to it. The result is recorded whatever the hooks did
    /// (the call ran); a required hook's failure then stops the batch.
    async fn finish_invocation(
        &mut self,
        state: &TurnState,
        index: usize,
        call: &Call,
        output: ToolOutput,
        results: &mut [Option<Message>],
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        let mut result = self.bounded_result(call, output).await;
        let mut hook_failed = None;
        if self.hooks_want(HookPoint::PostToolUse)
            && let Message::ToolResult { content, is_error, .. } = &mut result
        {
            let input = HookInput::PostToolUse {
                turn: state.turn,
                call_id: call.id,
                tool_name: call.name.clone(),
                tool_input: call.arguments.clone(),
                tool_response: concat_text(content),
                is_error: *is_error,
            };
            match self.run_hooks(input, &state.cancel, emitter).await {
                Ok(verdict) => {
                    let said = verdict.notes.iter().chain(verdict.block.as_slice());
                    for (hook, text) in said {
                        content.push(ContentPart::text(format!("[hook {hook}] {text}")));
                    }
                }
                // The call's cancellation is the turn's; the batch sees it.
                Err(TurnErrorKind::Cancelled) => {}
                Err(other) => hook_failed = Some(other),
            }
        }
        end_event(emitter, &result);
        plan_event(emitter, call, &result);
        let recorded =
            self.record(JournalRecord::InvocationFinished { call_id: call.id, result: result.clone() });
        let recorded = recorded.await;
        results[index] = Some(result);
        recorded?;
        hook_failed.map_or(Ok(()), Err)
    }

    /// The output bound, with the whole of an over-long text kept as an
    /// artifact first when the session has a store (durable before the
    /// result naming it is journaled). A store that fails loses nothing the
    /// bound would have kept: the result is shortened as without one.
    async fn bounded_result(&self, call: &Call, mut output: ToolOutput) -> Message {
        let limit = self.limits.tool_output_bytes;
        if let Some(store) = &self.artifacts {
            for part in &mut output.content {
                let ContentPart::Text { text } = part else { continue };
                if text.len() <= limit {
                    continue;
                }
                match store.put(text).await {
                    Ok(id) => {
                        let note = crate::artifacts::artifact_note(&id, text.len());
                        let room = limit.saturating_sub(note.len()).max(256);
                        let mut short = shorten_middle(text, room).unwrap_or_else(|| text.clone());
                        short.push_str(&note);
                        *text = short;
                    }
                    Err(error) => tracing::warn!(%error, "a long output could not be kept as an artifact"),
                }
            }
        }
        self.result_message(call, output)
    }

    /// The tool policy's output bound: the middle of over-long text is cut.
    fn result_message(&self, call: &Call, output: ToolOutput) -> Message {
        let limit = self.limits.tool_output_bytes;
        let content = output
            .content
            .into_iter()
            .map(|part| match part {
                ContentPart::Text { text } => match shorten_middle(&text, limit) {
                    Some(short) => ContentPart::Text { text: short },
                    None => ContentPart::Text { text },
                },
                other => other,
            })
            .collect();
        Message::ToolResult {
            call_id: call.id,
            tool_name: call.name.clone(),
            content,
            is_error: output.is_error,
            usage: output.usage,
            spent_by: output.spent_by,
        }
    }
}

/// Invariant 6, second check: validates the value that will be dispatched
/// and hands back that very value, which `invoke` moves into
/// `Tool::execute`; nothing between this check and the call can change it.
/// (No step after the first check rewrites arguments today: an
/// `ApprovalDecision` carries none, `Tool::effects` and the approver see a
/// shared reference or a copy. Were one added, its value must pass here.)
fn dispatchable(tool: &ResolvedTool, call: &Call) -> Result<serde_json::Value, Message> {
    let arguments = call.arguments.clone();
    match tool.schema.validate(&arguments) {
        Ok(()) => Ok(arguments),
        Err(error) => Err(refusal(call, invalid_arguments(call, &error))),
    }
}

/// What the model is told about arguments that fail the schema. Adapters
/// keep argument text that is not JSON as a string, so say that rather than
/// "expected object, got string".
fn invalid_arguments(call: &Call, error: &dyn std::fmt::Display) -> String {
    match &call.arguments {
        serde_json::Value::String(raw) => match serde_json::from_str::<serde_json::Value>(raw) {
            Err(parse) => {
                format!("the arguments of `{}` are not valid JSON ({parse}); send one JSON object", call.name)
            }
            Ok(_) => format!(
                "the arguments of `{}` are a JSON string holding JSON, not an object; send the object itself",
                call.name
            ),
        },
        _ => format!("invalid arguments for `{}`: {error}", call.name),
    }
}

fn refusal(call: &Call, text: String) -> Message {
    Message::tool_result(call.id, &call.name, text, true)
}

fn end_event(emitter: &mut Emitter<'_>, result: &Message) {
    if let Message::ToolResult { call_id, tool_name, content, is_error, .. } = result {
        // The text as the model sees it, already within the output bound,
        // so a front end can show the whole of it (Ctrl+O in the terminal).
        let _ = emitter.emit(Event::ToolEnd {
            call_id: *call_id,
            name: tool_name.clone(),
            is_error: *is_error,
            output: concat_text(content),
        });
    }
}

/// Announces the plan an accepted `update_plan` call set. A tool of that
/// name that is not the core's plan tool has its arguments read the same
/// way, and announces nothing unless they are a plan.
fn plan_event(emitter: &mut Emitter<'_>, call: &Call, result: &Message) {
    if call.name != crate::plan::UPDATE_PLAN || result.is_error() {
        return;
    }
    if let Ok(plan) = crate::plan::Plan::from_tool_arguments(&call.arguments) {
        let _ = emitter.emit(Event::PlanUpdated { call_id: call.id, plan });
    }
}

/// Announces another attempt of `call` and the failure that led to it.
fn retrying(emitter: &mut Emitter<'_>, call: &Call, attempt: u32, delay: Duration, failed: &ToolOutput) {
    let error: String = concat_text(&failed.content).chars().take(EVENT_OUTPUT_CHARS).collect();
    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    let _ = emitter.emit(Event::ToolRetry { call_id: call.id, attempt, delay_ms, error });
}

/// Emits what an ended call's progress still holds: its last reports may
/// still be queued or held back when its result arrives, and belong before
/// its end event.
fn forward_progress(progress: &mut ProgressQueue, call: CallId, emitter: &mut Emitter<'_>) {
    for (call_id, message) in progress.finish(call) {
        let _ = emitter.emit(message.into_event(call_id));
    }
}
