//! What is retried, after what wait, and how it is announced, each on all
//! four wire APIs (a loop over the protocols): every retryable HTTP status
//! and the ones that are not, every form of `Retry-After` (seconds,
//! fractions, `retry-after-ms`, dates, values that are not a wait, waits
//! past the maximum or the request timeout), connections refused and reset
//! before the answer, and in-stream errors before and after content.
//!
//! Against a real local HTTP server (`tests/it/support`), on a `ManualClock`:
//! every wait is recorded and ends only when the test moves the clock, once
//! the server has seen what the step needs. Each test asserts the attempts
//! made (the server counts requests), the waits asked for, the `Retrying`
//! notices, and the error's class and message or the response.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{ModelError, ModelEvent};
use bosun_providers::HostedModel;
use support::faults::{
    APIS, collect, config, good, invalid_error, is_backoff, ms, name, path, preamble, serve, text,
    transient_error, transient_reason,
};
use support::{Canned, ManualClock, Step, Wait, WaitState, scripted};

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
