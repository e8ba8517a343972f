//! Faults a real server, proxy or network produces, each on all four wire
//! APIs (a loop over the protocols): stalls before any content (headers
//! then silence, keep-alives only, a connection accepted and never
//! answered), a stall after the finish reason, every retryable status and
//! the ones that are not, every form of `Retry-After`, connections refused
//! and reset, in-stream server errors, a stream cut in the middle of the
//! answer, oversized lines and responses, and the bound on a whole request.
//!
//! Against a real local HTTP server (`tests/support`), on a `ManualClock`:
//! every wait is recorded and ends only when the test moves the clock, once
//! the server has seen what the step needs. Each test asserts the attempts
//! made (the server counts requests), the waits asked for, the `Retrying`
//! notices, the error's class and message, and what the response holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use bosun_core::{
    GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, StopReason, Usage,
};
use bosun_providers::{Api, HostedModel, ProviderConfig, RetryPolicy, StreamLimits};
use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{Canned, Gate, ManualClock, Step, TestServer, Wait, WaitState, scripted};
use tokio_util::sync::CancellationToken;

const APIS: [Api; 4] = [Api::OpenAiChat, Api::AnthropicMessages, Api::OpenAiResponses, Api::Gemini];

/// A hang guard, not a measure: every wait here is on the manual clock.
const NO_HANG: Duration = Duration::from_secs(30);

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

const FIRST_BYTE: Duration = Duration::from_secs(5);

// ------------------------------------------------------------ the four wires

/// One SSE event.
fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The events an API streams before its first content: none for Chat
/// Completions and Gemini, the message and its text block for Anthropic,
/// the message item for Responses.
fn preamble(api: Api) -> String {
    match api {
        Api::AnthropicMessages => {
            let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "m", "stop_reason": null,
                "usage": {"input_tokens": 3, "output_tokens": 1}}});
            let block = json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}});
            sse(Some("message_start"), &start) + &sse(Some("content_block_start"), &block)
        }
        Api::OpenAiResponses => {
            let added = json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}});
            sse(Some("response.output_item.added"), &added)
        }
        _ => String::new(),
    }
}

/// One text delta.
fn text(api: Api, delta: &str) -> String {
    match api {
        Api::OpenAiChat => sse(None, &json!({"choices": [{"index": 0, "delta": {"content": delta}}]})),
        Api::AnthropicMessages => sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": delta}}),
        ),
        Api::OpenAiResponses => sse(
            Some("response.output_text.delta"),
            &json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                "content_index": 0, "delta": delta}),
        ),
        _ => sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": delta}]}, "index": 0}]}),
        ),
    }
}

/// The finish reason and the usage (3 in, 2 out), without the terminal
/// event of the APIs that have one after them.
fn finish(api: Api) -> String {
    match api {
        Api::OpenAiChat => {
            sse(None, &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
                + &sse(None, &json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}))
        }
        Api::AnthropicMessages => {
            sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0}))
                + &sse(
                    Some("message_delta"),
                    &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": 2}}),
                )
        }
        // Responses has no finish before its terminal event: this is it.
        Api::OpenAiResponses => sse(
            Some("response.completed"),
            &json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                "output": [], "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        ),
        _ => sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}}),
        ),
    }
}

/// The terminal event after the finish, where the API has one.
fn end(api: Api) -> String {
    match api {
        Api::OpenAiChat => "data: [DONE]\n\n".to_owned(),
        Api::AnthropicMessages => sse(Some("message_stop"), &json!({"type": "message_stop"})),
        _ => String::new(),
    }
}

/// A whole answer: "Hel" + "lo", stop, 3 + 2 tokens.
fn good(api: Api) -> Canned {
    Canned::sse(preamble(api) + &text(api, "Hel") + &text(api, "lo") + &finish(api) + &end(api))
}

/// An error event each API streams for a passing failure of its own.
fn transient_error(api: Api) -> String {
    match api {
        Api::OpenAiChat => sse(
            None,
            &json!({"error": {"message": "The server had an error while processing your request.",
                "type": "server_error", "code": null}}),
        ),
        Api::AnthropicMessages => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Api::OpenAiResponses => sse(
            Some("response.failed"),
            &json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                "error": {"code": "server_error", "message": "The server had an error."}}}),
        ),
        _ => sse(
            None,
            &json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}),
        ),
    }
}

/// The short reason the retry notice gives for [`transient_error`].
fn transient_reason(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat => "in-stream server_error: The server had an error while processing your request.",
        Api::AnthropicMessages => "in-stream overloaded_error: Overloaded",
        Api::OpenAiResponses => "in-stream server_error: The server had an error.",
        _ => "in-stream 500: An internal error has occurred.",
    }
}

/// An error event that another attempt would meet again.
fn invalid_error(api: Api) -> String {
    match api {
        Api::OpenAiChat => {
            sse(None, &json!({"error": {"message": "Invalid tool schema.", "type": "invalid_request_error"}}))
        }
        Api::AnthropicMessages => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Invalid tool schema."}}),
        ),
        Api::OpenAiResponses => sse(
            Some("error"),
            &json!({"type": "error", "code": "invalid_prompt", "message": "Invalid tool schema."}),
        ),
        _ => sse(
            None,
            &json!({"error": {"code": 400, "message": "Invalid tool schema.", "status": "INVALID_ARGUMENT"}}),
        ),
    }
}

fn base(api: Api, url: &str) -> ProviderConfig {
    match api {
        Api::OpenAiChat => ProviderConfig::openai_compatible(format!("{url}/v1")),
        Api::OpenAiResponses => ProviderConfig::new("openai-responses", api, format!("{url}/v1")),
        Api::AnthropicMessages => ProviderConfig::new("anthropic", api, url),
        _ => ProviderConfig::new("gemini", api, url),
    }
}

/// The path each API posts to, as an error message prints it.
fn path(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat => "/v1/chat/completions",
        Api::OpenAiResponses => "/v1/responses",
        Api::AnthropicMessages => "/v1/messages",
        _ => "/v1beta/models/m:streamGenerateContent",
    }
}

/// Two attempts, a backoff of 0.8–1 s, a 5 s first-byte timeout, the
/// other limits at their defaults, all on `clock`.
fn config(api: Api, url: &str, clock: &ManualClock) -> ProviderConfig {
    base(api, url)
        .with_retry(
            RetryPolicy::default()
                .with_attempts(2)
                .with_delays(Duration::from_secs(1), Duration::from_secs(1)),
        )
        .with_first_byte_timeout(FIRST_BYTE)
        .with_sleeper(clock.clone())
}

// ------------------------------------------------------------------- running

/// Everything one request streamed.
#[derive(Debug)]
struct Outcome {
    events: Vec<ModelEvent>,
    result: Result<ModelResponse, ModelError>,
}

impl Outcome {
    fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The retry notices: (attempt, wait in ms, reason).
    fn retries(&self) -> Vec<(u32, u64, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Retrying { attempt, wait_ms, reason } => {
                    Some((*attempt, *wait_ms, reason.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn response(&self) -> &ModelResponse {
        self.result.as_ref().unwrap_or_else(|e| panic!("no response: {e}"))
    }

    fn error(&self) -> &ModelError {
        self.result.as_ref().err().unwrap_or_else(|| panic!("no error: {:?}", self.result))
    }
}

fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default())
}

async fn collect(model: &HostedModel) -> Outcome {
    let mut stream = model.stream(hello(), CancellationToken::new());
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Done(response)) => {
                assert!(stream.next().await.is_none(), "Done is the last item");
                return Outcome { events, result: Ok(response) };
            }
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "an error is the last item");
                return Outcome { events, result: Err(error) };
            }
        }
    }
    panic!("the stream ended with neither a response nor an error: {events:?}")
}

/// Serves `responses` for `api` and runs one request under `steps`.
async fn serve(
    api: Api,
    responses: Vec<Canned>,
    steps: &[Step],
    adjust: impl FnOnce(ProviderConfig) -> ProviderConfig,
) -> (Outcome, TestServer, ManualClock) {
    let server = TestServer::start(responses).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(adjust(config(api, &server.url, &clock)), "m").unwrap();
    let outcome = scripted(Some(&server), &clock, steps, collect(&model)).await;
    (outcome, server, clock)
}

fn name(api: Api) -> String {
    base(api, "http://x").name
}

fn durations(waits: &[Wait]) -> Vec<Duration> {
    waits.iter().map(|w| w.duration).collect()
}

/// A backoff of `RetryPolicy::with_delays(1 s, 1 s)`: 0.8 s to 1 s.
fn is_backoff(wait: &Wait) -> bool {
    (Duration::from_millis(800)..=Duration::from_secs(1)).contains(&wait.duration)
}

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap()
}

// ------------------------------------------------------ stalls before content

#[tokio::test]
async fn a_stall_before_any_content_fails_at_the_first_byte_timeout_and_is_retried() {
    let headers_then_silence = || Canned::sse_chunks(Vec::new()).stalling_after(0);
    let keep_alives_only = || Canned::sse_chunks(vec![KEEP_ALIVE.to_vec(); 3]).stalling_after(3);
    let after_headers = "no data within 5 s of sending the request (first-byte timeout)";
    let before_headers = "no response within 5 s of sending the request (first-byte timeout)";
    for api in APIS {
        for (fault, canned, message) in [
            ("headers then silence", headers_then_silence(), after_headers),
            ("keep-alives only", keep_alives_only(), after_headers),
            ("accepted, never answered", Canned::silent(), before_headers),
        ] {
            let answered = !canned.silent;
            // Answered: the wait for the headers (abandoned when they come),
            // then the stream's watchdog (the first byte's 5 s, not the
            // idle 300 s), the backoff, and the same again. Unanswered: the
            // wait for the headers is the one that ends.
            let steps: &[Step] = if answered {
                &[Step::Received(1), Step::End(2), Step::End(3), Step::Received(2), Step::End(5)]
            } else {
                &[Step::Received(1), Step::End(1), Step::End(2), Step::Received(2), Step::End(3)]
            };
            let (outcome, server, clock) = serve(api, vec![canned], steps, |c| c).await;
            let context = format!("{api:?}, {fault}");
            let error = outcome.error();
            assert_eq!(error.class(), "network", "{context}: {error}");
            assert_eq!(error.to_string(), format!("network: {}: {message}", name(api)), "{context}");
            assert_eq!(server.requests().len(), 2, "{context}: retried once");
            let waits = clock.waits();
            let backoff = if answered { 2 } else { 1 };
            let expected: Vec<Duration> = if answered {
                vec![FIRST_BYTE, FIRST_BYTE, waits[backoff].duration, FIRST_BYTE, FIRST_BYTE]
            } else {
                vec![FIRST_BYTE, waits[backoff].duration, FIRST_BYTE]
            };
            assert_eq!(durations(&waits), expected, "{context}: {waits:?}");
            assert!(is_backoff(&waits[backoff]), "{context}: {waits:?}");
            assert_eq!(
                outcome.retries(),
                vec![(2, ms(waits[backoff].duration), message.to_owned())],
                "{context}: the retry was announced"
            );
            assert_eq!(clock.now(), FIRST_BYTE * 2 + waits[backoff].duration, "{context}");
        }
    }
}

#[tokio::test]
async fn the_request_timeout_bounds_every_attempt_and_is_not_retried() {
    // A first-byte timeout of 5 s under a request timeout of 8 s: the first
    // attempt fails at 5 s, the second, begun after the ~1 s backoff, is cut
    // at 8 s by the request's own limit, and there is no third attempt.
    for api in APIS {
        let steps = [Step::Received(1), Step::End(1), Step::End(2), Step::Received(2), Step::End(3)];
        let (outcome, server, clock) = serve(api, vec![Canned::silent()], &steps, |c| {
            c.with_request_timeout(Duration::from_secs(8)).with_retry(
                RetryPolicy::default()
                    .with_attempts(10)
                    .with_delays(Duration::from_secs(1), Duration::from_secs(1)),
            )
        })
        .await;
        let error = outcome.error();
        assert_eq!(
            error.to_string(),
            format!(
                "network: {}: no response within 8 s of the request (the request timeout; 2 attempts)",
                name(api)
            ),
            "{api:?}"
        );
        assert_eq!(server.requests().len(), 2, "{api:?}");
        assert_eq!(clock.now(), Duration::from_secs(8), "{api:?}: cut exactly at the request's limit");
        assert_eq!(outcome.retries().len(), 1, "{api:?}");
        assert_eq!(clock.waits().len(), 3, "{api:?}: {:?}", clock.waits());
    }
}

// ------------------------------------------------------- a stall after the end

#[tokio::test]
async fn a_stall_after_the_finish_reason_keeps_the_answer_after_the_grace() {
    for api in APIS {
        // The whole answer but the terminal event, then the connection is
        // held open. Only a wait of the grace's length may end here.
        let body = preamble(api) + &text(api, "Hel") + &text(api, "lo") + &finish(api);
        let server = TestServer::start(vec![Canned::sse(body).stalling_after(1)]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(config(api, &server.url, &clock), "m").unwrap();
        let grace = Duration::from_secs(2);
        let is_grace: fn(&Wait) -> bool = |wait| wait.duration == Duration::from_secs(2);
        let outcome = scripted(Some(&server), &clock, &[Step::EndNext(is_grace)], collect(&model)).await;
        let response = outcome.response();
        assert_eq!(response.text(), "Hello", "{api:?}");
        assert_eq!(outcome.text(), "Hello", "{api:?}");
        assert_eq!(response.stop_reason, StopReason::Stop, "{api:?}");
        assert_eq!((response.usage.input, response.usage.output), (3, 2), "{api:?}: usage kept");
        assert_eq!(server.requests().len(), 1, "{api:?}");
        assert!(outcome.retries().is_empty(), "{api:?}");
        let waits = clock.waits();
        if api == Api::OpenAiResponses {
            // `response.completed` is the terminal event: nothing to wait for.
            assert_eq!(clock.now(), Duration::ZERO, "{api:?}: {waits:?}");
        } else {
            let last = waits.last().unwrap();
            assert_eq!((last.duration, last.state), (grace, WaitState::Ended), "{api:?}: {waits:?}");
            assert_eq!(clock.now(), grace, "{api:?}: taken as the grace ended, not at the idle timeout");
        }
    }
}

#[tokio::test]
async fn usage_after_the_finish_reason_within_the_grace_is_kept() {
    // Chat Completions sends its usage chunk after the finish reason: the
    // grace starts again from it, and the response holds it.
    let gate = Gate::new();
    let api = Api::OpenAiChat;
    let finish_reason = sse(None, &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    let usage_chunk =
        sse(None, &json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}));
    let chunks = vec![(text(api, "Hello") + &finish_reason).into_bytes(), usage_chunk.into_bytes()];
    let server = TestServer::start(vec![Canned::sse_chunks(chunks).with_gate(&gate).stalling_after(2)]).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(config(api, &server.url, &clock), "m").unwrap();
    let mut stream = model.stream(hello(), CancellationToken::new());
    gate.release(1);
    let first = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(ref t))) if t == "Hello"), "{first:?}");
    // The finish reason is in: the watchdog is now the grace.
    let grace = clock.asked(3).await[2];
    assert_eq!((grace.duration, grace.state), (Duration::from_secs(2), WaitState::Waiting));
    clock.advance(Duration::from_secs(1));
    gate.release(1);
    let usage_event = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
    assert!(
        matches!(usage_event, Some(Ok(ModelEvent::Usage(u))) if u == Usage::new(3, 2)),
        "{usage_event:?}"
    );
    let regrace = clock.asked(4).await[3];
    assert_eq!((regrace.at, regrace.duration), (Duration::from_secs(1), Duration::from_secs(2)));
    clock.advance(Duration::from_secs(2));
    let done = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
    match done {
        Some(Ok(ModelEvent::Done(response))) => {
            assert_eq!(response.text(), "Hello");
            assert_eq!(response.usage, Usage::new(3, 2));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(clock.now(), Duration::from_secs(3));
}

// ------------------------------------------------------------------- statuses

const NOPE: &str = r#"{"error":{"message":"nope","type":"x"}}"#;

/// Gemini's answer to a request too large: a status string that reads as a
/// rate limit on a status that is not worth retrying.
const TOO_LARGE: &str = r#"{"error":{"code":413,"message":"Request payload size exceeds the limit: 20971520 bytes.","status":"RESOURCE_EXHAUSTED"}}"#;

#[tokio::test]
async fn retryable_statuses_are_retried_with_a_notice_and_end_classified() {
    let statuses = [
        (408, "network"),
        (409, "server"),
        (429, "rate_limited"),
        (500, "server"),
        (502, "server"),
        (503, "rate_limited"),
        (504, "server"),
        (529, "rate_limited"),
    ];
    let steps = [Step::Received(1), Step::End(2)];
    for api in APIS {
        for (status, class) in statuses {
            let context = format!("{api:?}, HTTP {status}");
            // Once: retried after the backoff, announced first, text once.
            let responses = vec![Canned::error(status, NOPE), good(api)];
            let (outcome, server, clock) = serve(api, responses, &steps, |c| c).await;
            assert_eq!(outcome.response().text(), "Hello", "{context}");
            assert_eq!(outcome.text(), "Hello", "{context}: the text once");
            let backoff = clock.waits()[1];
            assert!(is_backoff(&backoff), "{context}: {:?}", clock.waits());
            let notice = (2, ms(backoff.duration), format!("HTTP {status}: nope"));
            assert_eq!(outcome.retries(), vec![notice], "{context}");
            assert!(matches!(outcome.events[0], ModelEvent::Retrying { .. }), "{context}: notice first");
            assert_eq!(server.requests().len(), 2, "{context}");
            // Every time: both attempts made, the last one's error classified.
            let (outcome, server, _) = serve(api, vec![Canned::error(status, NOPE)], &steps, |c| c).await;
            let error = outcome.error();
            assert_eq!(error.class(), class, "{context}: {error}");
            let said = format!("{} returned HTTP {status}: nope", name(api));
            assert!(error.to_string().ends_with(&said), "{context}: {error}");
            assert_eq!((server.requests().len(), outcome.retries().len()), (2, 1), "{context}");
        }
    }
}

#[tokio::test]
async fn other_statuses_are_not_retried() {
    for api in APIS {
        for (status, body, class) in [
            (400, NOPE, "invalid_request"),
            (401, NOPE, "authentication"),
            (403, NOPE, "authentication"),
            (404, NOPE, "invalid_request"),
            (413, TOO_LARGE, "invalid_request"),
            (422, NOPE, "invalid_request"),
        ] {
            let (outcome, server, clock) =
                serve(api, vec![Canned::error(status, body), good(api)], &[], |c| c).await;
            let context = format!("{api:?}, HTTP {status}");
            let error = outcome.error();
            assert_eq!(error.class(), class, "{context}: {error}");
            assert!(error.to_string().contains(&format!("returned HTTP {status}: ")), "{context}: {error}");
            assert_eq!(server.requests().len(), 1, "{context}: not retried");
            assert!(outcome.events.is_empty(), "{context}: {:?}", outcome.events);
            assert_eq!(clock.waits().len(), 1, "{context}: no backoff asked for");
        }
    }
}

// ---------------------------------------------------------------- Retry-After

fn limited(headers: &[(&str, &str)]) -> Canned {
    let mut canned = Canned::error(429, r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#);
    for (name, value) in headers {
        canned = canned.with_header(name, value);
    }
    canned
}

#[tokio::test]
async fn each_retry_after_form_sets_the_wait() {
    // The clock's calendar time is Wed, 21 Oct 2015 07:28:00 GMT.
    let cases: [(&[(&str, &str)], Duration); 6] = [
        (&[("retry-after", "2")], Duration::from_secs(2)),
        (&[("retry-after", "0.25")], Duration::from_millis(250)),
        (&[("retry-after-ms", "1500")], Duration::from_millis(1500)),
        (&[("retry-after-ms", "1500"), ("retry-after", "9")], Duration::from_millis(1500)),
        (&[("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")], Duration::from_secs(30)),
        (&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")], Duration::ZERO),
    ];
    for api in APIS {
        for (headers, asked) in cases {
            let steps = [Step::Received(1), Step::End(2)];
            let (outcome, server, clock) = serve(api, vec![limited(headers), good(api)], &steps, |c| c).await;
            let context = format!("{api:?}, {headers:?}");
            assert_eq!(outcome.response().text(), "Hello", "{context}");
            let waits = clock.waits();
            assert_eq!(
                waits[1],
                Wait { at: Duration::ZERO, duration: asked, state: WaitState::Ended },
                "{context}"
            );
            assert_eq!(waits[2].at, asked, "{context}: the next attempt began as the wait ended");
            assert_eq!(
                outcome.retries(),
                vec![(2, ms(asked), "HTTP 429: slow down".to_owned())],
                "{context}"
            );
            assert_eq!(server.requests().len(), 2, "{context}");
        }
    }
}

#[tokio::test]
async fn a_retry_after_that_is_not_a_wait_is_ignored_for_the_backoff() {
    for api in APIS {
        for headers in [
            [("retry-after", "NaN")],
            [("retry-after", "inf")],
            [("retry-after", "-5")],
            [("retry-after", "soon")],
            [("retry-after-ms", "NaN")],
            [("retry-after-ms", "-inf")],
        ] {
            let steps = [Step::Received(1), Step::End(2)];
            let (outcome, server, clock) =
                serve(api, vec![limited(&headers), good(api)], &steps, |c| c).await;
            let context = format!("{api:?}, {headers:?}");
            assert_eq!(outcome.response().text(), "Hello", "{context}");
            let waits = clock.waits();
            assert!(is_backoff(&waits[1]), "{context}: the backoff, as with no header: {waits:?}");
            assert_eq!(server.requests().len(), 2, "{context}");
        }
    }
}

#[tokio::test]
async fn a_retry_after_past_the_maximum_fails_at_once_saying_when_to_retry() {
    for api in APIS {
        for (value, seconds) in
            [("90", "90"), ("99999999999", "99999999999"), ("Wed, 21 Oct 2015 08:28:00 GMT", "3600")]
        {
            let (outcome, server, clock) =
                serve(api, vec![limited(&[("retry-after", value)]), good(api)], &[], |c| c).await;
            let context = format!("{api:?}, retry-after: {value}");
            let error = outcome.error();
            assert_eq!(error.class(), "rate_limited", "{context}");
            assert_eq!(
                error.to_string(),
                format!(
                    "rate limited: {} returned HTTP 429: slow down; retry after {seconds} s: the server asked \
                     for a longer wait than the 60 s this client waits (max_retry_after)",
                    name(api)
                ),
                "{context}"
            );
            assert_eq!(server.requests().len(), 1, "{context}: not retried early");
            assert!(outcome.events.is_empty(), "{context}");
            assert_eq!(clock.waits().len(), 1, "{context}: nothing waited for");
        }
        // A number too large for any clock is refused the same way.
        let (outcome, _server, _clock) =
            serve(api, vec![limited(&[("retry-after", "1e300")]), good(api)], &[], |c| c).await;
        assert!(
            matches!(outcome.error(), ModelError::RateLimited { retry_after_ms: Some(u64::MAX), .. }),
            "{api:?}"
        );
        assert!(outcome.error().to_string().contains("; retry after "), "{api:?}: {}", outcome.error());
    }
}

#[tokio::test]
async fn a_retry_after_past_the_request_timeout_is_not_waited_for() {
    for api in APIS {
        let (outcome, server, _clock) =
            serve(api, vec![limited(&[("retry-after", "30")]), good(api)], &[], |c| {
                c.with_request_timeout(Duration::from_secs(20))
            })
            .await;
        assert_eq!(
            outcome.error().to_string(),
            format!(
                "rate limited: {} returned HTTP 429: slow down (not retried: waiting 30 s more would pass the \
                 20 s request timeout)",
                name(api)
            ),
            "{api:?}"
        );
        assert_eq!(server.requests().len(), 1, "{api:?}");
    }
}

// --------------------------------------------------------- connection failures

#[tokio::test]
async fn a_refused_connection_is_retried_and_named() {
    for api in APIS {
        let url = support::refused_url().await;
        let clock = ManualClock::default();
        let model = HostedModel::new(config(api, &url, &clock), "m").unwrap();
        let outcome = scripted(None, &clock, &[Step::End(2)], collect(&model)).await;
        let error = outcome.error();
        assert_eq!(
            error.to_string(),
            format!(
                "network: {}: connecting to {url}{}: connection refused (os error 111)",
                name(api),
                path(api)
            ),
            "{api:?}"
        );
        let backoff = clock.waits()[1];
        assert_eq!(
            outcome.retries(),
            vec![(2, ms(backoff.duration), "connection refused".to_owned())],
            "{api:?}"
        );
        assert_eq!(clock.waits().len(), 3, "{api:?}: two attempts: {:?}", clock.waits());
    }
}

#[tokio::test]
async fn a_connection_reset_before_the_answer_is_retried() {
    for api in APIS {
        let steps = [Step::Received(1), Step::End(2)];
        let (outcome, server, clock) =
            serve(api, vec![Canned::reset_unanswered(), good(api)], &steps, |c| c).await;
        assert_eq!(outcome.response().text(), "Hello", "{api:?}");
        let backoff = clock.waits()[1];
        assert_eq!(
            outcome.retries(),
            vec![(2, ms(backoff.duration), "connection reset by peer".to_owned())],
            "{api:?}: the cause, not reqwest's words"
        );
        assert_eq!(server.requests().len(), 2, "{api:?}");
        // Reset every time: the error names what was done and the cause.
        let (outcome, server, _clock) = serve(api, vec![Canned::reset_unanswered()], &steps, |c| c).await;
        assert_eq!(
            outcome.error().to_string(),
            format!(
                "network: {}: sending the request to {}{}: connection reset by peer (os error 104)",
                name(api),
                server.url,
                path(api)
            ),
            "{api:?}"
        );
    }
}

// -------------------------------------------------------- errors in the stream

#[tokio::test]
async fn an_in_stream_server_error_before_content_is_retried() {
    for api in APIS {
        let failing = Canned::sse(preamble(api) + &transient_error(api));
        // However the failing stream was split into reads, the one wait to
        // end is the backoff.
        let steps = [Step::EndNext(is_backoff)];
        let (outcome, server, clock) = serve(api, vec![failing, good(api)], &steps, |c| c).await;
        assert_eq!(outcome.response().text(), "Hello", "{api:?}");
        assert_eq!(outcome.text(), "Hello", "{api:?}: the text once");
        let waits = clock.waits();
        let backoff = waits.iter().find(|w| is_backoff(w)).unwrap();
        assert_eq!(backoff.state, WaitState::Ended, "{api:?}: {waits:?}");
        assert_eq!(
            outcome.retries(),
            vec![(2, ms(backoff.duration), transient_reason(api).to_owned())],
            "{api:?}"
        );
        assert_eq!(server.requests().len(), 2, "{api:?}");
    }
}

#[tokio::test]
async fn an_in_stream_error_a_retry_would_meet_again_is_not_retried() {
    for api in APIS {
        let failing = Canned::sse(preamble(api) + &invalid_error(api));
        let (outcome, server, _clock) = serve(api, vec![failing, good(api)], &[], |c| c).await;
        let error = outcome.error();
        assert_eq!(error.class(), "invalid_request", "{api:?}: {error}");
        assert!(error.to_string().contains("Invalid tool schema."), "{api:?}: {error}");
        assert_eq!(server.requests().len(), 1, "{api:?}");
        assert!(outcome.retries().is_empty(), "{api:?}");
    }
}

#[tokio::test]
async fn an_in_stream_server_error_after_content_ends_the_stream() {
    for api in APIS {
        let failing = Canned::sse(preamble(api) + &text(api, "Hel") + &transient_error(api));
        let (outcome, server, _clock) = serve(api, vec![failing, good(api)], &[], |c| c).await;
        let error = outcome.error();
        assert!(matches!(error.class(), "server" | "rate_limited"), "{api:?}: {error}");
        assert_eq!(outcome.text(), "Hel", "{api:?}: no text repeated, none added");
        assert_eq!(server.requests().len(), 1, "{api:?}: not retried once text was shown");
        assert!(outcome.retries().is_empty(), "{api:?}");
    }
}

// ------------------------------------------------------- a stream cut mid-way

#[tokio::test]
async fn a_stream_closed_mid_content_is_not_retried() {
    for api in APIS {
        let cut = Canned::sse(preamble(api) + &text(api, "Hel"));
        let (outcome, server, _clock) = serve(api, vec![cut, good(api)], &[], |c| c).await;
        let error = outcome.error();
        assert_eq!(error.class(), "network", "{api:?}: {error}");
        assert!(error.to_string().contains("the stream ended before"), "{api:?}: {error}");
        assert_eq!(outcome.events, vec![ModelEvent::TextDelta("Hel".into())], "{api:?}");
        assert_eq!(server.requests().len(), 1, "{api:?}");
    }
}

#[tokio::test]
async fn a_stream_reset_mid_content_is_not_retried_and_says_why() {
    for api in APIS {
        let gate = Gate::new();
        let chunks = vec![(preamble(api) + &text(api, "Hel")).into_bytes()];
        let reset = Canned::sse_chunks(chunks).with_gate(&gate).resetting_after(1);
        let server = TestServer::start(vec![reset, good(api)]).await;
        let clock = ManualClock::default();
        let model = HostedModel::new(config(api, &server.url, &clock), "m").unwrap();
        let mut stream = model.stream(hello(), CancellationToken::new());
        gate.release(1);
        let first = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
        assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(ref t))) if t == "Hel"), "{api:?}: {first:?}");
        gate.release(1); // the reset
        let rest: Vec<_> = tokio::time::timeout(NO_HANG, stream.collect::<Vec<_>>()).await.unwrap();
        match rest.as_slice() {
            [Err(error)] => assert_eq!(
                error.to_string(),
                format!(
                    "network: {}: the stream was cut: connection reset by peer (os error 104)",
                    name(api)
                ),
                "{api:?}"
            ),
            other => panic!("{api:?}: {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{api:?}");
    }
}

// ----------------------------------------------------------------------- caps

#[tokio::test]
async fn an_oversized_line_event_or_response_fails_naming_its_cap_and_is_not_retried() {
    let caps = StreamLimits::default().with_line(1024).with_event(2048).with_response(6 << 10);
    for api in APIS {
        let line = format!("data: {}", "x".repeat(4096));
        let event: String = (0..40).map(|_| format!("data: {}\n", "y".repeat(100))).collect();
        // However the response was split into reads, the size said is the
        // bytes read when it passed the cap.
        let response = preamble(api) + &(0..200).map(|_| text(api, "word ")).collect::<String>();
        for (body, said) in [
            (line, "an SSE line exceeded the 1 KiB line cap (1025 bytes without a line end)"),
            (event, "an SSE event exceeded the 2 KiB event cap (2120 bytes of data)"),
            (response, "the response exceeded the 6 KiB response cap ("),
        ] {
            let responses = vec![Canned::sse(body).stalling_after(1), good(api)];
            let (outcome, server, _) = serve(api, responses, &[], |c| c.with_limits(caps)).await;
            let error = outcome.error().to_string();
            assert!(error.starts_with(&format!("protocol: {}: {said}", name(api))), "{api:?}: {error}");
            assert_eq!(server.requests().len(), 1, "{api:?}: {said}");
        }
    }
}
