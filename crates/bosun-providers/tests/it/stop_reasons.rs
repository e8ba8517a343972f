//! Every decoder maps a content-filter finish to `StopReason::Refusal` and a
//! token-limit finish to `StopReason::Length`, keeping what streamed before
//! it: Chat Completions (`content_filter`, `length`), Anthropic (`refusal`,
//! `max_tokens`), Gemini (`SAFETY`, `PROHIBITED_CONTENT`, `BLOCKLIST`,
//! `SPII`, `RECITATION`, `MAX_TOKENS`) and Responses
//! (`incomplete_details.reason` `content_filter`, `max_output_tokens`).
//! Each stream goes through the real transport against a local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::{GenerationOptions, Message, ModelRequest, ResponsePart, StopReason};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig, RetryPolicy};
use serde_json::{Value, json};
use support::shapes::{data_events, named_events, stream_once};
use support::{Canned, TestServer};

/// Serves `body` and streams one request of `api` against it; returns the
/// stop reason and the answer text, checking the deltas add up to it.
async fn ending(api: Api, body: Vec<u8>) -> (StopReason, String) {
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let base = match api {
        Api::OpenAiChat | Api::OpenAiResponses => format!("{}/v1", server.url),
        _ => server.url.clone(),
    };
    let config =
        ProviderConfig::new("test", api, base).with_key(ApiKey::new("k")).with_retry(RetryPolicy::none());
    let model = HostedModel::new(config, "m").unwrap();
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&model, request).await;
    let response = outcome.response();
    assert_eq!(outcome.text(), response.text(), "{api:?}: the deltas add up to the text");
    assert!(response.content.iter().all(|p| matches!(p, ResponsePart::Content(_))), "{response:?}");
    (response.stop_reason, response.text())
}

fn chat(reason: &str) -> Vec<u8> {
    let mut body = data_events(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Part"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
    ]);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn anthropic(reason: &str) -> Vec<u8> {
    named_events(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Part"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ])
}

fn gemini(reason: &str) -> Vec<u8> {
    data_events(&[
        json!({"candidates": [{"content": {"parts": [{"text": "Part"}], "role": "model"}, "index": 0}]}),
        json!({"candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": reason, "index": 0}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}),
    ])
}

fn responses(reason: &str) -> Vec<u8> {
    let message =
        |content: Value| json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content});
    named_events(&[
        json!({"type": "response.output_item.added", "sequence_number": 0, "output_index": 0, "item": message(json!([]))}),
        json!({"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1",
               "output_index": 0, "content_index": 0, "delta": "Part"}),
        json!({"type": "response.incomplete", "sequence_number": 2, "response": {"id": "resp_1",
               "status": "incomplete", "incomplete_details": {"reason": reason},
               "output": [message(json!([{"type": "output_text", "text": "Part"}]))],
               "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    ])
}

#[tokio::test]
async fn content_filters_end_as_refusals_in_every_decoder() {
    let mut cases = vec![
        (Api::OpenAiChat, chat("content_filter")),
        (Api::AnthropicMessages, anthropic("refusal")),
        (Api::OpenAiResponses, responses("content_filter")),
    ];
    for reason in ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"] {
        cases.push((Api::Gemini, gemini(reason)));
    }
    for (n, (api, body)) in cases.into_iter().enumerate() {
        assert_eq!(ending(api, body).await, (StopReason::Refusal, "Part".to_owned()), "case {n}: {api:?}");
    }
}

#[tokio::test]
async fn token_limits_end_with_length_in_every_decoder() {
    let cases = [
        (Api::OpenAiChat, chat("length")),
        (Api::AnthropicMessages, anthropic("max_tokens")),
        (Api::Gemini, gemini("MAX_TOKENS")),
        (Api::OpenAiResponses, responses("max_output_tokens")),
    ];
    for (api, body) in cases {
        assert_eq!(ending(api, body).await, (StopReason::Length, "Part".to_owned()), "{api:?}");
    }
}
