//! Writing the journal: [`Durable`], the session's durable part, and its
//! [`Durable::record`], the one place the turn loop writes the journal
//! (write first, then apply the record to history with the ledger replay
//! uses, invariant 15); and the deliveries of steering at a safe point:
//! each message past the `UserPromptSubmit` hooks (withdrawn when one
//! blocks it), then checked against the queue under the journal's lock
//! held until its record is written.

use std::sync::Arc;

use tokio::sync::Mutex;

use super::Session;
use super::turn::{Emitter, TurnState};
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::inbox::{Claimed, Inbox, Queued, Shared, Slot};
use crate::journal::{JournalError, JournalErrorKind, JournalRecord};
use crate::message::{Delivery, Message};
use crate::replay::Ledger;

/// The journal, the queue of messages sent while a turn runs, and the
/// ledger of turns: what a resume rebuilds the session from. History is
/// the session's; every record written here is applied to it.
pub(crate) struct Durable {
    /// The journal and the queue behind one lock shared with the session's
    /// [`Inbox`]es: every record is written holding it.
    shared: Shared,
    /// Turns, the open turn and the interrupted prompt, as replay keeps
    /// them: every record written is applied here.
    ledger: Ledger,
    /// Set when a record could not be written: the journal no longer
    /// follows the session, which then refuses every further turn.
    lost: Option<JournalError>,
}

impl Durable {
    pub(crate) fn new(slot: Slot, ledger: Ledger) -> Self {
        Self { shared: Shared::new(slot), ledger, lost: None }
    }

    pub(crate) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The failure that lost the journal, if one did.
    pub(crate) fn lost(&self) -> Option<&JournalError> {
        self.lost.as_ref()
    }

    pub(crate) fn inbox(&self) -> Inbox {
        Inbox::new(self.shared.clone())
    }

    /// The messages waiting in the queue, oldest first.
    pub(crate) async fn queued(&self) -> Vec<Queued> {
        self.shared.slot.lock().await.pending.list()
    }

    /// The next messages to run as a turn, claimed so no other turn takes them.
    pub(crate) async fn claim_next(&self) -> Option<Claimed> {
        self.shared.slot.lock().await.pending.claim_next()
    }

    /// The steering messages waiting, not claimed by a turn.
    async fn steering(&self) -> Vec<(u64, Message)> {
        self.shared.slot.lock().await.pending.steering()
    }

    /// Claimed messages whose turn never started wait again.
    pub(crate) async fn unclaim(&self, queued: &[(u64, Delivery)]) {
        if !queued.is_empty() {
            self.shared.slot.lock().await.pending.unclaim(queued);
        }
    }

    /// With the journal lost, closes the open turn in `history` as a
    /// resume of the durable records will close it, so live history never
    /// drops what the journal holds nor keeps what it lacks.
    pub(crate) fn close_as_resumed(&mut self, history: &mut Vec<Message>) {
        if self.lost.is_some() {
            self.ledger.close_open(history);
        }
    }

    /// The one writer of the turn's records. Checks `record` against the
    /// ledger, writes it (awaited: durable before the loop goes on,
    /// invariant 15), then applies it to `history` exactly as replay would.
    /// A record that cannot be written is not applied and loses the journal.
    pub(crate) async fn record(
        &mut self,
        record: JournalRecord,
        history: &mut Vec<Message>,
    ) -> Result<(), TurnErrorKind> {
        let slot = self.slot();
        let mut slot = slot.lock().await;
        self.record_in(&mut slot, record, history).await
    }

    /// The lock [`Durable::record_in`] is called under.
    fn slot(&self) -> Arc<Mutex<Slot>> {
        Arc::clone(&self.shared.slot)
    }

    /// [`Durable::record`] with the journal's lock held: what is checked
    /// against the queue stays true until the record is written.
    async fn record_in(
        &mut self,
        slot: &mut Slot,
        record: JournalRecord,
        history: &mut Vec<Message>,
    ) -> Result<(), TurnErrorKind> {
        if self.lost.is_none() {
            self.lost = slot.lost.clone();
        }
        if let Some(lost) = &self.lost {
            return Err(TurnErrorKind::JournalLost(lost.clone()));
        }
        let written = match self.ledger.check(&record).and_then(|()| slot.pending.check(&record)) {
            Err(problem) => Err(JournalError::new(
                JournalErrorKind::OutOfOrder,
                format!("refused an out-of-order record: {problem}"),
            )),
            Ok(()) => match slot.journal.as_mut() {
                Some(journal) => journal.append(&record).await,
                None => Ok(()),
            },
        };
        if let Err(error) = written {
            self.lost = Some(error.clone());
            slot.lost = Some(error.clone());
            return Err(error.into());
        }
        if slot.pending.apply(&record) {
            self.shared.changed();
        }
        self.ledger.apply(history, record);
        Ok(())
    }
}

impl Session {
    /// Writes `record` and applies it to history ([`Durable::record`]).
    pub(crate) async fn record(&mut self, record: JournalRecord) -> Result<(), TurnErrorKind> {
        self.durable.record(record, &mut self.history).await
    }

    /// Delivers the steering waiting, at a safe point: a batch committed,
    /// the next model round not yet asked for. Each message first passes
    /// the `UserPromptSubmit` hooks, as a turn's prompt does: one they block
    /// is withdrawn (`unqueued`, after the hook's `hook_ran`, so replay
    /// agrees it never entered history) and the turn goes on; their notes
    /// join one they pass. The hooks run without the journal's lock (they
    /// journal their runs, and the inbox must not wait on a slow hook);
    /// the message is delivered only if it still waits once the lock is
    /// taken again, so one taken back meanwhile is never delivered.
    pub(super) async fn deliver_steering(
        &mut self,
        state: &TurnState,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        let waiting = self.durable.steering().await;
        for (id, message) in waiting {
            let Message::User { mut content } = message else { continue };
            let checked = self.steering_hooks(state.turn, &mut content, &state.cancel, emitter).await?;
            let shared = self.durable.slot();
            let mut slot = shared.lock().await;
            if slot.pending.get(id).is_none() {
                continue;
            }
            match checked {
                Ok(()) => {
                    let message = Message::User { content };
                    let steered = JournalRecord::Steered { turn: state.turn, id, message };
                    self.durable.record_in(&mut slot, steered, &mut self.history).await?;
                    emitter.emit(Event::MessageDelivered {
                        turn: state.turn,
                        id,
                        delivery: Delivery::Steer,
                    })?;
                }
                Err((hook, reason)) => {
                    let unqueued = JournalRecord::Unqueued { id };
                    self.durable.record_in(&mut slot, unqueued, &mut self.history).await?;
                    emitter.emit(Event::MessageWithdrawn { turn: state.turn, id, hook, reason })?;
                }
            }
        }
        Ok(())
    }
}
