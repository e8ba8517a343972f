//! Leases: one process runs a session at a time. A lease names its holder's
//! pid and host; a lease whose process is gone is taken over.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::StoreError;

pub(crate) enum LeaseError {
    Held(StoreError),
    Sql(rusqlite::Error),
}

impl LeaseError {
    /// The store's error: a held lease as it is, SQL as `store` names it.
    pub(crate) fn in_store(self, store: &crate::Store) -> StoreError {
        match self {
            Self::Held(error) => error,
            Self::Sql(e) => store.sql(e),
        }
    }
}

impl From<rusqlite::Error> for LeaseError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sql(error)
    }
}

/// Lease tokens this process holds now. A lease row naming this process
/// with a token not in here was left behind (its release failed, e.g. on a
/// full disk) and is stale, though the pid lives. Process-wide on purpose:
/// the pid in a lease row is process-wide too.
fn live_tokens() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

fn is_live_here(token: &str) -> bool {
    live_tokens().lock().map(|set| set.contains(token)).unwrap_or(true)
}

/// This machine's name, as leases record it.
pub(crate) fn host() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

fn alive(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(rustix::io::Errno::PERM) => true,
        Err(_) => false,
    }
}

/// Fails when a live holder other than `own_token` has the session.
pub(crate) fn check_free(
    connection: &Connection,
    session: &str,
    own_token: Option<&str>,
) -> Result<(), LeaseError> {
    let holder: Option<(i64, String, String)> = connection
        .query_row("SELECT pid, host, token FROM leases WHERE session_id = ?1", [session], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((pid, holder_host, token)) = holder else { return Ok(()) };
    if own_token == Some(token.as_str()) {
        return Ok(());
    }
    let own_process = holder_host == host() && pid == i64::from(std::process::id());
    if own_process && !is_live_here(&token) {
        return Ok(());
    }
    // On another host we cannot tell whether it lives: assume it does.
    if holder_host != host() || alive(pid) {
        return Err(LeaseError::Held(StoreError::Leased {
            session: session.to_owned(),
            pid,
            host: holder_host,
        }));
    }
    Ok(())
}

/// Takes the lease for `token` (inside the caller's transaction).
pub(crate) fn acquire(connection: &Connection, session: &str, token: &str) -> Result<(), LeaseError> {
    check_free(connection, session, Some(token))?;
    connection.execute(
        "INSERT OR REPLACE INTO leases (session_id, pid, host, token, acquired_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![session, i64::from(std::process::id()), host(), token, crate::rows::now_ms()],
    )?;
    if let Ok(mut set) = live_tokens().lock() {
        set.insert(token.to_owned());
    }
    Ok(())
}

/// Gives the lease back if `token` still holds it.
pub(crate) fn release(connection: &Connection, session: &str, token: &str) -> rusqlite::Result<()> {
    // Forgotten first: even if the row cannot be deleted, it is stale now.
    if let Ok(mut set) = live_tokens().lock() {
        set.remove(token);
    }
    connection.execute("DELETE FROM leases WHERE session_id = ?1 AND token = ?2", params![session, token])?;
    Ok(())
}
