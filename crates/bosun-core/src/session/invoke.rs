//! Running one call under the tool policy (invariant 8): timeout, hard
//! ceiling, panic capture, the tool's cancellation policy, and the retries
//! of an idempotent tool. The batch loop drives calls as [`Step`] futures, so
//! a call waiting to retry holds back neither its batch nor its journal.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::tools::ResolvedTool;
use crate::message::ContentPart;
use crate::tool::{CancellationPolicy, RetryPolicy, ToolContext, ToolOutput};

/// Result text of an interruptible call cut off by cancellation.
pub const CANCELLED: &str = "cancelled: the turn was cancelled while this call ran";

/// An approved call with the one argument value it will be dispatched with.
pub(super) struct Runnable {
    pub(super) index: usize,
    pub(super) tool: Arc<ResolvedTool>,
    pub(super) arguments: serde_json::Value,
}

/// An attempt that ended.
pub(super) struct Ended {
    pub(super) index: usize,
    pub(super) attempt: u32,
    pub(super) output: ToolOutput,
    /// The call again, for another attempt, when its tool may be retried.
    pub(super) again: Option<Runnable>,
}

impl Ended {
    /// The call to run again and the wait first, when this attempt failed
    /// transiently, its tool allows one more and the turn goes on.
    pub(super) fn retry(&mut self, cancel: &CancellationToken) -> Option<(Runnable, Duration)> {
        if !self.output.transient || cancel.is_cancelled() {
            return None;
        }
        let run = self.again.take()?;
        let delay = run.tool.retry.delay_before(self.attempt.saturating_add(1))?;
        Some((run, delay))
    }
}

/// What one of a call's futures yields to the parallel batch loop.
pub(super) enum Step {
    Ended(Ended),
    /// The wait before attempt `attempt` is over, or was cut short by
    /// cancellation; `last` is the failure that led to it.
    Due {
        run: Runnable,
        attempt: u32,
        last: ToolOutput,
    },
}

impl Step {
    /// The output a call ends with if the batch stops here.
    pub(super) fn into_final(self) -> (usize, ToolOutput) {
        match self {
            Self::Ended(ended) => (ended.index, ended.output),
            Self::Due { run, last, .. } => (run.index, last),
        }
    }
}

/// Runs attempt `attempt` of a call.
pub(super) fn attempt(
    run: Runnable,
    attempt: u32,
    context: ToolContext,
    bounds: Bounds,
) -> BoxFuture<'static, Ended> {
    // Only a tool that may run again needs its arguments after this attempt.
    let again = (run.tool.retry != RetryPolicy::Never).then(|| Runnable {
        index: run.index,
        tool: Arc::clone(&run.tool),
        arguments: run.arguments.clone(),
    });
    let index = run.index;
    Box::pin(async move {
        let output = invoke(run.tool, run.arguments, context, bounds).await;
        Ended { index, attempt, output, again }
    })
}

/// Waits `delay` before attempt `attempt`, for the parallel loop.
pub(super) fn backoff(
    run: Runnable,
    attempt: u32,
    last: ToolOutput,
    delay: Duration,
    cancel: CancellationToken,
) -> BoxFuture<'static, Step> {
    Box::pin(async move {
        wait_before_retry(delay, &cancel).await;
        Step::Due { run, attempt, last }
    })
}

/// Waits `delay`, or until the turn is cancelled.
pub(super) async fn wait_before_retry(delay: Duration, cancel: &CancellationToken) {
    tokio::select! {
        biased;
        () = cancel.cancelled() => {}
        () = tokio::time::sleep(delay) => {}
    }
}

/// The time bounds of one call: the tool timeout, then the ceiling after
/// which the session stops waiting (`Limits::tool_ceiling`).
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    timeout: Duration,
    ceiling: Duration,
}

impl Bounds {
    pub(super) fn of(limits: &crate::limits::Limits) -> Self {
        Self { timeout: limits.tool_timeout(), ceiling: limits.tool_ceiling() }
    }
}

/// Runs one call under the tool policy: timeout, hard ceiling, panic
/// capture (in `execute` itself and in its future), and the tool's
/// cancellation policy (invariant 13).
async fn invoke(
    tool: Arc<ResolvedTool>,
    arguments: serde_json::Value,
    context: ToolContext,
    bounds: Bounds,
) -> ToolOutput {
    let token: CancellationToken = context.cancel.clone();
    // A panic before the future exists is caught like one inside it.
    let work = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.tool.execute(arguments, context))) {
        Ok(work) => AssertUnwindSafe(work).catch_unwind(),
        Err(payload) => return settle(Err(payload)),
    };
    tokio::pin!(work);
    let timeout = bounds.timeout;
    let timed_out = |secs: f64| format!("timed out after {secs:.1} s");
    match tool.cancellation {
        CancellationPolicy::Interruptible => {
            tokio::select! {
                biased;
                () = token.cancelled() => ToolOutput::error(CANCELLED),
                finished = tokio::time::timeout(timeout, &mut work) => match finished {
                    Ok(result) => settle(result),
                    Err(_) => {
                        token.cancel();
                        ToolOutput::transient(timed_out(timeout.as_secs_f64()))
                    }
                },
            }
        }
        CancellationPolicy::FinishOnceStarted => match tokio::time::timeout(timeout, &mut work).await {
            Ok(result) => settle(result),
            Err(_) => {
                // Ask it to stop, then wait, but only up to the ceiling: this
                // tool must not be cut off, nor hang the turn.
                token.cancel();
                let grace = bounds.ceiling.saturating_sub(timeout);
                match tokio::time::timeout(grace, &mut work).await {
                    Ok(result) => {
                        let mut output = settle(result);
                        output.is_error = true;
                        output.transient = true;
                        let note = format!("{}; output so far:\n", timed_out(timeout.as_secs_f64()));
                        output.content.insert(0, ContentPart::text(note));
                        output
                    }
                    // Dropped now, so another attempt cannot overlap it.
                    Err(_) => ToolOutput::transient(format!(
                        "{}; it did not stop within {:.1} s more and was given up; \
                         it may have had an effect",
                        timed_out(timeout.as_secs_f64()),
                        grace.as_secs_f64()
                    )),
                }
            }
        },
    }
}

fn settle(result: Result<ToolOutput, Box<dyn Any + Send>>) -> ToolOutput {
    result.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-text panic payload".to_owned());
        ToolOutput::error(format!("the tool panicked: {message}"))
    })
}
