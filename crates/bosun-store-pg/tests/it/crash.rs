//! Crash tests on a real Postgres database (MISSION.md invariants 11, 12
//! and 15): [`bosun_testing::crash`]'s harness, the one bosun-store's
//! SQLite journal runs too (`bosun-store/tests/it/crash.rs`), its kill
//! points and checks, run against [`PgJournal`].
//!
//! The test executable doubles as the program that crashes: `crash_driver`
//! (ignored, and inert unless `BOSUN_CRASH_DRIVER=1`) is the child the
//! harness runs at every kill point, then resumes. Beside the harness's own
//! checks, the session's row (its record count, message count and title)
//! must agree with the records after every crash. A resume takes over the
//! lease the killed child left at once: its holder is a dead process of
//! this machine.
//!
//! Every scenario's session of one test lives in one database of the shared
//! server (`support`), handed to each child in `BOSUN_PG_URL`; sessions are
//! told apart by their ids.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::support::{self, block_on};
use bosun_store_pg::{PgError, PgJournal, PgStore};
use bosun_testing::crash::{CrashStore, Harness, Stored};

/// The database's URL, in a child's environment.
const URL: &str = "BOSUN_PG_URL";

/// One database of the shared server, for every scenario of a test.
#[derive(Debug)]
struct Postgres {
    url: String,
}

/// The store at the URL the parent handed this child.
async fn child_store() -> PgStore {
    let url = std::env::var(URL).unwrap_or_else(|_| panic!("{URL} is not set"));
    PgStore::connect(&url).await.unwrap()
}

impl CrashStore for Postgres {
    type Journal = PgJournal;

    async fn new_session(_dir: &Path) -> (PgJournal, String) {
        let journal = child_store().await.new_session().await.unwrap();
        let id = journal.session_id().to_owned();
        (journal, id)
    }

    async fn open_session(_dir: &Path, id: &str) -> Option<PgJournal> {
        match child_store().await.open_session(id).await {
            Ok(journal) => Some(journal),
            Err(PgError::NotFound { .. }) => None,
            Err(error) => panic!("cannot open session {id}: {error}"),
        }
    }

    fn child_env(&self) -> Vec<(&'static str, String)> {
        vec![(URL, self.url.clone())]
    }

    fn records(&self, _dir: &Path, session: &str) -> Vec<(i64, String)> {
        block_on(async {
            let client = support::sql(&self.url).await;
            let rows = client
                .query("SELECT seq, body FROM records WHERE session_id = $1 ORDER BY seq", &[&session])
                .await
                .unwrap();
            rows.iter().map(|row| (row.get(0), row.get(1))).collect()
        })
    }

    /// The session's row: its counts and title.
    fn stored(&self, _dir: &Path, session: &str) -> Stored {
        let row =
            block_on(async { PgStore::connect(&self.url).await.unwrap().session(session).await.unwrap() });
        Stored {
            messages: None,
            message_count: row.message_count,
            record_count: Some(row.record_count),
            title: row.title,
        }
    }

    /// The leases left on `session`.
    fn leases(&self, _dir: &Path, session: &str) -> i64 {
        block_on(async {
            let client = support::sql(&self.url).await;
            client
                .query_one("SELECT count(*) FROM leases WHERE session_id = $1", &[&session])
                .await
                .unwrap()
                .get(0)
        })
    }
}

/// The harness over a database of its own for one test's scenarios; `None`
/// when the tests skip for want of Postgres.
fn harness() -> Option<Harness<Postgres>> {
    let server = support::server()?;
    let url = block_on(server.create_database());
    Some(Harness::new(Postgres { url }, bosun_testing::test_path!("crash_driver")))
}

/// The child process (see [`bosun_testing::crash::drive`]).
#[tokio::test(flavor = "current_thread")]
#[ignore = "a child process of the crash tests; inert without BOSUN_CRASH_DRIVER=1"]
async fn crash_driver() {
    bosun_testing::crash::drive::<Postgres>().await;
}

#[test]
fn invariant_15_sigkill_at_every_journal_point_loses_nothing_and_repeats_nothing() {
    let Some(harness) = harness() else { return };
    harness.every_journal_point();
}

#[test]
fn invariant_12_sigkill_inside_a_tool_reports_it_interrupted_and_never_reruns_it() {
    let Some(harness) = harness() else { return };
    harness.every_tool_call();
}

#[test]
fn invariant_15_sigkill_inside_a_model_stream_loses_nothing() {
    let Some(harness) = harness() else { return };
    harness.every_model_stream();
}

/// A resume that is itself killed — while journaling the records that close
/// the crashed turn, or in its own turn — leaves a session the next resume
/// still takes up without loss or repetition.
#[test]
fn invariant_15_sigkill_while_resuming_then_resuming_again_loses_nothing() {
    let Some(harness) = harness() else { return };
    harness.killed_while_resuming();
}
