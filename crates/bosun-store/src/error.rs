//! What can go wrong with the store, each naming the file or session.

use std::path::PathBuf;

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file is not a bosun database (truncated, garbage, another format).
    #[error("`{path}` is not a readable bosun session database ({detail}); it was left untouched")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// The database was written by a newer bosun.
    #[error(
        "`{path}` has schema version {found}, newer than this bosun's {supported}; upgrade bosun (the file was left untouched)"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// The database cannot be created or opened (a read-only directory, a
    /// missing parent, permissions).
    #[error("cannot open `{path}`: {detail}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The disk (or the database's size limit) is full; nothing of the
    /// failed write was kept.
    #[error("the disk is full: {0}")]
    Full(String),
    /// Another process holds the session.
    #[error("session {session} is in use by process {pid} on {host}")]
    Leased {
        /// The session.
        session: String,
        /// The holder's pid.
        pid: i64,
        /// The holder's host name.
        host: String,
    },
    /// No such session (or branch, or message).
    #[error("no {what} `{id}`")]
    NotFound {
        /// What was looked for.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// A session id shorter than [`crate::MIN_ID_PREFIX`] characters that
    /// is not a whole id.
    #[error("session id `{given}` is too short: give at least {min} characters of it", min = crate::MIN_ID_PREFIX)]
    ShortId {
        /// What was given.
        given: String,
    },
    /// A prefix that more than one session's id starts with.
    #[error("session id `{prefix}` is ambiguous: it starts {}; give more characters", candidates.join(", "))]
    Ambiguous {
        /// What was given.
        prefix: String,
        /// The ids it starts (at most a few, then `…`).
        candidates: Vec<String>,
    },
    /// A request that cannot be met as asked (a fork inside a tool batch, an
    /// import of a session that exists).
    #[error("{0}")]
    Invalid(String),
    /// An export file that cannot be imported.
    #[error("line {line} of the export: {detail}")]
    Import {
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// Any other SQLite failure.
    #[error("database error: {0}")]
    Sqlite(String),
    /// Reading or writing an export.
    #[error("export I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl StoreError {
    /// Maps a SQLite error, recognising full disks, busy databases and
    /// corrupt files.
    pub(crate) fn from_sqlite(path: &std::path::Path, error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        if let rusqlite::Error::SqliteFailure(failure, message) = &error {
            let detail = message.clone().unwrap_or_else(|| failure.to_string());
            match failure.code {
                ErrorCode::DiskFull => return Self::Full(detail),
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                    return Self::Corrupt { path: path.to_owned(), detail };
                }
                ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied => {
                    return Self::Open { path: path.to_owned(), detail };
                }
                _ => {}
            }
        }
        Self::Sqlite(error.to_string())
    }
}

impl From<StoreError> for bosun_core::JournalError {
    fn from(error: StoreError) -> Self {
        use bosun_core::JournalErrorKind as Kind;
        let kind = match &error {
            StoreError::Full(_) => Kind::Full,
            StoreError::Leased { .. } | StoreError::Open { .. } | StoreError::NotFound { .. } => {
                Kind::Unavailable
            }
            StoreError::Corrupt { .. } | StoreError::NewerSchema { .. } | StoreError::Import { .. } => {
                Kind::Corrupt
            }
            StoreError::Invalid(_)
            | StoreError::ShortId { .. }
            | StoreError::Ambiguous { .. }
            | StoreError::Sqlite(_)
            | StoreError::Io(_) => Kind::Other,
        };
        bosun_core::JournalError::new(kind, error)
    }
}
