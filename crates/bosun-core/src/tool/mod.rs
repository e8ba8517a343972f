//! The [`Tool`] trait: something the model can ask the session to do.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio_util::sync::CancellationToken;

use crate::message::{CallId, ContentPart};

pub(crate) mod definition;
pub(crate) mod effects;

pub use definition::{CancellationPolicy, ToolCategory, ToolDefinition};
use effects::CallEffects;

/// The future a tool's [`Tool::execute`] returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// A capability the session offers the model.
///
/// The session validates arguments against [`ToolDefinition::parameters`]
/// before approval and again before calling [`Tool::execute`], so `execute`
/// only ever sees an object that satisfies the schema.
pub trait Tool: Send + Sync {
    /// Name, description and parameter schema, as shown to the model.
    fn definition(&self) -> &ToolDefinition;

    /// What kind of effect the tool has; the permission pipeline decides on it.
    fn category(&self) -> ToolCategory;

    /// What cancellation may do to a running call. The default,
    /// [`CancellationPolicy::FinishOnceStarted`], is right for any tool whose
    /// work must not be cut off half way.
    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::FinishOnceStarted
    }

    /// Whether a call that failed transiently may run again. The default,
    /// [`RetryPolicy::Never`], is right for any tool whose call may have had
    /// an effect by the time it fails.
    fn retry(&self) -> RetryPolicy {
        RetryPolicy::Never
    }

    /// What a call with these (schema-valid) arguments would do: the paths it
    /// writes, the command line it runs. The permission pipeline checks rules
    /// by capability, command rules and protected paths against it, so a tool
    /// that writes files or runs commands should say so; the default reports
    /// nothing beyond the category.
    fn effects(&self, arguments: &serde_json::Value) -> CallEffects {
        let _ = arguments;
        CallEffects::none()
    }

    /// Runs the tool. Failures are reported in the output (`is_error`), never
    /// by panicking; a panic is caught and becomes an error result anyway.
    fn execute<'a>(&'a self, arguments: serde_json::Value, context: ToolContext) -> ToolFuture<'a>;
}

/// Whether the session runs a call again after a transient failure (an
/// output made with [`ToolOutput::transient`], or a timeout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryPolicy {
    /// One attempt only.
    #[default]
    Never,
    /// Running the call twice has the effect of running it once (a read, a
    /// lookup, a PUT of the same value), so a transient failure is retried,
    /// up to `attempts` in all (at most [`RetryPolicy::MAX_ATTEMPTS`]), with
    /// a doubling delay from [`RetryPolicy::FIRST_DELAY`]. Each attempt is
    /// journaled before it starts.
    Idempotent {
        /// Attempts in all, the first included.
        attempts: u32,
    },
}

impl RetryPolicy {
    /// The most attempts any tool gets.
    pub const MAX_ATTEMPTS: u32 = 5;
    /// The wait before the second attempt; each later wait doubles.
    pub const FIRST_DELAY: std::time::Duration = std::time::Duration::from_millis(500);

    /// The wait before attempt `next` (from 2), if the policy allows it.
    pub fn delay_before(self, next: u32) -> Option<std::time::Duration> {
        match self {
            Self::Never => None,
            Self::Idempotent { attempts } => {
                let allowed = attempts.min(Self::MAX_ATTEMPTS);
                (next >= 2 && next <= allowed).then(|| Self::FIRST_DELAY * 2u32.pow(next - 2))
            }
        }
    }
}

/// What a running tool gets besides its arguments.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolContext {
    /// The call being run.
    pub call_id: CallId,
    /// The turn it runs in, as the journal numbers turns (0 outside a
    /// session): what a wrapper that records the call's effects keys them
    /// by.
    pub turn: u64,
    /// Fires when the turn is cancelled or the call times out.
    pub cancel: CancellationToken,
    /// Where to report progress for presentation.
    pub progress: ProgressSink,
}

impl ToolContext {
    /// A context for running a tool outside a session (tests, examples).
    pub fn detached(call_id: CallId, cancel: CancellationToken) -> Self {
        Self { call_id, turn: 0, cancel, progress: ProgressSink::disconnected() }
    }
}

/// Sends progress lines of a running call to the session's event stream.
/// Progress is presentation only: when the consumer lags, lines are dropped,
/// but never a call's newest line or output (see [`ProgressRoute`]).
#[derive(Clone)]
pub struct ProgressSink {
    call_id: CallId,
    route: Option<ProgressRoute>,
    /// The number of this call's last report (shared by clones).
    sent: Arc<AtomicU64>,
}

/// One report of a running call, numbered per call from 1.
pub(crate) struct Report {
    pub(crate) call_id: CallId,
    pub(crate) seq: u64,
    pub(crate) progress: Progress,
}

/// Where a batch's calls report: a bounded channel, and beside it, for a
/// line or output that finds the channel full, each call's newest such
/// report, so the one a call ends on is shown even when the consumer lagged.
#[derive(Clone)]
pub(crate) struct ProgressRoute {
    pub(crate) sender: mpsc::Sender<Report>,
    pub(crate) overflow: Arc<Mutex<HashMap<CallId, (u64, Progress)>>>,
}

/// What a running call reports.
pub(crate) enum Progress {
    /// A line of progress.
    Line(String),
    /// The newest lines of the call's output, and how many it wrote.
    Output { tail: Vec<String>, lines: u64 },
    /// An event of a child session the call runs (a sub-agent).
    Child { child: String, event: Box<crate::event::Event> },
}

impl Progress {
    /// The parent's event for it.
    pub(crate) fn into_event(self, call_id: CallId) -> crate::event::Event {
        match self {
            Self::Line(message) => crate::event::Event::ToolProgress { call_id, message },
            Self::Output { tail, lines } => crate::event::Event::ToolOutput { call_id, tail, lines },
            Self::Child { child, event } => crate::event::Event::Subagent { call_id, child, event },
        }
    }
}

impl ProgressSink {
    pub(crate) fn new(call_id: CallId, route: ProgressRoute) -> Self {
        Self { call_id, route: Some(route), sent: Arc::new(AtomicU64::new(0)) }
    }

    /// A sink that discards everything.
    pub fn disconnected() -> Self {
        Self { call_id: CallId::from(uuid::Uuid::nil()), route: None, sent: Arc::new(AtomicU64::new(0)) }
    }

    /// Sends `progress`; a line or output that finds the channel full is
    /// kept aside as the call's newest.
    fn send(&self, progress: Progress) {
        let Some(route) = &self.route else { return };
        let seq = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        let report = Report { call_id: self.call_id, seq, progress };
        if let Err(TrySendError::Full(report) | TrySendError::Closed(report)) = route.sender.try_send(report)
        {
            if matches!(report.progress, Progress::Child { .. }) {
                return;
            }
            let mut overflow = route.overflow.lock().unwrap_or_else(PoisonError::into_inner);
            let newer = overflow.get(&self.call_id).is_none_or(|(kept, _)| *kept < seq);
            if newer {
                overflow.insert(self.call_id, (seq, report.progress));
            }
        }
    }

    /// Reports one line of progress.
    pub fn report(&self, message: impl Into<String>) {
        self.send(Progress::Line(message.into()));
    }

    /// Reports the newest lines of the call's output and how many lines
    /// it wrote so far: a `tool_output` event, which replaces the one
    /// before, so a tool reports at most a few a second and a dropped one
    /// loses nothing the next does not carry. Bounded here: the last
    /// [`OUTPUT_TAIL_LINES`](crate::event::OUTPUT_TAIL_LINES) lines, each cut to
    /// [`OUTPUT_LINE_BYTES`](crate::event::OUTPUT_LINE_BYTES).
    pub fn output(&self, mut tail: Vec<String>, lines: u64) {
        if self.route.is_some() {
            use crate::event::{OUTPUT_LINE_BYTES, OUTPUT_TAIL_LINES};
            tail.drain(..tail.len().saturating_sub(OUTPUT_TAIL_LINES));
            for line in &mut tail {
                if line.len() > OUTPUT_LINE_BYTES {
                    let mut end = OUTPUT_LINE_BYTES;
                    while !line.is_char_boundary(end) {
                        end -= 1;
                    }
                    line.truncate(end);
                }
            }
            self.send(Progress::Output { tail, lines });
        }
    }

    /// Passes on an event of a child session this call runs, tagged with
    /// the child's id (dropped, like progress, when the consumer lags).
    pub fn child_event(&self, child: &str, event: crate::event::Event) {
        self.send(Progress::Child { child: child.to_owned(), event: Box::new(event) });
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink")
            .field("call_id", &self.call_id)
            .field("connected", &self.route.is_some())
            .finish()
    }
}

/// What a tool returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// Text and images for the model.
    pub content: Vec<ContentPart>,
    /// Whether the call failed.
    pub is_error: bool,
    /// Whether the failure may pass if the call runs again (a busy server, a
    /// dropped connection); only tools with [`RetryPolicy::Idempotent`] are
    /// run again.
    pub transient: bool,
    /// Tokens the tool spent on a model while it ran (see
    /// [`ToolOutput::with_usage`]).
    pub usage: crate::message::Usage,
    /// Whose spending `usage` is (see [`ToolOutput::with_subagent_usage`]).
    pub spent_by: crate::message::SpentBy,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentPart::text(text)],
            is_error: false,
            transient: false,
            usage: Default::default(),
            spent_by: Default::default(),
        }
    }

    /// A failed result with a message for the model.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentPart::text(text)],
            is_error: true,
            transient: false,
            usage: Default::default(),
            spent_by: Default::default(),
        }
    }

    /// A failure that may pass on another attempt.
    pub fn transient(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentPart::text(text)],
            is_error: true,
            transient: true,
            usage: Default::default(),
            spent_by: Default::default(),
        }
    }

    /// Says the tool spent `usage` on a model (an MCP server's sampling,
    /// a sub-agent): the session adds it to the turn's usage and budget,
    /// and it is kept with the result.
    pub fn with_usage(mut self, usage: crate::message::Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Says sub-agents the tool ran spent `usage`: counted like
    /// [`ToolOutput::with_usage`], in the turn's sub-agent bucket.
    pub fn with_subagent_usage(mut self, usage: crate::message::Usage) -> Self {
        self.usage = usage;
        self.spent_by = crate::message::SpentBy::Subagents;
        self
    }

    /// A result from parts.
    pub fn new(content: Vec<ContentPart>, is_error: bool) -> Self {
        Self { content, is_error, transient: false, usage: Default::default(), spent_by: Default::default() }
    }
}
