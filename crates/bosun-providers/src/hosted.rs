//! [`HostedModel`]: a `bosun_core::Model` over HTTP for any of the four
//! protocols. One transport for all (`run.rs`): the request, status
//! classification, retries with backoff, the timers over each wait
//! (`watch.rs`), the caps on a response and SSE decoding.

use std::sync::Arc;
use std::time::Duration;

use bosun_core::{Capabilities, Model, ModelError, ModelEvent, ModelRequest, ModelStream, Support};
use tokio_util::sync::CancellationToken;

use crate::config::ProviderConfig;
use crate::failure::Failure;
use crate::protocol::{self, Decoder, Protocol};
use crate::run::Run;
use crate::sse::SseEvent;

/// Why a hosted model could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider needs a key and none was given.
    #[error("{provider} needs an API key: set {env}")]
    MissingKey {
        /// The provider.
        provider: String,
        /// The variable the key conventionally comes from.
        env: String,
    },
    /// No model name.
    #[error("no model name was given for {0}")]
    NoModel(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// A model served over HTTP.
pub struct HostedModel {
    pub(crate) config: Arc<ProviderConfig>,
    pub(crate) model: String,
    pub(crate) client: reqwest::Client,
    pub(crate) protocol: Box<dyn Protocol>,
    /// Whether this model takes images, when its caller knows better than
    /// the protocol (the model table: a Chat Completions server may or
    /// may not).
    images: Option<Support>,
}

impl std::fmt::Debug for HostedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedModel").field("config", &self.config).field("model", &self.model).finish()
    }
}

impl HostedModel {
    /// A model named `model` behind `config`. Fails when the provider needs a
    /// key (it names a key variable) and none is set.
    pub fn new(config: ProviderConfig, model: impl Into<String>) -> Result<Self, ProviderError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(ProviderError::NoModel(config.name.clone()));
        }
        if let Some(env) = &config.key_env
            && config.api_key.as_ref().is_none_or(|k| k.is_empty())
        {
            return Err(ProviderError::MissingKey { provider: config.name.clone(), env: env.clone() });
        }
        crate::tls::install_default_provider();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30));
        if config.base_url.starts_with("http://") {
            // A plain-HTTP server (a local one, mostly) needs no certificate
            // roots, and loading them is a few milliseconds of start-up. A
            // redirect to https would fail verification, with a clear error.
            builder = builder.tls_certs_only([]);
        }
        let client = builder.build().map_err(|e| ProviderError::Client(e.to_string()))?;
        let protocol = protocol::for_api(config.api);
        Ok(Self { config: Arc::new(config), model, client, protocol, images: None })
    }

    /// The model with what is known of its image input (from the model
    /// table or the user's config), over what its protocol says.
    pub fn with_images(mut self, images: Support) -> Self {
        self.images = Some(images);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }
}

impl Model for HostedModel {
    fn capabilities(&self) -> Capabilities {
        let mut capabilities = self.protocol.capabilities();
        if let Some(images) = self.images {
            capabilities.images = images;
        }
        capabilities
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        let body = self.protocol.body(&self.config, &self.model, &request).and_then(|b| {
            serde_json::to_vec(&crate::cloud::envelope(&self.config, b))
                .map_err(|e| ModelError::Other(format!("cannot encode the request: {e}")))
        });
        Box::pin(futures_util::stream::unfold(Run::new(self, cancel, body), Run::step))
    }
}

/// An event the stream ended in the middle of fails as a network error (the
/// connection broke), not as the protocol error its half JSON would give.
fn cut_short(config: &ProviderConfig, was_cut: bool, error: ModelError) -> ModelError {
    if was_cut && matches!(error, ModelError::Protocol(_)) {
        return ModelError::Network(format!("{}: the stream ended in the middle of an event", config.name));
    }
    error
}

/// Decodes a whole recorded stream without HTTP, as the transport would:
/// for tests and tools that replay captures. Returns every event, ending
/// with `Done` or an error.
pub fn decode_recorded(config: &ProviderConfig, chunks: &[&[u8]]) -> Vec<Result<ModelEvent, ModelError>> {
    let mut decoder = protocol::for_api(config.api).decoder(config);
    let mut parser = crate::eventstream::Framing::for_config(config);
    let mut events: Vec<SseEvent> = Vec::new();
    let mut parsed = chunks.iter().try_for_each(|chunk| parser.push(chunk, &mut events));
    let cut = match parsed {
        Ok(()) => parser.finish(&mut events).unwrap_or_else(|error| {
            parsed = Err(error);
            false
        }),
        Err(_) => false,
    };
    let mut out = Vec::new();
    let decoded = decode_events(config, decoder.as_mut(), &events, cut, &mut out);
    let mut results: Vec<_> = out.into_iter().map(Ok).collect();
    match (decoded, parsed) {
        (Err(failure), _) => results.push(Err(failure.error)),
        (Ok(()), Err(error)) => results.push(Err(ModelError::Protocol(format!("{}: {error}", config.name)))),
        (Ok(()), Ok(())) => results.push(decoder.finish().map(ModelEvent::Done)),
    }
    results
}

/// Feeds `events` to the decoder until one fails or the API's terminal event
/// arrives; what the decoder produced goes to `out` either way. When the
/// stream ended in the middle of the last event (`cut`), its failure is the
/// broken connection's, not the half JSON's.
pub(crate) fn decode_events(
    config: &ProviderConfig,
    decoder: &mut dyn Decoder,
    events: &[SseEvent],
    cut: bool,
    out: &mut Vec<ModelEvent>,
) -> Result<(), Failure> {
    for (index, event) in events.iter().enumerate() {
        if let Err(error) = decoder.event(event, out) {
            let error = cut_short(config, cut && index + 1 == events.len(), error);
            return Err(Failure::from_event(config, error, &event.data));
        }
        if decoder.done() {
            break;
        }
    }
    Ok(())
}
