//! Google Gemini: the recorded stream through the real HTTP transport, the
//! exact request body (thought signatures replayed on their parts, schemas
//! converted), any chunking of the bytes, errors in and around the stream,
//! and thought parts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::message::ProviderData;
use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ResponsePart, StopReason, Thinking, ToolChoice, ToolDefinition, Usage,
};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy, decode_recorded};
use futures_util::StreamExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Canned, TestServer, usage};
use tokio_util::sync::CancellationToken;

const TOOL_CALL: &str = "gemini/tool-call.chunks.jsonl";
const MODEL: &str = "gemini-3-pro-preview";
const PATH: &str = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse";

/// A short good stream for tests that only look at the request.
const OK_STREAM: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}],\"role\":\"model\"},",
    "\"finishReason\":\"STOP\",\"index\":0}]}\n\n"
);

fn config(url: &str) -> ProviderConfig {
    ProviderConfig::new("gemini", Api::Gemini, url).with_key(ApiKey::new("test-key"))
}

fn model(config: ProviderConfig) -> HostedModel {
    HostedModel::new(config, MODEL).unwrap()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "weather",
        "The weather in a location.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    )
}

fn ask(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

/// Streams one request through `model` to its end.
async fn run(
    model: &HostedModel,
    system: Option<&str>,
    messages: Vec<Message>,
    tools: Vec<ToolDefinition>,
    options: GenerationOptions,
) -> Vec<Result<ModelEvent, ModelError>> {
    let request = ModelRequest::new(system, messages, tools, options);
    model.stream(request, CancellationToken::new()).collect().await
}

/// The `Done` response that ends `items`.
fn done(items: &[Result<ModelEvent, ModelError>]) -> &ModelResponse {
    match items.last() {
        Some(Ok(ModelEvent::Done(response))) => response,
        other => panic!("the stream did not end with Done: {other:?}"),
    }
}

fn error(items: &[Result<ModelEvent, ModelError>]) -> &ModelError {
    match items.last() {
        Some(Err(error)) => error,
        other => panic!("the stream did not end with an error: {other:?}"),
    }
}

fn text_deltas(items: &[Result<ModelEvent, ModelError>]) -> String {
    items
        .iter()
        .filter_map(|i| if let Ok(ModelEvent::TextDelta(t)) = i { Some(t.as_str()) } else { None })
        .collect()
}

fn reasoning_deltas(items: &[Result<ModelEvent, ModelError>]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|i| if let Ok(ModelEvent::ReasoningDelta(t)) = i { Some(t.as_str()) } else { None })
        .collect()
}

fn gemini_signature(data: &Option<ProviderData>) -> &str {
    let data = data.as_ref().expect("provider data");
    assert_eq!(data.api, "gemini");
    data.data["thoughtSignature"].as_str().expect("a thoughtSignature string")
}

/// Frames JSON payloads as Gemini sends them: `data: <json>\n\n`, no names, no `[DONE]`.
fn frames(payloads: &[Value]) -> Vec<u8> {
    payloads.iter().map(|p| format!("data: {p}\n\n")).collect::<String>().into_bytes()
}

fn decode(payloads: &[Value]) -> Vec<Result<ModelEvent, ModelError>> {
    decode_recorded(&config("http://unused"), &[&frames(payloads)])
}

fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate]})
}

// ---------------------------------------------------------------------------
// 1. The recorded stream, through the real transport.

#[tokio::test]
async fn the_recorded_function_call_keeps_its_signature_and_replays_it() {
    let bytes = support::recording(TOOL_CALL, false);
    let server = TestServer::start(vec![Canned::sse(bytes), Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url));
    let items =
        run(&model, None, ask("Weather in SF?"), vec![weather_tool()], GenerationOptions::default()).await;

    // The events: one whole call, no text, no reasoning, usage reported once.
    let events: Vec<&ModelEvent> = items.iter().map(|i| i.as_ref().unwrap()).collect();
    assert_eq!(events.len(), 5, "start, args, end, usage, done: {events:?}");
    assert!(text_deltas(&items).is_empty() && reasoning_deltas(&items).is_empty(), "{events:?}");
    let args = r#"{"location":"San Francisco"}"#;
    assert_eq!(
        events[0],
        &ModelEvent::ToolCallStart { index: 0, id: "call_0".into(), name: "weather".into() }
    );
    assert_eq!(events[1], &ModelEvent::ToolCallArgs { index: 0, fragment: args.into() });
    assert_eq!(events[2], &ModelEvent::ToolCallEnd { index: 0 });
    let usages: Vec<&ModelEvent> =
        events.iter().copied().filter(|e| matches!(e, ModelEvent::Usage(_))).collect();
    // promptTokenCount 29; output = candidatesTokenCount 15 + thoughtsTokenCount 804; not summed over chunks.
    let expected_usage = usage(29, 15 + 804, 0, 804);
    assert_eq!(usages, vec![&ModelEvent::Usage(expected_usage)]);

    // The response: the call with its signature, stop reason ToolUse though Gemini said STOP.
    let response = done(&items);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage, expected_usage);
    assert_eq!(response.content.len(), 1, "{:?}", response.content);
    let ResponsePart::ToolCall { provider_id, name, arguments, provider_data } = &response.content[0] else {
        panic!("not a tool call: {:?}", response.content[0]);
    };
    assert_eq!((provider_id.as_str(), name.as_str()), ("call_0", "weather"));
    assert_eq!(arguments, &json!({"location": "San Francisco"}));
    let signature = gemini_signature(provider_data);
    assert_eq!(signature.len(), 5488);
    assert!(signature.starts_with("EpEgCo4gAb4+9vvW") && signature.ends_with("8opgKivQw3YcJ1FX"));
    let digest = format!("{:x}", Sha256::digest(signature.as_bytes()));
    assert_eq!(digest, "1470f82f62c9eb5d20350d13564b9dde6da49eb65add85983c4af74ec3d283fa");

    // The request: the model in the path, the key in its header and nowhere in the URL.
    let first = &server.requests()[0];
    assert_eq!((first.method.as_str(), first.path.as_str()), ("POST", PATH));
    assert_eq!(first.header("x-goog-api-key"), Some("test-key"));
    assert!(!first.path.contains("test-key") && !first.path.contains("key="), "{}", first.path);
    assert_eq!(first.header("authorization"), None);

    // The next request sends the signature back on the same functionCall part.
    let id = CallId::new_v7();
    let history = vec![
        Message::user("Weather in SF?"),
        Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id,
                name: name.clone(),
                arguments: arguments.clone(),
                provider_data: provider_data.clone(),
            }],
            usage: response.usage,
            stop_reason: response.stop_reason,
        },
        Message::tool_result(id, "weather", "Foggy, 14 °C", false),
    ];
    let items = run(&model, None, history, vec![weather_tool()], GenerationOptions::default()).await;
    assert_eq!(done(&items).content, vec![ResponsePart::text("ok")]);
    let second = server.requests()[1].json();
    assert_eq!(
        second["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in SF?"}]},
            {"role": "model", "parts": [{
                "functionCall": {"name": "weather", "args": {"location": "San Francisco"}},
                "thoughtSignature": signature
            }]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"content": "Foggy, 14 °C"}}}
            ]}
        ])
    );
}

// ---------------------------------------------------------------------------
// 2. The request body.

fn tools() -> Vec<ToolDefinition> {
    vec![
        weather_tool(),
        ToolDefinition::new(
            "search",
            "Searches the workspace.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to find."},
                    "mode": {"const": "literal"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                    "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                    "case": {"type": ["boolean", "null"]}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        ),
        ToolDefinition::new("now", "The current time.", json!({"type": "object", "properties": {}})),
    ]
}

fn signed(signature: &str) -> Option<ProviderData> {
    Some(ProviderData::new("gemini", json!({"thoughtSignature": signature})))
}

#[tokio::test]
async fn the_request_body_is_exactly_gemini_shaped() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url));
    let id = CallId::new_v7();
    let history = vec![
        Message::User {
            content: vec![
                ContentPart::text("What is in this image?"),
                ContentPart::image("image/png", vec![1, 2, 3]),
            ],
        },
        Message::Assistant {
            content: vec![
                // Reasoning from another API, and unsigned reasoning: not sent.
                ContentPart::Reasoning {
                    text: "Anthropic thinking".into(),
                    signature: Some("anthropic-signature".into()),
                    provider_data: None,
                },
                ContentPart::reasoning("A summary without a signature."),
                // Signed Gemini thoughts: sent back as a thought part.
                ContentPart::Reasoning {
                    text: "I should read the file.".into(),
                    signature: None,
                    provider_data: signed("sig-thought"),
                },
                ContentPart::text("Let me look."),
                ContentPart::ToolCall {
                    id,
                    name: "read_file".into(),
                    arguments: json!({"path": "a.txt"}),
                    provider_data: signed("sig-call"),
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(id, "read_file", "hello", false),
        Message::user("Thanks. Now search for it."),
    ];
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(1024);
    options.temperature = Some(0.2);
    options.top_p = Some(0.9);
    options.stop = Some(vec!["END".into()]);
    options.thinking = Some(Thinking::On { budget: Some(2048) });
    let items = run(&model, Some("You are terse."), history, tools(), options).await;
    assert_eq!(done(&items).stop_reason, StopReason::Stop);

    let request = &server.requests()[0];
    assert_eq!(request.path, PATH);
    let body = request.json();
    let expected = json!({
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "What is in this image?"},
                {"inlineData": {"mimeType": "image/png", "data": "AQID"}}
            ]},
            {"role": "model", "parts": [
                {"text": "I should read the file.", "thought": true, "thoughtSignature": "sig-thought"},
                {"text": "Let me look."},
                {
                    "functionCall": {"name": "read_file", "args": {"path": "a.txt"}},
                    "thoughtSignature": "sig-call"
                }
            ]},
            // The function response and the next user message share one user turn.
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"content": "hello"}}},
                {"text": "Thanks. Now search for it."}
            ]}
        ],
        "tools": [{"functionDeclarations": [
            {
                "name": "weather",
                "description": "The weather in a location.",
                "parameters": {
                    "type": "object",
                    "properties": {"location": {"type": "string"}},
                    "required": ["location"]
                }
            },
            {
                "name": "search",
                "description": "Searches the workspace.",
                // additionalProperties and default dropped, const → enum of one,
                // a nullable type list → type + nullable.
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1, "description": "What to find."},
                        "mode": {"type": "string", "enum": ["literal"]},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                        "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                        "case": {"type": "boolean", "nullable": true}
                    },
                    "required": ["query"]
                }
            },
            // No parameters: Gemini refuses an object schema without properties.
            {"name": "now", "description": "The current time."}
        ]}],
        "generationConfig": {
            "maxOutputTokens": 1024,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
            "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}
        }
    });
    let (Value::Object(body), Value::Object(expected)) = (&body, &expected) else { panic!("not objects") };
    for (field, value) in expected {
        assert_eq!(body.get(field), Some(value), "field {field}");
    }
    assert_eq!(body.len(), expected.len(), "extra fields: {:?}", body.keys().collect::<Vec<_>>());
}

#[tokio::test]
async fn calls_from_other_apis_go_without_a_signature() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url));
    let (first, second) = (CallId::new_v7(), CallId::new_v7());
    let history = vec![
        Message::user("Read two files."),
        Message::Assistant {
            content: vec![
                // A signature that came on a visible text part goes back on that text.
                ContentPart::Reasoning {
                    text: String::new(),
                    signature: None,
                    provider_data: signed("sig-text"),
                },
                ContentPart::text("Reading both."),
                ContentPart::ToolCall {
                    id: first,
                    name: "read_file".into(),
                    arguments: json!({"path": "a"}),
                    provider_data: Some(ProviderData::new(
                        "openai-responses",
                        json!({"thoughtSignature": "x"}),
                    )),
                },
                ContentPart::ToolCall {
                    id: second,
                    name: "read_file".into(),
                    arguments: json!({"path": "b"}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(first, "read_file", "A", false),
        Message::tool_result(second, "read_file", "no such file", true),
    ];
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::Off);
    run(&model, None, history, Vec::new(), options).await;
    let body = server.requests()[0].json();
    assert_eq!(
        body,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "Read two files."}]},
                {"role": "model", "parts": [
                    {"text": "Reading both.", "thoughtSignature": "sig-text"},
                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
                    {"functionCall": {"name": "read_file", "args": {"path": "b"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"content": "A"}}},
                    {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}
                ]}
            ],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}
        })
    );
}

#[tokio::test]
async fn thinking_on_without_a_budget_is_dynamic_and_auto_is_left_out() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url));
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::On { budget: None });
    run(&model, None, ask("hi"), Vec::new(), options.clone()).await;
    options.thinking = Some(Thinking::Auto);
    run(&model, None, ask("hi"), Vec::new(), options).await;
    let requests = server.requests();
    assert_eq!(
        requests[0].json()["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": -1, "includeThoughts": true}})
    );
    assert_eq!(requests[1].json(), json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
}

#[tokio::test]
async fn a_key_in_the_users_headers_is_not_sent_twice() {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url).with_header("X-Goog-Api-Key", "from-headers"));
    run(&model, None, ask("hi"), Vec::new(), GenerationOptions::default()).await;
    let request = &server.requests()[0];
    let keys: Vec<&str> =
        request.headers.iter().filter(|(n, _)| n == "x-goog-api-key").map(|(_, v)| v.as_str()).collect();
    assert_eq!(keys, vec!["from-headers"]);
}

/// The body sent for one question with `tools` and `choice`.
async fn body_with_choice(tools: Vec<ToolDefinition>, choice: Option<ToolChoice>) -> Value {
    let server = TestServer::start(vec![Canned::sse(OK_STREAM)]).await;
    let model = model(config(&server.url));
    let mut options = GenerationOptions::default();
    options.tool_choice = choice;
    let items = run(&model, None, ask("hi"), tools, options).await;
    assert_eq!(done(&items).text(), "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests[0].json()
}

#[tokio::test]
async fn tool_choice_is_a_function_calling_mode_beside_tools_and_absent_without_them() {
    let unset = body_with_choice(vec![weather_tool()], None).await;
    assert!(unset.get("toolConfig").is_none(), "{unset}");
    assert_eq!(unset["tools"][0]["functionDeclarations"][0]["name"], "weather");
    for (choice, mode) in
        [(ToolChoice::Required, "ANY"), (ToolChoice::None, "NONE"), (ToolChoice::Auto, "AUTO")]
    {
        let body = body_with_choice(vec![weather_tool()], Some(choice)).await;
        assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": mode}}), "{choice:?}");
        let mut expected = unset.clone();
        expected["toolConfig"] = json!({"functionCallingConfig": {"mode": mode}});
        assert_eq!(body, expected, "{choice:?}: only toolConfig is added");
    }
    let toolless = body_with_choice(Vec::new(), None).await;
    assert_eq!(toolless, json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
    for choice in [ToolChoice::Required, ToolChoice::None, ToolChoice::Auto] {
        let body = body_with_choice(Vec::new(), Some(choice)).await;
        assert_eq!(body, toolless, "{choice:?} without tools sends no toolConfig");
    }
}

// ---------------------------------------------------------------------------
// 3. Any chunking of the bytes gives the same result.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_the_recording_gives_the_same_response(
        cuts in proptest::collection::vec(any::<usize>(), 0..12)
    ) {
        let bytes = support::recording(TOOL_CALL, false);
        let expected = decode_recorded(&config("http://unused"), &[&bytes]);
        prop_assert!(matches!(expected.last(), Some(Ok(ModelEvent::Done(_)))));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = runtime.block_on(async {
            let server = TestServer::start(vec![Canned::sse_chunks(support::split_at(&bytes, &cuts))]).await;
            let model = model(config(&server.url));
            run(&model, None, ask("Weather in SF?"), vec![weather_tool()], GenerationOptions::default()).await
        });
        prop_assert_eq!(got, expected);
    }
}

// ---------------------------------------------------------------------------
// 4. Errors, cut streams, thoughts.

const RATE_LIMITED: &str = r#"{
  "error": {
    "code": 429,
    "message": "Resource has been exhausted (e.g. check quota).",
    "status": "RESOURCE_EXHAUSTED",
    "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.001s"}]
  }
}"#;

#[tokio::test]
async fn a_429_is_retried_then_succeeds() {
    let server = TestServer::start(vec![Canned::error(429, RATE_LIMITED), Canned::sse(OK_STREAM)]).await;
    let retry = RetryPolicy::default().with_delays(Duration::from_millis(1), Duration::from_millis(5));
    let model = model(config(&server.url).with_retry(retry));
    let items = run(&model, None, ask("hi"), Vec::new(), GenerationOptions::default()).await;
    assert_eq!(text_deltas(&items), "ok");
    assert_eq!(done(&items).content, vec![ResponsePart::text("ok")]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_error_in_the_stream_is_classified() {
    let body = frames(&[
        chunk(json!([{"text": "Hel"}]), None),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let model = model(config(&server.url).with_retry(RetryPolicy::none()));
    let items = run(&model, None, ask("hi"), Vec::new(), GenerationOptions::default()).await;
    assert_eq!(text_deltas(&items), "Hel");
    assert!(matches!(error(&items), ModelError::RateLimited { .. }), "{items:?}");
    assert!(!items.iter().any(|i| matches!(i, Ok(ModelEvent::Done(_)))));
}

#[tokio::test]
async fn a_stream_cut_before_its_finish_reason_is_an_error() {
    // The recording's first chunk only: the call, but no finishReason.
    let bytes = support::recording(TOOL_CALL, false);
    let first_event = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = TestServer::start(vec![Canned::sse(bytes[..first_event].to_vec())]).await;
    let model = model(config(&server.url).with_retry(RetryPolicy::none()));
    let request =
        run(&model, None, ask("Weather in SF?"), vec![weather_tool()], GenerationOptions::default());
    let items = tokio::time::timeout(Duration::from_secs(30), request).await.expect("the stream hung");
    assert!(matches!(items[0], Ok(ModelEvent::ToolCallStart { .. })));
    assert!(matches!(error(&items), ModelError::Network(m) if m.contains("finishReason")), "{items:?}");
    assert!(!items.iter().any(|i| matches!(i, Ok(ModelEvent::Done(_)))));

    // An empty body too.
    let items = decode(&[]);
    assert!(matches!(error(&items), ModelError::Network(_)));
}

#[tokio::test]
async fn thought_parts_become_reasoning_deltas_and_a_signed_reasoning_part() {
    let body = frames(&[
        chunk(json!([{"text": "Let me think", "thought": true}]), None),
        chunk(
            json!([{"text": " it through.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="}]),
            None,
        ),
        chunk(json!([{"text": "The answer "}]), None),
        json!({
            "candidates": [{
                "content": {"parts": [{"text": "is 4."}], "role": "model"},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {"promptTokenCount": 120, "cachedContentTokenCount": 100,
                              "candidatesTokenCount": 5, "thoughtsTokenCount": 30, "totalTokenCount": 155}
        }),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let model = model(config(&server.url));
    let mut options = GenerationOptions::default();
    options.thinking = Some(Thinking::On { budget: Some(512) });
    let items = run(&model, None, ask("2 + 2?"), Vec::new(), options).await;
    assert_eq!(reasoning_deltas(&items), vec!["Let me think", " it through."]);
    assert_eq!(text_deltas(&items), "The answer is 4.");
    let response = done(&items);
    assert_eq!(
        response.content,
        vec![
            ResponsePart::Content(ContentPart::Reasoning {
                text: "Let me think it through.".into(),
                signature: None,
                provider_data: signed("c2lnLXRob3VnaHQ="),
            }),
            ResponsePart::text("The answer is 4."),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.usage, usage(20, 35, 100, 30));
}

#[test]
fn a_signature_on_visible_text_is_kept_before_that_text() {
    let items = decode(&[
        chunk(json!([{"text": "Hello", "thoughtSignature": "sig-text"}]), None),
        chunk(json!([{"text": " there."}, {"text": ""}]), Some("STOP")),
    ]);
    assert_eq!(text_deltas(&items), "Hello there.");
    assert_eq!(
        done(&items).content,
        vec![
            ResponsePart::Content(ContentPart::Reasoning {
                text: String::new(),
                signature: None,
                provider_data: signed("sig-text"),
            }),
            ResponsePart::text("Hello there."),
        ]
    );
}

#[test]
fn parallel_calls_get_distinct_ids_and_keep_their_own_signatures() {
    let items = decode(&[chunk(
        json!([
            {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": "sig-a"},
            {"functionCall": {"name": "read_file", "args": {"path": "b"}}},
            {"functionCall": {"id": "own-id", "name": "now"}}
        ]),
        Some("STOP"),
    )]);
    let response = done(&items);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let calls: Vec<(&str, &Value, bool)> = response
        .content
        .iter()
        .map(|part| match part {
            ResponsePart::ToolCall { provider_id, arguments, provider_data, .. } => {
                (provider_id.as_str(), arguments, provider_data.is_some())
            }
            other => panic!("not a call: {other:?}"),
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_0", &json!({"path": "a"}), true),
            ("call_1", &json!({"path": "b"}), false),
            ("own-id", &json!({}), false)
        ]
    );
    let ResponsePart::ToolCall { provider_data, .. } = &response.content[0] else { unreachable!() };
    assert_eq!(gemini_signature(provider_data), "sig-a");
}

#[test]
fn finish_reasons_map_to_stop_reasons_or_errors() {
    let finish = |reason: &str| decode(&[chunk(json!([{"text": "x"}]), Some(reason))]);
    for (reason, stop) in [
        ("STOP", StopReason::Stop),
        ("MAX_TOKENS", StopReason::Length),
        ("SAFETY", StopReason::Refusal),
        ("RECITATION", StopReason::Refusal),
        ("BLOCKLIST", StopReason::Refusal),
        ("PROHIBITED_CONTENT", StopReason::Refusal),
        ("SPII", StopReason::Refusal),
        ("OTHER", StopReason::Error),
    ] {
        assert_eq!(done(&finish(reason)).stop_reason, stop, "{reason}");
    }
    let malformed = finish("MALFORMED_FUNCTION_CALL");
    assert!(matches!(error(&malformed), ModelError::Server(m) if m.contains("MALFORMED_FUNCTION_CALL")));

    // A blocked prompt: no candidate, only feedback.
    let blocked = decode(&[json!({"promptFeedback": {"blockReason": "SAFETY"},
                                   "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}})]);
    let response = done(&blocked);
    assert_eq!((response.stop_reason, response.content.len()), (StopReason::Refusal, 0));
    assert_eq!(response.usage, usage(7, 0, 0, 0));
}

#[test]
fn bad_json_and_other_stream_errors() {
    let items = decode_recorded(&config("http://unused"), &[b"data: {\"candidates\": [\n\n"]);
    assert!(matches!(error(&items), ModelError::Protocol(_)), "{items:?}");
    let items = decode(&[
        json!({"error": {"code": 400, "message": "Invalid payload.", "status": "INVALID_ARGUMENT"}}),
    ]);
    assert!(matches!(error(&items), ModelError::InvalidRequest(_)), "{items:?}");
    let message = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).";
    let items = decode(&[json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})]);
    assert!(matches!(error(&items), ModelError::ContextOverflow(_)), "{items:?}");
}
