//! Where a pulled file came from: `FILE.gguf.source.json` beside it, written
//! by an `hf:` pull once the file checked out, read by `list` and by the
//! resolution of `hf:` names and hub catalog entries.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Context, Result};

/// Largest sidecar read; ours are a few hundred bytes.
const MAX_BYTES: u64 = 64 * 1024;

/// The record of one pulled file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The reference as pulled: `hf:OWNER/REPO[@REVISION]/PATH`.
    pub reference: String,
    /// `OWNER/REPO`.
    pub repo: String,
    /// The revision it was pulled at.
    pub revision: String,
    /// Its path in the repository.
    pub path: String,
    /// The sha256 it was checked against (the hub's LFS oid).
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// When, as RFC 3339 UTC.
    pub pulled_at: String,
}

/// The sidecar of `file` in `dir`.
pub fn sidecar_path(dir: &Path, file: &str) -> PathBuf {
    dir.join(format!("{file}.source.json"))
}

/// Writes the sidecar of `file` (a temporary sibling renamed over it, so a
/// reader never sees half a record).
pub fn write(dir: &Path, file: &str, record: &Record) -> Result<()> {
    let path = sidecar_path(dir, file);
    let temp = dir.join(format!(".{file}.source.json.{}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(record).context("cannot encode the source record")?;
    std::fs::write(&temp, text + "\n").with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))
}

/// The sidecar of `file`, if there is a readable one.
pub fn read(dir: &Path, file: &str) -> Option<Record> {
    let handle = std::fs::File::open(sidecar_path(dir, file)).ok()?;
    let mut text = String::new();
    handle.take(MAX_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Now, as RFC 3339 UTC to the second.
pub fn now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    rfc3339(secs)
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: u64) -> String {
    let (year, month, day, hour, minute, second) =
        bosun_core::calendar::utc(i64::try_from(secs).unwrap_or(i64::MAX));
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn a_record_round_trips_and_a_broken_one_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let record = Record {
            reference: "hf:o/r/m.gguf".into(),
            repo: "o/r".into(),
            revision: "main".into(),
            path: "m.gguf".into(),
            sha256: "ab".repeat(32),
            size: 3,
            pulled_at: rfc3339(0),
        };
        write(dir.path(), "m.gguf", &record).unwrap();
        assert_eq!(read(dir.path(), "m.gguf"), Some(record));
        std::fs::write(sidecar_path(dir.path(), "m.gguf"), "{not json").unwrap();
        assert_eq!(read(dir.path(), "m.gguf"), None);
        assert_eq!(read(dir.path(), "absent.gguf"), None);
    }
}
