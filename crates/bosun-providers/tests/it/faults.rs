//! Faults that stop or cut a stream, each on all four wire APIs (a loop over
//! the protocols): stalls before any content (headers then silence,
//! keep-alives only, a connection accepted and never answered) and the
//! first-byte timeout, the bound on a whole request, a stall after the
//! finish reason and its grace, a stream closed or reset in the middle of
//! the answer, and oversized lines, events and responses. (What is retried
//! and after what wait is in `retries.rs`.)
//!
//! Against a real local HTTP server (`tests/it/support`), on a `ManualClock`:
//! every wait is recorded and ends only when the test moves the clock, once
//! the server has seen what the step needs. Each test asserts the attempts
//! made (the server counts requests), the waits asked for, the error's class
//! and message, and what the response holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{Model, ModelEvent, StopReason, Usage};
use bosun_providers::{Api, HostedModel, RetryPolicy, StreamLimits};
use futures_util::StreamExt;
use serde_json::json;
use support::faults::{
    APIS, FIRST_BYTE, collect, config, durations, finish, good, hello, is_backoff, ms, name, preamble, serve,
    sse, text,
};
use support::{Canned, Gate, KEEP_ALIVE, ManualClock, Step, TestServer, Wait, WaitState, scripted};
use tokio_util::sync::CancellationToken;

/// A hang guard, not a measure: every wait here is on the manual clock.
const NO_HANG: Duration = Duration::from_secs(30);

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
