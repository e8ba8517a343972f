//! Chat Completions reasoning that servers want back in a tool loop, through
//! the real transport: DeepSeek's `reasoning_content` (sent again on the
//! assistant message) and OpenRouter's `reasoning_details` (merged from
//! their streamed fragments and sent again verbatim), each only to the
//! provider that produced it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::message::ProviderData;
use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, ModelRequest, ResponsePart, StopReason, Usage,
};
use bosun_providers::{ApiKey, HostedModel, ProviderConfig, RetryPolicy};
use serde_json::{Value, json};
use support::shapes::{data_events, into_history, stream_once, weather};
use support::{Canned, Recorded, TestServer};

/// A preset pointed at `server`.
fn preset(name: &str, server: &TestServer) -> HostedModel {
    let config = ProviderConfig::preset(name)
        .unwrap()
        .with_base_url(format!("{}/v1", server.url))
        .with_key(ApiKey::new("k"))
        .with_retry(RetryPolicy::none());
    HostedModel::new(config, "m").unwrap()
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "c1", "object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn stream(chunks: &[Value]) -> Vec<u8> {
    let mut body = data_events(chunks);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn call_chunks() -> [Value; 2] {
    [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "weather", "arguments": ""}}]}),
            None,
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":\"Paris\"}"}}]}), None),
    ]
}

fn answer() -> Vec<u8> {
    stream(&[chunk(json!({"content": "Sunny."}), Some("stop"))])
}

/// Runs the tool loop's two requests; returns the first response's reasoning
/// part and the second request.
async fn tool_loop(name: &str, first: Vec<u8>) -> (ContentPart, Recorded) {
    let server = TestServer::start(vec![Canned::sse(first), Canned::sse(answer())]).await;
    let model = preset(name, &server);
    let mut history = vec![Message::user("Weather in Paris?")];
    let options = GenerationOptions::default();
    let one =
        stream_once(&model, ModelRequest::new(None, history.clone(), vec![weather()], options.clone())).await;
    let response = one.response();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let ResponsePart::Content(reasoning @ ContentPart::Reasoning { text, .. }) = &response.content[0] else {
        panic!("reasoning first: {response:?}");
    };
    assert_eq!(&one.reasoning(), text, "the deltas add up to the reasoning");
    let reasoning = reasoning.clone();
    let (assistant, ids) = into_history(response);
    history.push(assistant);
    history.push(Message::tool_result(ids[0], "weather", "Sunny", false));
    let two = stream_once(&model, ModelRequest::new(None, history, vec![weather()], options)).await;
    assert_eq!(two.response().text(), "Sunny.");
    let mut requests = server.requests();
    assert_eq!(requests.len(), 2);
    (reasoning, requests.remove(1))
}

/// The second request's assistant message, checked but for its reasoning.
fn assistant_message(request: &Recorded) -> Value {
    let messages = request.json()["messages"].clone();
    assert_eq!(messages.as_array().map(Vec::len), Some(3), "{messages}");
    let assistant = messages[1].clone();
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["tool_calls"][0]["function"],
        json!({"name": "weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assistant
}

#[tokio::test]
async fn deepseek_reasoning_content_goes_back_on_the_assistant_message() {
    let [call_start, call_args] = call_chunks();
    let first = stream(&[
        chunk(json!({"role": "assistant", "content": null, "reasoning_content": ""}), None),
        chunk(json!({"content": null, "reasoning_content": "I need the weather."}), None),
        chunk(json!({"content": null, "reasoning_content": " Call the tool."}), None),
        call_start,
        call_args,
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (reasoning, second) = tool_loop("deepseek", first).await;
    assert_eq!(
        reasoning,
        ContentPart::Reasoning {
            text: "I need the weather. Call the tool.".into(),
            signature: None,
            provider_data: Some(ProviderData::new(
                "openai-chat",
                json!({"provider": "deepseek", "reasoning_content": true})
            )),
        }
    );
    let assistant = assistant_message(&second);
    assert_eq!(assistant["reasoning_content"], "I need the weather. Call the tool.");
    assert_eq!(assistant["content"], Value::Null);
    assert!(assistant.get("reasoning_details").is_none(), "{assistant}");
}

/// The reasoning of an earlier turn stays home: only the assistant messages
/// of the tool loop in progress (after the latest user message) carry it.
#[tokio::test]
async fn deepseek_reasoning_content_of_an_earlier_turn_is_not_sent() {
    let server = TestServer::start(vec![Canned::sse(answer())]).await;
    let model = preset("deepseek", &server);
    let reasoning = ContentPart::Reasoning {
        text: "Old thoughts.".into(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "openai-chat",
            json!({"provider": "deepseek", "reasoning_content": true}),
        )),
    };
    let earlier = Message::Assistant {
        content: vec![reasoning, ContentPart::text("It was sunny.")],
        usage: bosun_core::Usage::default(),
        stop_reason: StopReason::Stop,
    };
    let history = vec![Message::user("Weather in Paris?"), earlier, Message::user("And tomorrow?")];
    stream_once(&model, ModelRequest::new(None, history, vec![weather()], GenerationOptions::default()))
        .await;
    let messages = server.requests()[0].json()["messages"].clone();
    assert_eq!(messages[1]["role"], "assistant", "{messages}");
    assert_eq!(messages[1]["content"], "It was sunny.");
    assert!(messages[1].get("reasoning_content").is_none(), "{messages}");
}

#[tokio::test]
async fn openrouter_reasoning_details_are_merged_and_go_back_verbatim() {
    let format = "anthropic-claude-v1";
    let text = |t: &str| json!({"type": "reasoning.text", "text": t, "format": format, "index": 0});
    let [call_start, call_args] = call_chunks();
    let first = stream(&[
        chunk(
            json!({"role": "assistant", "content": "", "reasoning": "Let me", "reasoning_details": [text("Let me")]}),
            None,
        ),
        chunk(json!({"content": "", "reasoning": " think.", "reasoning_details": [text(" think.")]}), None),
        chunk(
            json!({"content": "", "reasoning": null, "reasoning_details": [
                {"type": "reasoning.text", "signature": "sig-1", "format": format, "index": 0}]}),
            None,
        ),
        chunk(
            json!({"content": "", "reasoning_details": [
                {"type": "reasoning.encrypted", "data": "opaque==", "id": "rd_2", "format": format, "index": 1}]}),
            None,
        ),
        call_start,
        call_args,
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (reasoning, second) = tool_loop("openrouter", first).await;
    let merged = json!([
        {"type": "reasoning.text", "text": "Let me think.", "signature": "sig-1", "format": format, "index": 0},
        {"type": "reasoning.encrypted", "data": "opaque==", "id": "rd_2", "format": format, "index": 1},
    ]);
    assert_eq!(
        reasoning,
        ContentPart::Reasoning {
            text: "Let me think.".into(),
            signature: None,
            provider_data: Some(ProviderData::new(
                "openai-chat",
                json!({"provider": "openrouter", "reasoning_details": merged})
            )),
        }
    );
    let assistant = assistant_message(&second);
    assert_eq!(assistant["reasoning_details"], merged);
    assert!(assistant.get("reasoning_content").is_none(), "{assistant}");
}

#[tokio::test]
async fn reasoning_details_alone_are_the_reasoning_text() {
    let body = stream(&[
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.summary", "summary": "Plan:", "index": 0}]}),
            None,
        ),
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.summary", "summary": " look.", "index": 0}]}),
            None,
        ),
        chunk(json!({"content": "Done."}), Some("stop")),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let request =
        ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&preset("openrouter", &server), request).await;
    assert_eq!(outcome.reasoning(), "Plan: look.");
    let details = json!([{"type": "reasoning.summary", "summary": "Plan: look.", "index": 0}]);
    assert_eq!(
        outcome.response().content,
        vec![
            ResponsePart::Content(ContentPart::Reasoning {
                text: "Plan: look.".into(),
                signature: None,
                provider_data: Some(ProviderData::new(
                    "openai-chat",
                    json!({"provider": "openrouter", "reasoning_details": details})
                )),
            }),
            ResponsePart::text("Done."),
        ]
    );
}

#[tokio::test]
async fn reasoning_goes_back_only_to_the_provider_and_api_that_produced_it() {
    let call = CallId::new_v7();
    let tagged = |api: &str, data: Value| ContentPart::Reasoning {
        text: "Thought.".into(),
        signature: None,
        provider_data: Some(ProviderData::new(api, data)),
    };
    let history = vec![
        Message::user("go"),
        Message::Assistant {
            content: vec![
                tagged("openai-chat", json!({"provider": "deepseek", "reasoning_content": true})),
                tagged(
                    "openai-chat",
                    json!({"provider": "openrouter", "reasoning_details": [{"type": "reasoning.text"}]}),
                ),
                tagged(
                    "openai-responses",
                    json!({"id": "rs_1", "reasoning_content": true, "provider": "xai"}),
                ),
                ContentPart::reasoning("Untagged."),
                ContentPart::ToolCall {
                    id: call,
                    name: "weather".into(),
                    arguments: json!({}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "weather", "Sunny", false),
    ];
    let server = TestServer::start(vec![Canned::sse(answer())]).await;
    let request = ModelRequest::new(None, history, vec![weather()], GenerationOptions::default());
    stream_once(&preset("xai", &server), request).await.response();
    let body = server.requests()[0].json();
    let assistant = &body["messages"][1];
    assert_eq!(
        assistant,
        &json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": call.to_string(), "type": "function", "function": {"name": "weather", "arguments": "{}"}}]})
    );
}
