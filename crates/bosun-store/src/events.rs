//! The events a served session emitted (`bosun serve`), numbered from 1 per
//! session, in the JSON form a client reads: what one that reconnects with
//! `Last-Event-ID` missed comes from here, so it sees every event once
//! across reconnects and restarts. Deleting the session deletes them.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use crate::error::StoreError;
use crate::store::Store;

/// One stored event: its number in the session and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredEvent {
    /// Its number, from 1, without gaps.
    pub seq: u64,
    /// The event's JSON.
    pub body: String,
}

impl StoredEvent {
    /// An event numbered `seq`.
    pub fn new(seq: u64, body: impl Into<String>) -> Self {
        Self { seq, body: body.into() }
    }
}

impl Store {
    /// Appends `events` to `session`'s in one transaction. Each must be
    /// numbered one after the last stored; a number already stored is
    /// refused, so a writer that retries never duplicates one.
    ///
    /// # Errors
    /// When the session does not exist, a number is out of order, or the
    /// database fails.
    pub fn append_events(&self, session: &str, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut connection = self.lock_to_write()?;
        // Immediate: the read of the last number and the inserts are one write
        // transaction, so it waits for a journal's writer instead of failing
        // when one commits between them.
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        let last = last_seq(&transaction, session).map_err(|e| self.sql(e))?;
        for (expected, event) in (last + 1..).zip(events) {
            if event.seq != expected {
                return Err(StoreError::Invalid(format!(
                    "session {session}'s event {} is out of order: {expected} comes next",
                    event.seq
                )));
            }
            transaction
                .execute(
                    "INSERT INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)",
                    params![session, to_sql(event.seq), event.body],
                )
                .map_err(|e| self.sql(e))?;
        }
        transaction.commit().map_err(|e| self.sql(e))
    }

    /// Up to `limit` of `session`'s events after number `after`, in order.
    ///
    /// # Errors
    /// When the database fails.
    pub fn events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let connection = self.lock()?;
        let mut statement = connection
            .prepare_cached(
                "SELECT seq, body FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(|e| self.sql(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = statement
            .query_map(params![session, to_sql(after), limit], |row| {
                let seq: i64 = row.get(0)?;
                Ok(StoredEvent { seq: u64::try_from(seq).unwrap_or(0), body: row.get(1)? })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The number of `session`'s last stored event (0 when none).
    ///
    /// # Errors
    /// When the database fails.
    pub fn last_event(&self, session: &str) -> Result<u64, StoreError> {
        let connection = self.lock()?;
        last_seq(&connection, session).map_err(|e| self.sql(e))
    }
}

fn last_seq(connection: &rusqlite::Connection, session: &str) -> rusqlite::Result<u64> {
    let last: Option<i64> = connection
        .query_row("SELECT max(seq) FROM events WHERE session_id = ?1", [session], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(last.map_or(0, |seq| u64::try_from(seq).unwrap_or(0)))
}

/// SQLite integers are signed; event numbers never come near the limit.
fn to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}
