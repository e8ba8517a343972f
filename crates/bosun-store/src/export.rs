//! Export of a session to JSON Lines and import back, exact: exporting an
//! imported session gives the same bytes. Message ids are written as local
//! numbers (1, 2, … in id order) so an import into another database, where
//! the ids differ, exports the same file again.
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
use std::io::{BufRead, Write};

use rusqlite::{OptionalExtension, TransactionBehavior, params};
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
                 message_count, usage, model, spend, parent_session, parent_call FROM sessions WHERE id = ?1",
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
                    for (key, column) in [("parent_session", 12), ("parent_call", 13)] {
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

    /// Reads an export and adds its session; returns the session id. Refused
    /// (changing nothing) when the session already exists or a line is bad.
    pub fn import(&self, input: &mut dyn BufRead) -> Result<String, StoreError> {
        let mut lines = Vec::new();
        for (index, line) in input.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(&line)
                .map_err(|e| StoreError::Import { line: index + 1, detail: format!("not JSON: {e}") })?;
            lines.push((index + 1, value));
        }
        let bad = |line: usize, detail: &str| StoreError::Import { line, detail: detail.to_owned() };
        let Some((_, header)) = lines.first() else { return Err(bad(1, "the export is empty")) };
        if header.get("bosun_export").and_then(Value::as_u64) != Some(EXPORT_VERSION) {
            return Err(bad(1, "not a bosun session export (version 1)"));
        }
        let session = &header["session"];
        let id = session["id"].as_str().ok_or_else(|| bad(1, "the session has no id"))?.to_owned();

        let mut connection = self.lock()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        let sql = |e| self.sql(e);
        let exists: Option<i64> = transaction
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&id], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if exists.is_some() {
            return Err(StoreError::Invalid(format!(
                "session {id} already exists in {}",
                self.path().display()
            )));
        }
        let text = |v: &Value| v.as_str().map(str::to_owned);
        transaction
            .execute(
                "INSERT INTO sessions (id, created_at, updated_at, workspace, title, authority, authority_digest,
                 head_branch, message_count, usage, model, spend, parent_session, parent_call)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    id,
                    session["created_at"].as_i64().unwrap_or_default(),
                    session["updated_at"].as_i64().unwrap_or_default(),
                    text(&session["workspace"]),
                    text(&session["title"]),
                    session["authority"].to_string(),
                    text(&session["authority_digest"]).unwrap_or_default(),
                    text(&session["head_branch"]).unwrap_or_default(),
                    session["message_count"].as_i64().unwrap_or_default(),
                    session["usage"].to_string(),
                    text(&session["model"]),
                    // An export from before spend was recorded has none.
                    if session["spend"].is_object() { session["spend"].to_string() } else { "{}".to_owned() },
                    text(&session["parent_session"]),
                    text(&session["parent_call"]),
                ],
            )
            .map_err(sql)?;
        let mut ids: HashMap<u64, i64> = HashMap::new();
        let mut heads = Vec::new();
        for (line, value) in &lines[1..] {
            if let Some(branch) = value.get("branch") {
                let branch_id = text(&branch["id"]).ok_or_else(|| bad(*line, "a branch without an id"))?;
                transaction
                    .execute(
                        "INSERT INTO branches (id, session_id, parent_branch, fork_message, head_message, created_at)
                         VALUES (?1, ?2, ?3, NULL, NULL, ?4)",
                        params![branch_id, id, text(&branch["parent_branch"]), branch["created_at"].as_i64()],
                    )
                    .map_err(sql)?;
                heads.push((branch_id, branch["fork_message"].as_u64(), branch["head_message"].as_u64()));
            } else if let Some(message) = value.get("message") {
                let local =
                    message["local"].as_u64().ok_or_else(|| bad(*line, "a message without a number"))?;
                let parent = match message["parent"].as_u64() {
                    Some(parent) => {
                        Some(*ids.get(&parent).ok_or_else(|| bad(*line, "a parent that comes later"))?)
                    }
                    None => None,
                };
                serde_json::from_value::<bosun_core::Message>(message["body"].clone())
                    .map_err(|e| bad(*line, &format!("not a message: {e}")))?;
                transaction
                    .execute(
                        "INSERT INTO messages (session_id, branch_id, parent_id, body) VALUES (?1, ?2, ?3, ?4)",
                        params![id, text(&message["branch_id"]), parent, message["body"].to_string()],
                    )
                    .map_err(sql)?;
                ids.insert(local, transaction.last_insert_rowid());
            } else if let Some(record) = value.get("record") {
                serde_json::from_value::<bosun_core::JournalRecord>(record["body"].clone())
                    .map_err(|e| bad(*line, &format!("not a journal record: {e}")))?;
                transaction
                    .execute(
                        "INSERT INTO records (branch_id, seq, kind, body) VALUES (?1, ?2, ?3, ?4)",
                        params![
                            text(&record["branch_id"]),
                            record["seq"].as_i64(),
                            record["body"]["record"].as_str().unwrap_or_default(),
                            record["body"].to_string()
                        ],
                    )
                    .map_err(sql)?;
            } else if let Some(artifact) = value.get("artifact") {
                let (Some(artifact_id), Some(body)) = (artifact["id"].as_str(), artifact["body"].as_str())
                else {
                    return Err(bad(*line, "an artifact without an id or a body"));
                };
                transaction
                    .execute(
                        "INSERT INTO artifacts (id, session_id, created_at, body) VALUES (?1, ?2, ?3, ?4)",
                        params![artifact_id, id, artifact["created_at"].as_i64().unwrap_or_default(), body],
                    )
                    .map_err(sql)?;
            } else {
                return Err(bad(*line, "expected a branch, message, record or artifact"));
            }
        }
        for (branch, fork, head) in heads {
            let map = |local: Option<u64>| local.and_then(|l| ids.get(&l).copied());
            transaction
                .execute(
                    "UPDATE branches SET fork_message = ?1, head_message = ?2 WHERE id = ?3",
                    params![map(fork), map(head), branch],
                )
                .map_err(sql)?;
        }
        transaction.commit().map_err(sql)?;
        Ok(id)
    }
}
