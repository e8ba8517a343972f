//! A session's events as an SSE stream: what comes after the last number
//! the client saw, read from the hub (memory or store) in batches, then
//! waiting for the next; it ends when the server stops, or once it has
//! read everything of a session that stopped.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::Event as SseEvent;
use futures_util::Stream;
use tokio_util::sync::CancellationToken;

use crate::hub::EventHub;

struct Reader {
    hub: Arc<EventHub>,
    after: u64,
    newest: tokio::sync::watch::Receiver<u64>,
    pending: std::vec::IntoIter<bosun_store::StoredEvent>,
    stopping: CancellationToken,
    /// The session stopped: the stream ends after the next empty read.
    closing: bool,
}

/// The stream of `hub`'s events after number `after`.
pub(crate) fn events(
    hub: Arc<EventHub>,
    after: u64,
    stopping: CancellationToken,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let newest = hub.watch();
    let reader = Reader { hub, after, newest, pending: Vec::new().into_iter(), stopping, closing: false };
    futures_util::stream::unfold(reader, |mut reader| async move {
        loop {
            if let Some(event) = reader.pending.next() {
                reader.after = event.seq;
                let sse = SseEvent::default().id(event.seq.to_string()).data(event.body);
                return Some((Ok(sse), reader));
            }
            // Marked seen before reading, so an event published during the
            // read wakes the wait below.
            reader.newest.borrow_and_update();
            match reader.hub.after(reader.after).await {
                Ok(batch) if !batch.is_empty() => {
                    reader.pending = batch.into_iter();
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, "serve: reading events failed");
                    return None;
                }
            }
            if reader.closing {
                return None;
            }
            let hub = Arc::clone(&reader.hub);
            tokio::select! {
                changed = reader.newest.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                // One more read for what came before it, then the end.
                () = hub.closed() => reader.closing = true,
                () = reader.stopping.cancelled() => return None,
            }
        }
    })
}
