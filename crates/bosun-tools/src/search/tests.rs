//! Unit tests of `search` that need its test hook: a search cancelled at a
//! known point (its first match) stops promptly with a "cancelled" result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::message::concat_text;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::common::Ledger;
use crate::workspace::Workspace;

const FILES: usize = 3_000;

fn shared(dir: &std::path::Path) -> Shared {
    let limits = crate::ToolLimits::default()
        .with_max_results(crate::ToolLimits::HARD_MAX_RESULTS)
        .with_max_output_bytes(crate::ToolLimits::HARD_MAX_OUTPUT_BYTES);
    Shared { workspace: Workspace::open(dir).unwrap(), limits, ledger: Ledger::default(), access: None }
}

fn args(pattern: &str) -> Args {
    Args { pattern: pattern.to_owned(), path: None, glob: None, literal: true, context: None }
}

/// `FILES` files in 30 directories, each with one matching line.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..30 {
        let sub = dir.path().join(format!("d{d:02}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..FILES / 30 {
            std::fs::write(sub.join(format!("f{f:03}.txt")), format!("one\nhit {d} {f}\nthree\n")).unwrap();
        }
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_cancelled_at_its_first_match_stops_with_a_cancelled_result() {
    let dir = tree();
    let shared = shared(dir.path());
    // Uncancelled, every file matches.
    let all = search(&shared, &args("hit"), &Stop::default(), &|| {});
    assert!(!all.is_error);
    assert!(concat_text(&all.content).contains(&format!("[{FILES} matches in {FILES} files]")));

    let token = CancellationToken::new();
    let cancel = token.clone();
    let output = blocking_stoppable(token, move |stop| {
        // The first match cancels the call's token, then waits (no sleep)
        // until the token has reached the search's stop flag.
        let hook = || {
            cancel.cancel();
            while !stop.is_set() {
                std::thread::yield_now();
            }
        };
        search(&shared, &args("hit"), stop, &hook)
    })
    .await;
    let text = concat_text(&output.content);
    assert!(output.is_error, "a cancelled search is not a complete answer: {text}");
    assert!(
        text.contains("[search cancelled after ") && text.contains("the results are incomplete"),
        "{text}"
    );
    let found = text.lines().filter(|l| l.contains(":2:hit ")).count();
    // Each worker stops at its next file or match: far from all of them.
    assert!(found < FILES / 2, "{found} of {FILES} files were still searched after the cancel");
}

#[test]
fn a_stopped_search_of_one_file_stops_at_the_next_match() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..10_000).map(|i| format!("hit {i}\n")).collect();
    std::fs::write(dir.path().join("one.txt"), text).unwrap();
    let shared = shared(dir.path());
    let stop = Stop::default();
    let arguments = Args { path: Some("one.txt".to_owned()), ..args("hit") };
    let output = search(&shared, &arguments, &stop, &|| stop.set());
    let text = concat_text(&output.content);
    assert!(output.is_error && text.contains("[search cancelled after 1 file;"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(":hit ")).count(), 1, "{text}");
}
