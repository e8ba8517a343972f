//! What can go wrong with the store, each naming the file or session.

use std::path::{Path, PathBuf};

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file is not a bosun database (truncated, garbage, another
    /// format), or SQLite found it damaged while reading or writing it.
    #[error(
        "`{path}` is damaged or is not a bosun session database ({detail}); it was left untouched. \
         Save what can still be read (`bosun sessions export ID`), then move the file aside: \
         bosun starts a new one in its place"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// The database failed its integrity check when it was opened for
    /// writing: it was opened read-only instead, and every write is
    /// refused with this error. What can be read still is.
    #[error(
        "`{path}` failed its integrity check ({detail}), so bosun opened it read-only and writes nothing to it. \
         Save what can still be read (`bosun sessions list --all`, `bosun sessions export ID > ID.jsonl`), \
         move the file aside (`mv {path} {path}.damaged`), then `bosun sessions import ID.jsonl` into the \
         new one bosun starts in its place"
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What the check found.
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
    /// The file system holding the database is full (or the database
    /// reached its size limit); nothing of the failed write was kept.
    #[error(
        "the disk holding `{path}` is full ({detail}): free space on it, then try again \
         (nothing of the failed write was kept; reading sessions still works)"
    )]
    DiskFull {
        /// The database file.
        path: PathBuf,
        /// What SQLite or the system said.
        detail: String,
    },
    /// A write to a store opened read-only ([`crate::Store::open_read_only`]).
    #[error("`{path}` was opened read-only: nothing can be written to it this way")]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
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

/// Below this many bytes free for unprivileged writers, an I/O error of
/// SQLite is taken for a full disk: SQLite reports a failed write of the
/// WAL, of its index (`-shm`) or of a checkpoint as a generic I/O error
/// (only a short write of the database itself is `SQLITE_FULL`), and with
/// this little left, freeing space is the advice that helps either way.
const FULL_BELOW: u64 = 1 << 20;

impl StoreError {
    /// Maps a SQLite error, recognising full disks, busy databases and
    /// corrupt files.
    pub(crate) fn from_sqlite(path: &Path, error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        if let rusqlite::Error::SqliteFailure(failure, message) = &error {
            let detail = message.clone().unwrap_or_else(|| failure.to_string());
            match failure.code {
                ErrorCode::DiskFull => return Self::DiskFull { path: path.to_owned(), detail },
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                    return Self::Corrupt { path: path.to_owned(), detail };
                }
                ErrorCode::SystemIoFailure | ErrorCode::CannotOpen if disk_is_full(path) => {
                    return Self::DiskFull { path: path.to_owned(), detail };
                }
                ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied => {
                    return Self::Open { path: path.to_owned(), detail };
                }
                _ => {}
            }
        }
        // A stored message whose JSON no longer parses (`store::chain`).
        if let rusqlite::Error::FromSqlConversionFailure(_, _, cause) = &error {
            let detail = format!("a stored message is unreadable: {cause}");
            return Self::Corrupt { path: path.to_owned(), detail };
        }
        Self::Sqlite(error.to_string())
    }

    /// Maps a failure of the file system around the database (creating its
    /// folder, opening it), recognising a full disk.
    pub(crate) fn from_io(path: &Path, detail: String, error: &std::io::Error) -> Self {
        if error.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error()) || disk_is_full(path) {
            Self::DiskFull { path: path.to_owned(), detail }
        } else {
            Self::Open { path: path.to_owned(), detail }
        }
    }

    /// Whether the store cannot be used as it is: the disk is full, or the
    /// file is damaged, from a newer bosun or cannot be opened. A front end
    /// tells these apart from a mistake in what it was asked (an unknown
    /// session, an invalid fork).
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            Self::DiskFull { .. }
                | Self::Corrupt { .. }
                | Self::Damaged { .. }
                | Self::NewerSchema { .. }
                | Self::Open { .. }
                | Self::Sqlite(_)
        )
    }
}

/// Whether the file system holding `path` has (almost) no space left for
/// an unprivileged writer.
fn disk_is_full(path: &Path) -> bool {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    rustix::fs::statvfs(folder).is_ok_and(|fs| fs.f_bavail.saturating_mul(fs.f_frsize) < FULL_BELOW)
}

impl From<StoreError> for bosun_core::JournalError {
    fn from(error: StoreError) -> Self {
        use bosun_core::JournalErrorKind as Kind;
        let kind = match &error {
            StoreError::DiskFull { .. } => Kind::Full,
            StoreError::Leased { .. }
            | StoreError::Open { .. }
            | StoreError::NotFound { .. }
            | StoreError::ReadOnly { .. } => Kind::Unavailable,
            StoreError::Corrupt { .. }
            | StoreError::Damaged { .. }
            | StoreError::NewerSchema { .. }
            | StoreError::Import { .. } => Kind::Corrupt,
            StoreError::Invalid(_)
            | StoreError::ShortId { .. }
            | StoreError::Ambiguous { .. }
            | StoreError::Sqlite(_)
            | StoreError::Io(_) => Kind::Other,
        };
        bosun_core::JournalError::new(kind, error)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use bosun_core::{JournalErrorKind, Session, TurnErrorKind};
    use bosun_testing::ScriptedModel;

    use super::*;
    use crate::Store;

    /// SQLite's size limit stands in for a full disk: the same
    /// `SQLITE_FULL` a short write of the database gets.
    #[tokio::test]
    async fn a_database_that_cannot_grow_is_a_full_disk_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let store = Store::open(&path).unwrap();
        let journal = store.new_session();
        let mut session = Session::builder(ScriptedModel::new().answer("never sent")).journal(journal);
        session = session.system_prompt("be brief");
        let mut session = session.build().await.unwrap();
        {
            let connection = store.lock().unwrap();
            let pages: i64 = connection.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
            connection.pragma_update(None, "max_page_count", pages).unwrap();
        }
        // A prompt larger than the pages left: its record cannot be written.
        let error = session.run("a long prompt ".repeat(20_000), &mut Vec::new()).await.unwrap_err();
        let TurnErrorKind::Journal(journal_error) = &error.kind else { panic!("{error:?}") };
        assert_eq!(journal_error.kind(), JournalErrorKind::Full);
        let cause = journal_error.cause().downcast_ref::<StoreError>().unwrap();
        assert!(matches!(cause, StoreError::DiskFull { path: p, .. } if *p == path), "{cause:?}");
        assert!(cause.is_storage_fault());
        let message = cause.to_string();
        assert!(message.contains(&format!("the disk holding `{}` is full", path.display())), "{message}");
        assert!(message.contains("free space on it"), "{message}");
    }

    #[test]
    fn an_io_error_on_a_disk_with_room_is_not_called_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let denied = std::io::Error::from_raw_os_error(rustix::io::Errno::ACCESS.raw_os_error());
        let error = StoreError::from_io(&path, "cannot create it".into(), &denied);
        assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
        let full = std::io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error());
        let error = StoreError::from_io(&path, "cannot create it".into(), &full);
        assert!(matches!(error, StoreError::DiskFull { .. }), "{error:?}");
    }
}
