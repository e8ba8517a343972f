//! Asking the session's hooks (`crate::hooks`) at a point of the turn: each
//! run journaled as `hook_ran` and emitted as `hook_run`, in the order the
//! runs ended, before the caller acts on the verdict. What a hook changes
//! (a note in the prompt, a refused call, text added to a result) is in the
//! records it changes, so replay never runs a hook again. `UserPromptSubmit`
//! sees every message a person puts into history: a turn's prompt, and a
//! steering message at the safe point (a blocked one is withdrawn there).

use tokio_util::sync::CancellationToken;

use super::Session;
use super::turn::{Emitter, TurnState};
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::hooks::{HookInput, HookPoint, HookRun, StartSource, Verdict};
use crate::journal::JournalRecord;
use crate::message::ContentPart;
use crate::model::{ModelResponse, ResponsePart};

impl Session {
    /// Whether a hook still on wants `point`.
    pub(crate) fn hooks_want(&self, point: HookPoint) -> bool {
        self.hooks.want(point)
    }

    /// Runs the hooks at `input`'s point. A cancelled turn stops the hook
    /// running (its future is dropped) and the point; the runs that ended
    /// are still journaled. `Err` for a required hook's failure, a
    /// cancellation, or a journal that failed.
    pub(crate) async fn run_hooks(
        &mut self,
        input: HookInput,
        cancel: &CancellationToken,
        emitter: &mut Emitter<'_>,
    ) -> Result<Verdict, TurnErrorKind> {
        let hooks = self.hooks.set().clone();
        let mut runs: Vec<HookRun> = Vec::new();
        let outcome = {
            let asked = hooks.run(&input, |run| runs.push(run));
            tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                verdict = asked => Some(verdict),
            }
        };
        let turn = input.turn();
        for run in runs {
            self.record(JournalRecord::HookRan { run: run.clone(), turn }).await?;
            emitter.emit(Event::HookRun { run })?;
        }
        match outcome {
            None => Err(TurnErrorKind::Cancelled),
            Some(verdict) => Ok(verdict?),
        }
    }

    /// The hooks before a turn: `SessionStart` on a session object's first
    /// turn, then `UserPromptSubmit`. Their notes join the user's message
    /// (after the prompt, one text part naming each hook), so the journal
    /// and every later request hold them. `Err` when a hook refused.
    pub(crate) async fn prompt_hooks(
        &mut self,
        turn: u64,
        content: &mut Vec<ContentPart>,
        cancel: &CancellationToken,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        if self.hooks.set().is_empty() {
            return Ok(());
        }
        if self.hooks.first_start() && self.hooks_want(HookPoint::SessionStart) {
            let source = if self.history.is_empty() { StartSource::Startup } else { StartSource::Resume };
            let verdict = self.run_hooks(HookInput::SessionStart { source }, cancel, emitter).await?;
            self.hooks.keep_start_notes(verdict.notes_text());
        }
        let mut notes = Vec::new();
        if let Err((hook, reason)) =
            self.user_prompt_hooks(turn, content, &mut notes, cancel, emitter).await?
        {
            // SessionStart's notes wait for the first prompt that starts a turn.
            return Err(TurnErrorKind::HookBlocked { hook, reason, prompt: true });
        }
        if let Some(start) = self.hooks.take_start_notes() {
            notes.insert(0, start);
        }
        if !notes.is_empty() {
            content.push(ContentPart::text(notes.join("\n")));
        }
        Ok(())
    }

    /// `UserPromptSubmit` on a steering message at the safe point: a person's
    /// message entering history, so the same hooks see it as see a turn's
    /// prompt, and their notes join it the same way. `Ok(Err((hook,
    /// reason)))` when a hook blocked it.
    pub(crate) async fn steering_hooks(
        &mut self,
        turn: u64,
        content: &mut Vec<ContentPart>,
        cancel: &CancellationToken,
        emitter: &mut Emitter<'_>,
    ) -> Result<Result<(), (String, String)>, TurnErrorKind> {
        let mut notes = Vec::new();
        if let Err(blocked) = self.user_prompt_hooks(turn, content, &mut notes, cancel, emitter).await? {
            return Ok(Err(blocked));
        }
        if !notes.is_empty() {
            content.push(ContentPart::text(notes.join("\n")));
        }
        Ok(Ok(()))
    }

    /// Runs `UserPromptSubmit` on `content`, when a hook wants it: its notes
    /// added to `notes`, or the first block's hook and reason.
    async fn user_prompt_hooks(
        &mut self,
        turn: u64,
        content: &[ContentPart],
        notes: &mut Vec<String>,
        cancel: &CancellationToken,
        emitter: &mut Emitter<'_>,
    ) -> Result<Result<(), (String, String)>, TurnErrorKind> {
        if !self.hooks_want(HookPoint::UserPromptSubmit) {
            return Ok(Ok(()));
        }
        let prompt = crate::message::concat_text(content);
        let input = HookInput::UserPromptSubmit { turn, prompt };
        let verdict = self.run_hooks(input, cancel, emitter).await?;
        if let Some(blocked) = verdict.block {
            return Ok(Err(blocked));
        }
        notes.extend(verdict.notes_text());
        Ok(Ok(()))
    }

    /// The `Stop` hooks (a child's `SubagentStop`) after a completed turn:
    /// the prompt of the next turn when one blocked, so the agent goes on.
    pub(crate) async fn stop_hooks(
        &mut self,
        turn: u64,
        answer: &str,
        continued: u32,
        cancel: &CancellationToken,
        emitter: &mut Emitter<'_>,
    ) -> Result<Option<String>, TurnErrorKind> {
        if !self.hooks_want(self.hooks.stop_point()) {
            return Ok(None);
        }
        let input = self.hooks.stop(turn, answer.to_owned(), continued > 0);
        let verdict = self.run_hooks(input, cancel, emitter).await?;
        Ok(verdict.block.map(|(hook, reason)| format!("[hook {hook}] {reason}")))
    }
}

impl Session {
    /// `BeforeModel`: a note for this request only, or the turn stopped.
    pub(crate) async fn before_model_hooks(
        &mut self,
        state: &TurnState,
        round: u32,
        emitter: &mut Emitter<'_>,
    ) -> Result<Option<String>, TurnErrorKind> {
        if !self.hooks_want(HookPoint::BeforeModel) {
            return Ok(None);
        }
        let input = HookInput::BeforeModel { turn: state.turn, round };
        let verdict = self.run_hooks(input, &state.cancel, emitter).await?;
        if let Some((hook, reason)) = verdict.block {
            return Err(TurnErrorKind::HookBlocked { hook, reason, prompt: false });
        }
        Ok(verdict.notes_text())
    }

    /// `AfterModel`: sees the response before it is committed; may stop the
    /// turn (the response then never enters history).
    pub(crate) async fn after_model_hooks(
        &mut self,
        state: &TurnState,
        round: u32,
        response: &ModelResponse,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        if !self.hooks_want(HookPoint::AfterModel) {
            return Ok(());
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for part in &response.content {
            match part {
                ResponsePart::ToolCall { name, .. }
                | ResponsePart::Content(ContentPart::ToolCall { name, .. }) => tool_calls.push(name.clone()),
                ResponsePart::Content(ContentPart::Text { text: more }) => text.push_str(more),
                ResponsePart::Content(_) => {}
            }
        }
        let input =
            HookInput::AfterModel { turn: state.turn, round, text, tool_calls, usage: response.usage };
        let verdict = self.run_hooks(input, &state.cancel, emitter).await?;
        match verdict.block {
            Some((hook, reason)) => Err(TurnErrorKind::HookBlocked { hook, reason, prompt: false }),
            None => Ok(()),
        }
    }
}
