//! What the CLI and the UI say to each other: [`ToUi`] in, [`FromUi`] out,
//! and the [`Options`] the UI starts with.

use std::path::PathBuf;

use tokio::sync::oneshot;

/// How the UI starts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The status line's first content.
    pub status: Status,
    /// Colours at all; false under `NO_COLOR` (bold, dim and reverse stay).
    pub color: bool,
    /// Whether the terminal's background is dark, when known. `None`: a
    /// guess from `COLORFGBG`, and only named ANSI colours either way.
    pub dark: Option<bool>,
    /// Where Up/Down history is kept: JSON lines, one per submit.
    pub history_file: Option<PathBuf>,
    /// Workspace-relative paths offered after `@`.
    pub paths: Vec<String>,
    /// Slash commands offered after `/` and listed by `/help`.
    pub commands: Vec<SlashCommand>,
    /// Reasoning shown whole rather than as one dimmed line (Ctrl+T toggles).
    pub show_reasoning: bool,
    /// A message sent as if typed and entered once the UI is up
    /// (`bosun "PROMPT"`).
    pub first_message: Option<String>,
    /// How a turn's end or a waiting approval is told while the terminal
    /// is not focused.
    pub notify: Notify,
}

/// How the person is told, while the terminal is not focused, that a turn
/// ended or an approval waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notify {
    /// Not at all.
    Off,
    /// The terminal bell.
    #[default]
    Bell,
    /// A desktop notification through the terminal (OSC 9).
    Osc9,
}

impl Notify {
    /// The setting's value by name: `bell`, `osc9` or `off`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "bell" => Some(Self::Bell),
            "osc9" => Some(Self::Osc9),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

impl Options {
    /// Colour on, no history file, no completions, reasoning collapsed.
    pub fn new(status: Status) -> Self {
        Self {
            status,
            color: true,
            dark: None,
            history_file: None,
            paths: Vec::new(),
            commands: Vec::new(),
            show_reasoning: false,
            first_message: None,
            notify: Notify::default(),
        }
    }
}

/// What the status line shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The model's name.
    pub model: String,
    /// The permission mode, as shown (`propose`, `write`, …).
    pub mode: String,
    /// The session's id (shown by its end).
    pub session_id: String,
    /// Tokens of the context in use, and the window.
    pub context_used: Option<(u64, u64)>,
    /// Tokens used by the session so far.
    pub tokens: u64,
    /// What the session cost so far, in millionths of a dollar, when known.
    pub cost_micros: Option<u64>,
}

impl Status {
    /// A status with only the model, mode and session known.
    pub fn new(model: impl Into<String>, mode: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self { model: model.into(), mode: mode.into(), session_id: session_id.into(), ..Self::default() }
    }
}

/// A slash command the CLI answers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlashCommand {
    /// Its name, without the `/`.
    pub name: String,
    /// One line of help.
    pub help: String,
}

impl SlashCommand {
    /// A command and its help line.
    pub fn new(name: impl Into<String>, help: impl Into<String>) -> Self {
        Self { name: name.into(), help: help.into() }
    }
}

/// A message the library holds for the running turn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Queued {
    /// The library's id for it.
    pub id: u64,
    /// When it is delivered.
    pub kind: QueuedKind,
    /// Its text.
    pub text: String,
}

impl Queued {
    /// A queued message.
    pub fn new(id: u64, kind: QueuedKind, text: impl Into<String>) -> Self {
        Self { id, kind, text: text.into() }
    }
}

/// When a queued message reaches the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueuedKind {
    /// At the next model round of the running turn.
    Steer,
    /// As the next turn, after this one.
    FollowUp,
}

/// One choice in a picker.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PickItem {
    /// What the reply carries.
    pub id: String,
    /// What is shown (untrusted: sanitised when shown).
    pub label: String,
}

impl PickItem {
    /// A choice.
    pub fn new(id: impl Into<String>, label: impl Into<String>) -> Self {
        Self { id: id.into(), label: label.into() }
    }
}

/// How a notice is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoticeKind {
    /// Plain.
    Info,
    /// Yellow.
    Warning,
    /// Red.
    Error,
}

/// What the CLI sends the UI.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToUi {
    /// A session event (sub-agents' too), as an exec sink sees it.
    Event(bosun_core::Event),
    /// A call to approve; the answer goes on `reply` (a dropped reply is
    /// the CLI's business).
    Approval {
        /// The call.
        request: bosun_core::ApprovalRequest,
        /// The change as a unified diff, when the CLI could compute it.
        diff: Option<String>,
        /// Where the decision goes.
        reply: oneshot::Sender<bosun_core::ApprovalDecision>,
    },
    /// The status line's new content.
    Status(Status),
    /// A turn is running, or not.
    Busy(bool),
    /// The library's pending messages, replacing those shown.
    Queue(Vec<Queued>),
    /// Text for the scrollback: a command's output, an error, a warning.
    Notice {
        /// The text (sanitised here).
        text: String,
        /// How it is shown.
        kind: NoticeKind,
    },
    /// A unified diff for the scrollback (`/diff`).
    Diff(String),
    /// The workspace's files offered after `@` now (a turn may have made
    /// some), replacing [`Options::paths`].
    Paths(Vec<String>),
    /// A choice to make (`/resume`); Esc replies `None`.
    Picker {
        /// What is chosen.
        title: String,
        /// The choices.
        items: Vec<PickItem>,
        /// The chosen item's id.
        reply: oneshot::Sender<Option<String>>,
    },
    /// A previous message to edit (Esc Esc): its text goes into the
    /// editor, and sending it comes back as [`FromUi::Resend`] for `turn`
    /// (clearing the editor gives the edit up).
    Edit {
        /// The turn the message started.
        turn: u64,
        /// Its text.
        text: String,
    },
    /// A message that was not sent (an attachment refused): its text goes
    /// back into the editor to be changed, unless something new is there.
    Unsent(String),
    /// A yes/no question.
    Confirm {
        /// The question.
        title: String,
        /// What it is about.
        body: String,
        /// The answer.
        reply: oneshot::Sender<bool>,
    },
    /// Stop the UI.
    Exit,
}

/// What the UI sends the CLI.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FromUi {
    /// A message, while idle (may hold `@path` tokens).
    Submit(String),
    /// A message for the running turn's next round.
    Steer(String),
    /// A message for after the running turn.
    FollowUp(String),
    /// The queued message `id` was taken back into the editor.
    Unqueue(u64),
    /// Stop the running turn.
    Cancel,
    /// `!cmd`: a shell command, without the `!`.
    Shell(String),
    /// Esc twice on an empty editor while idle: edit the previous message.
    EditPrevious,
    /// Shift+Tab: the next permission mode.
    CycleMode,
    /// The message of `turn`, edited ([`ToUi::Edit`]): continue from before
    /// that turn with this text instead.
    Resend {
        /// The turn whose message it replaces.
        turn: u64,
        /// The new text.
        text: String,
    },
    /// `/name args`, known or not.
    Command {
        /// The name, without the `/`.
        name: String,
        /// The rest of the line, trimmed.
        args: String,
    },
    /// Quit.
    Exit,
}
