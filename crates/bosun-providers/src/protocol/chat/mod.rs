//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), spoken by
//! OpenAI and by every compatible server: Ollama, llama.cpp, vLLM,
//! OpenRouter, Groq, DeepSeek, Mistral, xAI. Their differences are data
//! ([`crate::config::Quirks`]), not code.
//!
//! The request is built in `request.rs`, the stream decoded in `decode.rs`.
//!
//! Decisions, for every compatible server alike:
//! - Reasoning from earlier turns is sent back only where a server defines a
//!   field for it and only to the provider that produced it: DeepSeek's
//!   `reasoning_content` and OpenRouter's `reasoning_details` (see
//!   `request.rs`). Everything else is dropped by the request builder, so
//!   `reasoning_replay` is `Yes`: the session passes reasoning on and the
//!   builder decides.
//! - Thinking: `Thinking::On` becomes `reasoning_effort`, the level its
//!   budget stands for (`Effort::of_budget`; no budget is medium); medium
//!   goes as `"high"` unless the server takes `"medium"`
//!   (`Quirks::medium_effort`: OpenAI's does, xAI's takes only low and high). `Off` and `Auto` send
//!   nothing, since the API has no portable way to turn reasoning off; hence
//!   `thinking_toggle` is `Unknown`.
//! - Usage: `input` is `prompt_tokens` minus the cached prompt tokens,
//!   `cache_read` the cached ones, `output` is `completion_tokens` as the
//!   server reports it (OpenAI counts reasoning in it, xAI does not) and
//!   `reasoning` is `completion_tokens_details.reasoning_tokens`.
//! - The stream is complete at `data: [DONE]` or, for servers that omit that
//!   line, when it ends after a `finish_reason`.

mod decode;
mod request;

use bosun_core::{Capabilities, ModelError, ModelRequest, Support};

use super::{Decoder, Protocol};
use crate::config::ProviderConfig;

/// The Chat Completions protocol.
pub(crate) struct Chat;

impl Protocol for Chat {
    fn capabilities(&self) -> Capabilities {
        let mut capabilities = Capabilities::default();
        capabilities.system_role = Support::Yes;
        capabilities.tools = Support::Yes;
        capabilities.parallel_calls = Support::Yes;
        capabilities.reasoning_replay = Support::Yes;
        capabilities.thinking_toggle = Support::Unknown;
        capabilities
    }

    fn url(&self, config: &ProviderConfig, _model: &str) -> String {
        format!("{}/chat/completions", config.base_url)
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(String, String)> {
        match config.api_key.as_ref().map(|k| k.expose()).filter(|k| !k.is_empty()) {
            Some(key) => vec![("authorization".to_owned(), format!("Bearer {key}"))],
            None => Vec::new(),
        }
    }

    fn body(
        &self,
        config: &ProviderConfig,
        model: &str,
        request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError> {
        Ok(request::body(config, model, request))
    }

    fn decoder(&self, config: &ProviderConfig) -> Box<dyn Decoder> {
        Box::new(decode::ChatDecoder::new(config.clone()))
    }
}
