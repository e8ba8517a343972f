//! Import of an export (the format is in `export.rs`), all or nothing: the
//! whole file is read and checked before the database is touched, then
//! written in one transaction that a failure anywhere rolls back. A refusal
//! names the line and why ([`StoreError::Import`]).
//!
//! An import creates one session and writes only into it, since an export
//! is as untrusted as any file: a forged one must not add a turn to, or
//! break the replay of, a session the database already holds. So every
//! message, record and branch reference must name a branch the export
//! itself declares, every message or fork point a message it carries;
//! branch and artifact ids the database already has (another session's)
//! are refused; keys the format does not have are refused rather than
//! ignored. Each branch's records must be numbered from 0 without a gap and
//! replay strictly, as a resume would, so what is imported resumes.
//!
//! The parent link of a sub-agent's session (`parent_session`,
//! `parent_call`) is the one reference to another session, kept as data:
//! nothing is written into that session.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use bosun_core::{AuthoritySnapshot, JournalRecord, Message, ReplayError};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Deserialize;
use serde_json::Value;

use crate::error::StoreError;
use crate::export::EXPORT_VERSION;
use crate::store::Store;

/// The first line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    #[serde(rename = "bosun_export")]
    _version: u64,
    session: SessionLine,
}

/// The session row. Fields later versions added default, so older exports
/// import; values kept as JSON are stored as they came (the round trip is
/// byte-exact).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionLine {
    id: String,
    #[serde(default)]
    created_at: i64,
    #[serde(default)]
    updated_at: i64,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    title: Option<String>,
    authority: Value,
    #[serde(default)]
    authority_digest: String,
    head_branch: String,
    #[serde(default)]
    message_count: i64,
    #[serde(default)]
    usage: Value,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    spend: Value,
    #[serde(default)]
    parent_session: Option<String>,
    #[serde(default)]
    parent_call: Option<String>,
    /// Read, never stored: a base URL from a file would be where the
    /// user's key goes on resume, and keys go only to hosts the user chose
    /// (invariant 20). An imported session resumes on the configured one.
    #[serde(default, rename = "base_url")]
    _base_url: Option<String>,
}

/// Every line after the first.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Branch(BranchLine),
    Message(MessageLine),
    Record(RecordLine),
    Artifact(ArtifactLine),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BranchLine {
    id: String,
    parent_branch: Option<String>,
    fork_message: Option<u64>,
    head_message: Option<u64>,
    created_at: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageLine {
    local: u64,
    branch_id: String,
    parent: Option<u64>,
    body: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordLine {
    branch_id: String,
    seq: u64,
    body: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactLine {
    id: String,
    #[serde(default)]
    created_at: i64,
    body: String,
}

/// An export read and checked against itself, each part with its line.
struct Checked {
    header: SessionLine,
    header_line: usize,
    branches: Vec<(usize, BranchLine)>,
    messages: Vec<(usize, MessageLine)>,
    records: Vec<(usize, RecordLine)>,
    artifacts: Vec<(usize, ArtifactLine)>,
}

fn bad(line: usize, detail: impl Into<String>) -> StoreError {
    StoreError::Import { line, detail: detail.into() }
}

/// Reads `input` whole and checks everything that needs no database.
fn read(input: &mut dyn BufRead) -> Result<Checked, StoreError> {
    let mut lines = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(&line).map_err(|e| bad(index + 1, format!("not JSON: {e}")))?;
        lines.push((index + 1, value));
    }
    let mut lines = lines.into_iter();
    let Some((first, header)) = lines.next() else { return Err(bad(1, "the export is empty")) };
    if header.get("bosun_export").and_then(Value::as_u64) != Some(EXPORT_VERSION) {
        return Err(bad(first, "not a bosun session export (version 1)"));
    }
    let header: Header =
        serde_json::from_value(header).map_err(|e| bad(first, format!("not a session header: {e}")))?;
    let header = header.session;
    if header.id.is_empty() {
        return Err(bad(first, "the session has no id"));
    }
    serde_json::from_value::<AuthoritySnapshot>(header.authority.clone())
        .map_err(|e| bad(first, format!("the session's authority is unreadable: {e}")))?;

    let mut checked = Checked {
        header,
        header_line: first,
        branches: Vec::new(),
        messages: Vec::new(),
        records: Vec::new(),
        artifacts: Vec::new(),
    };
    for (line, value) in lines {
        let parsed: Line = serde_json::from_value(value)
            .map_err(|e| bad(line, format!("expected a branch, message, record or artifact: {e}")))?;
        match parsed {
            Line::Branch(branch) => checked.branches.push((line, branch)),
            Line::Message(message) => checked.messages.push((line, message)),
            Line::Record(record) => checked.records.push((line, record)),
            Line::Artifact(artifact) => checked.artifacts.push((line, artifact)),
        }
    }
    checked.check()?;
    Ok(checked)
}

impl Checked {
    /// Every reference inside the export resolves inside it.
    fn check(&self) -> Result<(), StoreError> {
        let session = &self.header.id;
        let mut branches = HashSet::new();
        for (line, branch) in &self.branches {
            if branch.id.is_empty() || !branches.insert(branch.id.as_str()) {
                return Err(bad(*line, format!("branch `{}` is empty or declared twice", branch.id)));
            }
        }
        let not_ours = |line: usize, what: &str, branch: &str| {
            bad(
                line,
                format!(
                    "{what} names branch `{branch}`, which is not a branch of session {session} in this export"
                ),
            )
        };
        if !branches.contains(self.header.head_branch.as_str()) {
            return Err(bad(
                self.header_line,
                format!("the head branch `{}` is not a branch of this export", self.header.head_branch),
            ));
        }
        let mut messages = HashSet::new();
        for (line, message) in &self.messages {
            if !branches.contains(message.branch_id.as_str()) {
                return Err(not_ours(*line, "the message", &message.branch_id));
            }
            if let Some(parent) = message.parent
                && !messages.contains(&parent)
            {
                return Err(bad(*line, format!("the message's parent {parent} is not an earlier message")));
            }
            if !messages.insert(message.local) {
                return Err(bad(*line, format!("message {} is declared twice", message.local)));
            }
            serde_json::from_value::<Message>(message.body.clone())
                .map_err(|e| bad(*line, format!("not a message: {e}")))?;
        }
        for (line, branch) in &self.branches {
            if let Some(parent) = &branch.parent_branch
                && !branches.contains(parent.as_str())
            {
                return Err(not_ours(*line, "the branch's parent", parent));
            }
            for point in [branch.fork_message, branch.head_message].into_iter().flatten() {
                if !messages.contains(&point) {
                    return Err(bad(
                        *line,
                        format!("the branch names message {point}, which is not in this export"),
                    ));
                }
            }
        }
        let mut artifacts = HashSet::new();
        for (line, artifact) in &self.artifacts {
            if artifact.id.is_empty() || !artifacts.insert(artifact.id.as_str()) {
                return Err(bad(*line, format!("artifact `{}` is empty or declared twice", artifact.id)));
            }
        }
        self.check_records(&branches, not_ours)
    }

    /// Each declared branch's records: numbered 0, 1, … and replaying
    /// strictly.
    fn check_records(
        &self,
        branches: &HashSet<&str>,
        not_ours: impl Fn(usize, &str, &str) -> StoreError,
    ) -> Result<(), StoreError> {
        let mut by_branch: HashMap<&str, Vec<(usize, JournalRecord)>> = HashMap::new();
        for (line, record) in &self.records {
            if !branches.contains(record.branch_id.as_str()) {
                return Err(not_ours(*line, "the record", &record.branch_id));
            }
            let body = serde_json::from_value::<JournalRecord>(record.body.clone())
                .map_err(|e| bad(*line, format!("not a journal record: {e}")))?;
            let earlier = by_branch.entry(record.branch_id.as_str()).or_default();
            if record.seq != earlier.len() as u64 {
                return Err(bad(
                    *line,
                    format!(
                        "record {} of branch `{}` should be record {}",
                        record.seq,
                        record.branch_id,
                        earlier.len()
                    ),
                ));
            }
            earlier.push((*line, body));
        }
        for (line, branch) in &self.branches {
            let Some(records) = by_branch.get(branch.id.as_str()) else {
                return Err(bad(*line, format!("branch `{}` has no records", branch.id)));
            };
            let (lines, records): (Vec<usize>, Vec<JournalRecord>) = records.iter().cloned().unzip();
            let last = lines.last().copied().unwrap_or(*line);
            if let Err(error) = bosun_core::replay(&records) {
                let at = match &error {
                    ReplayError::OutOfOrder { index, .. } => lines.get(*index).copied().unwrap_or(last),
                    ReplayError::NoSessionStart => lines.first().copied().unwrap_or(*line),
                    _ => last,
                };
                return Err(bad(at, format!("branch `{}` does not replay: {error}", branch.id)));
            }
        }
        Ok(())
    }
}

impl Store {
    /// Reads an export and adds its session; returns the session id.
    /// Refused, changing nothing, when the session already exists
    /// ([`StoreError::Invalid`]) or a line is bad or reaches outside the
    /// session ([`StoreError::Import`], naming the line).
    pub fn import(&self, input: &mut dyn BufRead) -> Result<String, StoreError> {
        let checked = read(input)?;
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        self.check_new(&transaction, &checked)?;
        self.write(&transaction, &checked)?;
        transaction.commit().map_err(|e| self.sql(e))?;
        Ok(checked.header.id)
    }

    /// Nothing the import would create exists already: its session, any
    /// of its branches, any of its artifacts.
    fn check_new(&self, transaction: &Transaction<'_>, checked: &Checked) -> Result<(), StoreError> {
        let exists = |sql: &str, id: &str| -> Result<bool, StoreError> {
            let found: Option<i64> =
                transaction.query_row(sql, [id], |r| r.get(0)).optional().map_err(|e| self.sql(e))?;
            Ok(found.is_some())
        };
        let id = &checked.header.id;
        if exists("SELECT 1 FROM sessions WHERE id = ?1", id)? {
            return Err(StoreError::Invalid(format!(
                "session {id} already exists in {}",
                self.path().display()
            )));
        }
        for (line, branch) in &checked.branches {
            if exists("SELECT 1 FROM branches WHERE id = ?1", &branch.id)? {
                return Err(bad(
                    *line,
                    format!("branch `{}` already exists in this database (another session's)", branch.id),
                ));
            }
        }
        for (line, artifact) in &checked.artifacts {
            if exists("SELECT 1 FROM artifacts WHERE id = ?1", &artifact.id)? {
                return Err(bad(
                    *line,
                    format!("artifact `{}` already exists in this database (another session's)", artifact.id),
                ));
            }
        }
        Ok(())
    }

    fn write(&self, transaction: &Transaction<'_>, checked: &Checked) -> Result<(), StoreError> {
        let sql = |e| self.sql(e);
        let session = &checked.header;
        let id = &session.id;
        transaction
            .execute(
                "INSERT INTO sessions (id, created_at, updated_at, workspace, title, authority, authority_digest,
                 head_branch, message_count, usage, model, spend, parent_session, parent_call, base_url)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    id,
                    session.created_at,
                    session.updated_at,
                    session.workspace,
                    session.title,
                    session.authority.to_string(),
                    session.authority_digest,
                    session.head_branch,
                    session.message_count,
                    session.usage.to_string(),
                    session.model,
                    // An export from before spend was recorded has none.
                    if session.spend.is_object() { session.spend.to_string() } else { "{}".to_owned() },
                    session.parent_session,
                    session.parent_call,
                    None::<String>,
                ],
            )
            .map_err(sql)?;
        for (_, branch) in &checked.branches {
            transaction
                .execute(
                    "INSERT INTO branches (id, session_id, parent_branch, fork_message, head_message, created_at)
                     VALUES (?1, ?2, ?3, NULL, NULL, ?4)",
                    params![branch.id, id, branch.parent_branch, branch.created_at],
                )
                .map_err(sql)?;
        }
        // Row ids differ from the export's local numbers; parents come first.
        let mut rows: HashMap<u64, i64> = HashMap::new();
        for (_, message) in &checked.messages {
            let parent = message.parent.and_then(|p| rows.get(&p).copied());
            transaction
                .execute(
                    "INSERT INTO messages (session_id, branch_id, parent_id, body) VALUES (?1, ?2, ?3, ?4)",
                    params![id, message.branch_id, parent, message.body.to_string()],
                )
                .map_err(sql)?;
            rows.insert(message.local, transaction.last_insert_rowid());
        }
        for (_, branch) in &checked.branches {
            let row = |local: Option<u64>| local.and_then(|l| rows.get(&l).copied());
            transaction
                .execute(
                    "UPDATE branches SET fork_message = ?1, head_message = ?2 WHERE id = ?3",
                    params![row(branch.fork_message), row(branch.head_message), branch.id],
                )
                .map_err(sql)?;
        }
        for (_, record) in &checked.records {
            transaction
                .execute(
                    "INSERT INTO records (branch_id, seq, kind, body) VALUES (?1, ?2, ?3, ?4)",
                    params![
                        record.branch_id,
                        record.seq as i64,
                        record.body["record"].as_str().unwrap_or_default(),
                        record.body.to_string()
                    ],
                )
                .map_err(sql)?;
        }
        for (_, artifact) in &checked.artifacts {
            transaction
                .execute(
                    "INSERT INTO artifacts (id, session_id, created_at, body) VALUES (?1, ?2, ?3, ?4)",
                    params![artifact.id, id, artifact.created_at, artifact.body],
                )
                .map_err(sql)?;
        }
        Ok(())
    }
}
