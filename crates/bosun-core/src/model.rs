//! The [`Model`] trait: one streamed response per request.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::message::{ContentPart, Message, StopReason, Usage};
use crate::tool::ToolDefinition;

/// A stream of model events; the last item is [`ModelEvent::Done`] or an error.
pub type ModelStream<'a> = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a>>;

/// What [`Model::count_tokens`] returns.
pub type CountFuture<'a> = Pin<Box<dyn Future<Output = Option<u64>> + Send + 'a>>;

/// A language model the session can ask for one response at a time.
///
/// Implementations stream deltas as they arrive and end with exactly one
/// [`ModelEvent::Done`] holding the whole response. When `cancel` fires they
/// stop generating and end the stream promptly; the session drains the stream
/// to its end before a cancelled turn returns, so nothing the model started
/// outlives the turn.
pub trait Model: Send + Sync {
    /// What this model is known to support.
    fn capabilities(&self) -> Capabilities;

    /// Starts one response.
    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a>;

    /// The prompt tokens `request` would take, exactly, for a model that
    /// can count them (a local engine, with its own chat template and
    /// tokenizer). The session asks before a round when it has a context
    /// window to keep to; `None`, the default, leaves it to estimate from
    /// the real counts of earlier responses.
    fn count_tokens<'a>(&'a self, request: &'a ModelRequest<'a>) -> CountFuture<'a> {
        let _ = request;
        Box::pin(std::future::ready(None))
    }
}

/// Everything a model needs for one response.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The system prompt, if any.
    pub system: Option<&'a str>,
    /// The conversation so far, oldest first (without the system message).
    pub messages: Cow<'a, [Message]>,
    /// Definitions of the tools the model may call, sorted by name.
    pub tools: Cow<'a, [ToolDefinition]>,
    /// Sampling and reasoning options for this response.
    pub options: GenerationOptions,
}

impl<'a> ModelRequest<'a> {
    /// A request (for adapters' tests and for programs that call a model
    /// without a session).
    pub fn new(
        system: Option<&'a str>,
        messages: impl Into<Cow<'a, [Message]>>,
        tools: impl Into<Cow<'a, [ToolDefinition]>>,
        options: GenerationOptions,
    ) -> Self {
        Self { system, messages: messages.into(), tools: tools.into(), options }
    }
}

/// One item of a model's response stream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text.
    ReasoningDelta(String),
    /// A tool call begins; `index` identifies it among this response's calls.
    ToolCallStart {
        /// Position of the call in this response.
        index: u32,
        /// The model's own id for the call (untrusted).
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgs {
        /// Position of the call in this response.
        index: u32,
        /// The next piece of argument text.
        fragment: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Position of the call in this response.
        index: u32,
    },
    /// Usage so far (providers that report it mid-stream).
    Usage(Usage),
    /// The request failed in a way worth another try, and the adapter will
    /// try again after `wait_ms`; nothing of the failed attempt was kept.
    Retrying {
        /// The attempt about to be made, from 2.
        attempt: u32,
        /// How long the adapter waits first, in milliseconds.
        wait_ms: u64,
        /// Why: the failure of the last attempt.
        reason: String,
    },
    /// The whole response; always the last event.
    Done(ModelResponse),
}

/// A complete model response.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelResponse {
    /// Text, reasoning and tool calls in the order produced. Tool-call ids
    /// here are the model's own; the session replaces them.
    pub content: Vec<ResponsePart>,
    /// What the response cost.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The provider's own explanation of the stop, when it gives one
    /// (Anthropic's `stop_details` on a refusal), for the person to read.
    pub stop_details: Option<String>,
}

impl ModelResponse {
    /// A response with the given parts.
    pub fn new(content: Vec<ResponsePart>, usage: Usage, stop_reason: StopReason) -> Self {
        Self { content, usage, stop_reason, stop_details: None }
    }

    /// The same response with the provider's explanation of its stop.
    pub fn with_stop_details(mut self, details: Option<String>) -> Self {
        self.stop_details = details;
        self
    }

    /// The answer text: the text parts joined, reasoning and calls left out.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                ResponsePart::Content(ContentPart::Text { text }) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// One part of a [`ModelResponse`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResponsePart {
    /// Plain content (text or reasoning; images are not produced).
    Content(ContentPart),
    /// A tool call with the model's own id.
    ToolCall {
        /// The model's id for the call (untrusted, may repeat, may be empty).
        provider_id: String,
        /// The tool's name.
        name: String,
        /// The argument value; should be an object. Providers that could not
        /// parse the arguments pass the raw text as a JSON string, which then
        /// fails validation with a clear message.
        arguments: serde_json::Value,
        /// Opaque provider state tied to the call, kept with it in history.
        provider_data: Option<crate::message::ProviderData>,
    },
}

impl ResponsePart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Content(ContentPart::text(text))
    }

    /// Attaches provider state to a tool call (no effect on other parts).
    pub fn with_provider_data(mut self, data: crate::message::ProviderData) -> Self {
        if let Self::ToolCall { provider_data, .. } = &mut self {
            *provider_data = Some(data);
        }
        self
    }

    /// A tool call.
    pub fn tool_call(
        provider_id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self::ToolCall { provider_id: provider_id.into(), name: name.into(), arguments, provider_data: None }
    }
}

/// Whether a model is known to support something.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Support {
    /// Proven to work.
    Yes,
    /// Proven not to work.
    No,
    /// Not known; the session does not rely on it but does not refuse either.
    #[default]
    Unknown,
}

/// What a model supports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// A system role (else the adapter folds the prompt into the first message).
    pub system_role: Support,
    /// Tool calling.
    pub tools: Support,
    /// Several tool calls in one response.
    pub parallel_calls: Support,
    /// Replaying earlier reasoning in later requests.
    pub reasoning_replay: Support,
    /// Turning thinking on and off.
    pub thinking_toggle: Support,
    /// Images in the conversation (a person's message, a tool's result).
    /// `No` refuses a message with images before anything is sent, and
    /// images already in history reach the model as a note instead.
    #[serde(default)]
    pub images: Support,
}

impl Capabilities {
    /// Everything proven to work.
    pub fn all() -> Self {
        Self {
            system_role: Support::Yes,
            tools: Support::Yes,
            parallel_calls: Support::Yes,
            reasoning_replay: Support::Yes,
            thinking_toggle: Support::Yes,
            images: Support::Yes,
        }
    }
}

/// Whether and how the model should reason before answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Thinking {
    /// No reasoning.
    Off,
    /// Reasoning with an optional token budget.
    On {
        /// The most tokens to spend on reasoning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<u32>,
    },
    /// The model's own default.
    Auto,
}

/// How hard a model should reason: the levels every provider's reasoning
/// setting can express. OpenAI takes the level by name; Anthropic and
/// Gemini take a token budget, [`Effort::budget`], which maps back to the
/// same level ([`Effort::of_budget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effort {
    /// Quick answers: a small thinking budget.
    Low,
    /// The usual depth.
    Medium,
    /// The most reasoning.
    High,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Effort; 3] = [Effort::Low, Effort::Medium, Effort::High];

    /// The thinking budget, in tokens, for providers that take one.
    pub fn budget(self) -> u32 {
        match self {
            Self::Low => 4_096,
            Self::Medium => 16_384,
            Self::High => 32_768,
        }
    }

    /// The level a budget stands for: up to [`Effort::Low`]'s budget is low,
    /// up to [`Effort::Medium`]'s medium, above that high; no budget is
    /// medium (the providers' own default level).
    pub fn of_budget(budget: Option<u32>) -> Self {
        match budget {
            None => Self::Medium,
            Some(b) if b <= Self::Low.budget() => Self::Low,
            Some(b) if b <= Self::Medium.budget() => Self::Medium,
            Some(_) => Self::High,
        }
    }

    /// Its name: `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// The level named `name` (as [`Effort::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|effort| effort.as_str() == name)
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Effort> for Thinking {
    fn from(effort: Effort) -> Self {
        Thinking::On { budget: Some(effort.budget()) }
    }
}

/// Whether a response may, must or must not call tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The response must call at least one of the offered tools.
    Required,
    /// The response must not call tools.
    None,
}

/// Sampling and reasoning options. Every field is optional; unset fields
/// leave the model's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct GenerationOptions {
    /// The most output tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Reasoning policy.
    pub thinking: Option<Thinking>,
    /// Sequences that end generation.
    pub stop: Option<Vec<String>>,
    /// Whether the response may, must or must not call tools. A model that
    /// cannot enforce [`ToolChoice::Required`] treats it as a strong hint.
    pub tool_choice: Option<ToolChoice>,
    /// The JSON Schema an answer's text must match. Each adapter steers the
    /// model its own way (a provider's structured-output field, a prompt
    /// instruction, a grammar); none of them is trusted to have managed it,
    /// so whoever set it checks the final answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
}

/// A JSON Schema the answer must match, with the name providers that want
/// one are given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputSchema {
    /// 1 to 64 of `A-Z a-z 0-9 _ -` (what OpenAI's APIs accept).
    pub name: String,
    /// The schema, as given.
    pub schema: serde_json::Value,
}

impl OutputSchema {
    /// `schema` named `name`, the name reduced to what every provider
    /// accepts (other characters become `_`; empty, `output`).
    pub fn new(name: &str, schema: serde_json::Value) -> Self {
        let name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        Self { name: if name.is_empty() { "output".to_owned() } else { name }, schema }
    }
}

impl GenerationOptions {
    /// Layers `over` on top of `self`: every field set in `over` wins, unset
    /// fields keep the session's value.
    pub fn layered(&self, over: &GenerationOptions) -> GenerationOptions {
        GenerationOptions {
            max_tokens: over.max_tokens.or(self.max_tokens),
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            thinking: over.thinking.or(self.thinking),
            stop: over.stop.clone().or_else(|| self.stop.clone()),
            tool_choice: over.tool_choice.or(self.tool_choice),
            output_schema: over.output_schema.clone().or_else(|| self.output_schema.clone()),
        }
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider is rate limiting; retry later.
    #[error("rate limited: {message}")]
    RateLimited {
        /// What the provider said.
        message: String,
        /// How long the provider asked to wait, in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// The account's quota or credit is used up (OpenAI's
    /// `insufficient_quota`): unlike a rate limit, waiting and retrying does
    /// not help; the person has to add credit or raise a limit.
    #[error("quota exceeded: {0}")]
    QuotaExceeded(String),
    /// The connection failed or the stream ended early.
    #[error("network: {0}")]
    Network(String),
    /// The prompt is larger than the model's context window.
    #[error("context overflow: {0}")]
    ContextOverflow(String),
    /// Credentials were missing or refused.
    #[error("authentication: {0}")]
    Authentication(String),
    /// The request was malformed.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The provider failed.
    #[error("server error: {0}")]
    Server(String),
    /// The stream broke the protocol (bad JSON, missing terminal event, …).
    #[error("protocol: {0}")]
    Protocol(String),
    /// Generation was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Any other failure.
    #[error("{0}")]
    Other(String),
}

impl ModelError {
    /// A short stable name of the failure's class, for events and exit
    /// reports: `rate_limited`, `quota`, `network`, `overflow`, `authentication`,
    /// `invalid_request`, `server`, `protocol`, `cancelled` or `other`.
    pub fn class(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate_limited",
            Self::QuotaExceeded(_) => "quota",
            Self::Network(_) => "network",
            Self::ContextOverflow(_) => "overflow",
            Self::Authentication(_) => "authentication",
            Self::InvalidRequest(_) => "invalid_request",
            Self::Server(_) => "server",
            Self::Protocol(_) => "protocol",
            Self::Cancelled => "cancelled",
            Self::Other(_) => "other",
        }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Yes => "yes",
            Self::No => "no",
            Self::Unknown => "unknown",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_efforts_budget_maps_back_to_it() {
        for effort in Effort::ALL {
            assert_eq!(Effort::of_budget(Some(effort.budget())), effort);
            assert_eq!(Effort::parse(effort.as_str()), Some(effort));
        }
        assert_eq!(Effort::of_budget(None), Effort::Medium);
        assert_eq!(Effort::of_budget(Some(1)), Effort::Low);
        assert_eq!(Effort::of_budget(Some(100_000)), Effort::High);
        assert_eq!(Effort::parse("max"), None);
    }
}
