//! Strict replay of journal records into history (invariant 15).
//!
//! Replay accepts only the record order the turn loop writes. A turn found
//! open (the process died) is closed here: a batch whose calls started gets a
//! result for every call, "interrupted: outcome unknown, not re-run" for one
//! that started and never finished, so nothing is silently repeated; a turn
//! with no possible effect leaves no trace in history, but its prompt is kept
//! (invariant 21). The records that close it are returned so the caller
//! journals them, and the next replay sees a closed turn.
//!
//! The same `Ledger` is the live session's: it checks and applies every
//! record the turn loop writes, so live and replayed history agree.

use std::collections::{BTreeMap, HashMap};

use crate::authority::AuthoritySnapshot;
use crate::history::{HistoryError, validate_history};
use crate::inbox::Pending;
use crate::journal::{JournalRecord, TurnRecordOutcome};
use crate::message::{CallId, Message};
use crate::spend::Spend;

/// The result text of a call that started and never finished.
pub const INTERRUPTED_RESULT: &str = "interrupted: outcome unknown, not re-run";
/// The result text of a call that never started because the session died.
pub const NOT_STARTED_RESULT: &str = "not run: the session was interrupted before this call started";

/// History rebuilt from a journal.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Replayed {
    /// The authority the session last ran under: the one it was built
    /// under, or the newest `authority_changed` record's.
    pub authority: AuthoritySnapshot,
    /// Its system prompt.
    pub system: Option<String>,
    /// Committed messages, oldest first (no system message).
    pub messages: Vec<Message>,
    /// Turns started so far.
    pub turns: u64,
    /// Records that close a turn found open; journal them before going on.
    pub recovery: Vec<JournalRecord>,
    /// The prompt of the last turn when it left no trace in history (rolled
    /// back, or interrupted before any commit), so a front end can offer to
    /// send it again (invariant 21).
    pub interrupted_prompt: Option<Message>,
    /// The model's own id of each tool call in `messages` that the journal
    /// mapped (invariant 4).
    pub provider_call_ids: BTreeMap<CallId, String>,
    /// What is sent of `messages`: the newest `compacted` record's view.
    pub compaction: crate::journal::Compaction,
    /// Messages queued while the session worked and not yet delivered,
    /// oldest first.
    pub queued: Vec<crate::inbox::Queued>,
    pub(crate) pending: Pending,
}

/// A journal that does not follow the turn loop's record order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The journal is empty or does not begin with `session_started`.
    #[error("the journal does not begin with a session_started record")]
    NoSessionStart,
    /// A record out of order.
    #[error("record {index}: {problem}")]
    OutOfOrder {
        /// Position of the record.
        index: usize,
        /// What is wrong.
        problem: String,
    },
    /// The rebuilt history breaks the structural rules.
    #[error("replayed history is malformed: {0}")]
    Malformed(#[from] HistoryError),
}

/// The state replay builds from records, kept by a live session too: the
/// one place where a record changes history. A live session checks a record
/// here, writes it, then applies it; replay checks and applies each stored
/// record. Both therefore hold the same history for the same records.
///
/// The user message of an open turn is in `messages` from `turn_started`
/// on; a turn that ends leaving no trace takes it out again.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    open: Option<OpenTurn>,
    turns: u64,
    interrupted_prompt: Option<Message>,
}

#[derive(Debug)]
struct OpenBatch {
    assistant: Message,
    provider_ids: BTreeMap<CallId, String>,
    calls: Vec<(CallId, String)>,
    /// The latest attempt of each call that started.
    started: HashMap<CallId, u32>,
    finished: HashMap<CallId, Message>,
}

#[derive(Debug)]
struct OpenTurn {
    turn: u64,
    user: Message,
    /// Whether a commit of this turn entered history.
    committed: bool,
    /// Length of history before the user message, for a roll back.
    entry: usize,
    /// Whether any call of the turn started; a turn that acted cannot roll back.
    acted: bool,
    batch: Option<OpenBatch>,
}

impl Ledger {
    /// A ledger with no open turn, after `turns` turns.
    pub(crate) fn closed(turns: u64, interrupted_prompt: Option<Message>) -> Self {
        Self { open: None, turns, interrupted_prompt }
    }

    /// Turns started so far.
    pub(crate) fn turns(&self) -> u64 {
        self.turns
    }

    /// The prompt of the latest turn if it ended leaving no trace in history.
    pub(crate) fn interrupted_prompt(&self) -> Option<&Message> {
        self.interrupted_prompt.as_ref()
    }

    /// Whether a turn is open.
    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Whether a call of the open turn has started.
    pub(crate) fn acted(&self) -> bool {
        self.open.as_ref().is_some_and(|t| t.acted)
    }

    /// Whether `record` may come next; changes nothing.
    pub(crate) fn check(&self, record: &JournalRecord) -> Result<(), String> {
        match record {
            JournalRecord::SessionStarted { .. } => Err("a second session_started".into()),
            JournalRecord::TurnStarted { turn, message, .. } => {
                if let Some(current) = &self.open {
                    return Err(format!("turn {turn} started while turn {} was open", current.turn));
                }
                if *turn != self.turns + 1 {
                    return Err(format!("turn {turn} follows turn {}", self.turns));
                }
                if !matches!(message, Message::User { .. }) {
                    return Err("a turn must start with a user message".into());
                }
                Ok(())
            }
            JournalRecord::BatchStarted { turn, assistant, .. } => {
                if open_turn(self.open.as_ref(), *turn)?.batch.is_some() {
                    return Err("a batch started while another was open".into());
                }
                if assistant.tool_calls().next().is_none() {
                    return Err("a batch without tool calls".into());
                }
                Ok(())
            }
            JournalRecord::InvocationStarted { call_id, attempt } => {
                let batch = open_batch(self.open.as_ref())?;
                if !batch.calls.iter().any(|(id, _)| id == call_id) || batch.finished.contains_key(call_id) {
                    return Err(format!("invocation {call_id} is not an unfinished call of the open batch"));
                }
                let expected = batch.started.get(call_id).map_or(1, |last| last.saturating_add(1));
                if *attempt != expected {
                    return Err(format!("invocation {call_id} attempt {attempt} where {expected} was due"));
                }
                Ok(())
            }
            JournalRecord::InvocationFinished { call_id, result } => {
                let batch = open_batch(self.open.as_ref())?;
                let answers = matches!(result, Message::ToolResult { call_id: id, .. } if id == call_id);
                if !batch.started.contains_key(call_id) || batch.finished.contains_key(call_id) || !answers {
                    return Err(format!("invocation {call_id} finished without a matching start"));
                }
                Ok(())
            }
            JournalRecord::Committed { turn, messages: committed, .. } => {
                let current = open_turn(self.open.as_ref(), *turn)?;
                let Some(first @ Message::Assistant { .. }) = committed.first() else {
                    return Err("a commit must begin with an assistant message".into());
                };
                if let Some(batch) = &current.batch
                    && &batch.assistant != first
                {
                    return Err("the commit does not match the open batch".into());
                }
                validate_history(committed).map_err(|e| format!("the commit is malformed: {e}"))?;
                if committed.len() != 1 + first.tool_calls().count() {
                    return Err("a commit holds exactly one assistant message and its results".into());
                }
                Ok(())
            }
            JournalRecord::TurnEnded { turn, outcome, .. } => {
                let current = open_turn(self.open.as_ref(), *turn)?;
                let batch_ran = current.batch.as_ref().is_some_and(|b| !b.started.is_empty());
                let fits = match outcome {
                    TurnRecordOutcome::Completed | TurnRecordOutcome::Checkpointed => {
                        current.committed && !batch_ran
                    }
                    // A turn in which no call started leaves no trace, even
                    // if a batch of refused calls was committed on the way.
                    TurnRecordOutcome::RolledBack => !current.acted,
                    TurnRecordOutcome::Interrupted => !batch_ran,
                };
                if !fits {
                    return Err(format!("turn {turn} cannot end as {outcome:?} from its records"));
                }
                Ok(())
            }
            // A hook may run anywhere, a batch's calls included; so may a
            // message be queued or taken back (the queue checks its ids).
            JournalRecord::HookRan { .. } | JournalRecord::Queued { .. } | JournalRecord::Unqueued { .. } => {
                Ok(())
            }
            JournalRecord::Steered { turn, message, .. } => {
                let current = open_turn(self.open.as_ref(), *turn)?;
                if current.batch.is_some() {
                    return Err(format!("steering delivered inside a batch of turn {turn}"));
                }
                if !current.committed {
                    return Err(format!("steering delivered before turn {turn} committed anything"));
                }
                if !matches!(message, Message::User { .. }) {
                    return Err("steering must be a user message".into());
                }
                Ok(())
            }
            // Between rounds only: one batch runs under one tool set and
            // is sent one view.
            JournalRecord::AuthorityChanged { .. } | JournalRecord::Compacted { .. } => {
                match self.open.as_ref() {
                    Some(current) if current.batch.is_some() => Err(format!(
                        "the authority or the view changed inside a batch of turn {}",
                        current.turn
                    )),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Applies a record [`Ledger::check`] accepted to `messages`.
    pub(crate) fn apply(&mut self, messages: &mut Vec<Message>, record: JournalRecord) {
        match record {
            JournalRecord::SessionStarted { .. } => {}
            JournalRecord::TurnStarted { turn, message, .. } => {
                self.turns = turn;
                self.interrupted_prompt = None;
                let entry = messages.len();
                messages.push(message.clone());
                self.open = Some(OpenTurn {
                    turn,
                    user: message,
                    committed: false,
                    entry,
                    acted: false,
                    batch: None,
                });
            }
            JournalRecord::BatchStarted { assistant, provider_ids, .. } => {
                if let Some(current) = self.open.as_mut() {
                    let calls = assistant.tool_calls().map(|c| (c.id, c.name.to_owned())).collect();
                    current.batch = Some(OpenBatch {
                        assistant,
                        provider_ids,
                        calls,
                        started: HashMap::new(),
                        finished: HashMap::new(),
                    });
                }
            }
            JournalRecord::InvocationStarted { call_id, attempt } => {
                if let Some(current) = self.open.as_mut()
                    && let Some(batch) = current.batch.as_mut()
                {
                    batch.started.insert(call_id, attempt);
                    current.acted = true;
                }
            }
            JournalRecord::InvocationFinished { call_id, result } => {
                if let Some(batch) = self.open.as_mut().and_then(|t| t.batch.as_mut()) {
                    batch.finished.insert(call_id, result);
                }
            }
            JournalRecord::Committed { messages: committed, .. } => {
                if let Some(current) = self.open.as_mut() {
                    current.batch = None;
                    current.committed = true;
                    messages.extend(committed);
                }
            }
            JournalRecord::TurnEnded { outcome, .. } => {
                if let Some(current) = self.open.take()
                    && (outcome == TurnRecordOutcome::RolledBack || !current.committed)
                {
                    // Invariant 21: the turn leaves history, its prompt stays.
                    messages.truncate(current.entry);
                    self.interrupted_prompt = Some(current.user);
                }
            }
            JournalRecord::Steered { message, .. } => {
                if self.open.is_some() {
                    messages.push(message);
                }
            }
            // History is unchanged; `replay` keeps the newest of each, and
            // the queue (`inbox::Pending`) follows the queue's records.
            JournalRecord::AuthorityChanged { .. }
            | JournalRecord::Compacted { .. }
            | JournalRecord::HookRan { .. }
            | JournalRecord::Queued { .. }
            | JournalRecord::Unqueued { .. } => {}
        }
    }

    /// Closes a turn left open the way a resume does: a batch whose calls
    /// started is committed with a result for every call (interrupted, or not
    /// started), then the turn ends as interrupted. Returns the records that
    /// did it, applied here already.
    pub(crate) fn close_open(&mut self, messages: &mut Vec<Message>) -> Vec<JournalRecord> {
        let Some(current) = self.open.as_ref() else { return Vec::new() };
        let turn = current.turn;
        let mut recovery = Vec::new();
        if let Some(batch) = current.batch.as_ref().filter(|b| !b.started.is_empty()) {
            let mut committed = vec![batch.assistant.clone()];
            for (id, name) in &batch.calls {
                committed.push(match batch.finished.get(id) {
                    Some(result) => result.clone(),
                    None if batch.started.contains_key(id) => {
                        Message::tool_result(*id, name, INTERRUPTED_RESULT, true)
                    }
                    None => Message::tool_result(*id, name, NOT_STARTED_RESULT, true),
                });
            }
            recovery.push(JournalRecord::Committed {
                turn,
                messages: committed,
                provider_ids: batch.provider_ids.clone(),
            });
        }
        recovery.push(JournalRecord::TurnEnded {
            turn,
            outcome: TurnRecordOutcome::Interrupted,
            spend: Spend::default(),
        });
        for record in &recovery {
            self.apply(messages, record.clone());
        }
        recovery
    }
}

/// Replays records strictly.
pub fn replay(records: &[JournalRecord]) -> Result<Replayed, ReplayError> {
    let Some(JournalRecord::SessionStarted { authority, system }) = records.first() else {
        return Err(ReplayError::NoSessionStart);
    };
    let mut authority = authority;
    let mut compaction = crate::journal::Compaction::default();
    let mut messages = Vec::new();
    let mut ledger = Ledger::default();
    // Model ids of calls, from the records that carry them; only replay
    // needs them (a live session's registry holds its own). They may name
    // calls of turns rolled back since, which `mapped_calls` drops.
    let mut provider_ids = BTreeMap::new();
    let mut pending = Pending::default();
    for (index, record) in records.iter().enumerate().skip(1) {
        ledger.check(record).map_err(|problem| ReplayError::OutOfOrder { index, problem })?;
        pending.check(record).map_err(|problem| ReplayError::OutOfOrder { index, problem })?;
        pending.apply(record);
        if let JournalRecord::BatchStarted { provider_ids: ids, .. }
        | JournalRecord::Committed { provider_ids: ids, .. } = record
        {
            provider_ids.extend(ids.iter().map(|(id, model)| (*id, model.clone())));
        }
        match record {
            JournalRecord::AuthorityChanged { authority: changed, .. } => authority = changed,
            JournalRecord::Compacted { compaction: view, .. } => compaction = view.clone(),
            _ => {}
        }
        ledger.apply(&mut messages, record.clone());
    }
    let recovery = ledger.close_open(&mut messages);
    for record in &recovery {
        pending.apply(record);
    }
    validate_history(&messages)?;
    let provider_call_ids = mapped_calls(&messages, provider_ids);
    compaction.clamp(messages.len());
    Ok(Replayed {
        compaction,
        authority: authority.clone(),
        system: system.clone(),
        messages,
        turns: ledger.turns,
        recovery,
        interrupted_prompt: ledger.interrupted_prompt,
        provider_call_ids,
        queued: pending.list(),
        pending,
    })
}

/// The mapped ids of the calls `messages` hold; calls of rolled-back turns
/// are gone from history and from the mapping.
fn mapped_calls(
    messages: &[Message],
    mut provider_ids: BTreeMap<CallId, String>,
) -> BTreeMap<CallId, String> {
    messages
        .iter()
        .flat_map(Message::tool_calls)
        .filter_map(|c| Some((c.id, provider_ids.remove(&c.id)?)))
        .collect()
}

fn open_turn(open: Option<&OpenTurn>, turn: u64) -> Result<&OpenTurn, String> {
    let current = open.ok_or_else(|| format!("record for turn {turn} outside any open turn"))?;
    if current.turn != turn {
        return Err(format!("record for turn {turn} while turn {} is open", current.turn));
    }
    Ok(current)
}

fn open_batch(open: Option<&OpenTurn>) -> Result<&OpenBatch, String> {
    open.and_then(|t| t.batch.as_ref()).ok_or_else(|| "an invocation record outside an open batch".to_owned())
}
