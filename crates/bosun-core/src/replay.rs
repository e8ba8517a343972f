//! Strict replay of journal records into history (invariant 15).
//!
//! Replay accepts only the record order the turn loop writes. A turn found
//! open (the process died) is closed here: a batch whose calls started gets a
//! result for every call, "interrupted: outcome unknown, not re-run" for one
//! that started and never finished, so nothing is silently repeated; a turn
//! with no possible effect leaves no trace in history. The records that close
//! it are returned so the caller journals them, and the next replay sees a
//! closed turn.

use std::collections::{HashMap, HashSet};

use crate::authority::AuthoritySnapshot;
use crate::history::{HistoryError, validate_history};
use crate::journal::{JournalRecord, TurnRecordOutcome};
use crate::message::{CallId, Message};

/// The result text of a call that started and never finished.
pub const INTERRUPTED_RESULT: &str = "interrupted: outcome unknown, not re-run";
/// The result text of a call that never started because the session died.
pub const NOT_STARTED_RESULT: &str = "not run: the session was interrupted before this call started";

/// History rebuilt from a journal.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Replayed {
    /// The authority the session was built under.
    pub authority: AuthoritySnapshot,
    /// Its system prompt.
    pub system: Option<String>,
    /// Committed messages, oldest first (no system message).
    pub messages: Vec<Message>,
    /// Turns started so far.
    pub turns: u64,
    /// Records that close a turn found open; journal them before going on.
    pub recovery: Vec<JournalRecord>,
    /// The prompt of an interrupted turn that left no trace in history, so a
    /// front end can offer to send it again.
    pub interrupted_prompt: Option<Message>,
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

struct OpenBatch {
    assistant: Message,
    calls: Vec<(CallId, String)>,
    started: HashSet<CallId>,
    finished: HashMap<CallId, Message>,
}

struct OpenTurn {
    turn: u64,
    user: Message,
    user_committed: bool,
    /// Length of history when the turn began, for a roll back.
    entry: usize,
    /// Whether any call of the turn started; a turn that acted cannot roll back.
    acted: bool,
    batch: Option<OpenBatch>,
}

/// Replays records strictly.
pub fn replay(records: &[JournalRecord]) -> Result<Replayed, ReplayError> {
    let Some(JournalRecord::SessionStarted { authority, system }) = records.first() else {
        return Err(ReplayError::NoSessionStart);
    };
    let mut messages = Vec::new();
    let mut open: Option<OpenTurn> = None;
    let mut turns = 0;
    let mut interrupted_prompt = None;
    for (index, record) in records.iter().enumerate().skip(1) {
        let bad = |problem: String| ReplayError::OutOfOrder { index, problem };
        match record {
            JournalRecord::SessionStarted { .. } => return Err(bad("a second session_started".into())),
            JournalRecord::TurnStarted { turn, message } => {
                if let Some(current) = &open {
                    return Err(bad(format!("turn {turn} started while turn {} was open", current.turn)));
                }
                if *turn != turns + 1 {
                    return Err(bad(format!("turn {turn} follows turn {turns}")));
                }
                if !matches!(message, Message::User { .. }) {
                    return Err(bad("a turn must start with a user message".into()));
                }
                turns = *turn;
                interrupted_prompt = None;
                open = Some(OpenTurn {
                    turn: *turn,
                    user: message.clone(),
                    user_committed: false,
                    entry: messages.len(),
                    acted: false,
                    batch: None,
                });
            }
            JournalRecord::BatchStarted { turn, assistant } => {
                let current = open_turn(&mut open, *turn).map_err(&bad)?;
                if current.batch.is_some() {
                    return Err(bad("a batch started while another was open".into()));
                }
                let calls: Vec<_> = assistant.tool_calls().map(|c| (c.id, c.name.to_owned())).collect();
                if calls.is_empty() {
                    return Err(bad("a batch without tool calls".into()));
                }
                current.batch = Some(OpenBatch {
                    assistant: assistant.clone(),
                    calls,
                    started: HashSet::new(),
                    finished: HashMap::new(),
                });
            }
            JournalRecord::InvocationStarted { call_id } => {
                let batch = open_batch(&mut open).map_err(&bad)?;
                if !batch.calls.iter().any(|(id, _)| id == call_id) || !batch.started.insert(*call_id) {
                    return Err(bad(format!("invocation {call_id} is not a fresh call of the open batch")));
                }
                if let Some(current) = open.as_mut() {
                    current.acted = true;
                }
            }
            JournalRecord::InvocationFinished { call_id, result } => {
                let batch = open_batch(&mut open).map_err(&bad)?;
                let answers = matches!(result, Message::ToolResult { call_id: id, .. } if id == call_id);
                if !batch.started.contains(call_id) || batch.finished.contains_key(call_id) || !answers {
                    return Err(bad(format!("invocation {call_id} finished without a matching start")));
                }
                batch.finished.insert(*call_id, result.clone());
            }
            JournalRecord::Committed { turn, messages: committed } => {
                let current = open_turn(&mut open, *turn).map_err(&bad)?;
                let Some(first @ Message::Assistant { .. }) = committed.first() else {
                    return Err(bad("a commit must begin with an assistant message".into()));
                };
                if let Some(batch) = current.batch.take()
                    && &batch.assistant != first
                {
                    return Err(bad("the commit does not match the open batch".into()));
                }
                validate_history(committed).map_err(|e| bad(format!("the commit is malformed: {e}")))?;
                if committed.len() != 1 + first.tool_calls().count() {
                    return Err(bad("a commit holds exactly one assistant message and its results".into()));
                }
                if !current.user_committed {
                    messages.push(current.user.clone());
                    current.user_committed = true;
                }
                messages.extend(committed.iter().cloned());
            }
            JournalRecord::TurnEnded { turn, outcome } => {
                let current = open_turn(&mut open, *turn).map_err(&bad)?;
                let batch_ran = current.batch.as_ref().is_some_and(|b| !b.started.is_empty());
                let fits = match outcome {
                    TurnRecordOutcome::Completed | TurnRecordOutcome::Checkpointed => {
                        current.user_committed && !batch_ran
                    }
                    // A turn in which no call started leaves no trace, even
                    // if a batch of refused calls was committed on the way.
                    TurnRecordOutcome::RolledBack => !current.acted,
                    TurnRecordOutcome::Interrupted => !batch_ran,
                };
                if !fits {
                    return Err(bad(format!("turn {turn} cannot end as {outcome:?} from its records")));
                }
                if *outcome == TurnRecordOutcome::RolledBack {
                    messages.truncate(current.entry);
                } else if !current.user_committed && *outcome == TurnRecordOutcome::Interrupted {
                    interrupted_prompt = Some(current.user.clone());
                }
                open = None;
            }
        }
    }
    let mut recovery = Vec::new();
    if let Some(current) = open {
        let mut user_committed = current.user_committed;
        if let Some(batch) = current.batch.filter(|b| !b.started.is_empty()) {
            let mut committed = vec![batch.assistant.clone()];
            for (id, name) in &batch.calls {
                committed.push(match batch.finished.get(id) {
                    Some(result) => result.clone(),
                    None if batch.started.contains(id) => {
                        Message::tool_result(*id, name, INTERRUPTED_RESULT, true)
                    }
                    None => Message::tool_result(*id, name, NOT_STARTED_RESULT, true),
                });
            }
            if !user_committed {
                messages.push(current.user.clone());
                user_committed = true;
            }
            messages.extend(committed.iter().cloned());
            recovery.push(JournalRecord::Committed { turn: current.turn, messages: committed });
        }
        if !user_committed {
            interrupted_prompt = Some(current.user);
        }
        recovery
            .push(JournalRecord::TurnEnded { turn: current.turn, outcome: TurnRecordOutcome::Interrupted });
    }
    validate_history(&messages)?;
    Ok(Replayed {
        authority: authority.clone(),
        system: system.clone(),
        messages,
        turns,
        recovery,
        interrupted_prompt,
    })
}

fn open_turn(open: &mut Option<OpenTurn>, turn: u64) -> Result<&mut OpenTurn, String> {
    let current = open.as_mut().ok_or_else(|| format!("record for turn {turn} outside any open turn"))?;
    if current.turn != turn {
        return Err(format!("record for turn {turn} while turn {} is open", current.turn));
    }
    Ok(current)
}

fn open_batch(open: &mut Option<OpenTurn>) -> Result<&mut OpenBatch, String> {
    open.as_mut()
        .and_then(|t| t.batch.as_mut())
        .ok_or_else(|| "an invocation record outside an open batch".to_owned())
}
