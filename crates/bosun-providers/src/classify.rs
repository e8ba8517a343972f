//! Error classification: one table of context-overflow phrases and
//! rate-limit codes, applied to HTTP errors and to errors inside a stream
//! alike, so every API reports the same `ModelError` kinds.

use std::time::{Duration, SystemTime};

use bosun_core::ModelError;
use serde_json::Value;

use crate::cloud::Cloud;
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

/// Error codes and types that mean the account's quota or credit is used
/// up. OpenAI sends `insufficient_quota` with HTTP 429 and in a stream; it
/// is not a rate limit, since retrying cannot succeed until someone pays.
pub const QUOTA_CODES: &[&str] = &["insufficient_quota"];

/// Whether any of `codes` says the quota is used up.
fn is_quota(codes: &[String]) -> bool {
    codes.iter().any(|c| QUOTA_CODES.contains(&c.as_str()))
}

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

/// Whether an HTTP status is worth another attempt, as the official SDKs
/// judge it: 408 (request timeout), 409 (conflict: a lock that timed out),
/// 429 and every 5xx (500, 502, 503, 504, 529, …). Not 400, 401, 403, 404,
/// 413 or 422: the same request would fail the same way.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// Classifies a non-success HTTP response. The status decides first: a
/// rate-limit code in the body of a status that is not worth retrying (a
/// Gemini 413 says `RESOURCE_EXHAUSTED`) does not make it a rate limit.
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
        let hint = match (&config.key_env, &config.cloud) {
            (Some(env), _) => format!("; check the key in {env}"),
            (None, Cloud::Azure { .. }) => "; check AZURE_OPENAI_API_KEY or the Entra ID token, and that it may \
                                            use this resource"
                .to_owned(),
            (None, Cloud::Vertex { .. }) => "; check the Google credentials (GOOGLE_APPLICATION_CREDENTIALS, or \
                                             `gcloud auth application-default login`) and that the account may \
                                             use Vertex AI in this project"
                .to_owned(),
            (None, Cloud::Bedrock { .. }) => "; check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, \
                                              AWS_BEARER_TOKEN_BEDROCK), the region, and access to this model"
                .to_owned(),
            (None, _) => String::new(),
        };
        return ModelError::Authentication(format!("{described}{hint}"));
    }
    // Bedrock throttles with "Too many tokens, please wait before trying
    // again.": its status, not the overflow phrase, says what it is.
    if matches!(config.cloud, Cloud::Bedrock { .. }) && matches!(status, 429 | 503) {
        return ModelError::RateLimited { message: described, retry_after_ms: retry_after.map(millis) };
    }
    if is_overflow(&message, &codes) {
        return ModelError::ContextOverflow(described);
    }
    if is_quota(&codes) {
        return ModelError::QuotaExceeded(described);
    }
    let rate_code = codes.iter().any(|c| RATE_LIMIT_CODES.contains(&c.as_str()));
    if matches!(status, 429 | 503 | 529) || (rate_code && is_retryable_status(status)) {
        return ModelError::RateLimited { message: described, retry_after_ms: retry_after.map(millis) };
    }
    match status {
        408 => ModelError::Network(described),
        409 => ModelError::Server(described),
        400..=499 => ModelError::InvalidRequest(described),
        _ => ModelError::Server(described),
    }
}

/// Classifies an error reported inside a stream (a JSON payload). A
/// numeric code the payload carries (Gemini's `"code": 413`) decides as an
/// HTTP status would.
pub fn classify_stream_error(payload: &Value, config: &ProviderConfig) -> ModelError {
    let (message, codes) = error_fields(payload);
    let message = shorten(&scrub(&message, config));
    let described = format!("{} reported an error in the stream: {message}", config.name);
    if is_overflow(&message, &codes) {
        return ModelError::ContextOverflow(described);
    }
    if is_quota(&codes) {
        return ModelError::QuotaExceeded(described);
    }
    match numeric_status(&codes) {
        Some(401 | 403) => return ModelError::Authentication(described),
        Some(status) if (400..=499).contains(&status) && !is_retryable_status(status) => {
            return ModelError::InvalidRequest(described);
        }
        _ => {}
    }
    let numeric_rate = matches!(numeric_status(&codes), Some(429 | 503 | 529));
    if numeric_rate || codes.iter().any(|c| RATE_LIMIT_CODES.contains(&c.as_str())) {
        return ModelError::RateLimited {
            message: described,
            retry_after_ms: retry_hint(&message).map(millis),
        };
    }
    if codes.iter().any(|c| c.contains("invalid")) {
        return ModelError::InvalidRequest(described);
    }
    ModelError::Server(described)
}

/// Error types the APIs stream for a passing failure of their own: OpenAI's
/// `server_error`, Anthropic's `api_error` and `overloaded_error`, Gemini's
/// `INTERNAL` and `UNAVAILABLE`.
const TRANSIENT_CODES: &[&str] =
    &["server_error", "api_error", "overloaded_error", "internal_server_error", "internal", "unavailable"];

/// Whether an error event reports a passing failure of the provider (a
/// server error, an overload, a rate limit) that another attempt may not
/// meet, as the official SDKs retry it. The error is found at the top
/// (`{"error": …}`, `{"type": "error", …}`) or, for a failed Responses
/// stream, at `response.error`. A numeric code decides as an HTTP status
/// would; text that is not JSON is not transient.
pub fn is_transient_stream_error(data: &str) -> bool {
    let Ok(payload) = serde_json::from_str::<Value>(data) else { return false };
    let codes = stream_error_fields(&payload).1;
    if let Some(status) = numeric_status(&codes) {
        return is_retryable_status(status);
    }
    codes.iter().any(|c| TRANSIENT_CODES.contains(&c.as_str()) || RATE_LIMIT_CODES.contains(&c.as_str()))
}

/// [`error_fields`] of an error event, or of a failed Responses stream's
/// `response.error`.
fn stream_error_fields(payload: &Value) -> (String, Vec<String>) {
    match payload.pointer("/response/error").filter(|e| e.is_object()) {
        Some(inner) => error_fields(&serde_json::json!({ "error": inner })),
        None => error_fields(payload),
    }
}

/// The first code that reads as an HTTP status.
fn numeric_status(codes: &[String]) -> Option<u16> {
    codes.iter().filter_map(|c| c.parse::<u16>().ok()).find(|c| (100..=599).contains(c))
}

/// A short account of an HTTP failure, for a retry notice:
/// `HTTP 503: overloaded`.
pub(crate) fn http_reason(status: u16, body: &str, config: &ProviderConfig) -> String {
    let body = scrub(body, config);
    let message = serde_json::from_str::<Value>(&body).map(|v| error_fields(&v).0).unwrap_or_default();
    let message = if message.is_empty() { body } else { message };
    let message = brief(&message);
    if message.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {message}") }
}

/// A short account of an error event, for a retry notice:
/// `in-stream overloaded_error: Overloaded`.
pub(crate) fn stream_reason(data: &str, config: &ProviderConfig) -> Option<String> {
    let payload = serde_json::from_str::<Value>(data).ok()?;
    let (message, codes) = stream_error_fields(&payload);
    let message = brief(&scrub(&message, config));
    let code = codes.iter().find(|c| *c != "error").cloned().unwrap_or_else(|| "error".to_owned());
    Some(if message.is_empty() {
        format!("in-stream {code}")
    } else {
        format!("in-stream {code}: {message}")
    })
}

/// One line of at most 80 characters.
pub(crate) fn brief(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 80 {
        format!("{}…", one_line.chars().take(80).collect::<String>())
    } else {
        one_line
    }
}

pub(crate) fn is_overflow(message: &str, codes: &[String]) -> bool {
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

/// The wait a response's headers ask for: `retry-after-ms` (OpenAI's and
/// Anthropic's, in milliseconds) first, then `Retry-After`, in seconds or
/// as an HTTP date (taken relative to `now`; a date already past means
/// retry at once). A value that is neither a finite, non-negative number
/// nor a date (`NaN`, `inf`, `-5`, text) is ignored, as if not sent.
pub fn retry_after_header(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    text("retry-after-ms")
        .and_then(|ms| match ms.parse::<f64>() {
            Ok(ms) => wait(ms / 1000.0),
            Err(_) => None,
        })
        .or_else(|| text("retry-after").and_then(|value| parse_retry_after(value, now)))
}

/// One `Retry-After` value: delay-seconds (a fraction accepted, as some
/// servers send one) or an HTTP date in any of the three forms RFC 9110
/// has recipients accept (IMF-fixdate, RFC 850, asctime).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    match value.parse::<f64>() {
        Ok(seconds) => wait(seconds),
        Err(_) => {
            let date = httpdate::parse_http_date(value).ok()?;
            Some(date.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

/// `seconds` as a wait: `None` unless finite and not negative; a wait too
/// long for a `Duration` is the longest one (still refused as too long).
fn wait(seconds: f64) -> Option<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Removes the key from text a provider sent back (some echo it).
pub(crate) fn scrub(text: &str, config: &ProviderConfig) -> String {
    match &config.api_key {
        Some(key) if key.expose().len() >= 8 => text.replace(key.expose(), "<redacted>"),
        _ => text.to_owned(),
    }
}

pub(crate) fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > MAX_MESSAGE {
        format!("{}…", one_line.chars().take(MAX_MESSAGE).collect::<String>())
    } else {
        one_line
    }
}

/// Whether an error is worth another attempt by its kind alone, when no
/// status or payload says more: rate limits and network failures.
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

    #[test]
    fn a_used_up_quota_is_its_own_class_and_not_retried() {
        let c = config();
        let body = r#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let error = classify_http(429, None, body, &c);
        assert!(matches!(error, ModelError::QuotaExceeded(_)), "{error:?}");
        assert!(!is_retryable(&error));
        let streamed = json!({"type": "error", "code": "insufficient_quota", "message": "You exceeded your current quota."});
        assert_eq!(classify_stream_error(&streamed, &c).class(), "quota");
    }

    #[test]
    fn only_the_statuses_the_sdks_retry_are_retryable() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529, 599] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [200, 301, 400, 401, 403, 404, 413, 422, 499, 600] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn a_rate_limit_code_on_a_status_not_worth_retrying_is_not_a_rate_limit() {
        let c = config();
        let too_large = r#"{"error":{"code":413,"message":"Request payload size exceeds the limit","status":"RESOURCE_EXHAUSTED"}}"#;
        assert!(matches!(classify_http(413, None, too_large, &c), ModelError::InvalidRequest(_)));
        let in_stream: Value = serde_json::from_str(too_large).unwrap();
        assert!(matches!(classify_stream_error(&in_stream, &c), ModelError::InvalidRequest(_)));
        assert!(!is_transient_stream_error(too_large));
        // Retryable statuses keep their rate-limit reading, and name their kind.
        let unavailable = r#"{"error":{"code":500,"message":"busy","status":"UNAVAILABLE"}}"#;
        assert!(matches!(classify_http(500, None, unavailable, &c), ModelError::RateLimited { .. }));
        assert!(matches!(classify_http(408, None, "{}", &c), ModelError::Network(_)));
        assert!(matches!(classify_http(409, None, "{}", &c), ModelError::Server(_)));
        assert!(matches!(classify_http(502, None, "<html>bad gateway</html>", &c), ModelError::Server(_)));
    }

    #[test]
    fn transient_stream_errors_are_the_providers_own_passing_failures() {
        for data in [
            r#"{"error":{"message":"boom","type":"server_error"}}"#,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            r#"{"type":"error","code":"server_error","message":"x"}"#,
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}"#,
            r#"{"error":{"code":503,"message":"x","status":"UNAVAILABLE"}}"#,
            r#"{"error":{"message":"slow","type":"rate_limit_exceeded"}}"#,
        ] {
            assert!(is_transient_stream_error(data), "{data}");
        }
        for data in [
            r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#,
            r#"{"error":{"code":400,"message":"x","status":"INVALID_ARGUMENT"}}"#,
            r#"{"error":{"message":"boom"}}"#,
            "not json",
        ] {
            assert!(!is_transient_stream_error(data), "{data}");
        }
        let c = config();
        let failed =
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}"#;
        assert_eq!(stream_reason(failed, &c).as_deref(), Some("in-stream server_error: x"));
        assert_eq!(http_reason(503, r#"{"error":{"message":"overloaded"}}"#, &c), "HTTP 503: overloaded");
        assert_eq!(http_reason(502, "", &c), "HTTP 502");
    }

    #[test]
    fn retry_after_values_are_parsed_defensively() {
        // Wed, 21 Oct 2015 07:28:00 GMT.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let parse = |value: &str| parse_retry_after(value, now);
        assert_eq!(parse("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse("0"), Some(Duration::ZERO));
        for nonsense in ["NaN", "nan", "inf", "-inf", "infinity", "-1", "-0.5", "soon", ""] {
            assert_eq!(parse(nonsense), None, "{nonsense:?}");
        }
        assert_eq!(parse("1e300"), Some(Duration::MAX), "too long for a Duration: the longest");
        // The three date forms RFC 9110 has recipients accept; a past date is now.
        assert_eq!(parse("Wed, 21 Oct 2015 07:28:30 GMT"), Some(Duration::from_secs(30)));
        assert_eq!(parse("Wednesday, 21-Oct-15 07:28:30 GMT"), Some(Duration::from_secs(30)));
        assert_eq!(parse("Wed Oct 21 07:28:30 2015"), Some(Duration::from_secs(30)));
        assert_eq!(parse("Wed, 21 Oct 2015 07:00:00 GMT"), Some(Duration::ZERO));

        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "9".parse().unwrap());
        headers.insert("retry-after-ms", "NaN".parse().unwrap());
        assert_eq!(
            retry_after_header(&headers, now),
            Some(Duration::from_secs(9)),
            "a bad ms value falls back"
        );
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after_header(&headers, now), Some(Duration::from_millis(1500)), "ms first");
        headers.insert("retry-after-ms", "-inf".parse().unwrap());
        headers.insert("retry-after", "inf".parse().unwrap());
        assert_eq!(retry_after_header(&headers, now), None);
    }
}
