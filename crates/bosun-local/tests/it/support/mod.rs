//! Shared helpers for bosun-local's integration tests.

use bosun_core::{Event, EventSink, GenerationOptions, SinkError};
use tokio_util::sync::CancellationToken;

/// One model at a time in this binary. Every test that loads a model, real
/// (`local`) or tiny (`tiny`), holds it while it runs: the real-model tests
/// measure time, and two models on two cores would skew it. An async test
/// takes it with `SERIAL.lock().await`, a plain one with
/// `SERIAL.blocking_lock()`.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Generation options with only a token limit.
pub fn options(max_tokens: u32) -> GenerationOptions {
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(max_tokens);
    options
}

/// Collects events; may cancel a token on the first text delta.
#[derive(Default)]
pub struct Recorder {
    pub events: Vec<Event>,
    pub cancel_on_text: Option<CancellationToken>,
}

impl Recorder {
    /// The concatenated text deltas.
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl EventSink for Recorder {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if matches!(event, Event::TextDelta { .. })
            && let Some(cancel) = &self.cancel_on_text
        {
            cancel.cancel();
        }
        self.events.push(event);
        Ok(())
    }
}
