//! [`Durable`]: the session's durable part, and its
//! [`Durable::record`], the one place the turn loop writes the journal:
//! write first, then apply the record to history with the ledger replay
//! uses (invariant 15).

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::error::TurnErrorKind;
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
    pub(crate) async fn steering(&self) -> Vec<(u64, Message)> {
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
    pub(crate) fn slot(&self) -> Arc<Mutex<Slot>> {
        Arc::clone(&self.shared.slot)
    }

    /// [`Durable::record`] with the journal's lock held: what is checked
    /// against the queue stays true until the record is written.
    pub(crate) async fn record_in(
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
