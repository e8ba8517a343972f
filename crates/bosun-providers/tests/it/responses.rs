//! The OpenAI Responses protocol through the real transport: the recorded
//! four-request tool loop (reasoning with encrypted content, function calls,
//! final text) asserted value by value and replayed into the next request,
//! the request body field by field, independence from how the bytes are
//! chunked, and the endings other than `response.completed`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use bosun_core::message::ProviderData;
use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ResponsePart, StopReason, Support, Thinking, ToolChoice, ToolDefinition, Usage,
};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy};
use futures_util::StreamExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::shapes::into_history;
use support::{Canned, Recorded, TestServer};
use tokio_util::sync::CancellationToken;

/// No stream may take longer than this: a hang fails the test.
const NO_HANG: Duration = Duration::from_secs(30);

const FIXTURE: &str = "openai-responses/reasoning-function-calls.chunks.jsonl";

const RS_ID: &str = "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9";
const FC_1: &str = "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f";
const SUMMARY: &str = "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply \
                       the result by 3, and finally multiply that by 10, reporting the final product.";

// ---------------------------------------------------------------- helpers

/// The recording's four response streams, split before each
/// `response.created` and re-framed as SSE with event names.
fn recorded_streams() -> Vec<Vec<u8>> {
    let path = support::fixtures_dir().join(FIXTURE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parts: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).unwrap();
        if value["type"] == "response.created" || parts.is_empty() {
            parts.push(String::new());
        }
        let part = parts.last_mut().unwrap();
        part.push_str(line);
        part.push('\n');
    }
    let lengths: Vec<usize> = parts.iter().map(|p| p.lines().count()).collect();
    assert_eq!(lengths, [56, 19, 19, 16], "the recording's four streams");
    parts.iter().map(|p| support::reframe(p, true)).collect()
}

/// Payloads framed as the API sends them (`event: <type>` + `data:`).
fn sse(events: &[Value]) -> Vec<u8> {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    support::reframe(&lines.join("\n"), true)
}

fn config(server: &TestServer) -> ProviderConfig {
    ProviderConfig::new("openai-responses", Api::OpenAiResponses, format!("{}/v1", server.url))
        .with_retry(RetryPolicy::none())
}

fn model(server: &TestServer) -> HostedModel {
    HostedModel::new(config(server), "gpt").unwrap()
}

fn thinking_on() -> GenerationOptions {
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::On { budget: None });
    options
}

/// Everything one call of `stream` produced.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    events: Vec<ModelEvent>,
    end: Result<ModelResponse, ModelError>,
}

impl Outcome {
    fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| if let ModelEvent::TextDelta(t) = e { Some(t.as_str()) } else { None })
            .collect()
    }

    fn reasoning(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| if let ModelEvent::ReasoningDelta(t) = e { Some(t.as_str()) } else { None })
            .collect()
    }

    fn count(&self, matches: impl Fn(&ModelEvent) -> bool) -> usize {
        self.events.iter().filter(|e| matches(e)).count()
    }

    /// Calls as streamed: index → (id, name, concatenated arguments, ended).
    fn calls(&self) -> BTreeMap<u32, (String, String, String, bool)> {
        let mut calls = BTreeMap::new();
        for event in &self.events {
            match event {
                ModelEvent::ToolCallStart { index, id, name } => {
                    assert!(calls.insert(*index, (id.clone(), name.clone(), String::new(), false)).is_none());
                }
                ModelEvent::ToolCallArgs { index, fragment } => {
                    let call = calls.get_mut(index).expect("arguments before the call started");
                    assert!(!call.3, "arguments after the call ended");
                    call.2.push_str(fragment);
                }
                ModelEvent::ToolCallEnd { index } => calls.get_mut(index).expect("end before start").3 = true,
                _ => {}
            }
        }
        calls
    }

    fn response(&self) -> &ModelResponse {
        self.end.as_ref().unwrap_or_else(|e| panic!("the stream failed: {e}"))
    }

    fn error(&self) -> &ModelError {
        match &self.end {
            Err(error) => error,
            Ok(response) => panic!("expected an error, got {response:?}"),
        }
    }
}

/// Runs one request to its end, checking the stream's shape: deltas, then
/// exactly one `Done` or error, last.
async fn run(model: &HostedModel, request: ModelRequest<'_>) -> Outcome {
    let collect = async {
        let mut stream = model.stream(request, CancellationToken::new());
        let mut events = Vec::new();
        let mut end = None;
        while let Some(item) = stream.next().await {
            assert!(end.is_none(), "an item after the end: {item:?}");
            match item {
                Ok(ModelEvent::Done(response)) => end = Some(Ok(response)),
                Ok(event) => events.push(event),
                Err(error) => end = Some(Err(error)),
            }
        }
        Outcome { events, end: end.expect("the stream ended without Done or an error") }
    };
    tokio::time::timeout(NO_HANG, collect).await.expect("the stream hung")
}

/// Serves `body` once and runs a plain request against it.
async fn serve_one(body: Vec<u8>) -> Outcome {
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let messages = vec![Message::user("hi")];
    run(&model(&server), ModelRequest::new(None, messages, Vec::new(), thinking_on())).await
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::new(input, output)
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The one tool call of a response.
fn only_call(response: &ModelResponse) -> (&str, &str, &Value, Option<&ProviderData>) {
    let calls: Vec<_> = response
        .content
        .iter()
        .filter_map(|p| match p {
            ResponsePart::ToolCall { provider_id, name, arguments, provider_data } => {
                Some((provider_id.as_str(), name.as_str(), arguments, provider_data.as_ref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{response:?}");
    calls[0]
}

fn calculator() -> ToolDefinition {
    ToolDefinition::new(
        "calculator",
        "A minimal calculator for basic arithmetic. Call it once per step.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
               "op": {"type": "string"}}, "required": ["a", "b", "op"]}),
    )
}

/// Compares a body field by field (then as a whole), for readable failures.
fn assert_body(actual: &Value, expected: &Value) {
    // The prompt cache key is a digest of the system prompt and tools
    // (`stable_prefix.rs` checks it holds from round to round): its form
    // here, then the rest field by field.
    let (mut actual, mut expected) = (actual.clone(), expected.clone());
    let key = actual.as_object_mut().and_then(|map| map.remove("prompt_cache_key"));
    let key = key.as_ref().and_then(Value::as_str).unwrap_or_default();
    assert!(key.starts_with("bosun-") && key.len() == 30, "prompt_cache_key {key:?}");
    // An expected body taken from another request keeps its own key.
    expected.as_object_mut().and_then(|map| map.remove("prompt_cache_key"));
    let (actual, expected) = (&actual, &expected);
    let (Some(actual_map), Some(expected_map)) = (actual.as_object(), expected.as_object()) else {
        panic!("bodies must be objects: {actual}");
    };
    for (key, value) in expected_map {
        assert_eq!(actual_map.get(key), Some(value), "field `{key}`");
    }
    let extra: Vec<&String> = actual_map.keys().filter(|k| !expected_map.contains_key(*k)).collect();
    assert!(extra.is_empty(), "unexpected fields {extra:?} in {actual}");
    assert_eq!(actual, expected);
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "sequence_number": 99,
           "response": {"id": "resp_x", "status": "completed", "output": [], "usage": usage}})
}

// ---------------------------------------------------------- conformance

#[tokio::test]
async fn the_recorded_tool_loop_decodes_exactly_and_replays_its_reasoning() {
    let streams = recorded_streams();
    let server = TestServer::start(streams.into_iter().map(Canned::sse).collect()).await;
    let model = model(&server);
    assert_eq!(model.capabilities().thinking_toggle, Support::Yes);
    let tools = vec![calculator()];
    let mut history = vec![Message::user("What is (12 + 7) * 3 * 10? Use the calculator for each step.")];

    // Stream 1: reasoning with encrypted content, then a function call.
    let one = run(&model, ModelRequest::new(None, history.clone(), tools.clone(), thinking_on())).await;
    let response = one.response();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage, usage(134, 28));
    assert_eq!(response.content.len(), 2, "{response:?}");
    let ResponsePart::Content(ContentPart::Reasoning { text, signature, provider_data: Some(data) }) =
        &response.content[0]
    else {
        panic!("reasoning first: {response:?}");
    };
    assert_eq!(text, SUMMARY);
    assert_eq!(one.reasoning(), SUMMARY);
    assert_eq!(one.count(|e| matches!(e, ModelEvent::ReasoningDelta(_))), 32);
    assert_eq!(signature, &None);
    assert_eq!(data.api, "openai-responses");
    assert_eq!(data.data["id"], RS_ID);
    assert_eq!(data.data["summary"], json!([{"type": "summary_text", "text": SUMMARY}]));
    let encrypted = data.data["encrypted_content"].as_str().unwrap().to_owned();
    let encrypted = encrypted.as_str();
    assert_eq!(encrypted.chars().count(), 1060);
    assert!(encrypted.starts_with("gAAAAABpPDIVOKrs"), "{}", &encrypted[..20]);
    assert!(encrypted.ends_with("Nxat0wz4uQ=="));
    assert_eq!(sha256(encrypted), "b82eda9fcb40aaf58c56db5016e1511855f6bb6c1fb00a4f07ba2c43d0ad468d");
    let (id, name, arguments, call_data) = only_call(response);
    assert_eq!((id, name), ("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator"));
    assert_eq!(arguments, &json!({"a": 12, "b": 7, "op": "add"}));
    assert_eq!(call_data, Some(&ProviderData::new("openai-responses", json!({"id": FC_1}))));
    let streamed = one.calls();
    assert_eq!(
        streamed.get(&0),
        Some(&(
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn".to_owned(),
            "calculator".to_owned(),
            r#"{"a":12,"b":7,"op":"add"}"#.to_owned(),
            true
        ))
    );
    assert_eq!(streamed.len(), 1);
    assert_eq!(one.count(|e| matches!(e, ModelEvent::ToolCallArgs { .. })), 13);
    assert_eq!(one.text(), "");

    // Streams 2 and 3: one function call each, after the tool results.
    let expected_calls = [
        ("call_Q6pW65MUgW9vF59BmItYGos3", json!({"a": 19, "b": 3, "op": "multiply"}), usage(221, 26), "19"),
        ("call_Zl5vIMnD7dVAjgU6FkhmiCZh", json!({"a": 57, "b": 10, "op": "multiply"}), usage(260, 26), "57"),
    ];
    let mut last = one;
    let mut call_ids = Vec::new();
    for (call_id, arguments, usage, result) in expected_calls {
        let (message, ids) = into_history(last.response());
        history.push(message);
        history.push(Message::tool_result(ids[0], "calculator", result, false));
        call_ids.push(ids[0]);
        let next = run(&model, ModelRequest::new(None, history.clone(), tools.clone(), thinking_on())).await;
        let response = next.response();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.usage, usage);
        assert_eq!(response.content.len(), 1, "{response:?}");
        let (id, name, parsed, data) = only_call(response);
        assert_eq!((id, name, parsed), (call_id, "calculator", &arguments));
        assert!(data.is_some_and(
            |d| d.api == "openai-responses" && d.data["id"].as_str().unwrap().starts_with("fc_")
        ));
        let streamed = &next.calls()[&0];
        assert_eq!(serde_json::from_str::<Value>(&streamed.2).unwrap(), arguments);
        assert_eq!((streamed.0.as_str(), streamed.3), (call_id, true));
        last = next;
    }

    // Stream 4: the answer.
    let (message, ids) = into_history(last.response());
    history.push(message);
    history.push(Message::tool_result(ids[0], "calculator", "570", false));
    call_ids.push(ids[0]);
    let four = run(&model, ModelRequest::new(None, history.clone(), tools.clone(), thinking_on())).await;
    let response = four.response();
    assert_eq!(response.content, vec![ResponsePart::text("The final result is **570**.")]);
    assert_eq!(four.text(), "The final result is **570**.");
    assert_eq!(four.count(|e| matches!(e, ModelEvent::TextDelta(_))), 8);
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.usage, usage(299, 12));
    assert!(four.calls().is_empty() && four.reasoning().is_empty());

    // What was sent: the reasoning replayed with its encrypted content and
    // paired with its call's item id; results keyed by the session's ids.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/responses"));
        assert_eq!(request.header("authorization"), None);
    }
    let input = &requests[3].json()["input"];
    let expected_input = json!([
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is (12 + 7) * 3 * 10? Use the calculator for each step."}]},
        {"type": "reasoning", "id": RS_ID, "summary": [{"type": "summary_text", "text": SUMMARY}],
         "encrypted_content": encrypted},
        {"type": "function_call", "id": FC_1, "call_id": call_ids[0].to_string(), "name": "calculator",
         "arguments": r#"{"a":12,"b":7,"op":"add"}"#},
        {"type": "function_call_output", "call_id": call_ids[0].to_string(), "output": "19"},
        {"type": "function_call", "call_id": call_ids[1].to_string(), "name": "calculator",
         "arguments": r#"{"a":19,"b":3,"op":"multiply"}"#},
        {"type": "function_call_output", "call_id": call_ids[1].to_string(), "output": "57"},
        {"type": "function_call", "call_id": call_ids[2].to_string(), "name": "calculator",
         "arguments": r#"{"a":57,"b":10,"op":"multiply"}"#},
        {"type": "function_call_output", "call_id": call_ids[2].to_string(), "output": "570"},
    ]);
    assert_eq!(input, &expected_input);
    for (n, request) in requests.iter().enumerate() {
        let body = request.json();
        assert_eq!(body["input"].as_array().unwrap().len(), [1, 4, 6, 8][n]);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["reasoning"], json!({"effort": "medium", "summary": "auto"}));
    }
}

// --------------------------------------------------------- request shape

fn two_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "read",
            "Reads a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        ToolDefinition::new(
            "search",
            "Searches files.",
            json!({"type": "object", "properties": {"pattern": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["pattern"]}),
        ),
    ]
}

fn expected_tools() -> Value {
    json!([
        {"type": "function", "name": "read", "description": "Reads a file.", "strict": false,
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"type": "function", "name": "search", "description": "Searches files.", "strict": false,
         "parameters": {"type": "object", "properties": {"pattern": {"type": "string"},
                        "limit": {"type": "integer"}}, "required": ["pattern"]}},
    ])
}

/// Sends one request to a server answering with a minimal completed stream.
async fn send(config: ProviderConfig, request: ModelRequest<'_>) -> Recorded {
    let body = sse(&[completed(json!({"input_tokens": 1, "output_tokens": 1}))]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let model = HostedModel::new(config.with_base_url(format!("{}/v1", server.url)), "gpt-5.1").unwrap();
    let outcome = run(&model, request).await;
    assert_eq!(outcome.response().usage, usage(1, 1));
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

fn bare_config() -> ProviderConfig {
    ProviderConfig::new("openai-responses", Api::OpenAiResponses, "http://unused/v1")
        .with_retry(RetryPolicy::none())
}

#[tokio::test]
async fn the_request_body_holds_every_item_kind_and_replays_responses_reasoning() {
    let call = CallId::new_v7();
    let encrypted = "gAAAAABopaque==";
    let messages = vec![
        Message::User {
            content: vec![
                ContentPart::text("What is in this picture?"),
                ContentPart::image("image/png", vec![137, 80, 78, 71]),
            ],
        },
        Message::Assistant {
            content: vec![
                ContentPart::Reasoning {
                    text: "Look at the file.".into(),
                    signature: None,
                    provider_data: Some(ProviderData::new(
                        "openai-responses",
                        json!({"id": "rs_1", "encrypted_content": encrypted,
                               "summary": [{"type": "summary_text", "text": "Look at the file."}]}),
                    )),
                },
                ContentPart::ToolCall {
                    id: call,
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                    provider_data: Some(ProviderData::new("openai-responses", json!({"id": "fc_1"}))),
                },
            ],
            usage: Usage::new(10, 5),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "read", "a cat", false),
        Message::user("Thanks. And now?"),
    ];
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::On { budget: Some(20_000) });
    options.max_tokens = Some(1024);
    options.temperature = Some(0.2);
    options.top_p = Some(0.9);
    let config = bare_config().with_key(ApiKey::new("sk-test-123"));
    let request = ModelRequest::new(Some("You are terse."), messages, two_tools(), options);
    let recorded = send(config, request).await;

    assert_eq!(recorded.path, "/v1/responses");
    assert_eq!(recorded.header("authorization"), Some("Bearer sk-test-123"));
    let expected = json!({
        "model": "gpt-5.1",
        "instructions": "You are terse.",
        "input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "What is in this picture?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
            ]},
            {"type": "reasoning", "id": "rs_1",
             "summary": [{"type": "summary_text", "text": "Look at the file."}],
             "encrypted_content": encrypted},
            {"type": "function_call", "id": "fc_1", "call_id": call.to_string(), "name": "read",
             "arguments": r#"{"path":"a.txt"}"#},
            {"type": "function_call_output", "call_id": call.to_string(), "output": "a cat"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks. And now?"}]},
        ],
        "tools": expected_tools(),
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
        "max_output_tokens": 1024,
        "temperature": 0.2,
        "top_p": 0.9,
    });
    assert_body(&recorded.json(), &expected);
}

#[tokio::test]
async fn reasoning_from_another_api_is_dropped_and_the_call_loses_its_item_id() {
    let call = CallId::new_v7();
    let messages = vec![
        Message::user("Read a.txt"),
        Message::Assistant {
            content: vec![
                ContentPart::Reasoning {
                    text: "Anthropic thinking.".into(),
                    signature: Some("sig".into()),
                    provider_data: Some(ProviderData::new("anthropic-messages", json!({"redacted": "x"}))),
                },
                ContentPart::reasoning("Plain reasoning text."),
                ContentPart::text("Reading it."),
                ContentPart::ToolCall {
                    id: call,
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                    provider_data: Some(ProviderData::new("openai-responses", json!({"id": "fc_9"}))),
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "read", "hello", true),
    ];
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::Off);
    let request = ModelRequest::new(None, messages, two_tools(), options);
    let recorded = send(bare_config(), request).await;

    assert_eq!(recorded.path, "/v1/responses");
    assert_eq!(recorded.header("authorization"), None);
    let expected = json!({
        "model": "gpt-5.1",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
            {"type": "function_call", "call_id": call.to_string(), "name": "read",
             "arguments": r#"{"path":"a.txt"}"#},
            {"type": "function_call_output", "call_id": call.to_string(), "output": "hello"},
        ],
        "tools": expected_tools(),
        "stream": true,
        "store": false,
    });
    assert_body(&recorded.json(), &expected);
}

/// The body sent for one question with `tools` and `choice`.
async fn body_with_choice(tools: Vec<ToolDefinition>, choice: Option<ToolChoice>) -> Value {
    let mut options = GenerationOptions::default();
    options.tool_choice = choice;
    let request = ModelRequest::new(None, vec![Message::user("hi")], tools, options);
    send(bare_config(), request).await.json()
}

#[tokio::test]
async fn tool_choice_is_a_string_beside_tools_and_absent_without_them() {
    let unset = body_with_choice(two_tools(), None).await;
    assert!(unset.get("tool_choice").is_none(), "{unset}");
    assert_eq!(unset["tools"], expected_tools());
    for (choice, sent) in
        [(ToolChoice::Required, "required"), (ToolChoice::None, "none"), (ToolChoice::Auto, "auto")]
    {
        let body = body_with_choice(two_tools(), Some(choice)).await;
        assert_eq!(body["tool_choice"], json!(sent), "{choice:?}");
        let mut expected = unset.clone();
        expected["tool_choice"] = json!(sent);
        assert_body(&body, &expected);
    }
    let toolless = body_with_choice(Vec::new(), None).await;
    assert!(toolless.get("tools").is_none(), "{toolless}");
    for choice in [ToolChoice::Required, ToolChoice::None, ToolChoice::Auto] {
        assert_body(&body_with_choice(Vec::new(), Some(choice)).await, &toolless);
    }
}

// ------------------------------------------------------------- chunking

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Stream 1's bytes and what it decodes to when sent in one piece.
fn first_stream() -> &'static (Vec<u8>, Outcome) {
    static FIRST: OnceLock<(Vec<u8>, Outcome)> = OnceLock::new();
    FIRST.get_or_init(|| {
        let bytes = recorded_streams().swap_remove(0);
        let outcome = runtime().block_on(serve_one(bytes.clone()));
        assert_eq!(outcome.response().stop_reason, StopReason::ToolUse);
        (bytes, outcome)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_the_stream_gives_the_same_deltas_and_response(
        cuts in prop::collection::vec(0usize..40_000, 0..24)
    ) {
        let (bytes, whole) = first_stream();
        let chunks = support::split_at(bytes, &cuts);
        let split = runtime().block_on(async {
            let server = TestServer::start(vec![Canned::sse_chunks(chunks)]).await;
            let messages = vec![Message::user("hi")];
            run(&model(&server), ModelRequest::new(None, messages, Vec::new(), thinking_on())).await
        });
        prop_assert_eq!(&split, whole);
    }
}

// ------------------------------------------------------------- endings

#[tokio::test]
async fn a_failed_response_with_a_rate_limit_is_rate_limited() {
    let body = sse(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_f", "status": "in_progress"}}),
        json!({"type": "response.failed", "sequence_number": 1, "response": {"id": "resp_f", "status": "failed",
               "error": {"code": "rate_limit_exceeded",
                         "message": "Rate limit reached for gpt on tokens per min. Please try again in 1.5s."}}}),
    ]);
    let outcome = serve_one(body).await;
    assert!(
        matches!(outcome.error(), ModelError::RateLimited { retry_after_ms: Some(1500), .. }),
        "{:?}",
        outcome.end
    );
    assert!(outcome.events.is_empty());
}

#[tokio::test]
async fn other_failures_and_error_events_are_classified() {
    let failed = sse(&[json!({"type": "response.failed", "sequence_number": 0,
                              "response": {"status": "failed", "error": null}})]);
    assert!(matches!(serve_one(failed).await.error(), ModelError::Server(_)));
    let overflow = sse(&[json!({"type": "error", "sequence_number": 0, "code": "context_length_exceeded",
                                "message": "Your input exceeds the context window of this model.", "param": "input"})]);
    assert!(matches!(serve_one(overflow).await.error(), ModelError::ContextOverflow(_)));
    // `content_filter` and `max_output_tokens` end a response (`stop_reasons.rs`); a reason
    // not known here is a server error that names it.
    let unknown = sse(&[json!({"type": "response.incomplete", "sequence_number": 0,
                               "response": {"status": "incomplete", "incomplete_details": {"reason": "reason_yet_to_come"}}})]);
    let outcome = serve_one(unknown).await;
    assert!(
        matches!(outcome.error(), ModelError::Server(m) if m.contains("reason_yet_to_come")),
        "{:?}",
        outcome.end
    );
}

#[tokio::test]
async fn an_incomplete_response_at_the_token_limit_ends_with_length() {
    let body = sse(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_i"}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1",
               "output_index": 0, "content_index": 0, "delta": "The answer is"}),
        json!({"type": "response.incomplete", "sequence_number": 3, "response": {"id": "resp_i",
               "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
               "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20},
                         "output_tokens": 16, "output_tokens_details": {"reasoning_tokens": 12}}}}),
    ]);
    let outcome = serve_one(body).await;
    let response = outcome.response();
    assert_eq!(response.stop_reason, StopReason::Length);
    assert_eq!(response.content, vec![ResponsePart::text("The answer is")]);
    assert_eq!(outcome.text(), "The answer is");
    let mut expected = Usage::new(30, 16);
    expected.cache_read = 20;
    expected.reasoning = 12;
    assert_eq!(response.usage, expected);
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_an_error_not_a_response() {
    let streams = recorded_streams();
    let bytes = &streams[0];
    let last_event =
        bytes.windows(b"event: response.completed".len()).rposition(|w| w == b"event: response.completed");
    let before_completed = last_event.unwrap();
    // Cut between events: the stream ended before its terminal event.
    for cut in [before_completed, 0] {
        let outcome = serve_one(bytes[..cut].to_vec()).await;
        assert!(
            matches!(outcome.error(), ModelError::Network(m) if m.contains("ended before")),
            "cut at {cut}: {:?}",
            outcome.end
        );
    }
    // Cut inside an event: the torn last event is an error too (whether it
    // reads as an early end or as broken JSON), never a response.
    for cut in [bytes.len() - 40, bytes.len() / 2] {
        let outcome = serve_one(bytes[..cut].to_vec()).await;
        assert!(
            matches!(outcome.error(), ModelError::Network(_) | ModelError::Protocol(_)),
            "cut at {cut}: {:?}",
            outcome.end
        );
    }
}

#[tokio::test]
async fn items_without_deltas_summary_parts_and_replayed_events_still_add_up() {
    // Two summary parts, a message only in its done item, a call only in the
    // final `response.output`, and a replayed (lower-numbered) delta.
    let summary_delta = |n: u64, index: u64, delta: &str| {
        json!({"type": "response.reasoning_summary_text.delta", "sequence_number": n, "item_id": "rs_2",
               "output_index": 0, "summary_index": index, "delta": delta})
    };
    let body = sse(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_p"}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "early"}}),
        summary_delta(2, 0, "First."),
        summary_delta(3, 1, "Second"),
        summary_delta(2, 0, "First."),
        summary_delta(4, 1, "."),
        json!({"type": "response.output_item.done", "sequence_number": 5, "output_index": 0,
               "item": {"id": "rs_2", "type": "reasoning", "encrypted_content": "final",
                        "summary": [{"type": "summary_text", "text": "First."},
                                    {"type": "summary_text", "text": "Second."}]}}),
        json!({"type": "response.output_item.done", "sequence_number": 6, "output_index": 1,
               "item": {"id": "msg_2", "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Calling."}]}}),
        json!({"type": "response.completed", "sequence_number": 7, "response": {"id": "resp_p", "status": "completed",
               "output": [{}, {}, {"id": "fc_2", "type": "function_call", "call_id": "call_2", "name": "read",
                                    "arguments": "{\"path\":\"b\"}"}],
               "usage": {"input_tokens": 10, "output_tokens": 3}}}),
    ]);
    let outcome = serve_one(body).await;
    let response = outcome.response();
    let reasoning = ContentPart::Reasoning {
        text: "First.\n\nSecond.".into(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "openai-responses",
            json!({"id": "rs_2", "encrypted_content": "final", "summary": [
                {"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}]}),
        )),
    };
    let call = ResponsePart::tool_call("call_2", "read", json!({"path": "b"}))
        .with_provider_data(ProviderData::new("openai-responses", json!({"id": "fc_2"})));
    assert_eq!(
        response.content,
        vec![ResponsePart::Content(reasoning), ResponsePart::text("Calling."), call]
    );
    assert_eq!(outcome.reasoning(), "First.\n\nSecond.");
    assert_eq!(outcome.text(), "Calling.");
    assert_eq!(
        outcome.calls().get(&0),
        Some(&("call_2".to_owned(), "read".to_owned(), "{\"path\":\"b\"}".to_owned(), true))
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}
