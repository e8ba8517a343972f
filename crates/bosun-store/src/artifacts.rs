//! [`StoreArtifacts`]: a session's artifacts (whole tool outputs past the
//! output bound, see `bosun_core::artifacts`) in the store's database, one
//! synced transaction each, written on the blocking pool so a write never
//! stalls the caller's executor. Deleting a session deletes them.

use bosun_core::artifacts::{ArtifactError, ArtifactFuture, Artifacts};
use rusqlite::{OptionalExtension, params};

use crate::store::{Store, now_ms};

/// The artifacts of one session.
#[derive(Clone, Debug)]
pub struct StoreArtifacts {
    store: Store,
    session: String,
}

impl Store {
    /// The artifacts of `session` (a sub-agent is given its parent's).
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
                let connection = store.lock().map_err(|e| e.to_string())?;
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
                        "SELECT body FROM artifacts WHERE id = ?1 AND session_id = ?2",
                        params![id, session],
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
