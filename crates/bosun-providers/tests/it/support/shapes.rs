//! Helpers for the tests of wire shapes (`*_shapes.rs`, `stop_reasons.rs`):
//! one request streamed through the real transport and checked for shape,
//! hand-written streams framed as each API frames them, and a response as
//! the session keeps it.

use bosun_core::ToolDefinition;
use serde_json::json;

use super::{NO_HANG, reframe};

/// A `weather` tool with one string argument, `city`.
pub fn weather() -> ToolDefinition {
    ToolDefinition::new(
        "weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// Everything one call of `Model::stream` produced: the events before the
/// end, and the end (the final response or the error).
#[derive(Debug)]
pub struct Streamed {
    pub events: Vec<bosun_core::ModelEvent>,
    pub end: Result<bosun_core::ModelResponse, bosun_core::ModelError>,
}

impl Streamed {
    /// The streamed answer text.
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(
                |e| if let bosun_core::ModelEvent::TextDelta(t) = e { Some(t.as_str()) } else { None },
            )
            .collect()
    }

    /// The streamed reasoning text.
    pub fn reasoning(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| {
                if let bosun_core::ModelEvent::ReasoningDelta(t) = e { Some(t.as_str()) } else { None }
            })
            .collect()
    }

    pub fn response(&self) -> &bosun_core::ModelResponse {
        self.end.as_ref().unwrap_or_else(|e| panic!("the stream failed: {e}"))
    }

    pub fn error(&self) -> &bosun_core::ModelError {
        match &self.end {
            Err(error) => error,
            Ok(response) => panic!("expected an error, got {response:?}"),
        }
    }
}

/// Streams one request to its end, checking the stream's shape: events,
/// then exactly one `Done` or error, last. A hang fails the test.
pub async fn stream_once(
    model: &bosun_providers::HostedModel,
    request: bosun_core::ModelRequest<'_>,
) -> Streamed {
    use bosun_core::{Model, ModelEvent};
    use futures_util::StreamExt;
    let collect = async {
        let mut stream = model.stream(request, tokio_util::sync::CancellationToken::new());
        let mut events = Vec::new();
        let mut end = None;
        while let Some(item) = stream.next().await {
            assert!(end.is_none(), "an item after the end: {item:?}");
            match item {
                Ok(ModelEvent::Done(response)) => end = Some(Ok(response)),
                Ok(event) => events.push(event),
                Err(error) => end = Some(Err(error)),
            }
        }
        Streamed { events, end: end.expect("the stream ended without Done or an error") }
    };
    tokio::time::timeout(NO_HANG, collect).await.expect("the stream hung")
}

/// Payloads framed as the Anthropic and Responses APIs send them
/// (`event: <type>` + `data:`).
pub fn named_events(payloads: &[serde_json::Value]) -> Vec<u8> {
    let lines: Vec<String> = payloads.iter().map(serde_json::Value::to_string).collect();
    reframe(&lines.join("\n"), true)
}

/// Payloads framed as Chat Completions and Gemini send them (`data:` only).
pub fn data_events(payloads: &[serde_json::Value]) -> Vec<u8> {
    payloads.iter().map(|p| format!("data: {p}\n\n")).collect::<String>().into_bytes()
}

/// A response as the session keeps it: its tool calls under fresh session
/// ids (returned in order).
pub fn into_history(response: &bosun_core::ModelResponse) -> (bosun_core::Message, Vec<bosun_core::CallId>) {
    use bosun_core::{CallId, ContentPart, Message, ResponsePart};
    let mut content = Vec::new();
    let mut ids = Vec::new();
    for part in &response.content {
        match part {
            ResponsePart::Content(part) => content.push(part.clone()),
            ResponsePart::ToolCall { name, arguments, provider_data, .. } => {
                let id = CallId::new_v7();
                ids.push(id);
                content.push(ContentPart::ToolCall {
                    id,
                    name: name.clone(),
                    arguments: arguments.clone(),
                    provider_data: provider_data.clone(),
                });
            }
            other => panic!("unexpected part {other:?}"),
        }
    }
    let message = Message::Assistant { content, usage: response.usage, stop_reason: response.stop_reason };
    (message, ids)
}
