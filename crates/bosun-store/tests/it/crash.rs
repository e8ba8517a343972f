//! Crash tests on a real SQLite file (MISSION.md invariants 11, 12 and 15):
//! [`bosun_testing::crash`]'s harness, its kill points and checks, run
//! against [`StoreJournal`], each scenario's session in a `sessions.db` of
//! its own in the scenario's directory.
//!
//! The test executable doubles as the program that crashes: `crash_driver`
//! (ignored, and inert unless `BOSUN_CRASH_DRIVER=1`) is the child the
//! harness runs at every kill point, then resumes. Beside the harness's own
//! checks, `PRAGMA integrity_check` and `foreign_key_check` must be clean
//! after every crash, and the stored message tree (what `list` and `show`
//! read) must be the history the journal replays to.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use bosun_store::{Store, StoreError, StoreJournal};
use bosun_testing::crash::{CrashStore, Harness, Stored};

/// The database file in a scenario's directory.
const DB: &str = "sessions.db";

/// bosun-store's SQLite file, one per scenario.
#[derive(Debug)]
struct Sqlite;

impl CrashStore for Sqlite {
    type Journal = StoreJournal;

    async fn new_session(dir: &Path) -> (StoreJournal, String) {
        let journal = Store::open(dir.join(DB)).unwrap().new_session();
        let id = journal.session_id().to_owned();
        (journal, id)
    }

    async fn open_session(dir: &Path, id: &str) -> Option<StoreJournal> {
        match Store::open(dir.join(DB)).unwrap().open_session(id) {
            Ok(journal) => Some(journal),
            Err(StoreError::NotFound { .. }) => None,
            Err(error) => panic!("cannot open session {id}: {error}"),
        }
    }

    fn child_env(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The head branch's records.
    fn records(&self, dir: &Path, session: &str) -> Vec<(i64, String)> {
        let connection = rusqlite::Connection::open(dir.join(DB)).unwrap();
        let mut statement = connection
            .prepare(
                "SELECT r.seq, r.body FROM records r JOIN sessions s ON s.head_branch = r.branch_id
                 WHERE s.id = ?1 ORDER BY r.seq",
            )
            .unwrap();
        statement
            .query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn check_integrity(&self, dir: &Path, what: &str) {
        let connection = rusqlite::Connection::open(dir.join(DB)).unwrap();
        let integrity: Vec<String> = connection
            .prepare("PRAGMA integrity_check")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(integrity, ["ok"], "{what}: integrity_check");
        let dangling: i64 =
            connection.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).unwrap();
        assert_eq!(dangling, 0, "{what}: foreign_key_check");
    }

    /// What `show` reads: the message tree, its count and the title.
    fn stored(&self, dir: &Path, session: &str) -> Stored {
        let detail = Store::open(dir.join(DB)).unwrap().show(session).unwrap();
        Stored {
            messages: Some(detail.history.into_iter().map(|(_, m)| m).collect()),
            message_count: detail.summary.message_count,
            record_count: None,
            title: detail.summary.title,
        }
    }

    /// Every lease in the scenario's file (it holds one session).
    fn leases(&self, dir: &Path, _session: &str) -> i64 {
        let connection = rusqlite::Connection::open(dir.join(DB)).unwrap();
        connection.query_row("SELECT count(*) FROM leases", [], |r| r.get(0)).unwrap()
    }
}

fn harness() -> Harness<Sqlite> {
    Harness::new(Sqlite, bosun_testing::test_path!("crash_driver"))
}

/// The child process (see [`bosun_testing::crash::drive`]).
#[tokio::test(flavor = "current_thread")]
#[ignore = "a child process of the crash tests; inert without BOSUN_CRASH_DRIVER=1"]
async fn crash_driver() {
    bosun_testing::crash::drive::<Sqlite>().await;
}

#[test]
fn invariant_15_sigkill_at_every_journal_point_loses_nothing_and_repeats_nothing() {
    harness().every_journal_point();
}

#[test]
fn invariant_12_sigkill_inside_a_tool_reports_it_interrupted_and_never_reruns_it() {
    harness().every_tool_call();
}

#[test]
fn invariant_15_sigkill_inside_a_model_stream_loses_nothing() {
    harness().every_model_stream();
}

/// A resume that is itself killed — while journaling the records that close
/// the crashed turn, or in its own turn — leaves a session the next resume
/// still takes up without loss or repetition.
#[test]
fn invariant_15_sigkill_while_resuming_then_resuming_again_loses_nothing() {
    harness().killed_while_resuming();
}
