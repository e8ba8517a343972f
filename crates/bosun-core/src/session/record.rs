//! Writing the journal: [`Session::record`], the one place the turn loop
//! writes it (write first, then apply the record to history with the ledger
//! replay uses, invariant 15), and the deliveries of steering at a safe
//! point: each message past the `UserPromptSubmit` hooks (withdrawn when
//! one blocks it), then checked against the queue under the journal's lock
//! held until its record is written.

use super::Session;
use super::turn::{Emitter, TurnState};
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::inbox::Slot;
use crate::journal::{JournalError, JournalErrorKind, JournalRecord};
use crate::message::{Delivery, Message};

impl Session {
    /// The one writer of the turn's records. Checks `record` against the
    /// ledger, writes it (awaited: durable before the loop goes on,
    /// invariant 15), then applies it to history exactly as replay would.
    /// A record that cannot be written is not applied and loses the journal.
    pub(crate) async fn record(&mut self, record: JournalRecord) -> Result<(), TurnErrorKind> {
        let shared = self.shared.slot.clone();
        let mut slot = shared.lock().await;
        self.record_in(&mut slot, record).await
    }

    /// [`Session::record`] with the journal's lock held: what is checked
    /// against the queue stays true until the record is written.
    pub(super) async fn record_in(
        &mut self,
        slot: &mut Slot,
        record: JournalRecord,
    ) -> Result<(), TurnErrorKind> {
        if self.journal_lost.is_none() {
            self.journal_lost = slot.lost.clone();
        }
        if let Some(lost) = &self.journal_lost {
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
            self.journal_lost = Some(error.clone());
            slot.lost = Some(error.clone());
            return Err(error.into());
        }
        if slot.pending.apply(&record) {
            self.shared.changed();
        }
        self.ledger.apply(&mut self.history, record);
        Ok(())
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
        let waiting = self.shared.slot.lock().await.pending.steering();
        for (id, message) in waiting {
            let Message::User { mut content } = message else { continue };
            let checked = self.steering_hooks(state.turn, &mut content, &state.cancel, emitter).await?;
            let shared = self.shared.slot.clone();
            let mut slot = shared.lock().await;
            if slot.pending.get(id).is_none() {
                continue;
            }
            match checked {
                Ok(()) => {
                    let message = Message::User { content };
                    self.record_in(&mut slot, JournalRecord::Steered { turn: state.turn, id, message })
                        .await?;
                    emitter.emit(Event::MessageDelivered {
                        turn: state.turn,
                        id,
                        delivery: Delivery::Steer,
                    })?;
                }
                Err((hook, reason)) => {
                    self.record_in(&mut slot, JournalRecord::Unqueued { id }).await?;
                    emitter.emit(Event::MessageWithdrawn { turn: state.turn, id, hook, reason })?;
                }
            }
        }
        Ok(())
    }

    pub(super) async fn unclaim(&self, queued: &[(u64, Delivery)]) {
        if !queued.is_empty() {
            self.shared.slot.lock().await.pending.unclaim(queued);
        }
    }
}
