//! A session's branches and turns as a person names them: a branch by its
//! id or a unique part of it ([`Store::resolve_branch`]), the head moved to
//! one to continue it ([`Store::switch_branch`]), and the turns of the head
//! branch with where each began ([`Store::turns`]), which rewind starts
//! from.

use bosun_core::{JournalRecord, Message, TurnRecordOutcome};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::StoreError;
use crate::store::{MIN_ID_PREFIX, Store, chain};

/// One turn of a session's head branch.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnStart {
    /// Its number, as the branch's journal numbers it.
    pub turn: u64,
    /// The prompt that started it.
    pub prompt: Message,
    /// The history message it came after (`None`: it was the first): the
    /// conversation as it was when the turn started ends there.
    pub after: Option<i64>,
    /// The ids of the tool calls it made (session-minted).
    pub calls: Vec<String>,
    /// Whether it was rolled back (its prompt is not in history).
    pub rolled_back: bool,
}

impl Store {
    /// The id of the branch of `session` that `given` names: a whole id, or
    /// a prefix or suffix of at least [`MIN_ID_PREFIX`] characters that
    /// only one of its branches has.
    pub fn resolve_branch(&self, session: &str, given: &str) -> Result<String, StoreError> {
        let connection = self.lock()?;
        let mut statement = connection
            .prepare_cached("SELECT id FROM branches WHERE session_id = ?1 ORDER BY created_at, id")
            .map_err(|e| self.sql(e))?;
        let ids = statement
            .query_map([session], |row| row.get::<_, String>(0))
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(|e| self.sql(e))?;
        if let Some(id) = ids.iter().find(|id| *id == given) {
            return Ok(id.clone());
        }
        if given.chars().count() < MIN_ID_PREFIX {
            return Err(StoreError::Invalid(format!(
                "branch `{given}` is too short: give at least {MIN_ID_PREFIX} characters of it (`bosun sessions \
                 show {session}` lists the branches)"
            )));
        }
        let found: Vec<&String> =
            ids.iter().filter(|id| id.starts_with(given) || id.ends_with(given)).collect();
        match found.as_slice() {
            [] => Err(StoreError::NotFound { what: "branch of this session", id: given.to_owned() }),
            [one] => Ok((*one).clone()),
            many => Err(StoreError::Invalid(format!(
                "branch `{given}` is ambiguous: it names {}; give more characters",
                many.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Makes `branch` the head of `session`: its next turn continues it.
    /// Nothing else changes; every other branch stays as it is. Refused
    /// while another live process runs the session.
    pub fn switch_branch(&self, session: &str, branch: &str) -> Result<(), StoreError> {
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        crate::lease::check_free(&transaction, session, None).map_err(|e| e.in_store(self))?;
        let owner: Option<String> = transaction
            .query_row("SELECT session_id FROM branches WHERE id = ?1", [branch], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        if owner.as_deref() != Some(session) {
            return Err(StoreError::NotFound { what: "branch of this session", id: branch.to_owned() });
        }
        transaction
            .execute(
                "UPDATE sessions SET head_branch = ?1, updated_at = ?2 WHERE id = ?3",
                params![branch, crate::rows::now_ms(), session],
            )
            .map_err(|e| self.sql(e))?;
        transaction.commit().map_err(|e| self.sql(e))
    }

    /// The turns of `session`'s head branch, oldest first, each with where
    /// it began in the branch's history and the calls it made. Counted from
    /// the branch's journal records as replay counts them: a turn's prompt
    /// enters history with its first commit, a steering message when it is
    /// delivered, and a roll back returns to where the turn began.
    pub fn turns(&self, session: &str) -> Result<Vec<TurnStart>, StoreError> {
        let connection = self.lock()?;
        let head: String = connection
            .query_row("SELECT head_branch FROM sessions WHERE id = ?1", [session], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| StoreError::NotFound { what: "session", id: session.to_owned() })?;
        let head_message: Option<i64> = connection
            .query_row("SELECT head_message FROM branches WHERE id = ?1", [&head], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .flatten();
        let history = chain(&connection, head_message).map_err(|e| self.sql(e))?;
        let mut statement = connection
            .prepare_cached(
                "SELECT body FROM records WHERE branch_id = ?1
                 AND kind IN ('turn_started', 'batch_started', 'committed', 'steered', 'turn_ended') ORDER BY seq",
            )
            .map_err(|e| self.sql(e))?;
        let bodies = statement
            .query_map([&head], |row| row.get::<_, String>(0))
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(|e| self.sql(e))?;
        let mut turns: Vec<(TurnStart, usize)> = Vec::new();
        let (mut length, mut prompt_entered) = (0usize, false);
        for body in bodies {
            let record: JournalRecord = serde_json::from_str(&body).map_err(|e| {
                StoreError::Invalid(format!("session {session} has an unreadable record: {e}"))
            })?;
            let calls =
                |message: &Message| message.tool_calls().map(|c| c.id.to_string()).collect::<Vec<_>>();
            match record {
                JournalRecord::TurnStarted { turn, message, .. } => {
                    let start = TurnStart {
                        turn,
                        prompt: message,
                        after: None,
                        calls: Vec::new(),
                        rolled_back: false,
                    };
                    turns.push((start, length));
                    prompt_entered = false;
                }
                JournalRecord::BatchStarted { assistant, .. } => {
                    if let Some((open, _)) = turns.last_mut() {
                        add_new(&mut open.calls, calls(&assistant));
                    }
                }
                JournalRecord::Committed { messages, .. } => {
                    length += usize::from(!prompt_entered) + messages.len();
                    prompt_entered = true;
                    if let Some((open, _)) = turns.last_mut() {
                        for message in &messages {
                            add_new(&mut open.calls, calls(message));
                        }
                    }
                }
                JournalRecord::Steered { .. } => length += 1,
                JournalRecord::TurnEnded { outcome: TurnRecordOutcome::RolledBack, .. } => {
                    if let Some((open, entry)) = turns.last_mut() {
                        open.rolled_back = true;
                        length = *entry;
                    }
                }
                _ => {}
            }
        }
        Ok(turns
            .into_iter()
            .map(|(mut start, entry)| {
                start.after = entry.checked_sub(1).and_then(|i| history.get(i)).map(|(id, _)| *id);
                start
            })
            .collect())
    }
}

fn add_new(into: &mut Vec<String>, ids: Vec<String>) {
    for id in ids {
        if !into.contains(&id) {
            into.push(id);
        }
    }
}
