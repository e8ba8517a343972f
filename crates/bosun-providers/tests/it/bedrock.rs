//! Amazon Bedrock: the recorded ConverseStream response (real AWS event-stream
//! frames, CRCs and all) replayed by a local server that checks each
//! request's SigV4 signature with botocore, and the fault cases the other
//! APIs pass: throttling (a 429 with Retry-After, a `throttlingException`
//! frame) retried, an exception frame after content ending the stream,
//! "too long" classified as context overflow, a refused signature as an
//! authentication error that is not retried. Credentials from the
//! environment and the shared files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bosun_core::{ModelError, ModelEvent, StopReason};
use bosun_providers::cloud::aws::{self, AwsCredentials};
use bosun_providers::{ProviderConfig, RetryPolicy, decode_recorded};
use serde_json::{Value, json};
use support::faults::collect;
use support::{Canned, ManualClock, Step, TestServer, fixtures_dir, scripted};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const RECORDING: &str = "bedrock/basic-converse-stream.nock.json";
const ANSWER: &str = "Hello! As an AI language model, I don't have feelings, but I'm functioning well and ready to \
                      assist you. How can I help you today?";
pub(crate) const KEY_ID: &str = "AKIDEXAMPLE";
pub(crate) const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
pub(crate) const SESSION: &str = "FwoGZXIvYXdzEXAMPLETOKEN";

/// The recorded response body: the hex `response` of the nock recording.
pub(crate) fn recorded_body() -> Vec<u8> {
    let path = fixtures_dir().join(RECORDING);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_json::from_str(&text).unwrap();
    let hex = value[0]["response"].as_str().unwrap();
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// One event-stream frame.
fn frame(headers: &[(&str, &str)], payload: &Value) -> Vec<u8> {
    let headers = headers
        .iter()
        .map(|(name, value)| Header::new(name.to_string(), HeaderValue::String(value.to_string().into())))
        .collect();
    let message = Message::new_from_parts(headers, payload.to_string().into_bytes());
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap();
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[(":message-type", "event"), (":event-type", kind), (":content-type", "application/json")],
        &payload,
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    let headers =
        [(":message-type", "exception"), (":exception-type", kind), (":content-type", "application/json")];
    frame(&headers, &json!({"message": message}))
}

pub(crate) fn stream(body: Vec<u8>) -> Canned {
    Canned::sse(body).with_header("content-type", "application/vnd.amazon.eventstream")
}

fn config(url: &str, clock: &ManualClock) -> ProviderConfig {
    let config = ProviderConfig::bedrock("us-east-1")
        .with_base_url(url)
        .with_aws_credentials(AwsCredentials::new(KEY_ID, SECRET, Some(SESSION.to_owned())));
    support::faults::on_clock(config, clock)
}

async fn run(responses: Vec<Canned>, steps: &[Step]) -> (support::faults::Outcome, TestServer) {
    let server = TestServer::start(responses).await;
    let clock = ManualClock::default();
    let model = bosun_providers::HostedModel::new(config(&server.url, &clock), MODEL).unwrap();
    let outcome = scripted(Some(&server), &clock, steps, collect(&model)).await;
    (outcome, server)
}

#[test]
fn the_recorded_stream_decodes_to_its_text_stop_and_usage() {
    let body = recorded_body();
    // Split at every byte boundary a network could cut at: frames span chunks.
    let chunks: Vec<&[u8]> = body.chunks(7).collect();
    let events = decode_recorded(&ProviderConfig::bedrock("us-east-1"), &chunks);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Ok(ModelEvent::TextDelta(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, ANSWER);
    let Some(Ok(ModelEvent::Done(response))) = events.last() else { panic!("{events:?}") };
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!((response.usage.input, response.usage.output), (13, 35));
    assert_eq!(response.text(), ANSWER);
}

#[test]
fn a_frame_with_a_broken_checksum_is_a_protocol_error() {
    let mut body = recorded_body();
    body[40] ^= 0xff;
    let events = decode_recorded(&ProviderConfig::bedrock("us-east-1"), &[&body]);
    assert!(matches!(events.last(), Some(Err(ModelError::Protocol(_)))), "{events:?}");
}

#[tokio::test]
async fn requests_are_signed_and_the_recording_replays() {
    let (outcome, server) = run(vec![stream(recorded_body())], &[]).await;
    assert_eq!(outcome.response().text(), ANSWER);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream");
    let auth = request.header("authorization").unwrap();
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "{auth}");
    assert!(auth.contains("/us-east-1/bedrock/aws4_request"), "{auth}");
    assert!(auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"), "{auth}");
    assert_eq!(request.header("x-amz-security-token"), Some(SESSION));
    assert_eq!(request.header("accept"), Some("application/vnd.amazon.eventstream"));
    assert_eq!(request.json()["messages"][0], json!({"role": "user", "content": [{"text": "hi"}]}));
}

#[tokio::test]
async fn http_throttling_is_retried_after_retry_after() {
    // Bedrock's own wording, which must not read as an overflow.
    let throttled = Canned::error(429, r#"{"message":"Too many tokens, please wait before trying again."}"#)
        .with_header("x-amzn-ErrorType", "ThrottlingException")
        .with_header("retry-after", "2");
    let (outcome, server) =
        run(vec![throttled, stream(recorded_body())], &[Step::Received(1), Step::End(2)]).await;
    assert_eq!(outcome.response().text(), ANSWER);
    assert_eq!(outcome.retries().len(), 1);
    assert_eq!(outcome.retries()[0].1, 2000, "Retry-After honoured");
    assert_eq!(server.requests().len(), 2);
    let dates: Vec<_> =
        server.requests().iter().map(|r| r.header("x-amz-date").unwrap().to_owned()).collect();
    assert_eq!(dates.len(), 2, "each attempt is signed");
}

#[tokio::test]
async fn a_throttling_exception_frame_is_retried() {
    let first = [
        event("messageStart", json!({"role": "assistant"})),
        exception("throttlingException", "Too many tokens per day, please wait."),
    ]
    .concat();
    let (outcome, server) =
        run(vec![stream(first), stream(recorded_body())], &[Step::Received(1), Step::End(2)]).await;
    assert_eq!(outcome.response().text(), ANSWER);
    assert_eq!(outcome.retries().len(), 1, "{:?}", outcome.events);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_exception_after_content_ends_the_stream_with_it() {
    let body = [
        event("messageStart", json!({"role": "assistant"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}})),
        exception("modelStreamErrorException", "The model stream failed."),
    ]
    .concat();
    let (outcome, server) = run(vec![stream(body), stream(recorded_body())], &[]).await;
    assert_eq!(outcome.text(), "Hel");
    assert!(
        matches!(outcome.error(), ModelError::Server(m) if m.contains("model stream failed")),
        "{:?}",
        outcome.error()
    );
    assert_eq!(server.requests().len(), 1, "content reached the caller: no retry");
}

#[tokio::test]
async fn a_service_quota_refusal_is_a_rate_limit_and_sent_again() {
    // A 400, but a per-minute quota: Bedrock's reference says resubmit later.
    let quota =
        Canned::error(400, r#"{"message":"Your request exceeds the service quota for your account."}"#)
            .with_header(
                "x-amzn-ErrorType",
                "ServiceQuotaExceededException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            );
    let (outcome, server) =
        run(vec![quota, stream(recorded_body())], &[Step::Received(1), Step::End(2)]).await;
    assert_eq!(outcome.response().text(), ANSWER);
    assert_eq!(outcome.retries().len(), 1);
    assert!(outcome.retries()[0].2.contains("ServiceQuotaExceededException"), "{:?}", outcome.retries());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn the_error_class_decides_over_the_status_and_the_message() {
    struct Case {
        status: u16,
        header: Option<&'static str>,
        body: &'static str,
        expected: fn(&ModelError) -> bool,
    }
    let cases = [
        Case {
            status: 403,
            header: Some("AccessDeniedException"),
            body: r#"{"message":"You don't have access to the model with the specified model ID."}"#,
            expected: |e| matches!(e, ModelError::Authentication(m) if m.contains("AccessDeniedException") && m.contains("AWS_PROFILE")),
        },
        Case {
            // No header: the class in the body's `__type`.
            status: 403,
            header: None,
            body: r#"{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}"#,
            expected: |e| matches!(e, ModelError::Authentication(m) if m.contains("UnrecognizedClientException")),
        },
        Case {
            status: 424,
            header: Some("ModelErrorException"),
            body: r#"{"message":"Received an error from the model."}"#,
            expected: |e| matches!(e, ModelError::Server(m) if m.contains("ModelErrorException")),
        },
        Case {
            status: 404,
            header: Some("ResourceNotFoundException"),
            body: r#"{"message":"Could not resolve the foundation model from the provided model identifier."}"#,
            expected: |e| matches!(e, ModelError::InvalidRequest(m) if m.contains("foundation model")),
        },
        Case {
            // Not the overflow its words suggest: a validation error on its own terms.
            status: 400,
            header: Some("ValidationException"),
            body: r#"{"message":"The provided model identifier is invalid."}"#,
            expected: |e| matches!(e, ModelError::InvalidRequest(_)),
        },
    ];
    for case in cases {
        let mut canned = Canned::error(case.status, case.body);
        if let Some(header) = case.header {
            canned = canned.with_header("x-amzn-ErrorType", header);
        }
        let (outcome, server) = run(vec![canned, stream(recorded_body())], &[]).await;
        assert!((case.expected)(outcome.error()), "{} {:?}: {:?}", case.status, case.header, outcome.error());
        assert_eq!(server.requests().len(), 1, "{:?} is not sent again", case.header);
    }
}

#[tokio::test]
async fn a_model_still_loading_or_timing_out_is_sent_again() {
    for (status, class) in [(429, "ModelNotReadyException"), (408, "ModelTimeoutException")] {
        let refused = Canned::error(status, r#"{"message":"Model is not ready for inference."}"#)
            .with_header("x-amzn-ErrorType", class);
        let (outcome, server) =
            run(vec![refused, stream(recorded_body())], &[Step::Received(1), Step::End(2)]).await;
        assert_eq!(outcome.response().text(), ANSWER, "{class}");
        assert_eq!(server.requests().len(), 2, "{class}");
    }
}

#[tokio::test]
async fn too_long_is_context_overflow_over_http_and_in_the_stream() {
    let http = Canned::error(400, r#"{"message":"Input is too long for requested model."}"#)
        .with_header("x-amzn-ErrorType", "ValidationException");
    let (outcome, server) = run(vec![http], &[]).await;
    assert!(matches!(outcome.error(), ModelError::ContextOverflow(_)), "{:?}", outcome.error());
    assert_eq!(server.requests().len(), 1);
    let framed = exception(
        "validationException",
        "The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum",
    );
    let (outcome, server) = run(vec![stream(framed)], &[]).await;
    assert!(matches!(outcome.error(), ModelError::ContextOverflow(_)), "{:?}", outcome.error());
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn a_bedrock_api_key_is_a_bearer_and_nothing_is_signed() {
    let server = TestServer::start(vec![stream(recorded_body())]).await;
    let clock = ManualClock::default();
    let config = ProviderConfig::bedrock("us-west-2")
        .with_base_url(&server.url)
        .with_sleeper(clock.clone())
        .with_token_source(std::sync::Arc::new(bosun_providers::StaticToken::new(
            bosun_providers::ApiKey::new("ABSKexample"),
        )));
    let model = bosun_providers::HostedModel::new(config, MODEL).unwrap();
    let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
    assert_eq!(outcome.response().text(), ANSWER);
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer ABSKexample"));
    assert_eq!(request.header("x-amz-date"), None);
}

// ------------------------------------------------------------ botocore peer

pub(crate) use bosun_testing::botocore::Peer;

/// Starts `tests/peers/bedrock_sigv4_server.py` replaying the recording;
/// `None` only when the peer may be skipped.
pub(crate) fn botocore_peer(token: Option<&str>) -> Option<Peer> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/bedrock_sigv4_server.py");
    let recording = fixtures_dir().join(RECORDING);
    let recording = recording.to_str().unwrap();
    bosun_testing::botocore::start(&script, &[recording, KEY_ID, SECRET, token.unwrap_or("-"), "us-east-1"])
}

pub(crate) async fn counts(peer: &Peer) -> Value {
    let text = reqwest::get(format!("{}/count", peer.url)).await.unwrap().text().await.unwrap();
    serde_json::from_str(&text).unwrap()
}

fn real_clock_config(url: &str, credentials: AwsCredentials) -> ProviderConfig {
    ProviderConfig::bedrock("us-east-1").with_base_url(url).with_aws_credentials(credentials).with_retry(
        RetryPolicy::default()
            .with_attempts(3)
            .with_delays(Duration::from_millis(1), Duration::from_millis(1)),
    )
}

#[tokio::test]
async fn botocore_accepts_the_signature_with_and_without_a_session_token() {
    for token in [Some(SESSION), None] {
        let Some(peer) = botocore_peer(token) else { return };
        let credentials = AwsCredentials::new(KEY_ID, SECRET, token.map(str::to_owned));
        let model =
            bosun_providers::HostedModel::new(real_clock_config(&peer.url, credentials), MODEL).unwrap();
        let outcome = collect(&model).await;
        assert_eq!(outcome.response().text(), ANSWER, "token {token:?}");
        assert_eq!(counts(&peer).await, json!({"posts": 1, "refused": 0}));
    }
}

#[tokio::test]
async fn a_signature_botocore_refuses_is_an_authentication_error_not_retried() {
    let Some(peer) = botocore_peer(Some(SESSION)) else { return };
    let wrong = AwsCredentials::new(KEY_ID, "not-the-secret", Some(SESSION.to_owned()));
    let model = bosun_providers::HostedModel::new(real_clock_config(&peer.url, wrong), MODEL).unwrap();
    let outcome = collect(&model).await;
    let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
    assert!(message.contains("HTTP 403") && message.contains("AWS credentials"), "{message}");
    assert_eq!(counts(&peer).await, json!({"posts": 1, "refused": 1}));
}

// ------------------------------------------------------------- credentials

fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    move |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[test]
fn credentials_come_from_the_environment_then_the_profile_files() {
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIAENV".into()),
        ("AWS_SECRET_ACCESS_KEY", "env-secret".into()),
        ("AWS_SESSION_TOKEN", "env-token".into()),
        ("AWS_REGION", "eu-west-1".into()),
    ]);
    let found = aws::credentials(&env, None).unwrap();
    assert_eq!(found.access_key_id, "AKIAENV");
    assert!(!format!("{found:?}").contains("env-secret") && !format!("{found:?}").contains("env-token"));
    assert_eq!(aws::region(&env, None, None).as_deref(), Some("eu-west-1"));

    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials");
    let config = dir.path().join("config");
    std::fs::write(&credentials, "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n\n[work]\naws_access_key_id = AKIAWORK\naws_secret_access_key = w\naws_session_token = wt\n").unwrap();
    std::fs::write(&config, "[default]\nregion = us-east-1\n\n[profile work]\nregion = ap-southeast-2\n\n[profile keys]\naws_access_key_id = AKIACONFIG\naws_secret_access_key = c\n").unwrap();
    let files = |profile: Option<&str>| {
        let mut pairs = vec![
            ("AWS_SHARED_CREDENTIALS_FILE", credentials.display().to_string()),
            ("AWS_CONFIG_FILE", config.display().to_string()),
        ];
        if let Some(profile) = profile {
            pairs.push(("AWS_PROFILE", profile.to_owned()));
        }
        env_of(&pairs)
    };
    assert_eq!(aws::credentials(&files(None), None).unwrap().access_key_id, "AKIADEFAULT");
    assert_eq!(aws::region(&files(None), None, None).as_deref(), Some("us-east-1"));
    assert_eq!(aws::credentials(&files(Some("work")), None).unwrap().access_key_id, "AKIAWORK");
    assert_eq!(aws::region(&files(Some("work")), None, None).as_deref(), Some("ap-southeast-2"));
    // bosun's own `profile` setting wins over AWS_PROFILE; keys may sit in the config file.
    assert_eq!(aws::credentials(&files(Some("work")), Some("keys")).unwrap().access_key_id, "AKIACONFIG");
    assert_eq!(aws::region(&files(None), Some("us-west-2"), None).as_deref(), Some("us-west-2"));
    let missing = aws::credentials(&files(Some("nobody")), None).unwrap_err();
    assert!(missing.to_string().contains("AWS_PROFILE=nobody"), "{missing}");
}
