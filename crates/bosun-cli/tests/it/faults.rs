//! The session store under faults, and exit codes, through the real `bosun`
//! against aimock: a damaged `sessions.db` is named, nothing more is written
//! to it, commands that write exit 3 with what to do, and listing, showing
//! and exporting still work; a full disk (a 1 MiB tmpfs in a private mount
//! namespace) is named the same way and listing still works; `bosun
//! compact` exits 1 when the model fails, as a turn does; a first turn
//! killed by SIGKILL leaves its prompt in `sessions show`, marked
//! interrupted. The exit codes are the table in docs/cli.md.
//!
//! The full-disk case needs `unshare` and a mount namespace; where none can
//! be had it FAILS, unless `BOSUN_SKIP_FULL_DISK=1` says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support;

use support::*;

/// `bosun ARGS` in the sandbox with the OpenAI key, on `mock`'s model.
fn bosun_on(sandbox: &Sandbox, mock: &Aimock, args: &[&str]) -> Command {
    let mut cmd = sandbox.bosun();
    cmd.env(Api::OpenAiChat.key_var(), "test").args(args).args(Api::OpenAiChat.args(mock));
    cmd
}

/// `bosun ARGS` in the sandbox, no model.
fn bosun(sandbox: &Sandbox, args: &[&str]) -> Output {
    let mut cmd = sandbox.bosun();
    cmd.args(args);
    run(cmd)
}

fn listed(sandbox: &Sandbox) -> Vec<Value> {
    let out = bosun(sandbox, &["sessions", "list", "--json"]);
    out.expect_code(0);
    serde_json::from_str::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

#[test]
fn bosun_compact_exits_1_when_the_model_fails_to_summarise() {
    let list = vec![
        // The summary request (its transcript holds the first answer) is refused.
        json!({"match": {"userMessage": "answer one"}, "response": {
            "error": {"message": "the summariser is down", "type": "invalid_request_error"}, "status": 400}}),
        json!({"match": {"userMessage": "first task"}, "response": {"content": "answer one"}}),
        json!({"match": {"userMessage": "second task"}, "response": {"content": "answer two"}}),
        json!({"match": {"userMessage": "third task"}, "response": {"content": "answer three"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let out = run(bosun_on(&sandbox, &mock, &["exec", "first task"]));
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    for ask in ["second task", "third task"] {
        run(bosun_on(&sandbox, &mock, &["resume", &id, ask])).expect_code(0);
    }
    let out = run(bosun_on(&sandbox, &mock, &["compact", &id]));
    out.expect_code(1);
    assert!(out.stderr.contains(&format!("cannot compact session {id} (it is unchanged)")), "{}", out.stderr);
    assert!(out.stderr.contains("the summariser is down"), "{}", out.stderr);
    // Naming no session, with no terminal to pick on, is a usage error.
    let out = run(bosun_on(&sandbox, &mock, &["compact"]));
    out.expect_code(2);
    assert!(out.stderr.contains("--last") && out.stderr.contains("picker"), "{}", out.stderr);
}

/// The store file of the sandbox.
fn store_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.path("bosun/sessions.db")
}

/// Puts the WAL's pages into the database file (bosun keeps its WAL between
/// commands) and removes the WAL, so the file alone holds every session.
fn checkpoint(path: &Path) {
    let store = bosun_store::Store::open(path).unwrap();
    drop(store);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    assert!(!Path::new(&wal).exists(), "the last connection's close checkpointed the WAL");
}

/// Overwrites, with deterministic noise, the middle one of the pages that
/// hold the overflow of the messages' bodies: part of one message, never a
/// page the sessions listing reads, nor one of the records' (their table
/// has no rowid, so a search compares whole keys and reads every overflow
/// it passes: one damaged page there hides every session's records). Found
/// with SQLite's dbstat table, as where pages fall depends on the sizes of
/// ids and records, which vary from run to run.
fn corrupt_the_middle(path: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    const PAGE: u64 = 4096;
    let pages = std::fs::metadata(path).unwrap().len() / PAGE;
    assert!(pages > 40, "the database spans many pages ({pages})");
    let overflow: Vec<i64> = {
        let db =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut pages = db
            .prepare(
                "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'overflow' ORDER BY pageno",
            )
            .unwrap();
        pages.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert!(overflow.len() > 10, "the messages overflow many pages ({overflow:?})");
    // dbstat numbers pages from 1.
    let target = u64::try_from(overflow[overflow.len() / 2] - 1).unwrap();
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
    file.seek(SeekFrom::Start(target * PAGE)).unwrap();
    file.write_all(&noise).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn a_damaged_store_is_named_writes_exit_3_and_reading_still_works() {
    let answers: Vec<Value> = (0..4)
        .map(|n| json!({"match": {"userMessage": format!("task {n}:")}, "response": {"content": "Done."}}))
        .collect();
    let Some(mock) = Aimock::start(&fixtures(answers)) else { return };
    let sandbox = task_sandbox();
    // Long prompts: most of the file is messages and records, not the
    // sessions table a listing reads.
    let padding = "some context for the task. ".repeat(2_000);
    let mut ids = Vec::new();
    for n in 0..3 {
        let out = run(bosun_on(&sandbox, &mock, &["exec", &format!("task {n}: {padding}")]));
        out.expect_code(0);
        ids.push(session_from_stderr(&out.stderr));
    }
    let path = store_file(&sandbox);
    checkpoint(&path);
    corrupt_the_middle(&path);
    let bytes = std::fs::read(&path).unwrap();
    let asked = mock.journal().len();

    // Writing commands refuse, name the file and say what to do; the model
    // is not asked.
    let shown = path.display().to_string();
    for args in [&["exec", "task 3: more"][..], &["resume", &ids[0], "task 3: more"]] {
        let out = run(bosun_on(&sandbox, &mock, args));
        out.expect_code(3);
        assert!(out.stderr.contains(&format!("`{shown}` failed its integrity check")), "{}", out.stderr);
        assert!(out.stderr.contains("bosun sessions export"), "{}", out.stderr);
        assert!(out.stderr.contains("move the file aside"), "{}", out.stderr);
    }
    for args in [&["sessions", "rm", &ids[1]][..], &["fork", &ids[1]]] {
        let out = bosun(&sandbox, args);
        out.expect_code(3);
        assert!(out.stderr.contains("failed its integrity check"), "{args:?}: {}", out.stderr);
    }
    assert_eq!(mock.journal().len(), asked, "no request was sent");
    assert!(std::fs::read(&path).unwrap() == bytes, "nothing was written to the damaged file");

    // Reading still works where it can, with a warning naming the damage.
    let out = bosun(&sandbox, &["sessions", "list"]);
    out.expect_code(0);
    for id in &ids {
        assert!(out.stdout.contains(id.as_str()), "{}", out.stdout);
    }
    assert!(out.stderr.contains(&format!("`{shown}` failed its integrity check")), "{}", out.stderr);
    let mut exports = Vec::new();
    for id in &ids {
        let out = bosun(&sandbox, &["sessions", "export", id]);
        match out.status.code() {
            Some(0) => exports.push(out.stdout),
            // The session on the damaged page: named as damage, not as a
            // usage error.
            _ => {
                out.expect_code(3);
                assert!(out.stderr.contains("is damaged"), "{}", out.stderr);
            }
        }
    }
    assert!(exports.len() >= 2, "one page holds at most one session's data");
    let file = sandbox.path("export.jsonl");
    std::fs::write(&file, &exports[0]).unwrap();
    bosun(&sandbox, &["sessions", "import", file.to_str().unwrap()]).expect_code(3);
    assert!(std::fs::read(&path).unwrap() == bytes, "nothing was written to the damaged file");

    // Moved aside, the file is replaced by a new one; the exports import.
    std::fs::rename(&path, sandbox.path("bosun/sessions.db.damaged")).unwrap();
    for (n, export) in exports.iter().enumerate() {
        let file = sandbox.path(&format!("export-{n}.jsonl"));
        std::fs::write(&file, export).unwrap();
        bosun(&sandbox, &["sessions", "import", file.to_str().unwrap()]).expect_code(0);
    }
    assert_eq!(listed(&sandbox).len(), exports.len());
    run(bosun_on(&sandbox, &mock, &["exec", "task 3: again"])).expect_code(0);
}

#[test]
fn a_first_turn_killed_by_sigkill_shows_its_prompt_as_interrupted() {
    const PROMPT: &str = "a task the kill cuts short";
    // A slow answer: 5 characters every 100 ms, a minute in all.
    let slow: String = (0..400).map(|i| format!("word{i} ")).collect();
    let stall = json!({"match": {"userMessage": PROMPT}, "response": {"content": slow},
        "latency": 100, "chunkSize": 5});
    let Some(mock) = Aimock::start(&fixtures(vec![stall])) else { return };
    let sandbox = task_sandbox();
    let mut running = Running::spawn(bosun_on(&sandbox, &mock, &["exec", "--json", PROMPT]), None);
    // A text event: the request reached the server and is being answered.
    running.wait_for("the answer's first chunk", |r| r.stdout().contains("\"text_delta\""));
    running.child.kill().unwrap(); // SIGKILL
    let status = running.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "{status}");
    drop(running);

    let sessions = listed(&sandbox);
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(sessions[0]["title"], PROMPT);
    let out = bosun(&sandbox, &["sessions", "show", &id]);
    out.expect_code(0);
    assert!(
        out.stdout.contains(&format!("user  {PROMPT}  (turn interrupted before an answer)")),
        "{}",
        out.stdout
    );
    let out = bosun(&sandbox, &["sessions", "show", &id, "--json"]);
    out.expect_code(0);
    let detail: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(detail["history"], json!([]), "nothing was committed");
    let failed = &detail["failed_turns"][0];
    assert_eq!((&failed["interrupted"], &failed["failed"]), (&json!(true), &json!(true)), "{detail:#}");
    assert_eq!(failed["message"]["content"][0]["text"], PROMPT, "{detail:#}");
}

// ---------------------------------------------------------------- a full disk

/// Set to 1, lets the full-disk test pass (saying so) where no small tmpfs
/// can be mounted; otherwise that fails it.
const SKIP_FULL_DISK: &str = "BOSUN_SKIP_FULL_DISK";
/// What [`child_process`] does, and what with.
const ROLE: &str = "BOSUN_CLI_TEST_ROLE";
const ROOT: &str = "BOSUN_CLI_TEST_ROOT";
const MOCK: &str = "BOSUN_CLI_TEST_MOCK";
/// Starts each line the child says to the parent.
const MARK: &str = "@bosun-cli-child@ ";

fn say(line: &str) {
    println!("{MARK}{line}");
}

/// `bosun -C ROOT/ws` with the sandbox's layout under `root` and the store
/// in `ROOT/disk`, on the mock at `url`, the key set.
fn bosun_at(root: &Path, url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(bosun_bin());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .env("BOSUN_HOME", root.join("disk"))
        .env(Api::OpenAiChat.key_var(), "test")
        .arg("-C")
        .arg(root.join("ws"))
        .args(args);
    if args[0] == "exec" {
        cmd.args(["--model", "openai/gpt-test", "--base-url", &format!("{url}/v1")]);
    }
    run(cmd)
}

/// In a child with its own mount namespace: a 1 MiB tmpfs as the store's
/// folder; a session written; the disk filled; then bosun again.
fn full_disk_scenario(root: &Path, url: &str) {
    use rustix::mount::{MountFlags, mount};
    let disk = root.join("disk");
    if let Err(error) =
        mount("tmpfs", &disk, "tmpfs", MountFlags::NOSUID | MountFlags::NODEV, Some(c"size=1m"))
    {
        say(&format!("CANNOT-MOUNT {error}"));
        return;
    }
    say("MOUNTED");
    let out = bosun_at(root, url, &["exec", "hello there"]);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);
    // As a clean close leaves it: no WAL and no WAL index, which a reader
    // of a WAL database must create, and cannot on a full disk.
    checkpoint(&disk.join("sessions.db"));
    // Fill the disk.
    let filler = disk.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = [0x5A_u8; 4096];
    loop {
        match std::io::Write::write(&mut file, &chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) if error.raw_os_error() == Some(28) => break,
            Err(error) => panic!("filling the disk: {error}"),
        }
    }
    drop(file);
    say("FILLED");

    // Listing and showing still work on the full disk.
    let out = bosun_at(root, url, &["sessions", "list"]);
    out.expect_code(0);
    assert!(out.stdout.contains(&id) && out.stdout.contains("hello there"), "{out:#?}");
    bosun_at(root, url, &["sessions", "show", &id]).expect_code(0);
    // A new task names the full disk and the file, and exits 3.
    let out = bosun_at(root, url, &["exec", "hello again"]);
    out.expect_code(3);
    let path = disk.join("sessions.db");
    assert!(out.stderr.contains(&format!("the disk holding `{}` is full", path.display())), "{out:#?}");
    assert!(out.stderr.contains("free space on it"), "{out:#?}");
    assert!(!out.stderr.contains("database error"), "{out:#?}");
    // Space freed, bosun works again.
    std::fs::remove_file(&filler).unwrap();
    bosun_at(root, url, &["exec", "hello again"]).expect_code(0);
    say("FULL-DISK PASSED");
}

#[test]
fn a_full_disk_is_named_exits_3_and_sessions_are_still_listed() {
    let answers = vec![
        json!({"match": {"userMessage": "hello there"}, "response": {"content": "Hi."}}),
        json!({"match": {"userMessage": "hello again"}, "response": {"content": "Hi again."}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(answers)) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir(sandbox.path("disk")).unwrap();
    let mut reasons = Vec::new();
    for wrapper in [
        &["unshare", "--mount", "--propagation", "private"][..],
        &["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"],
    ] {
        let mut cmd = Command::new(wrapper[0]);
        cmd.args(&wrapper[1..])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                bosun_testing::test_path!("child_process").as_str(),
                "--ignored",
                "--nocapture",
            ])
            .args(["--test-threads=1"])
            .env(ROLE, "full-disk")
            .env(ROOT, sandbox.root.path())
            .env(MOCK, mock.url())
            .env_remove("RUST_TEST_THREADS");
        let out = match cmd.output() {
            Ok(out) => out,
            Err(error) => {
                reasons.push(format!("`{}`: {error}", wrapper.join(" ")));
                continue;
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let marks: Vec<&str> = stdout.lines().filter_map(|l| l.split_once(MARK).map(|(_, m)| m)).collect();
        if marks.contains(&"MOUNTED") {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(marks.contains(&"FILLED"), "{stdout}\n{stderr}");
            assert!(marks.contains(&"FULL-DISK PASSED"), "{stdout}\n{stderr}");
            return;
        }
        let why = marks.iter().find(|m| m.starts_with("CANNOT-MOUNT")).map_or_else(
            || String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or_default().to_owned(),
            |m| (*m).to_owned(),
        );
        reasons.push(format!("`{}`: {why}", wrapper.join(" ")));
    }
    bosun_testing::skip_or_fail(
        SKIP_FULL_DISK,
        &format!(
            "no 1 MiB tmpfs can be mounted here ({}); the full-disk case needs `unshare`",
            reasons.join("; ")
        ),
    );
}

/// Run by the full-disk test in its mount namespace; does nothing when run
/// directly (`cargo test -- --ignored`).
#[test]
#[ignore = "the full-disk test's child; does nothing on its own"]
fn child_process() {
    let (Ok(role), Some(root), Ok(url)) = (std::env::var(ROLE), std::env::var_os(ROOT), std::env::var(MOCK))
    else {
        return;
    };
    match role.as_str() {
        "full-disk" => full_disk_scenario(Path::new(&root), &url),
        other => panic!("unknown role {other}"),
    }
}
