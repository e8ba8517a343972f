//! [`PgStore`]: a connection to the database (migrated when it opens), the
//! lease settings its journals take, and what is read or deleted outside a
//! journal.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use bosun_core::{JournalRecord, Spend, Usage};
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::{Client, GenericClient, NoTls};

use crate::error::{PgError, column};
use crate::lease::{self, LeaseSettings};
use crate::schema;
use crate::url::PgUrl;

/// The fewest characters of a session id [`PgStore::resolve_id`] takes
/// for a part of it (as the SQLite store).
pub const MIN_ID_PREFIX: usize = 8;
/// Candidates an ambiguous id names.
const AMBIGUOUS_SHOWN: usize = 5;

/// Sessions in one Postgres database, shared by every host pointed at it.
/// Cheap to clone; clones share one connection for what is read outside a
/// journal (each journal has its own).
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    url: PgUrl,
    settings: LeaseSettings,
    /// Connected again when the server dropped it.
    client: Mutex<Option<Client>>,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore").field("url", &self.inner.url).field("leases", &self.inner.settings).finish()
    }
}

/// What the store keeps of a session beside its records.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PgSession {
    /// Its id.
    pub id: String,
    /// Its first prompt, on one line, shortened.
    pub title: Option<String>,
    /// The workspace it runs in.
    pub workspace: Option<String>,
    /// The model of its latest turn, when its journal was told.
    pub model: Option<String>,
    /// The base URL that model was reached at, when the user gave one.
    pub base_url: Option<String>,
    /// The reasoning effort that model ran at, when the user set one.
    pub effort: Option<String>,
    /// The parent session and its tool call, for a sub-agent's session.
    pub parent: Option<(String, String)>,
    /// The digest of the authority it runs under now.
    pub authority_digest: String,
    /// How many journal records it has.
    pub record_count: i64,
    /// How many messages its history holds (a rolled-back turn's are not
    /// counted), as the SQLite store counts them.
    pub message_count: i64,
    /// What its model calls used, a rolled-back turn's included.
    pub usage: Usage,
    /// What its turns spent, by bucket and priced.
    pub spend: Spend,
    /// When it was created, by the database's clock.
    pub created_at: SystemTime,
    /// When a record was last written to it, by the database's clock.
    pub updated_at: SystemTime,
}

impl PgStore {
    /// Connects to the database at `url` and brings its schema up to this
    /// build's, with the default leases (15 s, renewed every 5 s).
    ///
    /// # Errors
    /// When the URL does not parse, the server cannot be reached, or the
    /// database was migrated by a newer bosun ([`PgError::NewerSchema`],
    /// the database left untouched).
    pub async fn connect(url: &str) -> Result<Self, PgError> {
        Self::connect_with(url, LeaseSettings::default()).await
    }

    /// [`PgStore::connect`], with journals taking leases as `settings` say.
    ///
    /// # Errors
    /// As [`PgStore::connect`].
    pub async fn connect_with(url: &str, settings: LeaseSettings) -> Result<Self, PgError> {
        Self::connect_to(PgUrl::parse(url)?, settings).await
    }

    /// [`PgStore::connect_with`] a URL already parsed (a configuration's).
    ///
    /// # Errors
    /// As [`PgStore::connect`].
    pub async fn connect_to(url: PgUrl, settings: LeaseSettings) -> Result<Self, PgError> {
        let mut client = connect(&url).await?;
        schema::migrate_to(&mut client, schema::latest(), &url.redacted()).await?;
        lease::sweep(&client, &url.redacted()).await?;
        Ok(Self { inner: Arc::new(Inner { url, settings, client: Mutex::new(Some(client)) }) })
    }

    /// The URL it is connected to.
    pub fn url(&self) -> &PgUrl {
        &self.inner.url
    }

    /// The lease settings its journals take.
    pub fn lease_settings(&self) -> &LeaseSettings {
        &self.inner.settings
    }

    pub(crate) fn redacted(&self) -> String {
        self.inner.url.redacted()
    }

    pub(crate) fn db(&self, error: &tokio_postgres::Error) -> PgError {
        PgError::from_db(&self.redacted(), error)
    }

    /// The store's connection, made again if the server dropped it.
    pub(crate) async fn client(&self) -> Result<MappedMutexGuard<'_, Client>, PgError> {
        let mut guard = self.inner.client.lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = Some(connect(&self.inner.url).await?);
        }
        MutexGuard::try_map(guard, Option::as_mut)
            .map_err(|_| PgError::Database("the store's connection vanished".into()))
    }

    /// The session `id`.
    ///
    /// # Errors
    /// [`PgError::NotFound`] when there is none; when the database fails.
    pub async fn session(&self, id: &str) -> Result<PgSession, PgError> {
        let client = self.client().await?;
        let row = client
            .query_opt(&format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"), &[&id])
            .await
            .map_err(|e| self.db(&e))?
            .ok_or_else(|| PgError::NotFound { what: "session", id: id.to_owned() })?;
        session_of(&row)
    }

    /// Sessions, most recently written first: those in `workspace` only
    /// when it is given, at most `limit`.
    ///
    /// # Errors
    /// When the database fails or a row is unreadable.
    pub async fn list(&self, workspace: Option<&str>, limit: usize) -> Result<Vec<PgSession>, PgError> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE $1::text IS NULL OR workspace = $1
                     ORDER BY updated_at DESC, id LIMIT $2"
                ),
                &[&workspace, &limit],
            )
            .await
            .map_err(|e| self.db(&e))?;
        rows.iter().map(session_of).collect()
    }

    /// The id of the one session whose id is `given`, starts with it or
    /// ends with it, by the SQLite store's rules (`bosun_store::Store::resolve_id`):
    /// a whole id, or a part of at least [`MIN_ID_PREFIX`] characters.
    ///
    /// # Errors
    /// [`PgError::ShortId`] for a shorter part, [`PgError::NotFound`] when
    /// no id starts or ends with it, [`PgError::Ambiguous`] (naming the
    /// candidates) when more than one does.
    pub async fn resolve_id(&self, given: &str) -> Result<String, PgError> {
        let client = self.client().await?;
        let exact = client
            .query_opt("SELECT id FROM sessions WHERE id = $1", &[&given])
            .await
            .map_err(|e| self.db(&e))?;
        if let Some(row) = exact {
            return row.try_get(0).map_err(column);
        }
        if given.chars().count() < MIN_ID_PREFIX {
            return Err(PgError::ShortId { given: given.to_owned() });
        }
        let shown = AMBIGUOUS_SHOWN as i64;
        let rows = client
            .query(
                "SELECT id FROM sessions WHERE starts_with(id, $1) OR right(id, length($1)) = $1
                 ORDER BY id LIMIT $2",
                &[&given, &(shown + 1)],
            )
            .await
            .map_err(|e| self.db(&e))?;
        let mut found =
            rows.iter().map(|row| row.try_get(0).map_err(column)).collect::<Result<Vec<String>, _>>()?;
        match found.len() {
            0 => Err(PgError::NotFound { what: "session", id: given.to_owned() }),
            1 => Ok(found.remove(0)),
            _ => {
                if found.len() > AMBIGUOUS_SHOWN {
                    found.truncate(AMBIGUOUS_SHOWN);
                    found.push("…".to_owned());
                }
                Err(PgError::Ambiguous { given: given.to_owned(), candidates: found })
            }
        }
    }

    /// The ids of the sessions, most recently written first.
    ///
    /// # Errors
    /// When the database fails.
    pub async fn session_ids(&self) -> Result<Vec<String>, PgError> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT id FROM sessions ORDER BY updated_at DESC, id", &[])
            .await
            .map_err(|e| self.db(&e))?;
        rows.iter().map(|row| row.try_get(0).map_err(column)).collect()
    }

    /// Every journal record of `session`, in order (empty when there is no
    /// such session).
    ///
    /// # Errors
    /// [`PgError::Corrupt`] when one is unreadable or the numbering has a
    /// gap; when the database fails.
    pub async fn records(&self, session: &str) -> Result<Vec<JournalRecord>, PgError> {
        let client = self.client().await?;
        read_records(&*client, session, &self.redacted()).await
    }

    /// Deletes `session` with its records and events. Refused while a live
    /// holder has its lease.
    ///
    /// # Errors
    /// [`PgError::Leased`], [`PgError::NotFound`]; when the database fails.
    pub async fn delete(&self, session: &str) -> Result<(), PgError> {
        let url = self.redacted();
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(|e| PgError::from_db(&url, &e))?;
        lease::check_free(&transaction, session, &self.inner.settings, &url).await?;
        let deleted = transaction
            .execute("DELETE FROM sessions WHERE id = $1", &[&session])
            .await
            .map_err(|e| PgError::from_db(&url, &e))?;
        transaction
            .execute("DELETE FROM leases WHERE session_id = $1", &[&session])
            .await
            .map_err(|e| PgError::from_db(&url, &e))?;
        transaction.commit().await.map_err(|e| PgError::from_db(&url, &e))?;
        if deleted == 0 {
            return Err(PgError::NotFound { what: "session", id: session.to_owned() });
        }
        Ok(())
    }
}

/// The columns [`session_of`] reads, in its order.
const SESSION_COLUMNS: &str = "id, title, workspace, model, base_url, effort, parent_session, parent_call, \
     authority_digest, record_count, created_at, updated_at, message_count, usage, spend";

/// A session's row as [`PgSession`].
fn session_of(row: &tokio_postgres::Row) -> Result<PgSession, PgError> {
    let id: String = row.try_get(0).map_err(column)?;
    let parent_session: Option<String> = row.try_get(6).map_err(column)?;
    let parent_call: Option<String> = row.try_get(7).map_err(column)?;
    Ok(PgSession {
        title: row.try_get(1).map_err(column)?,
        workspace: row.try_get(2).map_err(column)?,
        model: row.try_get(3).map_err(column)?,
        base_url: row.try_get(4).map_err(column)?,
        effort: row.try_get(5).map_err(column)?,
        parent: parent_session.zip(parent_call),
        authority_digest: row.try_get(8).map_err(column)?,
        record_count: row.try_get(9).map_err(column)?,
        created_at: row.try_get(10).map_err(column)?,
        updated_at: row.try_get(11).map_err(column)?,
        message_count: row.try_get(12).map_err(column)?,
        usage: json_column(row, 13, &id)?,
        spend: json_column(row, 14, &id)?,
        id,
    })
}

/// Column `index` of `row`, JSON bosun wrote, read back.
fn json_column<T: serde::de::DeserializeOwned>(
    row: &tokio_postgres::Row,
    index: usize,
    session: &str,
) -> Result<T, PgError> {
    let text: &str = row.try_get(index).map_err(column)?;
    serde_json::from_str(text).map_err(|e| PgError::Corrupt {
        session: session.to_owned(),
        detail: format!("its row's column {index} is unreadable: {e}"),
    })
}

/// Opens a connection to `url`; its I/O runs as a task of the current
/// runtime until the client is dropped.
pub(crate) async fn connect(url: &PgUrl) -> Result<Client, PgError> {
    let (client, connection) =
        url.config().connect(NoTls).await.map_err(|e| PgError::from_db(&url.redacted(), &e))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "a Postgres connection ended");
        }
    });
    Ok(client)
}

/// `session`'s records in order, each checked to parse and to follow the
/// one before without a gap.
pub(crate) async fn read_records(
    client: &impl GenericClient,
    session: &str,
    url: &str,
) -> Result<Vec<JournalRecord>, PgError> {
    let rows = client
        .query("SELECT seq, body FROM records WHERE session_id = $1 ORDER BY seq", &[&session])
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    let mut records = Vec::with_capacity(rows.len());
    for (expected, row) in (0_i64..).zip(&rows) {
        let seq: i64 = row.try_get(0).map_err(column)?;
        if seq != expected {
            return Err(PgError::Corrupt {
                session: session.to_owned(),
                detail: format!("record {expected} is missing (the next stored is {seq})"),
            });
        }
        let body: &str = row.try_get(1).map_err(column)?;
        let record = serde_json::from_str(body).map_err(|e| PgError::Corrupt {
            session: session.to_owned(),
            detail: format!("record {seq} is unreadable: {e}"),
        })?;
        records.push(record);
    }
    Ok(records)
}
