//! Holding a model to its task: a first look when the prompt is about the
//! workspace, a call again after a failed one, and no answer before what
//! was asked happened: a change written, a program run.
//!
//! Small local models end too early (measured on the local task suite,
//! docs/benchmarks.md): after a failed `edit_file` they explain the error
//! instead of retrying, after reading a file they answer as if the change
//! were made, and they answer from a script's text what running it prints.
//! The rules do not trust the model's claim: they read the prompt for what
//! is asked (`crate::intent`) and the turn's results for what happened,
//! and make the next round a required call, with a note saying why, while
//! their bounds allow. A note goes with one request only and is never
//! stored, so history and the journal are what the model did.
//!
//! Off unless the session is built with [`Persistence`] rules: a hosted
//! model keeps its own judgment.

use crate::intent::{Intent, intent, refers_to_workspace};
use crate::message::{ContentPart, Message};
use crate::model::ToolChoice;
use crate::tool::ToolCategory;

/// How hard a turn holds the model to its task; [`Persistence::off`] (the
/// default) leaves every decision to the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Persistence {
    /// The first round must be a call when the prompt is about the
    /// workspace (`crate::intent::refers_to_workspace`) and the session did
    /// not read what it names already: a small model otherwise answers from
    /// invention. A prompt about nothing there ("What is 17 times 23?") is
    /// answered freely.
    pub look_first: bool,
    /// Rounds in a row that must be calls after a round whose calls failed
    /// (not counting a first look that missed, in a turn that asks only for
    /// an answer: the model did not choose that call).
    pub retries_after_failure: u32,
    /// Rounds that must be calls while a change asked for was not written,
    /// or a run asked for did not run.
    pub unfinished_rounds: u32,
}

impl Persistence {
    /// No rules: the model decides when the turn ends.
    pub const fn off() -> Self {
        Self { look_first: false, retries_after_failure: 0, unfinished_rounds: 0 }
    }

    /// The rules measured on the local task suite for small local models:
    /// a first look, two retries after a failure, three pushes toward what
    /// was asked.
    pub const fn for_small_models() -> Self {
        Self { look_first: true, retries_after_failure: 2, unfinished_rounds: 3 }
    }

    /// These rules with the first look on or off.
    pub const fn with_look_first(mut self, look: bool) -> Self {
        self.look_first = look;
        self
    }
}

pub(crate) const RETRY_NOTE: &str = "[bosun] The last tool call failed. Read its error above, then call a tool \
again with corrected arguments (read the file first if the text to replace was not exact).";

pub(crate) const CHANGE_NOTE: &str = "[bosun] Nothing has been changed yet, and the task asks for a change. \
Make it now with a tool call (edit_file to change a file you have read, write_file to create one).";

pub(crate) const RUN_NOTE: &str = "[bosun] Nothing has been run yet, and the task asks for a run. Run it now \
with the shell tool; answer from its output.";

/// A round the rules require to be a call ([`ToolChoice::Required`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Required {
    /// Said to the model at the end of the request, for this round only.
    pub(crate) note: Option<&'static str>,
}

impl Required {
    pub(crate) const CHOICE: ToolChoice = ToolChoice::Required;
}

/// One turn's view of its progress.
#[derive(Debug)]
pub(crate) struct Progress {
    intent: Intent,
    about_workspace: bool,
    /// A call that writes or runs succeeded.
    acted: bool,
    /// A call that runs succeeded.
    ran: bool,
    /// The last batch had a failed call that counts.
    last_failed: bool,
    /// The round being played is the first look.
    looking: bool,
    /// Required rounds spent on the current run of failures.
    retries: u32,
    /// Required rounds spent pushing toward what was asked.
    pushes: u32,
}

impl Progress {
    pub(crate) fn new(prompt: &[ContentPart]) -> Self {
        let text = crate::message::text_lines(prompt);
        Self {
            intent: intent(&text),
            about_workspace: refers_to_workspace(&text),
            acted: false,
            ran: false,
            last_failed: false,
            looking: false,
            retries: 0,
            pushes: 0,
        }
    }

    /// Takes in a batch's results; `category` names a tool's category.
    pub(crate) fn observe(&mut self, results: &[Message], category: impl Fn(&str) -> Option<ToolCategory>) {
        let mut failed = false;
        for result in results {
            if let Message::ToolResult { tool_name, is_error, content, .. } = result {
                match (is_error, category(tool_name)) {
                    // A program that ran and exited non-zero ran: its output
                    // is the answer to a run, and no call to retry.
                    (_, Some(ToolCategory::Execute)) if !is_error || reports_exit_code(content) => {
                        (self.acted, self.ran) = (true, true);
                    }
                    (true, _) => failed = true,
                    (false, Some(ToolCategory::Write)) => self.acted = true,
                    _ => {}
                }
            }
        }
        let looked = std::mem::take(&mut self.looking);
        if looked && self.intent == Intent::Answer {
            failed = false;
        }
        if !failed {
            self.retries = 0;
        }
        self.last_failed = failed;
    }

    /// Whether the rules require round `round` to be a call, and the note
    /// that says why (none on the first round: the prompt says it).
    /// `opened`: the session read the files the prompt names already.
    pub(crate) fn next_round(&mut self, rules: &Persistence, round: u32, opened: bool) -> Option<Required> {
        if round > 1 && self.last_failed && self.retries < rules.retries_after_failure {
            self.retries += 1;
            return Some(Required { note: Some(RETRY_NOTE) });
        }
        if let Some(note) = self.unfinished_note()
            && self.pushes < rules.unfinished_rounds
        {
            self.pushes += 1;
            return Some(Required { note: (round > 1).then_some(note) });
        }
        if round == 1 && rules.look_first && self.about_workspace && !opened {
            self.looking = true;
            return Some(Required { note: None });
        }
        None
    }

    /// What is still to do, as the note that says so.
    fn unfinished_note(&self) -> Option<&'static str> {
        match self.intent {
            Intent::Change if !self.acted => Some(CHANGE_NOTE),
            Intent::Run if !self.ran => Some(RUN_NOTE),
            _ => None,
        }
    }

    /// The prompt asked for a change and no call that writes or runs
    /// succeeded.
    pub(crate) fn unfinished_change(&self) -> bool {
        self.intent == Intent::Change && !self.acted
    }
}

/// Whether a result of a program's run opens with its exit code, as bosun's
/// shell tool's results do (`exit code: N`, then the output), failed or not.
fn reports_exit_code(content: &[ContentPart]) -> bool {
    matches!(content.first(), Some(ContentPart::Text { text }) if text.starts_with("exit code: "))
}

/// Adds `note` to the end of a request's messages: to the last tool result
/// (what the note is about) or, failing that, the latest user message.
pub(crate) fn add_closing_note(messages: &mut [Message], note: &str) {
    match messages.last_mut() {
        Some(Message::ToolResult { content, .. }) => content.push(ContentPart::text(note.to_owned())),
        _ => add_request_note(messages, note),
    }
}

/// Adds `note` to the latest user message of a request's messages (a
/// `BeforeModel` note: sent once, never stored).
pub(crate) fn add_request_note(messages: &mut [Message], note: &str) {
    if let Some(Message::User { content }) =
        messages.iter_mut().rev().find(|message| matches!(message, Message::User { .. }))
    {
        content.push(ContentPart::text(note.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, is_error: bool) -> Message {
        Message::tool_result(crate::message::CallId::new_v7(), name, "r", is_error)
    }

    fn category(name: &str) -> Option<ToolCategory> {
        match name {
            "read_file" => Some(ToolCategory::Read),
            "edit_file" => Some(ToolCategory::Write),
            "shell" => Some(ToolCategory::Execute),
            _ => None,
        }
    }

    fn progress(prompt: &str) -> Progress {
        Progress::new(&[ContentPart::text(prompt)])
    }

    const LOOK: Option<Required> = Some(Required { note: None });

    #[test]
    fn a_failed_call_is_retried_within_its_bound_and_a_success_resets_it() {
        let rules = Persistence::for_small_models().with_look_first(false);
        let mut progress = progress("What is in notes.txt?");
        let retry = Some(Required { note: Some(RETRY_NOTE) });
        assert_eq!(progress.next_round(&rules, 1, false), None, "nothing failed yet, and a question");
        progress.observe(&[result("read_file", true)], category);
        assert_eq!(progress.next_round(&rules, 2, false), retry);
        progress.observe(&[result("read_file", true)], category);
        assert_eq!(progress.next_round(&rules, 3, false), retry);
        progress.observe(&[result("read_file", true)], category);
        assert_eq!(progress.next_round(&rules, 4, false), None, "two retries, then the model may answer");
        progress.observe(&[result("read_file", false)], category);
        progress.observe(&[result("read_file", true)], category);
        assert_eq!(progress.next_round(&rules, 6, false), retry, "a success resets the count");
        assert_eq!(Progress::new(&[]).next_round(&Persistence::off(), 2, false), None);
    }

    #[test]
    fn a_first_look_comes_only_for_the_workspace_and_its_miss_is_forgiven() {
        let rules = Persistence::for_small_models();
        let mut about = progress("How many replicas does deploy.yaml ask for?");
        assert_eq!(about.next_round(&rules, 1, false), LOOK);
        about.observe(&[result("read_file", true)], category);
        assert_eq!(about.next_round(&rules, 2, false), None, "the look missed; the model may say so");
        assert_eq!(progress("How many replicas does deploy.yaml ask for?").next_round(&rules, 1, true), None);
        assert_eq!(progress("What is 17 times 23?").next_round(&rules, 1, false), None);
        let mut change = progress("Fix the typo in run.sh.");
        assert_eq!(change.next_round(&rules, 1, true), LOOK, "a change calls even after the opening reads");
        change.observe(&[result("edit_file", true)], category);
        assert_eq!(change.next_round(&rules, 2, true).and_then(|r| r.note), Some(RETRY_NOTE));
    }

    #[test]
    fn a_change_turn_is_pushed_until_a_write_succeeds_or_the_bound() {
        let rules = Persistence::for_small_models();
        let mut progress = progress("Fix the typo in run.sh.");
        assert_eq!(progress.next_round(&rules, 1, false), LOOK, "the first round calls");
        progress.observe(&[result("read_file", false)], category);
        for round in 2..4 {
            assert_eq!(progress.next_round(&rules, round, false), Some(Required { note: Some(CHANGE_NOTE) }));
        }
        assert_eq!(progress.next_round(&rules, 4, false), None, "three pushes at most");
        assert!(progress.unfinished_change());
        progress.observe(&[result("edit_file", false)], category);
        assert!(!progress.unfinished_change());

        let mut off = self::progress("Fix the typo in run.sh.");
        assert_eq!(off.next_round(&Persistence::off(), 1, false), None, "no rules, no pushes");
    }

    #[test]
    fn a_run_turn_is_pushed_until_something_ran() {
        let rules = Persistence::for_small_models();
        let mut progress = progress("What does greet.sh print when it runs?");
        assert_eq!(progress.next_round(&rules, 1, true), LOOK);
        progress.observe(&[result("read_file", false)], category);
        assert_eq!(progress.next_round(&rules, 2, true), Some(Required { note: Some(RUN_NOTE) }));
        let exited =
            Message::tool_result(crate::message::CallId::new_v7(), "shell", "exit code: 1\nboom", true);
        progress.observe(&[exited], category);
        assert_eq!(progress.next_round(&rules, 3, true), None, "a run that exited 1 ran, and is no failure");
        assert!(!progress.unfinished_change(), "a run is no change");
        let mut refused = self::progress("Run build.sh.");
        refused.observe(&[result("shell", true)], category);
        assert_eq!(refused.next_round(&rules, 2, false).and_then(|r| r.note), Some(RETRY_NOTE));
    }

    #[test]
    fn the_note_goes_after_the_last_result() {
        let mut messages = vec![Message::user("Fix it."), result("read_file", false)];
        add_closing_note(&mut messages, CHANGE_NOTE);
        let Message::ToolResult { content, .. } = &messages[1] else { unreachable!() };
        assert_eq!(content.last(), Some(&ContentPart::text(CHANGE_NOTE)));
        let mut messages = vec![Message::user("Fix it.")];
        add_closing_note(&mut messages, RETRY_NOTE);
        let Message::User { content } = &messages[0] else { unreachable!() };
        assert_eq!(content.last(), Some(&ContentPart::text(RETRY_NOTE)));
    }
}
