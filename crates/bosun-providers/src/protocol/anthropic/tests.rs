//! The decoder's side of a paused turn, driven through the `Decoder` trait
//! as the transport drives it: when a continuation is asked for, its body,
//! the response the streams add up to, and the bound. (The same through
//! HTTP is in `tests/it/anthropic_shapes.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{ModelError, ModelEvent, ResponsePart, StopReason, Usage};
use serde_json::{Value, json};

use super::decode::MessagesDecoder;
use super::pause::MAX_CONTINUATIONS;
use crate::config::{Api, ProviderConfig};
use crate::protocol::Decoder;
use crate::sse::SseEvent;

fn decoder() -> MessagesDecoder {
    MessagesDecoder::new(ProviderConfig::new("anthropic", Api::AnthropicMessages, "http://unused"))
}

/// Feeds one stream's payloads, named as the API names them.
fn feed(decoder: &mut MessagesDecoder, payloads: &[Value]) -> Vec<ModelEvent> {
    let mut out = Vec::new();
    for payload in payloads {
        let event =
            SseEvent { event: payload["type"].as_str().unwrap().to_owned(), data: payload.to_string() };
        decoder.event(&event, &mut out).unwrap();
    }
    out
}

/// A stream of one text block (and, when `search`, a server tool block)
/// that ends with `reason`.
fn stream(text: &str, search: bool, reason: &str) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    if search {
        events.extend([
            json!({"type": "content_block_start", "index": 1, "content_block":
                   {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"query\":\"x\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
        ]);
    }
    events.extend([
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 4}}),
        json!({"type": "message_stop"}),
    ]);
    events
}

fn body() -> Vec<u8> {
    let body = json!({"model": "claude", "max_tokens": 8192, "stream": true,
                      "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]});
    serde_json::to_vec(&body).unwrap()
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn only_a_complete_paused_stream_asks_for_a_continuation() {
    let mut ended = decoder();
    feed(&mut ended, &stream("Hi.", false, "end_turn"));
    assert_eq!(ended.continuation(&body()).unwrap(), None);

    let mut cut = decoder();
    let mut events = stream("Hi.", false, "pause_turn");
    events.truncate(4);
    feed(&mut cut, &events);
    assert_eq!(cut.continuation(&body()).unwrap(), None, "a cut stream is for `finish` to report");
    assert!(matches!(cut.finish(), Err(ModelError::Network(_))));
}

#[test]
fn a_paused_stream_continues_into_one_response() {
    let mut decoder = decoder();
    let first = feed(&mut decoder, &stream("Searching.", true, "pause_turn"));
    assert!(first.contains(&ModelEvent::TextDelta("Searching.".into())));
    let next = decoder.continuation(&body()).unwrap().expect("a continuation");
    let paused = json!([
        {"type": "text", "text": "Searching."},
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}},
    ]);
    let mut expected = json_of(&body());
    expected["messages"].as_array_mut().unwrap().push(json!({"role": "assistant", "content": paused}));
    assert_eq!(json_of(&next), expected);

    // Paused again: the new blocks join the same assistant message.
    feed(&mut decoder, &stream(" More.", true, "pause_turn"));
    let again = json_of(&decoder.continuation(&next).unwrap().expect("a second continuation"));
    let messages = again["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    let texts: Vec<&str> =
        messages[1]["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(texts, ["Searching.", " More."]);

    let last = feed(&mut decoder, &stream(" Done.", false, "end_turn"));
    assert_eq!(last.last(), Some(&ModelEvent::Usage(Usage::new(30, 12))), "usage so far, summed");
    assert_eq!(decoder.continuation(&serde_json::to_vec(&again).unwrap()).unwrap(), None);
    let response = decoder.finish().unwrap();
    let texts = ["Searching.", " More.", " Done."].map(ResponsePart::text);
    assert_eq!(response.content, texts);
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.usage, Usage::new(30, 12));
}

#[test]
fn continuations_are_bounded() {
    let mut decoder = decoder();
    let mut body = body();
    for _ in 0..MAX_CONTINUATIONS {
        feed(&mut decoder, &stream("x", false, "pause_turn"));
        body = decoder.continuation(&body).unwrap().expect("within the bound");
    }
    feed(&mut decoder, &stream("x", false, "pause_turn"));
    let error = decoder.continuation(&body).unwrap_err();
    assert!(matches!(&error, ModelError::Protocol(m) if m.contains("after 8 continuations")), "{error:?}");
}

#[test]
fn a_body_that_is_not_a_messages_request_cannot_be_continued() {
    let mut decoder = decoder();
    feed(&mut decoder, &stream("x", false, "pause_turn"));
    assert!(matches!(decoder.continuation(b"{}"), Err(ModelError::Protocol(_))));
}
