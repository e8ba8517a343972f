//! OpenAI Responses API (`POST {base_url}/responses`, streamed).
//!
//! The request side (`request.rs`) turns the conversation into Responses
//! input items: user messages, assistant text, reasoning items replayed with
//! their `encrypted_content` or their raw `reasoning_text` content (only
//! reasoning this API produced), function calls and their outputs. The
//! decoding side (`decode.rs`) places the stream's output items by
//! `output_index`, matches the final output to them by item id, and ends at
//! `response.completed`, `response.incomplete` or `response.failed`.
//!
//! Requests are stateless (`store: false`, no `previous_response_id`): the
//! whole history is sent each time, so reasoning can only be carried across
//! turns as encrypted content (asked for whenever thinking is on) or, from
//! servers that show it, as raw reasoning text.

mod decode;
mod request;

use bosun_core::{Capabilities, ModelError, ModelRequest};

use super::{Decoder, Protocol};
use crate::config::{Api, ProviderConfig};

/// The tag on provider data this API produced (reasoning items, call item
/// ids): `openai-responses`.
fn tag() -> &'static str {
    Api::OpenAiResponses.tag()
}

/// The OpenAI Responses protocol.
pub(crate) struct Responses;

impl Protocol for Responses {
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn url(&self, config: &ProviderConfig, _model: &str) -> String {
        format!("{}/responses", config.base_url)
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(String, String)> {
        match config.api_key.as_ref().map(|k| k.expose()) {
            Some(key) if !key.is_empty() => vec![("authorization".to_owned(), format!("Bearer {key}"))],
            _ => Vec::new(),
        }
    }

    fn body(
        &self,
        _config: &ProviderConfig,
        model: &str,
        request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError> {
        request::body(model, request)
    }

    fn decoder(&self, config: &ProviderConfig) -> Box<dyn Decoder> {
        Box::new(decode::ResponsesDecoder::new(config.clone()))
    }
}
