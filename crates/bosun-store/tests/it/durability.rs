//! Invariant 15's "durably", observed rather than assumed: a child process
//! runs a session on a real SQLite file with an `LD_PRELOAD` library
//! (`tests/fsync_probe/probe.rs`, built here with `rustc`) that logs every
//! `fsync` and `fdatasync` with the path synced. The child's journal writes a
//! begin and an end line into the same log around each append, so the parent
//! counts the syncs of the database's write-ahead log inside every append:
//! each record must have at least one before its `append` returns.
//!
//! The child runs the same kind of session as the crash harness
//! (`tests/it/crash.rs`): two turns, a batch of two calls, answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use bosun_core::journal::JournalFuture;
use bosun_core::{Journal, JournalRecord, NullSink, Session};
use bosun_store::{Store, StoreJournal};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

/// Set (to `1`) only in the environment of the child run.
const DRIVER: &str = "BOSUN_DURABILITY_DRIVER";
const LOG: &str = "BOSUN_FSYNC_LOG";
const DB: &str = "sessions.db";

/// Writes `begin KIND` and `end KIND` to the sync log around each append.
struct MarkingJournal {
    inner: StoreJournal,
    log: PathBuf,
}

impl MarkingJournal {
    fn mark(&self, what: &str, record: &JournalRecord) {
        let kind = serde_json::to_value(record).unwrap()["record"].as_str().unwrap().to_owned();
        let mut log = OpenOptions::new().append(true).create(true).open(&self.log).unwrap();
        log.write_all(format!("{what} {kind}\n").as_bytes()).unwrap();
    }
}

impl Journal for MarkingJournal {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        Box::pin(async move {
            self.mark("begin", record);
            let written = self.inner.append(record).await;
            self.mark("end", record);
            written
        })
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        self.inner.load()
    }
}

/// The child: two turns on a store in `BOSUN_DURABILITY_DIR`.
#[tokio::test(flavor = "current_thread")]
#[ignore = "a child process of the durability test; inert without BOSUN_DURABILITY_DRIVER=1"]
async fn durability_driver() {
    if std::env::var_os(DRIVER).is_none() {
        return;
    }
    let dir = PathBuf::from(std::env::var("BOSUN_DURABILITY_DIR").unwrap());
    let store = Store::open(dir.join(DB)).unwrap();
    let journal = MarkingJournal { inner: store.new_session(), log: std::env::var(LOG).unwrap().into() };
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .text("Reading.")
                .tool_call("read", json!({"n": 1}))
                .tool_call("read", json!({"n": 2})),
        )
        .answer("Read both.")
        .answer("Nothing else.");
    let mut session =
        Session::builder(model).tool(FnTool::echo("read")).journal(journal).build().await.unwrap();
    session.run("Read two things.", &mut NullSink).await.unwrap();
    session.run("Anything else?", &mut NullSink).await.unwrap();
}

/// Builds the probe library into `dir`.
fn build_probe(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fsync_probe/probe.rs");
    let library = dir.join("libfsync_probe.so");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .args(["--edition", "2024", "--crate-type", "cdylib", "-O", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .expect("rustc runs");
    assert!(
        output.status.success(),
        "building the probe failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    library
}

/// Per record, in order: its kind and the syncs of `wal` and of `db` made
/// between its begin and end lines.
fn syncs_per_record(log: &str, wal: &Path, db: &Path) -> Vec<(String, usize, usize)> {
    let mut records = Vec::new();
    let mut open: Option<(String, usize, usize)> = None;
    for line in log.lines() {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "begin" => {
                assert!(open.is_none(), "appends overlap: {line}");
                open = Some((rest.to_owned(), 0, 0));
            }
            "end" => {
                let record = open.take().unwrap_or_else(|| panic!("an end without a begin: {line}"));
                assert_eq!(record.0, rest, "begin and end name the same record");
                records.push(record);
            }
            "fsync" | "fdatasync" => {
                if let Some(record) = open.as_mut() {
                    if Path::new(rest) == wal {
                        record.1 += 1;
                    } else if Path::new(rest) == db {
                        record.2 += 1;
                    }
                }
            }
            _ => panic!("an unexpected log line: {line}"),
        }
    }
    assert!(open.is_none(), "the last append never returned");
    records
}

#[test]
fn invariant_15_every_record_is_synced_to_disk_before_its_append_returns() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().canonicalize().unwrap();
    let probe = build_probe(&dir);
    let log = dir.join("fsync.log");
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            bosun_testing::test_path!("durability_driver").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DRIVER, "1")
        .env("BOSUN_DURABILITY_DIR", &dir)
        .env(LOG, &log)
        .env("LD_PRELOAD", &probe)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("fsync ") || l.starts_with("fdatasync ")),
        "the probe saw no sync"
    );
    let records = syncs_per_record(&text, &dir.join(format!("{DB}-wal")), &dir.join(DB));
    let kinds: Vec<&str> = records.iter().map(|(kind, _, _)| kind.as_str()).collect();
    // session, 2 × (turn start, end), a batch (start, both calls started
    // (they run in parallel), both finished, commit), 2 answers.
    assert_eq!(
        kinds,
        [
            "session_started",
            "turn_started",
            "batch_started",
            "invocation_started",
            "invocation_started",
            "invocation_finished",
            "invocation_finished",
            "committed",
            "committed",
            "turn_ended",
            "turn_started",
            "committed",
            "turn_ended"
        ]
    );
    let unsynced: Vec<&(String, usize, usize)> = records.iter().filter(|(_, wal, _)| *wal == 0).collect();
    assert!(unsynced.is_empty(), "records whose append returned before the log was synced: {unsynced:?}");
    let wal: Vec<usize> = records.iter().map(|r| r.1).collect();
    let db: usize = records.iter().map(|r| r.2).sum();
    eprintln!(
        "durability: {} records; WAL syncs per record {wal:?}; database syncs inside appends {db}",
        records.len()
    );
}
