//! Versioned schema migrations, kept in `PRAGMA user_version`. Each step is
//! applied in its own transaction; a database newer than this build is
//! refused without being touched.

use rusqlite::{Connection, TransactionBehavior};

/// Migrations in order; index + 1 is the version each one produces.
pub(crate) const MIGRATIONS: &[&str] = &[
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
    // 9: the reasoning effort the session's model ran at, as the user set
    // it (`low`, `medium`, `high`, `off`; NULL: the model's default).
    "ALTER TABLE sessions ADD COLUMN effort TEXT;",
    // 10: the events a served session emitted, in the JSON form of `exec
    // --json`, numbered from 1 per session: what a client that reconnects
    // with `Last-Event-ID` missed (`bosun serve`).
    "CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;",
];

/// The newest version this build writes.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Brings `connection` up to `target` (normally [`latest`]). Each step reads
/// the version inside an immediate transaction, so two processes opening the
/// same new database at once apply every step exactly once.
pub(crate) fn migrate_to(connection: &mut Connection, target: i64) -> rusqlite::Result<()> {
    loop {
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: i64 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if current >= target {
            return transaction.commit();
        }
        transaction.execute_batch(MIGRATIONS[current as usize])?;
        transaction.pragma_update(None, "user_version", current + 1)?;
        transaction.commit()?;
    }
}
