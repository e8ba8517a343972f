//! The transport shared by every API: keys, status classification, retries
//! that never splice text, the idle watchdog and cancellation. Driven with
//! the Chat Completions protocol against a real local HTTP server. Waits
//! (`Retry-After`, the watchdog) run on a `ManualClock`, moved by the test
//! alone, and the watchdog's tests release the server's chunks one by one:
//! no outcome depends on how loaded the machine is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest, ModelStream};
use bosun_providers::{ApiKey, HostedModel, ProviderConfig, ProviderError, RetryPolicy};
use futures_util::{FutureExt, StreamExt};
use support::{Canned, Gate, KEEP_ALIVE, ManualClock, TestServer, Wait, WaitState};
use tokio_util::sync::CancellationToken;

const NO_HANG: Duration = Duration::from_secs(30);

fn chunk(delta: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n",
        serde_json::json!(delta)
    )
}

fn finish() -> String {
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
        .to_owned()
}

fn good_stream() -> Canned {
    Canned::sse(format!("{}{}{}", chunk("Hel"), chunk("lo"), finish()))
}

fn config(server: &TestServer) -> ProviderConfig {
    ProviderConfig::openai_compatible(format!("{}/v1", server.url)).with_retry(
        RetryPolicy::default()
            .with_attempts(3)
            .with_delays(Duration::from_millis(1), Duration::from_millis(10)),
    )
}

fn hello() -> ModelRequest<'static> {
    ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), GenerationOptions::default())
}

/// Polls `stream` until the watchdog is armed (the second wait on `clock`,
/// after the wait for the response): the stream has begun.
async fn until_streaming(stream: &mut ModelStream<'_>, clock: &ManualClock) {
    let begun = async {
        tokio::select! {
            item = stream.next() => panic!("the stream ended before it was released: {item:?}"),
            _ = clock.asked(2) => {}
        }
    };
    tokio::time::timeout(NO_HANG, begun).await.expect("the stream begins");
}

/// Whether `outcome` is the watchdog's error for a 300 ms watchdog.
fn stalled_at_300_ms(outcome: &Option<Option<Result<ModelEvent, ModelError>>>) -> bool {
    let expected = "no data for 0.3 s: the stream stalled";
    matches!(outcome, Some(Some(Err(ModelError::Network(m)))) if m.contains(expected))
}

/// Streams one request and returns the events and the final result.
async fn run(
    model: &HostedModel,
    cancel: CancellationToken,
) -> (Vec<ModelEvent>, Result<String, ModelError>) {
    let messages = [Message::user("hi")];
    let request = ModelRequest::new(None, &messages[..], &[][..], GenerationOptions::default());
    let mut stream = model.stream(request, cancel);
    let mut events = Vec::new();
    let outcome = tokio::time::timeout(NO_HANG, async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(ModelEvent::Done(response)) => {
                    let text = response
                        .content
                        .iter()
                        .filter_map(|p| match p {
                            bosun_core::ResponsePart::Content(bosun_core::ContentPart::Text { text }) => {
                                Some(text.as_str())
                            }
                            _ => None,
                        })
                        .collect::<String>();
                    return Ok(text);
                }
                Ok(event) => events.push(event),
                Err(error) => return Err(error),
            }
        }
        Err(ModelError::Cancelled)
    })
    .await
    .expect("the stream ends: no hang");
    (events, outcome)
}

#[tokio::test]
async fn a_missing_key_is_refused_naming_the_variable() {
    let err = HostedModel::new(ProviderConfig::preset("anthropic").unwrap(), "claude").unwrap_err();
    assert!(matches!(err, ProviderError::MissingKey { .. }));
    assert_eq!(err.to_string(), "anthropic needs an API key: set ANTHROPIC_API_KEY");
    let local = HostedModel::new(ProviderConfig::preset("ollama").unwrap(), "llama3");
    assert!(local.is_ok(), "local servers need no key");
}

#[tokio::test]
async fn the_key_goes_in_a_header_and_never_into_errors_or_debug() {
    let server = TestServer::start(vec![Canned::error(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-test-abcdef123"}}"#,
    )])
    .await;
    let mut config = config(&server).with_key(ApiKey::new("sk-test-abcdef123"));
    config.key_env = Some("OPENAI_API_KEY".into());
    let model = HostedModel::new(config, "m").unwrap();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    let error = outcome.unwrap_err();
    assert!(matches!(error, ModelError::Authentication(_)), "{error}");
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
    assert!(!error.to_string().contains("sk-test-abcdef123"), "{error}");
    assert!(!format!("{model:?}").contains("sk-test-abcdef123"));
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-abcdef123"));
    assert!(!request.path.contains("sk-test"));
    assert_eq!(server.requests().len(), 1, "authentication failures are not retried");
}

fn rate_limited() -> Canned {
    Canned::error(429, r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#)
}

/// Backoff alone would wait about a millisecond; a hint may ask for up to a
/// minute.
fn slow_ceiling() -> RetryPolicy {
    RetryPolicy::default().with_attempts(3).with_delays(Duration::from_millis(1), Duration::from_secs(60))
}

/// Runs one request against `server` whose first answer asks for a wait,
/// ending the second wait asked for (the retry's, after the wait for the
/// first response) once it has lasted `wait`; returns every wait.
async fn retried_after(server: &TestServer, wait: Duration) -> Vec<Wait> {
    let clock = ManualClock::default();
    let config = config(server).with_retry(slow_ceiling()).with_sleeper(clock.clone());
    let model = HostedModel::new(config, "m").unwrap();
    let (events, outcome) = support::advancing(&clock, 2, wait, run(&model, CancellationToken::new())).await;
    assert_eq!(outcome.unwrap(), "Hello");
    let notice = ModelEvent::Retrying {
        attempt: 2,
        wait_ms: u64::try_from(wait.as_millis()).unwrap(),
        reason: "HTTP 429: slow down".into(),
    };
    assert_eq!(
        events,
        vec![notice, ModelEvent::TextDelta("Hel".into()), ModelEvent::TextDelta("lo".into())],
        "the retry is announced, with the wait, before it is waited"
    );
    assert_eq!(server.requests().len(), 2);
    clock.waits()
}

#[tokio::test]
async fn a_rate_limit_honours_retry_after_and_then_succeeds() {
    for (header, value, asked) in [
        ("retry-after", "2", Duration::from_secs(2)),
        ("retry-after-ms", "1500", Duration::from_millis(1500)),
    ] {
        let server = TestServer::start(vec![rate_limited().with_header(header, value), good_stream()]).await;
        let waits = retried_after(&server, asked).await;
        assert_eq!(
            waits[1],
            Wait { at: Duration::ZERO, duration: asked, state: WaitState::Ended },
            "{header}: the retry waited what the server asked, not the backoff: {waits:?}"
        );
        assert_eq!(waits[2].at, asked, "{header}: the second attempt began as the wait ended: {waits:?}");
    }
}

#[tokio::test]
async fn a_retry_after_past_the_backoff_ceiling_is_honoured_up_to_max_retry_after() {
    // The backoff's own ceiling (`max_delay`, 60 s here) does not cut a
    // server's wait: 90 s is waited in full once `max_retry_after` allows it.
    let server =
        TestServer::start(vec![rate_limited().with_header("retry-after", "90"), good_stream()]).await;
    let clock = ManualClock::default();
    let config = config(&server)
        .with_retry(slow_ceiling())
        .with_max_retry_after(Duration::from_secs(120))
        .with_sleeper(clock.clone());
    let model = HostedModel::new(config, "m").unwrap();
    let asked = Duration::from_secs(90);
    let (_, outcome) = support::advancing(&clock, 2, asked, run(&model, CancellationToken::new())).await;
    assert_eq!(outcome.unwrap(), "Hello");
    let waits = clock.waits();
    assert_eq!(waits[1], Wait { at: Duration::ZERO, duration: asked, state: WaitState::Ended }, "{waits:?}");
    assert_eq!((waits[2].at, server.requests().len()), (asked, 2), "{waits:?}");
}

#[tokio::test]
async fn a_retry_after_past_max_retry_after_fails_at_once_saying_when_to_retry() {
    // The 60 s default: a server asking for 90 s is neither retried early
    // (it would refuse again) nor waited for; the error says when to retry.
    let server =
        TestServer::start(vec![rate_limited().with_header("retry-after", "90"), good_stream()]).await;
    let clock = ManualClock::default();
    let model = HostedModel::new(config(&server).with_sleeper(clock.clone()), "m").unwrap();
    let (events, outcome) = run(&model, CancellationToken::new()).await;
    let error = outcome.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { retry_after_ms: Some(90_000), .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "rate limited: openai-compatible returned HTTP 429: slow down; retry after 90 s: the server asked \
         for a longer wait than the 60 s this client waits (max_retry_after)"
    );
    assert!(events.is_empty(), "no retry was announced: {events:?}");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(clock.waits().len(), 1, "only the wait for the response: {:?}", clock.waits());
}

#[tokio::test]
async fn server_errors_are_retried_and_bad_requests_are_not() {
    for (status, retried) in [(500, true), (400, false)] {
        let server =
            TestServer::start(vec![Canned::error(status, r#"{"error":{"message":"nope"}}"#), good_stream()])
                .await;
        let model = HostedModel::new(config(&server), "m").unwrap();
        let (events, outcome) = run(&model, CancellationToken::new()).await;
        if retried {
            assert_eq!(outcome.unwrap(), "Hello");
            assert!(
                matches!(&events[0], ModelEvent::Retrying { attempt: 2, reason, .. } if reason == "HTTP 500: nope"),
                "{events:?}"
            );
            assert_eq!(server.requests().len(), 2, "HTTP {status} is retried");
        } else {
            let error = outcome.unwrap_err();
            assert!(matches!(error, ModelError::InvalidRequest(_)), "{error}");
            assert!(events.is_empty(), "{events:?}");
            assert_eq!(server.requests().len(), 1, "HTTP {status} is not retried");
        }
    }
}

#[tokio::test]
async fn a_drop_before_any_data_is_retried_cleanly() {
    // The first connection closes after the headers: nothing reached the session.
    let empty = Canned::sse_chunks(vec![]);
    let server = TestServer::start(vec![empty, good_stream()]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let (events, outcome) = run(&model, CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "Hello");
    assert!(matches!(&events[0], ModelEvent::Retrying { attempt: 2, .. }), "{events:?}");
    assert_eq!(events.len(), 3, "the notice and the successful attempt's deltas: {events:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_never_splices_text_into_what_the_session_received() {
    // Text was streamed, then the connection dropped: that attempt fails,
    // and no second attempt adds its text after the first one's.
    let partial = Canned::sse(chunk("Half an ans"));
    let server = TestServer::start(vec![partial, good_stream()]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let (events, outcome) = run(&model, CancellationToken::new()).await;
    assert!(matches!(outcome, Err(ModelError::Network(_))), "{outcome:?}");
    assert_eq!(events, vec![ModelEvent::TextDelta("Half an ans".into())]);
    assert_eq!(server.requests().len(), 1, "no retry after text reached the session");
}

#[tokio::test]
async fn keep_alives_do_not_reset_the_idle_watchdog() {
    let quiet = |server: &TestServer, clock: &ManualClock| {
        let config = config(server)
            .with_idle_timeout(Duration::from_millis(300))
            .with_retry(RetryPolicy::none())
            .with_sleeper(clock.clone());
        HostedModel::new(config, "m").unwrap()
    };

    // Read to its end, a stream of 40 keep-alives leaves the watchdog as its
    // start armed it: however the keep-alives were split into reads, none
    // armed it again. (The end is the proof that all of them were read.)
    let server = TestServer::start(vec![Canned::sse_chunks(vec![KEEP_ALIVE.to_vec(); 40])]).await;
    let clock = ManualClock::default();
    let (_, outcome) = run(&quiet(&server, &clock), CancellationToken::new()).await;
    assert!(matches!(&outcome, Err(ModelError::Network(m)) if m.contains("ended before")), "{outcome:?}");
    let waits = clock.waits();
    assert_eq!(waits.len(), 2, "the wait for the response and one watchdog: {waits:?}");

    // And with a keep-alive every 25 ms, the watchdog ends the stream 300 ms
    // after it began, not a moment later or sooner.
    let gate = Gate::new();
    let server =
        TestServer::start(vec![Canned::sse_chunks(vec![KEEP_ALIVE.to_vec(); 40]).with_gate(&gate)]).await;
    let clock = ManualClock::default();
    let model = quiet(&server, &clock);
    let mut stream = model.stream(hello(), CancellationToken::new());
    until_streaming(&mut stream, &clock).await;
    for sent in 1..=12 {
        gate.release(1);
        gate.written(sent).await;
        clock.advance(Duration::from_millis(25));
        let polled = stream.next().now_or_never();
        if sent < 12 {
            assert!(polled.is_none(), "at {:?}: {polled:?}", clock.now());
        } else {
            assert!(stalled_at_300_ms(&polled), "at {:?}: {polled:?}", clock.now());
        }
    }
}

#[tokio::test]
async fn data_lines_keep_a_slow_stream_alive() {
    // Eight data lines 60 ms apart, then the end: 540 ms in all under a
    // 250 ms watchdog, so only a watchdog armed again by each line lets the
    // stream finish. Each line goes out once the clock has moved and the
    // stream was seen quiet, so no line can arrive before its time.
    let gate = Gate::new();
    let chunks: Vec<Vec<u8>> =
        (0..8).map(|_| chunk("x").into_bytes()).chain([finish().into_bytes()]).collect();
    let server = TestServer::start(vec![Canned::sse_chunks(chunks).with_gate(&gate)]).await;
    let clock = ManualClock::default();
    let config = config(&server).with_idle_timeout(Duration::from_millis(250)).with_sleeper(clock.clone());
    let model = HostedModel::new(config, "m").unwrap();
    let mut stream = model.stream(hello(), CancellationToken::new());
    until_streaming(&mut stream, &clock).await;
    for line in 1..=9 {
        clock.advance(Duration::from_millis(60));
        let polled = stream.next().now_or_never();
        assert!(polled.is_none(), "each data line reset the watchdog: at {:?}: {polled:?}", clock.now());
        gate.release(1);
        let item = tokio::time::timeout(NO_HANG, stream.next()).await.expect("no hang");
        match item {
            Some(Ok(ModelEvent::TextDelta(text))) if line < 9 => assert_eq!(text, "x"),
            Some(Ok(ModelEvent::Done(response))) if line == 9 => assert_eq!(response.text(), "xxxxxxxx"),
            other => panic!("line {line}: {other:?}"),
        }
    }
    assert_eq!(clock.now(), Duration::from_millis(540));
}

#[tokio::test]
async fn cancellation_ends_a_stalled_stream_promptly() {
    let mut stalled = Canned::sse(chunk("waiting"));
    stalled.stall_after = Some(1);
    let server = TestServer::start(vec![stalled]).await;
    // No wait can end on this clock: only the cancellation can end the stream.
    let clock = ManualClock::default();
    let model = HostedModel::new(config(&server).with_sleeper(clock.clone()), "m").unwrap();
    let cancel = CancellationToken::new();
    let mut stream = model.stream(hello(), cancel.clone());
    let first = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(_)))), "{first:?}");
    cancel.cancel();
    // Ended on the very next poll: nothing waited for, not the server, not a timer.
    let rest = stream.next().now_or_never();
    assert!(matches!(rest, Some(None)), "{rest:?}");
    assert!(clock.waits().iter().all(|w| w.state != WaitState::Ended), "{:?}", clock.waits());
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_a_protocol_error() {
    let mut html = Canned::sse("<html>captive portal</html>");
    html.headers = vec![("content-type".into(), "text/html".into())];
    let server = TestServer::start(vec![html]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    assert!(
        matches!(outcome, Err(ModelError::Protocol(ref m)) if m.contains("captive portal")),
        "{outcome:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_of_an_event_is_a_network_failure_and_retried() {
    let cut = Canned::sse("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi");
    let server = TestServer::start(vec![cut.clone(), good_stream()]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "Hello", "the half event was a broken connection, so it was retried");
    assert_eq!(server.requests().len(), 2);
    let server = TestServer::start(vec![cut]).await;
    let model = HostedModel::new(config(&server).with_retry(RetryPolicy::none()), "m").unwrap();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    assert!(
        matches!(&outcome, Err(ModelError::Network(m)) if m.contains("middle of an event")),
        "{outcome:?}"
    );
}
