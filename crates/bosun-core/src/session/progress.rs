//! Progress of a batch's running calls on its way to the event stream, held
//! to a bounded rate per call. A tool may report as fast as it likes (an MCP
//! server can send hundreds of thousands of progress notifications); every
//! front end sees at most one report per call per [`PROGRESS_INTERVAL`],
//! always the newest, and a call's last report comes before its end event.
//! A sub-agent's events pass unthrottled: each is a distinct event, not a
//! replacement for the one before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::message::CallId;
use crate::tool::{Progress, ProgressRoute, Report};

/// Reports a batch's channel holds before a call's newest is kept aside.
const CHANNEL_REPORTS: usize = 256;

/// Shortest time between two progress events of one call.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The receiving end of a batch's progress channel.
pub(super) struct ProgressQueue {
    received: mpsc::Receiver<Report>,
    /// Each call's newest line or output that found the channel full.
    overflow: Arc<Mutex<HashMap<CallId, (u64, Progress)>>>,
    calls: HashMap<CallId, Slot>,
}

/// One call's throttle.
struct Slot {
    /// When its last report was passed on.
    shown: Instant,
    /// The newest report not passed on yet.
    held: Option<Progress>,
    /// The number of the newest report taken in.
    seen: u64,
}

impl ProgressQueue {
    /// The route a batch's calls report on, and its queue.
    pub(super) fn channel() -> (ProgressRoute, Self) {
        let (sender, received) = mpsc::channel(CHANNEL_REPORTS);
        let overflow = Arc::new(Mutex::new(HashMap::new()));
        let route = ProgressRoute { sender, overflow: Arc::clone(&overflow) };
        (route, Self { received, overflow, calls: HashMap::new() })
    }

    /// The next report to emit: one that arrives when its call's last was
    /// shown an interval ago or more, or a held one whose interval is up.
    /// Cancel-safe: a report taken in is either returned or held.
    pub(super) async fn next(&mut self) -> Option<(CallId, Progress)> {
        loop {
            let due = self
                .calls
                .iter()
                .filter(|(_, slot)| slot.held.is_some())
                .map(|(id, slot)| (slot.shown + PROGRESS_INTERVAL, *id))
                .min_by_key(|(at, _)| *at);
            let wait = async {
                match due {
                    Some((at, _)) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                received = self.received.recv() => {
                    let report = received?;
                    if let Some(shown) = self.admit(report) {
                        return Some(shown);
                    }
                }
                () = wait => {
                    if let Some((_, id)) = due
                        && let Some(slot) = self.calls.get_mut(&id)
                        && let Some(progress) = slot.held.take()
                    {
                        slot.shown = Instant::now();
                        return Some((id, progress));
                    }
                }
            }
        }
    }

    /// What a call that ended still has to show, in order: reports queued
    /// in the channel (of any call) that may pass now, then the call's
    /// newest: the one it holds, or the one kept aside when the channel was
    /// full, whichever came later. Its throttle is dropped; a retry starts
    /// afresh.
    pub(super) fn finish(&mut self, call: CallId) -> Vec<(CallId, Progress)> {
        let mut shown = Vec::new();
        while let Ok(report) = self.received.try_recv() {
            shown.extend(self.admit(report));
        }
        let slot = self.calls.remove(&call);
        let aside = self.overflow.lock().unwrap_or_else(PoisonError::into_inner).remove(&call);
        let seen = slot.as_ref().map_or(0, |s| s.seen);
        match (aside, slot) {
            (Some((seq, progress)), _) if seq > seen => shown.push((call, progress)),
            (_, Some(Slot { held: Some(progress), .. })) => shown.push((call, progress)),
            _ => {}
        }
        shown
    }

    /// Passes a report on, or holds it as its call's newest.
    fn admit(&mut self, report: Report) -> Option<(CallId, Progress)> {
        let Report { call_id: id, seq, progress } = report;
        if matches!(progress, Progress::Child { .. }) {
            return Some((id, progress));
        }
        let now = Instant::now();
        match self.calls.get_mut(&id) {
            Some(slot) if now < slot.shown + PROGRESS_INTERVAL => {
                slot.seen = slot.seen.max(seq);
                slot.held = Some(progress);
                None
            }
            Some(slot) => {
                slot.seen = slot.seen.max(seq);
                slot.shown = now;
                slot.held = None;
                Some((id, progress))
            }
            None => {
                self.calls.insert(id, Slot { shown: now, held: None, seen: seq });
                Some((id, progress))
            }
        }
    }
}
