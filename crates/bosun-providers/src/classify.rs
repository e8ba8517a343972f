//! Error classification: one table of context-overflow phrases and
//! rate-limit codes, applied to HTTP errors and to errors inside a stream
//! alike, so every API reports the same `ModelError` kinds.

use std::time::Duration;

use bosun_core::ModelError;
use serde_json::Value;

use crate::config::ProviderConfig;

/// Phrases providers use for a prompt larger than the context window
/// (lower case; matched as substrings of the lower-cased message).
pub const OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the context",
    "exceeds the maximum number of tokens",
    "input token count",
    "reduce the length of the messages",
    "available context size",
    "request too large for model",
    "model_context_window_exceeded",
];

/// Error codes and types that mean "slow down and retry".
pub const RATE_LIMIT_CODES: &[&str] = &[
    "rate_limit_exceeded",
    "rate_limit_error",
    "overloaded_error",
    "too_many_requests",
    "resource_exhausted",
    "unavailable",
    "insufficient_quota_temporary",
    "server_is_overloaded",
    "slow_down",
];

/// The longest error body kept in a message.
const MAX_MESSAGE: usize = 600;

/// The message, type and code of an error payload in any of the shapes the
/// APIs use: `{"error":{"message","type","code"}}`, `{"error":"text"}`,
/// `{"type":"error","error":{…}}`, `{"message": …}`, Gemini's
/// `{"error":{"code":429,"message","status"}}`, or a bare array of those.
pub fn error_fields(value: &Value) -> (String, Vec<String>) {
    let value = match value {
        Value::Array(items) => items.first().unwrap_or(value),
        other => other,
    };
    let inner = value.get("error").unwrap_or(value);
    let message = match inner {
        Value::String(text) => text.clone(),
        _ => inner.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
    };
    let mut codes = Vec::new();
    for key in ["type", "code", "status"] {
        match inner.get(key) {
            Some(Value::String(code)) => codes.push(code.to_lowercase()),
            Some(Value::Number(code)) => codes.push(code.to_string()),
            _ => {}
        }
    }
    (message, codes)
}

/// Classifies a non-success HTTP response.
pub fn classify_http(
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    config: &ProviderConfig,
) -> ModelError {
    let body = scrub(body, config);
    let parsed: Option<Value> = serde_json::from_str(&body).ok();
    let (message, codes) = parsed.as_ref().map(error_fields).unwrap_or_default();
    let message = if message.is_empty() { shorten(&body) } else { shorten(&message) };
    let described = format!("{} returned HTTP {status}: {message}", config.name);
    let retry_after = retry_after.or_else(|| retry_hint(&body));
    if status == 401 || status == 403 {
        let hint = match &config.key_env {
            Some(env) => format!("; check the key in {env}"),
            None => String::new(),
        };
        return ModelError::Authentication(format!("{described}{hint}"));
    }
    if is_overflow(&message, &codes) {
        return ModelError::ContextOverflow(described);
    }
    if matches!(status, 429 | 503 | 529) || codes.iter().any(|c| RATE_LIMIT_CODES.contains(&c.as_str())) {
        return ModelError::RateLimited { message: described, retry_after_ms: retry_after.map(millis) };
    }
    match status {
        400..=499 => ModelError::InvalidRequest(described),
        _ => ModelError::Server(described),
    }
}

/// Classifies an error reported inside a stream (a JSON payload).
pub fn classify_stream_error(payload: &Value, config: &ProviderConfig) -> ModelError {
    let (message, codes) = error_fields(payload);
    let message = shorten(&scrub(&message, config));
    let described = format!("{} reported an error in the stream: {message}", config.name);
    if is_overflow(&message, &codes) {
        return ModelError::ContextOverflow(described);
    }
    let numeric_rate = codes.iter().any(|c| c == "429" || c == "503" || c == "529");
    if numeric_rate || codes.iter().any(|c| RATE_LIMIT_CODES.contains(&c.as_str())) {
        return ModelError::RateLimited {
            message: described,
            retry_after_ms: retry_hint(&message).map(millis),
        };
    }
    if codes.iter().any(|c| c.contains("invalid") || c == "400") {
        return ModelError::InvalidRequest(described);
    }
    ModelError::Server(described)
}

fn is_overflow(message: &str, codes: &[String]) -> bool {
    let lower = message.to_lowercase();
    OVERFLOW_PHRASES.iter().any(|p| lower.contains(p) || codes.iter().any(|c| c == p))
}

/// A wait a server asked for in prose: "try again in 1.5s", "retry in 20ms",
/// `"retryDelay": "17s"`.
pub fn retry_hint(text: &str) -> Option<Duration> {
    let lower = text.to_lowercase();
    for marker in ["try again in ", "retry in ", "retry after ", "\"retrydelay\": \"", "\"retrydelay\":\""] {
        if let Some(at) = lower.find(marker) {
            let rest = &lower[at + marker.len()..];
            let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let Ok(value) = number.parse::<f64>() else { continue };
            let unit = rest[number.len()..].trim_start();
            let seconds = if unit.starts_with("ms") {
                value / 1000.0
            } else if unit.starts_with('m') && !unit.starts_with("ms") && unit.starts_with("min") {
                value * 60.0
            } else {
                value
            };
            if seconds.is_finite() && seconds >= 0.0 {
                return Some(Duration::from_secs_f64(seconds.min(3600.0)));
            }
        }
    }
    None
}

/// `Retry-After` (seconds) or `retry-after-ms` headers.
pub fn retry_after_header(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 3600.0)));
    }
    text("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Removes the key from text a provider sent back (some echo it).
fn scrub(text: &str, config: &ProviderConfig) -> String {
    match &config.api_key {
        Some(key) if key.expose().len() >= 8 => text.replace(key.expose(), "<redacted>"),
        _ => text.to_owned(),
    }
}

fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > MAX_MESSAGE {
        format!("{}…", one_line.chars().take(MAX_MESSAGE).collect::<String>())
    } else {
        one_line
    }
}

/// Whether an error is worth another attempt.
pub fn is_retryable(error: &ModelError) -> bool {
    matches!(error, ModelError::RateLimited { .. } | ModelError::Network(_))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::Api;
    use crate::secret::ApiKey;

    fn config() -> ProviderConfig {
        let mut config = ProviderConfig::new("test", Api::OpenAiChat, "http://x");
        config.key_env = Some("OPENAI_API_KEY".into());
        config.with_key(ApiKey::new("sk-verysecretkey"))
    }

    #[test]
    fn http_statuses_map_to_kinds() {
        let c = config();
        assert!(
            matches!(classify_http(401, None, "{}", &c), ModelError::Authentication(m) if m.contains("OPENAI_API_KEY"))
        );
        assert!(matches!(classify_http(429, None, "{}", &c), ModelError::RateLimited { .. }));
        assert!(matches!(
            classify_http(
                529,
                None,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &c
            ),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(
            classify_http(
                400,
                None,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
                &c
            ),
            ModelError::ContextOverflow(_)
        ));
        assert!(matches!(
            classify_http(400, None, r#"{"error":{"message":"bad"}}"#, &c),
            ModelError::InvalidRequest(_)
        ));
        assert!(matches!(classify_http(500, None, "oops", &c), ModelError::Server(_)));
        assert!(matches!(
            classify_http(
                413,
                None,
                r#"{"error":{"message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#,
                &c
            ),
            ModelError::ContextOverflow(_)
        ));
    }

    #[test]
    fn the_key_never_appears_in_an_error() {
        let error = classify_http(401, None, "Incorrect API key provided: sk-verysecretkey", &config());
        assert!(!error.to_string().contains("sk-verysecretkey"), "{error}");
    }

    #[test]
    fn retry_hints_in_headers_and_prose() {
        assert_eq!(retry_hint("Please try again in 1.5s."), Some(Duration::from_millis(1500)));
        assert_eq!(
            retry_hint("Rate limit reached. Please try again in 250ms"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_hint(r#"{"retryDelay": "17s"}"#), Some(Duration::from_secs(17)));
        assert_eq!(retry_hint("nothing here"), None);
        let error = classify_http(429, None, r#"{"error":{"message":"try again in 2s"}}"#, &config());
        assert!(matches!(error, ModelError::RateLimited { retry_after_ms: Some(2000), .. }));
        let error = classify_http(429, Some(Duration::from_secs(7)), "{}", &config());
        assert!(matches!(error, ModelError::RateLimited { retry_after_ms: Some(7000), .. }));
    }

    #[test]
    fn in_stream_errors_are_classified_the_same_way() {
        let c = config();
        let overloaded =
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(matches!(classify_stream_error(&overloaded, &c), ModelError::RateLimited { .. }));
        let gemini =
            json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}});
        assert!(matches!(classify_stream_error(&gemini, &c), ModelError::RateLimited { .. }));
        let overflow = json!({"error": {"message": "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576)."}});
        assert!(matches!(classify_stream_error(&overflow, &c), ModelError::ContextOverflow(_)));
        assert!(matches!(
            classify_stream_error(&json!({"error": {"message": "boom"}}), &c),
            ModelError::Server(_)
        ));
    }
}
