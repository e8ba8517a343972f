//! Opening the database: for writing ([`Store::open`]: checked first,
//! migrated, WAL) or only for reading ([`Store::open_read_only`]: no
//! migration, no write, so it works on a full disk and on a damaged file).
//! A file bosun cannot read, or one from a newer bosun, is refused and left
//! as it is; one that fails its integrity check is opened read-only, and
//! every write to it is refused naming it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;
use crate::integrity::{self, Checked};
use crate::schema;
use crate::store::{BUSY_TIMEOUT, Inner, Store};

/// What a store may do with its file.
#[derive(Debug)]
pub(crate) enum Access {
    /// Read and write. `checked_at`: when the check the store's trust in
    /// the file rests on ran (for a file it created: when it did).
    Write { checked_at: i64 },
    /// Only read: asked for, or the file is damaged (what was found).
    ReadOnly { damage: Option<String> },
}

/// Retries work SQLite reported busy for reasons its busy handler does not
/// cover (two processes creating or switching the journal mode of one
/// database at once), for up to [`BUSY_TIMEOUT`].
pub(crate) fn retry_busy<T>(mut work: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match work() {
            Err(rusqlite::Error::SqliteFailure(failure, _))
                if matches!(
                    failure.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

impl Store {
    /// Opens (or creates) the database at `path` for reading and writing. A
    /// file that is not a readable bosun database, or one from a newer
    /// bosun, is refused and left untouched. An existing file is checked
    /// (`PRAGMA quick_check`, skipped while a side file says nothing has
    /// written it since it passed) before anything is written to it; one that
    /// fails is opened read-only instead ([`Store::damage`] says what was
    /// found), and every write to it fails with [`StoreError::Damaged`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let existed = path.exists();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.is_dir()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                StoreError::from_io(&path, format!("cannot create {}: {e}", parent.display()), &e)
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection =
            Connection::open_with_flags(&path, flags).map_err(|e| StoreError::from_sqlite(&path, e))?;
        let sql = |e| StoreError::from_sqlite(&path, e);
        connection.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // Reading the schema version is the first real read: garbage and
        // truncated files fail here, before anything is written.
        let version: i64 =
            retry_busy(|| connection.query_row("PRAGMA user_version", [], |r| r.get(0))).map_err(sql)?;
        if existed {
            retry_busy(|| {
                connection.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
            })
            .map_err(sql)?;
        }
        if version > schema::latest() {
            return Err(StoreError::NewerSchema { path, found: version, supported: schema::latest() });
        }
        // Checked before the first write: a damaged file is only read.
        let checked_at = if existed && version > 0 {
            match retry_busy(|| integrity::check(&connection, &path)).map_err(sql)? {
                Checked::Passed { checked_at } => checked_at,
                Checked::Failed(found) => {
                    drop(connection);
                    tracing::warn!(path = %path.display(), %found, "the database failed its integrity check");
                    return Self::read_only(path, Some(found));
                }
            }
        } else {
            crate::rows::now_ms()
        };
        // WAL: readers never block the writer; FULL: each commit is synced,
        // so a journal write is durable when `append` returns.
        retry_busy(|| connection.pragma_update(None, "journal_mode", "WAL")).map_err(sql)?;
        connection.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        connection.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        retry_busy(|| schema::migrate_to(&mut connection, schema::latest())).map_err(sql)?;
        Ok(Self::with(path, connection, Access::Write { checked_at }))
    }

    /// Opens the database at `path` only to read it: no migration, no
    /// check, nothing written, so listing, showing and exporting sessions
    /// work on a full disk and on a file that failed its check (which
    /// [`Store::damage`] then names, as the last check remembered it). A
    /// missing file reads as an empty store and is not created. A file from
    /// an older bosun needs its migrations: it is opened as [`Store::open`]
    /// opens it. Every write fails ([`StoreError::ReadOnly`], or
    /// [`StoreError::Damaged`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        if !path.exists() {
            let sql = |e| StoreError::from_sqlite(&path, e);
            let mut connection = Connection::open_in_memory().map_err(sql)?;
            schema::migrate_to(&mut connection, schema::latest()).map_err(sql)?;
            return Ok(Self::with(path, connection, Access::ReadOnly { damage: None }));
        }
        let damage = integrity::remembered_damage(&path);
        let (connection, version) = match read_only_connection(&path, false) {
            Ok(opened) => opened,
            // The WAL index (`-shm`) could not be made (a full disk, a
            // read-only folder): with no WAL to read, the file alone is the
            // whole database, read as immutable.
            Err(error) if needs_immutable(&error) && !has_wal(&path) => {
                read_only_connection(&path, true).map_err(|_| StoreError::from_sqlite(&path, error))?
            }
            Err(error) => return Err(StoreError::from_sqlite(&path, error)),
        };
        if version > schema::latest() {
            return Err(StoreError::NewerSchema { path, found: version, supported: schema::latest() });
        }
        if version < schema::latest() {
            drop(connection);
            return Self::open(path);
        }
        Ok(Self::with(path, connection, Access::ReadOnly { damage }))
    }

    /// A store opened read-only because its file is damaged: as an
    /// immutable file when no WAL lies beside it, so that reading it creates
    /// and changes nothing (no bosun writes to it while it stays damaged).
    fn read_only(path: PathBuf, damage: Option<String>) -> Result<Self, StoreError> {
        let (connection, _) =
            read_only_connection(&path, !has_wal(&path)).map_err(|e| StoreError::from_sqlite(&path, e))?;
        Ok(Self::with(path, connection, Access::ReadOnly { damage }))
    }

    fn with(path: PathBuf, connection: Connection, access: Access) -> Self {
        let inner =
            Inner { path, connection: Mutex::new(connection), access, damage_seen: AtomicBool::new(false) };
        Self { inner: std::sync::Arc::new(inner) }
    }

    /// What the integrity check found wrong with the file, when that is why
    /// this store only reads: tell the person (the error of every write
    /// says it too).
    pub fn damage(&self) -> Option<&str> {
        match &self.inner.access {
            Access::ReadOnly { damage } => damage.as_deref(),
            Access::Write { .. } => None,
        }
    }

    /// Whether this store only reads ([`Store::open_read_only`], or a file
    /// that failed its check).
    pub fn is_read_only(&self) -> bool {
        matches!(self.inner.access, Access::ReadOnly { .. })
    }

    /// Fails, naming the file, unless this store may write: a front end
    /// asks before it starts work that will need to ([`StoreError::Damaged`]
    /// says what to do).
    pub fn writable(&self) -> Result<(), StoreError> {
        let path = self.inner.path.clone();
        match &self.inner.access {
            Access::Write { .. } => Ok(()),
            Access::ReadOnly { damage: Some(detail) } => {
                Err(StoreError::Damaged { path, detail: detail.clone() })
            }
            Access::ReadOnly { damage: None } => Err(StoreError::ReadOnly { path }),
        }
    }
}

/// A read-only connection to `path` (as an immutable file when asked) and
/// the schema version read through it, the first real read.
fn read_only_connection(path: &Path, immutable: bool) -> rusqlite::Result<(Connection, i64)> {
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let connection = if immutable {
        Connection::open_with_flags(format!("file:{}?immutable=1", uri_path(path)), flags)?
    } else {
        Connection::open_with_flags(path, flags.difference(OpenFlags::SQLITE_OPEN_URI))?
    };
    connection.busy_timeout(BUSY_TIMEOUT)?;
    let version = retry_busy(|| connection.query_row("PRAGMA user_version", [], |r| r.get(0)))?;
    retry_busy(|| connection.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)))?;
    Ok((connection, version))
}

/// Whether a read-only open failed for want of the WAL's files rather
/// than for what the database holds.
fn needs_immutable(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(error, rusqlite::Error::SqliteFailure(failure, _)
        if matches!(failure.code, ErrorCode::SystemIoFailure | ErrorCode::CannotOpen
            | ErrorCode::DiskFull | ErrorCode::ReadOnly))
}

/// Whether a WAL with content lies beside the database: read as immutable,
/// its commits would be missed.
fn has_wal(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0)
}

/// `path`, absolute, percent-encoded for a `file:` URI.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut encoded = String::new();
    for &byte in absolute.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

impl Drop for Inner {
    /// Closes the connection, then (for a store that trusted its file)
    /// remembers the file as this store's writes and the checkpoint of the
    /// close left it, so the next open need not check it again.
    fn drop(&mut self) {
        let Access::Write { checked_at } = self.access else { return };
        if self.damage_seen.load(Ordering::SeqCst) {
            return;
        }
        let Ok(connection) = self.connection.get_mut() else { return };
        let Ok(placeholder) = Connection::open_in_memory() else { return };
        // The last connection to close checkpoints the WAL into the file.
        drop(std::mem::replace(connection, placeholder));
        integrity::remember_closed(&self.path, checked_at);
    }
}
