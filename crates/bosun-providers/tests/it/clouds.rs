//! Azure OpenAI and Vertex AI over a local server: every request's URL,
//! query, authentication header and body envelope as each cloud documents
//! them, the recorded Gemini and Anthropic streams replayed under Vertex's
//! URLs (no public SDK test suite has a recorded Vertex stream; Vertex
//! streams the vendors' own event shapes), and the fault cases the four
//! direct APIs pass: a retry after `Retry-After`, the first-byte timeout,
//! context overflow, a token that cannot be had.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use bosun_core::{ModelError, ResponsePart, StopReason};
use bosun_providers::{Api, ApiKey, CommandToken, HostedModel, ProviderConfig, StaticToken, TokenSource};
use serde_json::json;
use support::faults::{FIRST_BYTE, collect, good, ms, on_clock};
use support::{Canned, ManualClock, Step, TestServer, recording, scripted};

const DEPLOYMENT: &str = "gpt-4o-prod";
const GEMINI: &str = "gemini-2.5-pro";
const CLAUDE: &str = "claude-sonnet-4-5@20250929";

fn azure(url: &str, api: Api) -> ProviderConfig {
    ProviderConfig::azure(url, api).with_key(ApiKey::new("az-key"))
}

fn vertex(url: &str, model: &str) -> ProviderConfig {
    ProviderConfig::vertex("proj-1", "us-east5", model)
        .with_base_url(url)
        .with_token_source(Arc::new(StaticToken::new(ApiKey::new("ya29.test"))))
}

fn vertex_path(publisher: &str, model: &str, method: &str) -> String {
    format!("/v1/projects/proj-1/locations/us-east5/publishers/{publisher}/models/{model}:{method}")
}

/// Builds a cloud's config for a server URL.
type Make = fn(&str) -> ProviderConfig;

fn limited(body: &str) -> Canned {
    Canned::error(429, body).with_header("retry-after", "2")
}

#[tokio::test]
async fn azure_chat_goes_to_the_deployment_with_api_version_and_api_key_on_every_attempt() {
    let server = TestServer::start(vec![
        limited(r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded the rate limit."}}"#),
        good(Api::OpenAiChat),
    ])
    .await;
    let clock = ManualClock::default();
    let model = HostedModel::new(on_clock(azure(&server.url, Api::OpenAiChat), &clock), DEPLOYMENT).unwrap();
    let outcome = scripted(Some(&server), &clock, &[Step::Received(1), Step::End(2)], collect(&model)).await;
    assert_eq!(outcome.response().text(), "Hello");
    assert_eq!(outcome.retries().len(), 1, "{:?}", outcome.retries());
    assert_eq!(outcome.retries()[0].1, ms(Duration::from_secs(2)), "Retry-After honoured");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
        assert_eq!(request.header("api-key"), Some("az-key"));
        assert_eq!(request.header("authorization"), None, "an Azure key is never a bearer");
        let body = request.json();
        assert_eq!(body["stream"], json!(true));
        assert!(body.get("prompt_cache_key").is_none(), "{body}");
    }
}

#[tokio::test]
async fn azure_responses_with_an_entra_token_uses_the_v1_path_and_names_the_deployment() {
    let server = TestServer::start(vec![good(Api::OpenAiResponses)]).await;
    let clock = ManualClock::default();
    let config = ProviderConfig::azure(format!("{}/openai/v1", server.url), Api::OpenAiResponses)
        .with_token_source(Arc::new(StaticToken::new(ApiKey::new("entra-token"))));
    let model = HostedModel::new(on_clock(config, &clock), DEPLOYMENT).unwrap();
    let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
    assert_eq!(outcome.response().text(), "Hello");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/openai/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer entra-token"));
    assert_eq!(request.header("api-key"), None);
    assert_eq!(request.json()["model"], json!(DEPLOYMENT));
    // A dated version takes the versioned path instead.
    let server = TestServer::start(vec![good(Api::OpenAiResponses)]).await;
    let config = azure(&server.url, Api::OpenAiResponses).with_azure_api_version("2025-04-01-preview");
    let model = HostedModel::new(on_clock(config, &clock), DEPLOYMENT).unwrap();
    assert_eq!(scripted(Some(&server), &clock, &[], collect(&model)).await.response().text(), "Hello");
    assert_eq!(server.requests()[0].path, "/openai/responses?api-version=2025-04-01-preview");
}

#[tokio::test]
async fn vertex_gemini_replays_the_recorded_call_under_vertex_urls_with_a_bearer_token() {
    let server =
        TestServer::start(vec![Canned::sse(recording("gemini/tool-call.chunks.jsonl", false))]).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(on_clock(vertex(&server.url, GEMINI), &clock), GEMINI).unwrap();
    let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
    let response = outcome.response();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let ResponsePart::ToolCall { name, arguments, .. } = &response.content[0] else {
        panic!("not a call: {:?}", response.content)
    };
    assert_eq!((name.as_str(), arguments), ("weather", &json!({"location": "San Francisco"})));
    let request = &server.requests()[0];
    assert_eq!(request.path, vertex_path("google", GEMINI, "streamGenerateContent?alt=sse"));
    assert_eq!(request.header("authorization"), Some("Bearer ya29.test"));
    assert_eq!(request.header("x-goog-api-key"), None);
    let body = request.json();
    assert_eq!(body["contents"], json!([{"role": "user", "parts": [{"text": "hi"}]}]));
    assert!(body.get("model").is_none(), "{body}");
}

#[tokio::test]
async fn vertex_claude_replays_the_recorded_tool_use_in_vertexs_envelope() {
    let server = TestServer::start(vec![Canned::sse(recording("anthropic/tool-use.sse", true))]).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(on_clock(vertex(&server.url, CLAUDE), &clock), CLAUDE).unwrap();
    let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
    let response = outcome.response();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.content,
        vec![
            ResponsePart::text("I'll check the current weather in Paris for you."),
            ResponsePart::tool_call(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"})
            ),
        ]
    );
    let request = &server.requests()[0];
    assert_eq!(request.path, vertex_path("anthropic", CLAUDE, "streamRawPredict"));
    assert_eq!(request.header("authorization"), Some("Bearer ya29.test"));
    assert_eq!((request.header("x-api-key"), request.header("anthropic-version")), (None, None));
    let body = request.json();
    assert_eq!(body["anthropic_version"], json!("vertex-2023-10-16"));
    assert!(body.get("model").is_none(), "the model is in the URL: {body}");
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["messages"][0]["role"], json!("user"));
}

#[tokio::test]
async fn cloud_rate_limits_are_retried_after_their_retry_after() {
    let gemini_limit =
        r#"{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}"#;
    let claude_limit = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    // Vertex answers a Claude request past its own quota in Google's shape.
    for (model_id, limit, api) in [
        (GEMINI, gemini_limit, Api::Gemini),
        (CLAUDE, claude_limit, Api::AnthropicMessages),
        (CLAUDE, gemini_limit, Api::AnthropicMessages),
    ] {
        let server = TestServer::start(vec![limited(limit), good(api)]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(on_clock(vertex(&server.url, model_id), &clock), model_id).unwrap();
        let outcome =
            scripted(Some(&server), &clock, &[Step::Received(1), Step::End(2)], collect(&model)).await;
        assert_eq!(outcome.response().text(), "Hello", "{model_id}");
        assert_eq!(clock.waits()[1].duration, Duration::from_secs(2), "{model_id}: {:?}", clock.waits());
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{model_id}");
        assert!(requests.iter().all(|r| r.header("authorization") == Some("Bearer ya29.test")), "{model_id}");
    }
}

#[tokio::test]
async fn an_overloaded_event_before_content_on_vertex_claude_is_retried() {
    let overloaded = support::faults::sse(
        Some("error"),
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let server = TestServer::start(vec![Canned::sse(overloaded), good(Api::AnthropicMessages)]).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(on_clock(vertex(&server.url, CLAUDE), &clock), CLAUDE).unwrap();
    let outcome = scripted(Some(&server), &clock, &[Step::Received(1), Step::End(2)], collect(&model)).await;
    assert_eq!(outcome.response().text(), "Hello");
    assert_eq!(outcome.retries().len(), 1, "{:?}", outcome.retries());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_silent_cloud_times_out_at_the_first_byte_and_is_retried() {
    let configs: [(&str, Make); 2] =
        [(DEPLOYMENT, |url| azure(url, Api::OpenAiChat)), (CLAUDE, |url| vertex(url, CLAUDE))];
    for (model_id, make) in configs {
        let server = TestServer::start(vec![Canned::silent()]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(on_clock(make(&server.url), &clock), model_id).unwrap();
        let steps = [Step::Received(1), Step::End(1), Step::End(2), Step::Received(2), Step::End(3)];
        let outcome = scripted(Some(&server), &clock, &steps, collect(&model)).await;
        let error = outcome.error();
        assert_eq!(error.class(), "network", "{model_id}: {error}");
        assert!(
            error.to_string().contains("no response within 5 s of sending the request (first-byte timeout)"),
            "{model_id}: {error}"
        );
        assert_eq!(server.requests().len(), 2, "{model_id}: retried once");
        assert_eq!(clock.waits()[0].duration, FIRST_BYTE, "{model_id}");
    }
}

#[tokio::test]
async fn context_overflow_is_classified_on_every_cloud() {
    let azure_body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let gemini_body = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
    let claude_body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let cases: [(&str, &str, Make); 3] = [
        (DEPLOYMENT, azure_body, |url| azure(url, Api::OpenAiChat)),
        (GEMINI, gemini_body, |url| vertex(url, GEMINI)),
        (CLAUDE, claude_body, |url| vertex(url, CLAUDE)),
    ];
    for (model_id, body, make) in cases {
        let server = TestServer::start(vec![Canned::error(400, body)]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(on_clock(make(&server.url), &clock), model_id).unwrap();
        let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
        assert!(
            matches!(outcome.error(), ModelError::ContextOverflow(_)),
            "{model_id}: {:?}",
            outcome.error()
        );
        assert_eq!(server.requests().len(), 1, "{model_id}: never retried");
    }
}

/// A token source that fails as told, counting its calls.
#[derive(Debug)]
struct Failing {
    error: fn() -> ModelError,
    calls: std::sync::atomic::AtomicUsize,
}

impl TokenSource for Failing {
    fn token(&self) -> bosun_providers::cloud::TokenFuture<'_> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let error = (self.error)();
        Box::pin(async move { Err(error) })
    }
}

#[tokio::test]
async fn a_refused_credential_fails_at_once_and_an_unreachable_token_endpoint_is_retried() {
    for (error, attempts) in [
        (
            (|| ModelError::Authentication("Google refused the service-account key: invalid_grant".into()))
                as fn() -> ModelError,
            1,
        ),
        (|| ModelError::Network("getting a Google access token: connection refused".into()), 2),
    ] {
        let server = TestServer::start(vec![good(Api::Gemini)]).await;
        let clock = ManualClock::default();
        let source = Arc::new(Failing { error, calls: Default::default() });
        let config = on_clock(vertex(&server.url, GEMINI), &clock).with_token_source(source.clone());
        let model = HostedModel::new(config, GEMINI).unwrap();
        let steps: &[Step] = if attempts == 2 { &[Step::End(2)] } else { &[] };
        let outcome = scripted(None, &clock, steps, collect(&model)).await;
        assert_eq!(outcome.error().to_string(), error().to_string());
        assert_eq!(source.calls.load(std::sync::atomic::Ordering::SeqCst), attempts);
        assert!(server.requests().is_empty(), "no request goes without its token");
    }
}

#[tokio::test]
async fn an_entra_token_from_a_command_is_kept_until_near_its_expiry_and_a_failing_command_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("runs");
    let expires =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
    let script = format!(
        "echo run >> '{}'; printf '{{\"accessToken\": \"entra-from-az\", \"expires_on\": {expires}}}'",
        count.display()
    );
    let server = TestServer::start(vec![good(Api::OpenAiChat)]).await;
    let source = CommandToken::new("sh", vec!["-c".into(), script]);
    let config = ProviderConfig::azure(&server.url, Api::OpenAiChat).with_token_source(Arc::new(source));
    let clock = ManualClock::default();
    let model = HostedModel::new(on_clock(config, &clock), DEPLOYMENT).unwrap();
    for _ in 0..2 {
        assert_eq!(scripted(Some(&server), &clock, &[], collect(&model)).await.response().text(), "Hello");
    }
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1, "the token was kept");
    assert!(server.requests().iter().all(|r| r.header("authorization") == Some("Bearer entra-from-az")));

    let server = TestServer::start(vec![good(Api::OpenAiChat)]).await;
    let failing = CommandToken::new("sh", vec!["-c".into(), "echo 'Please run az login' >&2; exit 1".into()]);
    let config = ProviderConfig::azure(&server.url, Api::OpenAiChat).with_token_source(Arc::new(failing));
    let model = HostedModel::new(on_clock(config, &clock), DEPLOYMENT).unwrap();
    let outcome = scripted(None, &clock, &[], collect(&model)).await;
    let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
    assert!(message.contains("`sh` failed") && message.contains("Please run az login"), "{message}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_refused_credential_names_what_to_check_on_each_cloud() {
    let body = r#"{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint."}}"#;
    let cases: [(&str, &str, Make); 2] = [
        (DEPLOYMENT, "check AZURE_OPENAI_API_KEY or the Entra ID token", |url| azure(url, Api::OpenAiChat)),
        (GEMINI, "check the Google credentials (GOOGLE_APPLICATION_CREDENTIALS", |url| vertex(url, GEMINI)),
    ];
    for (model_id, hint, make) in cases {
        let server = TestServer::start(vec![Canned::error(401, body)]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(on_clock(make(&server.url), &clock), model_id).unwrap();
        let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
        let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
        assert!(message.contains(hint), "{model_id}: {message}");
        assert!(!message.contains("az-key") && !message.contains("ya29.test"), "{message}");
        assert_eq!(server.requests().len(), 1, "{model_id}: not retried");
    }
}

#[tokio::test]
async fn azures_content_filter_annotations_are_read_past_and_a_filtered_answer_is_a_refusal() {
    // Azure opens a stream with the prompt's filter results (no choices)
    // and annotates each choice with its own.
    let filters = json!({"hate": {"filtered": false, "severity": "safe"},
        "violence": {"filtered": false, "severity": "safe"}});
    let chunk = |choices: serde_json::Value| {
        format!("data: {}\n\n", json!({"id": "chatcmpl-1", "model": "gpt-4o-2024-08-06", "choices": choices}))
    };
    let prompt = format!(
        "data: {}\n\n",
        json!({"choices": [], "id": "", "model": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}]})
    );
    let answer = |finish: &str| {
        prompt.clone()
            + &chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": "Hi"},
                "content_filter_results": filters, "finish_reason": null}]))
            + &chunk(
                json!([{"index": 0, "delta": {}, "content_filter_results": {}, "finish_reason": finish}]),
            )
            + "data: [DONE]\n\n"
    };
    for (finish, stop) in [("stop", StopReason::Stop), ("content_filter", StopReason::Refusal)] {
        let server = TestServer::start(vec![Canned::sse(answer(finish))]).await;
        let clock = ManualClock::default();
        let model =
            HostedModel::new(on_clock(azure(&server.url, Api::OpenAiChat), &clock), DEPLOYMENT).unwrap();
        let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
        assert_eq!(outcome.response().text(), "Hi", "{finish}");
        assert_eq!(outcome.response().stop_reason, stop, "{finish}");
    }
}
