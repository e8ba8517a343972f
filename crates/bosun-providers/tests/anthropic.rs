//! Anthropic Messages: the recorded streams through the real transport
//! (exact values from the fixtures' README), skipped server-tool and unknown
//! blocks, redacted thinking, the exact request body with its caching
//! breakpoints and thinking replay, any chunking of a stream, and in-stream
//! and HTTP errors with retries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use bosun_core::message::ProviderData;
use bosun_core::{
    CallId, Capabilities, ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent,
    ModelRequest, ModelResponse, ResponsePart, StopReason, Thinking, ToolDefinition, Usage,
};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy, decode_recorded};
use futures_util::StreamExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Canned, ManualClock, Recorded, TestServer, Wait, WaitState, recording, reframe, split_at};
use tokio_util::sync::CancellationToken;

/// No stream may take longer than this: a hang fails the test.
const NO_HANG: Duration = Duration::from_secs(30);

const TOOL_USE: &str = "anthropic/tool-use.sse";
const THINKING: &str = "anthropic/thinking-text.chunks.jsonl";

type Events = Vec<Result<ModelEvent, ModelError>>;

fn config(url: &str) -> ProviderConfig {
    ProviderConfig::new("anthropic", Api::AnthropicMessages, url)
        .with_key(ApiKey::new("test-key"))
        .with_retry(RetryPolicy::default().with_delays(Duration::from_millis(1), Duration::from_millis(5)))
}

fn model(server: &TestServer) -> HostedModel {
    HostedModel::new(config(&server.url), "claude").unwrap()
}

fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default())
}

async fn collect(model: &HostedModel, request: ModelRequest<'_>) -> Events {
    let stream = model.stream(request, CancellationToken::new());
    tokio::time::timeout(NO_HANG, stream.collect::<Vec<_>>()).await.expect("the stream hung")
}

/// Serves `responses` in turn and runs one request against them.
async fn serve(responses: Vec<Canned>, request: ModelRequest<'_>) -> (Events, Vec<Recorded>) {
    let server = TestServer::start(responses).await;
    let events = collect(&model(&server), request).await;
    (events, server.requests())
}

/// The final response; fails unless the stream ended with exactly one `Done`.
fn done(events: &Events) -> &ModelResponse {
    let dones = events.iter().filter(|e| matches!(e, Ok(ModelEvent::Done(_)))).count();
    assert_eq!(dones, 1, "{events:#?}");
    match events.last() {
        Some(Ok(ModelEvent::Done(response))) => response,
        other => panic!("the stream did not end with Done: {other:?}"),
    }
}

/// The last item, which must be an error.
fn failure(events: &Events) -> &ModelError {
    assert!(!events.iter().any(|e| matches!(e, Ok(ModelEvent::Done(_)))), "{events:#?}");
    match events.last() {
        Some(Err(error)) => error,
        other => panic!("the stream did not end with an error: {other:?}"),
    }
}

/// The streamed deltas, by kind.
#[derive(Debug, Default, PartialEq)]
struct Deltas {
    text: Vec<String>,
    reasoning: Vec<String>,
    starts: Vec<(u32, String, String)>,
    args: Vec<(u32, String)>,
    ends: Vec<u32>,
}

fn deltas(events: &Events) -> Deltas {
    let mut deltas = Deltas::default();
    for event in events.iter().flatten() {
        match event {
            ModelEvent::TextDelta(text) => deltas.text.push(text.clone()),
            ModelEvent::ReasoningDelta(text) => deltas.reasoning.push(text.clone()),
            ModelEvent::ToolCallStart { index, id, name } => {
                deltas.starts.push((*index, id.clone(), name.clone()))
            }
            ModelEvent::ToolCallArgs { index, fragment } => deltas.args.push((*index, fragment.clone())),
            ModelEvent::ToolCallEnd { index } => deltas.ends.push(*index),
            _ => {}
        }
    }
    deltas
}

fn reasoning_of(response: &ModelResponse) -> Vec<&ContentPart> {
    response
        .content
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Content(part @ ContentPart::Reasoning { .. }) => Some(part),
            _ => None,
        })
        .collect()
}

/// Hand-written events as the API frames them (`event: <type>` + `data:`).
fn stream(events: &[Value]) -> Vec<u8> {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    reframe(&lines.join("\n"), true)
}

fn message_start(input: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write, "output_tokens": 1}}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn block_delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn text_delta(index: u64, text: &str) -> Value {
    block_delta(index, json!({"type": "text_delta", "text": text}))
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// A short complete answer, `ok`.
fn ok_stream() -> Vec<u8> {
    stream(&[
        message_start(3, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "ok"),
        block_stop(0),
        message_delta("end_turn", 1),
        message_stop(),
    ])
}

fn decode(bytes: &[u8]) -> Events {
    decode_recorded(&config("http://127.0.0.1:9"), &[bytes])
}

/// The recorded tool-use response, per the README.
fn tool_use_response() -> ModelResponse {
    ModelResponse::new(
        vec![
            ResponsePart::text("I'll check the current weather in Paris for you."),
            ResponsePart::tool_call(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"}),
            ),
        ],
        Usage::new(377, 65),
        StopReason::ToolUse,
    )
}

fn thinking_tag() -> ProviderData {
    ProviderData::new("anthropic-messages", json!({"type": "thinking"}))
}

// ---------------------------------------------------------------------------
// 1. Conformance with the recorded streams, through the real transport.

#[tokio::test]
async fn recorded_tool_use_stream_gives_the_readme_values() {
    let Some(raw) = recording(TOOL_USE, false) else { return };
    assert!(raw.ends_with(b"data: {\"type\":\"message_stop\"}"), "the file ends without a newline");
    let (events, requests) = serve(vec![Canned::sse(raw.clone())], hello()).await;

    let response = done(&events);
    assert_eq!(*response, tool_use_response());
    assert_eq!(response.usage.cache_read, 0);
    assert_eq!(response.usage.cache_write, 0);

    let deltas = deltas(&events);
    assert_eq!(deltas.text, ["I", "'ll check the current weather in Paris for you."]);
    assert_eq!(deltas.text.concat(), response.text());
    assert!(deltas.reasoning.is_empty());
    assert_eq!(deltas.starts, [(0, "toolu_01NRLabsLyVHZPKxbKvkfSMn".to_owned(), "get_weather".to_owned())]);
    // The first, empty fragment carries nothing and is not forwarded.
    let fragments: Vec<&str> = deltas.args.iter().map(|(_, f)| f.as_str()).collect();
    assert_eq!(fragments, ["{\"locati", "on\": \"P", "ar", "is\"}"]);
    assert!(deltas.args.iter().all(|(index, _)| *index == 0));
    assert_eq!(fragments.concat(), r#"{"location": "Paris"}"#);
    assert_eq!(deltas.ends, [0]);

    // The same bytes decoded without HTTP give the same events.
    assert_eq!(decode(&raw), events);

    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), None);
}

#[tokio::test]
async fn recorded_thinking_stream_gives_the_readme_values() {
    let Some(raw) = recording(THINKING, true) else { return };
    let (events, _) = serve(vec![Canned::sse(raw.clone())], hello()).await;
    let response = done(&events);

    let thinking = "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185";
    assert_eq!(thinking.chars().count(), 75);
    assert_eq!(thinking.len(), 76);
    let reasoning = reasoning_of(response);
    let [ContentPart::Reasoning { text, signature: Some(signature), provider_data }] = reasoning.as_slice()
    else {
        panic!("one signed thinking part expected: {response:#?}");
    };
    assert_eq!(text, thinking);
    assert_eq!(signature.chars().count(), 332);
    assert!(signature.starts_with("EvQBCkYICxgC") && signature.ends_with("/EhT6Ca17BgB"));
    assert_eq!(
        format!("{:x}", Sha256::digest(signature.as_bytes())),
        "fac2ba54cd0568caebe1af5657082e7d3b07497ec69faaa244f2c987c12042ac"
    );
    assert_eq!(provider_data.as_ref(), Some(&thinking_tag()));

    assert_eq!(response.text(), "925 ÷ 5 = 185");
    assert!(matches!(response.content[0], ResponsePart::Content(ContentPart::Reasoning { .. })));
    assert!(matches!(response.content[1], ResponsePart::Content(ContentPart::Text { .. })));
    assert_eq!(response.content.len(), 2);
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.usage, Usage::new(69, 53));

    let deltas = deltas(&events);
    // Nine non-empty thinking deltas (the tenth is empty).
    assert_eq!(deltas.reasoning.len(), 9);
    assert_eq!(deltas.reasoning.concat(), thinking);
    assert_eq!(deltas.text, ["925", " ÷ 5 ", "= 185"]);
    assert_eq!(deltas.text.concat(), response.text());
    assert!(deltas.starts.is_empty());
    assert_eq!(decode(&raw), events);
}

#[tokio::test]
async fn capabilities_are_all_proven() {
    let server = TestServer::start(vec![Canned::sse(ok_stream())]).await;
    assert_eq!(model(&server).capabilities(), Capabilities::all());
}

// ---------------------------------------------------------------------------
// 2. Blocks the client does not keep, and redacted thinking.

#[tokio::test]
async fn server_tool_and_unknown_blocks_are_skipped_without_disturbing_later_ones() {
    let body = stream(&[
        message_start(10, 5, 3),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Let me search."),
        block_stop(0),
        block_start(
            1,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        block_delta(1, json!({"type": "input_json_delta", "partial_json": "{\"query\": \"rust\"}"})),
        block_stop(1),
        block_start(2, json!({"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": "{\"path\":"})),
        block_delta(2, json!({"type": "input_json_delta", "partial_json": " \"a.rs\"}"})),
        block_stop(2),
        block_start(3, json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []})),
        block_stop(3),
        block_start(4, json!({"type": "mystery_block", "payload": 1})),
        block_delta(4, json!({"type": "mystery_delta", "text": "not text"})),
        block_stop(4),
        json!({"type": "ping"}),
        block_start(5, json!({"type": "text", "text": ""})),
        block_delta(
            5,
            json!({"type": "citations_delta", "citation": {"type": "web_search_result_location"}}),
        ),
        text_delta(5, " Found it."),
        block_stop(5),
        block_start(6, json!({"type": "tool_use", "id": "toolu_6", "name": "grep", "input": {}})),
        block_stop(6),
        message_delta("tool_use", 42),
        message_stop(),
    ]);
    let (events, _) = serve(vec![Canned::sse(body)], hello()).await;
    let response = done(&events);
    let mut usage = Usage::new(10, 42);
    usage.cache_read = 5;
    usage.cache_write = 3;
    assert_eq!(
        *response,
        ModelResponse::new(
            vec![
                ResponsePart::text("Let me search."),
                ResponsePart::tool_call("toolu_2", "read", json!({"path": "a.rs"})),
                ResponsePart::text(" Found it."),
                // A call without argument deltas has the empty object.
                ResponsePart::tool_call("toolu_6", "grep", json!({})),
            ],
            usage,
            StopReason::ToolUse,
        )
    );
    let deltas = deltas(&events);
    assert_eq!(deltas.text, ["Let me search.", " Found it."]);
    assert_eq!(deltas.starts, [(0, "toolu_2".into(), "read".into()), (1, "toolu_6".into(), "grep".into())]);
    assert_eq!(deltas.args, [(0, "{\"path\":".into()), (0, " \"a.rs\"}".into())]);
    assert_eq!(deltas.ends, [0, 1]);
}

#[tokio::test]
async fn redacted_thinking_is_kept_and_replayed_with_signed_thinking() {
    let body = stream(&[
        message_start(7, 0, 0),
        block_start(0, json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})),
        block_stop(0),
        block_start(1, json!({"type": "thinking", "thinking": "", "signature": ""})),
        block_delta(1, json!({"type": "thinking_delta", "thinking": "Hmm."})),
        block_delta(1, json!({"type": "signature_delta", "signature": "c2ln"})),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": ""})),
        text_delta(2, "Done."),
        block_stop(2),
        message_delta("end_turn", 9),
        message_stop(),
    ]);
    let (events, _) = serve(vec![Canned::sse(body)], hello()).await;
    let response = done(&events);
    let redacted = ContentPart::Reasoning {
        text: String::new(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "anthropic-messages",
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        )),
    };
    let thinking = ContentPart::Reasoning {
        text: "Hmm.".into(),
        signature: Some("c2ln".into()),
        provider_data: Some(thinking_tag()),
    };
    assert_eq!(
        response.content,
        [
            ResponsePart::Content(redacted.clone()),
            ResponsePart::Content(thinking.clone()),
            ResponsePart::text("Done."),
        ]
    );
    assert_eq!(deltas(&events).reasoning, ["Hmm."]);

    // Put into history as the session would, then sent back.
    let content: Vec<ContentPart> = response
        .content
        .iter()
        .map(|p| match p {
            ResponsePart::Content(part) => part.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    let history = vec![
        Message::user("hi"),
        Message::Assistant { content, usage: response.usage, stop_reason: response.stop_reason },
        Message::user("and?"),
    ];
    let body = request_body(ModelRequest::new(None, history, Vec::new(), GenerationOptions::default())).await;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"},
            {"type": "text", "text": "Done."},
        ]})
    );
}

// ---------------------------------------------------------------------------
// 3. The request.

/// The JSON body the server received for `request`.
async fn request_body(request: ModelRequest<'_>) -> Value {
    let (events, requests) = serve(vec![Canned::sse(ok_stream())], request).await;
    done(&events);
    assert_eq!(requests.len(), 1);
    requests[0].json()
}

/// Compares field by field (for a readable failure), then as a whole.
fn assert_body(body: &Value, expected: &Value) {
    let (Value::Object(body_fields), Value::Object(expected_fields)) = (body, expected) else {
        panic!("not objects: {body}");
    };
    for (key, value) in expected_fields {
        assert_eq!(body_fields.get(key), Some(value), "field {key}");
    }
    let mut keys: Vec<&String> = body_fields.keys().collect();
    let mut expected_keys: Vec<&String> = expected_fields.keys().collect();
    keys.sort();
    expected_keys.sort();
    assert_eq!(keys, expected_keys);
    assert_eq!(body, expected);
}

fn tools() -> Vec<ToolDefinition> {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    vec![
        ToolDefinition::new("read", "Reads a file.", path.clone()),
        ToolDefinition::new("write", "Writes a file.", path),
    ]
}

/// A conversation: text + image, an answer with reasoning (`reasoning`), text
/// and a tool call, its result, and a new question.
fn conversation(call: CallId, reasoning: ContentPart) -> Vec<Message> {
    vec![
        Message::User {
            content: vec![
                ContentPart::text("What is in this image?"),
                ContentPart::image("image/png", vec![1, 2, 3]),
            ],
        },
        Message::Assistant {
            content: vec![
                reasoning,
                ContentPart::text("Let me read the notes."),
                ContentPart::ToolCall {
                    id: call,
                    name: "read".into(),
                    arguments: json!({"path": "notes.md"}),
                    provider_data: None,
                },
            ],
            usage: Usage::new(10, 20),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "read", "a cat", false),
        Message::user("So what is it?"),
    ]
}

fn expected_tools() -> Value {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    json!([
        {"name": "read", "description": "Reads a file.", "input_schema": path},
        {"name": "write", "description": "Writes a file.", "input_schema": path,
         "cache_control": {"type": "ephemeral"}},
    ])
}

fn expected_messages(call: CallId, replayed: Option<Value>) -> Value {
    let id = call.to_string();
    let mut answer = vec![
        json!({"type": "text", "text": "Let me read the notes."}),
        json!({"type": "tool_use", "id": id, "name": "read", "input": {"path": "notes.md"}}),
    ];
    if let Some(block) = replayed {
        answer.insert(0, block);
    }
    json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AQID"}},
        ]},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "a cat"}],
             "is_error": false},
            {"type": "text", "text": "So what is it?", "cache_control": {"type": "ephemeral"}},
        ]},
    ])
}

#[tokio::test]
async fn the_request_body_has_breakpoints_and_replays_anthropic_thinking() {
    let call = CallId::new_v7();
    let signed = ContentPart::Reasoning {
        text: "Look closely.".into(),
        signature: Some("sig-1".into()),
        provider_data: Some(thinking_tag()),
    };
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(4096);
    options.thinking = Some(Thinking::On { budget: Some(2000) });
    options.temperature = Some(0.5); // not allowed with thinking: left out
    options.stop = Some(vec!["END".into()]);
    let tools = tools();
    let request = ModelRequest::new(Some("You are terse."), conversation(call, signed), tools, options);
    let (events, requests) = serve(vec![Canned::sse(ok_stream())], request).await;
    assert_eq!(done(&events).text(), "ok");
    let recorded = &requests[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.header("x-api-key"), Some("test-key"));
    assert_eq!(recorded.header("anthropic-version"), Some("2023-06-01"));

    let expected = json!({
        "model": "claude",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": expected_messages(
            call,
            Some(json!({"type": "thinking", "thinking": "Look closely.", "signature": "sig-1"})),
        ),
        "tools": expected_tools(),
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "stop_sequences": ["END"],
        "stream": true,
    });
    assert_body(&recorded.json(), &expected);
}

#[tokio::test]
async fn reasoning_from_other_apis_or_unsigned_is_not_replayed() {
    let call = CallId::new_v7();
    let foreign = ContentPart::Reasoning {
        text: "Encrypted elsewhere.".into(),
        signature: Some("not-for-anthropic".into()),
        provider_data: Some(ProviderData::new("openai-responses", json!({"encrypted_content": "gAAAA"}))),
    };
    let unsigned = ContentPart::Reasoning {
        text: "No signature.".into(),
        signature: None,
        provider_data: Some(thinking_tag()),
    };
    for reasoning in [foreign, unsigned, ContentPart::reasoning("Plain text reasoning.")] {
        let mut options = GenerationOptions::default();
        options.temperature = Some(0.7);
        let request =
            ModelRequest::new(Some("You are terse."), conversation(call, reasoning), tools(), options);
        let expected = json!({
            "model": "claude",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": expected_messages(call, None),
            "tools": expected_tools(),
            "temperature": 0.7,
            "stream": true,
        });
        assert_body(&request_body(request).await, &expected);
    }
}

#[tokio::test]
async fn thinking_budget_and_token_limits() {
    let body_for = |max_tokens: Option<u32>, thinking: Option<Thinking>| {
        let mut options = GenerationOptions::default();
        options.max_tokens = max_tokens;
        options.thinking = thinking;
        options.top_p = Some(0.5);
        request_body(ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), options))
    };
    let on = |budget| Some(Thinking::On { budget });
    // (max_tokens, thinking) → (max_tokens sent, budget sent)
    let cases = [
        (None, None, 8192, None),
        (Some(100), None, 100, None),
        (None, Some(Thinking::Off), 8192, None),
        (None, Some(Thinking::Auto), 8192, None),
        (None, on(None), 8192 + 4096, Some(4096)),
        (None, on(Some(10)), 8192 + 1024, Some(1024)),
        (Some(16000), on(Some(8000)), 16000, Some(8000)),
        (Some(3000), on(Some(8000)), 3000, Some(2999)),
        (Some(500), on(None), 1025, Some(1024)),
    ];
    for (max_tokens, thinking, sent_max, sent_budget) in cases {
        let body = body_for(max_tokens, thinking).await;
        let case = format!("{max_tokens:?} {thinking:?}");
        assert_eq!(body["max_tokens"], json!(sent_max), "{case}");
        match sent_budget {
            Some(budget) => {
                assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{case}");
                // top_p outside 0.95..=1 is refused with thinking: left out.
                assert!(body.get("top_p").is_none(), "{case}");
            }
            None => {
                assert!(body.get("thinking").is_none(), "{case}");
                assert_eq!(body["top_p"], json!(0.5), "{case}");
            }
        }
        assert!(body.get("system").is_none() && body.get("tools").is_none(), "{case}");
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
        );
    }
}

#[tokio::test]
async fn consecutive_messages_merge_and_tool_results_lead_their_turn() {
    let (first, second) = (CallId::new_v7(), CallId::new_v7());
    let history = vec![
        Message::System { text: "Also this.".into() },
        Message::user("one"),
        Message::user(""), // nothing to send
        Message::user("two"),
        Message::Assistant {
            content: vec![
                ContentPart::text(""),
                ContentPart::ToolCall {
                    id: first,
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id: second,
                name: "read".into(),
                arguments: json!("{not json"),
                provider_data: None,
            }],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::user("wait"),
        Message::tool_result(first, "read", "A", false),
        Message::ToolResult {
            call_id: second,
            tool_name: "read".into(),
            content: Vec::new(),
            is_error: true,
        },
    ];
    let body =
        request_body(ModelRequest::new(Some("Be brief."), history, Vec::new(), GenerationOptions::default()))
            .await;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief."},
               {"type": "text", "text": "Also this.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": first.to_string(), "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": second.to_string(), "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": first.to_string(),
                 "content": [{"type": "text", "text": "A"}], "is_error": false},
                {"type": "tool_result", "tool_use_id": second.to_string(), "is_error": true},
                {"type": "text", "text": "wait", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

// ---------------------------------------------------------------------------
// 4. Any chunking of a stream.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_the_tool_use_stream_decodes_the_same(cuts in proptest::collection::vec(0usize..2001, 0..24)) {
        let Some(raw) = recording(TOOL_USE, false) else { return Ok(()) };
        let whole = decode(&raw);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let events = runtime.block_on(async {
            let server = TestServer::start(vec![Canned::sse_chunks(split_at(&raw, &cuts))]).await;
            collect(&model(&server), hello()).await
        });
        prop_assert_eq!(done(&events), &tool_use_response());
        prop_assert_eq!(events, whole);
    }
}

// ---------------------------------------------------------------------------
// 5. Errors, retries, and streams that end early.

const OVERLOADED: &str = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

fn overloaded_stream() -> Vec<u8> {
    let mut bytes = stream(&[message_start(3, 0, 0), json!({"type": "ping"})]);
    bytes.extend_from_slice(format!("event: error\ndata: {OVERLOADED}\n\n").as_bytes());
    bytes
}

#[tokio::test]
async fn an_overloaded_error_event_is_rate_limited_and_retried() {
    let events = decode(&overloaded_stream());
    assert!(matches!(failure(&events), ModelError::RateLimited { .. }), "{events:?}");

    let (events, requests) =
        serve(vec![Canned::sse(overloaded_stream()), Canned::sse(ok_stream())], hello()).await;
    assert_eq!(done(&events).text(), "ok");
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    assert_eq!(requests.len(), 2);
}

#[tokio::test]
async fn http_529_honours_retry_after_and_is_retried() {
    let overloaded = Canned::error(529, OVERLOADED).with_header("retry-after", "3");
    let server = TestServer::start(vec![overloaded, Canned::sse(ok_stream())]).await;
    let clock = ManualClock::default();
    // A ceiling above the hint; backoff alone would wait about a millisecond.
    let retry = RetryPolicy::default().with_delays(Duration::from_millis(1), Duration::from_secs(60));
    let model =
        HostedModel::new(config(&server.url).with_retry(retry).with_sleeper(clock.clone()), "c").unwrap();
    // The retry's wait, the second asked for (after the first response's),
    // ends once the clock has moved on by the 3 s asked for.
    let asked = Duration::from_secs(3);
    let events = support::advancing(&clock, 2, asked, collect(&model, hello())).await;
    assert_eq!(done(&events).text(), "ok");
    let waits = clock.waits();
    assert_eq!(waits[1], Wait { at: Duration::ZERO, duration: asked, state: WaitState::Ended }, "{waits:?}");
    assert_eq!((waits[2].at, server.requests().len()), (asked, 2), "retried as the wait ended: {waits:?}");
}

#[tokio::test]
async fn an_error_after_text_ends_the_stream_without_a_retry() {
    let mut bytes = stream(&[
        message_start(3, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Par"),
    ]);
    bytes.extend_from_slice(format!("event: error\ndata: {OVERLOADED}\n\n").as_bytes());
    let (events, requests) = serve(vec![Canned::sse(bytes), Canned::sse(ok_stream())], hello()).await;
    assert_eq!(deltas(&events).text, ["Par"]);
    assert!(matches!(failure(&events), ModelError::RateLimited { .. }), "{events:?}");
    assert_eq!(requests.len(), 1);
}

#[tokio::test]
async fn a_stream_cut_after_a_delta_is_an_error_not_a_success() {
    let Some(raw) = recording(TOOL_USE, false) else { return };
    let text = String::from_utf8(raw).unwrap();
    let first_delta = text.find("event: content_block_delta").unwrap();
    let cut = first_delta + text[first_delta..].find("\n\n").unwrap() + 2;
    let truncated = text.as_bytes()[..cut].to_vec();

    let events = decode(&truncated);
    assert!(matches!(failure(&events), ModelError::Network(m) if m.contains("message_stop")), "{events:?}");

    // Through the transport (the server repeats the cut response): the text
    // already reached the caller, so no retry, and an error, not a hang.
    let (events, requests) = serve(vec![Canned::sse(truncated)], hello()).await;
    assert_eq!(deltas(&events).text, ["I"]);
    assert!(matches!(failure(&events), ModelError::Network(_)), "{events:?}");
    assert_eq!(requests.len(), 1);
}

#[test]
fn a_stream_cut_before_any_content_is_an_error() {
    for bytes in [
        Vec::new(),
        stream(&[message_start(3, 0, 0)]),
        stream(&[message_start(3, 0, 0), json!({"type": "ping"})]),
    ] {
        let events = decode(&bytes);
        assert!(matches!(failure(&events), ModelError::Network(_)), "{events:?}");
    }
}

#[test]
fn every_stop_reason_and_the_end_of_stream_rule() {
    let cases = [
        ("end_turn", StopReason::Stop),
        ("stop_sequence", StopReason::Stop),
        ("pause_turn", StopReason::Stop),
        ("max_tokens", StopReason::Length),
        ("model_context_window_exceeded", StopReason::Length),
        ("tool_use", StopReason::ToolUse),
        ("refusal", StopReason::Refusal),
        ("a_reason_yet_to_come", StopReason::Stop),
    ];
    for (wire, expected) in cases {
        let events = vec![
            message_start(3, 0, 0),
            block_start(0, json!({"type": "text", "text": ""})),
            text_delta(0, "x"),
            block_stop(0),
            message_delta(wire, 2),
        ];
        // Ended by message_stop, or by the end of the stream after message_delta.
        for with_stop in [true, false] {
            let mut events = events.clone();
            if with_stop {
                events.push(message_stop());
            }
            let decoded = decode(&stream(&events));
            let response = done(&decoded);
            assert_eq!(response.stop_reason, expected, "{wire} {with_stop}");
            assert_eq!(response.usage, Usage::new(3, 2));
        }
    }
}

#[test]
fn usage_replaces_field_by_field_and_trailing_done_markers_are_ignored() {
    let mut bytes = stream(&[
        message_start(100, 80, 20),
        block_start(0, json!({"type": "text", "text": "Hi"})),
        block_stop(0),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"input_tokens": 101, "output_tokens": 12}}),
    ]);
    bytes.extend_from_slice(b"data: [DONE]\n\n");
    let events = decode(&bytes);
    let response = done(&events);
    let mut usage = Usage::new(101, 12);
    usage.cache_read = 80;
    usage.cache_write = 20;
    assert_eq!(response.usage, usage);
    assert_eq!(deltas(&events).text, ["Hi"]);
    assert_eq!(response.text(), "Hi");
}

#[test]
fn malformed_events_are_protocol_errors() {
    let bad_json = b"event: message_start\ndata: {not json\n\n".to_vec();
    let no_start = stream(&[message_start(1, 0, 0), text_delta(3, "orphan")]);
    let twice = stream(&[
        message_start(1, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        block_start(0, json!({"type": "text", "text": ""})),
    ]);
    for bytes in [bad_json, no_start, twice] {
        let events = decode(&bytes);
        assert!(matches!(failure(&events), ModelError::Protocol(_)), "{events:?}");
    }
}

// ------------------------------------------------------------- no silent skips

/// Without the recorded streams the tests that read them fail, unless
/// `BOSUN_SKIP_FIXTURES=1`: then they pass, saying they skipped. (Each runs
/// alone in a child of this binary, with `BOSUN_FIXTURES` pointing nowhere.)
#[test]
fn the_recording_tests_fail_without_their_fixtures_unless_told_to_skip() {
    support::assert_fixture_tests_cannot_skip_silently(&[
        "recorded_tool_use_stream_gives_the_readme_values",
        "recorded_thinking_stream_gives_the_readme_values",
        "a_stream_cut_after_a_delta_is_an_error_not_a_success",
    ]);
}
