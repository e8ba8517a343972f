//! Bedrock's error classes. AWS names the class of a refused request in the
//! `x-amzn-ErrorType` header (`ThrottlingException:http://…`), and of an
//! error inside the stream in the exception frame's type; the class, not
//! the message, says what happened: Bedrock's throttling message ("Too many
//! tokens, please wait…") reads like an overflow to the shared phrases.

use bosun_core::ModelError;
use serde_json::Value;

use crate::classify::{
    classify_http, classify_stream_error, error_fields, http_reason, is_overflow, millis, shorten,
};
use crate::config::ProviderConfig;
use crate::failure::Failure;
use crate::protocol::Refused;

/// What an error class means for the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Slow down and send it again: throttling, a model still loading,
    /// the service briefly unavailable, a per-minute quota.
    RateLimited,
    /// The model did not answer in time (Bedrock's 408): sent again.
    Timeout,
    /// The keys, the signature or the account's access to the model.
    Authentication,
    /// The request itself: sent again it fails again.
    Invalid,
    /// A failure on Bedrock's side.
    Server,
}

/// The class of an AWS error type, as written in the header, a body's
/// `__type` or an exception frame (first letter either case). `None` for
/// a type bosun does not know, which the status then decides.
pub(super) fn class(error_type: &str) -> Option<Class> {
    let mut name = error_type.to_owned();
    if let Some(first) = name.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    Some(match name.as_str() {
        // ServiceQuotaExceededException is a 400, but Bedrock's quotas are
        // per minute (requests, tokens) and its reference says to resubmit
        // later: a rate limit, not a request to give up on.
        "ThrottlingException"
        | "ModelNotReadyException"
        | "ServiceUnavailableException"
        | "ServiceQuotaExceededException"
        | "TooManyRequestsException" => Class::RateLimited,
        "ModelTimeoutException" => Class::Timeout,
        "AccessDeniedException"
        | "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "ExpiredTokenException"
        | "MissingAuthenticationTokenException"
        | "IncompleteSignatureException"
        | "SignatureDoesNotMatch" => Class::Authentication,
        "ValidationException" | "ResourceNotFoundException" | "ConflictException" => Class::Invalid,
        "InternalServerException" | "ModelErrorException" | "ModelStreamErrorException" => Class::Server,
        _ => return None,
    })
}

/// The error type of a refused request: the header's, else the body's
/// `__type` (`com.amazon.coral.service#UnrecognizedClientException`) or
/// `code`.
fn error_type(refused: &Refused<'_>, body: Option<&Value>) -> Option<String> {
    let header = refused.headers.get("x-amzn-errortype").and_then(|v| v.to_str().ok());
    let from_body = || {
        let body = body?;
        body.get("__type").or_else(|| body.get("code")).and_then(Value::as_str)
    };
    let raw = header.or_else(from_body)?;
    // `Type:namespace-url` in the header, `namespace#Type` in a body.
    let name = raw.split(':').next().unwrap_or(raw);
    let name = name.rsplit('#').next().unwrap_or(name).trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// A refused ConverseStream request, classified by its error type when
/// Bedrock names one bosun knows, else as any API's.
pub(super) fn refusal(refused: &Refused<'_>, config: &ProviderConfig) -> Failure {
    let parsed: Option<Value> = serde_json::from_str(refused.body).ok();
    let known = error_type(refused, parsed.as_ref()).and_then(|name| Some((class(&name)?, name)));
    let Some((class, name)) = known else {
        let status = refused.status;
        return Failure {
            error: classify_http(status, refused.retry_after, refused.body, config),
            retryable: crate::classify::is_retryable_status(status),
            reason: http_reason(status, refused.body, config),
        };
    };
    // Bedrock's bodies say `message`; some AWS front ends `Message`.
    let message = parsed
        .as_ref()
        .map(|v| {
            let (message, _) = error_fields(v);
            if message.is_empty() {
                v.get("Message").and_then(Value::as_str).unwrap_or_default().to_owned()
            } else {
                message
            }
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| refused.body.to_owned());
    let message = shorten(&crate::classify::scrub(&message, config));
    let described = format!("{} returned HTTP {} {name}: {message}", config.name, refused.status);
    let error = error_of(class, described, &message, refused.retry_after.map(millis));
    Failure {
        // ModelErrorException is Bedrock's 424: the model failed on this
        // input, and would again.
        retryable: matches!(class, Class::RateLimited | Class::Timeout)
            || (class == Class::Server && crate::classify::is_retryable_status(refused.status)),
        reason: format!("HTTP {} {name}", refused.status),
        error,
    }
}

fn error_of(class: Class, described: String, message: &str, retry_after_ms: Option<u64>) -> ModelError {
    match class {
        Class::RateLimited => ModelError::RateLimited { message: described, retry_after_ms },
        Class::Timeout => ModelError::Network(described),
        Class::Authentication => ModelError::Authentication(format!(
            "{described}; check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS_BEARER_TOKEN_BEDROCK), \
             the region, and access to this model"
        )),
        Class::Invalid if is_overflow(message, &[]) => ModelError::ContextOverflow(described),
        Class::Invalid => ModelError::InvalidRequest(described),
        Class::Server => ModelError::Server(described),
    }
}

/// An exception frame's error (`{"error": {"type", "message"}}` as the
/// event-stream reader builds it), classified by its type when known.
pub(super) fn exception(value: &Value, config: &ProviderConfig) -> ModelError {
    let kind = value.pointer("/error/type").and_then(Value::as_str).unwrap_or_default();
    let Some(class) = class(kind) else { return classify_stream_error(value, config) };
    let message = value.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
    let message = shorten(&crate::classify::scrub(message, config));
    let described = format!("{} reported {kind} in the stream: {message}", config.name);
    error_of(class, described, &message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_converse_error_class_has_a_meaning() {
        for (name, expected) in [
            ("ThrottlingException", Class::RateLimited),
            ("throttlingException", Class::RateLimited),
            ("ServiceQuotaExceededException", Class::RateLimited),
            ("ModelNotReadyException", Class::RateLimited),
            ("serviceUnavailableException", Class::RateLimited),
            ("ModelTimeoutException", Class::Timeout),
            ("AccessDeniedException", Class::Authentication),
            ("UnrecognizedClientException", Class::Authentication),
            ("ValidationException", Class::Invalid),
            ("ResourceNotFoundException", Class::Invalid),
            ("internalServerException", Class::Server),
            ("modelStreamErrorException", Class::Server),
        ] {
            assert_eq!(class(name), Some(expected), "{name}");
        }
        assert_eq!(class("SomethingNewException"), None);
        assert_eq!(class(""), None);
    }
}
