//! [`HostedModel`]: a `bosun_core::Model` over HTTP for any of the four
//! protocols. One transport for all: the request, status classification,
//! retries with backoff, the idle-stream watchdog and SSE decoding.
//!
//! Retries happen only while nothing of the attempt has reached the session:
//! once a delta was yielded, a failure ends the stream with an error, so a
//! retried attempt never splices its text into what the session received.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bosun_core::{Capabilities, Model, ModelError, ModelEvent, ModelRequest, ModelStream};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::classify::{classify_http, is_retryable, retry_after_header};
use crate::config::ProviderConfig;
use crate::protocol::{self, Decoder, Protocol};
use crate::retry;
use crate::sse::{SseEvent, SseParser};

/// Largest error body read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

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
    config: Arc<ProviderConfig>,
    model: String,
    client: reqwest::Client,
    protocol: Box<dyn Protocol>,
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
        Ok(Self { config: Arc::new(config), model, client, protocol })
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
        self.protocol.capabilities()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        let body = self.protocol.body(&self.config, &self.model, &request).and_then(|b| {
            serde_json::to_vec(&b).map_err(|e| ModelError::Other(format!("cannot encode the request: {e}")))
        });
        let mut run = Run {
            model: self,
            cancel,
            body: Bytes::new(),
            attempt: 1,
            phase: Phase::Finished,
            queue: VecDeque::new(),
            yielded: false,
        };
        match body {
            Ok(body) => {
                run.body = Bytes::from(body);
                run.phase = Phase::Connect;
            }
            Err(error) => run.queue.push_back(Err(error)),
        }
        Box::pin(futures_util::stream::unfold(run, Run::step))
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct Reading {
    body: ByteStream,
    parser: SseParser,
    decoder: Box<dyn Decoder>,
    /// Ends `idle_timeout` after the stream started or its last `data:`
    /// line: replaced on each, kept across keep-alives.
    watchdog: Pin<Box<dyn Future<Output = ()> + Send>>,
}

enum Phase {
    Connect,
    Read(Box<Reading>),
    Finished,
}

/// One call of `stream`: its attempts, in order.
struct Run<'a> {
    model: &'a HostedModel,
    cancel: CancellationToken,
    body: Bytes,
    attempt: u32,
    phase: Phase,
    queue: VecDeque<Result<ModelEvent, ModelError>>,
    /// Whether content (text, reasoning, a tool call) of this attempt
    /// reached the caller.
    yielded: bool,
}

enum Step {
    Continue,
    Stop,
}

impl<'a> Run<'a> {
    async fn step(mut self) -> Option<(Result<ModelEvent, ModelError>, Self)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                // Usage is bookkeeping, not content: an attempt that only
                // reported usage can still be retried without splicing.
                if !matches!(item, Ok(ModelEvent::Usage(_))) {
                    self.yielded = true;
                }
                return Some((item, self));
            }
            let next = match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Connect => self.connect().await,
                Phase::Read(reading) => self.read(reading).await,
            };
            if let Step::Stop = next {
                return None;
            }
        }
    }

    async fn connect(&mut self) -> Step {
        let model = self.model;
        let config = &*model.config;
        let mut builder = model
            .client
            .post(model.protocol.url(config, &model.model))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (name, value) in model.protocol.headers(config).into_iter().chain(config.headers.iter().cloned())
        {
            builder = builder.header(name, value);
        }
        let sent = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Step::Stop,
            sent = builder.body(self.body.clone()).send() => Some(sent),
            () = config.sleeper.sleep(config.idle_timeout) => None,
        };
        let response = match sent {
            None => {
                let stalled =
                    format!("no response within {}: the connection stalled", span(config.idle_timeout));
                return self.fail(network(config, &stalled)).await;
            }
            Some(Err(error)) => return self.fail(network(config, &error.to_string())).await,
            Some(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after_header(response.headers());
            let body = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Step::Stop,
                body = read_limited(response) => body,
            };
            return self.fail(classify_http(status.as_u16(), retry_after, &body, config)).await;
        }
        // A success that is not an event stream (a proxy's page, a broken
        // server) is a protocol error, not an empty stream to retry.
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_lowercase();
        if !content_type.is_empty() && !content_type.contains("event-stream") {
            let body = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Step::Stop,
                body = read_limited(response) => body,
            };
            let error = match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(value) if value.get("error").is_some() => {
                    crate::classify::classify_stream_error(&value, config)
                }
                _ => {
                    let head: String = body.chars().take(200).collect();
                    ModelError::Protocol(format!(
                        "{}: expected an event stream, got `{content_type}`: {head}",
                        config.name
                    ))
                }
            };
            return self.fail(error).await;
        }
        self.phase = Phase::Read(Box::new(Reading {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(),
            decoder: model.protocol.decoder(config),
            watchdog: config.sleeper.sleep(config.idle_timeout),
        }));
        Step::Continue
    }

    async fn read(&mut self, mut reading: Box<Reading>) -> Step {
        let config = &*self.model.config;
        // Data already received wins over a watchdog that ended meanwhile,
        // as it would have had it been read a moment sooner.
        let chunk = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Step::Stop,
            chunk = reading.body.next() => Some(chunk),
            () = &mut reading.watchdog => None,
        };
        let mut events = Vec::new();
        let mut cut = false;
        let ended = match chunk {
            None => {
                let stalled = format!("no data for {}: the stream stalled", span(config.idle_timeout));
                return self.fail(network(config, &stalled)).await;
            }
            Some(Some(Err(error))) => return self.fail(network(config, &error.to_string())).await,
            Some(Some(Ok(bytes))) => {
                reading.parser.push(&bytes, &mut events);
                if reading.parser.take_saw_data() {
                    reading.watchdog = config.sleeper.sleep(config.idle_timeout);
                }
                false
            }
            Some(None) => {
                cut = reading.parser.finish(&mut events);
                true
            }
        };
        let mut out = Vec::new();
        let decoded = decode_events(config, reading.decoder.as_mut(), &events, cut, &mut out);
        self.queue.extend(out.into_iter().map(Ok));
        if let Err(error) = decoded {
            return self.fail(error).await;
        }
        if ended || reading.decoder.done() {
            match reading.decoder.finish() {
                Ok(response) => self.queue.push_back(Ok(ModelEvent::Done(response))),
                Err(error) => return self.fail(error).await,
            }
            return Step::Continue;
        }
        self.phase = Phase::Read(reading);
        Step::Continue
    }

    /// Retries a retryable failure while nothing reached the session;
    /// otherwise ends the stream with the error.
    async fn fail(&mut self, error: ModelError) -> Step {
        let policy = self.model.config.retry;
        let untouched = !self.yielded && self.queue.is_empty();
        if untouched && is_retryable(&error) && self.attempt < policy.max_attempts {
            let hint = match &error {
                ModelError::RateLimited { retry_after_ms: Some(ms), .. } => Some(Duration::from_millis(*ms)),
                _ => None,
            };
            let wait = retry::delay(&policy, self.attempt, hint);
            tracing::warn!(provider = %self.model.config.name, attempt = self.attempt, ?wait, %error, "retrying");
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Step::Stop,
                () = self.model.config.sleeper.sleep(wait) => {}
            }
            self.attempt += 1;
            self.phase = Phase::Connect;
            return Step::Continue;
        }
        self.queue.push_back(Err(error));
        self.phase = Phase::Finished;
        Step::Continue
    }
}

/// An event the stream ended in the middle of fails as a network error (the
/// connection broke), not as the protocol error its half JSON would give.
fn cut_short(config: &ProviderConfig, was_cut: bool, error: ModelError) -> ModelError {
    if was_cut && matches!(error, ModelError::Protocol(_)) {
        return network(config, "the stream ended in the middle of an event");
    }
    error
}

/// `300 s`, `0.1 s`.
fn span(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

fn network(config: &ProviderConfig, what: &str) -> ModelError {
    ModelError::Network(format!("{}: {what}", config.name))
}

async fn read_limited(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Decodes a whole recorded stream without HTTP, as the transport would:
/// for tests and tools that replay captures. Returns every event, ending
/// with `Done` or an error.
pub fn decode_recorded(config: &ProviderConfig, chunks: &[&[u8]]) -> Vec<Result<ModelEvent, ModelError>> {
    let mut decoder = protocol::for_api(config.api).decoder(config);
    let mut parser = SseParser::new();
    let mut events: Vec<SseEvent> = Vec::new();
    for chunk in chunks {
        parser.push(chunk, &mut events);
    }
    let cut = parser.finish(&mut events);
    let mut out = Vec::new();
    let decoded = decode_events(config, decoder.as_mut(), &events, cut, &mut out);
    let mut results: Vec<_> = out.into_iter().map(Ok).collect();
    match decoded {
        Ok(()) => results.push(decoder.finish().map(ModelEvent::Done)),
        Err(error) => results.push(Err(error)),
    }
    results
}

/// Feeds `events` to the decoder until one fails or the API's terminal event
/// arrives; what the decoder produced goes to `out` either way. When the
/// stream ended in the middle of the last event (`cut`), its failure is the
/// broken connection's, not the half JSON's.
fn decode_events(
    config: &ProviderConfig,
    decoder: &mut dyn Decoder,
    events: &[SseEvent],
    cut: bool,
    out: &mut Vec<ModelEvent>,
) -> Result<(), ModelError> {
    for (index, event) in events.iter().enumerate() {
        if let Err(error) = decoder.event(event, out) {
            return Err(cut_short(config, cut && index + 1 == events.len(), error));
        }
        if decoder.done() {
            break;
        }
    }
    Ok(())
}
