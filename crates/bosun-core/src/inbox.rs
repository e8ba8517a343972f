//! Messages a person sends while the agent works: steering, delivered at the
//! running turn's next safe point (after the current tool batch commits,
//! before the next model round; never inside a batch), and follow-ups,
//! delivered as turns of their own after the running one ends. Either way a
//! message passes the session's `UserPromptSubmit` hooks before it enters
//! history: a follow-up as its turn's prompt, steering at the safe point
//! (where a message a hook blocks is withdrawn, `unqueued`).
//!
//! An [`Inbox`] is a handle on a session's queue that works while a turn
//! runs (the turn borrows the session mutably; the handle does not). A
//! message is accepted once its `queued` record is durable, so a crash loses
//! no accepted message; a resumed session has the same queue. The queue and
//! the journal sit behind one lock, and every change to the queue is a
//! record written under it, so the queue a replay rebuilds is the one the
//! live session had, and a message taken back cannot also be delivered.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::{Mutex, watch};

use crate::journal::{Journal, JournalError, JournalRecord, TurnRecordOutcome};
use crate::message::{ContentPart, Delivery, Message, UserInput};

/// A message waiting for delivery.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Queued {
    /// The queue's id, from 1, in acceptance order.
    pub id: u64,
    /// When it is delivered.
    pub delivery: Delivery,
    /// The message (a user message).
    pub message: Message,
}

/// Why a message was not accepted, or not taken back.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// What was sent is not a user's message.
    #[error("only a user's message can be queued, not {0}")]
    NotUserInput(&'static str),
    /// The message has no content.
    #[error("the message is empty")]
    Empty,
    /// The `queued` record could not be written: the message was not
    /// accepted.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The queue as records leave it: what replay rebuilds and a live session
/// keeps beside its journal.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pending {
    items: BTreeMap<u64, (Delivery, Message)>,
    last_id: u64,
    /// Steering delivered in the open turn, put back should the turn roll
    /// back (its messages then leave history).
    steered: Vec<(u64, Message)>,
    /// Taken for the next turn's prompt and not yet journaled with it: in
    /// memory only, so a message being delivered cannot be taken back.
    claimed: BTreeSet<u64>,
}

impl Pending {
    /// Whether `record` fits the queue; changes nothing.
    pub(crate) fn check(&self, record: &JournalRecord) -> Result<(), String> {
        let waiting = |id: &u64| {
            if self.items.contains_key(id) {
                Ok(())
            } else {
                Err(format!("queued message {id} is not waiting"))
            }
        };
        match record {
            JournalRecord::Queued { id, message, .. } => {
                if *id <= self.last_id {
                    return Err(format!("queued message {id} after {}", self.last_id));
                }
                if !matches!(message, Message::User { .. }) {
                    return Err("only a user message can be queued".into());
                }
                Ok(())
            }
            JournalRecord::Unqueued { id } => waiting(id),
            JournalRecord::Steered { id, .. } => {
                waiting(id)?;
                match self.items.get(id) {
                    Some((Delivery::Steer, _)) => Ok(()),
                    _ => Err(format!("queued message {id} is a follow-up, not steering")),
                }
            }
            JournalRecord::TurnStarted { queued, .. } => queued.iter().try_for_each(waiting),
            _ => Ok(()),
        }
    }

    /// Applies a record [`Pending::check`] accepted; whether the queue
    /// changed.
    pub(crate) fn apply(&mut self, record: &JournalRecord) -> bool {
        match record {
            JournalRecord::Queued { id, delivery, message } => {
                self.last_id = *id;
                self.items.insert(*id, (*delivery, message.clone()));
                true
            }
            JournalRecord::Unqueued { id } => self.items.remove(id).is_some(),
            JournalRecord::Steered { id, message, .. } => {
                self.items.remove(id);
                self.steered.push((*id, message.clone()));
                true
            }
            JournalRecord::TurnStarted { queued, .. } => {
                self.steered.clear();
                for id in queued {
                    self.items.remove(id);
                    self.claimed.remove(id);
                }
                !queued.is_empty()
            }
            JournalRecord::TurnEnded { outcome, .. } => {
                let steered = std::mem::take(&mut self.steered);
                if *outcome != TurnRecordOutcome::RolledBack || steered.is_empty() {
                    return false;
                }
                // The turn left history, and its steering with it: it waits
                // again, as it was.
                for (id, message) in steered {
                    self.items.insert(id, (Delivery::Steer, message));
                }
                true
            }
            _ => false,
        }
    }

    /// Every waiting message, oldest first.
    pub(crate) fn list(&self) -> Vec<Queued> {
        self.items.keys().filter_map(|id| self.get(*id)).collect()
    }

    /// The message `id`, while it waits.
    pub(crate) fn get(&self, id: u64) -> Option<Queued> {
        let (delivery, message) = self.items.get(&id)?;
        Some(Queued { id, delivery: *delivery, message: message.clone() })
    }

    /// The steering waiting, oldest first.
    pub(crate) fn steering(&self) -> Vec<(u64, Message)> {
        let steer = |(id, (delivery, message)): (&u64, &(Delivery, Message))| {
            (*delivery == Delivery::Steer && !self.claimed.contains(id)).then(|| (*id, message.clone()))
        };
        self.items.iter().filter_map(steer).collect()
    }

    /// Claims what the next turn delivers: every steering message left
    /// waiting (joined into one prompt), or else the oldest follow-up.
    pub(crate) fn claim_next(&mut self) -> Option<Claimed> {
        let free = |id: &u64| !self.claimed.contains(id);
        let steering: Vec<u64> = self
            .items
            .iter()
            .filter(|(id, (d, _))| *d == Delivery::Steer && free(id))
            .map(|(id, _)| *id)
            .collect();
        let ids = if steering.is_empty() {
            self.items.keys().find(|id| free(id)).map(|id| vec![*id])?
        } else {
            steering
        };
        let mut content = Vec::new();
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some((delivery, Message::User { content: parts })) = self.items.get(&id) {
                if !content.is_empty() {
                    content.push(ContentPart::text("\n\n"));
                }
                content.extend(parts.iter().cloned());
                claimed.push((id, *delivery));
            }
        }
        self.claimed.extend(claimed.iter().map(|(id, _)| *id));
        Some((claimed, content))
    }

    /// Gives claimed messages back when their turn never started.
    pub(crate) fn unclaim(&mut self, ids: &[(u64, Delivery)]) {
        for (id, _) in ids {
            self.claimed.remove(id);
        }
    }
}

/// What the next turn delivers: the messages' ids and kinds, and the
/// prompt they make together.
pub(crate) type Claimed = (Vec<(u64, Delivery)>, Vec<ContentPart>);

/// The journal and the queue, behind one lock.
pub(crate) struct Slot {
    pub(crate) journal: Option<Box<dyn Journal>>,
    pub(crate) pending: Pending,
    /// Set when a write failed: nothing more is accepted.
    pub(crate) lost: Option<JournalError>,
}

impl Slot {
    pub(crate) fn new(journal: Option<Box<dyn Journal>>, pending: Pending) -> Self {
        Self { journal, pending, lost: None }
    }
}

/// What a session and its inboxes share.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) slot: Arc<Mutex<Slot>>,
    /// Bumped on every change of the queue.
    pub(crate) changes: Arc<watch::Sender<u64>>,
}

impl Shared {
    pub(crate) fn new(slot: Slot) -> Self {
        Self { slot: Arc::new(Mutex::new(slot)), changes: Arc::new(watch::Sender::new(0)) }
    }

    pub(crate) fn changed(&self) {
        self.changes.send_modify(|version| *version = version.wrapping_add(1));
    }
}

/// A handle on a session's queue of messages ([`Session::inbox`]); clones
/// share it, and it works while a turn runs.
///
/// [`Session::inbox`]: crate::Session::inbox
#[derive(Clone)]
pub struct Inbox {
    shared: Shared,
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox").finish_non_exhaustive()
    }
}

impl Inbox {
    pub(crate) fn new(shared: Shared) -> Self {
        Self { shared }
    }

    /// Queues a steering message for the running turn's next safe point
    /// (or the next turn, when this one ends first). Resolves with its id
    /// once it is durable. At the safe point the `UserPromptSubmit` hooks
    /// see it first: one may block it (it is then withdrawn, with a
    /// `message_withdrawn` event) or add a note to it.
    pub async fn steer(&self, input: impl Into<UserInput>) -> Result<u64, InboxError> {
        self.queue(Delivery::Steer, input.into()).await
    }

    /// Queues a follow-up: a turn of its own after the running turn ends.
    /// Resolves with its id once it is durable.
    pub async fn follow_up(&self, input: impl Into<UserInput>) -> Result<u64, InboxError> {
        self.queue(Delivery::FollowUp, input.into()).await
    }

    async fn queue(&self, delivery: Delivery, input: UserInput) -> Result<u64, InboxError> {
        let content = input.0.map_err(InboxError::NotUserInput)?;
        let blank = |part: &ContentPart| matches!(part, ContentPart::Text { text } if text.trim().is_empty());
        if content.iter().all(blank) {
            return Err(InboxError::Empty);
        }
        let mut slot = self.shared.slot.lock().await;
        if let Some(lost) = &slot.lost {
            return Err(lost.clone().into());
        }
        let id = slot.pending.last_id + 1;
        let record = JournalRecord::Queued { id, delivery, message: Message::User { content } };
        self.write(&mut slot, &record).await?;
        Ok(id)
    }

    /// Takes a waiting message back; `None` when it is no longer waiting
    /// (delivered, being delivered, or taken back already).
    pub async fn withdraw(&self, id: u64) -> Result<Option<Queued>, InboxError> {
        let mut slot = self.shared.slot.lock().await;
        if slot.pending.claimed.contains(&id) {
            return Ok(None);
        }
        let Some(queued) = slot.pending.get(id) else { return Ok(None) };
        if let Some(lost) = &slot.lost {
            return Err(lost.clone().into());
        }
        self.write(&mut slot, &JournalRecord::Unqueued { id }).await?;
        Ok(Some(queued))
    }

    /// Every waiting message, oldest first.
    pub async fn pending(&self) -> Vec<Queued> {
        self.shared.slot.lock().await.pending.list()
    }

    /// A receiver that sees a new value on every change of the queue
    /// (accepted, taken back, delivered).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    async fn write(&self, slot: &mut Slot, record: &JournalRecord) -> Result<(), InboxError> {
        if let Some(journal) = slot.journal.as_mut()
            && let Err(error) = journal.append(record).await
        {
            slot.lost = Some(error.clone());
            return Err(error.into());
        }
        if slot.pending.apply(record) {
            self.shared.changed();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spend::Spend;

    fn queued(id: u64, delivery: Delivery, text: &str) -> JournalRecord {
        JournalRecord::Queued { id, delivery, message: Message::user(text) }
    }

    #[test]
    fn steering_of_a_turn_that_rolls_back_waits_again() {
        let mut pending = Pending::default();
        let records = [
            queued(1, Delivery::Steer, "also this"),
            JournalRecord::TurnStarted { turn: 1, message: Message::user("task"), queued: vec![] },
            JournalRecord::Steered { turn: 1, id: 1, message: Message::user("also this") },
            JournalRecord::TurnEnded {
                turn: 1,
                outcome: TurnRecordOutcome::RolledBack,
                spend: Spend::default(),
            },
        ];
        for record in &records {
            assert_eq!(pending.check(record), Ok(()));
            pending.apply(record);
        }
        let waiting: Vec<_> = pending.list().into_iter().map(|q| (q.id, q.delivery)).collect();
        assert_eq!(waiting, [(1, Delivery::Steer)]);
    }

    #[test]
    fn a_claimed_message_is_neither_steering_nor_claimed_twice() {
        let mut pending = Pending::default();
        for record in [queued(1, Delivery::FollowUp, "a"), queued(2, Delivery::FollowUp, "b")] {
            pending.apply(&record);
        }
        let first = pending.claim_next().map(|(ids, _)| ids);
        assert_eq!(first, Some(vec![(1, Delivery::FollowUp)]));
        let second = pending.claim_next().map(|(ids, _)| ids);
        assert_eq!(second, Some(vec![(2, Delivery::FollowUp)]));
        assert!(pending.claim_next().is_none());
        pending.unclaim(&[(1, Delivery::FollowUp)]);
        assert_eq!(pending.claim_next().map(|(ids, _)| ids), Some(vec![(1, Delivery::FollowUp)]));
        assert!(pending.check(&queued(2, Delivery::Steer, "old id")).is_err());
    }
}
