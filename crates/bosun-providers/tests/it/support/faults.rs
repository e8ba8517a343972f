//! Helpers for the fault and retry tests (`faults.rs`, `retries.rs`), which
//! run each case on all four wire APIs: each API's stream written by hand (a
//! preamble, text deltas, the finish and the terminal event, in-stream
//! errors), a provider configured on a `ManualClock`, and one request run
//! under a script of clock steps, with everything it streamed.

use std::time::Duration;

use bosun_core::{GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse};
use bosun_providers::{Api, HostedModel, ProviderConfig, RetryPolicy};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Canned, ManualClock, Step, TestServer, Wait, scripted};

/// The four wire APIs every case runs on.
pub use super::APIS;

/// The first-byte timeout [`config`] sets.
pub const FIRST_BYTE: Duration = Duration::from_secs(5);

// ------------------------------------------------------------ the four wires

/// One SSE event.
pub fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The events an API streams before its first content: none for Chat
/// Completions and Gemini, the message and its text block for Anthropic,
/// the message item for Responses.
pub fn preamble(api: Api) -> String {
    match api {
        Api::AnthropicMessages => {
            let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "m", "stop_reason": null,
                "usage": {"input_tokens": 3, "output_tokens": 1}}});
            let block = json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}});
            sse(Some("message_start"), &start) + &sse(Some("content_block_start"), &block)
        }
        Api::OpenAiResponses => {
            let added = json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}});
            sse(Some("response.output_item.added"), &added)
        }
        _ => String::new(),
    }
}

/// One text delta.
pub fn text(api: Api, delta: &str) -> String {
    match api {
        Api::OpenAiChat => sse(None, &json!({"choices": [{"index": 0, "delta": {"content": delta}}]})),
        Api::AnthropicMessages => sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": delta}}),
        ),
        Api::OpenAiResponses => sse(
            Some("response.output_text.delta"),
            &json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                "content_index": 0, "delta": delta}),
        ),
        _ => sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": delta}]}, "index": 0}]}),
        ),
    }
}

/// The finish reason and the usage (3 in, 2 out), without the terminal
/// event of the APIs that have one after them.
pub fn finish(api: Api) -> String {
    match api {
        Api::OpenAiChat => {
            sse(None, &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
                + &sse(None, &json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}))
        }
        Api::AnthropicMessages => {
            sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0}))
                + &sse(
                    Some("message_delta"),
                    &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": 2}}),
                )
        }
        // Responses has no finish before its terminal event: this is it.
        Api::OpenAiResponses => sse(
            Some("response.completed"),
            &json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                "output": [], "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        ),
        _ => sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}}),
        ),
    }
}

/// The terminal event after the finish, where the API has one.
pub fn end(api: Api) -> String {
    match api {
        Api::OpenAiChat => "data: [DONE]\n\n".to_owned(),
        Api::AnthropicMessages => sse(Some("message_stop"), &json!({"type": "message_stop"})),
        _ => String::new(),
    }
}

/// A whole answer: "Hel" + "lo", stop, 3 + 2 tokens.
pub fn good(api: Api) -> Canned {
    Canned::sse(preamble(api) + &text(api, "Hel") + &text(api, "lo") + &finish(api) + &end(api))
}

/// An error event each API streams for a passing failure of its own.
pub fn transient_error(api: Api) -> String {
    match api {
        Api::OpenAiChat => sse(
            None,
            &json!({"error": {"message": "The server had an error while processing your request.",
                "type": "server_error", "code": null}}),
        ),
        Api::AnthropicMessages => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Api::OpenAiResponses => sse(
            Some("response.failed"),
            &json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                "error": {"code": "server_error", "message": "The server had an error."}}}),
        ),
        _ => sse(
            None,
            &json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}),
        ),
    }
}

/// The short reason the retry notice gives for [`transient_error`].
pub fn transient_reason(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat => "in-stream server_error: The server had an error while processing your request.",
        Api::AnthropicMessages => "in-stream overloaded_error: Overloaded",
        Api::OpenAiResponses => "in-stream server_error: The server had an error.",
        _ => "in-stream 500: An internal error has occurred.",
    }
}

/// An error event that another attempt would meet again.
pub fn invalid_error(api: Api) -> String {
    match api {
        Api::OpenAiChat => {
            sse(None, &json!({"error": {"message": "Invalid tool schema.", "type": "invalid_request_error"}}))
        }
        Api::AnthropicMessages => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Invalid tool schema."}}),
        ),
        Api::OpenAiResponses => sse(
            Some("error"),
            &json!({"type": "error", "code": "invalid_prompt", "message": "Invalid tool schema."}),
        ),
        _ => sse(
            None,
            &json!({"error": {"code": 400, "message": "Invalid tool schema.", "status": "INVALID_ARGUMENT"}}),
        ),
    }
}

pub fn base(api: Api, url: &str) -> ProviderConfig {
    match api {
        Api::OpenAiChat => ProviderConfig::openai_compatible(format!("{url}/v1")),
        Api::OpenAiResponses => ProviderConfig::new("openai-responses", api, format!("{url}/v1")),
        Api::AnthropicMessages => ProviderConfig::new("anthropic", api, url),
        _ => ProviderConfig::new("gemini", api, url),
    }
}

/// The path each API posts to, as an error message prints it.
pub fn path(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat => "/v1/chat/completions",
        Api::OpenAiResponses => "/v1/responses",
        Api::AnthropicMessages => "/v1/messages",
        _ => "/v1beta/models/m:streamGenerateContent",
    }
}

/// Two attempts, a backoff of 0.8–1 s, a 5 s first-byte timeout, the
/// other limits at their defaults, all on `clock`.
pub fn config(api: Api, url: &str, clock: &ManualClock) -> ProviderConfig {
    on_clock(base(api, url), clock)
}

/// `config` with [`config`]'s retries and first-byte timeout, on `clock`.
pub fn on_clock(config: ProviderConfig, clock: &ManualClock) -> ProviderConfig {
    config
        .with_retry(
            RetryPolicy::default()
                .with_attempts(2)
                .with_delays(Duration::from_secs(1), Duration::from_secs(1)),
        )
        .with_first_byte_timeout(FIRST_BYTE)
        .with_sleeper(clock.clone())
}

// ------------------------------------------------------------------- running

/// Everything one request streamed.
#[derive(Debug)]
pub struct Outcome {
    pub events: Vec<ModelEvent>,
    pub result: Result<ModelResponse, ModelError>,
}

impl Outcome {
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The retry notices: (attempt, wait in ms, reason).
    pub fn retries(&self) -> Vec<(u32, u64, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Retrying { attempt, wait_ms, reason } => {
                    Some((*attempt, *wait_ms, reason.clone()))
                }
                _ => None,
            })
            .collect()
    }

    pub fn response(&self) -> &ModelResponse {
        self.result.as_ref().unwrap_or_else(|e| panic!("no response: {e}"))
    }

    pub fn error(&self) -> &ModelError {
        self.result.as_ref().err().unwrap_or_else(|| panic!("no error: {:?}", self.result))
    }
}

pub fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default())
}

pub async fn collect(model: &HostedModel) -> Outcome {
    let mut stream = model.stream(hello(), CancellationToken::new());
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Done(response)) => {
                assert!(stream.next().await.is_none(), "Done is the last item");
                return Outcome { events, result: Ok(response) };
            }
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "an error is the last item");
                return Outcome { events, result: Err(error) };
            }
        }
    }
    panic!("the stream ended with neither a response nor an error: {events:?}")
}

/// Serves `responses` for `api` and runs one request under `steps`.
pub async fn serve(
    api: Api,
    responses: Vec<Canned>,
    steps: &[Step],
    adjust: impl FnOnce(ProviderConfig) -> ProviderConfig,
) -> (Outcome, TestServer, ManualClock) {
    let server = TestServer::start(responses).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(adjust(config(api, &server.url, &clock)), "m").unwrap();
    let outcome = scripted(Some(&server), &clock, steps, collect(&model)).await;
    (outcome, server, clock)
}

pub fn name(api: Api) -> String {
    base(api, "http://x").name
}

pub fn durations(waits: &[Wait]) -> Vec<Duration> {
    waits.iter().map(|w| w.duration).collect()
}

/// A backoff of `RetryPolicy::with_delays(1 s, 1 s)`: 0.8 s to 1 s.
pub fn is_backoff(wait: &Wait) -> bool {
    (Duration::from_millis(800)..=Duration::from_secs(1)).contains(&wait.duration)
}

pub fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap()
}
