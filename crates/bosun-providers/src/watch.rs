//! The one timer over each wait for the server: the shortest of the limits
//! in force — the whole request, the first byte, the idle stream, or the
//! grace a finished stream gets to end. One wait rather than one per limit,
//! so that what is waited for and why is one record on the clock.
//!
//! The limits that span several waits are deadlines on
//! [`Sleeper::now`](crate::config::Sleeper::now):
//! the request's counts from its first attempt and holds until content
//! reaches the caller; the first byte's counts from the attempt's request
//! and holds until its first `data:` line.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::config::ProviderConfig;
use crate::failure::{Failure, span};

/// What a wait guards against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// [`ProviderConfig::request_timeout`]: not retried.
    Request,
    /// [`ProviderConfig::first_byte_timeout`].
    FirstByte,
    /// [`ProviderConfig::idle_timeout`].
    Idle,
    /// [`ProviderConfig::finish_grace`]: the response is taken as it is.
    Grace,
}

/// Where the attempt was when a limit passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Waiting for the response headers (or an error body).
    Headers,
    /// Reading the stream.
    Body,
}

/// One armed wait and the limit it stands for.
pub(crate) struct Watch {
    pub(crate) limit: Limit,
    pub(crate) sleep: Pin<Box<dyn Future<Output = ()> + Send>>,
}

/// The deadlines an attempt is under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadlines {
    /// The request's, while nothing reached the caller.
    pub(crate) request: Option<Instant>,
    /// The first byte's, until a `data:` line arrived.
    pub(crate) first_byte: Option<Instant>,
    /// The stream's finish reason is in: the grace replaces the idle limit.
    pub(crate) finished: bool,
}

impl Watch {
    /// Arms the shortest limit in force. A tie goes to the earlier in
    /// [`Limit`]'s order, the one whose failure says more.
    pub(crate) fn arm(config: &ProviderConfig, deadlines: Deadlines) -> Self {
        let now = config.sleeper.now();
        let left = |deadline: Instant| deadline.saturating_duration_since(now);
        let last = match deadlines.finished {
            true => (Limit::Grace, config.finish_grace),
            false => (Limit::Idle, config.idle_timeout),
        };
        let candidates = [
            deadlines.request.map(|d| (Limit::Request, left(d))),
            deadlines.first_byte.map(|d| (Limit::FirstByte, left(d))),
            Some(last),
        ];
        let mut best: Option<(Limit, Duration)> = None;
        for candidate in candidates.into_iter().flatten() {
            if best.is_none_or(|b| candidate.1 < b.1) {
                best = Some(candidate);
            }
        }
        let (limit, wait) = best.unwrap_or(last);
        Self { limit, sleep: config.sleeper.sleep(wait) }
    }
}

/// `start + after`, or `None` past what the clock can hold (no deadline).
pub(crate) fn deadline(start: Instant, after: Duration) -> Option<Instant> {
    start.checked_add(after)
}

/// The failure for `limit` passing at `stage` of attempt `attempt`.
pub(crate) fn passed(config: &ProviderConfig, limit: Limit, stage: Stage, attempt: u32) -> Failure {
    let (what, retryable) = match (limit, stage) {
        (Limit::Request, _) => {
            let attempts = if attempt == 1 { "1 attempt".to_owned() } else { format!("{attempt} attempts") };
            let what = format!(
                "no response within {} of the request (the request timeout; {attempts})",
                span(config.request_timeout)
            );
            (what, false)
        }
        (Limit::FirstByte, Stage::Headers) => (
            format!(
                "no response within {} of sending the request (first-byte timeout)",
                span(config.first_byte_timeout)
            ),
            true,
        ),
        (Limit::FirstByte, Stage::Body) => (
            format!(
                "no data within {} of sending the request (first-byte timeout)",
                span(config.first_byte_timeout)
            ),
            true,
        ),
        (Limit::Idle, Stage::Headers) => {
            (format!("no response within {}: the connection stalled", span(config.idle_timeout)), true)
        }
        (Limit::Idle | Limit::Grace, Stage::Body) | (Limit::Grace, Stage::Headers) => {
            (format!("no data for {}: the stream stalled", span(config.idle_timeout)), true)
        }
    };
    let reason = what.clone();
    Failure::network(config, &what, reason, retryable)
}
