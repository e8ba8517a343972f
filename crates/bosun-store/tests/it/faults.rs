//! A damaged file and an unfinished first turn, through a real SQLite file:
//! a database that fails its integrity check is opened read-only, says so,
//! and refuses every write naming the file, while what can be read still
//! is; the check is skipped while nothing has written the file since it
//! passed, and repeated when something has; a read-only open creates and
//! changes nothing; a prompt whose turn was cut off before its first commit
//! is shown, marked interrupted (the full-disk cases, which need a small
//! file system, are in `robustness`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use bosun_core::{
    BuildError, Event, EventSink, JournalErrorKind, Session, SessionBuilder, SinkError, ToolCategory,
    WorkspaceIdentity,
};
use bosun_store::{ListFilter, Store, StoreError};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

const PAGE: u64 = 4096;

fn builder(model: ScriptedModel) -> SessionBuilder {
    // Each result is large, so most of the file holds messages and records,
    // not the sessions table a listing reads.
    Session::builder(model)
        .tool(FnTool::text("read", ToolCategory::Read, |_| "the file says hello. ".repeat(2_000)))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
}

fn model() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})))
        .answer("It says hello.")
}

/// A closed database of `sessions` sessions of one turn each (a call with
/// a 42 kB result, then an answer); their ids.
async fn database(path: &Path, sessions: usize) -> Vec<String> {
    let store = Store::open(path).unwrap();
    let mut ids = Vec::new();
    for n in 0..sessions {
        let journal = store.new_session();
        ids.push(journal.session_id().to_owned());
        let mut session = builder(model()).journal(journal).build().await.unwrap();
        session.run(format!("task {n}"), &mut Vec::new()).await.unwrap();
    }
    ids
}

/// Overwrites the page in the middle of the file with noise
/// (deterministic, so a failure reproduces); the file's length is kept.
fn corrupt_the_middle(path: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let pages = std::fs::metadata(path).unwrap().len() / PAGE;
    assert!(pages > 40, "the database spans many pages ({pages})");
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let noise: Vec<u8> = (0..PAGE)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(pages / 2 * PAGE)).unwrap();
    file.write_all(&noise).unwrap();
    file.sync_all().unwrap();
}

/// What SQLite's own check says of the file, through a connection of this
/// test (not the store's).
fn quick_check(path: &Path) -> String {
    let connection =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    connection.query_row("PRAGMA quick_check", [], |r| r.get(0)).unwrap()
}

fn side_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".checked");
    PathBuf::from(name)
}

/// Asserts `error` is the damaged-file error naming `path`, with advice.
fn is_damaged(error: &StoreError, path: &Path) {
    assert!(matches!(error, StoreError::Damaged { path: named, .. } if named == path), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&format!("`{}` failed its integrity check", path.display())), "{message}");
    assert!(message.contains("bosun sessions export"), "it says how to save what can be read: {message}");
    assert!(message.contains("move the file aside"), "it says what to do with the file: {message}");
}

#[tokio::test]
async fn a_damaged_database_opens_read_only_names_itself_and_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let ids = database(&path, 3).await;
    corrupt_the_middle(&path);
    assert_ne!(quick_check(&path), "ok", "the noise damaged the file's structure");
    let bytes = std::fs::read(&path).unwrap();

    let store = Store::open(&path).unwrap();
    assert!(store.is_read_only());
    let damage = store.damage().expect("the check's finding").to_owned();
    assert!(!damage.is_empty());
    // What can be read still is: the listing reads only the sessions table.
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 3, "{listed:#?}");
    // A session either shows, or fails as a damaged file naming it.
    for id in &ids {
        if let Err(error) = store.show(id) {
            assert!(matches!(&error, StoreError::Corrupt { path: p, .. } if *p == path), "{error:?}");
        }
    }

    // Every write is refused, naming the file; none reaches it.
    // A new session fails at its first record, before any model round.
    let error = builder(model()).journal(store.new_session()).build().await.unwrap_err();
    let BuildError::Journal(journal_error) = &error else { panic!("{error:?}") };
    assert_eq!(journal_error.kind(), JournalErrorKind::Corrupt, "{journal_error}");
    is_damaged(journal_error.cause().downcast_ref::<StoreError>().unwrap(), &path);
    is_damaged(&store.open_session(&ids[0]).unwrap_err(), &path);
    is_damaged(&store.delete(&ids[0]).unwrap_err(), &path);
    is_damaged(&store.fork(&ids[0], 1).unwrap_err(), &path);
    let mut export = Vec::new();
    if store.export(&ids[2], &mut export).is_ok() {
        let mut imported = export.as_slice();
        is_damaged(&store.import(&mut imported).unwrap_err(), &path);
    }
    drop(store);
    assert!(std::fs::read(&path).unwrap() == bytes, "nothing was written to the damaged file");

    // Opened again it is checked again (a failure is not trusted), and a
    // read-only open names the damage the check found, without checking.
    let again = Store::open(&path).unwrap();
    assert_eq!(again.damage(), Some(damage.as_str()));
    drop(again);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.damage(), Some(damage.as_str()));
    assert_eq!(reader.list(&ListFilter::default()).unwrap().len(), 3);
    drop(reader);

    // Moved aside, the file is replaced by a new database.
    std::fs::rename(&path, dir.path().join("sessions.db.damaged")).unwrap();
    let fresh = Store::open(&path).unwrap();
    assert!(!fresh.is_read_only());
    assert!(fresh.list(&ListFilter::default()).unwrap().is_empty());
    if !export.is_empty() {
        fresh.import(&mut export.as_slice()).unwrap();
        assert_eq!(fresh.list(&ListFilter::default()).unwrap().len(), 1);
    }
}

/// Damage inside what bosun stored (a record's or a message's JSON) passes
/// SQLite's check, but reading it names the file as damaged all the same.
#[tokio::test]
async fn stored_text_that_no_longer_parses_is_named_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let ids = database(&path, 1).await;
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection.execute("UPDATE records SET body = '{\"record\": 7' WHERE seq = 1", []).unwrap();
        connection.execute("UPDATE messages SET body = 'not json' WHERE id = 1", []).unwrap();
    }
    assert_eq!(quick_check(&path), "ok", "SQLite sees nothing wrong");
    let store = Store::open(&path).unwrap();
    let damaged = |error: &StoreError| {
        assert!(matches!(error, StoreError::Corrupt { path: p, .. } if *p == path), "{error:?}");
        assert!(error.to_string().contains("is damaged"), "{error}");
    };
    damaged(&store.show(&ids[0]).unwrap_err());
    let error = builder(model()).resume(store.open_session(&ids[0]).unwrap()).await.unwrap_err();
    let BuildError::Journal(journal_error) = &error else { panic!("{error:?}") };
    assert_eq!(journal_error.kind(), JournalErrorKind::Corrupt, "{journal_error}");
    damaged(journal_error.cause().downcast_ref::<StoreError>().unwrap());
}

#[tokio::test]
async fn an_unchanged_database_is_not_checked_again_and_a_changed_one_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    database(&path, 2).await;
    // The closing store remembered the file as it left it.
    let remembered = std::fs::read_to_string(side_file(&path)).unwrap();
    assert!(remembered.contains("\"damage\":null"), "{remembered}");

    // Damage the file behind bosun's back, then put its modification time
    // back: as far as the side file can tell, nothing wrote it, so the
    // check is skipped (what it costs is in docs/benchmarks.md).
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    corrupt_the_middle(&path);
    assert_ne!(quick_check(&path), "ok");
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    let trusting = Store::open(&path).unwrap();
    assert!(!trusting.is_read_only(), "the unchanged file was trusted without a check");
    drop(trusting);

    // A changed modification time is a change: checked, and found damaged.
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(modified + std::time::Duration::from_secs(1)).unwrap();
    drop(file);
    let checked = Store::open(&path).unwrap();
    assert!(checked.is_read_only() && checked.damage().is_some(), "{:?}", checked.damage());
    drop(checked);

    // A check older than a day is repeated even for an unchanged file.
    let fresh = dir.path().join("fresh.db");
    database(&fresh, 1).await;
    let modified = std::fs::metadata(&fresh).unwrap().modified().unwrap();
    corrupt_the_middle(&fresh);
    let file = std::fs::File::options().write(true).open(&fresh).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    let mut side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(side_file(&fresh)).unwrap()).unwrap();
    let checked_at = side["checked_at"].as_i64().unwrap();
    side["checked_at"] = json!(checked_at - 25 * 60 * 60 * 1000);
    std::fs::write(side_file(&fresh), side.to_string()).unwrap();
    let store = Store::open(&fresh).unwrap();
    assert!(store.damage().is_some(), "a day-old check was repeated");
}

#[tokio::test]
async fn a_read_only_open_reads_what_is_there_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none").join("sessions.db");
    let store = Store::open_read_only(&missing).unwrap();
    assert!(store.list(&ListFilter::default()).unwrap().is_empty());
    assert!(matches!(store.delete("x").unwrap_err(), StoreError::ReadOnly { .. }));
    assert!(!missing.parent().unwrap().exists(), "nothing was created for a missing file");

    let path = dir.path().join("sessions.db");
    let ids = database(&path, 1).await;
    let bytes = std::fs::read(&path).unwrap();
    let store = Store::open_read_only(&path).unwrap();
    assert!(store.is_read_only() && store.damage().is_none());
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].id, ids[0]);
    assert_eq!(store.show(&ids[0]).unwrap().history.len(), 4);
    let error = store.open_session(&ids[0]).unwrap_err();
    assert!(matches!(&error, StoreError::ReadOnly { path: p } if *p == path), "{error:?}");
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    drop(store);
    assert!(std::fs::read(&path).unwrap() == bytes, "reading changed nothing");
}

/// Tells when the turn's first text arrives: the model was asked.
struct Asked(Option<tokio::sync::oneshot::Sender<()>>);

impl EventSink for Asked {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if matches!(event, Event::TextDelta { .. })
            && let Some(asked) = self.0.take()
        {
            let _ = asked.send(());
        }
        Ok(())
    }
}

/// Runs `prompt` on a session of `journal` whose model answers a little,
/// then hangs; once the text arrived the turn is dropped where it stands,
/// as a killed process leaves it: started, never ended.
async fn cut_off(journal: bosun_store::StoreJournal, prompt: &str) {
    let model = ScriptedModel::new().reply(Reply::new().text("Let me").hang());
    let mut session = builder(model).journal(journal).build().await.unwrap();
    let (asked, answered) = tokio::sync::oneshot::channel();
    let mut sink = Asked(Some(asked));
    tokio::select! {
        result = session.run(prompt, &mut sink) => panic!("the turn ended: {result:?}"),
        _ = answered => {}
    }
}

#[tokio::test]
async fn a_first_turn_cut_off_before_its_first_commit_shows_its_prompt_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    cut_off(journal, "a task the kill cut off").await;
    // A sub-agent's session the same way.
    let child_journal = store.new_session().with_parent(id.clone(), "call-1");
    let child = child_journal.session_id().to_owned();
    cut_off(child_journal, "a sub-task the kill cut off").await;

    for (session, prompt) in [(&id, "a task the kill cut off"), (&child, "a sub-task the kill cut off")] {
        let detail = store.show(session).unwrap();
        assert!(detail.history.is_empty(), "nothing was committed: {:?}", detail.history);
        assert_eq!(detail.failed_turns.len(), 1, "{:#?}", detail.failed_turns);
        let shown = &detail.failed_turns[0];
        assert_eq!((shown.turn, shown.after, shown.interrupted), (1, None, true));
        assert_eq!(shown.message.text(), prompt);
        let json = serde_json::to_value(&detail).unwrap();
        assert_eq!(json["failed_turns"][0]["interrupted"], true, "{json}");
    }

    // Resumed, the turn is closed as interrupted: still shown, still marked.
    let resumed = builder(ScriptedModel::new()).resume(store.open_session(&id).unwrap()).await.unwrap();
    assert_eq!(resumed.interrupted_prompt().map(|m| m.text()).as_deref(), Some("a task the kill cut off"));
    drop(resumed);
    let detail = store.show(&id).unwrap();
    assert_eq!(detail.failed_turns.len(), 1, "{:#?}", detail.failed_turns);
    assert!(detail.failed_turns[0].interrupted);
    assert_eq!(detail.turns.last().map(|t| t.outcome), Some(bosun_core::TurnRecordOutcome::Interrupted));
}

// ---------------------------------------------------------------------------
// A full disk at start-up

/// Runs in a child with its own mount namespace (see `robustness`): one
/// session written and closed on a 1 MiB tmpfs, the disk filled, then bosun
/// starts again. Opening for writing (or the new session's first record)
/// fails naming the full disk and the file; reading still works.
pub(crate) async fn full_disk_start_scenario(disk: &Path) {
    use crate::robustness::{fill, mount_small_tmpfs, say};
    if !mount_small_tmpfs(disk) {
        return;
    }
    let path = disk.join("sessions.db");
    let small = || {
        Session::builder(ScriptedModel::new().answer("Hello.")).workspace(WorkspaceIdentity::new(
            "/work/project",
            1,
            2,
        ))
    };
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = small().journal(journal).build().await.unwrap();
    session.run("hi", &mut Vec::new()).await.unwrap();
    drop(session);
    drop(store);
    fill(disk);

    let full = |error: &StoreError| {
        assert!(matches!(error, StoreError::DiskFull { path: p, .. } if *p == path), "{error:?}");
        let message = error.to_string();
        assert!(message.contains(&format!("the disk holding `{}` is full", path.display())), "{message}");
        assert!(message.contains("free space on it"), "{message}");
    };
    match Store::open(&path) {
        Err(error) => {
            say("REFUSED AT OPEN");
            full(&error);
        }
        Ok(store) => {
            say("REFUSED AT THE FIRST RECORD");
            let error = small().journal(store.new_session()).build().await.unwrap_err();
            let BuildError::Journal(journal_error) = &error else { panic!("{error:?}") };
            assert_eq!(journal_error.kind(), JournalErrorKind::Full, "{journal_error}");
            full(journal_error.cause().downcast_ref::<StoreError>().unwrap());
        }
    }
    let reader = Store::open_read_only(&path).unwrap();
    let listed = reader.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
    assert_eq!(reader.show(&id).unwrap().history.len(), 2);
    say("FULL-DISK PASSED");
}

#[test]
fn a_full_disk_at_start_up_is_named_and_sessions_are_still_read() {
    use crate::robustness::{SKIP_FULL_DISK, marks, no_tmpfs, run_with_private_tmpfs};
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    match run_with_private_tmpfs("full-disk-start", &disk) {
        Ok(output) => {
            let said = marks(&output);
            let shown = crate::support::describe(&output);
            assert!(said.iter().any(|m| m.starts_with("FILLED")), "{shown}");
            assert!(said.iter().any(|m| m == "FULL-DISK PASSED"), "{shown}");
        }
        Err(reasons) => bosun_testing::skip_or_fail(SKIP_FULL_DISK, &no_tmpfs(&reasons)),
    }
}
