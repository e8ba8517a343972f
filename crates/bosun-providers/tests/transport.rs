//! The transport shared by every API: keys, status classification, retries
//! that never splice text, the idle watchdog and cancellation. Driven with
//! the Chat Completions protocol against a real local HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use bosun_core::{GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest};
use bosun_providers::{ApiKey, HostedModel, ProviderConfig, ProviderError, RetryPolicy};
use futures_util::StreamExt;
use support::{Canned, TestServer};
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

#[tokio::test]
async fn a_rate_limit_honours_retry_after_and_then_succeeds() {
    let limited = Canned::error(429, r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#)
        .with_header("retry-after", "0");
    let server = TestServer::start(vec![limited, good_stream()]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let (events, outcome) = run(&model, CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "Hello");
    assert_eq!(events, vec![ModelEvent::TextDelta("Hel".into()), ModelEvent::TextDelta("lo".into())]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_and_bad_requests_are_not_retried() {
    for (status, kind) in [(500, "server"), (400, "invalid")] {
        let server =
            TestServer::start(vec![Canned::error(status, r#"{"error":{"message":"nope"}}"#), good_stream()])
                .await;
        let model = HostedModel::new(config(&server), "m").unwrap();
        let (_, outcome) = run(&model, CancellationToken::new()).await;
        let error = outcome.unwrap_err();
        match kind {
            "server" => assert!(matches!(error, ModelError::Server(_)), "{error}"),
            _ => assert!(matches!(error, ModelError::InvalidRequest(_)), "{error}"),
        }
        assert_eq!(server.requests().len(), 1, "HTTP {status} is not retried");
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
    assert_eq!(events.len(), 2, "only the successful attempt's deltas: {events:?}");
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
    let mut pings = Canned::sse_chunks(vec![b": keep-alive\n\n".to_vec(); 40]);
    pings.pause = Duration::from_millis(25);
    let server = TestServer::start(vec![pings]).await;
    let config =
        config(&server).with_idle_timeout(Duration::from_millis(300)).with_retry(RetryPolicy::none());
    let model = HostedModel::new(config, "m").unwrap();
    let started = std::time::Instant::now();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    let error = outcome.unwrap_err();
    assert!(matches!(&error, ModelError::Network(m) if m.contains("stalled")), "{error}");
    assert!(started.elapsed() < Duration::from_millis(900), "the pings (1 s of them) did not keep it alive");
}

#[tokio::test]
async fn data_lines_keep_a_slow_stream_alive() {
    let chunks: Vec<Vec<u8>> =
        (0..8).map(|_| chunk("x").into_bytes()).chain([finish().into_bytes()]).collect();
    let mut slow = Canned::sse_chunks(chunks);
    slow.pause = Duration::from_millis(60);
    let server = TestServer::start(vec![slow]).await;
    let model = HostedModel::new(config(&server).with_idle_timeout(Duration::from_millis(250)), "m").unwrap();
    let (_, outcome) = run(&model, CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "xxxxxxxx", "each data line reset the watchdog");
}

#[tokio::test]
async fn cancellation_ends_a_stalled_stream_promptly() {
    let mut stalled = Canned::sse(chunk("waiting"));
    stalled.stall_after = Some(1);
    let server = TestServer::start(vec![stalled]).await;
    let model = HostedModel::new(config(&server), "m").unwrap();
    let cancel = CancellationToken::new();
    let messages = [Message::user("hi")];
    let request = ModelRequest::new(None, &messages[..], &[][..], GenerationOptions::default());
    let mut stream = model.stream(request, cancel.clone());
    let first = tokio::time::timeout(NO_HANG, stream.next()).await.unwrap();
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(_)))), "{first:?}");
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("ends promptly");
    assert!(rest.is_none(), "{rest:?}");
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
