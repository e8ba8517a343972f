//! Versioned schema migrations, the version kept in `schema_version`. Each
//! step runs in its own transaction under a transaction-scoped advisory
//! lock, so two hosts starting at once apply every step exactly once; a
//! database newer than this build is refused without being touched.
//!
//! Records, authorities and event bodies are JSON kept as `text`, not
//! `jsonb`: `jsonb` refuses the `\u0000` a tool's output may hold, and the
//! text is what the SQLite store keeps too (`bosun-store`'s `schema.rs`).

use tokio_postgres::Client;

use crate::error::{PgError, column};

/// The advisory lock every migration step takes (any constant both hosts
/// agree on: `bosun` in ASCII).
const MIGRATION_LOCK: i64 = 0x0062_6f73_756e;

/// Migrations in order; index + 1 is the version each one produces.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the version, sessions, the per-session record log, leases, and
    // the events a served session emitted.
    "CREATE TABLE schema_version (
        version BIGINT NOT NULL
    );
    INSERT INTO schema_version (version) VALUES (0);
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
        workspace TEXT,
        title TEXT,
        authority TEXT NOT NULL,
        authority_digest TEXT NOT NULL,
        model TEXT,
        base_url TEXT,
        effort TEXT,
        parent_session TEXT,
        parent_call TEXT,
        record_count BIGINT NOT NULL DEFAULT 0,
        message_count BIGINT NOT NULL DEFAULT 0,
        usage TEXT NOT NULL DEFAULT '{}',
        spend TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX sessions_by_update ON sessions (updated_at DESC);
    CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at DESC);
    CREATE INDEX sessions_by_parent ON sessions (parent_session);
    CREATE TABLE records (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        boot_id TEXT NOT NULL,
        pid BIGINT NOT NULL,
        token TEXT NOT NULL,
        acquired_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );",
];

/// The newest version this build writes.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Brings the database up to `target` (normally [`latest`]), one step per
/// transaction. `url` (redacted) names the server in errors.
pub(crate) async fn migrate_to(client: &mut Client, target: i64, url: &str) -> Result<(), PgError> {
    let db = |e: tokio_postgres::Error| PgError::from_db(url, &e);
    loop {
        let transaction = client.transaction().await.map_err(db)?;
        transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(db)?;
        let exists: bool = transaction
            .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(column)?;
        let current: i64 = if exists {
            transaction
                .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
                .await
                .map_err(db)?
                .try_get(0)
                .map_err(column)?
        } else {
            0
        };
        if current > latest() {
            // Rolled back as it is dropped: nothing was changed.
            return Err(PgError::NewerSchema { url: url.to_owned(), found: current, supported: latest() });
        }
        if current >= target {
            return transaction.commit().await.map_err(db);
        }
        let step = usize::try_from(current).unwrap_or_default();
        transaction.batch_execute(MIGRATIONS[step]).await.map_err(db)?;
        transaction.execute("UPDATE schema_version SET version = $1", &[&(current + 1)]).await.map_err(db)?;
        transaction.commit().await.map_err(db)?;
    }
}
