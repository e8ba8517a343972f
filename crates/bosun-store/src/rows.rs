//! What more than one part of the store writes the same way: a journal
//! record's row (the journal appends them, a fork copies them) and the
//! clock rows are stamped with.

use std::time::{SystemTime, UNIX_EPOCH};

use bosun_core::JournalRecord;
use rusqlite::{Connection, params};

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Appends `record` at `seq` of `branch`, with its kind for queries.
pub(crate) fn insert_record(
    connection: &Connection,
    branch: &str,
    seq: i64,
    record: &JournalRecord,
) -> rusqlite::Result<()> {
    let body =
        serde_json::to_string(record).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let kind = serde_json::to_value(record)
        .ok()
        .and_then(|v| v.get("record").and_then(|k| k.as_str()).map(str::to_owned))
        .unwrap_or_default();
    connection.execute(
        "INSERT INTO records (branch_id, seq, kind, body) VALUES (?1, ?2, ?3, ?4)",
        params![branch, seq, kind, body],
    )?;
    Ok(())
}
