//! Load on one `bosun serve`: many sessions at once against aimock.
//!
//!     cargo bench -p bosun-serve --bench load            # 100 sessions
//!     BENCH_SESSIONS=20 cargo bench -p bosun-serve --bench load
//!
//! A real server (in this process, on a loopback port), real agents and
//! sessions in a real SQLite store, real HTTP clients. It measures:
//! - memory per idle session: resident memory after creating N sessions,
//!   less before, over N;
//! - events delivered per second and memory per running session: N
//!   sessions streaming a long answer at once, each watched by its own SSE
//!   client; the peak resident memory while they run, less before, over N;
//! - approval round trip: from the answer's POST to the tool's start seen on
//!   the session's stream (median and 95th percentile of 20);
//! - reconnects: one session's stream read in pieces of 1 to 7 events over
//!   1,000 reconnects with `Last-Event-ID`; every event must arrive once, in
//!   order (checked against one whole read); the catch-up time is from the
//!   reconnect to its first event.
//!
//! Resident memory is the process's (`/proc/self/status`), the server's and
//! the clients' together, so the figures are upper bounds for the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_precision_loss)]

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use bosun_testing::Aimock;
use futures_util::future::join_all;
use serde_json::json;
use support::{Home, Served, is};

/// Characters of the streamed answer: aimock sends 20 a delta.
const ANSWER_CHARS: usize = 4_000;

/// Reconnects over one stream.
const RECONNECTS: usize = 1_000;

fn resident_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let sessions: usize = std::env::var("BENCH_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let answer =
        "All tests pass; nothing else to do here. ".repeat(ANSWER_CHARS / 41 + 1)[..ANSWER_CHARS].to_owned();
    let long = "x".repeat(40 * RECONNECTS);
    let list = vec![
        json!({"match": {"userMessage": "stream"}, "response": {"content": answer}}),
        json!({"match": {"userMessage": "long"}, "response": {"content": long}}),
        // After the streamed answer: one assistant message before.
        json!({"match": {"userMessage": "approve", "turnIndex": 1}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "x"}}]}}),
        json!({"match": {"userMessage": "approve", "turnIndex": 2}, "response": {"content": "ok"}}),
    ];
    let mock = Aimock::start(&json!({ "fixtures": list })).expect("aimock (scripts/test installs it)");
    let home = Home::new(&mock);
    let served = Served::start(&home).await;

    // Idle sessions.
    let before = resident_kib("VmRSS:");
    let started = Instant::now();
    let mut ids = Vec::with_capacity(sessions);
    for n in 0..sessions {
        ids.push(served.create(&home.workspace(&format!("w{n}")), "propose").await);
    }
    let created = started.elapsed();
    let idle = resident_kib("VmRSS:");
    let idle_per_session = idle.saturating_sub(before) as f64 / sessions as f64;

    // All streaming at once, each watched.
    let started = Instant::now();
    let watching = join_all(ids.iter().map(|id| {
        let served = &served;
        async move {
            served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "stream"})).await;
            served.events_until(id, None, |e| is(e, "result")).await
        }
    }))
    .await;
    let streamed = started.elapsed();
    let delivered: usize = watching.iter().map(Vec::len).sum();
    for events in &watching {
        let back: String = events
            .iter()
            .filter(|(_, e)| is(e, "text_delta"))
            .map(|(_, e)| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(back, answer, "every session got its whole answer");
    }
    let peak = resident_kib("VmHWM:");
    let running_per_session = peak.saturating_sub(before) as f64 / sessions as f64;

    // Approval round trips, one session after another (each session once).
    let mut trips = Vec::new();
    for id in ids.iter().take(20) {
        served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "approve"})).await;
        let asked = served.events_until(id, None, |e| is(e, "approval_requested")).await;
        let last = asked.last().unwrap().0;
        let approval = served.approvals().await.into_iter().find(|a| a["session_id"] == id.as_str()).unwrap();
        let path = format!("/v1/approvals/{}", approval["id"].as_str().unwrap());
        let sent = Instant::now();
        served.post(&path, json!({"decision": "once"})).await;
        served.events_until(id, Some(last), |e| is(e, "tool_start")).await;
        trips.push(sent.elapsed());
        served.events_until(id, Some(last), |e| is(e, "result")).await;
    }
    trips.sort();

    // Reconnects: one long stream read in pieces while it runs, then read
    // again in pieces from the start, pass after pass, each pass checked
    // against one whole read.
    let id = &ids[sessions - 1];
    let is_long =
        |e: &serde_json::Value| is(e, "result") && e["answer"].as_str().is_some_and(|a| a.len() > 1000);
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "long"})).await;
    let (mut catch_ups, mut reconnects, mut passes, mut whole) = (Vec::new(), 0, 0, Vec::new());
    while reconnects < RECONNECTS {
        let (mut pieces, mut after): (Vec<(u64, serde_json::Value)>, u64) = (Vec::new(), 0);
        while !pieces.last().is_some_and(|(_, e)| is_long(e)) {
            let take = 1 + reconnects % 7;
            let started = Instant::now();
            let (mut count, mut first) = (0, None);
            let got = served
                .events_until(id, Some(after), |e| {
                    first.get_or_insert_with(|| started.elapsed());
                    count += 1;
                    count == take || is_long(e)
                })
                .await;
            catch_ups.extend(first);
            after = got.last().unwrap().0;
            pieces.extend(got);
            reconnects += 1;
        }
        if whole.is_empty() {
            whole = served.events_until(id, None, is_long).await;
        }
        assert_eq!(pieces, whole, "no event lost or duplicated in pass {passes}");
        passes += 1;
    }
    catch_ups.sort();
    served.stop().await;

    let events_per_second = delivered as f64 / streamed.as_secs_f64();
    println!("bosun-serve load: {sessions} sessions on one server, aimock");
    println!("  created in {:.2} s ({:.1} ms each)", created.as_secs_f64(), ms(created) / sessions as f64);
    println!(
        "  memory per idle session: {idle_per_session:.0} KiB (resident {} -> {} MiB)",
        before / 1024,
        idle / 1024
    );
    println!(
        "  {delivered} events to {sessions} watchers in {:.2} s: {events_per_second:.0} events/s",
        streamed.as_secs_f64()
    );
    println!(
        "  memory per running session: {running_per_session:.0} KiB (peak resident {} MiB)",
        peak / 1024
    );
    println!(
        "  approval round trip: median {:.1} ms, p95 {:.1} ms ({} trips)",
        ms(percentile(&trips, 0.5)),
        ms(percentile(&trips, 0.95)),
        trips.len()
    );
    println!(
        "  {reconnects} reconnects over {passes} passes of {} events, none lost or duplicated; catch-up median {:.2} ms, p95 {:.2} ms",
        whole.len(),
        ms(percentile(&catch_ups, 0.5)),
        ms(percentile(&catch_ups, 0.95))
    );
    if let Ok(path) = std::env::var("BENCH_JSON") {
        let figures = json!({
            "sessions": sessions,
            "idle_kib_per_session": idle_per_session,
            "running_kib_per_session": running_per_session,
            "events_delivered": delivered,
            "events_per_second": events_per_second,
            "approval_ms_median": ms(percentile(&trips, 0.5)),
            "approval_ms_p95": ms(percentile(&trips, 0.95)),
            "reconnects": reconnects,
            "catch_up_ms_median": ms(percentile(&catch_ups, 0.5)),
        });
        std::fs::write(path, figures.to_string()).unwrap();
    }
}
