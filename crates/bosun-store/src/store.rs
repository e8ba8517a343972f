//! [`Store`]: one SQLite database of sessions (opened in `open.rs`);
//! queries list, show, delete and fork sessions.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bosun_core::{JournalRecord, Message, Spend, TurnRecordOutcome, Usage, validate_history};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::StoreError;

/// The fewest characters of a session id that name it
/// ([`Store::resolve_id`]).
pub const MIN_ID_PREFIX: usize = 8;

/// How many candidates an ambiguous prefix names.
const AMBIGUOUS_SHOWN: usize = 10;

/// How long a writer waits for another process's transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Inner {
    pub(crate) path: PathBuf,
    pub(crate) connection: Mutex<Connection>,
    /// Whether it writes, and why not.
    pub(crate) access: crate::open::Access,
    /// Set when SQLite found the file damaged while in use: the store no
    /// longer vouches for it (`open::Inner::drop`).
    pub(crate) damage_seen: std::sync::atomic::AtomicBool,
}

/// An open session database. Clones share one connection.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.inner.path).finish()
    }
}

/// One line of a session listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The workspace's canonical path, if the session had one.
    pub workspace: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// The first user message, shortened.
    pub title: Option<String>,
    /// Committed messages, all branches.
    pub message_count: i64,
    /// Tokens used, all turns.
    pub usage: Usage,
    /// The model the session last ran a turn on, when recorded.
    pub model: Option<String>,
    /// The base URL that model was reached at, when the user gave one.
    pub base_url: Option<String>,
    /// The reasoning effort that model ran at, when the user set one
    /// (`low`, `medium`, `high` or `off`).
    pub effort: Option<String>,
    /// What its turns spent, by bucket and priced as they ran, all
    /// branches (empty for sessions written before this was recorded).
    pub spend: Spend,
    /// For a sub-agent's session, the session and tool call that started
    /// it. Kept as data: the parent may since have been deleted (or, for an
    /// imported session, never have been in this database).
    pub parent: Option<ParentLink>,
}

/// Where a sub-agent's session came from: its parent session and the
/// parent's tool call (`delegate_tasks`) that started it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ParentLink {
    /// The parent session's id.
    pub session: String,
    /// The id of the parent's tool call that started the session.
    pub call: String,
}

/// A branch of a session's tree.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BranchInfo {
    /// The branch id.
    pub id: String,
    /// The branch it was forked from.
    pub parent_branch: Option<String>,
    /// The message it was forked at.
    pub fork_message: Option<i64>,
    /// Its newest message.
    pub head_message: Option<i64>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The messages from the root to its newest: what resuming it rebuilds.
    pub message_count: i64,
}

/// A session in full: its summary, branches, and the history of its head.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SessionDetail {
    /// The listing line.
    pub summary: SessionSummary,
    /// The branch new turns go to.
    pub head_branch: String,
    /// Every branch.
    pub branches: Vec<BranchInfo>,
    /// The head branch's messages, oldest first, with their ids: the
    /// history resuming rebuilds.
    pub history: Vec<(i64, Message)>,
    /// The prompts of the head branch's turns that were rolled back
    /// (invariant 21), oldest first. They are shown, never part of
    /// `history`.
    pub failed_turns: Vec<FailedTurn>,
    /// Every turn of the head branch that ended, oldest first, with what it
    /// spent (zero for turns a fork or import copied, and those a resume
    /// closed).
    pub turns: Vec<TurnSpend>,
}

/// One ended turn and what it spent.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnSpend {
    /// The turn's number.
    pub turn: u64,
    /// How it ended.
    pub outcome: TurnRecordOutcome,
    /// What it spent, by bucket.
    pub spend: Spend,
}

/// A turn that left no message in history: rolled back before any tool
/// ran, or interrupted (the process was killed, or lost its journal)
/// before its first commit. The user's prompt, kept to be shown (invariant
/// 21) but not in the history resuming rebuilds. Read from the branch's
/// journal records.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FailedTurn {
    /// The turn's number.
    pub turn: u64,
    /// The history message it came after; `None` when it was the first.
    pub after: Option<i64>,
    /// The prompt, as the user gave it.
    pub message: Message,
    /// Always `true`: the turn did not finish.
    pub failed: bool,
    /// `true` when the turn never ended (the process died in it; still
    /// open, or closed by a resume since) rather than rolling back.
    pub interrupted: bool,
}

/// Which sessions to list.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only sessions of this workspace path.
    pub workspace: Option<String>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
    /// Sub-agents' sessions too. By default (`false`) a session whose
    /// parent is in the store is left out, so a listing (and `resume
    /// --last`) shows top-level sessions; one whose parent is gone
    /// (deleted, or not imported with it) is listed like a top-level one.
    pub children: bool,
}

impl ListFilter {
    /// Sessions of one workspace.
    pub fn workspace(path: impl Into<String>) -> Self {
        Self { workspace: Some(path.into()), ..Self::default() }
    }

    /// The same filter, listing sub-agents' sessions too.
    pub fn with_children(self) -> Self {
        Self { children: true, ..self }
    }
}

/// The columns [`summary_from_row`] reads, in its order.
const SUMMARY_COLUMNS: &str =
    "id, workspace, created_at, updated_at, title, message_count, usage, model, spend,
    parent_session, parent_call, base_url, effort";

impl Store {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.inner.connection.lock().map_err(|_| StoreError::Sqlite("the connection lock is poisoned".into()))
    }

    /// The connection, for work that writes: refused, naming the file, on a
    /// store that only reads.
    pub(crate) fn lock_to_write(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.writable()?;
        self.lock()
    }

    pub(crate) fn sql(&self, error: rusqlite::Error) -> StoreError {
        let error = StoreError::from_sqlite(&self.inner.path, error);
        if matches!(error, StoreError::Corrupt { .. }) {
            self.inner.damage_seen.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        error
    }

    /// The id of the one session whose id is `given`, starts with it or
    /// ends with it: a whole id, a prefix of at least [`MIN_ID_PREFIX`]
    /// characters, or the short id the conversation's status line shows (the
    /// id's last 8, its random part: the first 8 of UUIDv7 ids made within a
    /// minute or so are the same). Every command that takes a session id
    /// resolves it here.
    ///
    /// # Errors
    /// [`StoreError::ShortId`] for a shorter prefix, [`StoreError::NotFound`]
    /// when no id starts or ends with it, [`StoreError::Ambiguous`] (naming
    /// the candidates) when more than one does.
    pub fn resolve_id(&self, given: &str) -> Result<String, StoreError> {
        let connection = self.lock()?;
        let exact: Option<String> = connection
            .query_row("SELECT id FROM sessions WHERE id = ?1", [given], |row| row.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some(id) = exact {
            return Ok(id);
        }
        if given.chars().count() < MIN_ID_PREFIX {
            return Err(StoreError::ShortId { given: given.to_owned() });
        }
        let mut statement = connection
            .prepare_cached(
                "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1 OR substr(id, -length(?1)) = ?1 \
                 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.sql(e))?;
        let shown = AMBIGUOUS_SHOWN as i64;
        let rows = statement.query_map(params![given, shown + 1], |row| row.get::<_, String>(0));
        let mut found =
            rows.and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>).map_err(|e| self.sql(e))?;
        match found.len() {
            0 => Err(not_found("session", given)),
            1 => Ok(found.remove(0)),
            _ => {
                if found.len() > AMBIGUOUS_SHOWN {
                    found.truncate(AMBIGUOUS_SHOWN);
                    found.push("…".to_owned());
                }
                Err(StoreError::Ambiguous { prefix: given.to_owned(), candidates: found })
            }
        }
    }

    /// Sessions, newest first. Sub-agents' sessions only when
    /// [`ListFilter::children`] asks for them (see there).
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<SessionSummary>, StoreError> {
        let connection = self.lock()?;
        let limit = filter.limit.map_or(-1, |l| l as i64);
        let mut statement = connection
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM sessions s
                 WHERE (?1 IS NULL OR workspace = ?1)
                 AND (?2 OR parent_session IS NULL
                      OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session))
                 ORDER BY updated_at DESC, id DESC LIMIT ?3"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map(params![filter.workspace, filter.children, limit], summary_from_row)
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The direct children of `session` (sub-agents it started), oldest
    /// first. Empty for a session with none, and for one not in the store:
    /// children outlive a deleted parent and still name it.
    pub fn children(&self, session: &str) -> Result<Vec<SessionSummary>, StoreError> {
        let connection = self.lock()?;
        let mut statement = connection
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM sessions WHERE parent_session = ?1 ORDER BY created_at, id"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = statement.query_map([session], summary_from_row).map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// One session in full.
    pub fn show(&self, session: &str) -> Result<SessionDetail, StoreError> {
        let connection = self.lock()?;
        let (summary, head_branch): (SessionSummary, String) = connection
            .query_row(
                &format!("SELECT {SUMMARY_COLUMNS}, head_branch FROM sessions WHERE id = ?1"),
                [session],
                |row| Ok((summary_from_row(row)?, row.get(13)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| not_found("session", session))?;
        let branches = branches(&connection, session).map_err(|e| self.sql(e))?;
        let head = branches.iter().find(|b| b.id == head_branch).and_then(|b| b.head_message);
        let history = chain(&connection, head).map_err(|e| self.sql(e))?;
        let failed_turns = failed_turns(&connection, &head_branch, &history).map_err(|e| self.sql(e))?;
        let turns = turn_spends(&connection, &head_branch).map_err(|e| self.sql(e))?;
        Ok(SessionDetail { summary, head_branch, branches, history, failed_turns, turns })
    }

    /// The authority a session runs under now: its newest recorded
    /// snapshot (the first, or the last authority change).
    pub fn authority(&self, session: &str) -> Result<bosun_core::AuthoritySnapshot, StoreError> {
        let connection = self.lock()?;
        let text: String = connection
            .query_row("SELECT authority FROM sessions WHERE id = ?1", [session], |row| row.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| not_found("session", session))?;
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Invalid(format!("session {session}'s authority: {e}")))
    }

    /// Deletes a session and everything of it. Refused while another live
    /// process holds it. Its sub-agents' sessions are sessions of their
    /// own and stay: their [`SessionSummary::parent`] still names it, and
    /// the default listing shows them from then on.
    pub fn delete(&self, session: &str) -> Result<(), StoreError> {
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        crate::lease::check_free(&transaction, session, None).map_err(|e| e.in_store(self))?;
        let deleted =
            transaction.execute("DELETE FROM sessions WHERE id = ?1", [session]).map_err(|e| self.sql(e))?;
        transaction
            .execute("DELETE FROM leases WHERE session_id = ?1", [session])
            .map_err(|e| self.sql(e))?;
        transaction
            .execute("DELETE FROM artifacts WHERE session_id = ?1", [session])
            .map_err(|e| self.sql(e))?;
        crate::files::delete_session(&transaction, session).map_err(|e| self.sql(e))?;
        transaction.commit().map_err(|e| self.sql(e))?;
        if deleted == 0 {
            return Err(not_found("session", session));
        }
        Ok(())
    }

    /// Starts a branch of `session` at `message` (an assistant answer or the
    /// last result of a tool batch) and makes it the head. Returns its id.
    /// The branch it leaves stays as it is ([`Store::switch_branch`] goes
    /// back to it).
    pub fn fork(&self, session: &str, message: i64) -> Result<String, StoreError> {
        self.fork_at(session, Some(message))
    }

    /// [`Store::fork`], or with `None` a branch with no message yet (the
    /// session as it was before its first turn).
    pub fn fork_at(&self, session: &str, message: Option<i64>) -> Result<String, StoreError> {
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        let owner: Option<String> = match message {
            Some(message) => transaction
                .query_row("SELECT session_id FROM messages WHERE id = ?1", [message], |r| r.get(0))
                .optional()
                .map_err(|e| self.sql(e))?,
            None => transaction
                .query_row("SELECT id FROM sessions WHERE id = ?1", [session], |r| r.get(0))
                .optional()
                .map_err(|e| self.sql(e))?,
        };
        let shown = || message.map_or_else(|| "the start".to_owned(), |m| m.to_string());
        if owner.as_deref() != Some(session) {
            return Err(match message {
                Some(_) => not_found("message of this session", &shown()),
                None => not_found("session", session),
            });
        }
        let history = chain(&transaction, message).map_err(|e| self.sql(e))?;
        let messages: Vec<Message> = history.iter().map(|(_, m)| m.clone()).collect();
        let ends_a_unit = match messages.last() {
            None => true,
            Some(Message::Assistant { .. }) => {
                messages.last().is_some_and(|m| m.tool_calls().next().is_none())
            }
            Some(Message::ToolResult { .. }) => true,
            _ => false,
        };
        if !ends_a_unit || validate_history(&messages).is_err() {
            return Err(StoreError::Invalid(format!(
                "cannot fork at message {}: a fork must end at an assistant answer or at the last result of a tool batch",
                shown()
            )));
        }
        let first: String = transaction
            .query_row(
                "SELECT r.body FROM records r JOIN branches b ON b.id = r.branch_id
                 WHERE b.session_id = ?1 AND b.parent_branch IS NULL AND r.seq = 0",
                [session],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        let mut started: JournalRecord = serde_json::from_str(&first).map_err(|e| {
            StoreError::Invalid(format!("session {session} has an unreadable first record: {e}"))
        })?;
        // A fork starts under the authority the session runs under now: the
        // row follows each `authority_changed` record.
        let current: String = transaction
            .query_row("SELECT authority FROM sessions WHERE id = ?1", [session], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        if let JournalRecord::SessionStarted { authority, .. } = &mut started {
            *authority = serde_json::from_str(&current).map_err(|e| {
                StoreError::Invalid(format!("session {session} has an unreadable authority: {e}"))
            })?;
        }
        // A branch with no message yet comes off the head.
        let (parent_branch,): (String,) = match message {
            Some(message) => {
                transaction.query_row("SELECT branch_id FROM messages WHERE id = ?1", [message], |r| {
                    Ok((r.get(0)?,))
                })
            }
            None => transaction
                .query_row("SELECT head_branch FROM sessions WHERE id = ?1", [session], |r| Ok((r.get(0)?,))),
        }
        .map_err(|e| self.sql(e))?;
        let branch = uuid::Uuid::now_v7().to_string();
        let now = crate::rows::now_ms();
        transaction
            .execute(
                "INSERT INTO branches (id, session_id, parent_branch, fork_message, head_message, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![branch, session, parent_branch, message, now],
            )
            .map_err(|e| self.sql(e))?;
        let mut records = vec![started];
        records.extend(records_for(&messages));
        for (seq, record) in records.iter().enumerate() {
            crate::rows::insert_record(&transaction, &branch, seq as i64, record).map_err(|e| self.sql(e))?;
        }
        transaction
            .execute(
                "UPDATE sessions SET head_branch = ?1, updated_at = ?2 WHERE id = ?3",
                params![branch, now, session],
            )
            .map_err(|e| self.sql(e))?;
        transaction.commit().map_err(|e| self.sql(e))?;
        Ok(branch)
    }
}

/// Journal records that replay to exactly `messages` (a valid history of
/// complete turns), one turn per user message.
pub(crate) fn records_for(messages: &[Message]) -> Vec<JournalRecord> {
    let mut records = Vec::new();
    let mut turn = 0;
    let mut last_was_answer = false;
    let mut index = 0;
    let close = |records: &mut Vec<JournalRecord>, turn: u64, answered: bool| {
        if turn > 0 {
            let outcome =
                if answered { TurnRecordOutcome::Completed } else { TurnRecordOutcome::Checkpointed };
            records.push(JournalRecord::TurnEnded { turn, outcome, spend: Spend::default() });
        }
    };
    while index < messages.len() {
        match &messages[index] {
            user @ Message::User { .. } => {
                close(&mut records, turn, last_was_answer);
                turn += 1;
                records.push(JournalRecord::TurnStarted { turn, message: user.clone(), queued: Vec::new() });
                index += 1;
            }
            assistant @ Message::Assistant { .. } => {
                let calls = assistant.tool_calls().count();
                let unit: Vec<Message> = messages[index..(index + 1 + calls).min(messages.len())].to_vec();
                last_was_answer = calls == 0;
                index += unit.len();
                // A fork or import starts a new process history: the model ids of
                // the original calls are not carried (invariant 4 holds per session).
                records.push(JournalRecord::Committed {
                    turn,
                    messages: unit,
                    provider_ids: Default::default(),
                });
            }
            _ => index += 1,
        }
    }
    close(&mut records, turn, last_was_answer);
    records
}

fn not_found(what: &'static str, id: &str) -> StoreError {
    StoreError::NotFound { what, id: id.to_owned() }
}

fn summary_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    let usage: String = row.get(6)?;
    let spend: String = row.get(8)?;
    let parent_session: Option<String> = row.get(9)?;
    let parent_call: Option<String> = row.get(10)?;
    Ok(SessionSummary {
        id: row.get(0)?,
        workspace: row.get(1)?,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        title: row.get(4)?,
        message_count: row.get(5)?,
        usage: serde_json::from_str(&usage).unwrap_or_default(),
        model: row.get(7)?,
        base_url: row.get(11)?,
        effort: row.get(12)?,
        spend: serde_json::from_str(&spend).unwrap_or_default(),
        parent: parent_session.map(|session| ParentLink { session, call: parent_call.unwrap_or_default() }),
    })
}

/// The branch's `turn_ended` records.
fn turn_spends(connection: &Connection, branch: &str) -> rusqlite::Result<Vec<TurnSpend>> {
    let mut statement = connection.prepare_cached(
        "SELECT body FROM records WHERE branch_id = ?1 AND kind = 'turn_ended' ORDER BY seq",
    )?;
    let rows = statement.query_map([branch], |row| row.get::<_, String>(0))?;
    let mut turns = Vec::new();
    for body in rows {
        // A record this build cannot read is left out of the listing, not
        // a failure of it: the journal's own reader reports it on resume.
        if let Ok(JournalRecord::TurnEnded { turn, outcome, spend }) = serde_json::from_str(&body?) {
            turns.push(TurnSpend { turn, outcome, spend });
        }
    }
    Ok(turns)
}

pub(crate) fn branches(connection: &Connection, session: &str) -> rusqlite::Result<Vec<BranchInfo>> {
    let mut statement = connection.prepare_cached(
        "SELECT id, parent_branch, fork_message, head_message, created_at FROM branches WHERE session_id = ?1
         ORDER BY created_at, id",
    )?;
    let rows = statement.query_map([session], |row| {
        Ok(BranchInfo {
            id: row.get(0)?,
            parent_branch: row.get(1)?,
            fork_message: row.get(2)?,
            head_message: row.get(3)?,
            created_at: row.get(4)?,
            message_count: 0,
        })
    })?;
    let mut branches = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    let mut count = connection.prepare_cached(
        "WITH RECURSIVE up(id, parent_id) AS (
            SELECT id, parent_id FROM messages WHERE id = ?1
            UNION ALL
            SELECT m.id, m.parent_id FROM messages m JOIN up ON m.id = up.parent_id
         ) SELECT count(*) FROM up",
    )?;
    for branch in &mut branches {
        branch.message_count = count.query_row([branch.head_message], |row| row.get(0))?;
    }
    Ok(branches)
}

/// The turns of `branch` that left no message in history (rolled back, or
/// interrupted before their first commit, the last one perhaps still
/// open), placed in its `history` by counting what each record adds to it,
/// as replay does: a turn's prompt enters with its first commit, and a roll
/// back returns to where the turn started.
fn failed_turns(
    connection: &Connection,
    branch: &str,
    history: &[(i64, Message)],
) -> rusqlite::Result<Vec<FailedTurn>> {
    let mut statement = connection.prepare_cached(
        "SELECT kind, json_extract(body, '$.turn'),
            CASE kind WHEN 'committed' THEN json_array_length(body, '$.messages') END,
            CASE kind WHEN 'turn_started' THEN json_extract(body, '$.message') END,
            CASE kind WHEN 'turn_ended' THEN json_extract(body, '$.outcome') END
         FROM records WHERE branch_id = ?1 AND kind IN ('turn_started', 'committed', 'turn_ended')
         ORDER BY seq",
    )?;
    let rows = statement.query_map([branch], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, Option<i64>>(1)?,
            row.get::<_, Option<i64>>(2)?,
            row.get::<_, Option<String>>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let mut failed = Vec::new();
    let (mut length, mut entry) = (0usize, 0usize);
    let mut prompt: Option<(u64, Message)> = None;
    let mut prompt_entered = false;
    let after = |at: usize| at.checked_sub(1).and_then(|i| history.get(i)).map(|(id, _)| *id);
    for row in rows {
        let (kind, turn, committed, message, outcome) = row?;
        match kind.as_str() {
            "turn_started" => {
                entry = length;
                let turn = turn.unwrap_or_default().max(0) as u64;
                prompt = message.and_then(|m| serde_json::from_str(&m).ok()).map(|m| (turn, m));
                prompt_entered = false;
            }
            "committed" => {
                length += usize::from(!prompt_entered) + committed.unwrap_or_default().max(0) as usize;
                prompt_entered = true;
            }
            _ => {
                let interrupted = match outcome.as_deref() {
                    Some("rolled_back") => Some(false),
                    Some("interrupted") if !prompt_entered => Some(true),
                    _ => None,
                };
                if let (Some(interrupted), Some((turn, message))) = (interrupted, prompt.take()) {
                    length = entry;
                    failed.push(FailedTurn { turn, after: after(entry), message, failed: true, interrupted });
                }
                prompt = None;
            }
        }
    }
    // A turn still open (its process was killed and nothing resumed it
    // since) whose prompt never entered history.
    if let Some((turn, message)) = prompt.filter(|_| !prompt_entered) {
        failed.push(FailedTurn { turn, after: after(length), message, failed: true, interrupted: true });
    }
    Ok(failed)
}

/// The messages from the root to `head`, following parent links.
pub(crate) fn chain(connection: &Connection, head: Option<i64>) -> rusqlite::Result<Vec<(i64, Message)>> {
    let Some(head) = head else { return Ok(Vec::new()) };
    let mut statement = connection.prepare_cached(
        "WITH RECURSIVE up(id, parent_id, body, depth) AS (
            SELECT id, parent_id, body, 0 FROM messages WHERE id = ?1
            UNION ALL
            SELECT m.id, m.parent_id, m.body, up.depth + 1 FROM messages m JOIN up ON m.id = up.parent_id
         ) SELECT id, body FROM up ORDER BY depth DESC",
    )?;
    let rows = statement.query_map([head], |row| {
        let body: String = row.get(1)?;
        let message: Message = serde_json::from_str(&body).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
        })?;
        Ok((row.get(0)?, message))
    })?;
    rows.collect()
}
