//! Compacting before a round (`context.rs` holds the view and the tiers'
//! rules): estimate the request, and when it passes the threshold of the
//! window (or the provider said it overflowed), apply the tiers in order
//! until it fits. Each step is journaled as `compacted` before it is used.

use std::borrow::Cow;

use futures_util::StreamExt;

use super::Session;
use super::context::{
    Compaction, KEEP_UNITS, SUMMARY_PROMPT, chars_of, dropped_text, elision_end, latest_ask, shorten_start,
    summary_text, transcript,
};
use super::turn::{Emitter, Repeats, TurnState, drain};
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::journal::JournalRecord;
use crate::message::{Message, Usage, concat_text};
use crate::model::{GenerationOptions, ModelEvent, ModelRequest, ResponsePart};

impl Session {
    /// Characters of a request carrying `messages` this round: the
    /// estimator's measure, for the estimate and for learning from a reply.
    pub(crate) fn request_chars(&self, repeats: &Repeats, messages: &[Message]) -> usize {
        let tools = if repeats.answer_only() { 0 } else { self.advertised_chars };
        chars_of(self.system.as_deref(), messages, tools)
    }

    fn estimate_with(&self, repeats: &Repeats, compaction: &Compaction) -> u64 {
        let messages = self.request_messages(repeats, compaction);
        self.estimator.estimate(self.request_chars(repeats, &messages))
    }

    /// Compacts when the request's estimate passes `compact_at` of the
    /// window, or always when `overflowed` (then to half the estimate).
    /// Whether anything changed.
    pub(crate) async fn compact(
        &mut self,
        state: &mut TurnState,
        emitter: &mut Emitter<'_>,
        overflowed: bool,
    ) -> Result<bool, TurnErrorKind> {
        let before = self.estimate_with(&state.repeats, &self.compaction);
        let target = match self.context_window {
            _ if overflowed => before / 2,
            Some(window) => (window as f64 * self.compact_at) as u64,
            None => return Ok(false),
        };
        if !overflowed && before <= target {
            return Ok(false);
        }
        let mut changed = false;
        let mut now = before;
        // Tier 1: old tool results shortened.
        let start = shorten_start(&self.history, KEEP_UNITS);
        if start > self.compaction.shorten_before {
            let next = Compaction { shorten_before: start, ..self.compaction.clone() };
            now = self.apply(1, next, now, Usage::default(), state, emitter).await?;
            changed = true;
            if now <= target {
                return Ok(true);
            }
        }
        // Tier 2: the older units summarized by the model.
        let earlier = self.compaction.text.clone();
        if let Some(end) = elision_end(&self.history, KEEP_UNITS)
            && end > self.compaction.elided_through
        {
            let from = self.compaction.elided_through.max(1);
            let text = transcript(&self.history, from, end, earlier.as_deref());
            match self.summarize(text, state).await {
                Ok((summary, usage)) => {
                    state.usage += usage;
                    let next = Compaction {
                        shorten_before: self.compaction.shorten_before,
                        elided_through: end,
                        text: Some(summary_text(&summary)),
                        kept_ask: latest_ask(&self.history, end),
                    };
                    now = self.apply(2, next, now, usage, state, emitter).await?;
                    changed = true;
                    if now <= target {
                        return Ok(true);
                    }
                }
                Err(TurnErrorKind::Cancelled) => return Err(state.cancelled(emitter)),
                Err(error) => tracing::warn!(%error, "compaction: the summary failed; dropping instead"),
            }
        }
        // Tier 3: the older units dropped, all but the newest one.
        if let Some(end) = elision_end(&self.history, 1)
            && end > self.compaction.elided_through
        {
            let next = Compaction {
                shorten_before: self.compaction.shorten_before,
                elided_through: end,
                text: Some(dropped_text(self.compaction.text.as_deref())),
                kept_ask: latest_ask(&self.history, end),
            };
            self.apply(3, next, now, Usage::default(), state, emitter).await?;
            changed = true;
        }
        Ok(changed)
    }

    /// Journals `next`, then sends it from now on; the estimate after.
    async fn apply(
        &mut self,
        tier: u8,
        next: Compaction,
        before: u64,
        usage: Usage,
        state: &TurnState,
        emitter: &mut Emitter<'_>,
    ) -> Result<u64, TurnErrorKind> {
        let after = self.estimate_with(&state.repeats, &next);
        self.record(JournalRecord::Compacted { tier, compaction: next.clone(), usage }).await?;
        self.compaction = next;
        emitter.emit(Event::Compacted { tier, before, after, usage })?;
        Ok(after)
    }

    /// One request to the session's model with the summary prompt; its text
    /// and usage. Nothing of it reaches the event stream: the person sees the
    /// `compacted` event, the model the summary.
    async fn summarize(
        &self,
        transcript: String,
        state: &TurnState,
    ) -> Result<(String, Usage), TurnErrorKind> {
        let messages = vec![Message::user(transcript)];
        let request = ModelRequest {
            system: Some(SUMMARY_PROMPT),
            messages: Cow::Owned(messages),
            tools: Cow::Borrowed(&[]),
            options: GenerationOptions::default(),
        };
        let mut stream = self.model.stream(request, state.cancel.clone());
        loop {
            let item = tokio::select! {
                biased;
                () = state.cancel.cancelled() => None,
                item = stream.next() => Some(item),
            };
            match item {
                None => {
                    drain(stream).await;
                    return Err(TurnErrorKind::Cancelled);
                }
                Some(None) => return Err(TurnErrorKind::Truncated),
                Some(Some(Err(error))) => return Err(error.into()),
                Some(Some(Ok(ModelEvent::Done(response)))) => {
                    let parts: Vec<_> = response
                        .content
                        .into_iter()
                        .filter_map(|p| match p {
                            ResponsePart::Content(c) => Some(c),
                            ResponsePart::ToolCall { .. } => None,
                        })
                        .collect();
                    let text = concat_text(&parts);
                    if text.trim().is_empty() {
                        return Err(TurnErrorKind::EmptyResponse);
                    }
                    return Ok((text, response.usage));
                }
                Some(Some(Ok(_))) => {}
            }
        }
    }
}
