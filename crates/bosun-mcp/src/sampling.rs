//! Sampling: a server asking bosun's model for a completion in the middle
//! of a call (`sampling/createMessage`). It spends the user's tokens on a
//! prompt the server wrote, so it is off unless a server's config sets
//! [`sampling`](crate::ServerConfig::sampling): only then is the capability
//! advertised to that server, and its requests handed to the [`Sampler`].
//! The default, [`RefuseSampling`], refuses; any refusal reaches the server
//! as a JSON-RPC error.
//!
//! What reaches a sampler is bounded here, whatever the sampler: at most
//! [`MAX_SAMPLING_MESSAGES`] messages, [`MAX_SAMPLING_TEXT`] bytes of text
//! and [`MAX_IMAGES`](crate::MAX_IMAGES) bytes of images, and `maxTokens`
//! capped at [`MAX_SAMPLING_TOKENS`]. Tool use inside sampling is not
//! advertised, so a request carrying tools is refused.

#![allow(deprecated)] // sampling is deprecated by SEP-2577, but servers of the `initialize` era use it

use std::future::Future;
use std::pin::Pin;

use base64::Engine as _;
use bosun_core::{
    ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest, StopReason, Usage,
};
use futures_util::StreamExt as _;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, ErrorData, Role, SamplingMessage,
    SamplingMessageContentBlock,
};

/// Most output tokens a server may ask for; larger requests are cut to it.
pub const MAX_SAMPLING_TOKENS: u32 = 4096;
/// Most messages in one request.
pub const MAX_SAMPLING_MESSAGES: usize = 100;
/// Most bytes of text (system prompt and messages) in one request.
pub const MAX_SAMPLING_TEXT: usize = 256 * 1024;

/// The JSON-RPC error code of a refused request: the one the spec's example
/// gives for "User rejected sampling request".
pub const REFUSED: i32 = -1;

/// The future a [`Sampler`] returns.
pub type SampleFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SamplingResponse, SamplingRefused>> + Send + 'a>>;

/// Answers servers' sampling requests. A server's call waits for the answer
/// (under its own timeout); dropping the future means the server no longer
/// waits, so nothing should outlive it.
pub trait Sampler: Send + Sync {
    /// Answers one request, or refuses it with a reason the server sees.
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_>;
}

/// What a server asks the model.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking.
    pub server: String,
    /// Its system prompt (untrusted text).
    pub system_prompt: Option<String>,
    /// The conversation: user and assistant messages (untrusted).
    pub messages: Vec<Message>,
    /// Most output tokens, already capped at [`MAX_SAMPLING_TOKENS`].
    pub max_tokens: u32,
    /// The temperature it asks for.
    pub temperature: Option<f32>,
    /// Sequences that end generation.
    pub stop_sequences: Vec<String>,
    /// Model names it would prefer, most preferred first (advice only).
    pub model_hints: Vec<String>,
}

impl SamplingRequest {
    /// A request of `server` with these messages (for samplers' tests).
    pub fn new(server: impl Into<String>, messages: Vec<Message>, max_tokens: u32) -> Self {
        Self {
            server: server.into(),
            system_prompt: None,
            messages,
            max_tokens: max_tokens.min(MAX_SAMPLING_TOKENS),
            temperature: None,
            stop_sequences: Vec::new(),
            model_hints: Vec::new(),
        }
    }
}

/// The model's answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingResponse {
    /// The answer text.
    pub text: String,
    /// The model that answered, as the server will see it.
    pub model: String,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// What it cost.
    pub usage: Usage,
}

impl SamplingResponse {
    /// A response that ended naturally.
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            model: model.into(),
            stop_reason: StopReason::Stop,
            usage: Usage::default(),
        }
    }

    /// Sets why the model stopped.
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = stop_reason;
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// A refused request and why (sent to the server).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
#[non_exhaustive]
pub struct SamplingRefused {
    /// Why, as the server reads it.
    pub reason: String,
}

impl SamplingRefused {
    /// A refusal for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }
}

/// Refuses every request: nothing was configured to answer them.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseSampling;

impl Sampler for RefuseSampling {
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_> {
        tracing::info!(server = %request.server, "mcp: refused a sampling request");
        Box::pin(std::future::ready(Err(SamplingRefused::new(
            "bosun does not answer sampling requests here",
        ))))
    }
}

/// One completion of `request` by `model` (named `model_name` to the
/// server): its system prompt and messages, its token cap, temperature and
/// stop sequences, and no tools. Dropping the future cancels the model's
/// work.
pub async fn complete(
    model: &dyn Model,
    model_name: &str,
    request: &SamplingRequest,
) -> Result<SamplingResponse, ModelError> {
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(request.max_tokens);
    options.temperature = request.temperature;
    if !request.stop_sequences.is_empty() {
        options.stop = Some(request.stop_sequences.clone());
    }
    let tools: &[bosun_core::ToolDefinition] = &[];
    let model_request =
        ModelRequest::new(request.system_prompt.as_deref(), request.messages.as_slice(), tools, options);
    let cancel = tokio_util::sync::CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let mut stream = model.stream(model_request, cancel);
    while let Some(event) = stream.next().await {
        if let ModelEvent::Done(response) = event? {
            return Ok(SamplingResponse {
                text: response.text(),
                model: model_name.to_owned(),
                stop_reason: response.stop_reason,
                usage: response.usage,
            });
        }
    }
    Err(ModelError::Protocol("the model's stream ended without a response".into()))
}

/// The answer to a server whose config leaves sampling off (it was not
/// advertised, so the method is, for it, not there).
pub(crate) fn not_enabled() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        "sampling is not enabled for this server in bosun's configuration",
        None,
    )
}

/// The request as a sampler takes it, bounded; a request past the bounds or
/// carrying tools is refused as invalid.
pub(crate) fn lower(server: &str, params: CreateMessageRequestParams) -> Result<SamplingRequest, ErrorData> {
    let invalid = |reason: String| ErrorData::new(ErrorCode::INVALID_PARAMS, reason, None);
    if params.tools.as_ref().is_some_and(|t| !t.is_empty()) || params.tool_choice.is_some() {
        return Err(invalid("bosun does not offer tools to sampling requests".into()));
    }
    if params.messages.is_empty() {
        return Err(invalid("the request has no messages".into()));
    }
    if params.messages.len() > MAX_SAMPLING_MESSAGES {
        return Err(invalid(format!(
            "the request has {} messages; bosun takes at most {MAX_SAMPLING_MESSAGES}",
            params.messages.len()
        )));
    }
    let mut budget = Budget { text: params.system_prompt.as_ref().map_or(0, String::len), images: 0 };
    let mut messages = Vec::with_capacity(params.messages.len());
    for message in params.messages {
        let mut content = Vec::new();
        for block in message.content.into_vec() {
            content.push(budget.part(block).map_err(invalid)?);
        }
        messages.push(match message.role {
            Role::User => Message::User { content },
            Role::Assistant => {
                Message::Assistant { content, usage: Usage::default(), stop_reason: StopReason::Stop }
            }
        });
    }
    if budget.text > MAX_SAMPLING_TEXT {
        return Err(invalid(format!(
            "the request has {} bytes of text; bosun takes at most {MAX_SAMPLING_TEXT}",
            budget.text
        )));
    }
    let model_hints = params
        .model_preferences
        .and_then(|p| p.hints)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|hint| hint.name)
        .collect();
    Ok(SamplingRequest {
        server: server.to_owned(),
        system_prompt: params.system_prompt.filter(|s| !s.is_empty()),
        messages,
        max_tokens: params.max_tokens.clamp(1, MAX_SAMPLING_TOKENS),
        temperature: params.temperature,
        stop_sequences: params.stop_sequences.unwrap_or_default(),
        model_hints,
    })
}

struct Budget {
    text: usize,
    images: usize,
}

impl Budget {
    fn part(&mut self, block: SamplingMessageContentBlock) -> Result<ContentPart, String> {
        Ok(match block {
            SamplingMessageContentBlock::Text(text) => {
                self.text += text.text.len();
                ContentPart::text(text.text)
            }
            SamplingMessageContentBlock::Image(image) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(image.data.trim())
                    .map_err(|_| "an image of the request is not valid base64".to_owned())?;
                self.images += bytes.len();
                if self.images > crate::result::MAX_IMAGES {
                    return Err(format!(
                        "the request's images pass {} MiB, more than bosun takes",
                        crate::result::MAX_IMAGES / (1024 * 1024)
                    ));
                }
                ContentPart::image(image.mime_type, bytes)
            }
            SamplingMessageContentBlock::Audio(audio) => {
                let note = format!("[audio ({}): audio is not passed on]", audio.mime_type);
                self.text += note.len();
                ContentPart::text(note)
            }
            SamplingMessageContentBlock::ToolUse(_) | SamplingMessageContentBlock::ToolResult(_) => {
                return Err("bosun does not offer tools to sampling requests".into());
            }
            _ => return Err("the request holds content of a kind bosun does not know".into()),
        })
    }
}

/// The sampler's answer as the server reads it.
pub(crate) fn answer(response: SamplingResponse) -> CreateMessageResult {
    let stop = match response.stop_reason {
        StopReason::Length => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
        _ => CreateMessageResult::STOP_REASON_END_TURN,
    };
    let message = SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(response.text));
    CreateMessageResult::new(message, response.model).with_stop_reason(stop)
}

/// A refusal as the server reads it.
pub(crate) fn refusal(refused: SamplingRefused) -> ErrorData {
    ErrorData::new(ErrorCode(REFUSED), refused.reason, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: serde_json::Value) -> CreateMessageRequestParams {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_request_is_lowered_with_its_tokens_capped() {
        let request = lower(
            "srv",
            params(json!({
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "hi"}},
                    {"role": "assistant", "content": [{"type": "text", "text": "yes?"}]},
                ],
                "systemPrompt": "be brief",
                "maxTokens": 1_000_000,
                "temperature": 0.5,
                "stopSequences": ["END"],
                "modelPreferences": {"hints": [{"name": "claude"}]},
            })),
        )
        .unwrap();
        assert_eq!(request.server, "srv");
        assert_eq!(request.max_tokens, MAX_SAMPLING_TOKENS);
        assert_eq!(request.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0], Message::user("hi"));
        assert!(matches!(&request.messages[1], Message::Assistant { .. }));
        assert_eq!(request.stop_sequences, ["END"]);
        assert_eq!(request.model_hints, ["claude"]);
        assert_eq!(request.temperature, Some(0.5));
    }

    #[test]
    fn tools_oversized_and_empty_requests_are_refused_as_invalid() {
        let text = |t: &str| json!({"role": "user", "content": {"type": "text", "text": t}});
        let cases = [
            (json!({"messages": [], "maxTokens": 10}), "no messages"),
            (
                json!({"messages": [text(&"x".repeat(MAX_SAMPLING_TEXT + 1))], "maxTokens": 10}),
                "bytes of text",
            ),
            (json!({"messages": vec![text("a"); MAX_SAMPLING_MESSAGES + 1], "maxTokens": 10}), "at most 100"),
            (
                json!({"messages": [text("a")], "maxTokens": 10,
                       "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
                "tools",
            ),
        ];
        for (value, expected) in cases {
            let error = lower("srv", params(value)).unwrap_err();
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains(expected), "{}", error.message);
        }
    }

    #[test]
    fn answers_and_refusals_have_the_spec_shape() {
        let answer = answer(SamplingResponse::new("sampled", "m").with_stop_reason(StopReason::Length));
        let wire = serde_json::to_value(&answer).unwrap();
        assert_eq!(wire["role"], "assistant");
        assert_eq!(wire["content"]["text"], "sampled");
        assert_eq!(wire["model"], "m");
        assert_eq!(wire["stopReason"], "maxTokens");
        let refused = refusal(SamplingRefused::new("denied by the user"));
        assert_eq!((refused.code.0, refused.message.as_ref()), (REFUSED, "denied by the user"));
    }
}
