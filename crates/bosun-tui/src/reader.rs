//! Terminal input on a thread of its own, handed to the UI's loop on a
//! channel.
//!
//! Not crossterm's `EventStream`: its thread waits for the next key holding
//! crossterm's one input reader, and a cursor-position query (ratatui asks
//! one to place an inline viewport after a resize, and to clear it) needs
//! that reader to see the terminal's answer, so the query timed out or hung
//! until a key came. This thread waits at most [`POLL`] at a time and lets
//! go of the reader in between, so a query gets its answer. Waking a few
//! times a second costs nothing measurable while idle.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event};
use tokio::sync::mpsc;

/// How long one wait for input holds the reader.
const POLL: Duration = Duration::from_millis(200);

/// The input thread; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Reader {
    events: mpsc::UnboundedReceiver<std::io::Result<Event>>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    pub(crate) fn start() -> Self {
        let (tx, events) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let next = match event::poll(POLL) {
                    Ok(false) => continue,
                    Ok(true) => event::read(),
                    Err(error) => Err(error),
                };
                let failed = next.is_err();
                if tx.send(next).is_err() || failed {
                    return;
                }
            }
        });
        Self { events, stop }
    }

    /// The next input; `None` once the thread has stopped.
    pub(crate) async fn next(&mut self) -> Option<std::io::Result<Event>> {
        self.events.recv().await
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
