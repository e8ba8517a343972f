//! Events: what a turn shows while it runs. Presentation only; history and
//! the journal never depend on them.
//!
//! # JSON form
//!
//! Each event is one JSON object whose `type` field names it; the other
//! fields are the variant's, in `snake_case`. The tags are stable (pinned by
//! `wire_tag_freeze::event_json_form_is_frozen` in this module); new fields and new
//! event types may be added, so consumers should ignore what they do not know.
//! `docs/events.md` holds this table for readers, with the run's own first
//! and last lines (`init`, `result`); a tidy test keeps the two in step.
//!
//! | `type` | fields |
//! |---|---|
//! | `turn_start` | `turn` |
//! | `model_round_start` | `turn`, `round` |
//! | `text_delta` | `text` |
//! | `reasoning_delta` | `text` |
//! | `model_retry` | `attempt` (the one about to be made, from 2), `wait_ms`, `reason` |
//! | `tool_call_proposed` | `call_id`, `name`, `arguments` |
//! | `approval_requested` | `call_id`, `name`, `arguments`, `reason` |
//! | `approval_decided` | `call_id`, `decision` (`approve_once` / `approve_for_session` / `deny` / `denied_by_policy` / `denied_by_hook` / `granted`), `reason`? |
//! | `tool_start` | `call_id`, `name` |
//! | `tool_progress` | `call_id`, `message` |
//! | `tool_output` | `call_id`, `tail` (the newest lines of a running call's output, oldest first, at most [`OUTPUT_TAIL_LINES`] of at most [`OUTPUT_LINE_BYTES`] bytes each; a line still being written comes last), `lines` (lines written so far). Each replaces the one before; a tool sends at most a few a second (the shell: one per [`OUTPUT_INTERVAL_MS`] ms), and one may be dropped when the consumer lags, since the next carries the newest lines whole |
//! | `tool_retry` | `call_id`, `attempt` (the one about to run, from 2), `delay_ms`, `error` (the failure, shortened) |
//! | `tool_end` | `call_id`, `name`, `is_error`, `output` (the result's text as the model sees it: within the session's tool output bound, `Limits::tool_output_bytes`) |
//! | `plan_updated` | `call_id` (the `update_plan` call), `explanation`?, `steps` (each `{step, status}`, status `pending` / `in_progress` / `completed`): the model's whole plan as it now stands |
//! | `model_round_end` | `turn`, `round`, `usage` (the response's, as the provider reported it), `cost_micros`? (when the session has prices) |
//! | `turn_end` | `turn`, `outcome` (`completed` / `failed` / `cancelled`), `usage` (every bucket), `spend` (by bucket: `main`?, `compaction`?, `tools`?, `subagents`?, each `{usage, cost_micros?}`), `cost_micros`? (the whole turn's, when known), `stop_reason`? (a completed turn's: `stop`, `length`, `refusal`, …) |
//! | `error` | `kind`, `class`? (a model failure's class: `rate_limited`, `network`, `overflow`, …), `message` |
//! | `compacted` | `tier` (1 shortened old tool results, 2 summarized, 3 dropped), `before`, `after` (estimated prompt tokens), `usage` (of the summary request, tier 2) |
//! | `hook_run` | `point` (`SessionStart`, `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `PreCompact`, `Stop`, `SubagentStop`, `BeforeModel`, `AfterModel`), `hook`, `duration_ms`, `outcome` (`continued` / `noted` / `blocked` / `asked` / `updated_input` / `ignored` / `failed` / `timed_out` / `panicked`), `reason`? (the reason, note or error, bounded), `switched_off`? (an advisory hook turned off by this failure) |
//! | `subagent` | `call_id` (the parent's `delegate_tasks` call), `child` (the child session's id), `event` (the child's event, in this same form) |
//! | `message_delivered` | `turn`, `id` (the queue's id, from `Inbox::steer` / `Inbox::follow_up`), `delivery` (`steer` / `follow_up`) |
//! | `message_withdrawn` | `turn`, `id` (the queue's id), `hook`, `reason` (bounded): a `UserPromptSubmit` hook blocked a steering message at the safe point; it never entered history |
//! | `tools_changed` | `withdrawn`, `restored`, `added` (tool names; `added` changed the authority), `notices` (each list left out when empty) |

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::message::{CallId, Usage};
use crate::spend::Spend;

/// Lines a `tool_output` event carries at most.
pub const OUTPUT_TAIL_LINES: usize = 10;
/// Bytes of one line a `tool_output` event carries at most (the rest of a
/// longer line is left out).
pub const OUTPUT_LINE_BYTES: usize = 500;
/// How often a running shell call reports its newest lines at most, in
/// milliseconds.
pub const OUTPUT_INTERVAL_MS: u64 = 200;

/// One thing that happened during a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A turn began.
    TurnStart {
        /// The turn's number in this session, from 1.
        turn: u64,
    },
    /// The session is asking the model for a response.
    ModelRoundStart {
        /// The turn.
        turn: u64,
        /// The round within the turn, from 1.
        round: u32,
    },
    /// More answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// More reasoning text.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The model asked for a tool call.
    ToolCallProposed {
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        name: String,
        /// The arguments as given.
        arguments: serde_json::Value,
    },
    /// The approval handler is asked.
    ApprovalRequested {
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        name: String,
        /// The exact arguments.
        arguments: serde_json::Value,
        /// Why it asks.
        reason: String,
    },
    /// A call was approved or refused.
    ApprovalDecided {
        /// Session-minted id.
        call_id: CallId,
        /// The outcome.
        decision: Decision,
        /// Why, when refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A tool started.
    ToolStart {
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        name: String,
    },
    /// A running tool reported progress.
    ToolProgress {
        /// Session-minted id.
        call_id: CallId,
        /// The progress line.
        message: String,
    },
    /// A running tool's newest output lines (replacing the ones before).
    ToolOutput {
        /// Session-minted id.
        call_id: CallId,
        /// The newest lines, oldest first; a line still being written last.
        tail: Vec<String>,
        /// Lines written so far.
        lines: u64,
    },
    /// The model's response arrived: what it used.
    ModelRoundEnd {
        /// The turn.
        turn: u64,
        /// The round within the turn, from 1.
        round: u32,
        /// The response's usage.
        usage: Usage,
        /// Its cost in millionths of a dollar, when the session has prices.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_micros: Option<u64>,
    },
    /// The model's provider failed and its adapter tries the request again
    /// after the wait.
    ModelRetry {
        /// The attempt about to be made, from 2.
        attempt: u32,
        /// How long the adapter waits first, in milliseconds.
        wait_ms: u64,
        /// The failure of the last attempt.
        reason: String,
    },
    /// An idempotent tool failed transiently; the call runs again after
    /// the delay.
    ToolRetry {
        /// Session-minted id.
        call_id: CallId,
        /// The attempt about to run, from 2.
        attempt: u32,
        /// How long the session waits first, in milliseconds.
        delay_ms: u64,
        /// What the failed attempt said, shortened for display.
        error: String,
    },
    /// A call has its result (run, refused, or not run).
    ToolEnd {
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        name: String,
        /// Whether the result is an error.
        is_error: bool,
        /// The result's text as the model sees it (within the session's
        /// tool output bound).
        output: String,
    },
    /// The model set its plan (`update_plan`, accepted): the whole plan.
    PlanUpdated {
        /// The `update_plan` call.
        call_id: CallId,
        /// The plan.
        #[serde(flatten)]
        plan: crate::plan::Plan,
    },
    /// Between rounds, the session's tool source changed what is offered:
    /// tools withdrawn (their server died or dropped them), offered again
    /// (a restarted server), or added to the authority ceiling (journaled).
    ToolsChanged {
        /// Withdrawn tools.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        withdrawn: Vec<String>,
        /// Tools available again, unchanged.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restored: Vec<String>,
        /// Tools new to the ceiling, or with a changed definition.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        added: Vec<String>,
        /// What the source wants the person to know (untrusted text).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notices: Vec<String>,
    },
    /// Before a round, what is sent of history was compacted to fit the
    /// context window (history and the journal keep everything).
    Compacted {
        /// 1: old tool results shortened; 2: older units summarized by the
        /// model; 3: older units dropped.
        tier: u8,
        /// Estimated prompt tokens before.
        before: u64,
        /// Estimated prompt tokens after.
        after: u64,
        /// Estimated prompt tokens at the front of the request that did not
        /// change (system prompt, tools, history up to the first changed
        /// message): what a provider's prompt cache still holds. The rest
        /// is sent, and billed, as new on the next round.
        cached_prefix: u64,
        /// What the summary request used (zero for tiers 1 and 3).
        usage: Usage,
    },
    /// A hook ran at one of the session's points
    /// ([`SessionHooks`](crate::hooks::SessionHooks)); journaled as
    /// `hook_ran` too.
    HookRun {
        /// The point, the hook, how long and how it ended.
        #[serde(flatten)]
        run: crate::hooks::run::HookRun,
    },
    /// An event of a sub-agent's session, which the call `call_id` runs.
    Subagent {
        /// The parent's `delegate_tasks` call.
        call_id: CallId,
        /// The child session's id.
        child: String,
        /// The child's event.
        event: Box<Event>,
    },
    /// A turn ended.
    TurnEnd {
        /// The turn.
        turn: u64,
        /// How it ended.
        outcome: TurnOutcomeKind,
        /// Tokens used by the whole turn, every bucket together.
        usage: Usage,
        /// The same by bucket (main rounds, compaction, tools), priced.
        #[serde(default, skip_serializing_if = "Spend::is_zero")]
        spend: Spend,
        /// What the whole turn cost in millionths of a dollar, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_micros: Option<u64>,
        /// Why the model stopped, for a completed turn: `length` means the
        /// answer was cut at the output limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<crate::message::StopReason>,
    },
    /// A queued message ([`Inbox`](crate::Inbox)) entered history: steering
    /// at a safe point of the turn, or the prompt of a turn that delivers
    /// follow-ups (or steering a turn left waiting).
    MessageDelivered {
        /// The turn it entered.
        turn: u64,
        /// Its queue id.
        id: u64,
        /// Steering or a follow-up.
        delivery: crate::message::Delivery,
    },
    /// A queued steering message was not delivered: at the safe point a
    /// `UserPromptSubmit` hook blocked it, as it would block a turn's
    /// prompt. It never entered history and no longer waits (journaled as
    /// the hook's `hook_ran`, then `unqueued`). The turn goes on.
    MessageWithdrawn {
        /// The running turn.
        turn: u64,
        /// Its queue id.
        id: u64,
        /// The hook that blocked it.
        hook: String,
        /// The hook's reason (bounded).
        reason: String,
    },
    /// Something failed; the turn ends right after.
    Error {
        /// A stable, machine-readable kind (`model`, `protocol`, `limit`, …).
        kind: String,
        /// For a model failure, its class (`rate_limited`, `network`,
        /// `overflow`, …; `ModelError::class`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<String>,
        /// What happened.
        message: String,
    },
}

/// Approval outcomes as shown in events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Approved for this call.
    ApproveOnce,
    /// Approved, with a session grant.
    ApproveForSession,
    /// Refused by the approver.
    Deny,
    /// Refused by mode or rule without asking.
    DeniedByPolicy,
    /// Allowed by an earlier session grant without asking.
    Granted,
    /// Refused by a `PreToolUse` hook.
    DeniedByHook,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcomeKind {
    /// Answered.
    Completed,
    /// Failed; history holds the latest safe checkpoint.
    Failed,
    /// Cancelled; history holds the latest safe checkpoint.
    Cancelled,
}

/// The consumer of a turn's events. A failing sink cancels the turn
/// (invariant 14).
pub trait EventSink: Send {
    /// Takes one event.
    fn emit(&mut self, event: Event) -> Result<(), SinkError>;
}

/// The event consumer has gone away or failed, with why as its `source`
/// (an I/O error writing the output, a closed channel).
#[derive(Debug, Clone, thiserror::Error)]
#[error("event sink failed: {cause}")]
pub struct SinkError {
    // Shown in the message, so not also returned by `Error::source` (a
    // report that walks the chain would print it twice); `cause` hands it
    // out typed. Shared so the emitter can keep the first failure.
    cause: std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>,
}

impl SinkError {
    /// A failure caused by `source` (an error, or a message).
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self { cause: std::sync::Arc::from(source.into()) }
    }

    /// The underlying error, to downcast (an `std::io::Error`, say).
    pub fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.cause
    }
}

impl EventSink for Vec<Event> {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        self.push(event);
        Ok(())
    }
}

impl EventSink for mpsc::UnboundedSender<Event> {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        self.send(event).map_err(|_| SinkError::new("the event receiver was dropped"))
    }
}

/// Discards every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&mut self, _event: Event) -> Result<(), SinkError> {
        Ok(())
    }
}

/// A sink calling a closure.
pub struct FnSink<F>(pub F);

impl<F> std::fmt::Debug for FnSink<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnSink")
    }
}

impl<F> EventSink for FnSink<F>
where
    F: FnMut(Event) -> Result<(), SinkError> + Send,
{
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        (self.0)(event)
    }
}

/// Freezes each event's JSON tag and field names. A new variant does not
/// compile until it has a sample here (the match is exhaustive inside the
/// crate); payloads may gain fields, tags may not change.
#[cfg(test)]
mod wire_tag_freeze {
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn tag(event: &Event) -> &'static str {
        match event {
            Event::TurnStart { .. } => "turn_start",
            Event::ModelRoundStart { .. } => "model_round_start",
            Event::ModelRoundEnd { .. } => "model_round_end",
            Event::TextDelta { .. } => "text_delta",
            Event::ReasoningDelta { .. } => "reasoning_delta",
            Event::ToolCallProposed { .. } => "tool_call_proposed",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ToolStart { .. } => "tool_start",
            Event::ToolProgress { .. } => "tool_progress",
            Event::ToolOutput { .. } => "tool_output",
            Event::ToolRetry { .. } => "tool_retry",
            Event::ToolEnd { .. } => "tool_end",
            Event::PlanUpdated { .. } => "plan_updated",
            Event::TurnEnd { .. } => "turn_end",
            Event::Error { .. } => "error",
            Event::ModelRetry { .. } => "model_retry",
            Event::ToolsChanged { .. } => "tools_changed",
            Event::Compacted { .. } => "compacted",
            Event::HookRun { .. } => "hook_run",
            Event::Subagent { .. } => "subagent",
            Event::MessageDelivered { .. } => "message_delivered",
            Event::MessageWithdrawn { .. } => "message_withdrawn",
        }
    }

    #[test]
    fn event_json_form_is_frozen() {
        let id = CallId::from(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001));
        let idj = "01900000-0000-7000-8000-000000000001";
        let samples = vec![
            (Event::TurnStart { turn: 1 }, json!({"type": "turn_start", "turn": 1})),
            (
                Event::MessageDelivered { turn: 2, id: 3, delivery: crate::message::Delivery::FollowUp },
                json!({"type": "message_delivered", "turn": 2, "id": 3, "delivery": "follow_up"}),
            ),
            (
                Event::MessageWithdrawn { turn: 2, id: 4, hook: "guard".into(), reason: "no secrets".into() },
                json!({"type": "message_withdrawn", "turn": 2, "id": 4, "hook": "guard", "reason": "no secrets"}),
            ),
            (
                Event::ModelRoundStart { turn: 1, round: 2 },
                json!({"type": "model_round_start", "turn": 1, "round": 2}),
            ),
            (
                Event::ModelRoundEnd { turn: 1, round: 2, usage: Usage::new(3, 4), cost_micros: Some(70) },
                json!({"type": "model_round_end", "turn": 1, "round": 2, "usage":
                    {"input": 3, "output": 4, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                    "cost_micros": 70}),
            ),
            (Event::TextDelta { text: "hi".into() }, json!({"type": "text_delta", "text": "hi"})),
            (Event::ReasoningDelta { text: "hm".into() }, json!({"type": "reasoning_delta", "text": "hm"})),
            (
                Event::ToolCallProposed {
                    call_id: id,
                    name: "shell".into(),
                    arguments: json!({"command": "ls"}),
                },
                json!({"type": "tool_call_proposed", "call_id": idj, "name": "shell", "arguments": {"command": "ls"}}),
            ),
            (
                Event::ApprovalRequested {
                    call_id: id,
                    name: "shell".into(),
                    arguments: json!({}),
                    reason: "commands ask".into(),
                },
                json!({"type": "approval_requested", "call_id": idj, "name": "shell", "arguments": {}, "reason": "commands ask"}),
            ),
            (
                Event::ApprovalDecided { call_id: id, decision: Decision::Deny, reason: Some("no".into()) },
                json!({"type": "approval_decided", "call_id": idj, "decision": "deny", "reason": "no"}),
            ),
            (
                Event::ApprovalDecided { call_id: id, decision: Decision::ApproveForSession, reason: None },
                json!({"type": "approval_decided", "call_id": idj, "decision": "approve_for_session"}),
            ),
            (
                Event::ToolStart { call_id: id, name: "shell".into() },
                json!({"type": "tool_start", "call_id": idj, "name": "shell"}),
            ),
            (
                Event::ToolProgress { call_id: id, message: "50%".into() },
                json!({"type": "tool_progress", "call_id": idj, "message": "50%"}),
            ),
            (
                Event::ToolOutput {
                    call_id: id,
                    tail: vec!["Compiling a".into(), "Compil".into()],
                    lines: 41,
                },
                json!({"type": "tool_output", "call_id": idj, "tail": ["Compiling a", "Compil"], "lines": 41}),
            ),
            (
                Event::ToolRetry { call_id: id, attempt: 2, delay_ms: 500, error: "busy".into() },
                json!({"type": "tool_retry", "call_id": idj, "attempt": 2, "delay_ms": 500, "error": "busy"}),
            ),
            (
                Event::ToolEnd { call_id: id, name: "shell".into(), is_error: false, output: "ok".into() },
                json!({"type": "tool_end", "call_id": idj, "name": "shell", "is_error": false, "output": "ok"}),
            ),
            (
                Event::PlanUpdated {
                    call_id: id,
                    plan: crate::plan::Plan::new(vec![
                        crate::plan::PlanStep::new("read", crate::plan::StepStatus::Completed),
                        crate::plan::PlanStep::new("fix", crate::plan::StepStatus::InProgress),
                    ]),
                },
                json!({"type": "plan_updated", "call_id": idj, "steps": [
                    {"step": "read", "status": "completed"}, {"step": "fix", "status": "in_progress"}]}),
            ),
            (
                Event::TurnEnd {
                    turn: 1,
                    outcome: TurnOutcomeKind::Failed,
                    usage: Usage::new(3, 4),
                    spend: Spend::default(),
                    cost_micros: None,
                    stop_reason: None,
                },
                json!({"type": "turn_end", "turn": 1, "outcome": "failed", "usage":
                    {"input": 3, "output": 4, "cache_read": 0, "cache_write": 0, "reasoning": 0}}),
            ),
            (
                Event::TurnEnd {
                    turn: 1,
                    outcome: TurnOutcomeKind::Completed,
                    usage: Usage::new(3, 4),
                    spend: Spend {
                        main: crate::spend::Spent { usage: Usage::new(1, 3), cost_micros: Some(31) },
                        compaction: crate::spend::Spent { usage: Usage::new(2, 1), cost_micros: Some(12) },
                        ..Spend::default()
                    },
                    cost_micros: Some(43),
                    stop_reason: Some(crate::message::StopReason::Length),
                },
                json!({"type": "turn_end", "turn": 1, "outcome": "completed", "usage":
                    {"input": 3, "output": 4, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                    "spend": {
                        "main": {"usage": {"input": 1, "output": 3, "cache_read": 0, "cache_write": 0,
                            "reasoning": 0}, "cost_micros": 31},
                        "compaction": {"usage": {"input": 2, "output": 1, "cache_read": 0, "cache_write": 0,
                            "reasoning": 0}, "cost_micros": 12}},
                    "cost_micros": 43, "stop_reason": "length"}),
            ),
            (
                Event::Error { kind: "model".into(), class: None, message: "boom".into() },
                json!({"type": "error", "kind": "model", "message": "boom"}),
            ),
            (
                Event::Error {
                    kind: "model".into(),
                    class: Some("rate_limited".into()),
                    message: "slow".into(),
                },
                json!({"type": "error", "kind": "model", "class": "rate_limited", "message": "slow"}),
            ),
            (
                Event::ModelRetry { attempt: 2, wait_ms: 1500, reason: "HTTP 503".into() },
                json!({"type": "model_retry", "attempt": 2, "wait_ms": 1500, "reason": "HTTP 503"}),
            ),
            (
                Event::ToolsChanged {
                    withdrawn: vec!["mcp__a__x".into()],
                    restored: vec![],
                    added: vec!["mcp__a__y".into()],
                    notices: vec![],
                },
                json!({"type": "tools_changed", "withdrawn": ["mcp__a__x"], "added": ["mcp__a__y"]}),
            ),
            (
                Event::Compacted {
                    tier: 2,
                    before: 900,
                    after: 300,
                    cached_prefix: 120,
                    usage: Usage::new(5, 6),
                },
                json!({"type": "compacted", "tier": 2, "before": 900, "after": 300, "cached_prefix": 120, "usage":
                    {"input": 5, "output": 6, "cache_read": 0, "cache_write": 0, "reasoning": 0}}),
            ),
            (
                Event::HookRun {
                    run: crate::hooks::run::HookRun {
                        point: crate::hooks::run::HookPoint::PreToolUse,
                        hook: "guard".into(),
                        duration_ms: 12,
                        outcome: crate::hooks::run::HookOutcome::Blocked,
                        reason: Some("no rm".into()),
                        switched_off: false,
                    },
                },
                json!({"type": "hook_run", "point": "PreToolUse", "hook": "guard", "duration_ms": 12,
                    "outcome": "blocked", "reason": "no rm"}),
            ),
            (
                Event::HookRun {
                    run: crate::hooks::run::HookRun {
                        point: crate::hooks::run::HookPoint::Stop,
                        hook: "slow".into(),
                        duration_ms: 60_000,
                        outcome: crate::hooks::run::HookOutcome::TimedOut,
                        reason: None,
                        switched_off: true,
                    },
                },
                json!({"type": "hook_run", "point": "Stop", "hook": "slow", "duration_ms": 60000,
                    "outcome": "timed_out", "switched_off": true}),
            ),
            (
                Event::Subagent {
                    call_id: id,
                    child: "c1".into(),
                    event: Box::new(Event::TurnStart { turn: 1 }),
                },
                json!({"type": "subagent", "call_id": idj, "child": "c1", "event": {"type": "turn_start", "turn": 1}}),
            ),
        ];
        for (event, expected) in samples {
            let value = serde_json::to_value(&event).unwrap();
            assert_eq!(value, expected, "{}", tag(&event));
            assert_eq!(value["type"], tag(&event));
            let back: Event = serde_json::from_value(value).unwrap();
            assert_eq!(back, event, "round trip");
        }
    }

    #[test]
    fn unknown_fields_are_ignored_when_reading() {
        let event: Event =
            serde_json::from_value(json!({"type": "turn_start", "turn": 2, "future": true})).unwrap();
        assert_eq!(event, Event::TurnStart { turn: 2 });
    }
}
