//! Compacting before a round (`context.rs` holds the view and the tiers'
//! rules): estimate the request, and when it passes the threshold of the
//! window (or the provider said it overflowed), apply the tiers in order
//! until it fits. Each step is journaled as `compacted` before it is used.

use std::borrow::Cow;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::context::{
    KEEP_UNITS, SUMMARY_PROMPT, chars_of, dropped_text, elision_end, latest_ask, shorten_start, shortens_any,
    summary_text, transcript,
};
use super::turn::{Emitter, Repeats, TurnState, drain};
use super::{Session, TurnOptions};
use crate::error::{Disposition, TurnError, TurnErrorKind};
use crate::event::{Event, EventSink};
use crate::hooks::{CompactTrigger, HookInput, HookPoint};
use crate::journal::Compaction;
use crate::journal::JournalRecord;
use crate::message::{Message, Usage, concat_text};
use crate::model::{GenerationOptions, ModelEvent, ModelRequest, ResponsePart};
use crate::spend::Spent;

/// What a compaction asked for by the person did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactOutcome {
    /// The next request's prompt tokens before, counted or estimated.
    pub before: u64,
    /// The same after.
    pub after: u64,
    /// What the summary request spent.
    pub spent: Spent,
}

impl Session {
    /// Characters of a request carrying `messages` this round: the
    /// estimator's measure, for the estimate and for learning from a reply.
    pub(crate) fn request_chars(&self, repeats: &Repeats, messages: &[Message]) -> usize {
        let tools = self.tools.offered_chars(repeats.answer_only());
        chars_of(self.system.as_deref(), messages, tools)
    }

    /// Calibrates a resumed session's estimator from the newest response in
    /// history that reported usage, as if it had just arrived: its request
    /// was the history before it (in today's view), so a long session
    /// resumed in a new process is estimated from a real count, not from a
    /// default rate that may be far off (27% under for code, measured).
    pub(crate) fn seed_estimator(&mut self) {
        let newest = self.history.iter().enumerate().rev().find_map(|(index, message)| match message {
            Message::Assistant { usage, .. } if !usage.is_zero() => Some((index, *usage)),
            _ => None,
        });
        let Some((index, usage)) = newest else { return };
        let view = self.request_messages(&Repeats::default(), self.context.compaction());
        // The view's messages before the response: those of history before it.
        let before = view.len().saturating_sub(self.history.len() - index);
        let chars = chars_of(self.system.as_deref(), &view[..before], self.tools.offered_chars(false));
        self.context.observe(chars, &usage);
    }

    /// Prompt tokens of the request `compaction` would make this round:
    /// counted by the model when it can, else estimated.
    async fn estimate_with(&self, repeats: &Repeats, compaction: &Compaction) -> u64 {
        let messages = self.request_messages(repeats, compaction);
        let chars = self.request_chars(repeats, &messages);
        let tools = self.tools.offered(repeats.answer_only());
        let request = ModelRequest {
            system: self.system.as_deref(),
            messages,
            tools: Cow::Borrowed(tools),
            options: GenerationOptions::default(),
        };
        match self.model.count_tokens(&request).await {
            Some(exact) => exact,
            None => self.context.estimate(chars),
        }
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
        if !overflowed && self.context.window().is_none() {
            return Ok(false);
        }
        let before = self.estimate_with(&state.repeats, self.context.compaction()).await;
        let target = self.context.target(before, overflowed);
        if !overflowed && before <= target {
            return Ok(false);
        }
        if self.hooks_want(HookPoint::PreCompact) {
            let input = HookInput::PreCompact { turn: Some(state.turn), trigger: CompactTrigger::Auto };
            let cancel = state.cancel.clone();
            self.run_hooks(input, &cancel, emitter).await?;
        }
        let mut changed = false;
        let mut now = before;
        // Tier 1: old tool results shortened, beyond the newest units, or
        // (when that is not enough: large results) beyond the newest one.
        let mut shortened = None;
        for keep in [KEEP_UNITS, 1] {
            let start = shorten_start(&self.history, keep);
            let current = self.context.compaction();
            let from = current.shorten_before.max(current.elided_through);
            if start > current.shorten_before && shortens_any(&self.history, from..start) {
                let next = Compaction { shorten_before: start, ..current.clone() };
                let fits = self.estimate_with(&state.repeats, &next).await <= target;
                shortened = Some(next);
                if fits {
                    break;
                }
            }
        }
        if let Some(next) = shortened {
            now = self.apply(1, next, now, Usage::default(), &state.repeats, emitter).await?;
            changed = true;
            if now <= target {
                return Ok(true);
            }
        }
        // Tier 2: the older units summarized by the model: all but the
        // newest units, or all but the newest one when those alone would
        // not fit.
        let earlier = self.context.compaction().text.clone();
        let keep = if self.fits_keeping(KEEP_UNITS, &state.repeats, target).await { KEEP_UNITS } else { 1 };
        if let Some(end) = elision_end(&self.history, keep)
            && end > self.context.compaction().elided_through
        {
            let from = self.context.compaction().elided_through.max(1);
            let text = transcript(&self.history, from, end, earlier.as_deref());
            match self.summarize(text, &state.cancel).await {
                Ok((summary, usage)) => {
                    state.spend.compaction.add(Spent::priced(usage, self.pricing.as_deref()));
                    let next = Compaction {
                        shorten_before: self.context.compaction().shorten_before,
                        elided_through: end,
                        text: Some(summary_text(&summary)),
                        kept_ask: latest_ask(&self.history, end),
                    };
                    now = self.apply(2, next, now, usage, &state.repeats, emitter).await?;
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
            && end > self.context.compaction().elided_through
        {
            let next = Compaction {
                shorten_before: self.context.compaction().shorten_before,
                elided_through: end,
                text: Some(dropped_text(self.context.compaction().text.as_deref())),
                kept_ask: latest_ask(&self.history, end),
            };
            self.apply(3, next, now, Usage::default(), &state.repeats, emitter).await?;
            changed = true;
        }
        Ok(changed)
    }

    /// Whether a view that elides all but the newest `keep` units would fit
    /// `target` (its summary not counted: a summary is short).
    async fn fits_keeping(&self, keep: usize, repeats: &Repeats, target: u64) -> bool {
        let Some(end) = elision_end(&self.history, keep) else { return false };
        let view = Compaction {
            shorten_before: self.context.compaction().shorten_before,
            elided_through: end.max(self.context.compaction().elided_through),
            text: Some(String::new()),
            kept_ask: latest_ask(&self.history, end),
        };
        self.estimate_with(repeats, &view).await <= target
    }

    /// Compacts what is sent now, as a person asks (`bosun compact`,
    /// `/compact`): the units between the task and the newest one are
    /// summarized by the model (tier 2) and the summary is sent in their
    /// place from the next request on. Journaled like an automatic
    /// compaction; history is unchanged. `Ok(None)` when nothing lies between
    /// the task and the newest unit. A failed or cancelled summary changes
    /// nothing.
    pub async fn compact_now(
        &mut self,
        options: TurnOptions,
        sink: &mut dyn EventSink,
    ) -> Result<Option<CompactOutcome>, TurnError> {
        let unchanged = |kind| TurnError { kind, disposition: Disposition::RolledBack };
        if let Some(lost) = self.durable.lost() {
            return Err(unchanged(TurnErrorKind::JournalLost(lost.clone())));
        }
        let Some(end) =
            elision_end(&self.history, 1).filter(|end| *end > self.context.compaction().elided_through)
        else {
            return Ok(None);
        };
        let cancel = options.cancel.child_token();
        let mut emitter = Emitter::new(sink, cancel.clone()).observed_by(self.hooks.set());
        if self.hooks_want(HookPoint::PreCompact) {
            let input = HookInput::PreCompact { turn: None, trigger: CompactTrigger::Manual };
            self.run_hooks(input, &cancel, &mut emitter).await.map_err(unchanged)?;
        }
        let repeats = Repeats::default();
        let before = self.estimate_with(&repeats, self.context.compaction()).await;
        let from = self.context.compaction().elided_through.max(1);
        let text = transcript(&self.history, from, end, self.context.compaction().text.as_deref());
        let (summary, usage) = self.summarize(text, &cancel).await.map_err(unchanged)?;
        let next = Compaction {
            shorten_before: self.context.compaction().shorten_before,
            elided_through: end,
            text: Some(summary_text(&summary)),
            kept_ask: latest_ask(&self.history, end),
        };
        let after = self.apply(2, next, before, usage, &repeats, &mut emitter).await.map_err(unchanged)?;
        Ok(Some(CompactOutcome { before, after, spent: Spent::priced(usage, self.pricing.as_deref()) }))
    }

    /// Estimated tokens at the front of the request that stay the same when
    /// `next` replaces the compaction in force: the prompt cache's share
    /// that survives it.
    fn unchanged_prefix(&self, repeats: &Repeats, next: &Compaction) -> u64 {
        let now = self.request_messages(repeats, self.context.compaction());
        let then = self.request_messages(repeats, next);
        let same = now.iter().zip(then.iter()).take_while(|(a, b)| a == b).count();
        self.context.estimate(self.request_chars(repeats, &now[..same]))
    }

    /// Journals `next`, then sends it from now on; the estimate after.
    async fn apply(
        &mut self,
        tier: u8,
        next: Compaction,
        before: u64,
        usage: Usage,
        repeats: &Repeats,
        emitter: &mut Emitter<'_>,
    ) -> Result<u64, TurnErrorKind> {
        let after = self.estimate_with(repeats, &next).await;
        let cached_prefix = self.unchanged_prefix(repeats, &next);
        let cost_micros =
            Spent::priced(usage, self.pricing.as_deref()).cost_micros.filter(|_| !usage.is_zero());
        self.record(JournalRecord::Compacted { tier, compaction: next.clone(), usage, cost_micros }).await?;
        self.context.compacted(next);
        emitter.emit(Event::Compacted { tier, before, after, cached_prefix, usage })?;
        Ok(after)
    }

    /// One request to the session's model with the summary prompt; its text
    /// and usage. Nothing of it reaches the event stream: the person sees the
    /// `compacted` event, the model the summary.
    async fn summarize(
        &self,
        transcript: String,
        cancel: &CancellationToken,
    ) -> Result<(String, Usage), TurnErrorKind> {
        let messages = vec![Message::user(transcript)];
        let request = ModelRequest {
            system: Some(SUMMARY_PROMPT),
            messages: Cow::Owned(messages),
            tools: Cow::Borrowed(&[]),
            options: GenerationOptions::default(),
        };
        let mut stream = self.model.stream(request, cancel.clone());
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
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
