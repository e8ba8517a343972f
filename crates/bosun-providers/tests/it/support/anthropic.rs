//! Helpers for the Anthropic Messages tests (`anthropic.rs`,
//! `anthropic_requests.rs`): the provider on a local server, one request
//! streamed to its end, the final response or error and the deltas by kind,
//! and hand-written streams framed as the API frames them.

use std::time::Duration;

use bosun_core::message::ProviderData;
use bosun_core::{GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Canned, NO_HANG, Recorded, TestServer, reframe};

pub type Events = Vec<Result<ModelEvent, ModelError>>;

pub fn config(url: &str) -> ProviderConfig {
    ProviderConfig::new("anthropic", Api::AnthropicMessages, url)
        .with_key(ApiKey::new("test-key"))
        .with_retry(RetryPolicy::default().with_delays(Duration::from_millis(1), Duration::from_millis(5)))
}

pub fn model(server: &TestServer) -> HostedModel {
    HostedModel::new(config(&server.url), "claude").unwrap()
}

pub fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default())
}

pub async fn collect(model: &HostedModel, request: ModelRequest<'_>) -> Events {
    let stream = model.stream(request, CancellationToken::new());
    tokio::time::timeout(NO_HANG, stream.collect::<Vec<_>>()).await.expect("the stream hung")
}

/// Serves `responses` in turn and runs one request against them.
pub async fn serve(responses: Vec<Canned>, request: ModelRequest<'_>) -> (Events, Vec<Recorded>) {
    let server = TestServer::start(responses).await;
    let events = collect(&model(&server), request).await;
    (events, server.requests())
}

/// The final response; fails unless the stream ended with exactly one `Done`.
pub fn done(events: &Events) -> &ModelResponse {
    let dones = events.iter().filter(|e| matches!(e, Ok(ModelEvent::Done(_)))).count();
    assert_eq!(dones, 1, "{events:#?}");
    match events.last() {
        Some(Ok(ModelEvent::Done(response))) => response,
        other => panic!("the stream did not end with Done: {other:?}"),
    }
}

/// The last item, which must be an error.
pub fn failure(events: &Events) -> &ModelError {
    assert!(!events.iter().any(|e| matches!(e, Ok(ModelEvent::Done(_)))), "{events:#?}");
    match events.last() {
        Some(Err(error)) => error,
        other => panic!("the stream did not end with an error: {other:?}"),
    }
}

/// The streamed deltas, by kind.
#[derive(Debug, Default, PartialEq)]
pub struct Deltas {
    pub text: Vec<String>,
    pub reasoning: Vec<String>,
    pub starts: Vec<(u32, String, String)>,
    pub args: Vec<(u32, String)>,
    pub ends: Vec<u32>,
}

pub fn deltas(events: &Events) -> Deltas {
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

/// Hand-written events as the API frames them (`event: <type>` + `data:`).
pub fn stream(events: &[Value]) -> Vec<u8> {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    reframe(&lines.join("\n"), true)
}

pub fn message_start(input: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write, "output_tokens": 1}}})
}

pub fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

pub fn block_delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

pub fn text_delta(index: u64, text: &str) -> Value {
    block_delta(index, json!({"type": "text_delta", "text": text}))
}

pub fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

pub fn message_delta(stop_reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output}})
}

pub fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// A short complete answer, `ok`.
pub fn ok_stream() -> Vec<u8> {
    stream(&[
        message_start(3, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "ok"),
        block_stop(0),
        message_delta("end_turn", 1),
        message_stop(),
    ])
}

pub fn thinking_tag() -> ProviderData {
    ProviderData::new("anthropic-messages", json!({"type": "thinking"}))
}
