//! Versioned schema migrations: a database left by every earlier bosun opens,
//! is upgraded to the current schema, and keeps every session listable,
//! showable and resumable.
//!
//! Each earlier version's database is built the way that version built it:
//! the released migration SQL up to it (copied below), then the rows a real
//! session writes, cut down to the columns that version had.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use bosun_core::{Message, NullSink, Session, SessionBuilder, ToolCategory, Usage, WorkspaceIdentity};
use bosun_store::{ListFilter, SessionDetail, SessionSummary, Store};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use rusqlite::Connection;
use serde_json::json;

/// The SQL of every released migration, in order: entry `i` takes a
/// database from version `i` to `i + 1`.
///
/// These are deliberate copies of `MIGRATIONS` in `src/schema.rs`, not a
/// reference to it: a released schema must never change, because databases
/// built by it sit on users' disks. Do not edit an entry; append the next
/// migration when `src/schema.rs` gains one. `the_copies_build_the_schema_the_store_creates`
/// fails until the copies and the crate agree.
const RELEASED: &[&str] = &[
    // 1: sessions, branches, the per-branch record log, messages as a tree.
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        workspace TEXT,
        title TEXT,
        authority TEXT NOT NULL,
        authority_digest TEXT NOT NULL,
        head_branch TEXT NOT NULL
    );
    CREATE TABLE branches (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        parent_branch TEXT,
        fork_message INTEGER,
        head_message INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE records (
        branch_id TEXT NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (branch_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        branch_id TEXT NOT NULL,
        parent_id INTEGER REFERENCES messages(id),
        body TEXT NOT NULL
    );
    CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        token TEXT NOT NULL,
        acquired_at INTEGER NOT NULL
    );",
    // 2: per-session counters for fast listing, and indexes.
    "ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN usage TEXT NOT NULL DEFAULT '{}';
    UPDATE sessions SET message_count = (SELECT count(*) FROM messages m WHERE m.session_id = sessions.id);
    CREATE INDEX sessions_by_update ON sessions(updated_at DESC);
    CREATE INDEX sessions_by_workspace ON sessions(workspace, updated_at DESC);
    CREATE INDEX messages_by_session ON messages(session_id);
    CREATE INDEX branches_by_session ON branches(session_id);",
    // 3: sessions that migration 2 gave an empty usage (those written by
    // version 1) get the total of their assistant messages' usage.
    "UPDATE sessions SET usage = (
        SELECT json_object(
            'cache_read', coalesce(sum(json_extract(m.body, '$.usage.cache_read')), 0),
            'cache_write', coalesce(sum(json_extract(m.body, '$.usage.cache_write')), 0),
            'input', coalesce(sum(json_extract(m.body, '$.usage.input')), 0),
            'output', coalesce(sum(json_extract(m.body, '$.usage.output')), 0),
            'reasoning', coalesce(sum(json_extract(m.body, '$.usage.reasoning')), 0))
        FROM messages m
        WHERE m.session_id = sessions.id AND json_extract(m.body, '$.role') = 'assistant')
    WHERE usage = '{}';",
    // 4: the model a session last ran a turn on, and what it spent by
    // bucket and priced (from `turn_ended` records; '{}' for older sessions).
    "ALTER TABLE sessions ADD COLUMN model TEXT;
    ALTER TABLE sessions ADD COLUMN spend TEXT NOT NULL DEFAULT '{}';",
    // 5: whole tool outputs past the output bound, by session.
    "CREATE TABLE artifacts (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX artifacts_by_session ON artifacts(session_id);",
    // 6: a sub-agent's session names its parent session and the parent's
    // tool call that started it (NULL for a top-level session).
    "ALTER TABLE sessions ADD COLUMN parent_session TEXT;
    ALTER TABLE sessions ADD COLUMN parent_call TEXT;
    CREATE INDEX sessions_by_parent ON sessions(parent_session);",
    // 7: the base URL the session's model was reached at, when the user
    // gave one (NULL: the provider's own, or not recorded).
    "ALTER TABLE sessions ADD COLUMN base_url TEXT;",
    // 8: rewind. File contents kept by their SHA-256 (`blobs`, shared by
    // every session); what each tool call changed in the workspace
    // (`file_changes`: the state before, which names a blob, and the state
    // it left); and the manifest of a workspace's files the shell's capture
    // compares against (`workspace_files`: the stat of each file when its
    // blob was kept). `started` and `ended` order changes across calls that
    // overlap.
    "CREATE TABLE blobs (
        hash TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        body BLOB NOT NULL
    );
    CREATE TABLE file_changes (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn INTEGER,
        call_id TEXT,
        path TEXT NOT NULL,
        started INTEGER NOT NULL,
        ended INTEGER,
        before_kind TEXT NOT NULL,
        before_hash TEXT,
        before_mode INTEGER,
        note TEXT,
        after_kind TEXT NOT NULL,
        after_hash TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX file_changes_by_session ON file_changes(session_id, path);
    CREATE INDEX file_changes_by_blob ON file_changes(before_hash);
    CREATE TABLE workspace_files (
        workspace TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        mode INTEGER NOT NULL,
        hash TEXT,
        note TEXT,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX workspace_files_by_blob ON workspace_files(hash);",
    // 9: the reasoning effort the session's model ran at.
    "ALTER TABLE sessions ADD COLUMN effort TEXT;",
    // 10: the events a served session emitted.
    "CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;",
];

/// The tables rows are copied into, parents first.
const TABLES: [&str; 5] = ["sessions", "branches", "messages", "records", "leases"];

fn builder(model: ScriptedModel, workspace: &str) -> SessionBuilder {
    Session::builder(model)
        .tool(FnTool::text("read", ToolCategory::Read, |_| "hello".into()))
        .workspace(WorkspaceIdentity::new(workspace, 1, 2))
}

/// The sessions every version's database holds: one with a fork and turns on
/// both branches, one in another workspace whose second turn was rolled back.
/// Returns their ids and workspaces.
async fn write_sessions(path: &Path) -> Vec<(String, &'static str)> {
    let store = Store::open(path).unwrap();
    let journal = store.new_session();
    let forked = journal.session_id().to_owned();
    let model = ScriptedModel::new()
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})))
        .reply(Reply::new().text("It says hello.").usage(Usage::new(120, 30)))
        .reply(Reply::new().text("You're welcome.").usage(Usage::new(200, 8)));
    let mut session =
        builder(model, "/work/project").system_prompt("be brief").journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut NullSink).await.unwrap();
    session.run("thanks", &mut NullSink).await.unwrap();
    drop(session);
    let answer = store.show(&forked).unwrap().history[3].0;
    store.fork(&forked, answer).unwrap();
    let mut session = builder(ScriptedModel::new().answer("Another path."), "/work/project")
        .resume(store.open_session(&forked).unwrap())
        .await
        .unwrap();
    session.run("something else", &mut NullSink).await.unwrap();
    drop(session);

    let journal = store.new_session();
    let other = journal.session_id().to_owned();
    // The second turn finds no reply: the model fails and the turn rolls back.
    let mut session =
        builder(ScriptedModel::new().answer("Hi."), "/work/other").journal(journal).build().await.unwrap();
    session.run("hello", &mut NullSink).await.unwrap();
    session.run("this one fails", &mut NullSink).await.unwrap_err();
    drop(session);
    vec![(forked, "/work/project"), (other, "/work/other")]
}

/// Column names of `table` (empty when there is no such table).
fn columns(connection: &Connection, schema: &str, table: &str) -> Vec<String> {
    let mut statement = connection.prepare(&format!("PRAGMA {schema}.table_info({table})")).unwrap();
    statement.query_map([], |r| r.get(1)).unwrap().map(Result::unwrap).collect()
}

/// Writes a database at exactly `version`: an empty file for 0, else the
/// released migrations up to it (each in its transaction, with its
/// `user_version`, as `src/schema.rs` applies them), then the rows of
/// `rows` (a current database), keeping only the columns `version` had.
fn database_at(version: usize, path: &Path, rows: &Path) {
    if version == 0 {
        std::fs::File::create(path).unwrap();
        return;
    }
    let mut connection = Connection::open(path).unwrap();
    for (index, sql) in RELEASED[..version].iter().enumerate() {
        let transaction = connection.transaction().unwrap();
        transaction.execute_batch(sql).unwrap();
        transaction.pragma_update(None, "user_version", index as i64 + 1).unwrap();
        transaction.commit().unwrap();
    }
    connection.execute("ATTACH DATABASE ?1 AS current", [rows.to_str().unwrap()]).unwrap();
    for table in TABLES {
        let current = columns(&connection, "current", table);
        let kept: Vec<String> =
            columns(&connection, "main", table).into_iter().filter(|c| current.contains(c)).collect();
        if kept.is_empty() {
            continue;
        }
        let list = kept.join(", ");
        connection
            .execute_batch(&format!("INSERT INTO main.{table} ({list}) SELECT {list} FROM current.{table}"))
            .unwrap();
    }
    connection.execute_batch("DETACH DATABASE current").unwrap();
    let version_now: i64 = connection.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version_now, version as i64);
}

/// The schema as SQLite stores it: every table and index with its SQL.
fn schema_of(path: &Path) -> Vec<(String, String, Option<String>)> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .unwrap();
    statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap()
}

fn messages(detail: &SessionDetail) -> Vec<Message> {
    detail.history.iter().map(|(_, m)| m.clone()).collect()
}

#[test]
fn the_copies_build_the_schema_the_store_creates() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        RELEASED.len() as i64,
        bosun_store::schema_version(),
        "src/schema.rs has a migration this file has no copy of: append it to RELEASED"
    );
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).unwrap());
    let copied = dir.path().join("copied.db");
    let empty = dir.path().join("empty.db");
    drop(Store::open(&empty).unwrap());
    database_at(RELEASED.len(), &copied, &empty);
    assert_eq!(user_version(&copied), user_version(&fresh));
    assert_eq!(schema_of(&copied), schema_of(&fresh), "the copies differ from the crate's migrations");
}

/// What the store says about one session.
struct Seen {
    summary: SessionSummary,
    detail: SessionDetail,
}

fn seen(store: &Store, id: &str) -> Seen {
    let summary = store.list(&ListFilter::default()).unwrap().into_iter().find(|s| s.id == id).unwrap();
    Seen { summary, detail: store.show(id).unwrap() }
}

/// Builds a version-`version` database from `rows`, opens it, and checks the
/// upgrade against what the store said about the same rows at the current
/// version (`expected`).
async fn upgrade_from(
    version: usize,
    dir: &Path,
    rows: &Path,
    sessions: &[(String, &'static str)],
    expected: &[Seen],
) {
    let context = format!("upgrading from version {version}");
    let path = dir.join(format!("v{version}.db"));
    database_at(version, &path, rows);

    let store = Store::open(&path).unwrap_or_else(|e| panic!("{context}: {e}"));
    assert_eq!(user_version(&path), bosun_store::schema_version(), "{context}");
    let fresh = dir.join("fresh.db");
    if !fresh.exists() {
        drop(Store::open(&fresh).unwrap());
    }
    assert_eq!(schema_of(&path), schema_of(&fresh), "{context}: the upgraded schema is the current one");

    let listed = store.list(&ListFilter::default()).unwrap();
    if version == 0 {
        assert!(listed.is_empty(), "{context}");
    } else {
        let order = |list: &[SessionSummary]| list.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        let want: Vec<String> = {
            let mut want: Vec<&SessionSummary> = expected.iter().map(|s| &s.summary).collect();
            want.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
            want.into_iter().map(|s| s.id.clone()).collect()
        };
        assert_eq!(order(&listed), want, "{context}: newest first");
        for ((id, workspace), was) in sessions.iter().zip(expected) {
            let now = seen(&store, id);
            // A version without per-session usage has it totalled from the
            // messages (migration 3), like message_count (migration 2).
            // What turns spent by bucket is recorded from version 4 on;
            // an older session starts from nothing spent there.
            let mut want = was.summary.clone();
            if version < 4 {
                want.spend = Default::default();
            }
            assert_eq!(now.summary, want, "{context}: counted from the messages");
            assert_eq!(now.detail.head_branch, was.detail.head_branch, "{context}");
            assert_eq!(now.detail.branches, was.detail.branches, "{context}");
            assert_eq!(now.detail.history, was.detail.history, "{context}");
            let filtered = store.list(&ListFilter::workspace(*workspace)).unwrap();
            assert_eq!(filtered.iter().map(|s| &s.id).collect::<Vec<_>>(), [id], "{context}");

            // Resume the head and continue: the records replay, new writes
            // land in the upgraded tables.
            let mut session = builder(ScriptedModel::new().answer("Upgraded."), workspace)
                .resume(store.open_session(id).unwrap_or_else(|e| panic!("{context}: {e}")))
                .await
                .unwrap_or_else(|e| panic!("{context}: resuming {id}: {e}"));
            assert_eq!(session.history(), messages(&was.detail).as_slice(), "{context}");
            session.run("still here?", &mut NullSink).await.unwrap();
            drop(session);
            let after = seen(&store, id);
            assert_eq!(after.summary.message_count, was.summary.message_count + 2, "{context}");
            let texts: Vec<String> = after.detail.history.iter().map(|(_, m)| m.text()).collect();
            assert_eq!(texts[texts.len() - 2..], ["still here?", "Upgraded."], "{context}");
        }
    }
    // A new session works too.
    let mut session = builder(ScriptedModel::new().answer("New."), "/work/new")
        .journal(store.new_session())
        .build()
        .await
        .unwrap();
    session.run("first", &mut NullSink).await.unwrap();
    drop(session);
    assert_eq!(store.list(&ListFilter::workspace("/work/new")).unwrap()[0].message_count, 2, "{context}");
    drop(store);

    // Opening again upgrades nothing more and changes nothing.
    let schema = schema_of(&path);
    let listed = Store::open(&path).unwrap().list(&ListFilter::default()).unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap(), listed, "{context}");
    assert_eq!(schema_of(&path), schema, "{context}");
    assert_eq!(user_version(&path), bosun_store::schema_version(), "{context}");
}

#[tokio::test]
async fn upgrades_from_every_earlier_version() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.db");
    let sessions = write_sessions(&rows).await;
    let expected: Vec<Seen> = {
        let store = Store::open(&rows).unwrap();
        sessions.iter().map(|(id, _)| seen(&store, id)).collect()
    };
    // Rows as the sessions left them: a fork, a rolled-back turn, usage.
    assert_eq!(expected[0].detail.branches.len(), 2);
    assert_eq!(expected[0].summary.message_count, 8, "6 on the first branch, 2 on the fork");
    assert_eq!(expected[1].summary.message_count, 2, "the failed turn left no message");
    assert_ne!(expected[0].summary.usage, Usage::default());

    let latest = bosun_store::schema_version() as usize;
    assert!(latest >= 2, "there are earlier versions to upgrade from");
    for version in 0..latest {
        upgrade_from(version, dir.path(), &rows, &sessions, &expected).await;
    }
}

#[tokio::test]
async fn upgrades_an_empty_sqlite_database() {
    // Version 0 also looks like this: a valid SQLite file with no tables
    // (say, created by a bosun killed before its first migration committed).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch("CREATE TABLE t (x); DROP TABLE t;").unwrap();
    }
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    assert_eq!(user_version(&path), 0);
    let store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), bosun_store::schema_version());
    let mut session = builder(ScriptedModel::new().answer("Hi."), "/work/project")
        .journal(store.new_session())
        .build()
        .await
        .unwrap();
    session.run("hello", &mut NullSink).await.unwrap();
    drop(session);
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].message_count, 2);
}

#[tokio::test]
async fn a_version_5_database_keeps_its_sessions_and_then_records_sub_agents() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.db");
    let sessions = write_sessions(&rows).await;
    let expected: Vec<Seen> = {
        let store = Store::open(&rows).unwrap();
        sessions.iter().map(|(id, _)| seen(&store, id)).collect()
    };
    let path = dir.path().join("v5.db");
    database_at(5, &path, &rows);
    let columns_before = columns(&Connection::open(&path).unwrap(), "main", "sessions");
    assert!(!columns_before.iter().any(|c| c.starts_with("parent_")), "{columns_before:?}");

    let store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), bosun_store::schema_version());
    // Every session written before sub-agents were recorded is top-level:
    // listed by default, with no parent and no children.
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), sessions.len());
    for ((id, _), was) in sessions.iter().zip(&expected) {
        let now = seen(&store, id);
        assert_eq!(now.summary, was.summary);
        assert_eq!(now.summary.parent, None);
        assert_eq!(now.detail.history, was.detail.history);
        assert!(store.children(id).unwrap().is_empty());
    }

    // A sub-agent of an upgraded session records its link.
    let (parent, workspace) = &sessions[0];
    let journal = store.new_session().with_parent(parent.clone(), "call_1");
    let child = journal.session_id().to_owned();
    let mut session =
        builder(ScriptedModel::new().answer("Child."), workspace).journal(journal).build().await.unwrap();
    session.run("a task", &mut NullSink).await.unwrap();
    drop(session);
    let children = store.children(parent).unwrap();
    assert_eq!(children.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [child.as_str()]);
    let link = children[0].parent.as_ref().unwrap();
    assert_eq!((link.session.as_str(), link.call.as_str()), (parent.as_str(), "call_1"));
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), sessions.len(), "the child is not listed");
    assert_eq!(store.list(&ListFilter::default().with_children()).unwrap().len(), sessions.len() + 1);
}
