//! An output schema (`GenerationOptions::output_schema`) in each API's own
//! field: Chat Completions' `response_format`, Responses' `text.format`,
//! Gemini's `responseJsonSchema` with a JSON media type, and for Anthropic,
//! which has none, a last system instruction. Sent beside the tools, as the
//! answer that must match may come after tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::{GenerationOptions, Message, Model, ModelEvent, ModelRequest, OutputSchema, ToolDefinition};
use bosun_providers::{Api, HostedModel};
use futures_util::StreamExt;
use serde_json::json;
use support::TestServer;
use support::faults::{APIS, base, good};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn an_output_schema_reaches_each_api_in_its_own_field() {
    let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}}, "required": ["verdict"],
        "additionalProperties": false});
    for api in APIS {
        let server = TestServer::start(vec![good(api)]).await;
        let model = HostedModel::new(base(api, &server.url), "m").unwrap();
        let mut options = GenerationOptions::default();
        options.output_schema = Some(OutputSchema::new("verdict.schema", schema.clone()));
        let tools = vec![ToolDefinition::new("read_file", "Read a file", json!({"type": "object"}))];
        let request = ModelRequest::new(Some("Be brief."), vec![Message::user("judge")], tools, options);
        let mut stream = model.stream(request, CancellationToken::new());
        let mut done = false;
        while let Some(event) = stream.next().await {
            done |= matches!(event.unwrap(), ModelEvent::Done(_));
        }
        assert!(done, "{api:?}");
        let body = server.requests()[0].json();
        let format = json!({"name": "verdict_schema", "schema": schema, "strict": true});
        match api {
            Api::OpenAiChat => {
                assert_eq!(body["response_format"], json!({"type": "json_schema", "json_schema": format}));
            }
            Api::OpenAiResponses => {
                let mut expected = format.clone();
                expected["type"] = json!("json_schema");
                assert_eq!(body["text"], json!({ "format": expected }));
            }
            Api::Gemini => {
                let config = &body["generationConfig"];
                assert_eq!(config["responseMimeType"], json!("application/json"));
                let mut expected = schema.clone();
                expected.as_object_mut().unwrap().remove("$schema");
                assert_eq!(config["responseJsonSchema"], expected);
            }
            _ => {
                let system = body["system"].as_array().unwrap();
                assert_eq!(system[0]["text"], json!("Be brief."));
                let last = system.last().unwrap()["text"].as_str().unwrap();
                assert!(
                    last.starts_with("Your final answer") && last.ends_with(&schema.to_string()),
                    "{last}"
                );
            }
        }
        assert!(body.get("tools").is_some(), "{api:?}: the tools stay offered");
    }
}

#[tokio::test]
async fn without_an_output_schema_no_structured_field_is_sent() {
    for api in APIS {
        let server = TestServer::start(vec![good(api)]).await;
        let model = HostedModel::new(base(api, &server.url), "m").unwrap();
        let request =
            ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default());
        let mut stream = model.stream(request, CancellationToken::new());
        while stream.next().await.is_some() {}
        let body = server.requests()[0].json();
        for field in ["response_format", "text", "system"] {
            assert!(body.get(field).is_none(), "{api:?}: {field}");
        }
        assert!(body["generationConfig"].get("responseJsonSchema").is_none(), "{api:?}");
    }
}
