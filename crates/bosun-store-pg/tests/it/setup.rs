//! The tests' own Postgres: a missing one fails a test that needs it,
//! unless `BOSUN_SKIP_POSTGRES=1` says to skip, and then the test says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use crate::support::{self, describe};

/// A test that needs the server, run alone in a child with no Postgres to
/// find (an empty `BOSUN_POSTGRES_BIN`).
fn without_postgres(skip: bool) -> Output {
    let empty = tempfile::tempdir().unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "events::events_are_numbered_without_gap_or_duplicate_and_go_with_the_session",
            "--test-threads=1",
        ])
        .env(support::BIN, empty.path())
        // The child's skip is this test's point, not one of the run's.
        .env_remove(bosun_testing::SKIP_LOG_VARIABLE)
        .env_remove(support::SKIP);
    if skip {
        command.env(support::SKIP, "1");
    }
    command.output().unwrap()
}

#[test]
fn a_missing_postgres_fails_unless_skipping_is_asked() {
    let failed = without_postgres(false);
    assert!(!failed.status.success(), "{}", describe(&failed));
    let text =
        format!("{}{}", String::from_utf8_lossy(&failed.stdout), String::from_utf8_lossy(&failed.stderr));
    assert!(text.contains("Postgres is not installed") && text.contains("BOSUN_SKIP_POSTGRES=1"), "{text}");

    let skipped = without_postgres(true);
    assert!(skipped.status.success(), "{}", describe(&skipped));
    let stderr = String::from_utf8_lossy(&skipped.stderr);
    assert!(
        stderr.lines().any(|line| line.starts_with("!!! SKIPPED (BOSUN_SKIP_POSTGRES=1) events::")),
        "{stderr}"
    );
}
