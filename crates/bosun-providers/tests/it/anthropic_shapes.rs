//! Anthropic Messages shapes through the real transport: thinking tokens in
//! usage, and a paused turn (`pause_turn`) continued as the API documents —
//! the paused content sent back as the last assistant message, the request
//! repeated, one response for the session — with the number of
//! continuations bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::{GenerationOptions, Message, ModelError, ModelRequest, ResponsePart, StopReason, Usage};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy};
use serde_json::{Value, json};
use support::shapes::{named_events, stream_once};
use support::{Canned, TestServer};

fn model(server: &TestServer) -> HostedModel {
    let config = ProviderConfig::new("anthropic", Api::AnthropicMessages, &server.url)
        .with_key(ApiKey::new("k"))
        .with_retry(RetryPolicy::none());
    HostedModel::new(config, "claude").unwrap()
}

fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("Find bosun.")], Vec::new(), GenerationOptions::default())
}

fn message_start(input: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "usage": {"input_tokens": input, "output_tokens": 1}}})
}

fn text_block(index: u64, text: &str) -> [Value; 3] {
    [
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": index}),
    ]
}

fn end(reason: &str, usage: Value) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": usage}),
        json!({"type": "message_stop"}),
    ]
}

const RESULTS: &str = r#"[{"type": "web_search_result", "url": "https://example.com/bosun",
    "title": "Bosun", "encrypted_content": "EqQBCioIAhgB", "page_age": null}]"#;

/// A turn paused after a server-side web search.
fn paused() -> Vec<u8> {
    let mut events = vec![message_start(10)];
    events.extend(text_block(0, "Let me search."));
    events.extend([
        json!({"type": "content_block_start", "index": 1, "content_block":
               {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"bos"}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "un\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block":
               {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                "content": serde_json::from_str::<Value>(RESULTS).unwrap()}}),
        json!({"type": "content_block_stop", "index": 2}),
    ]);
    events.extend(end("pause_turn", json!({"output_tokens": 20})));
    named_events(&events)
}

fn finished() -> Vec<u8> {
    let mut events = vec![message_start(30)];
    events.extend(text_block(0, " Found it."));
    events.extend(end("end_turn", json!({"output_tokens": 5})));
    named_events(&events)
}

#[tokio::test]
async fn thinking_tokens_in_usage_are_the_reasoning_count() {
    let mut events = vec![message_start(12)];
    events.extend(text_block(0, "Hi."));
    events.extend(end(
        "end_turn",
        json!({"input_tokens": 12, "output_tokens": 90, "output_tokens_details": {"thinking_tokens": 70}}),
    ));
    let server = TestServer::start(vec![Canned::sse(named_events(&events))]).await;
    let outcome = stream_once(&model(&server), hello()).await;
    let mut usage = Usage::new(12, 90);
    usage.reasoning = 70;
    assert_eq!(outcome.response().usage, usage);
}

#[tokio::test]
async fn a_paused_turn_is_continued_and_the_session_sees_one_response() {
    let server = TestServer::start(vec![Canned::sse(paused()), Canned::sse(finished())]).await;
    let outcome = stream_once(&model(&server), hello()).await;
    let response = outcome.response();
    assert_eq!(
        response.content,
        vec![ResponsePart::text("Let me search."), ResponsePart::text(" Found it.")]
    );
    assert_eq!(outcome.text(), "Let me search. Found it.");
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.usage, Usage::new(10 + 30, 20 + 5), "each request's usage, summed");

    // The continuation is the same request with the paused content, server
    // tool blocks included, as the last assistant message.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let mut expected = requests[0].json();
    let paused_content = json!([
        {"type": "text", "text": "Let me search."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "bosun"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": serde_json::from_str::<Value>(RESULTS).unwrap()},
    ]);
    expected["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": paused_content}));
    assert_eq!(requests[1].json(), expected);
}

#[tokio::test]
async fn a_turn_paused_past_the_bound_fails_with_a_protocol_error() {
    // The last canned response repeats: every continuation pauses again.
    let server = TestServer::start(vec![Canned::sse(paused())]).await;
    let outcome = stream_once(&model(&server), hello()).await;
    assert!(
        matches!(outcome.error(), ModelError::Protocol(m) if m.contains("paused again after 8 continuations")),
        "{:?}",
        outcome.end
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 9, "the request and 8 continuations");
    // Each continuation adds the latest paused content to the same message.
    let last = requests[8].json();
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["content"].as_array().map(Vec::len), Some(8 * 3));
}

#[tokio::test]
async fn a_refusals_stop_details_explanation_is_kept_for_the_person() {
    // Written by hand from Anthropic's documented `message_delta` for a
    // refusal (`stop_details` with type, category and explanation); no
    // public recording of it was found in time.
    let body = named_events(&[
        message_start(10),
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null,
               "stop_details": {"type": "refusal", "category": "cyber",
                                "explanation": "This request asks for working malware."}},
               "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let outcome = stream_once(&model(&server), hello()).await;
    let response = outcome.response();
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(response.stop_details.as_deref(), Some("cyber: This request asks for working malware."));
}
