//! Hooks: the points of a session's life where an embedder's code is asked
//! (the extension model of the seeds' yoagent guide). Command hooks, the
//! protocol users write for other agents, are one implementation of
//! [`SessionHooks`] (in `bosun-tools`).
//!
//! A hook can only narrow what happens: it may block a prompt or a call, ask
//! for approval of a call the rules allow, add a note for the model, keep
//! the agent going after it answered; it cannot allow what the mode or the
//! rules deny, and what it replaces in a call's arguments passes the schema
//! and the permission pipeline again.
//!
//! Every run is contained: it is raced against the hook's timeout and the
//! turn's cancellation, and a panic is caught. An advisory hook that panics
//! or times out is switched off for the rest of the session with a warning;
//! a required one fails the turn (its checkpoint kept, invariant 12). Each
//! run is a `hook_run` event and a `hook_ran` journal record.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::message::{CallId, Usage};

pub(crate) mod run;

pub use run::{ALL_POINTS, HookOutcome, HookPoint, HookRun};

/// The future a hook's [`SessionHooks::run`] returns.
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<HookDecision, HookError>> + Send + 'a>>;

/// How long a hook may run unless it says otherwise.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// How often one turn's `Stop` hooks may keep the agent going before bosun
/// lets it stop anyway (a hook that always blocks would loop for ever).
pub const MAX_STOP_CONTINUATIONS: u32 = 5;

/// Longest reason or note kept from one hook, in bytes; the rest is cut.
pub const HOOK_TEXT_BYTES: usize = 16 * 1024;

/// Code an embedder runs at the points of a session's life.
///
/// Every method but [`SessionHooks::run`] has a default. A hook sees each
/// point it [`wants`](SessionHooks::wants), in the order hooks were added;
/// the first that blocks ends that point's round of hooks.
pub trait SessionHooks: Send + Sync {
    /// Names the hook in events, the journal and warnings.
    fn name(&self) -> &str;

    /// Whether the hook wants to be asked at `point`. The default: every
    /// point.
    fn wants(&self, point: HookPoint) -> bool {
        let _ = point;
        true
    }

    /// Whether the hook wants this very input (a tool-name matcher, say); a
    /// hook that does not is not run, and no run is recorded. The default:
    /// [`SessionHooks::wants`] of its point.
    fn wants_input(&self, input: &HookInput) -> bool {
        self.wants(input.point())
    }

    /// Whether the hook's failure (a panic, a timeout) fails the turn. The
    /// default, advisory, switches the hook off with a warning instead.
    fn required(&self) -> bool {
        false
    }

    /// How long one run may take.
    fn timeout(&self) -> Duration {
        DEFAULT_HOOK_TIMEOUT
    }

    /// Runs the hook at one point. A decision that does not fit the point
    /// (asking at `Stop`, say) is ignored and shown as such.
    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a>;

    /// Sees every event of the session's turns as it is emitted. Must not
    /// block: it runs on the turn's task. A panic switches it off.
    fn on_event(&self, event: &Event) {
        let _ = event;
    }
}

/// What a hook is shown at its point.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum HookInput {
    /// A session object's first turn is about to start.
    SessionStart {
        /// `startup` for a new session, `resume` for one with history.
        source: StartSource,
    },
    /// A prompt, before its turn starts.
    UserPromptSubmit {
        /// The turn it would start.
        turn: u64,
        /// The prompt's text.
        prompt: String,
    },
    /// A call, after its schema check and before permission.
    PreToolUse {
        /// The turn.
        turn: u64,
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        tool_name: String,
        /// The arguments (schema-valid).
        tool_input: serde_json::Value,
    },
    /// A call's result, before it is recorded.
    PostToolUse {
        /// The turn.
        turn: u64,
        /// Session-minted id.
        call_id: CallId,
        /// The tool.
        tool_name: String,
        /// The arguments it ran with.
        tool_input: serde_json::Value,
        /// The result's text (after the output bound).
        tool_response: String,
        /// Whether the result is an error.
        is_error: bool,
    },
    /// A compaction is about to run.
    PreCompact {
        /// The turn, when one is running.
        turn: Option<u64>,
        /// What asked for it.
        trigger: CompactTrigger,
    },
    /// The model answered; the turn is about to end.
    Stop {
        /// The turn.
        turn: u64,
        /// The answer's text.
        answer: String,
        /// Whether a `Stop` hook already kept this run going.
        stop_hook_active: bool,
    },
    /// A delegated child answered.
    SubagentStop {
        /// The child's turn.
        turn: u64,
        /// The answer's text.
        answer: String,
        /// Whether a `SubagentStop` hook already kept this child going.
        stop_hook_active: bool,
    },
    /// A model request is about to be sent.
    BeforeModel {
        /// The turn.
        turn: u64,
        /// The round within the turn, from 1.
        round: u32,
    },
    /// A model response arrived and is about to be committed.
    AfterModel {
        /// The turn.
        turn: u64,
        /// The round.
        round: u32,
        /// The response's text.
        text: String,
        /// The tools it calls, in order.
        tool_calls: Vec<String>,
        /// Its usage.
        usage: Usage,
    },
}

impl HookInput {
    /// The point this input is for.
    pub fn point(&self) -> HookPoint {
        match self {
            Self::SessionStart { .. } => HookPoint::SessionStart,
            Self::UserPromptSubmit { .. } => HookPoint::UserPromptSubmit,
            Self::PreToolUse { .. } => HookPoint::PreToolUse,
            Self::PostToolUse { .. } => HookPoint::PostToolUse,
            Self::PreCompact { .. } => HookPoint::PreCompact,
            Self::Stop { .. } => HookPoint::Stop,
            Self::SubagentStop { .. } => HookPoint::SubagentStop,
            Self::BeforeModel { .. } => HookPoint::BeforeModel,
            Self::AfterModel { .. } => HookPoint::AfterModel,
        }
    }

    /// The tool a `PreToolUse` or `PostToolUse` input is about.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            Self::PreToolUse { tool_name, .. } | Self::PostToolUse { tool_name, .. } => Some(tool_name),
            _ => None,
        }
    }

    /// The turn, when the point has one.
    pub fn turn(&self) -> Option<u64> {
        match self {
            Self::SessionStart { .. } => None,
            Self::PreCompact { turn, .. } => *turn,
            Self::UserPromptSubmit { turn, .. }
            | Self::PreToolUse { turn, .. }
            | Self::PostToolUse { turn, .. }
            | Self::Stop { turn, .. }
            | Self::SubagentStop { turn, .. }
            | Self::BeforeModel { turn, .. }
            | Self::AfterModel { turn, .. } => Some(*turn),
        }
    }
}

/// Why a session object starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StartSource {
    /// A new session.
    Startup,
    /// A session resumed from its journal, or built with history.
    Resume,
}

/// What asked for a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactTrigger {
    /// The estimate passed the threshold, or the provider said the request
    /// was too long.
    Auto,
    /// Asked for outside a turn (`Session::compact_now`).
    Manual,
}

/// What a hook decided.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum HookDecision {
    /// Nothing to say.
    Continue,
    /// Context for the model: at `SessionStart` and `UserPromptSubmit` it
    /// joins the turn's user message (stored), at `PostToolUse` the result
    /// (stored), at `BeforeModel` the request's latest user message (sent
    /// once, never stored).
    Note(String),
    /// `UserPromptSubmit`: the prompt is refused and no turn starts.
    /// `PreToolUse`: the call is refused with this reason. `PostToolUse`: the
    /// reason joins the result for the model. `Stop` / `SubagentStop`: the
    /// agent goes on, with the reason as its next prompt. `BeforeModel` /
    /// `AfterModel`: the turn stops.
    Block(String),
    /// `PreToolUse`: the approver is asked even where the rules allow the
    /// call or a session grant covers it (a denial stays a denial).
    Ask(String),
    /// `PreToolUse`: the call runs with these arguments instead, checked
    /// against the tool's schema and gated again from the permission step.
    UpdateInput(serde_json::Value),
}

/// A hook that failed without a panic or a timeout (a command's unexpected
/// exit status, say): shown to the user, and the point goes on as if the
/// hook had said nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    message: String,
}

impl HookError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A required hook that panicked or timed out: the turn fails with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the required hook `{hook}` {what} at {point}")]
#[non_exhaustive]
pub struct HookFailure {
    /// The hook.
    pub hook: String,
    /// The point.
    pub point: HookPoint,
    /// `panicked` or `timed out after N ms`.
    pub what: String,
}

/// The session's hooks, with each one's switch.
#[derive(Clone, Default)]
pub(crate) struct HookSet {
    hooks: Vec<Arc<Entry>>,
}

struct Entry {
    hook: Arc<dyn SessionHooks>,
    off: AtomicBool,
}

/// What the hooks at one point decided, together.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// Notes, in hook order, each with its hook's name.
    pub(crate) notes: Vec<(String, String)>,
    /// The first block: hook name and reason.
    pub(crate) block: Option<(String, String)>,
    /// The first ask: hook name and reason.
    pub(crate) ask: Option<(String, String)>,
    /// The last replacement of a call's arguments: hook name and value.
    pub(crate) update: Option<(String, serde_json::Value)>,
}

impl Verdict {
    /// Every note as one text for the model, each line naming its hook.
    pub(crate) fn notes_text(&self) -> Option<String> {
        if self.notes.is_empty() {
            return None;
        }
        let lines: Vec<String> =
            self.notes.iter().map(|(hook, note)| format!("[hook {hook}] {note}")).collect();
        Some(lines.join("\n"))
    }
}

impl HookSet {
    pub(crate) fn push(&mut self, hook: Arc<dyn SessionHooks>) {
        self.hooks.push(Arc::new(Entry { hook, off: AtomicBool::new(false) }));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook still on wants `point` (so the caller can skip
    /// building an input nobody reads).
    pub(crate) fn wants(&self, point: HookPoint) -> bool {
        self.hooks.iter().any(|entry| !entry.off.load(Ordering::Relaxed) && wants(&entry.hook, point))
    }

    /// Shows `event` to every observer still on; one that panics is off.
    pub(crate) fn observe(&self, event: &Event) {
        for entry in &self.hooks {
            if entry.off.load(Ordering::Relaxed) {
                continue;
            }
            let seen = std::panic::catch_unwind(AssertUnwindSafe(|| entry.hook.on_event(event)));
            if seen.is_err() {
                entry.off.store(true, Ordering::Relaxed);
                tracing::warn!(hook = entry.hook.name(), "a hook panicked observing an event; it is off");
            }
        }
    }

    /// Runs every hook that wants `input`'s point, in order, each contained.
    /// `report` sees each run as it ends (the caller emits and journals it).
    /// Stops at the first block. `Err` when a required hook failed.
    pub(crate) async fn run(
        &self,
        input: &HookInput,
        mut report: impl FnMut(HookRun),
    ) -> Result<Verdict, HookFailure> {
        let point = input.point();
        let mut verdict = Verdict::default();
        for entry in &self.hooks {
            if entry.off.load(Ordering::Relaxed) || !wants_input(&entry.hook, input) {
                continue;
            }
            let name = entry.hook.name().to_owned();
            let limit = entry.hook.timeout();
            let started = tokio::time::Instant::now();
            // A panic while making the future counts as one while running it.
            let ended = match std::panic::catch_unwind(AssertUnwindSafe(|| entry.hook.run(input))) {
                Ok(future) => tokio::time::timeout(limit, AssertUnwindSafe(future).catch_unwind()).await,
                Err(_) => Ok(Err(Box::new(()) as Box<dyn std::any::Any + Send>)),
            };
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let mut run = HookRun {
                point,
                hook: name.clone(),
                duration_ms,
                outcome: HookOutcome::Continued,
                reason: None,
                switched_off: false,
            };
            let failed = match ended {
                Err(_) => Some((HookOutcome::TimedOut, format!("timed out after {} ms", limit.as_millis()))),
                Ok(Err(_)) => Some((HookOutcome::Panicked, "panicked".to_owned())),
                Ok(Ok(Err(error))) => {
                    run.outcome = HookOutcome::Failed;
                    run.reason = Some(bounded(error.message()));
                    None
                }
                Ok(Ok(Ok(decision))) => {
                    apply(point, &name, decision, &mut run, &mut verdict);
                    None
                }
            };
            if let Some((outcome, what)) = failed {
                run.outcome = outcome;
                run.reason = Some(what.clone());
                if entry.hook.required() {
                    report(run);
                    return Err(HookFailure { hook: name, point, what });
                }
                entry.off.store(true, Ordering::Relaxed);
                run.switched_off = true;
                tracing::warn!(hook = %name, %point, %what, "an advisory hook failed; it is off for this session");
            }
            report(run);
            if verdict.block.is_some() {
                break;
            }
        }
        Ok(verdict)
    }
}

/// A hook's `wants_input`, with a panic in it read as "no".
fn wants_input(hook: &Arc<dyn SessionHooks>, input: &HookInput) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| hook.wants_input(input))).unwrap_or(false)
}

/// A hook's `wants`, with a panic in it read as "no".
fn wants(hook: &Arc<dyn SessionHooks>, point: HookPoint) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| hook.wants(point))).unwrap_or(false)
}

/// Folds one decision into the point's verdict, ignoring what the point
/// does not take.
fn apply(point: HookPoint, name: &str, decision: HookDecision, run: &mut HookRun, verdict: &mut Verdict) {
    use HookPoint as P;
    let takes_notes =
        matches!(point, P::SessionStart | P::UserPromptSubmit | P::PostToolUse | P::BeforeModel);
    let takes_block = !matches!(point, P::SessionStart | P::PreCompact);
    match decision {
        HookDecision::Continue => {}
        HookDecision::Note(note) if takes_notes => {
            let note = bounded(&note);
            run.outcome = HookOutcome::Noted;
            run.reason = Some(note.clone());
            verdict.notes.push((name.to_owned(), note));
        }
        HookDecision::Block(reason) if takes_block => {
            let reason = bounded(&reason);
            run.outcome = HookOutcome::Blocked;
            run.reason = Some(reason.clone());
            verdict.block = Some((name.to_owned(), reason));
        }
        HookDecision::Ask(reason) if point == P::PreToolUse => {
            let reason = bounded(&reason);
            run.outcome = HookOutcome::Asked;
            run.reason = Some(reason.clone());
            verdict.ask.get_or_insert((name.to_owned(), reason));
        }
        HookDecision::UpdateInput(value) if point == P::PreToolUse => {
            run.outcome = HookOutcome::UpdatedInput;
            run.reason = Some(bounded(&value.to_string()));
            verdict.update = Some((name.to_owned(), value));
        }
        _ => run.outcome = HookOutcome::Ignored,
    }
}

/// `text` cut to [`HOOK_TEXT_BYTES`] at a character boundary.
fn bounded(text: &str) -> String {
    if text.len() <= HOOK_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = HOOK_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut: {} bytes in all]", &text[..end], text.len())
}
