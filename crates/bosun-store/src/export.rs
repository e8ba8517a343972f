//! Export of a session to JSON Lines; `import.rs` reads it back, exact:
//! exporting an imported session gives the same bytes. Message ids are
//! written as local numbers (1, 2, … in id order) so an import into another
//! database, where the ids differ, exports the same file again.
//!
//! Lines: a header `{"bosun_export":1,"session":{…}}`, then one
//! `{"branch":{…}}` per branch, one `{"message":{…}}` per message, one
//! `{"record":{…}}` per journal record. Keys are sorted.
//!
//! A sub-agent's session carries its parent link in the header
//! (`parent_session`, `parent_call`; absent for a top-level session, so its
//! export is what earlier builds wrote). Import keeps the session's id, and
//! the link is kept as data whether or not the parent is in the database
//! imported into; without it, the child is listed like a top-level session.

use std::collections::HashMap;
use std::io::Write;

use rusqlite::OptionalExtension;
use serde_json::{Value, json};

use crate::error::StoreError;
use crate::store::Store;

/// A branch row: id, parent branch, fork message, head message, created.
type BranchRow = (String, Option<String>, Option<i64>, Option<i64>, i64);

/// The export format's version.
pub const EXPORT_VERSION: u64 = 1;

fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

impl Store {
    /// Writes `session` (all branches, messages and records) as JSON Lines.
    pub fn export(&self, session: &str, out: &mut dyn Write) -> Result<(), StoreError> {
        let connection = self.lock()?;
        let sql = |e| self.sql(e);
        let header = connection
            .query_row(
                "SELECT id, created_at, updated_at, workspace, title, authority, authority_digest, head_branch,
                 message_count, usage, model, spend, parent_session, parent_call, base_url FROM sessions
                 WHERE id = ?1",
                [session],
                |r| {
                    let mut header = json!({
                        "id": r.get::<_, String>(0)?,
                        "created_at": r.get::<_, i64>(1)?,
                        "updated_at": r.get::<_, i64>(2)?,
                        "workspace": r.get::<_, Option<String>>(3)?,
                        "title": r.get::<_, Option<String>>(4)?,
                        "authority": parse_json(&r.get::<_, String>(5)?),
                        "authority_digest": r.get::<_, String>(6)?,
                        "head_branch": r.get::<_, String>(7)?,
                        "message_count": r.get::<_, i64>(8)?,
                        "usage": parse_json(&r.get::<_, String>(9)?),
                        "model": r.get::<_, Option<String>>(10)?,
                        "spend": parse_json(&r.get::<_, String>(11)?),
                    });
                    for (key, column) in [("parent_session", 12), ("parent_call", 13), ("base_url", 14)] {
                        if let (Some(value), Some(fields)) =
                            (r.get::<_, Option<String>>(column)?, header.as_object_mut())
                        {
                            fields.insert(key.to_owned(), Value::String(value));
                        }
                    }
                    Ok(header)
                },
            )
            .optional()
            .map_err(sql)?
            .ok_or_else(|| StoreError::NotFound { what: "session", id: session.to_owned() })?;
        writeln!(out, "{}", json!({"bosun_export": EXPORT_VERSION, "session": header}))?;

        let mut statement = connection
            .prepare("SELECT id, branch_id, parent_id, body FROM messages WHERE session_id = ?1 ORDER BY id")
            .map_err(sql)?;
        let messages: Vec<(i64, String, Option<i64>, String)> = statement
            .query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .map_err(sql)?
            .collect::<Result<_, _>>()
            .map_err(sql)?;
        let local: HashMap<i64, usize> = messages.iter().enumerate().map(|(i, m)| (m.0, i + 1)).collect();
        let to_local = |id: Option<i64>| id.and_then(|id| local.get(&id).copied());

        let mut statement = connection
            .prepare(
                "SELECT id, parent_branch, fork_message, head_message, created_at FROM branches
                 WHERE session_id = ?1 ORDER BY created_at, id",
            )
            .map_err(sql)?;
        let branches: Vec<BranchRow> = statement
            .query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .map_err(sql)?
            .collect::<Result<_, _>>()
            .map_err(sql)?;
        for (id, parent, fork, head, created) in &branches {
            let branch = json!({"id": id, "parent_branch": parent, "fork_message": to_local(*fork),
                "head_message": to_local(*head), "created_at": created});
            writeln!(out, "{}", json!({ "branch": branch }))?;
        }
        for (id, branch, parent, body) in &messages {
            let message = json!({"local": local.get(id), "branch_id": branch, "parent": to_local(*parent),
                "body": parse_json(body)});
            writeln!(out, "{}", json!({ "message": message }))?;
        }
        let mut statement = connection
            .prepare("SELECT seq, body FROM records WHERE branch_id = ?1 ORDER BY seq")
            .map_err(sql)?;
        for (branch, ..) in &branches {
            let records: Vec<(i64, String)> = statement
                .query_map([branch], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(sql)?
                .collect::<Result<_, _>>()
                .map_err(sql)?;
            for (seq, body) in records {
                let record = json!({"branch_id": branch, "seq": seq, "body": parse_json(&body)});
                writeln!(out, "{}", json!({ "record": record }))?;
            }
        }
        let mut statement = connection
            .prepare("SELECT id, created_at, body FROM artifacts WHERE session_id = ?1 ORDER BY id")
            .map_err(sql)?;
        let artifacts: Vec<(String, i64, String)> = statement
            .query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(sql)?
            .collect::<Result<_, _>>()
            .map_err(sql)?;
        for (id, created, body) in artifacts {
            writeln!(out, "{}", json!({"artifact": {"id": id, "created_at": created, "body": body}}))?;
        }
        out.flush()?;
        Ok(())
    }
}
