//! Anthropic Messages (`POST {base}/v1/messages`, `anthropic-version:
//! 2023-06-01`, the key in `x-api-key`): the request body in `request.rs`,
//! the stream decoder in `decode.rs`.
//!
//! # Reasoning in history
//!
//! Extended thinking is kept as [`ContentPart::Reasoning`] in one of two
//! forms, both tagged with [`Api::AnthropicMessages`]'s tag so they are only
//! ever sent back to this API:
//!
//! - a `thinking` block: `Reasoning { text: <thinking>, signature:
//!   Some(<signature>), provider_data: Some({api: "anthropic-messages", data:
//!   {"type": "thinking"}}) }`;
//! - a `redacted_thinking` block: `Reasoning { text: "", signature: None,
//!   provider_data: Some({api: "anthropic-messages", data: {"type":
//!   "redacted_thinking", "data": <opaque>}}) }`.
//!
//! The request builder replays exactly these forms (a thinking block needs
//! its tag and a non-empty signature; a redacted one needs its tag and its
//! `data` string) and drops every other reasoning part: reasoning from
//! another API, unsigned reasoning, untagged reasoning. Anthropic verifies
//! signatures, so replaying anything else would fail the whole request.
//!
//! # Caching
//!
//! Three prompt-caching breakpoints (`cache_control: {type: ephemeral}`): the
//! last system block, the last tool, and the last content block of the latest
//! user turn. The API allows four.
//!
//! # Completion
//!
//! A response is complete after `message_stop`, or — since a server may close
//! the connection right after its last line, and a strict reader may drop a
//! final event without its blank line — after a `message_delta` carrying a
//! `stop_reason` followed by the end of the stream. A stream that ends before
//! either fails with a network error (retryable while nothing was yielded).
//!
//! A response that stops with `pause_turn` is continued as the API
//! documents (the paused content sent back as the last assistant message,
//! the request repeated) and decoded as one response with the
//! continuation's; see `decode.rs` and `pause.rs`.
//!
//! [`ContentPart::Reasoning`]: bosun_core::ContentPart::Reasoning
//! [`Api::AnthropicMessages`]: crate::config::Api::AnthropicMessages

mod decode;
mod pause;
mod request;
#[cfg(test)]
mod tests;

use bosun_core::{Capabilities, ModelError, ModelRequest};

use super::{Decoder, Protocol};
use crate::config::{Api, ProviderConfig};

/// The API version sent with every request.
const API_VERSION: &str = "2023-06-01";

/// The tag on provider data (reasoning) produced by this API.
fn tag() -> &'static str {
    Api::AnthropicMessages.tag()
}

/// The Anthropic Messages API.
pub(crate) struct Anthropic;

impl Protocol for Anthropic {
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn url(&self, config: &ProviderConfig, _model: &str) -> String {
        // The base is the API root; a base given with the SDK-style `/v1`
        // suffix is tolerated rather than doubled.
        let base = config.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(String, String)> {
        let mut headers = vec![("anthropic-version".to_owned(), API_VERSION.to_owned())];
        if let Some(key) = config.api_key.as_ref().filter(|k| !k.is_empty()) {
            headers.push(("x-api-key".to_owned(), key.expose().to_owned()));
        }
        headers
    }

    fn body(
        &self,
        _config: &ProviderConfig,
        model: &str,
        request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError> {
        Ok(request::body(model, request))
    }

    fn decoder(&self, config: &ProviderConfig) -> Box<dyn Decoder> {
        Box::new(decode::MessagesDecoder::new(config.clone()))
    }
}
