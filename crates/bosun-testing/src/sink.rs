//! An event sink that fails on cue.

use bosun_core::{Event, EventSink, SinkError};

/// Records events and fails from the event matching a predicate on.
pub struct FailingSink {
    /// Events accepted before the failure.
    pub events: Vec<Event>,
    fail_on: Box<dyn Fn(&Event) -> bool + Send>,
    failed: bool,
}

impl std::fmt::Debug for FailingSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailingSink")
            .field("events", &self.events.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl FailingSink {
    /// Fails on the first event for which `fail_on` is true, and after.
    pub fn when(fail_on: impl Fn(&Event) -> bool + Send + 'static) -> Self {
        Self { events: Vec::new(), fail_on: Box::new(fail_on), failed: false }
    }

    /// Fails after accepting `n` events.
    pub fn after(n: usize) -> Self {
        let counter = std::sync::atomic::AtomicUsize::new(0);
        Self::when(move |_| counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= n)
    }

    /// Whether it has failed.
    pub fn failed(&self) -> bool {
        self.failed
    }
}

impl EventSink for FailingSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if self.failed || (self.fail_on)(&event) {
            self.failed = true;
            return Err(SinkError::new("the consumer went away"));
        }
        self.events.push(event);
        Ok(())
    }
}
