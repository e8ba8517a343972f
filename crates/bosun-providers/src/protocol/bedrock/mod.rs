//! Amazon Bedrock's Converse API (`POST
//! https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse-stream`):
//! one request and stream shape for every model family on Bedrock. The
//! response is AWS's binary event stream, not SSE (read by
//! `eventstream.rs`); requests are signed with SigV4 per attempt
//! (`cloud::aws`) or carry a Bedrock API key as a bearer token.

mod decode;
mod errors;
mod request;

use bosun_core::{Capabilities, ModelError, ModelRequest};

use super::{Decoder, Protocol};
use crate::config::{Api, ProviderConfig};

fn tag() -> &'static str {
    Api::BedrockConverse.tag()
}

/// The runtime endpoint of `region`.
pub fn endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// The Converse protocol.
pub(crate) struct Converse;

impl Protocol for Converse {
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn url(&self, config: &ProviderConfig, model: &str) -> String {
        let base = config.base_url.trim_end_matches('/');
        format!("{base}/model/{}/converse-stream", crate::cloud::path_segment(model.trim()))
    }

    fn headers(&self, _config: &ProviderConfig) -> Vec<(String, String)> {
        Vec::new()
    }

    fn body(
        &self,
        _config: &ProviderConfig,
        _model: &str,
        request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError> {
        Ok(request::body(request))
    }

    fn decoder(&self, config: &ProviderConfig) -> Box<dyn Decoder> {
        Box::new(decode::ConverseDecoder::new(config.clone()))
    }

    fn refusal(&self, refused: &super::Refused<'_>, config: &ProviderConfig) -> crate::failure::Failure {
        errors::refusal(refused, config)
    }
}

#[cfg(test)]
mod tests;
