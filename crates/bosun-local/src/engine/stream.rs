//! The [`ModelStream`](bosun_core::ModelStream) of one request: events from
//! the generation thread, and a guard so no generation outlives its stream.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::mpsc;

use super::worker::{Control, EventResult};

/// Events of one job, in order; ends when the job is over.
///
/// Dropping it before the end stops the job and, if the generation thread
/// has started it, waits until the thread lets go of it (at most one token's
/// or one prompt chunk's work), so nothing started for this stream runs
/// after it is gone. A job still queued behind another is skipped unrun.
pub(crate) struct GenerationStream {
    events: mpsc::Receiver<EventResult>,
    control: Arc<Control>,
    done: std_mpsc::Receiver<()>,
}

impl GenerationStream {
    pub(crate) fn new(
        events: mpsc::Receiver<EventResult>,
        control: Arc<Control>,
        done: std_mpsc::Receiver<()>,
    ) -> Self {
        Self { events, control, done }
    }
}

impl Stream for GenerationStream {
    type Item = EventResult;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<EventResult>> {
        self.events.poll_recv(cx)
    }
}

impl Drop for GenerationStream {
    fn drop(&mut self) {
        let started = self.control.stop();
        // Wakes the thread if it waits for room in the channel.
        self.events.close();
        if started {
            // Returns once the thread drops the job (its `done` sender); at
            // once if it already has.
            let _ = self.done.recv();
        }
    }
}

impl std::fmt::Debug for GenerationStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerationStream").finish_non_exhaustive()
    }
}
