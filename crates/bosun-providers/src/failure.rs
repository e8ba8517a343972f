//! A failed attempt as the retry decision sees it: the classified error,
//! whether another attempt may meet a different outcome, and the short
//! reason a retry notice gives.

use std::time::Duration;

use bosun_core::ModelError;

use crate::classify::{brief, is_retryable, is_transient_stream_error, stream_reason};
use crate::config::ProviderConfig;

/// One attempt's failure.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: ModelError,
    /// Worth another attempt, should nothing have reached the caller.
    pub(crate) retryable: bool,
    /// `HTTP 503: overloaded`, `connection refused`: for `Retrying`.
    pub(crate) reason: String,
}

impl Failure {
    /// A failure no attempt can mend (a cap, a broken protocol).
    pub(crate) fn fatal(error: ModelError) -> Self {
        Self { error, retryable: false, reason: String::new() }
    }

    /// A network failure described by `what` (`connecting to …: connection
    /// refused`).
    pub(crate) fn network(config: &ProviderConfig, what: &str, reason: String, retryable: bool) -> Self {
        Self { error: ModelError::Network(format!("{}: {what}", config.name)), retryable, reason }
    }

    /// A failure a decoder reported, judged by its kind alone (a stream
    /// that ended early is a network failure, and retried).
    pub(crate) fn decoded(config: &ProviderConfig, error: ModelError) -> Self {
        let retryable = is_retryable(&error);
        let reason = reason_of(config, &error);
        Self { error, retryable, reason }
    }

    /// A failure a decoder reported for the event `data`: an error event is
    /// retried when it reports a passing failure of the provider (its
    /// `server_error`, `api_error`, `overloaded_error`, a 5xx code) and
    /// classified as a server error or a rate limit.
    pub(crate) fn from_event(config: &ProviderConfig, error: ModelError, data: &str) -> Self {
        let retryable = match &error {
            ModelError::Network(_) | ModelError::RateLimited { .. } => true,
            ModelError::Server(_) => is_transient_stream_error(data),
            _ => false,
        };
        let reason = match &error {
            ModelError::Network(_) => reason_of(config, &error),
            _ => stream_reason(data, config).unwrap_or_else(|| reason_of(config, &error)),
        };
        Self { error, retryable, reason }
    }
}

/// The error's own text, without the provider's name in front, short.
fn reason_of(config: &ProviderConfig, error: &ModelError) -> String {
    let text = match error {
        ModelError::RateLimited { message, .. } => message.clone(),
        ModelError::Network(m)
        | ModelError::QuotaExceeded(m)
        | ModelError::ContextOverflow(m)
        | ModelError::Authentication(m)
        | ModelError::InvalidRequest(m)
        | ModelError::Server(m)
        | ModelError::Protocol(m)
        | ModelError::Other(m) => m.clone(),
        other => other.to_string(),
    };
    let prefix = format!("{}: ", config.name);
    brief(text.strip_prefix(&prefix).unwrap_or(&text))
}

/// `error` with `note` added to its message.
pub(crate) fn annotate(error: ModelError, note: &str) -> ModelError {
    match error {
        ModelError::RateLimited { message, retry_after_ms } => {
            ModelError::RateLimited { message: format!("{message}{note}"), retry_after_ms }
        }
        ModelError::Network(m) => ModelError::Network(format!("{m}{note}")),
        ModelError::QuotaExceeded(m) => ModelError::QuotaExceeded(format!("{m}{note}")),
        ModelError::ContextOverflow(m) => ModelError::ContextOverflow(format!("{m}{note}")),
        ModelError::Authentication(m) => ModelError::Authentication(format!("{m}{note}")),
        ModelError::InvalidRequest(m) => ModelError::InvalidRequest(format!("{m}{note}")),
        ModelError::Server(m) => ModelError::Server(format!("{m}{note}")),
        ModelError::Protocol(m) => ModelError::Protocol(format!("{m}{note}")),
        ModelError::Other(m) => ModelError::Other(format!("{m}{note}")),
        other => other,
    }
}

/// A rate limit whose server asked for a longer wait than `max`: not
/// waited for; the message says when to retry.
pub(crate) fn wait_too_long(error: ModelError, asked: Duration, max: Duration) -> ModelError {
    let note = format!(
        "; retry after {}: the server asked for a longer wait than the {} this client waits \
         (max_retry_after)",
        span(asked),
        span(max)
    );
    annotate(error, &note)
}

/// `300 s`, `0.1 s`, `1.5 s`.
pub(crate) fn span(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Api;

    #[test]
    fn a_wait_too_long_keeps_the_kind_and_says_when_to_retry() {
        let limited = ModelError::RateLimited {
            message: "x returned HTTP 429: slow".into(),
            retry_after_ms: Some(90_000),
        };
        let error = wait_too_long(limited, Duration::from_secs(90), Duration::from_secs(60));
        assert_eq!(
            error.to_string(),
            "rate limited: x returned HTTP 429: slow; retry after 90 s: the server asked for a longer wait \
             than the 60 s this client waits (max_retry_after)"
        );
        assert!(matches!(error, ModelError::RateLimited { retry_after_ms: Some(90_000), .. }));
    }

    #[test]
    fn reasons_drop_the_provider_name() {
        let config = ProviderConfig::new("acme", Api::OpenAiChat, "http://x");
        let error = ModelError::Network("acme: the stream ended before message_stop".into());
        assert_eq!(Failure::decoded(&config, error).reason, "the stream ended before message_stop");
    }
}
