//! The events a served session emitted (`bosun serve`), numbered from 1 per
//! session, in the JSON form a client reads: the same rules as the SQLite
//! store's (`bosun-store`'s `events.rs`): numbered from 1, no gap, no
//! duplicate, deleted with the session.

use crate::error::{PgError, column};
use crate::store::PgStore;

/// One stored event: its number in the session and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgEvent {
    /// Its number, from 1, without gaps.
    pub seq: u64,
    /// The event's JSON.
    pub body: String,
}

impl PgEvent {
    /// An event numbered `seq`.
    pub fn new(seq: u64, body: impl Into<String>) -> Self {
        Self { seq, body: body.into() }
    }
}

impl PgStore {
    /// Appends `events` to `session`'s in one transaction. Each must be
    /// numbered one after the last stored; a number already stored is
    /// refused, so a writer that retries never duplicates one. Writers of
    /// one session's events on several hosts take turns on its row.
    ///
    /// # Errors
    /// [`PgError::NotFound`] when the session does not exist,
    /// [`PgError::OutOfOrder`] when a number is out of order (nothing is
    /// written); when the database fails.
    pub async fn append_events(&self, session: &str, events: &[PgEvent]) -> Result<(), PgError> {
        if events.is_empty() {
            return Ok(());
        }
        let url = self.redacted();
        let db = |e: tokio_postgres::Error| PgError::from_db(&url, &e);
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(db)?;
        let exists = transaction
            .query_opt("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", &[&session])
            .await
            .map_err(db)?;
        if exists.is_none() {
            return Err(PgError::NotFound { what: "session", id: session.to_owned() });
        }
        let last: i64 = transaction
            .query_one("SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1", &[&session])
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(column)?;
        let last = u64::try_from(last).unwrap_or_default();
        for (expected, event) in (last + 1..).zip(events) {
            if event.seq != expected {
                return Err(PgError::OutOfOrder {
                    session: session.to_owned(),
                    detail: format!("event {} is out of order: {expected} comes next", event.seq),
                });
            }
            transaction
                .execute(
                    "INSERT INTO events (session_id, seq, body) VALUES ($1, $2, $3)",
                    &[&session, &to_sql(event.seq), &event.body],
                )
                .await
                .map_err(db)?;
        }
        transaction.commit().await.map_err(db)
    }

    /// Up to `limit` of `session`'s events after number `after`, in order.
    ///
    /// # Errors
    /// When the database fails.
    pub async fn events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<PgEvent>, PgError> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                "SELECT seq, body FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&session, &to_sql(after), &limit],
            )
            .await
            .map_err(|e| self.db(&e))?;
        rows.iter()
            .map(|row| {
                let seq: i64 = row.try_get(0).map_err(column)?;
                Ok(PgEvent {
                    seq: u64::try_from(seq).unwrap_or_default(),
                    body: row.try_get(1).map_err(column)?,
                })
            })
            .collect()
    }

    /// The number of `session`'s last stored event (0 when none).
    ///
    /// # Errors
    /// When the database fails.
    pub async fn last_event(&self, session: &str) -> Result<u64, PgError> {
        let client = self.client().await?;
        let last: i64 = client
            .query_one("SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1", &[&session])
            .await
            .map_err(|e| self.db(&e))?
            .try_get(0)
            .map_err(column)?;
        Ok(u64::try_from(last).unwrap_or_default())
    }
}

/// Postgres integers are signed; event numbers never come near the limit.
fn to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}
