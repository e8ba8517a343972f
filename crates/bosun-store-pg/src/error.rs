//! What can go wrong with the Postgres store, each naming the session or the
//! server (by its redacted URL), and how each maps onto a journal failure.

use bosun_core::{JournalError, JournalErrorKind};
use tokio_postgres::error::SqlState;

/// A failure of the Postgres store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The connection URL does not parse.
    #[error("the store URL `{url}` is not a Postgres connection URL: {detail}")]
    Url {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The server cannot be reached, or the connection to it was lost.
    #[error("cannot reach the Postgres server at `{url}`: {detail}")]
    Unavailable {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What the client or the server said.
        detail: String,
    },
    /// The database was migrated by a newer bosun.
    #[error(
        "the database at `{url}` has schema version {found}, newer than this bosun's {supported}; \
         upgrade bosun (the database was left untouched)"
    )]
    NewerSchema {
        /// The URL, its password replaced by `***`.
        url: String,
        /// Its version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// Another holder (another host, or another process) runs the session.
    #[error(
        "session {session} is in use by process {pid} on {host} (its lease runs for {expires_in_ms} ms more)"
    )]
    Leased {
        /// The session.
        session: String,
        /// The holder's host name.
        host: String,
        /// The holder's process id.
        pid: i64,
        /// How long its lease still runs unless renewed, in milliseconds
        /// (by the database's clock).
        expires_in_ms: i64,
    },
    /// This journal's lease expired or was taken over: nothing more may be
    /// written through it (the record it was asked to write was not).
    #[error(
        "session {session}'s lease was lost (it expired or another host took the session over); nothing was written"
    )]
    LeaseLost {
        /// The session.
        session: String,
    },
    /// No such session.
    #[error("no {what} `{id}`")]
    NotFound {
        /// What was looked for.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// A part of a session id shorter than [`crate::MIN_ID_PREFIX`]
    /// characters that is not a whole id.
    #[error("session id `{given}` is too short: give at least {min} characters of it", min = crate::MIN_ID_PREFIX)]
    ShortId {
        /// What was given.
        given: String,
    },
    /// A part of an id that more than one session's id starts or ends with.
    #[error("session id `{given}` is ambiguous: it matches {}; give more characters", candidates.join(", "))]
    Ambiguous {
        /// What was given.
        given: String,
        /// The ids it matches (at most a few, then `…`).
        candidates: Vec<String>,
    },
    /// A record or an event that breaks the order of what is stored;
    /// nothing was written.
    #[error("session {session}: {detail}")]
    OutOfOrder {
        /// The session.
        session: String,
        /// What is out of order.
        detail: String,
    },
    /// Something stored cannot be read back (a record whose JSON does not
    /// parse, a gap in the numbering).
    #[error("session {session} is damaged in the database: {detail}")]
    Corrupt {
        /// The session.
        session: String,
        /// What is wrong.
        detail: String,
    },
    /// The server's disk is full (SQLSTATE 53100); nothing of the failed
    /// write was kept.
    #[error(
        "the disk of the Postgres server at `{url}` is full ({detail}): free space on it, then try again"
    )]
    DiskFull {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What the server said.
        detail: String,
    },
    /// A value that cannot be stored as asked (a record that does not
    /// serialize).
    #[error("{0}")]
    Invalid(String),
    /// Any other failure the server reported.
    #[error("database error: {0}")]
    Database(String),
}

impl PgError {
    /// Maps a client or server error met while talking to the server at
    /// `url` (already redacted): a lost connection is [`PgError::Unavailable`],
    /// SQLSTATE 53100 [`PgError::DiskFull`].
    pub(crate) fn from_db(url: &str, error: &tokio_postgres::Error) -> Self {
        let detail = match error.as_db_error() {
            Some(db) => db.message().to_owned(),
            None => error.to_string(),
        };
        match error.code() {
            Some(code) if *code == SqlState::DISK_FULL => Self::DiskFull { url: url.to_owned(), detail },
            Some(code) if is_unavailable(code) => Self::Unavailable { url: url.to_owned(), detail },
            Some(_) => Self::Database(detail),
            // No SQLSTATE: the socket, the protocol or a closed client.
            None => Self::Unavailable { url: url.to_owned(), detail },
        }
    }

    /// Whether the store cannot be used as it is (the server is gone, its
    /// disk is full, its schema is newer), as opposed to a mistake in what
    /// it was asked.
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            Self::Unavailable { .. }
                | Self::DiskFull { .. }
                | Self::NewerSchema { .. }
                | Self::Corrupt { .. }
                | Self::Database(_)
        )
    }
}

/// A column that does not read as the type asked for.
pub(crate) fn column(error: tokio_postgres::Error) -> PgError {
    PgError::Database(format!("unexpected column: {error}"))
}

/// Connection exceptions (class 08), the server shutting down or not yet
/// up (57P01-57P03), too many connections (53300).
fn is_unavailable(code: &SqlState) -> bool {
    code.code().starts_with("08")
        || *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
        || *code == SqlState::TOO_MANY_CONNECTIONS
}

impl From<PgError> for JournalError {
    fn from(error: PgError) -> Self {
        let kind = match &error {
            PgError::DiskFull { .. } => JournalErrorKind::Full,
            PgError::Unavailable { .. }
            | PgError::Leased { .. }
            | PgError::LeaseLost { .. }
            | PgError::NotFound { .. }
            | PgError::Url { .. } => JournalErrorKind::Unavailable,
            PgError::Corrupt { .. } | PgError::NewerSchema { .. } => JournalErrorKind::Corrupt,
            PgError::OutOfOrder { .. } => JournalErrorKind::OutOfOrder,
            PgError::Invalid(_)
            | PgError::Database(_)
            | PgError::ShortId { .. }
            | PgError::Ambiguous { .. } => JournalErrorKind::Other,
        };
        JournalError::new(kind, error)
    }
}
