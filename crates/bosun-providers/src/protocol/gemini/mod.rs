//! Google Gemini (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`).
//!
//! The key travels in the `x-goog-api-key` header, never in the URL (a key
//! in a query string ends up in proxy and server logs). The body is built in
//! [`request`], the stream decoded in [`decode`].
//!
//! Thought signatures are the one piece of state Gemini needs back: a
//! `thoughtSignature` on a `functionCall` part is kept in that call's
//! provider data (`{"thoughtSignature": …}`, tagged `gemini`) and sent again
//! on the same part of the next request; a signature on any other part
//! (text, thought, an empty part, a part of another kind) becomes a
//! `Reasoning` part's provider data and goes back in the same place (see
//! [`decode`]).

mod decode;
mod request;

use bosun_core::{Capabilities, ModelError, ModelRequest};

use super::{Decoder, Protocol};
use crate::config::{Api, ProviderConfig};

/// The header carrying the key.
const KEY_HEADER: &str = "x-goog-api-key";

/// The key under which a thought signature is stored in provider data.
const SIGNATURE: &str = "thoughtSignature";

/// The tag of provider data this API produced and accepts back.
fn tag() -> &'static str {
    Api::Gemini.tag()
}

/// The Gemini protocol.
pub(crate) struct Gemini;

impl Protocol for Gemini {
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }

    fn url(&self, config: &ProviderConfig, model: &str) -> String {
        // `models/gemini-…` (the form the API lists models in) names the same model.
        let model = model.trim();
        let model = model.strip_prefix("models/").unwrap_or(model);
        format!("{}/v1beta/models/{model}:streamGenerateContent?alt=sse", config.base_url)
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(String, String)> {
        let user_sets_key = config.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case(KEY_HEADER));
        match config.api_key.as_ref().map(|k| k.expose()) {
            Some(key) if !key.is_empty() && !user_sets_key => vec![(KEY_HEADER.to_owned(), key.to_owned())],
            _ => Vec::new(),
        }
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
        Box::new(decode::GeminiDecoder::new(config.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::ApiKey;

    fn config() -> ProviderConfig {
        ProviderConfig::new("gemini", Api::Gemini, "https://generativelanguage.googleapis.com/")
    }

    #[test]
    fn the_url_names_the_model_and_never_the_key() {
        let config = config().with_key(ApiKey::new("AIza-secret"));
        let url = Gemini.url(&config, "models/gemini-2.5-flash");
        let root = "https://generativelanguage.googleapis.com";
        assert_eq!(url, format!("{root}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"));
        assert!(!url.contains("AIza-secret"));
    }

    #[test]
    fn the_key_header_is_sent_once_and_only_when_set() {
        assert!(Gemini.headers(&config()).is_empty());
        assert!(Gemini.headers(&config().with_key(ApiKey::new("  "))).is_empty());
        let keyed = config().with_key(ApiKey::new("k1"));
        assert_eq!(Gemini.headers(&keyed), vec![("x-goog-api-key".to_owned(), "k1".to_owned())]);
        assert!(Gemini.headers(&keyed.with_header("X-Goog-Api-Key", "k2")).is_empty());
    }
}
