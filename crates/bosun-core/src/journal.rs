//! The [`Journal`] trait (invariant 15): the durable record of a session,
//! written by the turn loop and replayed strictly on resume.
//!
//! The order of records within a turn is fixed: `turn_started`, then per tool
//! batch `batch_started`, `invocation_started` / `invocation_finished` for each
//! call that runs, `committed` with the whole batch; the answer is a
//! `committed` of one message; `turn_ended` closes the turn. Each `append`
//! returns only once the record is durable, and the loop awaits it before the
//! next model round.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::authority::AuthoritySnapshot;
use crate::hooks::run::HookRun;
use crate::message::{CallId, Message, Usage};
use crate::spend::Spend;

pub use crate::message::Delivery;

/// The future a journal method returns.
pub type JournalFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

/// Durable storage of a session's records.
pub trait Journal: Send {
    /// Appends one record; resolves once it is durable.
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()>;

    /// Every record, in append order.
    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>>;
}

/// A journal that could not write or read: what kind of failure, and the
/// underlying error (a store's, an I/O error) as its `source`, so callers can
/// tell a full disk from a lost lease without parsing text.
#[derive(Debug, Clone, thiserror::Error)]
#[error("journal: {cause}")]
pub struct JournalError {
    kind: JournalErrorKind,
    // Shown in the message, so not also returned by `Error::source` (a
    // report that walks the chain would print it twice); `cause` hands it
    // out typed. Shared so a session that lost its journal keeps it and
    // returns it from every refused turn.
    cause: Arc<dyn std::error::Error + Send + Sync + 'static>,
}

/// What kind of journal failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalErrorKind {
    /// The disk or the database's size limit is full.
    Full,
    /// The storage cannot be reached or is held by someone else (a lost
    /// lease, an unopenable file, a stopped writer).
    Unavailable,
    /// What is stored cannot be read back as a journal.
    Corrupt,
    /// The record breaks the journal's order; nothing was written.
    OutOfOrder,
    /// A failure injected by a test journal.
    Injected,
    /// Anything else.
    Other,
}

impl JournalError {
    /// A failure of `kind` caused by `source` (an error, or a message).
    pub fn new(
        kind: JournalErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self { kind, cause: Arc::from(source.into()) }
    }

    /// What kind of failure.
    pub fn kind(&self) -> JournalErrorKind {
        self.kind
    }

    /// The underlying error, to downcast to the store's own error type.
    pub fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.cause
    }
}

/// One durable record.
///
/// JSON: `{"record":"turn_started","turn":1,"message":{…}}` and so on; the tag
/// names are stable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
#[non_exhaustive]
pub enum JournalRecord {
    /// The session was built: its authority and system prompt.
    SessionStarted {
        /// The authority snapshot.
        authority: AuthoritySnapshot,
        /// The system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system: Option<String>,
    },
    /// A turn began with this user message.
    TurnStarted {
        /// The turn number, from 1.
        turn: u64,
        /// The user's message.
        message: Message,
        /// The queued messages (`queued` records) this prompt delivers, so
        /// delivering them and starting the turn is one record; left out
        /// when none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        queued: Vec<u64>,
    },
    /// Tool calls are about to run; the assistant message that asked for them.
    BatchStarted {
        /// The turn.
        turn: u64,
        /// The assistant message with its tool calls (session-minted ids).
        assistant: Message,
        /// The id the model gave each of those calls (invariant 4), so the
        /// mapping outlives the process.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        provider_ids: BTreeMap<CallId, String>,
    },
    /// A call was dispatched to its tool; it may have an effect from now on.
    /// An idempotent tool's transient failure is retried: each attempt is a
    /// record of its own, numbered from 1.
    InvocationStarted {
        /// The call.
        call_id: CallId,
        /// Which attempt; left out for the first.
        #[serde(default = "first_attempt", skip_serializing_if = "is_first_attempt")]
        attempt: u32,
    },
    /// A call finished with this result.
    InvocationFinished {
        /// The call.
        call_id: CallId,
        /// The tool-result message.
        result: Message,
    },
    /// Messages that entered history: a complete batch or a final answer.
    Committed {
        /// The turn.
        turn: u64,
        /// The messages, in order.
        messages: Vec<Message>,
        /// The id the model gave each tool call of the assistant message, as
        /// in `batch_started` (a batch of refused calls has no such record).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        provider_ids: BTreeMap<CallId, String>,
    },
    /// A turn ended.
    TurnEnded {
        /// The turn.
        turn: u64,
        /// How.
        outcome: TurnRecordOutcome,
        /// What the turn spent, by bucket and priced (rounds whose response
        /// never entered history included); left out while zero, and by a
        /// turn a resume closed (the process died before it could say).
        #[serde(default, skip_serializing_if = "Spend::is_zero")]
        spend: Spend,
    },
    /// The authority ceiling grew or changed between rounds (a tool source
    /// offered a tool the ceiling did not hold), or a resume went on under
    /// another authority (narrower, or wider and accepted by the person):
    /// the snapshot the session runs under from here on, and a later resume
    /// is checked against.
    AuthorityChanged {
        /// The new snapshot.
        authority: AuthoritySnapshot,
        /// A resume's differences from the snapshot before, in words, `+`
        /// for one that widened (and was accepted) and `-` for one that
        /// narrowed; left out when a tool source changed the ceiling.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        resumed: Vec<String>,
    },
    /// A hook ran (informational: replay does not run hooks again; what a
    /// hook changed is in the records it changed).
    HookRan {
        /// The run.
        #[serde(flatten)]
        run: HookRun,
        /// The turn, when one was running.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
    },
    /// What is sent of history changed between rounds to fit the context
    /// window (history itself is unchanged): the view from here on.
    Compacted {
        /// The tier that made it: 1 shortened old tool results, 2 replaced
        /// older units with a summary, 3 dropped them.
        tier: u8,
        /// The view.
        compaction: Compaction,
        /// What the summary request used (tier 2), so stores count it in
        /// the session's usage; left out while zero.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
        /// What that request cost in millionths of a dollar, when the session
        /// has prices (a compaction outside a turn has no `turn_ended` to
        /// carry it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_micros: Option<u64>,
    },
    /// A user message was accepted while the session worked, for delivery
    /// later ([`Inbox`](crate::Inbox)): durable before its sender is told,
    /// so a crash loses no accepted message. May come anywhere, inside a
    /// batch too.
    Queued {
        /// The queue's id of the message, from 1, in acceptance order.
        id: u64,
        /// When it is to be delivered.
        delivery: Delivery,
        /// The message.
        message: Message,
    },
    /// A queued message was taken back before it was delivered.
    Unqueued {
        /// Its id.
        id: u64,
    },
    /// A queued steering message entered history at a safe point of the
    /// turn: after a batch committed, before the next model round.
    Steered {
        /// The turn.
        turn: u64,
        /// The queued message's id.
        id: u64,
        /// The message, as it entered history.
        message: Message,
    },
}

fn first_attempt() -> u32 {
    1
}

fn is_first_attempt(attempt: &u32) -> bool {
    *attempt == 1
}

/// How a turn ended, as the journal records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnRecordOutcome {
    /// Answered.
    Completed,
    /// Failed before any tool could act: the turn left no trace in history.
    RolledBack,
    /// Failed or was cancelled after tools acted: committed batches stay.
    Checkpointed,
    /// Found open on resume (the process died) and closed then.
    Interrupted,
}

/// A journal in memory, shared by clones: resume a session from a clone of
/// the journal of one that was dropped mid-turn. Can be told to fail, to test
/// what a broken disk does to a turn.
#[derive(Clone, Default)]
pub struct InMemoryJournal {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    records: Vec<JournalRecord>,
    fail_after: Option<usize>,
}

impl InMemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// A journal holding `records`.
    pub fn from_records(records: Vec<JournalRecord>) -> Self {
        let journal = Self::default();
        if let Ok(mut inner) = journal.inner.lock() {
            inner.records = records;
        }
        journal
    }

    /// A copy of the records so far.
    pub fn records(&self) -> Vec<JournalRecord> {
        self.inner.lock().map(|i| i.records.clone()).unwrap_or_default()
    }

    /// Makes every append after the next `n` fail.
    pub fn fail_after(&self, n: usize) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.fail_after = Some(n);
        }
    }
}

impl fmt::Debug for InMemoryJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.inner.lock().map(|i| i.records.len()).unwrap_or_default();
        f.debug_struct("InMemoryJournal").field("records", &len).finish()
    }
}

impl Journal for InMemoryJournal {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        let result = match self.inner.lock() {
            Ok(mut inner) => match inner.fail_after {
                Some(0) => Err(JournalError::new(JournalErrorKind::Injected, "injected failure")),
                remaining => {
                    inner.fail_after = remaining.map(|n| n - 1);
                    inner.records.push(record.clone());
                    Ok(())
                }
            },
            Err(_) => Err(poisoned()),
        };
        Box::pin(std::future::ready(result))
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        let result = self.inner.lock().map(|i| i.records.clone()).map_err(|_| poisoned());
        Box::pin(std::future::ready(result))
    }
}

fn poisoned() -> JournalError {
    JournalError::new(JournalErrorKind::Other, "journal lock poisoned")
}

/// How history is compacted in what is sent: the journaled part (the
/// session applies it, `session::context`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Compaction {
    /// Tool results before this history index are shown shortened.
    #[serde(default)]
    pub shorten_before: usize,
    /// History `1..elided_through` is not sent; `text` is, after the task.
    #[serde(default)]
    pub elided_through: usize,
    /// The summary (tier 2) or the note (tier 3) shown in its place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The latest user message when it fell inside the elided range: sent
    /// anyway, right after the task, so the current ask is never lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_ask: Option<usize>,
}

#[cfg(test)]
mod record_form {
    use serde_json::json;

    use super::*;

    /// Stores persist these records; their tags are a storage format.
    #[test]
    fn journal_record_tags_are_frozen() {
        let id = CallId::from(uuid::Uuid::from_u128(3));
        let samples = [
            (
                JournalRecord::TurnStarted { turn: 1, message: Message::user("hi"), queued: vec![] },
                "turn_started",
            ),
            (
                JournalRecord::Queued { id: 1, delivery: Delivery::Steer, message: Message::user("also") },
                "queued",
            ),
            (JournalRecord::Unqueued { id: 1 }, "unqueued"),
            (JournalRecord::Steered { turn: 1, id: 1, message: Message::user("also") }, "steered"),
            (JournalRecord::InvocationStarted { call_id: id, attempt: 1 }, "invocation_started"),
            (JournalRecord::InvocationStarted { call_id: id, attempt: 2 }, "invocation_started"),
            (
                JournalRecord::InvocationFinished {
                    call_id: id,
                    result: Message::tool_result(id, "t", "r", false),
                },
                "invocation_finished",
            ),
            (
                JournalRecord::Committed { turn: 1, messages: vec![], provider_ids: BTreeMap::new() },
                "committed",
            ),
            (
                JournalRecord::TurnEnded {
                    turn: 1,
                    outcome: TurnRecordOutcome::RolledBack,
                    spend: Spend::default(),
                },
                "turn_ended",
            ),
        ];
        let authority = AuthoritySnapshot {
            version: crate::authority::AUTHORITY_VERSION,
            workspace: None,
            tools: vec![],
            enabled: vec![],
            limits: crate::limits::Limits::default(),
            clock: false,
        };
        let changed = JournalRecord::AuthorityChanged { authority, resumed: Vec::new() };
        assert_eq!(serde_json::to_value(&changed).unwrap()["record"], json!("authority_changed"));
        assert_eq!(
            serde_json::from_value::<JournalRecord>(serde_json::to_value(&changed).unwrap()).unwrap(),
            changed
        );
        for (record, tag) in samples {
            let value = serde_json::to_value(&record).unwrap();
            assert_eq!(value["record"], json!(tag));
            assert_eq!(serde_json::from_value::<JournalRecord>(value).unwrap(), record);
        }
        let ended = serde_json::to_value(JournalRecord::TurnEnded {
            turn: 2,
            outcome: TurnRecordOutcome::Checkpointed,
            spend: Spend::default(),
        })
        .unwrap();
        // Nothing spent is left out, so older journals read the same.
        assert_eq!(ended, json!({"record": "turn_ended", "turn": 2, "outcome": "checkpointed"}));
        let spend = Spend { main: crate::Spent::new(crate::Usage::new(7, 8), Some(9)), ..Spend::default() };
        let spent = JournalRecord::TurnEnded { turn: 3, outcome: TurnRecordOutcome::Completed, spend };
        let value = serde_json::to_value(&spent).unwrap();
        assert_eq!(value["spend"]["main"]["cost_micros"], json!(9));
        assert_eq!(serde_json::from_value::<JournalRecord>(value).unwrap(), spent);
        // The first attempt is the record as it always was.
        let first =
            serde_json::to_value(JournalRecord::InvocationStarted { call_id: id, attempt: 1 }).unwrap();
        assert_eq!(first, json!({"record": "invocation_started", "call_id": id.to_string()}));
        let second =
            serde_json::to_value(JournalRecord::InvocationStarted { call_id: id, attempt: 2 }).unwrap();
        assert_eq!(second["attempt"], json!(2));
        // The model's call ids ride on the records that carry the calls;
        // an empty map is left out, so older journals read the same.
        let assistant = Message::Assistant {
            content: vec![crate::message::ContentPart::ToolCall {
                id,
                name: "t".into(),
                arguments: json!({}),
                provider_data: None,
            }],
            usage: crate::Usage::default(),
            stop_reason: crate::StopReason::ToolUse,
        };
        let batch = JournalRecord::BatchStarted {
            turn: 1,
            assistant: assistant.clone(),
            provider_ids: BTreeMap::from([(id, "call_0".to_owned())]),
        };
        let value = serde_json::to_value(&batch).unwrap();
        assert_eq!(value["provider_ids"], json!({id.to_string(): "call_0"}));
        assert_eq!(serde_json::from_value::<JournalRecord>(value).unwrap(), batch);
        let older = json!({"record": "committed", "turn": 1, "messages": [serde_json::to_value(&assistant).unwrap()]});
        let JournalRecord::Committed { provider_ids, .. } = serde_json::from_value(older).unwrap() else {
            panic!("not a commit")
        };
        assert!(provider_ids.is_empty());
    }

    #[tokio::test]
    async fn injected_failure_refuses_appends_after_the_count() {
        let mut journal = InMemoryJournal::new();
        journal.fail_after(1);
        let record = JournalRecord::InvocationStarted { call_id: CallId::new_v7(), attempt: 1 };
        assert!(journal.append(&record).await.is_ok());
        assert!(journal.append(&record).await.is_err());
        assert_eq!(journal.records().len(), 1);
    }
}
