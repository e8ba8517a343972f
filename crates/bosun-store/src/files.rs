//! Rewind's part of the store: the content of workspace files, kept by its
//! SHA-256 in `blobs` (one copy however many sessions or calls keep it),
//! what each tool call changed (`file_changes`: the state before, naming a
//! blob, and the state the call left) and the manifest of a workspace's
//! files that the shell's capture compares against (`workspace_files`).
//!
//! Bounds live here, beside the blobs, so every caller keeps content by the
//! same rules ([`KeepBounds`]): a file over `max_file_bytes`, a binary one,
//! or one that would take a turn past `max_turn_bytes` of new content is
//! named with the reason instead, and cannot be restored.
//!
//! A blob is referenced by a change row or a manifest row from the
//! transaction that keeps it, so a collection running meanwhile (another
//! process ending a change, replacing a manifest row or deleting a session)
//! never takes one a capture is about to name; a blob no row names any more
//! is deleted where its last reference goes.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::rows::now_ms;
use crate::store::Store;

/// How much of a file's start is looked at for a NUL byte, as git does to
/// call a file binary.
const BINARY_PROBE: usize = 8000;

/// How [`NotKept::TurnFull`]'s reason begins, which a manifest row keeps.
const TURN_FULL: &str = "the turn had kept its";

/// What is kept of files before tools change them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeepBounds {
    /// The largest file kept, in bytes.
    pub max_file_bytes: u64,
    /// The most new content one turn keeps, in bytes (content already kept
    /// costs nothing).
    pub max_turn_bytes: u64,
}

impl KeepBounds {
    /// 1 MiB a file, 64 MiB a turn.
    pub const DEFAULT: Self = Self { max_file_bytes: 1 << 20, max_turn_bytes: 64 << 20 };

    /// These bounds.
    pub fn new(max_file_bytes: u64, max_turn_bytes: u64) -> Self {
        Self { max_file_bytes, max_turn_bytes }
    }
}

impl Default for KeepBounds {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// New content a turn has kept so far, against
/// [`KeepBounds::max_turn_bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnBudget {
    /// Bytes of new blobs.
    pub used: u64,
}

/// Why a file's content was not kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotKept {
    /// Over [`KeepBounds::max_file_bytes`].
    #[error("{size} bytes, over the {limit}-byte limit for kept files")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A NUL byte near its start.
    #[error("a binary file")]
    Binary,
    /// The turn had kept [`KeepBounds::max_turn_bytes`] already.
    #[error("the turn had kept its {limit} bytes already")]
    TurnFull {
        /// The limit.
        limit: u64,
    },
}

/// What is offered to keep of a file's state before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Offered {
    /// No file there.
    Absent,
    /// Its content and permission bits.
    Content {
        /// The bytes.
        bytes: Vec<u8>,
        /// Permission bits.
        mode: u32,
    },
    /// Its content could not be read, or is kept elsewhere; the reason, and
    /// its hash when known (to tell later whether the call changed it).
    NotKept {
        /// Why.
        reason: String,
        /// Its SHA-256, when known.
        hash: Option<String>,
    },
}

/// A file's state before a change.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Before {
    /// There was no file: restoring deletes it.
    Absent,
    /// Its content is the blob `hash`; restoring writes it back.
    Kept {
        /// The blob.
        hash: String,
        /// Permission bits.
        mode: u32,
    },
    /// It cannot be restored, for `reason`.
    NotKept {
        /// Why.
        reason: String,
        /// Its SHA-256, when known.
        hash: Option<String>,
    },
}

/// What a change left at its path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum After {
    /// No file.
    Absent,
    /// A file with this SHA-256.
    File {
        /// The hash.
        hash: String,
    },
    /// Not known: too large to hash, or the call never finished (its
    /// process died).
    Unknown,
}

/// One change of one file, by a tool call or by a rewind.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct FileChange {
    /// Its row id: later changes have larger ones.
    pub id: i64,
    /// The turn of the call, when a call made it.
    pub turn: Option<u64>,
    /// The session-minted id of the call; `None` for a rewind's own write.
    pub call_id: Option<String>,
    /// Workspace-relative.
    pub path: String,
    /// When the call started, in a clock that orders calls that overlap.
    pub started: i64,
    /// When the call ended, in the same clock; `None` if it never did.
    pub ended: Option<i64>,
    /// The file before.
    pub before: Before,
    /// What was left.
    pub after: After,
}

/// A change to record whole (its call has ended).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewChange {
    /// The turn of the call.
    pub turn: Option<u64>,
    /// The call; `None` for a rewind's own write.
    pub call_id: Option<String>,
    /// Workspace-relative.
    pub path: String,
    /// When the call started.
    pub started: i64,
    /// When it ended.
    pub ended: i64,
    /// The file before.
    pub before: Before,
    /// What was left.
    pub after: After,
}

impl NewChange {
    /// A change of `path` from `before` to `after`, started and ended at
    /// the given times, by no call (set [`NewChange::call_id`] for one).
    pub fn new(path: impl Into<String>, before: Before, after: After, (started, ended): (i64, i64)) -> Self {
        Self { turn: None, call_id: None, path: path.into(), started, ended, before, after }
    }

    /// The same change, made by `call` in `turn`.
    pub fn by_call(mut self, turn: u64, call: impl Into<String>) -> Self {
        self.turn = Some(turn);
        self.call_id = Some(call.into());
        self
    }
}

/// A file as the shell's capture last saw it: its stat, and its content's
/// hash when that was kept (else why not).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestEntry {
    /// Workspace-relative.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch: any write changes
    /// it, and nothing but the clock sets it back.
    pub ctime_ns: i64,
    /// Inode.
    pub inode: u64,
    /// Permission bits.
    pub mode: u32,
    /// The kept content, when it was kept.
    pub hash: Option<String>,
    /// Why it was not, otherwise.
    pub note: Option<String>,
}

impl ManifestEntry {
    /// A file's stat, with nothing kept yet.
    pub fn new(
        path: impl Into<String>,
        size: u64,
        (mtime_ns, ctime_ns): (i64, i64),
        inode: u64,
        mode: u32,
    ) -> Self {
        Self { path: path.into(), size, mtime_ns, ctime_ns, inode, mode, hash: None, note: None }
    }

    /// Whether its content was not kept only because the turn that saw it
    /// had kept its bound already: a later turn tries again.
    pub fn worth_retrying(&self) -> bool {
        self.hash.is_none() && self.note.as_deref().is_some_and(|note| note.starts_with(TURN_FULL))
    }

    /// Whether `other` has the same stat (so, taken as the same content).
    pub fn same_stat(&self, other: &Self) -> bool {
        (self.size, self.mtime_ns, self.ctime_ns, self.inode, self.mode)
            == (other.size, other.mtime_ns, other.ctime_ns, other.inode, other.mode)
    }
}

/// Hex SHA-256 of `bytes`: a blob's name.
pub fn blob_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `bytes` look binary: a NUL byte among the first 8000.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_PROBE)].contains(&0)
}

/// Keeps `bytes` under `bounds` inside `transaction`: the blob's hash, or
/// why it was not kept. Content already kept is not counted again.
fn keep_in(
    transaction: &Connection,
    bytes: &[u8],
    bounds: KeepBounds,
    budget: &mut TurnBudget,
) -> rusqlite::Result<Result<String, NotKept>> {
    let size = bytes.len() as u64;
    if size > bounds.max_file_bytes {
        return Ok(Err(NotKept::TooLarge { size, limit: bounds.max_file_bytes }));
    }
    if looks_binary(bytes) {
        return Ok(Err(NotKept::Binary));
    }
    let hash = blob_hash(bytes);
    let known = transaction
        .query_row("SELECT 1 FROM blobs WHERE hash = ?1", [&hash], |_| Ok(()))
        .optional()?
        .is_some();
    if known {
        return Ok(Ok(hash));
    }
    if budget.used.saturating_add(size) > bounds.max_turn_bytes {
        return Ok(Err(NotKept::TurnFull { limit: bounds.max_turn_bytes }));
    }
    transaction.execute(
        "INSERT INTO blobs (hash, size, body) VALUES (?1, ?2, ?3)",
        params![hash, size as i64, bytes],
    )?;
    budget.used += size;
    Ok(Ok(hash))
}

/// Deletes the blobs among `hashes` that no change and no manifest row
/// names any more.
pub(crate) fn collect(connection: &Connection, hashes: &[String]) -> rusqlite::Result<()> {
    for hash in hashes {
        connection.execute(
            "DELETE FROM blobs WHERE hash = ?1
             AND NOT EXISTS (SELECT 1 FROM file_changes WHERE before_hash = ?1 AND before_kind = 'kept')
             AND NOT EXISTS (SELECT 1 FROM workspace_files WHERE hash = ?1)",
            [hash],
        )?;
    }
    Ok(())
}

/// The columns of a `file_changes` row as [`Before`].
fn before_of(kind: &str, hash: Option<String>, mode: Option<i64>, note: Option<String>) -> Before {
    match (kind, hash) {
        ("absent", _) => Before::Absent,
        ("kept", Some(hash)) => Before::Kept { hash, mode: mode.unwrap_or(0o644) as u32 },
        (_, hash) => Before::NotKept { reason: note.unwrap_or_else(|| "not kept".to_owned()), hash },
    }
}

/// [`Before`] as columns: kind, hash, mode, note.
fn before_columns(before: &Before) -> (&'static str, Option<&str>, Option<i64>, Option<&str>) {
    match before {
        Before::Absent => ("absent", None, None, None),
        Before::Kept { hash, mode } => ("kept", Some(hash), Some(i64::from(*mode)), None),
        Before::NotKept { reason, hash } => ("not_kept", hash.as_deref(), None, Some(reason)),
    }
}

fn after_of(kind: &str, hash: Option<String>) -> After {
    match (kind, hash) {
        ("absent", _) => After::Absent,
        ("file", Some(hash)) => After::File { hash },
        _ => After::Unknown,
    }
}

fn after_columns(after: &After) -> (&'static str, Option<&str>) {
    match after {
        After::Absent => ("absent", None),
        After::File { hash } => ("file", Some(hash)),
        After::Unknown => ("unknown", None),
    }
}

/// Whether a change from `before` to `after` changed nothing.
fn unchanged(before: &Before, after: &After) -> bool {
    match (before, after) {
        (Before::Absent, After::Absent) => true,
        (Before::Kept { hash: was, .. }, After::File { hash: now })
        | (Before::NotKept { hash: Some(was), .. }, After::File { hash: now }) => was == now,
        _ => false,
    }
}

impl Store {
    fn immediate<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        let value = work(&transaction).map_err(|e| self.sql(e))?;
        transaction.commit().map_err(|e| self.sql(e))?;
        Ok(value)
    }

    /// Keeps `bytes` under `bounds`, counting new content against `budget`:
    /// its hash, or why it was not kept. Nothing names the blob yet, so the
    /// next collection may take it: a capture keeps content with
    /// [`Store::begin_change`] or [`Store::keep_workspace_file`] instead.
    pub fn keep(
        &self,
        bytes: &[u8],
        bounds: KeepBounds,
        budget: &mut TurnBudget,
    ) -> Result<Result<String, NotKept>, StoreError> {
        let mut spent = *budget;
        let kept = self.immediate(|transaction| keep_in(transaction, bytes, bounds, &mut spent))?;
        *budget = spent;
        Ok(kept)
    }

    /// The blob `hash`, if kept.
    pub fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let connection = self.lock()?;
        connection
            .query_row("SELECT body FROM blobs WHERE hash = ?1", [hash], |row| row.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// How many blobs are kept and their bytes, all sessions.
    pub fn blob_totals(&self) -> Result<(u64, u64), StoreError> {
        let connection = self.lock()?;
        connection
            .query_row("SELECT count(*), coalesce(sum(size), 0) FROM blobs", [], |row| {
                Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
            })
            .map_err(|e| self.sql(e))
    }

    /// Starts recording a change of `path` by `call` of `session` in
    /// `turn`, before the call runs: `offered` is kept under `bounds` and a
    /// row names it, its outcome unknown until [`Store::end_change`] (a
    /// process that dies meanwhile leaves it unknown, which is what it is).
    /// Returns the row and the state recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn begin_change(
        &self,
        session: &str,
        (turn, call): (u64, &str),
        path: &str,
        started: i64,
        offered: Offered,
        bounds: KeepBounds,
        budget: &mut TurnBudget,
    ) -> Result<(i64, Before), StoreError> {
        let mut spent = *budget;
        let done = self.immediate(|transaction| {
            let before = match offered {
                Offered::Absent => Before::Absent,
                Offered::NotKept { reason, hash } => Before::NotKept { reason, hash },
                Offered::Content { bytes, mode } => match keep_in(transaction, &bytes, bounds, &mut spent)? {
                    Ok(hash) => Before::Kept { hash, mode },
                    Err(why) => Before::NotKept { reason: why.to_string(), hash: Some(blob_hash(&bytes)) },
                },
            };
            let (kind, hash, mode, note) = before_columns(&before);
            transaction.execute(
                "INSERT INTO file_changes (session_id, turn, call_id, path, started, ended, before_kind,
                 before_hash, before_mode, note, after_kind, after_hash, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?8, ?9, 'unknown', NULL, ?10)",
                params![session, turn as i64, call, path, started, kind, hash, mode, note, now_ms()],
            )?;
            Ok((transaction.last_insert_rowid(), before))
        })?;
        *budget = spent;
        Ok(done)
    }

    /// Ends the change [`Store::begin_change`] started: what the call left
    /// at `ended`. A call that changed nothing there leaves no row, and its
    /// kept content goes unless something else names it. Returns whether
    /// the change was kept.
    pub fn end_change(&self, id: i64, after: &After, ended: i64) -> Result<bool, StoreError> {
        self.immediate(|transaction| {
            let row = transaction
                .query_row(
                    "SELECT before_kind, before_hash, before_mode, note FROM file_changes WHERE id = ?1",
                    [id],
                    |row| Ok(before_of(&row.get::<_, String>(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                )
                .optional()?;
            let Some(before) = row else { return Ok(false) };
            if unchanged(&before, after) {
                transaction.execute("DELETE FROM file_changes WHERE id = ?1", [id])?;
                if let Before::Kept { hash, .. } = &before {
                    collect(transaction, std::slice::from_ref(hash))?;
                }
                return Ok(false);
            }
            let (kind, hash) = after_columns(after);
            transaction.execute(
                "UPDATE file_changes SET after_kind = ?1, after_hash = ?2, ended = ?3 WHERE id = ?4",
                params![kind, hash, ended, id],
            )?;
            Ok(true)
        })
    }

    /// Records a change whole (a rewind's own write); see
    /// [`Store::record_changes`]. Its row, unless it changed nothing.
    pub fn record_change(&self, session: &str, change: &NewChange) -> Result<Option<i64>, StoreError> {
        Ok(self.record_changes(session, std::slice::from_ref(change))?.pop().flatten())
    }

    /// Records changes whole, in one transaction (a shell call's, found by
    /// comparing the manifest: a command may touch thousands of files, and
    /// each transaction is synced). A [`Before::Kept`] naming a blob that
    /// is gone (collected by another process meanwhile) is recorded as not
    /// kept. A change that changed nothing is not recorded. Each one's row.
    pub fn record_changes(
        &self,
        session: &str,
        changes: &[NewChange],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        self.immediate(|transaction| {
            let mut rows = Vec::with_capacity(changes.len());
            for change in changes {
                let mut before = change.before.clone();
                if let Before::Kept { hash, .. } = &before {
                    let there = transaction
                        .query_row("SELECT 1 FROM blobs WHERE hash = ?1", [hash], |_| Ok(()))
                        .optional()?;
                    if there.is_none() {
                        let hash = Some(hash.clone());
                        before =
                            Before::NotKept { reason: "its kept copy was collected meanwhile".into(), hash };
                    }
                }
                if unchanged(&before, &change.after) {
                    rows.push(None);
                    continue;
                }
                let (kind, hash, mode, note) = before_columns(&before);
                let (after_kind, after_hash) = after_columns(&change.after);
                transaction.execute(
                    "INSERT INTO file_changes (session_id, turn, call_id, path, started, ended, before_kind,
                     before_hash, before_mode, note, after_kind, after_hash, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    params![
                        session,
                        change.turn.map(|t| t as i64),
                        change.call_id,
                        change.path,
                        change.started,
                        change.ended,
                        kind,
                        hash,
                        mode,
                        note,
                        after_kind,
                        after_hash,
                        now_ms()
                    ],
                )?;
                rows.push(Some(transaction.last_insert_rowid()));
            }
            Ok(rows)
        })
    }

    /// Every file change of `session`, oldest row first.
    pub fn file_changes(&self, session: &str) -> Result<Vec<FileChange>, StoreError> {
        let connection = self.lock()?;
        let mut statement = connection
            .prepare_cached(
                "SELECT id, turn, call_id, path, started, ended, before_kind, before_hash, before_mode, note,
                 after_kind, after_hash FROM file_changes WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([session], |row| {
                Ok(FileChange {
                    id: row.get(0)?,
                    turn: row.get::<_, Option<i64>>(1)?.map(|t| t.max(0) as u64),
                    call_id: row.get(2)?,
                    path: row.get(3)?,
                    started: row.get(4)?,
                    ended: row.get(5)?,
                    before: before_of(&row.get::<_, String>(6)?, row.get(7)?, row.get(8)?, row.get(9)?),
                    after: after_of(&row.get::<_, String>(10)?, row.get(11)?),
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The manifest of the workspace at `workspace` (its identity path), by
    /// path.
    pub fn workspace_files(&self, workspace: &str) -> Result<Vec<ManifestEntry>, StoreError> {
        let connection = self.lock()?;
        let mut statement = connection
            .prepare_cached(
                "SELECT path, size, mtime_ns, ctime_ns, inode, mode, hash, note FROM workspace_files
                 WHERE workspace = ?1 ORDER BY path",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([workspace], |row| {
                Ok(ManifestEntry {
                    path: row.get(0)?,
                    size: row.get::<_, i64>(1)?.max(0) as u64,
                    mtime_ns: row.get(2)?,
                    ctime_ns: row.get(3)?,
                    inode: row.get::<_, i64>(4)? as u64,
                    mode: row.get::<_, i64>(5)? as u32,
                    hash: row.get(6)?,
                    note: row.get(7)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// Keeps the content of each file (`Err(reason)` for one that could
    /// not be read) under `bounds` and makes its entry the workspace's
    /// manifest row for its path, all in one transaction (a first look at
    /// a workspace keeps thousands, and each transaction is synced); the
    /// content a row named before goes unless something else names it.
    /// Returns the rows as written.
    pub fn keep_workspace_files(
        &self,
        workspace: &str,
        files: &[(ManifestEntry, Result<Vec<u8>, String>)],
        bounds: KeepBounds,
        budget: &mut TurnBudget,
    ) -> Result<Vec<ManifestEntry>, StoreError> {
        let mut spent = *budget;
        let written = self.immediate(|transaction| {
            let mut written = Vec::with_capacity(files.len());
            for (entry, bytes) in files {
                let mut row = entry.clone();
                (row.hash, row.note) = match bytes {
                    Ok(bytes) => match keep_in(transaction, bytes, bounds, &mut spent)? {
                        Ok(hash) => (Some(hash), None),
                        Err(why) => (None, Some(why.to_string())),
                    },
                    Err(reason) => (None, Some(reason.clone())),
                };
                let old: Option<Option<String>> = transaction
                    .query_row(
                        "SELECT hash FROM workspace_files WHERE workspace = ?1 AND path = ?2",
                        params![workspace, row.path],
                        |r| r.get(0),
                    )
                    .optional()?;
                transaction.execute(
                    "INSERT OR REPLACE INTO workspace_files (workspace, path, size, mtime_ns, ctime_ns, inode, mode,
                     hash, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        workspace,
                        row.path,
                        row.size as i64,
                        row.mtime_ns,
                        row.ctime_ns,
                        row.inode as i64,
                        i64::from(row.mode),
                        row.hash,
                        row.note
                    ],
                )?;
                if let Some(Some(old)) = old.filter(|old| *old != row.hash) {
                    collect(transaction, &[old])?;
                }
                written.push(row);
            }
            Ok(written)
        })?;
        *budget = spent;
        Ok(written)
    }

    /// Drops `paths` from the workspace's manifest (files that are gone);
    /// the content they named goes unless something else names it.
    pub fn forget_workspace_files(&self, workspace: &str, paths: &[String]) -> Result<(), StoreError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.immediate(|transaction| {
            let mut old = Vec::new();
            for path in paths {
                let hash: Option<Option<String>> = transaction
                    .query_row(
                        "DELETE FROM workspace_files WHERE workspace = ?1 AND path = ?2 RETURNING hash",
                        params![workspace, path],
                        |r| r.get(0),
                    )
                    .optional()?;
                old.extend(hash.flatten());
            }
            collect(transaction, &old)
        })
    }
}

/// Deletes `session`'s file changes and the content only they named
/// (inside the caller's transaction, with the session).
pub(crate) fn delete_session(connection: &Connection, session: &str) -> rusqlite::Result<()> {
    let mut statement = connection.prepare(
        "DELETE FROM file_changes WHERE session_id = ?1 AND before_kind = 'kept' RETURNING before_hash",
    )?;
    let hashes =
        statement.query_map([session], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    connection.execute("DELETE FROM file_changes WHERE session_id = ?1", [session])?;
    let mut hashes = hashes;
    hashes.sort();
    hashes.dedup();
    collect(connection, &hashes)
}
