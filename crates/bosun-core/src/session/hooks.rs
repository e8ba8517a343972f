//! [`Hooks`]: the session's hooks, with what the session remembers of
//! asking them (`hooking.rs` asks them at the points of a turn).

use crate::hooks::{HookInput, HookPoint, HookSet};

/// The session's hooks and what the session remembers of asking them.
pub(crate) struct Hooks {
    /// The embedder's hooks, each with its own switch.
    set: HookSet,
    /// A delegated child: `SubagentStop` in place of `Stop`.
    child: bool,
    /// Whether this session object ran its `SessionStart` hooks.
    started: bool,
    /// `SessionStart`'s notes, until a turn starts with them.
    start_notes: Option<String>,
}

impl Hooks {
    pub(crate) fn new(set: HookSet, child: bool) -> Self {
        Self { set, child, started: false, start_notes: None }
    }

    /// The hooks to run, and to show the turn's events to.
    pub(crate) fn set(&self) -> &HookSet {
        &self.set
    }

    /// Whether a hook still on wants `point`.
    pub(crate) fn want(&self, point: HookPoint) -> bool {
        !self.set.is_empty() && self.set.wants(point)
    }

    /// The point asked when the agent answered: a child's hooks are asked
    /// at `SubagentStop`.
    pub(crate) fn stop_point(&self) -> HookPoint {
        if self.child { HookPoint::SubagentStop } else { HookPoint::Stop }
    }

    /// The input at [`Hooks::stop_point`].
    pub(crate) fn stop(&self, turn: u64, answer: String, stop_hook_active: bool) -> HookInput {
        if self.child {
            HookInput::SubagentStop { turn, answer, stop_hook_active }
        } else {
            HookInput::Stop { turn, answer, stop_hook_active }
        }
    }

    /// True the first time only: `SessionStart` is asked once per session
    /// object.
    pub(crate) fn first_start(&mut self) -> bool {
        !std::mem::replace(&mut self.started, true)
    }

    /// `SessionStart`'s notes, kept until a turn starts with them.
    pub(crate) fn keep_start_notes(&mut self, notes: Option<String>) {
        self.start_notes = notes;
    }

    pub(crate) fn take_start_notes(&mut self) -> Option<String> {
        self.start_notes.take()
    }
}
