//! placeholder: the Gemini protocol (being written).

use bosun_core::{Capabilities, ModelError, ModelEvent, ModelRequest, ModelResponse};

use super::{Decoder, Protocol};
use crate::config::ProviderConfig;
use crate::sse::SseEvent;

pub(crate) struct Gemini;

impl Protocol for Gemini {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    fn url(&self, config: &ProviderConfig, _model: &str) -> String {
        config.base_url.clone()
    }
    fn headers(&self, _config: &ProviderConfig) -> Vec<(String, String)> {
        Vec::new()
    }
    fn body(
        &self,
        _config: &ProviderConfig,
        _model: &str,
        _request: &ModelRequest<'_>,
    ) -> Result<serde_json::Value, ModelError> {
        Err(ModelError::Other("not yet".into()))
    }
    fn decoder(&self, _config: &ProviderConfig) -> Box<dyn Decoder> {
        Box::new(Nothing)
    }
}

struct Nothing;

impl Decoder for Nothing {
    fn event(&mut self, _event: &SseEvent, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        Ok(())
    }
    fn done(&self) -> bool {
        true
    }
    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Other("not yet".into()))
    }
}
