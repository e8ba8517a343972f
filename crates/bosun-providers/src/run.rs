//! One call of `HostedModel::stream`: its attempts in order, each a request,
//! a status check and a read of the event stream under one timer
//! ([`Watch`]), and the retry decision between them.
//!
//! Retries happen only while nothing of the response has reached the
//! caller: once a delta was yielded, a failure ends the stream with its
//! error, so a retried attempt never splices its text into what the caller
//! received. Before each retry the caller is told (`ModelEvent::Retrying`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bosun_core::{ModelError, ModelEvent};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::classify::{classify_stream_error, millis, retry_after_header};
use crate::eventstream::Framing;
use crate::failure::{Failure, annotate, span, wait_too_long};
use crate::hosted::{HostedModel, decode_events};
use crate::network;
use crate::protocol::{Decoder, Refused};
use crate::retry;
use crate::sse::bytes;
use crate::watch::{Deadlines, Stage, Watch, deadline, passed};

/// Largest error body read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct Reading {
    body: ByteStream,
    parser: Framing,
    decoder: Box<dyn Decoder>,
    /// Replaced when the stream starts and after every chunk with a `data:`
    /// line; kept across keep-alives.
    watch: Watch,
    /// When this attempt's request was sent.
    sent: Instant,
    /// A `data:` line of this attempt arrived: the first byte is in.
    saw_data: bool,
    /// Body bytes read so far.
    received: usize,
}

enum Phase {
    Connect,
    Read(Box<Reading>),
    /// Waiting this long before the next attempt.
    Backoff(Duration),
    Finished,
}

enum Step {
    Continue,
    Stop,
}

/// One call of `stream`: its attempts, in order.
pub(crate) struct Run<'a> {
    model: &'a HostedModel,
    cancel: CancellationToken,
    url: String,
    body: Bytes,
    attempt: u32,
    phase: Phase,
    queue: VecDeque<Result<ModelEvent, ModelError>>,
    /// Whether content (text, reasoning, a tool call) reached the caller.
    yielded: bool,
    /// When the first attempt was sent: the request timeout counts from here.
    started: Option<Instant>,
    /// The decoder of a response being continued (`Decoder::continuation`:
    /// an Anthropic `pause_turn`), to read the next request's stream into.
    carried: Option<Box<dyn Decoder>>,
}

/// Whether an item is content the caller keeps: usage and retry notices are
/// bookkeeping, and an attempt that only gave those can still be retried.
fn is_content(item: &Result<ModelEvent, ModelError>) -> bool {
    !matches!(item, Ok(ModelEvent::Usage(_) | ModelEvent::Retrying { .. }))
}

impl<'a> Run<'a> {
    /// A run that sends `body`, or only reports why it could not be built.
    pub(crate) fn new(
        model: &'a HostedModel,
        cancel: CancellationToken,
        body: Result<Vec<u8>, ModelError>,
    ) -> Self {
        let url = crate::cloud::url(&model.config, &*model.protocol, &model.model);
        let mut run = Self {
            model,
            cancel,
            url,
            body: Bytes::new(),
            attempt: 1,
            phase: Phase::Finished,
            queue: VecDeque::new(),
            yielded: false,
            started: None,
            carried: None,
        };
        match body {
            Ok(body) => {
                run.body = Bytes::from(body);
                run.phase = Phase::Connect;
            }
            Err(error) => run.queue.push_back(Err(error)),
        }
        run
    }

    pub(crate) async fn step(mut self) -> Option<(Result<ModelEvent, ModelError>, Self)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if is_content(&item) {
                    self.yielded = true;
                }
                return Some((item, self));
            }
            let next = match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Connect => self.connect().await,
                Phase::Read(reading) => self.read(reading).await,
                Phase::Backoff(wait) => self.backoff(wait).await,
            };
            if let Step::Stop = next {
                return None;
            }
        }
    }

    /// Whether content of this run reached the caller or is queued for it.
    fn touched(&self) -> bool {
        self.yielded || self.queue.iter().any(is_content)
    }

    /// The timer for a wait of the attempt sent at `sent`.
    fn watch(&self, sent: Instant, saw_data: bool, finished: bool) -> Watch {
        let config = &*self.model.config;
        let request = match self.touched() {
            false => self.started.and_then(|start| deadline(start, config.request_timeout)),
            true => None,
        };
        let first_byte = match saw_data {
            false => deadline(sent, config.first_byte_timeout),
            true => None,
        };
        Watch::arm(config, Deadlines { request, first_byte, finished })
    }

    async fn connect(&mut self) -> Step {
        let model = self.model;
        let config = &*model.config;
        // Bedrock streams AWS's binary event stream, and says so when asked.
        let accept = match config.api {
            crate::config::Api::BedrockConverse => "application/vnd.amazon.eventstream",
            _ => "text/event-stream",
        };
        let mut builder =
            model.client.post(&self.url).header("content-type", "application/json").header("accept", accept);
        for (name, value) in
            crate::cloud::headers(config, &*model.protocol).into_iter().chain(config.headers.iter().cloned())
        {
            builder = builder.header(name, value);
        }
        if let (Some(source), crate::cloud::Cloud::Bedrock { region }) = (&config.aws, &config.cloud) {
            // Signed per attempt: each has its own `x-amz-date`, and keys
            // that expire are fetched again. The fetch is bounded by its own
            // source's timeouts, and a failed one is retried as classified.
            let credentials = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Step::Stop,
                credentials = source.credentials() => credentials,
            };
            let credentials = match credentials {
                Ok(credentials) => credentials,
                Err(error) => return self.fail(Failure::decoded(config, error)).await,
            };
            let signed = [("content-type".to_owned(), "application/json".to_owned())];
            let time = config.sleeper.system_time();
            match crate::cloud::aws::sign(
                &credentials,
                crate::cloud::aws::SERVICE,
                region,
                &self.url,
                &signed,
                &self.body,
                time,
            ) {
                Ok(headers) => {
                    for (name, value) in headers {
                        builder = builder.header(name, value);
                    }
                }
                Err(error) => return self.fail(Failure::fatal(error)).await,
            }
        }
        let sent = config.sleeper.now();
        self.started.get_or_insert(sent);
        let mut watch = self.watch(sent, false, false);
        if let Some(source) = &config.token {
            // The token is part of this attempt: its fetch runs under the
            // attempt's timer, and a failed fetch is retried as classified.
            let token = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Step::Stop,
                token = source.token() => token,
                () = &mut watch.sleep => {
                    return self.fail(passed(config, watch.limit, Stage::Headers, self.attempt)).await;
                }
            };
            match token {
                Ok(token) => builder = builder.bearer_auth(token.expose()),
                Err(error) => return self.fail(Failure::decoded(config, error)).await,
            }
        }
        let response = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Step::Stop,
            response = builder.body(self.body.clone()).send() => response,
            () = &mut watch.sleep => {
                return self.fail(passed(config, watch.limit, Stage::Headers, self.attempt)).await;
            }
        };
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                let (what, reason) = network::describe(&error, &self.url);
                return self.fail(Failure::network(config, &what, reason, true)).await;
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after_header(response.headers(), config.sleeper.system_time());
            let headers = response.headers().clone();
            // The status says most: a body that stalls is classified as far
            // as it came once the wait for the response is over.
            let Some(body) = error_body(&self.cancel, response, &mut watch).await else { return Step::Stop };
            let refused = Refused { status: status.as_u16(), headers: &headers, retry_after, body: &body };
            let failure = model.protocol.refusal(&refused, config);
            return self.fail(failure).await;
        }
        // A success that is not an event stream (a proxy's page, a broken
        // server) is a protocol error, not an empty stream to retry.
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_lowercase();
        // Bedrock's binary stream is `application/vnd.amazon.eventstream`.
        if !content_type.is_empty()
            && !content_type.contains("event-stream")
            && !content_type.contains("eventstream")
        {
            let Some(body) = error_body(&self.cancel, response, &mut watch).await else { return Step::Stop };
            let failure = match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(value) if value.get("error").is_some() => {
                    Failure::from_event(config, classify_stream_error(&value, config), &body)
                }
                _ => {
                    let head: String = body.chars().take(200).collect();
                    Failure::fatal(ModelError::Protocol(format!(
                        "{}: expected an event stream, got `{content_type}`: {head}",
                        config.name
                    )))
                }
            };
            return self.fail(failure).await;
        }
        self.phase = Phase::Read(Box::new(Reading {
            body: Box::pin(response.bytes_stream()),
            parser: Framing::for_config(config),
            decoder: self.carried.take().unwrap_or_else(|| model.protocol.decoder(config)),
            watch: self.watch(sent, false, false),
            sent,
            saw_data: false,
            received: 0,
        }));
        Step::Continue
    }

    async fn read(&mut self, mut reading: Box<Reading>) -> Step {
        let config = &*self.model.config;
        // Data already received wins over a timer that ended meanwhile, as
        // it would have had it been read a moment sooner.
        let chunk = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Step::Stop,
            chunk = reading.body.next() => Some(chunk),
            () = &mut reading.watch.sleep => None,
        };
        let mut events = Vec::new();
        let mut cut = false;
        let mut broken = None;
        let ended = match chunk {
            None if reading.decoder.finished() => return self.complete(reading).await,
            None => return self.fail(passed(config, reading.watch.limit, Stage::Body, self.attempt)).await,
            Some(Some(Err(error))) => {
                let (what, reason) = network::describe(&error, &self.url);
                return self.fail(Failure::network(config, &what, reason, true)).await;
            }
            Some(Some(Ok(chunk))) => {
                reading.received = reading.received.saturating_add(chunk.len());
                if reading.received > config.limits.response {
                    broken = Some(format!(
                        "the response exceeded the {} response cap ({} bytes so far)",
                        bytes(config.limits.response),
                        reading.received
                    ));
                } else if let Err(error) = reading.parser.push(&chunk, &mut events) {
                    broken = Some(error);
                }
                false
            }
            Some(None) => {
                match reading.parser.finish(&mut events) {
                    Ok(was_cut) => cut = was_cut,
                    Err(error) => broken = Some(error),
                }
                true
            }
        };
        let mut out = Vec::new();
        let decoded = decode_events(config, reading.decoder.as_mut(), &events, cut, &mut out);
        self.queue.extend(out.into_iter().map(Ok));
        if let Err(failure) = decoded {
            return self.fail(failure).await;
        }
        if let Some(broken) = broken {
            let error = ModelError::Protocol(format!("{}: {broken}", config.name));
            return self.fail(Failure::fatal(error)).await;
        }
        if ended || reading.decoder.done() {
            return self.complete(reading).await;
        }
        if reading.parser.take_saw_data() {
            reading.saw_data = true;
            reading.watch = self.watch(reading.sent, true, reading.decoder.finished());
        }
        self.phase = Phase::Read(reading);
        Step::Continue
    }

    /// The stream is over (or its finish reason in and its grace past): the
    /// decoder's response, or its reason for having none.
    async fn complete(&mut self, mut reading: Box<Reading>) -> Step {
        // A response the API paused is continued by another request, read
        // into the same decoder, so the caller sees one response.
        match reading.decoder.continuation(&self.body) {
            Err(error) => return self.fail(Failure::decoded(&self.model.config, error)).await,
            Ok(Some(body)) => {
                self.body = Bytes::from(body);
                self.carried = Some(reading.decoder);
                self.phase = Phase::Connect;
                return Step::Continue;
            }
            Ok(None) => {}
        }
        match reading.decoder.finish() {
            Ok(response) => self.queue.push_back(Ok(ModelEvent::Done(response))),
            Err(error) => return self.fail(Failure::decoded(&self.model.config, error)).await,
        }
        Step::Continue
    }

    /// Schedules another attempt for a retryable failure while nothing
    /// reached the caller, attempts remain, and the wait fits within the
    /// limits; otherwise ends the stream with the error.
    async fn fail(&mut self, failure: Failure) -> Step {
        let config = &*self.model.config;
        let policy = config.retry;
        let Failure { error, retryable, reason } = failure;
        if !retryable || self.touched() {
            return self.give_up(error);
        }
        let hint = match &error {
            ModelError::RateLimited { retry_after_ms: Some(ms), .. } => Some(Duration::from_millis(*ms)),
            _ => None,
        };
        if let Some(hint) = hint
            && hint > config.max_retry_after
        {
            return self.give_up(wait_too_long(error, hint, config.max_retry_after));
        }
        if self.attempt >= policy.max_attempts {
            return self.give_up(error);
        }
        let wait = retry::delay(&policy, self.attempt, hint);
        let deadline = self.started.and_then(|start| deadline(start, config.request_timeout));
        let now = config.sleeper.now();
        if deadline.is_some_and(|deadline| now.checked_add(wait).is_none_or(|then| then >= deadline)) {
            let note = format!(
                " (not retried: waiting {} more would pass the {} request timeout)",
                span(wait),
                span(config.request_timeout)
            );
            return self.give_up(annotate(error, &note));
        }
        tracing::warn!(provider = %config.name, attempt = self.attempt, ?wait, %error, "retrying");
        self.attempt += 1;
        self.queue.push_back(Ok(ModelEvent::Retrying {
            attempt: self.attempt,
            wait_ms: millis(wait),
            reason,
        }));
        self.phase = Phase::Backoff(wait);
        Step::Continue
    }

    fn give_up(&mut self, error: ModelError) -> Step {
        self.queue.push_back(Err(error));
        self.phase = Phase::Finished;
        Step::Continue
    }

    async fn backoff(&mut self, wait: Duration) -> Step {
        let sleeper = &self.model.config.sleeper;
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Step::Stop,
            () = sleeper.sleep(wait) => {}
        }
        self.phase = Phase::Connect;
        Step::Continue
    }
}

/// Reads at most [`MAX_ERROR_BODY`] of an error response into `body`, so a
/// caller that stops waiting keeps what came.
/// The start of a body that is not a stream (an error, a proxy's page),
/// read until the attempt's deadline; `None` when the turn is cancelled
/// meanwhile. (A free function: a `&Run` would make the step future not
/// `Send`.)
async fn error_body(
    cancel: &CancellationToken,
    response: reqwest::Response,
    watch: &mut Watch,
) -> Option<String> {
    let mut body = Vec::new();
    tokio::select! {
        biased;
        () = cancel.cancelled() => return None,
        () = read_limited(response, &mut body) => {}
        () = &mut watch.sleep => {}
    }
    Some(String::from_utf8_lossy(&body).into_owned())
}

async fn read_limited(response: reqwest::Response, body: &mut Vec<u8>) {
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
}
