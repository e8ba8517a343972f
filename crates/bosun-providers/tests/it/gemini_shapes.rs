//! Gemini thought signatures on parts that are neither visible text nor a
//! function call (a thought part without text, an empty text part, a code
//! part): kept, and sent back whole in the same place of the next request;
//! a call streamed as `partialArgs` fragments merged into one call.
//! Through the real transport against a local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, GenerationOptions, Message, ModelRequest, ResponsePart, StopReason};
use bosun_providers::{Api, ApiKey, HostedModel, ProviderConfig};
use serde_json::{Value, json};
use support::shapes::{data_events, into_history, stream_once};
use support::{Canned, TestServer};

const OK_STREAM: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}],\"role\":\"model\"},",
    "\"finishReason\":\"STOP\",\"index\":0}]}\n\n"
);

fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate]})
}

/// A signed part kept whole, as the decoder keeps it.
fn whole(part: Value) -> ResponsePart {
    let signature = part["thoughtSignature"].clone();
    ResponsePart::Content(ContentPart::Reasoning {
        text: String::new(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "gemini",
            json!({"thoughtSignature": signature, "part": part}),
        )),
    })
}

#[tokio::test]
async fn signatures_on_parts_without_text_are_kept_and_replayed_in_place() {
    let bare_thought = json!({"thought": true, "thoughtSignature": "sig-thought"});
    let empty_text = json!({"text": "", "thoughtSignature": "sig-empty"});
    let code = json!({"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"},
                      "thoughtSignature": "sig-code"});
    let body = data_events(&[
        chunk(json!([{"text": "Thinking it over.", "thought": true}]), None),
        chunk(json!([bare_thought]), None),
        chunk(json!([empty_text]), None),
        chunk(json!([{"text": "It is 42."}]), None),
        chunk(json!([code]), Some("STOP")),
    ]);
    let server = TestServer::start(vec![Canned::sse(body), Canned::sse(OK_STREAM)]).await;
    let config = ProviderConfig::new("gemini", Api::Gemini, &server.url).with_key(ApiKey::new("k"));
    let model = HostedModel::new(config, "gemini-3-pro-preview").unwrap();

    let mut history = vec![Message::user("6 * 7?")];
    let options = GenerationOptions::default();
    let first =
        stream_once(&model, ModelRequest::new(None, history.clone(), Vec::new(), options.clone())).await;
    assert_eq!(first.reasoning(), "Thinking it over.");
    assert_eq!(first.text(), "It is 42.");
    let response = first.response();
    assert_eq!(
        response.content,
        vec![
            ResponsePart::Content(ContentPart::reasoning("Thinking it over.")),
            whole(bare_thought),
            whole(empty_text),
            ResponsePart::text("It is 42."),
            whole(code.clone()),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::Stop);

    history.push(into_history(response).0);
    history.push(Message::user("Thanks."));
    let second = stream_once(&model, ModelRequest::new(None, history, Vec::new(), options)).await;
    assert_eq!(second.response().text(), "ok");
    let contents = server.requests()[1].json()["contents"].clone();
    assert_eq!(
        contents,
        json!([
            {"role": "user", "parts": [{"text": "6 * 7?"}]},
            {"role": "model", "parts": [
                // A part with no content field gets the empty text Gemini
                // uses for a bare signature; the unsigned thought is not sent.
                {"thought": true, "text": "", "thoughtSignature": "sig-thought"},
                {"text": "", "thoughtSignature": "sig-empty"},
                {"text": "It is 42."},
                code,
            ]},
            {"role": "user", "parts": [{"text": "Thanks."}]},
        ])
    );
}

#[tokio::test]
async fn a_call_streamed_as_partial_args_fragments_is_one_call() {
    // Written by hand from Google's documented streamed function-call
    // arguments (`partialArgs` with `jsonPath` and a typed value,
    // `willContinue` until the last fragment); no public recording of it
    // was found in time.
    let body = data_events(&[
        chunk(json!([{"functionCall": {"name": "weather", "willContinue": true}}]), None),
        chunk(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Par",
                    "willContinue": true}], "willContinue": true}}]),
            None,
        ),
        chunk(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "is"},
                    {"jsonPath": "$.days", "numberValue": 3}], "willContinue": true}}]),
            None,
        ),
        chunk(json!([{"functionCall": {}}]), Some("STOP")),
    ]);
    let server = TestServer::start(vec![Canned::sse(body)]).await;
    let config = ProviderConfig::new("gemini", Api::Gemini, &server.url).with_key(ApiKey::new("k"));
    let model = HostedModel::new(config, "gemini-3-pro-preview").unwrap();
    let request =
        ModelRequest::new(None, vec![Message::user("Weather?")], Vec::new(), GenerationOptions::default());
    let outcome = stream_once(&model, request).await;
    let response = outcome.response();
    assert_eq!(
        response.content,
        vec![ResponsePart::tool_call("call_0", "weather", json!({"city": "Paris", "days": 3}))]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}
