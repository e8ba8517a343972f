//! The four wire protocols. Each turns a `ModelRequest` into a request body
//! and an SSE stream into model events; the transport (`hosted.rs`) does the
//! HTTP, retries and watchdog for all of them.

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod chat;
pub(crate) mod gemini;
pub(crate) mod responses;
mod structured;

use bosun_core::{Capabilities, ModelError, ModelEvent, ModelRequest, ModelResponse, ToolChoice};

use crate::classify::{classify_http, http_reason, is_retryable_status};
use crate::failure::Failure;

use crate::config::{Api, ProviderConfig};
use crate::sse::SseEvent;

/// One wire API.
pub(crate) trait Protocol: Send + Sync {
    /// What models behind this API support.
    fn capabilities(&self) -> Capabilities;

    /// The full request URL for `model`.
    fn url(&self, config: &ProviderConfig, model: &str) -> String;

    /// Authentication and protocol headers (name, value). The key is only
    /// ever put here.
    fn headers(&self, config: &ProviderConfig) -> Vec<(String, String)>;

    /// The JSON request body.
    fn body(
        &self,
        config: &ProviderConfig,
        model: &str,
        request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError>;

    /// A fresh decoder for one response stream.
    fn decoder(&self, config: &ProviderConfig) -> Box<dyn Decoder>;

    /// What a response with a failing `status` means: its error, whether
    /// another attempt may fare better, and the reason a retry notice
    /// gives. Most APIs say it in the status and the JSON body; one that
    /// names its error classes in a header reads them here.
    fn refusal(&self, refused: &Refused<'_>, config: &ProviderConfig) -> Failure {
        Failure {
            error: classify_http(refused.status, refused.retry_after, refused.body, config),
            retryable: is_retryable_status(refused.status),
            reason: http_reason(refused.status, refused.body, config),
        }
    }
}

/// A response with a failing status, as far as it was read.
pub(crate) struct Refused<'a> {
    pub(crate) status: u16,
    pub(crate) headers: &'a reqwest::header::HeaderMap,
    /// The wait its headers ask for.
    pub(crate) retry_after: Option<std::time::Duration>,
    pub(crate) body: &'a str,
}

/// Turns one response's SSE events into model events.
pub(crate) trait Decoder: Send {
    /// Handles one event, pushing what it produced (deltas, usage) to `out`.
    /// An error payload in the stream becomes a classified `Err`.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;

    /// Whether the API's terminal event has arrived (reading can stop).
    fn done(&self) -> bool;

    /// Whether the response is complete though the stream may go on: its
    /// finish reason is in. The transport then gives the stream a short
    /// grace to end (`ProviderConfig::finish_grace`, started again by each
    /// further `data:` line, so that usage sent after the finish reason, as
    /// Chat Completions does, is kept), and past it takes the response as it
    /// is: a server that holds the connection open does not cost the answer.
    fn finished(&self) -> bool;

    /// Called once the stream has ended, before `finish`: the body of a
    /// further request that continues this same response (Anthropic's
    /// `pause_turn`), or `None` when the response is complete. `body` is the
    /// request that produced the stream just read. On `Some`, the transport
    /// sends that body and feeds its stream to this same decoder, which keeps
    /// what it decoded so far, so the caller sees one response.
    fn continuation(&mut self, body: &[u8]) -> Result<Option<Vec<u8>>, ModelError> {
        let _ = body;
        Ok(None)
    }

    /// The complete response once the stream has ended. An `Err` when the
    /// stream ended before the API's terminal event (or its equivalent).
    fn finish(&mut self) -> Result<ModelResponse, ModelError>;
}

/// The protocol for an API.
pub(crate) fn for_api(api: Api) -> Box<dyn Protocol> {
    match api {
        Api::OpenAiChat => Box::new(chat::Chat),
        Api::AnthropicMessages => Box::new(anthropic::Anthropic),
        Api::OpenAiResponses => Box::new(responses::Responses),
        Api::Gemini => Box::new(gemini::Gemini),
        Api::BedrockConverse => Box::new(bedrock::Converse),
    }
}

/// The `tool_choice` string both OpenAI APIs (Chat Completions and
/// Responses) take, for a request that offers tools. `None` for a choice
/// this build does not know: the field is left out and the API's default
/// (`auto` when tools are offered) applies.
/// OpenAI's `prompt_cache_key` for `request`: requests with the same key
/// are routed to the same cache, so every round (and every session) that
/// starts with the same system prompt and tools shares one. A digest of
/// that stable prefix, never of the conversation, so it stays the same from
/// round to round; nothing secret goes into it, and it says nothing of the
/// prompt beyond equality.
pub(crate) fn prompt_cache_key(request: &ModelRequest<'_>) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    digest.update(request.system.unwrap_or_default().as_bytes());
    for tool in request.tools.iter() {
        digest.update([0]);
        digest.update(tool.name.as_bytes());
        digest.update([0]);
        digest.update(tool.description.as_bytes());
        digest.update([0]);
        digest.update(tool.parameters.to_string().as_bytes());
    }
    let hex: String = digest.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("bosun-{hex}")
}

/// A streamed call's arguments as JSON: `{}` when empty, the raw text as a
/// JSON string when it does not parse (validation then reports it clearly).
pub(crate) fn call_arguments(raw: &str) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
}

pub(crate) fn openai_tool_choice(choice: ToolChoice) -> Option<&'static str> {
    match choice {
        ToolChoice::Auto => Some("auto"),
        ToolChoice::Required => Some("required"),
        ToolChoice::None => Some("none"),
        _ => None,
    }
}

/// The error for a stream that ended before the API's terminal event.
pub(crate) fn ended_early(config: &ProviderConfig, what: &str) -> ModelError {
    ModelError::Network(format!("{}: the stream ended before {what}", config.name))
}

/// The error for an event whose JSON does not parse.
pub(crate) fn bad_json(config: &ProviderConfig, error: &serde_json::Error, data: &str) -> ModelError {
    let head: String = data.chars().take(200).collect();
    ModelError::Protocol(format!("{}: an event is not valid JSON ({error}): {head}", config.name))
}
