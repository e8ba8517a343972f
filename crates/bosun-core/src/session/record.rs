//! Writing the journal from the turn (`Session::record`, through the
//! session's `Durable`), and the deliveries of steering at a safe point:
//! each message past the `UserPromptSubmit` hooks (withdrawn when one
//! blocks it), then checked against the queue under the journal's lock
//! held until its record is written.

use super::Session;
use super::turn::{Emitter, TurnState};
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::journal::JournalRecord;
use crate::message::{Delivery, Message};

impl Session {
    /// Writes `record` and applies it to history (`Durable::record`).
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
