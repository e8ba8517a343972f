//! Invariant 16's bounds on input, work and time for `search` and
//! `list_files`: an over-long pattern is refused, a long line is searched
//! only up to its bound (and said to be), and a cancelled call stops and
//! says so instead of running on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Fixture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_search_refuses_a_pattern_over_4_kib_with_a_clear_error() {
    let fx = Fixture::new();
    // One long line; a 100,000-character literal over it was quadratic.
    fx.put("one-line.txt", &"a".repeat(300_000));
    let pattern = format!("{}b", "a".repeat(99_999));
    let (text, is_error) = fx.call("search", json!({"pattern": pattern, "literal": true})).await;
    assert!(is_error, "{text}");
    assert!(text.contains("100000 bytes, over the 4096-byte limit"), "{text}");
    // At the bound it is accepted.
    let (text, is_error) = fx.call("search", json!({"pattern": "a".repeat(4096), "literal": true})).await;
    assert!(!is_error, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_search_examines_a_long_line_only_up_to_its_bound_and_says_so() {
    let fx = Fixture::new();
    let filler = "x".repeat(1 << 20);
    fx.put("long.txt", &format!("early NEEDLE {filler} late NEEDLE\nnext NEEDLE\n"));
    fx.put("short.txt", "short NEEDLE\n");
    let (text, is_error) = fx.call("search", json!({"pattern": "NEEDLE"})).await;
    assert!(!is_error, "{text}");
    // The long line matches in its first 64 KiB, shown cut; line numbers
    // after it stay right.
    assert!(text.contains("long.txt:1:early NEEDLE xxx") && text.contains("… [line cut]"), "{text}");
    assert!(
        text.contains("long.txt:2:next NEEDLE\n") && text.contains("short.txt:1:short NEEDLE\n"),
        "{text}"
    );
    assert!(
        text.contains("[1 lines longer than 65536 bytes were searched only in their first 65536 bytes (line truncated), in 1 files; first: long.txt:1]"),
        "{text}"
    );
    // Past the bound nothing is examined: bounded work per line, whatever its length.
    let (text, _) = fx.call("search", json!({"pattern": "late NEEDLE", "literal": true})).await;
    assert!(text.starts_with("no matches\n[1 lines longer than 65536 bytes"), "{text}");
    // The same for a search of the one file.
    let (text, _) = fx.call("search", json!({"pattern": "late", "path": "long.txt"})).await;
    assert!(text.contains("no matches") && text.contains("(line truncated)"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_search_and_list_files_of_a_cancelled_call_stop_and_say_so() {
    let fx = Fixture::new();
    for d in 0..20 {
        for f in 0..50 {
            fx.put(&format!("d{d:02}/f{f:02}.txt"), "a hit\n");
        }
    }
    let (all, _) = fx.call("search", json!({"pattern": "hit"})).await;
    assert!(all.contains("[results stopped at 200;"), "{all}");
    // The call's token fired (turn cancelled, or the call's timeout) before
    // the blocking work started: no file is searched.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let (text, is_error) = fx.call_with("search", json!({"pattern": "hit"}), cancelled.clone()).await;
    assert!(is_error, "{text}");
    assert_eq!(text, "no matches\n[search cancelled after 0 files; the results are incomplete]");
    let (text, is_error) = fx.call_with("list_files", json!({}), cancelled).await;
    assert!(is_error, "{text}");
    assert!(text.contains("[listing cancelled after 0 entries; it is incomplete]"), "{text}");
}
