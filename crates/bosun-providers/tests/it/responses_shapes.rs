//! The OpenAI Responses protocol, shapes beyond OpenAI's own: raw reasoning
//! (`reasoning_text` deltas and reasoning items with `content`, as LM
//! Studio, OpenRouter and DeepSeek send for open-weight models) decoded,
//! kept and replayed in a tool loop, and a final `response.output` matched
//! to the streamed items by id when `output_index` skips numbers, and by
//! `output_index` when the server rotates item ids. Each
//! through the real transport against a local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::message::ProviderData;
use bosun_core::{
    ContentPart, GenerationOptions, Message, ModelEvent, ModelRequest, ResponsePart, StopReason, Usage,
};
use bosun_providers::{Api, HostedModel, ProviderConfig, RetryPolicy};
use serde_json::{Value, json};
use support::shapes::{into_history, named_events, stream_once, weather};
use support::{Canned, TestServer};

fn model(server: &TestServer) -> HostedModel {
    let config = ProviderConfig::new("lmstudio", Api::OpenAiResponses, format!("{}/v1", server.url))
        .with_retry(RetryPolicy::none());
    HostedModel::new(config, "openai/gpt-oss-20b").unwrap()
}

fn completed(output: Value) -> Value {
    json!({"type": "response.completed", "sequence_number": 90, "response": {
        "id": "resp_1", "status": "completed", "output": output,
        "usage": {"input_tokens": 40, "output_tokens": 12,
                  "output_tokens_details": {"reasoning_tokens": 7}}}})
}

const THOUGHT: &str = "The user wants the weather in Paris. I should call the tool.";

/// A raw reasoning item then a function call, as LM Studio streams them.
fn raw_reasoning_then_call() -> Vec<u8> {
    let reasoning_done = json!({"id": "rs_lm1", "type": "reasoning", "summary": [],
        "content": [{"type": "reasoning_text", "text": THOUGHT}]});
    let call_done = json!({"id": "fc_lm1", "type": "function_call", "status": "completed",
        "call_id": "call_lm1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"});
    let text_delta = |n: u64, delta: &str| {
        json!({"type": "response.reasoning_text.delta", "sequence_number": n, "item_id": "rs_lm1",
               "output_index": 0, "content_index": 0, "delta": delta})
    };
    named_events(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "rs_lm1", "type": "reasoning", "summary": [], "content": []}}),
        text_delta(2, "The user wants the weather in Paris."),
        text_delta(3, " I should call the tool."),
        json!({"type": "response.reasoning_text.done", "sequence_number": 4, "item_id": "rs_lm1",
               "output_index": 0, "content_index": 0, "text": THOUGHT}),
        json!({"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": reasoning_done}),
        json!({"type": "response.output_item.added", "sequence_number": 6, "output_index": 1,
               "item": {"id": "fc_lm1", "type": "function_call", "status": "in_progress",
                        "call_id": "call_lm1", "name": "weather", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 7, "item_id": "fc_lm1",
               "output_index": 1, "delta": "{\"city\":\"Paris\"}"}),
        json!({"type": "response.output_item.done", "sequence_number": 8, "output_index": 1, "item": call_done}),
        completed(json!([reasoning_done, call_done])),
    ])
}

fn answer() -> Vec<u8> {
    named_events(&[
        json!({"type": "response.output_item.added", "sequence_number": 0, "output_index": 0,
               "item": {"id": "msg_lm2", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_lm2",
               "output_index": 0, "content_index": 0, "delta": "Sunny."}),
        completed(json!([])),
    ])
}

fn raw_reasoning(id: &str, text: &str) -> ContentPart {
    ContentPart::Reasoning {
        text: text.into(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "openai-responses",
            json!({"id": id, "encrypted_content": null, "summary": [],
                   "content": [{"type": "reasoning_text", "text": text}]}),
        )),
    }
}

#[tokio::test]
async fn raw_reasoning_is_streamed_kept_with_its_id_and_replayed_in_the_tool_loop() {
    let server = TestServer::start(vec![Canned::sse(raw_reasoning_then_call()), Canned::sse(answer())]).await;
    let model = model(&server);
    let mut history = vec![Message::user("Weather in Paris?")];
    let options = GenerationOptions::default();

    let first =
        stream_once(&model, ModelRequest::new(None, history.clone(), vec![weather()], options.clone())).await;
    assert_eq!(first.reasoning(), THOUGHT, "the raw reasoning streams as reasoning deltas");
    assert_eq!(first.text(), "");
    let response = first.response();
    let call = ResponsePart::tool_call("call_lm1", "weather", json!({"city": "Paris"}))
        .with_provider_data(ProviderData::new("openai-responses", json!({"id": "fc_lm1"})));
    assert_eq!(response.content, vec![ResponsePart::Content(raw_reasoning("rs_lm1", THOUGHT)), call]);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let mut usage = Usage::new(40, 12);
    usage.reasoning = 7;
    assert_eq!(response.usage, usage);

    let (assistant, ids) = into_history(response);
    history.push(assistant);
    history.push(Message::tool_result(ids[0], "weather", "Sunny, 24 °C", false));
    let second = stream_once(&model, ModelRequest::new(None, history, vec![weather()], options)).await;
    assert_eq!(second.response().content, vec![ResponsePart::text("Sunny.")]);

    // The reasoning item goes back with its id and content, before the call
    // it belongs to (which therefore keeps its item id).
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].json()["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            {"type": "reasoning", "id": "rs_lm1", "summary": [],
             "content": [{"type": "reasoning_text", "text": THOUGHT}]},
            {"type": "function_call", "id": "fc_lm1", "call_id": ids[0].to_string(), "name": "weather",
             "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": ids[0].to_string(), "output": "Sunny, 24 °C"},
        ])
    );
}

#[tokio::test]
async fn raw_reasoning_only_in_the_final_output_is_emitted_and_kept() {
    // A server that sends no deltas, only the completed response.
    let reasoning = json!({"id": "rs_or1", "type": "reasoning", "summary": [],
        "content": [{"type": "reasoning_text", "text": "Short."}, {"type": "reasoning_text", "text": "Done."}]});
    let message = json!({"id": "msg_or1", "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi."}]});
    let body = named_events(&[completed(json!([reasoning, message]))]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&model(&server), request).await;
    assert_eq!(outcome.reasoning(), "Short.\n\nDone.");
    assert_eq!(outcome.text(), "Hi.");
    let kept = ContentPart::Reasoning {
        text: "Short.\n\nDone.".into(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "openai-responses",
            json!({"id": "rs_or1", "encrypted_content": null, "summary": [], "content": [
                {"type": "reasoning_text", "text": "Short."}, {"type": "reasoning_text", "text": "Done."}]}),
        )),
    };
    assert_eq!(outcome.response().content, vec![ResponsePart::Content(kept), ResponsePart::text("Hi.")]);
    assert_eq!(outcome.response().stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn raw_reasoning_from_another_api_or_untagged_is_not_replayed() {
    let server = TestServer::start(vec![Canned::sse(answer())]).await;
    let history = vec![
        Message::user("hi"),
        Message::Assistant {
            content: vec![
                ContentPart::Reasoning {
                    text: "Chat reasoning.".into(),
                    signature: None,
                    provider_data: Some(ProviderData::new(
                        "openai-chat",
                        json!({"id": "rs_x", "content": [{"type": "reasoning_text", "text": "Chat reasoning."}]}),
                    )),
                },
                ContentPart::reasoning("Untagged."),
                ContentPart::text("Hello."),
            ],
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
        },
        Message::user("again"),
    ];
    let request = ModelRequest::new(None, history, Vec::new(), GenerationOptions::default());
    stream_once(&model(&server), request).await.response();
    let input = &server.requests()[0].json()["input"];
    assert_eq!(
        input,
        &json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]},
        ])
    );
}

#[tokio::test]
async fn the_final_output_is_matched_by_item_id_when_output_index_has_a_gap() {
    // Items streamed at output_index 0 and 2 (nothing at 1); the final
    // output lists them at positions 0 and 1, then a call never streamed.
    let reasoning = json!({"id": "rs_g", "type": "reasoning", "encrypted_content": "enc",
                           "summary": [{"type": "summary_text", "text": "Thinking."}]});
    let message = json!({"id": "msg_g", "type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "Hello"}]});
    let call = json!({"id": "fc_g", "type": "function_call", "call_id": "call_g", "name": "weather",
                      "arguments": "{\"city\":\"Oslo\"}"});
    let body = named_events(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_g"}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "rs_g", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 2, "item_id": "rs_g",
               "output_index": 0, "summary_index": 0, "delta": "Thinking."}),
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 2,
               "item": {"id": "msg_g", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_g",
               "output_index": 2, "content_index": 0, "delta": "Hello"}),
        json!({"type": "response.output_text.done", "sequence_number": 6, "item_id": "msg_g",
               "output_index": 2, "content_index": 0, "text": "Hello"}),
        json!({"type": "response.output_item.done", "sequence_number": 7, "output_index": 2, "item": message}),
        completed(json!([reasoning, message, call])),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], vec![weather()], GenerationOptions::default());
    let outcome = stream_once(&model(&server), request).await;
    assert_eq!(outcome.text(), "Hello", "the answer streams once");
    assert_eq!(outcome.reasoning(), "Thinking.");
    let response = outcome.response();
    let kept = ContentPart::Reasoning {
        text: "Thinking.".into(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "openai-responses",
            json!({"id": "rs_g", "encrypted_content": "enc",
                   "summary": [{"type": "summary_text", "text": "Thinking."}]}),
        )),
    };
    let call = ResponsePart::tool_call("call_g", "weather", json!({"city": "Oslo"}))
        .with_provider_data(ProviderData::new("openai-responses", json!({"id": "fc_g"})));
    assert_eq!(response.content, vec![ResponsePart::Content(kept), ResponsePart::text("Hello"), call]);
    let starts: Vec<&ModelEvent> =
        outcome.events.iter().filter(|e| matches!(e, ModelEvent::ToolCallStart { .. })).collect();
    assert_eq!(starts.len(), 1, "{:?}", outcome.events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn the_final_output_is_matched_by_output_index_when_the_server_rotates_item_ids() {
    // Written by hand from the documented Responses wire format (no public
    // recording of this shape was found in time): GitHub Copilot gives an
    // item other ids in `output_item.done` and `response.completed` than in
    // `output_item.added`, and OpenRouter gives the final reasoning item a
    // new id. The items are still the ones at the same `output_index`.
    let reasoning = |id: &str| {
        json!({"id": id, "type": "reasoning", "encrypted_content": "enc",
               "summary": [{"type": "summary_text", "text": "Thinking."}]})
    };
    let message = |id: &str| {
        json!({"id": id, "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Hello"}]})
    };
    let body = named_events(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_r"}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "rs_a", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 2, "item_id": "rs_a",
               "output_index": 0, "summary_index": 0, "delta": "Thinking."}),
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0,
               "item": reasoning("rs_b")}),
        json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 1,
               "item": {"id": "msg_a", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_a",
               "output_index": 1, "content_index": 0, "delta": "Hello"}),
        json!({"type": "response.output_item.done", "sequence_number": 6, "output_index": 1,
               "item": message("msg_b")}),
        completed(json!([reasoning("rs_c"), message("msg_c")])),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&model(&server), request).await;
    assert_eq!(outcome.text(), "Hello", "the answer streams once");
    assert_eq!(outcome.reasoning(), "Thinking.", "the reasoning streams once");
    let content = &outcome.response().content;
    assert_eq!(content.len(), 2, "one reasoning part and one answer, to be sent back once: {content:?}");
    assert_eq!(content[1], ResponsePart::text("Hello"));
}

#[tokio::test]
async fn an_insufficient_quota_error_in_the_stream_is_a_quota_error() {
    // Written by hand from the documented Responses `error` event (type,
    // code, message, param, sequence_number) with OpenAI's quota code; no
    // public recording of it was found in time.
    let body = named_events(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_q"}}),
        json!({"type": "error", "sequence_number": 1, "code": "insufficient_quota", "param": null,
               "message": "You exceeded your current quota, please check your plan and billing details."}),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&model(&server), request).await;
    let error = outcome.error();
    assert_eq!(error.class(), "quota", "{error}");
    assert!(error.to_string().contains("exceeded your current quota"), "{error}");
    assert_eq!(server.requests().len(), 1, "a used-up quota is not retried");
}
