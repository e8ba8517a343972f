//! Anthropic Messages responses decoded: the recorded streams through the
//! real transport (exact values from the fixtures' README), skipped
//! server-tool and unknown blocks, any chunking of a stream, in-stream and
//! HTTP errors with retries, streams that end early, every stop reason, and
//! malformed events. (The request body and what is sent back of a response
//! are in `anthropic_requests.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{
    Capabilities, ContentPart, Model, ModelError, ModelResponse, ResponsePart, StopReason, Usage,
};
use bosun_providers::{HostedModel, RetryPolicy, decode_recorded};
use proptest::prelude::*;
use serde_json::json;
use sha2::{Digest, Sha256};
use support::anthropic::{
    Events, block_delta, block_start, block_stop, collect, config, deltas, done, failure, hello,
    message_delta, message_start, message_stop, model, ok_stream, serve, stream, text_delta, thinking_tag,
};
use support::{Canned, ManualClock, TestServer, Wait, WaitState, recording, split_at};

const TOOL_USE: &str = "anthropic/tool-use.sse";
const THINKING: &str = "anthropic/thinking-text.chunks.jsonl";

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

// ---------------------------------------------------------------------------
// 1. Conformance with the recorded streams, through the real transport.

#[tokio::test]
async fn recorded_tool_use_stream_gives_the_readme_values() {
    let raw = recording(TOOL_USE, false);
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
    let raw = recording(THINKING, true);
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
// 2. Blocks the client does not keep.

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

// ---------------------------------------------------------------------------
// 3. Any chunking of a stream.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_the_tool_use_stream_decodes_the_same(cuts in proptest::collection::vec(0usize..2001, 0..24)) {
        let raw = recording(TOOL_USE, false);
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
// 4. Errors, retries, and streams that end early.

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
    let raw = recording(TOOL_USE, false);
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
