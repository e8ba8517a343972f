//! The Converse protocol's URL, body and decoder on hand-built events;
//! the recorded stream and the transport are in tests/it/bedrock.rs.

use bosun_core::{Message, ModelEvent, ModelRequest, StopReason, ToolDefinition};
use serde_json::json;

use super::*;
use crate::sse::SseEvent;

fn config() -> ProviderConfig {
    ProviderConfig::bedrock("us-east-1")
}

#[test]
fn the_url_names_region_and_percent_encoded_model() {
    let config = config();
    assert_eq!(
        crate::cloud::url(&config, &Converse, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/\
         converse-stream"
    );
}

#[test]
fn the_body_has_system_messages_tools_and_inference_config() {
    let messages = [Message::user("hi")];
    let tools = [ToolDefinition::new("read", "Reads a file", json!({"type": "object"}))];
    let request = ModelRequest::new(Some("be brief"), &messages[..], &tools[..], Default::default());
    let body = request::body(&request);
    assert_eq!(body["system"], json!([{"text": "be brief"}]));
    assert_eq!(body["messages"], json!([{"role": "user", "content": [{"text": "hi"}]}]));
    assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["name"], "read");
    assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"], json!({"type": "object"}));
    assert_eq!(body["inferenceConfig"]["maxTokens"], 8192);
}

fn ev(name: &str, data: serde_json::Value) -> SseEvent {
    SseEvent { event: name.to_owned(), data: data.to_string() }
}

#[test]
fn a_tool_call_stream_decodes_to_a_tool_use_response() {
    let mut decoder = Converse.decoder(&config());
    let mut out = Vec::new();
    let events = [
        ev("messageStart", json!({"role": "assistant"})),
        ev("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Let me look."}})),
        ev("contentBlockStop", json!({"contentBlockIndex": 0})),
        ev(
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "read"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"path\":"}}}),
        ),
        ev("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"a\"}"}}})),
        ev("contentBlockStop", json!({"contentBlockIndex": 1})),
        ev("messageStop", json!({"stopReason": "tool_use"})),
        ev("metadata", json!({"usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 2}})),
    ];
    for event in &events {
        decoder.event(event, &mut out).map_err(|e| e.to_string()).unwrap();
    }
    assert!(decoder.done());
    assert!(out.contains(&ModelEvent::ToolCallStart { index: 0, id: "t1".into(), name: "read".into() }));
    assert!(out.contains(&ModelEvent::ToolCallEnd { index: 0 }));
    let response = decoder.finish().map_err(|e| e.to_string()).unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.input, 10);
    assert_eq!(response.usage.cache_read, 2);
    assert_eq!(response.content.len(), 2, "{:?}", response.content);
    assert_eq!(response.content[1], bosun_core::ResponsePart::tool_call("t1", "read", json!({"path": "a"})));
}

#[test]
fn stop_reasons_map_to_bosuns() {
    assert_eq!(decode::stop_reason("end_turn"), StopReason::Stop);
    assert_eq!(decode::stop_reason("stop_sequence"), StopReason::Stop);
    assert_eq!(decode::stop_reason("max_tokens"), StopReason::Length);
    assert_eq!(decode::stop_reason("guardrail_intervened"), StopReason::Refusal);
    assert_eq!(decode::stop_reason("content_filtered"), StopReason::Refusal);
}

#[test]
fn an_exception_is_classified() {
    let mut decoder = Converse.decoder(&config());
    let data = json!({"error": {"type": "validationException", "code": 400, "message": "Input is too long for requested model."}});
    let error = decoder.event(&ev("exception", data), &mut Vec::new());
    assert!(matches!(error, Err(bosun_core::ModelError::ContextOverflow(_))), "{error:?}");
    let data = json!({"error": {"type": "throttlingException", "code": 429, "message": "Too many requests"}});
    let error = decoder.event(&ev("exception", data), &mut Vec::new());
    assert!(matches!(error, Err(bosun_core::ModelError::RateLimited { .. })), "{error:?}");
}

#[test]
fn signed_reasoning_is_decoded_and_replayed_as_reasoning_content() {
    let mut decoder = Converse.decoder(&config());
    let mut out = Vec::new();
    let events = [
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}}),
        ),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig=="}}}),
        ),
        ev("contentBlockStop", json!({"contentBlockIndex": 0})),
        ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"reasoningContent": {"redactedContent": "b3BhcXVl"}}}),
        ),
        ev("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "Done."}})),
        ev("messageStop", json!({"stopReason": "end_turn"})),
    ];
    for event in &events {
        decoder.event(event, &mut out).map_err(|e| e.to_string()).unwrap();
    }
    assert!(out.contains(&ModelEvent::ReasoningDelta("Think".into())));
    assert!(decoder.finished() && !decoder.done(), "usage (metadata) may still come");
    let response = decoder.finish().map_err(|e| e.to_string()).unwrap();
    let content: Vec<bosun_core::ContentPart> = response
        .content
        .into_iter()
        .filter_map(|part| match part {
            bosun_core::ResponsePart::Content(part) => Some(part),
            _ => None,
        })
        .collect();
    assert_eq!(content.len(), 3, "{content:?}");
    let history = [
        Message::user("hi"),
        Message::Assistant { content, usage: Default::default(), stop_reason: StopReason::Stop },
        Message::user("again"),
    ];
    let body = request::body(&ModelRequest::new(None, &history[..], Vec::new(), Default::default()));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "Think", "signature": "sig=="}}},
            {"reasoningContent": {"redactedContent": "b3BhcXVl"}},
            {"text": "Done."},
        ])
    );
}
