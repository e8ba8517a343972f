//! Where the server's sessions and their events are kept: the local file
//! the other commands use, or a Postgres database several servers share
//! (`store_url`), so that any of them lists, resumes and streams a session
//! another started, and never two run it at once (the journal's lease).

use bosun_store::{ListFilter, Store, StoredEvent};
use bosun_store_pg::{PgEvent, PgStore};

/// The sessions' store.
#[derive(Clone, Debug)]
pub(crate) enum SessionStore {
    /// The local SQLite file.
    Local(Store),
    /// A Postgres database shared by hosts.
    Shared(PgStore),
}

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreFailure {
    #[error(transparent)]
    Local(#[from] bosun_store::StoreError),
    #[error(transparent)]
    Shared(#[from] bosun_store_pg::PgError),
    #[error("{0}")]
    Unsupported(&'static str),
    #[error("the store's worker stopped: {0}")]
    Worker(String),
}

impl StoreFailure {
    /// Whether the session or id asked for is not there (or the id is
    /// ambiguous or too short): the client's mistake, not the server's.
    pub(crate) fn is_not_found(&self) -> bool {
        match self {
            Self::Local(error) => !error.is_storage_fault(),
            Self::Shared(error) => !error.is_storage_fault(),
            Self::Unsupported(_) | Self::Worker(_) => false,
        }
    }
}

/// A stored session, as a listing shows it.
pub(crate) struct Listed {
    pub(crate) id: String,
    pub(crate) workspace: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) title: Option<String>,
}

/// Runs a call on the SQLite store off the async threads: it may wait for
/// the file's write lock.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, bosun_store::StoreError> + Send + 'static,
) -> Result<T, StoreFailure> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| StoreFailure::Worker(e.to_string()))?
        .map_err(Into::into)
}

impl SessionStore {
    pub(crate) async fn last_event(&self, session: &str) -> Result<u64, StoreFailure> {
        match self {
            Self::Local(store) => {
                let (store, session) = (store.clone(), session.to_owned());
                blocking(move || store.last_event(&session)).await
            }
            Self::Shared(store) => Ok(store.last_event(session).await?),
        }
    }

    pub(crate) async fn events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreFailure> {
        match self {
            Self::Local(store) => {
                let (store, session) = (store.clone(), session.to_owned());
                blocking(move || store.events_after(&session, after, limit)).await
            }
            Self::Shared(store) => Ok(store
                .events_after(session, after, limit)
                .await?
                .into_iter()
                .map(|event| StoredEvent::new(event.seq, event.body))
                .collect()),
        }
    }

    pub(crate) async fn append_events(
        &self,
        session: &str,
        events: &[StoredEvent],
    ) -> Result<(), StoreFailure> {
        match self {
            Self::Local(store) => {
                let (store, session, events) = (store.clone(), session.to_owned(), events.to_vec());
                blocking(move || store.append_events(&session, &events)).await
            }
            Self::Shared(store) => {
                let events: Vec<PgEvent> =
                    events.iter().map(|e| PgEvent::new(e.seq, e.body.clone())).collect();
                Ok(store.append_events(session, &events).await?)
            }
        }
    }

    /// The newest `limit` stored sessions.
    pub(crate) async fn list(&self, limit: usize) -> Result<Vec<Listed>, StoreFailure> {
        match self {
            Self::Local(store) => {
                let mut filter = ListFilter::default();
                filter.limit = Some(limit);
                let listed = store.list(&filter)?.into_iter();
                Ok(listed
                    .map(|s| Listed { id: s.id, workspace: s.workspace, model: s.model, title: s.title })
                    .collect())
            }
            Self::Shared(store) => {
                let listed = store.list(None, limit).await?.into_iter();
                Ok(listed
                    .map(|s| Listed { id: s.id, workspace: s.workspace, model: s.model, title: s.title })
                    .collect())
            }
        }
    }

    /// The whole id of the one session `given` names.
    pub(crate) async fn resolve_id(&self, given: &str) -> Result<String, StoreFailure> {
        match self {
            Self::Local(store) => Ok(store.resolve_id(given)?),
            Self::Shared(store) => Ok(store.resolve_id(given).await?),
        }
    }

    /// The workspace session `id` ran in.
    pub(crate) async fn workspace(&self, id: &str) -> Result<Option<String>, StoreFailure> {
        match self {
            Self::Local(store) => Ok(store.show(id)?.summary.workspace),
            Self::Shared(store) => Ok(store.session(id).await?.workspace),
        }
    }

    pub(crate) async fn delete(&self, id: &str) -> Result<(), StoreFailure> {
        match self {
            Self::Local(store) => Ok(store.delete(id)?),
            Self::Shared(store) => Ok(store.delete(id).await?),
        }
    }

    /// A new branch of session `id` at message `at` (the newest when
    /// `None`), now its head.
    pub(crate) fn fork_at(&self, id: &str, at: Option<i64>) -> Result<String, StoreFailure> {
        match self {
            Self::Local(store) => {
                let at = match at {
                    Some(at) => Some(at),
                    None => store.show(id)?.history.last().map(|(message, _)| *message),
                };
                Ok(store.fork_at(id, at)?)
            }
            // Branches live in the local file's message tables; the shared
            // store keeps the journal alone.
            Self::Shared(_) => Err(StoreFailure::Unsupported(
                "forking is not available on the shared Postgres store (store_url); it is on the local file",
            )),
        }
    }
}
