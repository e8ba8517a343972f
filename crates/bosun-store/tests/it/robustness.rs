//! The store under hostile conditions: files it cannot use are refused with a
//! clear error and left exactly as they were; a full disk fails a turn with a
//! journal error and keeps every committed turn; two processes share one
//! database (busy timeout) while a session is run by one process at a time (a
//! lease naming its holder's pid); an export imports back byte for byte.
//!
//! The full-disk cases need a 1 MiB tmpfs in a private mount namespace
//! (`unshare`); where none can be mounted they FAIL, unless
//! `BOSUN_SKIP_FULL_DISK=1` says to skip (said on a `!!! SKIPPED` line).
//!
//! Some cases need a second process: the test executable runs itself again
//! with `--exact robustness::child_process --ignored`, and [`ROLE`] tells that ignored
//! test what to do. Parent and child synchronise on lines the child prints
//! (marked with [`MARK`]), on the child's stdin and on its exit, never on
//! sleeps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::SystemTime;

use crate::support::describe;
use bosun_core::{
    Disposition, JournalErrorKind, Message, NullSink, Session, SessionBuilder, ToolCategory, TurnErrorKind,
    Usage, WorkspaceIdentity,
};
use bosun_store::{BUSY_TIMEOUT, ListFilter, Store, StoreError};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

// ---------------------------------------------------------------------------
// Sessions

const WORKSPACE: &str = "/work/project";

/// A session's tools: `read` answers "hello"; `fill` fills the file system
/// holding `disk` (only the full-disk case calls it).
fn builder(model: ScriptedModel, disk: Option<PathBuf>) -> SessionBuilder {
    Session::builder(model)
        .tool(FnTool::text("read", ToolCategory::Read, |_| "hello".into()))
        .tool(FnTool::text("fill", ToolCategory::Read, move |_| match &disk {
            Some(disk) => fill(disk),
            None => "nothing to fill".into(),
        }))
        .workspace(WorkspaceIdentity::new(WORKSPACE, 1, 2))
}

/// Two turns' worth of replies: a tool call, then an answer.
fn model() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})))
        .reply(Reply::new().text("It says hello.").usage(Usage::new(10, 5)))
        .answer("You're welcome.")
}

/// Every turn: a tool call, then an answer (four messages a turn).
fn cycling_model() -> ScriptedModel {
    ScriptedModel::cycle([
        Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})),
        Reply::new().text("It says hello.").usage(Usage::new(3, 2)),
    ])
}

/// A database holding one finished session (with a fork), closed, so the
/// file is complete without its `-wal`.
async fn real_database(path: &Path) -> String {
    let store = Store::open(path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session =
        builder(model(), None).system_prompt("be brief").journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    session.run("thanks", &mut NullSink).await.unwrap();
    drop(session);
    let answer = store.show(&id).unwrap().history[3].0;
    store.fork(&id, answer).unwrap();
    drop(store);
    assert!(!wal_of(path).exists(), "closing the last connection checkpoints and removes the WAL");
    // The integrity check's side file, remembered at the close: the file
    // is to be alone in its folder.
    let mut side = path.as_os_str().to_owned();
    side.push(".checked");
    std::fs::remove_file(side).unwrap();
    id
}

fn wal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn integrity(path: &Path) -> String {
    let connection =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    connection.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

// ---------------------------------------------------------------------------
// Files left untouched

/// Every file of a directory: its bytes and modification time.
#[derive(Debug, PartialEq)]
struct DirState(BTreeMap<String, (Vec<u8>, SystemTime)>);

fn dir_state(dir: &Path) -> DirState {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let metadata = entry.metadata().unwrap();
        let bytes = if metadata.is_file() { std::fs::read(entry.path()).unwrap() } else { Vec::new() };
        files.insert(entry.file_name().to_string_lossy().into_owned(), (bytes, metadata.modified().unwrap()));
    }
    DirState(files)
}

/// Opens `path` (alone in its directory), expects a failure, and checks the
/// directory is exactly as before: the file neither rewritten, truncated nor
/// deleted, and no `-wal`, `-shm` or `-journal` left beside it.
fn refused_untouched(path: &Path) -> StoreError {
    let dir = path.parent().unwrap();
    let before = dir_state(dir);
    assert_eq!(before.0.len(), 1, "the file is alone in its directory");
    let error = Store::open(path).unwrap_err();
    let after = dir_state(dir);
    let names = |s: &DirState| s.0.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&after), names(&before), "no file appeared or vanished beside the refused one");
    assert!(after == before, "the refused file changed (bytes or mtime)");
    // Refusing twice gives the same answer: the first attempt repaired nothing.
    let again = Store::open(path).unwrap_err();
    assert_eq!(again.to_string(), error.to_string());
    assert!(dir_state(dir) == before);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "the error names the file: {message}");
    error
}

#[tokio::test]
async fn a_truncated_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.db");
    real_database(&real).await;
    let length = std::fs::metadata(&real).unwrap().len();
    assert!(length > 8 * 4096, "the database spans many pages ({length} bytes)");
    // Half the file; only the first page (the schema is there, the tables are
    // not); less than the 100-byte header.
    for cut in [length / 2, 4096, 60] {
        let bad_dir = dir.path().join(format!("cut-{cut}"));
        std::fs::create_dir(&bad_dir).unwrap();
        let bad = bad_dir.join("sessions.db");
        std::fs::copy(&real, &bad).unwrap();
        std::fs::OpenOptions::new().write(true).open(&bad).unwrap().set_len(cut).unwrap();
        let error = refused_untouched(&bad);
        assert!(matches!(error, StoreError::Corrupt { .. }), "cut at {cut}: {error:?}");
        let message = error.to_string();
        assert!(message.contains("is damaged or is not a bosun session database"), "{message}");
        assert!(message.contains("left untouched"), "{message}");
    }
    // The original still opens.
    assert_eq!(Store::open(&real).unwrap().list(&ListFilter::default()).unwrap().len(), 1);
}

#[test]
fn a_garbage_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // Deterministic noise (xorshift), so a failure reproduces.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: Vec<u8> = (0..20_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let samples: [(&str, Vec<u8>); 3] = [
        ("noise", noise),
        ("text", b"these are my notes, not a database\n".repeat(300)),
        // The right magic, then noise: SQLite's header check must still fail.
        ("magic", [b"SQLite format 3\0".as_slice(), &[0xA5; 8000]].concat()),
    ];
    for (name, bytes) in samples {
        let bad_dir = dir.path().join(name);
        std::fs::create_dir(&bad_dir).unwrap();
        let bad = bad_dir.join("sessions.db");
        std::fs::write(&bad, &bytes).unwrap();
        let error = refused_untouched(&bad);
        assert!(matches!(error, StoreError::Corrupt { .. }), "{name}: {error:?}");
        assert!(error.to_string().contains("left untouched"), "{error}");
    }
}

#[tokio::test]
async fn a_database_from_a_newer_bosun_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    real_database(&path).await;
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
    }
    assert!(!wal_of(&path).exists());
    let error = refused_untouched(&path);
    let supported = bosun_store::schema_version();
    assert!(
        matches!(error, StoreError::NewerSchema { found: 99, supported: s, .. } if s == supported),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("99") && message.contains(&supported.to_string()), "{message}");
    assert!(message.contains("upgrade bosun"), "the error says what to do: {message}");
}

// ---------------------------------------------------------------------------
// A read-only directory

/// Restores a directory's mode when dropped (so the temporary directory can
/// be removed even after a failed assertion).
struct ModeGuard(PathBuf, u32);

impl Drop for ModeGuard {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(self.1));
    }
}

fn can_create_in(dir: &Path) -> bool {
    let probe = dir.join(".write-probe");
    let created = std::fs::File::create(&probe).is_ok();
    if created {
        std::fs::remove_file(&probe).unwrap();
    }
    created
}

/// Inside `root`: `ro/` is read-only and holds `existing.db`. Opening a new
/// database there, one in a missing subdirectory, or the existing one (which
/// needs its `-wal` and `-shm` beside it) is an `Open` error naming the file.
fn read_only_scenario(root: &Path) {
    let ro = root.join("ro");
    assert!(!can_create_in(&ro), "this process cannot write the read-only directory");
    for name in ["new.db", "sub/new.db", "existing.db"] {
        let path = ro.join(name);
        let error = Store::open(&path).unwrap_err();
        assert!(matches!(error, StoreError::Open { .. }), "{name}: {error:?}");
        let message = error.to_string();
        assert!(message.starts_with(&format!("cannot open `{}`", path.display())), "{message}");
    }
    say("READ-ONLY PASSED");
}

#[tokio::test]
async fn a_read_only_directory_is_an_open_error_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    // Traversable by the unprivileged user a root run switches to.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    real_database(&ro.join("existing.db")).await;
    std::fs::set_permissions(ro.join("existing.db"), std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let _restore = ModeGuard(ro.clone(), 0o755);
    let before = dir_state(&ro);

    if can_create_in(&ro) {
        // Root ignores permission bits: run the scenario as nobody (65534),
        // from a copy of this binary that nobody can reach and run wherever
        // the build directory lives (a home folder of mode 0700, say).
        let exe = dir.path().join("child");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let output = child_command_from(exe, &[], "read-only", dir.path()).uid(65534).gid(65534).output();
        match output {
            Ok(output) if marks(&output).iter().any(|m| m == "READ-ONLY PASSED") => {}
            Ok(output) => panic!("the unprivileged child failed:\n{}", describe(&output)),
            Err(error) => {
                bosun_testing::skip_or_fail(
                    "BOSUN_SKIP_UNPRIVILEGED",
                    &format!(
                        "this process writes through mode 0555 (root) and cannot start a child as uid 65534: {error}"
                    ),
                );
                return;
            }
        }
    } else {
        read_only_scenario(dir.path());
    }
    assert!(dir_state(&ro) == before, "nothing was created, changed or removed in the read-only directory");
}

// ---------------------------------------------------------------------------
// A full disk

/// Fills the file system holding `disk` with one file until it refuses.
/// Refuses to go on past 64 MiB: that is not the small tmpfs it expects.
pub(crate) fn fill(disk: &Path) -> String {
    let mut file = std::fs::File::create(disk.join("filler")).unwrap();
    let chunk = [0x5A_u8; 4096];
    let mut written = 0_usize;
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(error) if error.raw_os_error() == Some(28) => break, // ENOSPC
            Err(error) => panic!("filling the disk: {error}"),
        }
        assert!(written < 64 << 20, "{} is not on a small file system", disk.display());
    }
    let _ = file.sync_all();
    say(&format!("FILLED {written}"));
    format!("wrote {written} bytes")
}

/// In a child with its own mount namespace: a 1 MiB tmpfs on `disk`, gone
/// when the child ends. Says whether it worked.
pub(crate) fn mount_small_tmpfs(disk: &Path) -> bool {
    use rustix::mount::{MountFlags, mount};
    match mount("tmpfs", disk, "tmpfs", MountFlags::NOSUID | MountFlags::NODEV, Some(c"size=1m,mode=0700")) {
        Ok(()) => {
            say("MOUNTED");
            true
        }
        Err(error) => {
            say(&format!("CANNOT-MOUNT {error}"));
            false
        }
    }
}

/// Turn 1 reads and answers; turn 2 calls `fill`.
fn fill_model() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})))
        .answer("It says hello.")
        .tool_call("fill", json!({}))
        .answer("never said")
}

/// Runs in a child with its own mount namespace: mounts a 1 MiB tmpfs on
/// `disk`, fills it from inside a turn's tool call and checks that the turn
/// fails with a journal error, the file stays sound and every earlier turn
/// survives a reopen and a resume. The tmpfs vanishes with the child.
async fn full_disk_scenario(disk: &Path) {
    if !mount_small_tmpfs(disk) {
        return;
    }
    let path = disk.join("sessions.db");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = builder(fill_model(), Some(disk.to_owned())).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    let committed = session.history().to_vec();
    assert_eq!(committed.len(), 4);

    // Turn 2: the tool fills the disk; the next record cannot be written.
    let error = session.run("fill it up", &mut NullSink).await.unwrap_err();
    let TurnErrorKind::Journal(journal_error) = &error.kind else { panic!("not a journal error: {error:?}") };
    // Typed all the way down: the kind says full, the source is the store's.
    assert_eq!(journal_error.kind(), JournalErrorKind::Full, "{journal_error}");
    assert!(
        matches!(
            journal_error.cause().downcast_ref::<StoreError>(),
            Some(StoreError::DiskFull { path: full, .. }) if *full == path
        ),
        "{:?}",
        journal_error.cause()
    );
    let said = error.to_string();
    assert!(said.contains(&format!("the disk holding `{}` is full", path.display())), "{said}");
    assert!(said.contains("free space on it"), "{said}");
    assert_eq!(error.disposition, Disposition::Checkpointed, "the tool ran: its effect may stand");
    // A session whose journal failed refuses further turns and says to
    // resume: not a crash, not a second turn inside the first.
    let error = session.run("and again", &mut NullSink).await.unwrap_err();
    assert!(matches!(error.kind, TurnErrorKind::JournalLost(_)), "{error:?}");
    assert_eq!(error.disposition, Disposition::RolledBack);

    // Still full: the file is sound and a second store reads every
    // committed turn from it.
    assert_eq!(integrity(&path), "ok");
    let reader = Store::open(&path).unwrap();
    let shown = reader.show(&id).unwrap();
    assert_eq!(shown.history.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(), committed);
    assert_eq!(reader.list(&ListFilter::default()).unwrap()[0].message_count, 4);

    // Free the space, then close (so the lease is given back; see
    // `a_lease_left_by_a_full_disk_does_not_block_its_own_process`).
    std::fs::remove_file(disk.join("filler")).unwrap();
    drop(session);
    drop(reader);
    drop(store);
    assert_eq!(integrity(&path), "ok");

    let store = Store::open(&path).unwrap();
    let mut resumed = builder(ScriptedModel::new().answer("Back."), Some(disk.to_owned()))
        .resume(store.open_session(&id).unwrap())
        .await
        .unwrap();
    let history = resumed.history().to_vec();
    assert_eq!(history[..4], committed[..], "the committed turn is intact");
    // The turn the full disk cut short was journaled up to its tool call; it
    // is closed as interrupted, the call not run again (nothing refills the
    // disk) and its outcome marked unknown.
    assert_eq!(history.len(), 7, "{:?}", texts(&history));
    assert_eq!(history[4].text(), "fill it up");
    assert_eq!(history[5].tool_calls().map(|c| c.name.to_owned()).collect::<Vec<_>>(), ["fill"]);
    assert_eq!(history[6].text(), bosun_core::results::INTERRUPTED_RESULT);
    assert!(!disk.join("filler").exists());
    resumed.run("Are you there?", &mut NullSink).await.unwrap();
    assert_eq!(texts(&resumed.history()[history.len()..]), ["Are you there?", "Back."]);
    assert!(!disk.join("filler").exists(), "resuming did not repeat the fill");
    drop(resumed);
    drop(store);
    assert_eq!(integrity(&path), "ok");
    say("FULL-DISK PASSED");
}

/// Like [`full_disk_scenario`], but the session is dropped while the disk is
/// still full, so the lease cannot be given back; after freeing space this
/// same process wants the session again.
async fn full_disk_lease_scenario(disk: &Path) {
    if !mount_small_tmpfs(disk) {
        return;
    }
    let path = disk.join("sessions.db");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = builder(fill_model(), Some(disk.to_owned())).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    session.run("fill it up", &mut NullSink).await.unwrap_err();
    drop(session); // releasing the lease fails: the disk is full
    std::fs::remove_file(disk.join("filler")).unwrap();
    // No journal of this process holds the session any more.
    let reopened = store.open_session(&id);
    assert!(reopened.is_ok(), "the session is stuck behind this process's own dead lease: {reopened:?}");
    say("FULL-DISK PASSED");
}

/// Runs `role` in a child with a private mount namespace (plain `unshare`
/// as root, a user namespace otherwise). `Err`, with the reasons, when no
/// namespace could be made or no tmpfs mounted in it.
pub(crate) fn run_with_private_tmpfs(role: &str, disk: &Path) -> Result<Output, String> {
    let namespaces: [&[&str]; 2] = [
        &["unshare", "--mount", "--propagation", "private"],
        &["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"],
    ];
    let mut reasons = Vec::new();
    for wrapper in namespaces {
        match child_command(wrapper, role, disk).output() {
            Err(error) => reasons.push(format!("`{}`: {error}", wrapper.join(" "))),
            Ok(output) => {
                let marks = marks(&output);
                if marks.iter().any(|m| m == "MOUNTED") {
                    return Ok(output);
                }
                let why =
                    marks.iter().find(|m| m.starts_with("CANNOT-MOUNT")).cloned().unwrap_or_else(|| {
                        String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or_default().to_owned()
                    });
                reasons.push(format!("`{}`: {why}", wrapper.join(" ")));
            }
        }
    }
    Err(reasons.join("; "))
}

pub(crate) fn no_tmpfs(reasons: &str) -> String {
    format!(
        "no size-limited file system can be mounted here ({reasons}); the full-disk case needs \
         `unshare` and a mount namespace (root, or unprivileged user namespaces)"
    )
}

#[test]
fn a_full_disk_fails_the_turn_with_a_journal_error_and_keeps_earlier_turns() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    match run_with_private_tmpfs("full-disk", &disk) {
        Ok(output) => {
            assert!(marks(&output).iter().any(|m| m == "FULL-DISK PASSED"), "{}", describe(&output));
            assert!(marks(&output).iter().any(|m| m.starts_with("FILLED")), "{}", describe(&output));
        }
        Err(reasons) => bosun_testing::skip_or_fail(SKIP_FULL_DISK, &no_tmpfs(&reasons)),
    }
    assert_eq!(std::fs::read_dir(&disk).unwrap().count(), 0, "the tmpfs lived only in the child");
}

#[test]
fn a_lease_left_by_a_full_disk_does_not_block_its_own_process() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    match run_with_private_tmpfs("full-disk-lease", &disk) {
        Ok(output) => {
            assert!(marks(&output).iter().any(|m| m == "FULL-DISK PASSED"), "{}", describe(&output))
        }
        Err(reasons) => bosun_testing::skip_or_fail(SKIP_FULL_DISK, &no_tmpfs(&reasons)),
    }
}

// ---------------------------------------------------------------------------
// Two writers

const TURNS: usize = 200;

async fn write_turns(store: &Store, label: &str, start: Option<&Barrier>) -> String {
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = builder(cycling_model(), None).journal(journal).build().await.unwrap();
    if let Some(start) = start {
        start.wait();
    }
    for turn in 0..TURNS {
        session.run(format!("{label} turn {turn}"), &mut NullSink).await.unwrap();
    }
    id
}

/// Both sessions complete, readable, resumable; the file is sound.
async fn check_written(path: &Path, sessions: &[(&str, String)]) {
    assert_eq!(integrity(path), "ok");
    let store = Store::open(path).unwrap();
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), sessions.len());
    for (label, id) in sessions {
        let summary = listed.iter().find(|s| &s.id == id).unwrap();
        assert_eq!(summary.message_count, 4 * TURNS as i64, "{label}");
        assert_eq!(summary.usage, Usage::new(3 * TURNS as u64, 2 * TURNS as u64), "{label}");
        let resumed =
            builder(ScriptedModel::new(), None).resume(store.open_session(id).unwrap()).await.unwrap();
        let users: Vec<String> = resumed
            .history()
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .map(Message::text)
            .collect();
        let expected: Vec<String> = (0..TURNS).map(|turn| format!("{label} turn {turn}")).collect();
        assert_eq!(users, expected, "{label}: every turn, in order");
        assert_eq!(resumed.history().len(), 4 * TURNS);
    }
}

/// How often consecutive messages (in insertion order) change session: more
/// than the number of sessions minus one means the writes interleaved.
fn interleavings(path: &Path) -> usize {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection.prepare("SELECT session_id FROM messages ORDER BY id").unwrap();
    let owners: Vec<String> = statement.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    owners.windows(2).filter(|w| w[0] != w[1]).count()
}

#[test]
fn two_connections_write_different_sessions_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).unwrap()); // created once; see `two_connections_create_a_new_database_at_once`
    let start = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["left", "right"]
        .into_iter()
        .map(|label| {
            let (path, start) = (path.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                // Each thread its own Store: its own SQLite connection, locking
                // against the other as another process would.
                let store = Store::open(&path).unwrap();
                (label, runtime.block_on(write_turns(&store, label, Some(&start))))
            })
        })
        .collect();
    let sessions: Vec<(&str, String)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    eprintln!("two connections: the sessions' writes interleaved {} times", interleavings(&path));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(check_written(&path, &sessions));
}

#[tokio::test]
async fn two_processes_write_different_sessions_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).unwrap());
    let mut child = Helper::spawn("writer", &path);
    child.expect("READY");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = builder(cycling_model(), None).journal(journal).build().await.unwrap();
    child.send("GO");
    for turn in 0..TURNS {
        session.run(format!("parent turn {turn}"), &mut NullSink).await.unwrap();
    }
    drop(session);
    let child_session = child.expect("DONE");
    let status = child.child.wait().unwrap();
    assert!(status.success(), "the child writer failed: {status}");
    drop(store);
    eprintln!("two processes: the sessions' writes interleaved {} times", interleavings(&path));
    check_written(&path, &[("parent", id), ("child", child_session)]).await;
}

async fn child_writer(path: &Path) {
    let store = Store::open(path).unwrap();
    say("READY");
    wait_for("GO");
    let id = write_turns(&store, "child", None).await;
    say(&format!("DONE {id}"));
}

/// Another connection in the middle of a write transaction, as another
/// process would be: it holds the write lock for a while (well within the
/// busy timeout), or until [`LockHolder::finish`].
struct LockHolder {
    released: Arc<AtomicBool>,
    done: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl LockHolder {
    /// Returns once the lock is held.
    fn take(path: &Path) -> Self {
        let released = Arc::new(AtomicBool::new(false));
        let (locked_tx, locked_rx) = mpsc::channel();
        let (done, done_rx) = mpsc::channel::<()>();
        let thread = {
            let (path, released) = (path.to_owned(), Arc::clone(&released));
            std::thread::spawn(move || {
                let connection = rusqlite::Connection::open(path).unwrap();
                connection.execute_batch("BEGIN IMMEDIATE").unwrap();
                locked_tx.send(()).unwrap();
                // A waiter that gave up early must not wait for this hold.
                let _ = done_rx.recv_timeout(BUSY_TIMEOUT / 10);
                released.store(true, Ordering::SeqCst);
                connection.execute_batch("COMMIT").unwrap();
            })
        };
        locked_rx.recv().unwrap();
        Self { released, done, thread }
    }

    /// Whether the transaction had ended before now (a write that succeeded
    /// while it was open would be a broken lock); then ends it.
    fn finish(self) -> bool {
        let released = self.released.load(Ordering::SeqCst);
        let _ = self.done.send(());
        self.thread.join().unwrap();
        released
    }
}

#[tokio::test]
async fn a_write_waits_for_another_connections_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let id = real_database(&path).await;
    let store = Store::open(&path).unwrap();
    let holder = LockHolder::take(&path);
    let journal = store.open_session(&id).expect("open_session waits for the lock");
    assert!(holder.finish(), "it succeeded only once the other transaction had ended");
    let mut session = builder(ScriptedModel::new().answer("Yes."), None).resume(journal).await.unwrap();
    let holder = LockHolder::take(&path);
    session.run("Still there?", &mut NullSink).await.expect("the turn's journal writes wait for the lock");
    assert!(holder.finish());
    assert_eq!(texts(&session.history()[4..]), ["Still there?", "Yes."]);
}

#[tokio::test]
async fn fork_delete_and_import_wait_for_another_connections_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let id = real_database(&path).await;
    let store = Store::open(&path).unwrap();
    let answer = store.show(&id).unwrap().history[3].0;
    let mut export = Vec::new();
    store.export(&id, &mut export).unwrap();

    let mut failures = Vec::new();
    let holder = LockHolder::take(&path);
    let forked = store.fork(&id, answer);
    if !holder.finish() || forked.is_err() {
        failures.push(format!("fork: {forked:?}"));
    }
    let other = dir.path().join("other.db");
    let target = Store::open(&other).unwrap();
    let holder = LockHolder::take(&other);
    let imported = target.import(&mut export.as_slice());
    if !holder.finish() || imported.is_err() {
        failures.push(format!("import: {imported:?}"));
    }
    let holder = LockHolder::take(&path);
    let deleted = store.delete(&id);
    if !holder.finish() || deleted.is_err() {
        failures.push(format!("delete: {deleted:?}"));
    }
    assert!(failures.is_empty(), "did not wait for the other writer: {failures:#?}");
}

#[test]
fn two_connections_create_a_new_database_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for attempt in 0..20 {
        let path = dir.path().join(format!("{attempt}.db"));
        let start = Arc::new(Barrier::new(2));
        let openers: Vec<_> = (0..2)
            .map(|_| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    Store::open(&path).map(drop)
                })
            })
            .collect();
        for opener in openers {
            if let Err(error) = opener.join().unwrap() {
                failures.push(format!("attempt {attempt}: {error}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} of 40 opens failed: {failures:#?}", failures.len());
}

// ---------------------------------------------------------------------------
// The lease

#[tokio::test]
async fn a_session_held_by_another_process_is_refused_naming_it_until_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).unwrap());
    let mut holder = Helper::spawn("lease-holder", &path);
    let id = holder.expect("READY");
    let holder_pid = holder.child.id();

    let store = Store::open(&path).unwrap();
    let error = store.open_session(&id).unwrap_err();
    assert!(matches!(&error, StoreError::Leased { pid, .. } if *pid == i64::from(holder_pid)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&format!("in use by process {holder_pid}")), "{message}");
    assert!(message.contains(&id), "{message}");
    assert!(matches!(store.delete(&id), Err(StoreError::Leased { .. })), "nor can it be deleted");
    // Still held: refused again, not taken over.
    assert!(matches!(store.open_session(&id), Err(StoreError::Leased { .. })));

    // The holder dies without giving the lease back.
    holder.child.kill().unwrap(); // SIGKILL
    let status = holder.child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");

    let journal = store.open_session(&id).expect("a dead holder's lease is taken over");
    let mut session =
        builder(ScriptedModel::new().answer("I am the new holder."), None).resume(journal).await.unwrap();
    assert_eq!(
        texts(session.history()),
        ["What does a say?", "Looking.", "hello", "It says hello."],
        "the holder's committed turn"
    );
    session.run("Who has it now?", &mut NullSink).await.unwrap();
    // This process holds it now: a second journal is refused naming it.
    let error = store.open_session(&id).unwrap_err();
    assert!(error.to_string().contains(&format!("in use by process {}", std::process::id())), "{error}");
    drop(session);
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].message_count, 6);
}

async fn child_lease_holder(path: &Path) {
    let store = Store::open(path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session = builder(model(), None).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    say(&format!("READY {id}"));
    // Hold the session until killed (or until the parent closes stdin).
    wait_for("never sent");
    drop(session);
}

// ---------------------------------------------------------------------------
// Export and import

/// A session with two branches (each with turns of its own), plus an
/// unrelated session beside it.
async fn forked_session(store: &Store) -> String {
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let mut session =
        builder(model(), None).system_prompt("be brief").journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    session.run("thanks", &mut NullSink).await.unwrap();
    drop(session);
    let answer = store.show(&id).unwrap().history[3].0;
    store.fork(&id, answer).unwrap();
    let mut forked =
        builder(ScriptedModel::new().answer("Another path.").answer("Ünïcödé ✓ \"quoted\""), None)
            .resume(store.open_session(&id).unwrap())
            .await
            .unwrap();
    forked.run("something else", &mut NullSink).await.unwrap();
    forked.run("and\nnewlines\ttoo", &mut NullSink).await.unwrap();
    drop(forked);

    let mut other = builder(ScriptedModel::new().answer("Unrelated."), None)
        .journal(store.new_session())
        .build()
        .await
        .unwrap();
    other.run("another session", &mut NullSink).await.unwrap();
    id
}

fn export(store: &Store, id: &str) -> Vec<u8> {
    let mut out = Vec::new();
    store.export(id, &mut out).unwrap();
    out
}

#[tokio::test]
async fn an_export_with_a_fork_imports_into_a_new_database_and_exports_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open(dir.path().join("source.db")).unwrap();
    let id = forked_session(&source).await;
    let first = export(&source, &id);
    assert_eq!(export(&source, &id), first, "exporting is deterministic");
    let text = String::from_utf8(first.clone()).unwrap();
    assert!(
        text.ends_with('\n') && text.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );

    let target = Store::open(dir.path().join("target.db")).unwrap();
    let imported = target.import(&mut first.as_slice()).unwrap();
    assert_eq!(imported, id);
    let second = export(&target, &id);
    assert!(
        second == first,
        "re-export differs:\n--- first\n{text}\n--- second\n{}",
        String::from_utf8_lossy(&second)
    );

    // Same session, as far as anyone can see.
    let (was, now) = (source.show(&id).unwrap(), target.show(&id).unwrap());
    assert_eq!(now.summary, was.summary);
    assert_eq!(now.head_branch, was.head_branch);
    assert_eq!(now.branches.len(), 2);
    let messages =
        |d: &bosun_store::SessionDetail| d.history.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>();
    assert_eq!(messages(&now), messages(&was));
    assert_eq!(target.list(&ListFilter::default()).unwrap().len(), 1, "only the exported session");
    // And it runs.
    let mut resumed = builder(ScriptedModel::new().answer("Imported."), None)
        .resume(target.open_session(&id).unwrap())
        .await
        .unwrap();
    assert_eq!(resumed.history(), messages(&was).as_slice());
    resumed.run("still working?", &mut NullSink).await.unwrap();
    drop(resumed);
    assert_eq!(integrity(target.path()), "ok");
}

#[tokio::test]
async fn importing_a_session_the_database_has_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open(dir.path().join("source.db")).unwrap();
    let id = forked_session(&source).await;
    let exported = export(&source, &id);

    let target = Store::open(dir.path().join("target.db")).unwrap();
    target.import(&mut exported.as_slice()).unwrap();
    for store in [&target, &source] {
        let listed = store.list(&ListFilter::default()).unwrap();
        let error = store.import(&mut exported.as_slice()).unwrap_err();
        assert!(matches!(&error, StoreError::Invalid(_)), "{error:?}");
        let message = error.to_string();
        assert!(message.contains(&id) && message.contains("already exists"), "{message}");
        assert_eq!(store.list(&ListFilter::default()).unwrap(), listed);
        assert!(export(store, &id) == exported, "the existing session is unchanged");
    }

    // An import that fails on its last line leaves nothing behind either.
    let fresh = Store::open(dir.path().join("fresh.db")).unwrap();
    let mut broken = exported.clone();
    broken.extend_from_slice(
        b"{\"record\":{\"branch_id\":\"x\",\"seq\":99,\"body\":{\"record\":\"bogus\"}}}\n",
    );
    let lines = String::from_utf8_lossy(&broken).lines().count();
    let error = fresh.import(&mut broken.as_slice()).unwrap_err();
    assert!(matches!(error, StoreError::Import { line, .. } if line == lines), "{error:?}");
    assert!(fresh.list(&ListFilter::default()).unwrap().is_empty(), "a failed import adds nothing");
    assert!(matches!(fresh.show(&id), Err(StoreError::NotFound { .. })));
    // The whole file imports afterwards: nothing half-imported is in the way.
    fresh.import(&mut exported.as_slice()).unwrap();
}

/// Without a way to mount a small tmpfs (here: no `unshare` on the PATH) the
/// full-disk tests fail, unless `BOSUN_SKIP_FULL_DISK=1`: then they pass,
/// saying they skipped. Each runs alone in a child of this binary.
#[test]
fn the_full_disk_tests_fail_without_a_tmpfs_unless_told_to_skip() {
    let empty = tempfile::tempdir().unwrap();
    let alone = |test: &str, skip: bool| {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args(["--exact", bosun_testing::test_path!(test).as_str(), "--test-threads=1"])
            .env("PATH", empty.path())
            .env_remove("RUST_TEST_THREADS")
            .env_remove(SKIP_FULL_DISK)
            .env_remove(bosun_testing::SKIP_LOG_VARIABLE);
        if skip {
            command.env(SKIP_FULL_DISK, "1");
        }
        command.output().unwrap()
    };
    let said_skipped = |output: &Output| {
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .any(|l| l.starts_with("!!! SKIPPED (BOSUN_SKIP_FULL_DISK=1)"))
    };
    for test in [
        "a_full_disk_fails_the_turn_with_a_journal_error_and_keeps_earlier_turns",
        "a_lease_left_by_a_full_disk_does_not_block_its_own_process",
    ] {
        let failed = alone(test, false);
        assert!(!failed.status.success(), "{test} passed without a tmpfs:\n{}", describe(&failed));
        assert!(
            String::from_utf8_lossy(&failed.stdout).contains("BOSUN_SKIP_FULL_DISK=1"),
            "{test}: the failure names the way to skip:\n{}",
            describe(&failed)
        );
        let skipped = alone(test, true);
        assert!(skipped.status.success(), "{test} failed though told to skip:\n{}", describe(&skipped));
        assert!(said_skipped(&skipped), "{test} skipped without saying so:\n{}", describe(&skipped));
    }
}

// ---------------------------------------------------------------------------
// The second process

/// Set to 1, lets the full-disk tests pass (saying so) where no small tmpfs
/// can be mounted; otherwise that fails them.
pub(crate) const SKIP_FULL_DISK: &str = "BOSUN_SKIP_FULL_DISK";

/// Names what [`child_process`] does: `writer`, `lease-holder`, `full-disk`,
/// `full-disk-lease`, `full-disk-start` (in `faults`), `read-only`.
const ROLE: &str = "BOSUN_STORE_TEST_ROLE";
/// The path the role works on.
const PATH: &str = "BOSUN_STORE_TEST_PATH";
/// Starts each line the child says to the parent.
const MARK: &str = "@bosun-store-child@ ";

/// Run by the other tests as a second process; does nothing when run
/// directly (`cargo test -- --ignored`).
#[test]
#[ignore = "a second process for the other tests; does nothing on its own"]
fn child_process() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let path = PathBuf::from(std::env::var_os(PATH).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match role.as_str() {
        "writer" => runtime.block_on(child_writer(&path)),
        "lease-holder" => runtime.block_on(child_lease_holder(&path)),
        "full-disk" => runtime.block_on(full_disk_scenario(&path)),
        "full-disk-lease" => runtime.block_on(full_disk_lease_scenario(&path)),
        "full-disk-start" => runtime.block_on(crate::faults::full_disk_start_scenario(&path)),
        "read-only" => read_only_scenario(&path),
        other => panic!("unknown role {other}"),
    }
}

/// This test executable running [`child_process`] as `role` on `path`,
/// behind `wrapper` (a program and its arguments, e.g. `unshare …`).
fn child_command(wrapper: &[&str], role: &str, path: &Path) -> Command {
    child_command_from(std::env::current_exe().unwrap(), wrapper, role, path)
}

/// [`child_command`] running the test binary at `exe`.
fn child_command_from(exe: PathBuf, wrapper: &[&str], role: &str, path: &Path) -> Command {
    let mut command = match wrapper.split_first() {
        Some((program, arguments)) => {
            let mut command = Command::new(program);
            command.args(arguments).arg(exe);
            command
        }
        None => Command::new(exe),
    };
    command
        .args([
            "--exact",
            bosun_testing::test_path!("child_process").as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(PATH, path)
        .env_remove("RUST_TEST_THREADS");
    command
}

/// In the child: one line to the parent.
pub(crate) fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{MARK}{line}").unwrap();
    stdout.flush().unwrap();
}

/// In the child: waits for the parent to send `line` (or to go away).
fn wait_for(line: &str) {
    let mut input = String::new();
    loop {
        input.clear();
        if std::io::stdin().read_line(&mut input).unwrap() == 0 || input.trim() == line {
            return;
        }
    }
}

/// What a finished child said, in order.
pub(crate) fn marks(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once(MARK).map(|(_, said)| said.to_owned()))
        .collect()
}

/// A running child, talked to line by line. Killed if still running when
/// dropped (a failed assertion must not leave it behind).
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    heard: Vec<String>,
}

impl Helper {
    fn spawn(role: &str, path: &Path) -> Self {
        let mut child = child_command(&[], role, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout, heard: Vec::new() }
    }

    /// Reads until the child says `word` (and returns the rest of its line).
    fn expect(&mut self, word: &str) -> String {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                let status = self.child.wait().unwrap();
                panic!("the child ended ({status}) before saying {word}; it said:\n{}", self.heard.join(""));
            }
            self.heard.push(line.clone());
            if let Some((_, said)) = line.trim_end().split_once(MARK)
                && let Some(rest) = said.strip_prefix(word)
            {
                return rest.trim().to_owned();
            }
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
