//! One session's event stream: each event numbered from 1, kept in memory
//! while it is recent and in the store for good, and a watch of the newest
//! number that wakes every reader. A reader asks for what comes after the
//! last number it saw, so a client that reconnects with `Last-Event-ID`
//! gets exactly what it missed, from memory or from the store, with no gap
//! and no duplicate, even after the server restarted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bosun_store::StoredEvent;
use tokio::sync::{mpsc, watch};

use crate::sessions::{SessionStore, StoreFailure};

/// Recent events kept in memory per session. Older ones are read from the
/// store; an event leaves memory only once the store has it.
const RECENT: usize = 1024;

/// Events written to the store in one transaction at most.
const WRITE_BATCH: usize = 256;

/// Tries of one batch before the writer gives up (events stay in memory).
const WRITE_ATTEMPTS: u32 = 20;

/// The pause before a failed batch is tried again.
const RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// Events a reader gets at once.
pub(crate) const READ_BATCH: usize = 256;

pub(crate) struct EventHub {
    session: String,
    store: SessionStore,
    state: Mutex<State>,
    /// The number of the newest event.
    newest: watch::Sender<u64>,
    /// The number of the newest event the store has.
    stored: Arc<AtomicU64>,
    /// To the writer; taken at [`EventHub::close`].
    to_store: Mutex<Option<mpsc::UnboundedSender<StoredEvent>>>,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Fired at [`EventHub::close`]: readers end once they have read all.
    closed: tokio_util::sync::CancellationToken,
}

struct State {
    next: u64,
    recent: VecDeque<StoredEvent>,
}

impl EventHub {
    /// The stream of `session`, continuing after the events the store has.
    pub(crate) async fn open(session: &str, store: SessionStore) -> Result<Arc<Self>, StoreFailure> {
        let last = store.last_event(session).await?;
        let (to_store, queued) = mpsc::unbounded_channel();
        let stored = Arc::new(AtomicU64::new(last));
        let writer =
            tokio::spawn(write_to_store(session.to_owned(), store.clone(), queued, Arc::clone(&stored)));
        let (newest, _) = watch::channel(last);
        Ok(Arc::new(Self {
            session: session.to_owned(),
            store,
            state: Mutex::new(State { next: last + 1, recent: VecDeque::with_capacity(RECENT) }),
            newest,
            stored,
            to_store: Mutex::new(Some(to_store)),
            writer: Mutex::new(Some(writer)),
            closed: tokio_util::sync::CancellationToken::new(),
        }))
    }

    /// Numbers and publishes one event (its JSON).
    pub(crate) fn publish(&self, event: &serde_json::Value) {
        let seq = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let seq = state.next;
            state.next += 1;
            let stored_event = StoredEvent::new(seq, event.to_string());
            // After `close` (the session stopped) an event stays in memory.
            if let Some(to_store) = self.to_store.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                let _ = to_store.send(stored_event.clone());
            }
            state.recent.push_back(stored_event);
            let stored = self.stored.load(Ordering::SeqCst);
            while state.recent.len() > RECENT && state.recent.front().is_some_and(|e| e.seq <= stored) {
                state.recent.pop_front();
            }
            seq
        };
        self.newest.send_replace(seq);
    }

    /// Waits until the store has every event published so far, and stops
    /// the writer: a server that stops, or another that opens the session
    /// next, finds every event in the store.
    pub(crate) async fn close(&self) {
        self.to_store.lock().unwrap_or_else(PoisonError::into_inner).take();
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        self.closed.cancel();
    }

    /// Resolves once the session stopped (deleted, forked, the server
    /// stopping): no event comes after.
    pub(crate) async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// A watch of the newest event's number.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    /// Up to [`READ_BATCH`] events after number `after`, in order: from
    /// memory when it still holds the next one, else from the store.
    pub(crate) async fn after(&self, after: u64) -> Result<Vec<StoredEvent>, StoreFailure> {
        {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let in_memory = state.recent.front().is_some_and(|first| first.seq <= after + 1);
            if in_memory || after + 1 >= state.next {
                return Ok(state.recent.iter().filter(|e| e.seq > after).take(READ_BATCH).cloned().collect());
            }
        }
        self.store.events_after(&self.session, after, READ_BATCH).await
    }
}

/// Writes published events to the store in order, a batch at a time. A
/// batch that fails is tried again with the next (events stay in memory
/// meanwhile), so a busy or briefly failing store loses nothing.
async fn write_to_store(
    session: String,
    store: SessionStore,
    mut queued: mpsc::UnboundedReceiver<StoredEvent>,
    stored: Arc<AtomicU64>,
) {
    let mut unwritten: Vec<StoredEvent> = Vec::new();
    let mut failures = 0u32;
    loop {
        let closed = queued.recv_many(&mut unwritten, WRITE_BATCH).await == 0;
        if unwritten.is_empty() {
            return;
        }
        match store.append_events(&session, &unwritten).await {
            Ok(()) => {
                failures = 0;
                if let Some(last) = unwritten.last() {
                    stored.store(last.seq, Ordering::SeqCst);
                }
                unwritten.clear();
            }
            Err(StoreFailure::Worker(error)) => {
                tracing::error!(%error, "serve: the event writer failed");
                return;
            }
            Err(error) => {
                failures += 1;
                tracing::warn!(%error, failures, "serve: events not stored yet; trying again");
            }
        }
        if failures >= WRITE_ATTEMPTS {
            tracing::error!(session, unwritten = unwritten.len(), "serve: events could not be stored");
            return;
        }
        if failures > 0 {
            tokio::time::sleep(RETRY_DELAY).await;
        } else if closed && unwritten.is_empty() {
            return;
        }
    }
}
