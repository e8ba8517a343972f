//! The integrity check a database gets before bosun writes to it, and the
//! side file (`sessions.db.checked`) that spares repeating it.
//!
//! `PRAGMA quick_check` reads every page: on a database of 1,000 sessions
//! it costs more than the whole start-up budget (docs/benchmarks.md), so it
//! is not run on every open. The side file remembers the database file as a
//! check (or bosun's own use after one) left it: size, modification time,
//! device and inode. An open that finds the file as remembered skips the
//! check; anything else that wrote the file (random bytes, a copy over it, a
//! restore) changes one of them, and the next open checks again. bosun's own
//! writes change the file too (SQLite checkpoints its WAL into it), so a
//! store that was checked, or trusted by the side file, remembers the file
//! again when it closes; a process killed before that leaves the old entry
//! behind, and the next open checks. Whatever happens, a check is repeated
//! at least once every [`RECHECK_AFTER_MS`].
//!
//! A failed check is remembered too, so a read-only open (`bosun sessions
//! list`) can say the file is damaged without checking it again.
//!
//! The side file is a cache: it is written without a sync, a failure to
//! write it is ignored, and a missing or unreadable one means "check".

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

/// The longest a database goes unchecked, in milliseconds (a day).
pub(crate) const RECHECK_AFTER_MS: i64 = 24 * 60 * 60 * 1000;

/// At most this many problems are named in a failed check's report.
const PROBLEMS_SHOWN: u32 = 3;

/// The database file as the side file remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Fingerprint {
    size: u64,
    modified_s: i64,
    modified_ns: i64,
    device: u64,
    inode: u64,
}

impl Fingerprint {
    fn of(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self {
            size: metadata.len(),
            modified_s: metadata.mtime(),
            modified_ns: metadata.mtime_nsec(),
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }
}

/// What the side file holds.
#[derive(Debug, Serialize, Deserialize)]
struct Remembered {
    file: Fingerprint,
    /// When the last full check ran, in milliseconds since the epoch.
    checked_at: i64,
    /// What the check found wrong; `None` when it passed.
    damage: Option<String>,
}

/// The outcome of [`check`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    /// The database passed (now, or as the side file remembers it); the
    /// time of the last full check, to carry forward when the store closes.
    Passed { checked_at: i64 },
    /// The check found the database damaged: what it found.
    Failed(String),
}

/// The side file of the database at `path`.
pub(crate) fn side_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".checked");
    PathBuf::from(name)
}

fn recall(path: &Path) -> Option<Remembered> {
    let text = std::fs::read(side_file(path)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Writes the side file next to the database (through a temporary sibling
/// renamed into place, so a reader never sees half of it). Failures are
/// ignored: the next open checks again.
fn remember(path: &Path, remembered: &Remembered) {
    let side = side_file(path);
    let mut temporary = side.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let written = serde_json::to_vec(remembered)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&temporary, bytes))
        .and_then(|()| std::fs::rename(&temporary, &side));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        tracing::debug!(%error, path = %side.display(), "could not remember the integrity check");
    }
}

/// Checks the database behind `connection` (opened on `path`, nothing
/// written yet) unless the side file says it passed and nothing has
/// written the file since, and remembers the outcome.
pub(crate) fn check(connection: &Connection, path: &Path) -> Result<Checked, rusqlite::Error> {
    let now = crate::rows::now_ms();
    // Taken before the check: a write during it makes the next open check.
    let file = Fingerprint::of(path);
    if let (Some(file), Some(remembered)) = (file, recall(path))
        && remembered.file == file
        && remembered.damage.is_none()
        && now.saturating_sub(remembered.checked_at) < RECHECK_AFTER_MS
        && remembered.checked_at <= now
    {
        return Ok(Checked::Passed { checked_at: remembered.checked_at });
    }
    let problems = quick_check(connection)?;
    let damage = (!problems.is_empty()).then(|| problems.join("; "));
    if let Some(file) = file {
        remember(path, &Remembered { file, checked_at: now, damage: damage.clone() });
    }
    Ok(match damage {
        None => Checked::Passed { checked_at: now },
        Some(found) => Checked::Failed(found),
    })
}

/// What `PRAGMA quick_check` finds wrong (at most [`PROBLEMS_SHOWN`]
/// problems); empty when it passes.
pub(crate) fn quick_check(connection: &Connection) -> Result<Vec<String>, rusqlite::Error> {
    let mut statement = connection.prepare(&format!("PRAGMA quick_check({PROBLEMS_SHOWN})"))?;
    let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
    let rows = rows.collect::<Result<Vec<_>, _>>()?;
    // A row may hold several lines, headed by the schema's name
    // (`*** in database main ***`): one problem a line, the heading left out.
    Ok(rows
        .iter()
        .flat_map(|row| row.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "ok" && !line.starts_with("***"))
        .map(str::to_owned)
        .collect())
}

/// After a store that trusted the database closed: remembers the file as
/// bosun's writes left it, with the time of the check that trust rests on.
pub(crate) fn remember_closed(path: &Path, checked_at: i64) {
    if let Some(file) = Fingerprint::of(path) {
        remember(path, &Remembered { file, checked_at, damage: None });
    }
}

/// The damage the side file remembers for the database as it is now, for a
/// read-only open that does not check.
pub(crate) fn remembered_damage(path: &Path) -> Option<String> {
    let remembered = recall(path)?;
    (Some(remembered.file) == Fingerprint::of(path)).then_some(remembered.damage).flatten()
}
