//! [`StoreArtifacts`]: a session's artifacts (whole tool outputs past the
//! output bound, see `bosun_core::artifacts`) in the store's database, one
//! synced transaction each, written on the blocking pool so a write never
//! stalls the caller's executor. Deleting a session deletes them.
//!
//! A sub-agent's session (one journaled with
//! [`crate::StoreJournal::with_parent`]) reads its ancestors' artifacts
//! too: a result of its parent names an artifact by id, and the parent may
//! hand that id on in the task. Not the other way round: a parent does not
//! read its child's artifacts, since what it gets of a child is the child's
//! answer. Each session writes under its own id.

use bosun_core::artifacts::{ArtifactError, ArtifactFuture, Artifacts};
use rusqlite::{OptionalExtension, params};

use crate::rows::now_ms;
use crate::store::Store;

/// How many generations of parents a read looks through: far past any real
/// nesting of sub-agents, and a bound should the links ever form a cycle.
const ANCESTORS: i64 = 16;

/// The artifacts of one session.
#[derive(Clone, Debug)]
pub struct StoreArtifacts {
    store: Store,
    session: String,
}

impl Store {
    /// The artifacts of `session`: it writes its own, and reads its own and
    /// its ancestors' (parent, grandparent, …), never its children's.
    pub fn artifacts(&self, session: impl Into<String>) -> StoreArtifacts {
        StoreArtifacts { store: self.clone(), session: session.into() }
    }
}

impl Artifacts for StoreArtifacts {
    fn put<'a>(&'a self, text: &'a str) -> ArtifactFuture<'a, String> {
        let (store, session, text) = (self.store.clone(), self.session.clone(), text.to_owned());
        Box::pin(async move {
            let id = uuid::Uuid::now_v7().to_string();
            let kept = id.clone();
            let written = tokio::task::spawn_blocking(move || {
                let connection = store.lock_to_write().map_err(|e| e.to_string())?;
                connection
                    .execute(
                        "INSERT INTO artifacts (id, session_id, created_at, body) VALUES (?1, ?2, ?3, ?4)",
                        params![kept, session, now_ms(), text],
                    )
                    .map_err(|e| store.sql(e).to_string())
            })
            .await;
            match written {
                Ok(Ok(_)) => Ok(id),
                Ok(Err(error)) => Err(ArtifactError(error)),
                Err(error) => Err(ArtifactError(format!("the write stopped: {error}"))),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> ArtifactFuture<'a, Option<String>> {
        let (store, session, id) = (self.store.clone(), self.session.clone(), id.to_owned());
        Box::pin(async move {
            let read = tokio::task::spawn_blocking(move || {
                let connection = store.lock().map_err(|e| e.to_string())?;
                connection
                    .query_row(
                        "WITH RECURSIVE line(session, depth) AS (
                            SELECT ?2, 0
                            UNION
                            SELECT s.parent_session, line.depth + 1 FROM sessions s JOIN line ON s.id = line.session
                            WHERE s.parent_session IS NOT NULL AND line.depth < ?3
                         )
                         SELECT body FROM artifacts WHERE id = ?1 AND session_id IN (SELECT session FROM line)",
                        params![id, session, ANCESTORS],
                        |row| row.get::<_, String>(0),
                    )
                    .optional()
                    .map_err(|e| store.sql(e).to_string())
            })
            .await;
            match read {
                Ok(result) => result.map_err(ArtifactError),
                Err(error) => Err(ArtifactError(format!("the read stopped: {error}"))),
            }
        })
    }
}
