//! OpenAI Chat Completions: conformance against recorded streams through the
//! real HTTP transport, the exact request body, any chunking of the bytes,
//! in-stream errors and cut streams.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ResponsePart, StopReason, Thinking, ToolChoice, ToolDefinition, Usage,
};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, Quirks, ReasoningFormat, RetryPolicy};
use futures_util::StreamExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Canned, TestServer, usage};
use tokio_util::sync::CancellationToken;

const PARALLEL: &str = "openai-chat/parallel-tool-calls.sse";
const XAI: &str = "openai-chat/xai-reasoning-tool-call.chunks.jsonl";

/// A good stream for tests that only look at the request.
const OK_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// Everything one streamed response produced.
#[derive(Debug, Default, PartialEq)]
struct Outcome {
    text: String,
    reasoning: String,
    reasoning_deltas: usize,
    /// (index, id, name) per `ToolCallStart`, in order.
    starts: Vec<(u32, String, String)>,
    /// Concatenated `ToolCallArgs` per index.
    args: BTreeMap<u32, String>,
    /// `ToolCallArgs` events per index.
    fragments: BTreeMap<u32, usize>,
    ends: Vec<u32>,
    usages: Vec<Usage>,
    /// The attempt each `Retrying` notice announced.
    retries: Vec<u32>,
    response: Option<ModelResponse>,
    error: Option<ModelError>,
}

fn collect(items: Vec<Result<ModelEvent, ModelError>>) -> Outcome {
    let mut outcome = Outcome::default();
    let count = items.len();
    for (n, item) in items.into_iter().enumerate() {
        assert!(outcome.response.is_none() && outcome.error.is_none(), "an item after the end");
        match item {
            Ok(ModelEvent::TextDelta(text)) => outcome.text.push_str(&text),
            Ok(ModelEvent::ReasoningDelta(text)) => {
                outcome.reasoning.push_str(&text);
                outcome.reasoning_deltas += 1;
            }
            Ok(ModelEvent::ToolCallStart { index, id, name }) => outcome.starts.push((index, id, name)),
            Ok(ModelEvent::ToolCallArgs { index, fragment }) => {
                outcome.args.entry(index).or_default().push_str(&fragment);
                *outcome.fragments.entry(index).or_default() += 1;
            }
            Ok(ModelEvent::ToolCallEnd { index }) => outcome.ends.push(index),
            Ok(ModelEvent::Usage(usage)) => outcome.usages.push(usage),
            Ok(ModelEvent::Retrying { attempt, .. }) => outcome.retries.push(attempt),
            Ok(ModelEvent::Done(response)) => {
                assert_eq!(n + 1, count, "Done is the last item");
                outcome.response = Some(response);
            }
            Ok(other) => panic!("unexpected event {other:?}"),
            Err(error) => outcome.error = Some(error),
        }
    }
    outcome
}

fn simple_request() -> ModelRequest<'static> {
    ModelRequest::new(
        None,
        vec![Message::user("hi")],
        Vec::<ToolDefinition>::new(),
        GenerationOptions::default(),
    )
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy::default().with_delays(Duration::from_millis(1), Duration::from_millis(5))
}

/// Streams one response through the real transport, bounded so a hang fails.
async fn stream(model: &HostedModel, request: ModelRequest<'_>) -> Outcome {
    let items = tokio::time::timeout(Duration::from_secs(30), async {
        model.stream(request, CancellationToken::new()).collect::<Vec<_>>().await
    })
    .await
    .expect("the stream ended");
    collect(items)
}

/// Serves `responses` and streams one simple request against them.
async fn serve(responses: Vec<Canned>, retry: RetryPolicy) -> (Outcome, TestServer) {
    let server = TestServer::start(responses).await;
    let config = ProviderConfig::openai_compatible(format!("{}/v1", server.url)).with_retry(retry);
    let model = HostedModel::new(config, "m").unwrap();
    let outcome = stream(&model, simple_request()).await;
    (outcome, server)
}

fn response(outcome: &Outcome) -> &ModelResponse {
    match (&outcome.response, &outcome.error) {
        (Some(response), _) => response,
        (None, error) => panic!("no response: {error:?}"),
    }
}

fn reasoning_of(response: &ModelResponse) -> String {
    response
        .content
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Content(ContentPart::Reasoning { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(response: &ModelResponse) -> Vec<(String, String, Value)> {
    response
        .content
        .iter()
        .filter_map(|p| match p {
            ResponsePart::ToolCall { provider_id, name, arguments, .. } => {
                Some((provider_id.clone(), name.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

fn assert_parallel(outcome: &Outcome) {
    let response = response(outcome);
    assert_eq!(response.text(), "");
    assert_eq!(outcome.text, "");
    assert_eq!(reasoning_of(response), "");
    assert_eq!(
        calls_of(response),
        vec![
            (
                "call_lQnnsesjFMWMQ5IeWPHzR4th".to_owned(),
                "GetWeatherArgs".to_owned(),
                json!({"city": "Edinburgh", "country": "UK", "units": "c"})
            ),
            (
                "call_2xjOUgaCdiwAcl9ZBL9LyMUU".to_owned(),
                "get_stock_price".to_owned(),
                json!({"ticker": "AAPL", "exchange": "NASDAQ"})
            ),
        ]
    );
    assert_eq!(
        outcome.starts,
        vec![
            (0, "call_lQnnsesjFMWMQ5IeWPHzR4th".to_owned(), "GetWeatherArgs".to_owned()),
            (1, "call_2xjOUgaCdiwAcl9ZBL9LyMUU".to_owned(), "get_stock_price".to_owned()),
        ]
    );
    assert_eq!(outcome.args[&0], r#"{"city": "Edinburgh", "country": "UK", "units": "c"}"#);
    assert_eq!(outcome.args[&1], r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#);
    assert_eq!(outcome.fragments, BTreeMap::from([(0, 11), (1, 9)]));
    assert_eq!(outcome.ends, vec![0, 1]);
    assert_eq!(response.usage, Usage::new(149, 60));
    assert_eq!(outcome.usages, vec![Usage::new(149, 60)]);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

fn assert_xai(outcome: &Outcome) {
    let response = response(outcome);
    let reasoning = reasoning_of(response);
    assert_eq!(outcome.reasoning, reasoning, "the deltas add up to the reasoning part");
    assert_eq!(outcome.reasoning_deltas, 227);
    assert_eq!(reasoning.len(), 1069);
    assert_eq!(
        format!("{:x}", Sha256::digest(reasoning.as_bytes())),
        "7df9a5068fc57ed4c3b8a1639dc6b569a75dfcf8859c7fd2320f84e9a4d6bc6f"
    );
    assert!(reasoning.starts_with("First, the user is asking about the weather in San Francisco."));
    assert!(reasoning.ends_with("for now, this is the logical next step."));
    // Reasoning prose, not a tool call (the README elides the middle as `...`).
    assert!(reasoning.contains(
        r#"<function_call>{"action": "weather", "action_input": {"location": "San Francisco"}}</function_call>"#
    ));
    assert_eq!(response.text(), "");
    assert_eq!(outcome.text, "");
    assert_eq!(
        calls_of(response),
        vec![("call_79382389".to_owned(), "weather".to_owned(), json!({"location": "San Francisco"}))]
    );
    assert_eq!(outcome.starts, vec![(0, "call_79382389".to_owned(), "weather".to_owned())]);
    assert_eq!(outcome.args[&0], r#"{"location":"San Francisco"}"#);
    assert_eq!(outcome.ends, vec![0]);
    // input = prompt 307 - cached 306; output = completion_tokens as reported.
    assert_eq!(response.usage, usage(1, 26, 306, 227));
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    // Reasoning first, then the call.
    assert!(matches!(response.content[0], ResponsePart::Content(ContentPart::Reasoning { .. })));
    assert_eq!(response.content.len(), 2);
}

#[tokio::test]
async fn parallel_tool_calls_recording_through_the_transport() {
    let bytes = support::recording(PARALLEL, false);
    let (outcome, server) = serve(vec![Canned::sse(bytes)], RetryPolicy::none()).await;
    assert_parallel(&outcome);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn xai_reasoning_tool_call_recording_with_and_without_done() {
    let mut bytes = support::recording(XAI, false);
    let (without_done, _server) = serve(vec![Canned::sse(bytes.clone())], RetryPolicy::none()).await;
    assert_xai(&without_done);
    bytes.extend_from_slice(b"data: [DONE]\n\n");
    let (with_done, _server) = serve(vec![Canned::sse(bytes)], RetryPolicy::none()).await;
    assert_xai(&with_done);
    assert_eq!(with_done, without_done);
}

#[test]
fn recordings_decode_the_same_without_http() {
    let parallel = support::recording(PARALLEL, false);
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    assert_parallel(&collect(bosun_providers::decode_recorded(&config, &[&parallel])));
    let xai = support::recording(XAI, false);
    assert_xai(&collect(bosun_providers::decode_recorded(&config, &[&xai])));
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "read",
            "Reads a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        ToolDefinition::new(
            "write",
            "Writes a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}),
        ),
    ]
}

fn conversation(call: CallId) -> Vec<Message> {
    vec![
        Message::User {
            content: vec![
                ContentPart::text("What is in a.txt?"),
                ContentPart::image("image/png", vec![1, 2, 3]),
            ],
        },
        Message::Assistant {
            content: vec![
                ContentPart::Reasoning {
                    text: "I should read it.".into(),
                    signature: Some("sig".into()),
                    provider_data: None,
                },
                ContentPart::text("Let me read it."),
                ContentPart::ToolCall {
                    id: call,
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                    provider_data: None,
                },
            ],
            usage: Usage::new(10, 5),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "read", "hello", false),
        Message::user("Thanks. Now summarise."),
    ]
}

#[tokio::test]
async fn request_body_path_and_headers_are_exact() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let config = ProviderConfig::openai_compatible(format!("{}/v1/", server.url))
        .with_key(ApiKey::new("sk-test-123"))
        .with_header("x-extra", "yes")
        .with_retry(RetryPolicy::none());
    let model = HostedModel::new(config, "gpt-test").unwrap();
    let call = CallId::new_v7();
    let messages = conversation(call);
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(256);
    options.temperature = Some(0.2);
    options.top_p = Some(0.9);
    options.stop = Some(vec!["END".into()]);
    options.thinking = Some(Thinking::On { budget: None });
    let request = ModelRequest::new(Some("Be brief."), messages, tools(), options);
    let outcome = stream(&model, request).await;
    assert_eq!(response(&outcome).text(), "ok");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let recorded = &requests[0];
    assert_eq!(recorded.method, "POST");
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(recorded.header("x-extra"), Some("yes"));
    assert_eq!(recorded.header("content-type"), Some("application/json"));

    let body = recorded.json();
    let expected = json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is in a.txt?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID"}},
            ]},
            {"role": "assistant", "content": "Let me read it.", "tool_calls": [
                {"id": call.to_string(), "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}},
            ]},
            {"role": "tool", "tool_call_id": call.to_string(), "content": "hello"},
            {"role": "user", "content": "Thanks. Now summarise."},
        ],
        "tools": [
            {"type": "function", "function": {
                "name": "read",
                "description": "Reads a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }},
            {"type": "function", "function": {
                "name": "write",
                "description": "Writes a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}},
            }},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 256,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["END"],
        "reasoning_effort": "high",
    });
    let (Value::Object(body), Value::Object(expected)) = (body, expected) else { unreachable!() };
    for (field, value) in &expected {
        assert_eq!(body.get(field), Some(value), "field {field}");
    }
    let extra: Vec<&String> = body.keys().filter(|k| !expected.contains_key(*k)).collect();
    assert!(extra.is_empty(), "unexpected fields {extra:?}");
    let text = String::from_utf8(recorded.body.clone()).unwrap();
    assert!(!text.contains("I should read it."), "reasoning is never replayed: {text}");
}

#[tokio::test]
async fn without_a_key_no_authorization_and_quirks_rename_fields() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let mut quirks = Quirks::default();
    quirks.max_tokens_field = "max_completion_tokens";
    quirks.stream_usage = false;
    let config = ProviderConfig::openai_compatible(format!("{}/v1", server.url))
        .with_quirks(quirks)
        .with_retry(RetryPolicy::none());
    let model = HostedModel::new(config, "m").unwrap();
    let call = CallId::new_v7();
    let messages = vec![
        Message::user("go"),
        Message::Assistant {
            content: vec![
                ContentPart::reasoning("only thinking"),
                ContentPart::ToolCall {
                    id: call,
                    name: "shot".into(),
                    arguments: json!({}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::ToolResult {
            call_id: call,
            tool_name: "shot".into(),
            content: vec![ContentPart::text("took it"), ContentPart::image("image/jpeg", vec![255])],
            is_error: false,
            usage: Usage::default(),
            spent_by: bosun_core::SpentBy::Tool,
        },
    ];
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(64);
    options.thinking = Some(Thinking::Off);
    let request = ModelRequest::new(None, messages, Vec::<ToolDefinition>::new(), options);
    let outcome = stream(&model, request).await;
    assert_eq!(response(&outcome).text(), "ok");

    let recorded = &server.requests()[0];
    assert_eq!(recorded.header("authorization"), None);
    let id = call.to_string();
    assert_eq!(
        recorded.json(),
        json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "shot", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": id,
                 "content": "took it\n[1 image(s) follow in the next message]"},
                {"role": "user", "content": [
                    {"type": "text", "text": format!("Images from tool call {id}:")},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/w=="}},
                ]},
            ],
            "stream": true,
            "max_completion_tokens": 64,
        })
    );
}

/// The body `config` (pointed at a local server) sends for one question
/// with `tools` and `choice`.
async fn body_with_choice(
    config: ProviderConfig,
    tools: Vec<ToolDefinition>,
    choice: Option<ToolChoice>,
) -> Value {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let config = config
        .with_base_url(format!("{}/v1", server.url))
        .with_key(ApiKey::new("k"))
        .with_retry(RetryPolicy::none());
    let model = HostedModel::new(config, "m").unwrap();
    let mut options = GenerationOptions::default();
    options.tool_choice = choice;
    let outcome = stream(&model, ModelRequest::new(None, vec![Message::user("hi")], tools, options)).await;
    assert_eq!(response(&outcome).text(), "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests[0].json()
}

/// Each choice adds exactly `"tool_choice": "<string>"` to the body with
/// tools; unset, or without tools, the body is what it was before.
async fn assert_chat_tool_choice(config: impl Fn() -> ProviderConfig) {
    let unset = body_with_choice(config(), tools(), None).await;
    assert!(unset.get("tool_choice").is_none(), "{unset}");
    assert_eq!(unset["tools"].as_array().map(Vec::len), Some(2), "{unset}");
    for (choice, sent) in
        [(ToolChoice::Required, "required"), (ToolChoice::None, "none"), (ToolChoice::Auto, "auto")]
    {
        let body = body_with_choice(config(), tools(), Some(choice)).await;
        assert_eq!(body["tool_choice"], json!(sent), "{choice:?}");
        let mut expected = unset.clone();
        expected["tool_choice"] = json!(sent);
        assert_eq!(body, expected, "{choice:?}: only tool_choice is added");
    }
    let toolless = body_with_choice(config(), Vec::new(), None).await;
    assert!(toolless.get("tools").is_none(), "{toolless}");
    for choice in [ToolChoice::Required, ToolChoice::None, ToolChoice::Auto] {
        let body = body_with_choice(config(), Vec::new(), Some(choice)).await;
        assert_eq!(body, toolless, "{choice:?} without tools sends no tool_choice");
    }
}

#[tokio::test]
async fn tool_choice_is_a_string_beside_tools_and_absent_without_them() {
    assert_chat_tool_choice(|| ProviderConfig::openai_compatible("http://unused/v1")).await;
}

#[tokio::test]
async fn every_chat_completions_preset_sends_the_tool_choice() {
    let chat: Vec<&str> = ProviderConfig::PRESETS
        .iter()
        .copied()
        .filter(|name| ProviderConfig::preset(name).unwrap().api == Api::OpenAiChat)
        .collect();
    assert!(chat.contains(&"openai") && chat.contains(&"deepseek"), "{chat:?}");
    for name in chat {
        assert_chat_tool_choice(|| ProviderConfig::preset(name).unwrap()).await;
    }
}

/// Decodes a stream given as JSON payloads (each framed as `data:`).
fn decode(config: &ProviderConfig, payloads: &[Value], done: bool) -> Outcome {
    let mut bytes = String::new();
    for payload in payloads {
        bytes.push_str(&format!("data: {payload}\n\n"));
    }
    if done {
        bytes.push_str("data: [DONE]\n\n");
    }
    collect(bosun_providers::decode_recorded(config, &[bytes.as_bytes()]))
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[test]
fn text_whole_calls_and_odd_arguments() {
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    let outcome = decode(
        &config,
        &[
            delta(json!({"role": "assistant", "content": "Hel"}), None),
            delta(json!({"content": "lo"}), None),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "a", "type": "function",
                "function": {"name": "one", "arguments": ""}}]}),
                None,
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "b", "type": "function",
                "function": {"name": "two", "arguments": "{not json"}}]}),
                None,
            ),
            // Some servers finish a tool-calling turn with "stop".
            delta(json!({}), Some("stop")),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 3},
                "completion_tokens_details": {"reasoning_tokens": 2}}}),
        ],
        false,
    );
    let response = response(&outcome);
    assert_eq!(outcome.text, "Hello");
    assert_eq!(
        response.content,
        vec![
            ResponsePart::text("Hello"),
            ResponsePart::tool_call("a", "one", json!({})),
            ResponsePart::tool_call("b", "two", json!("{not json")),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage, usage(7, 4, 3, 2));
    assert_eq!(outcome.ends, vec![0, 1]);
}

#[test]
fn calls_without_index_and_repeated_indexes_stay_apart() {
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    let outcome = decode(
        &config,
        &[
            delta(
                json!({"tool_calls": [{"id": "a", "function": {"name": "one", "arguments": "{\"x\":"}}]}),
                None,
            ),
            delta(json!({"tool_calls": [{"function": {"arguments": "1}"}}]}), None),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "two", "arguments": "{}"}}]}),
                None,
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "three", "arguments": {"y": 2}}}]}),
                None,
            ),
            delta(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let response = response(&outcome);
    assert_eq!(
        calls_of(response),
        vec![
            ("a".to_owned(), "one".to_owned(), json!({"x": 1})),
            ("b".to_owned(), "two".to_owned(), json!({})),
            ("c".to_owned(), "three".to_owned(), json!({"y": 2})),
        ]
    );
    assert_eq!(outcome.starts.iter().map(|s| s.0).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(outcome.args[&0], "{\"x\":1}");
}

#[test]
fn reasoning_field_follows_the_quirks_without_duplicates() {
    let mut quirks = Quirks::default();
    quirks.reasoning = ReasoningFormat::Reasoning;
    let openrouter = ProviderConfig::openai_compatible("http://unused/v1").with_quirks(quirks);
    let chunks = [
        delta(json!({"reasoning": "think", "reasoning_content": "think"}), None),
        delta(json!({"reasoning": "ing"}), None),
        delta(json!({"content": "done"}), Some("stop")),
    ];
    let outcome = decode(&openrouter, &chunks, true);
    assert_eq!(outcome.reasoning, "thinking");
    assert_eq!(
        response(&outcome).content,
        vec![ResponsePart::Content(ContentPart::reasoning("thinking")), ResponsePart::text("done")]
    );
    // The default reads `reasoning_content` first and still accepts `reasoning`.
    let default = ProviderConfig::openai_compatible("http://unused/v1");
    assert_eq!(decode(&default, &chunks, true).reasoning, "thinking");
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    for (reason, expected) in [
        ("stop", StopReason::Stop),
        ("length", StopReason::Length),
        ("tool_calls", StopReason::ToolUse),
        ("function_call", StopReason::ToolUse),
        ("content_filter", StopReason::Refusal),
    ] {
        let outcome = decode(&config, &[delta(json!({"content": "x"}), Some(reason))], false);
        assert_eq!(response(&outcome).stop_reason, expected, "{reason}");
    }
    let refusal = decode(&config, &[delta(json!({"refusal": "I can't."}), Some("stop"))], true);
    assert_eq!(response(&refusal).stop_reason, StopReason::Refusal);
    assert_eq!(response(&refusal).text(), "I can't.");
}

#[test]
fn in_stream_errors_are_classified() {
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    let rate = decode(
        &config,
        &[json!({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded", "code": null}})],
        false,
    );
    assert!(matches!(rate.error, Some(ModelError::RateLimited { .. })), "{rate:?}");
    let overflow = decode(
        &config,
        &[
            delta(json!({"content": "par"}), None),
            json!({"error": {"message": "This model's maximum context length is 8192 tokens"}}),
        ],
        false,
    );
    assert_eq!(overflow.text, "par");
    assert!(matches!(overflow.error, Some(ModelError::ContextOverflow(_))), "{overflow:?}");
    let bad = collect(bosun_providers::decode_recorded(&config, &[b"data: {not json\n\n"]));
    assert!(matches!(bad.error, Some(ModelError::Protocol(_))), "{bad:?}");
}

#[tokio::test]
async fn an_in_stream_rate_limit_is_retried_by_the_transport() {
    let good = support::recording(PARALLEL, false);
    let limited = "data: {\"error\":{\"message\":\"Rate limit reached, try again in 1ms\",\"type\":\"rate_limit_exceeded\",\"code\":\"rate_limit_exceeded\"}}\n\n";
    let (outcome, server) = serve(vec![Canned::sse(limited), Canned::sse(good)], fast_retry()).await;
    assert_parallel(&outcome);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(outcome.retries, [2], "the retry was announced");

    let (outcome, server) = serve(vec![Canned::sse(limited)], RetryPolicy::none()).await;
    assert!(matches!(outcome.error, Some(ModelError::RateLimited { .. })), "{outcome:?}");
    assert!(outcome.response.is_none());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_an_error() {
    let bytes = support::recording(PARALLEL, false);
    let text = String::from_utf8(bytes).unwrap();
    let cut: String = text.split_inclusive("\n\n").take(10).collect();
    let (outcome, _server) = serve(vec![Canned::sse(cut)], RetryPolicy::none()).await;
    assert!(matches!(outcome.error, Some(ModelError::Network(_))), "{outcome:?}");
    assert!(outcome.response.is_none());
    assert_eq!(outcome.starts.len(), 1, "the deltas before the cut were delivered");

    // Nothing at all: an empty 200 stream.
    let (outcome, server) = serve(vec![Canned::sse("")], fast_retry()).await;
    assert!(matches!(outcome.error, Some(ModelError::Network(_))), "{outcome:?}");
    assert_eq!(server.requests().len(), 4, "retried: nothing had reached the session");
    assert_eq!(outcome.retries, [2, 3, 4]);
}

/// The parallel recording served in `chunks` over a fresh runtime and server.
fn serve_chunks(chunks: Vec<Vec<u8>>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async { serve(vec![Canned::sse_chunks(chunks)], RetryPolicy::none()).await.0 })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_chunking_of_the_bytes_gives_the_same_response(
        cuts in proptest::collection::vec(0usize..8000, 0..40)
    ) {
        let bytes = support::recording(PARALLEL, false);
        let whole = serve_chunks(vec![bytes.clone()]);
        assert_parallel(&whole);
        let split = serve_chunks(support::split_at(&bytes, &cuts));
        prop_assert_eq!(split, whole);
    }
}

#[test]
fn null_usage_is_ignored_and_groq_usage_is_read() {
    let config = ProviderConfig::openai_compatible("http://unused/v1");
    let outcome = decode(
        &config,
        &[
            json!({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}], "usage": null}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": null,
                   "x_groq": {"id": "req_1", "usage": {"prompt_tokens": 12, "completion_tokens": 3}}}),
        ],
        true,
    );
    assert_eq!(outcome.usages, vec![Usage::new(12, 3)]);
    assert_eq!(response(&outcome).usage, Usage::new(12, 3));
    assert_eq!(response(&outcome).stop_reason, StopReason::Stop);
}

#[test]
fn image_input_is_unknown_for_a_compatible_server_until_the_caller_says() {
    let config = ProviderConfig::openai_compatible("http://127.0.0.1:9/v1");
    let model = HostedModel::new(config.clone(), "any").unwrap();
    assert_eq!(model.capabilities().images, bosun_core::Support::Unknown, "a server may run any model");
    let text_only = HostedModel::new(config, "any").unwrap().with_images(bosun_core::Support::No);
    assert_eq!(text_only.capabilities().images, bosun_core::Support::No);
    assert_eq!(text_only.capabilities().tools, bosun_core::Support::Yes, "the rest is the protocol's");
}
