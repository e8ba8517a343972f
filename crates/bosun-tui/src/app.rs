//! [`App`]: everything the UI knows, changed only by messages from the CLI
//! ([`App::handle`]), keys ([`App::key_at`]), pastes and time
//! ([`App::tick`]). The time is always passed in, so tests need no sleeps.
//!
//! Finished output (an answer's completed blocks, a tool's outcome,
//! notices) leaves the live area as lines, already wrapped to the width,
//! through [`App::take_scrollback`]; the driver prints them above the
//! viewport, into the terminal's own scrollback.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bosun_core::CallId;
use ratatui::text::{Line, Span};
use tokio::sync::oneshot;

use crate::history::History;
use crate::input::Editor;
use crate::modal::{self, Modal};
use crate::pager::{Outputs, Pager};
use crate::protocol::{NoticeKind, Options, Queued, QueuedKind, SlashCommand, Status, ToUi};
use crate::search::Search;
use crate::text::{clean, lines, wrap, wrap_all};
use crate::theme::Theme;

/// How long after a Ctrl+C a second one quits.
pub(crate) const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// How long after an Esc on an empty editor a second one edits the
/// previous message.
pub(crate) const DOUBLE_ESC: Duration = Duration::from_secs(2);

/// A tool call being shown in the live area.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) id: CallId,
    pub(crate) name: String,
    /// The argument worth showing, sanitised, one line.
    pub(crate) summary: String,
    pub(crate) proposed: Instant,
    pub(crate) started: Option<Instant>,
    pub(crate) progress: Option<String>,
    /// The newest lines of its output while it runs (raw: cleaned when
    /// drawn), and how many it wrote.
    pub(crate) tail: Vec<String>,
    pub(crate) lines: u64,
    pub(crate) waiting_approval: bool,
    /// Why it was refused, when it was.
    pub(crate) denied: Option<String>,
}

/// The interactive UI's state.
pub struct App {
    pub(crate) theme: Theme,
    pub(crate) status: Status,
    pub(crate) paths: Vec<String>,
    pub(crate) commands: Vec<SlashCommand>,
    pub(crate) notify: crate::protocol::Notify,
    /// Whether the terminal has focus, as it last reported (`notify.rs`).
    pub(crate) focused: bool,
    /// A notification to write, from the last message handled.
    pub(crate) notification: Option<String>,
    pub(crate) show_reasoning: bool,
    pub(crate) width: u16,
    pub(crate) height: u16,
    pub(crate) now: Instant,
    pub(crate) busy: Option<Instant>,
    pub(crate) editor: Editor,
    pub(crate) history: History,
    /// The completion popup's choice, and whether Esc closed it (until the
    /// text changes).
    pub(crate) completion_selected: usize,
    pub(crate) completion_dismissed: bool,
    pub(crate) queue: Vec<Queued>,
    /// Sent as steer or follow-up, not yet in the library's queue.
    pub(crate) sending: Vec<(QueuedKind, String)>,
    /// The answer's text not yet in the scrollback.
    pub(crate) answer: String,
    /// Blocks of this answer already went to the scrollback.
    pub(crate) answer_started: bool,
    pub(crate) reasoning: String,
    pub(crate) calls: Vec<Running>,
    /// The whole results of the last calls, for the pager (Ctrl+O).
    pub(crate) outputs: Outputs,
    /// The pager, when open.
    pub(crate) pager: Option<Pager>,
    /// The history search, while Ctrl+R runs one.
    pub(crate) search: Option<Search>,
    pub(crate) scrollback: Vec<Line<'static>>,
    pub(crate) modals: VecDeque<Modal>,
    pub(crate) last_ctrl_c: Option<Instant>,
    /// An Esc on an empty editor while idle: a second one soon after edits
    /// the previous message.
    pub(crate) last_esc: Option<Instant>,
    /// The turn whose message the editor holds for editing (Esc Esc).
    pub(crate) editing: Option<u64>,
    pub(crate) exit: bool,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("busy", &self.busy.is_some())
            .field("input", &self.editor.text())
            .field("calls", &self.calls.len())
            .field("modals", &self.modals.len())
            .finish_non_exhaustive()
    }
}

impl App {
    /// A UI 80 by 24 at `Instant::now()`, history loaded from the options'
    /// file.
    pub fn new(options: Options) -> Self {
        Self {
            theme: Theme::new(options.color, options.dark),
            status: options.status,
            paths: options.paths,
            commands: options.commands,
            notify: options.notify,
            focused: true,
            notification: None,
            show_reasoning: options.show_reasoning,
            width: 80,
            height: 24,
            now: Instant::now(),
            busy: None,
            editor: Editor::default(),
            history: History::load(options.history_file),
            completion_selected: 0,
            completion_dismissed: false,
            queue: Vec::new(),
            sending: Vec::new(),
            answer: String::new(),
            answer_started: false,
            reasoning: String::new(),
            calls: Vec::new(),
            outputs: Outputs::default(),
            pager: None,
            search: None,
            scrollback: Vec::new(),
            modals: VecDeque::new(),
            last_ctrl_c: None,
            last_esc: None,
            editing: None,
            exit: false,
        }
    }

    /// The terminal's size; later scrollback wraps to the new width.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.width = width.max(1);
        self.height = height.max(1);
    }

    /// Whether the UI is done (Exit sent or received).
    pub fn exited(&self) -> bool {
        self.exit
    }

    /// Whether something on screen moves with time (a spinner, a clock), so
    /// the driver ticks; otherwise it waits for input with no timer.
    pub fn animating(&self) -> bool {
        self.busy.is_some() || !self.calls.is_empty()
    }

    /// The time has moved on (the spinner and the clocks follow).
    pub fn tick(&mut self, now: Instant) {
        self.now = now;
    }

    /// The text being edited.
    pub fn input(&self) -> &str {
        self.editor.text()
    }

    /// The lines finished since the last call, wrapped to the width.
    pub fn take_scrollback(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.scrollback)
    }

    /// A message from the CLI.
    pub fn handle(&mut self, message: ToUi) {
        match message {
            ToUi::Event(event) => self.event(event),
            ToUi::Approval { request, diff, reply } => {
                self.notify(&format!("bosun: approval needed for {}", request.tool));
                self.ask(modal::Call::from(&request), diff, reply)
            }
            ToUi::Status(status) => self.status = status,
            ToUi::Busy(busy) => {
                if busy {
                    self.busy.get_or_insert(self.now);
                } else {
                    if self.busy.is_some() {
                        self.notify("bosun: the turn is done");
                    }
                    self.busy = None;
                    self.finish_output();
                    self.sending.clear();
                    for call in std::mem::take(&mut self.calls) {
                        let name = clean(&call.name);
                        self.push_line(Line::from(Span::styled(
                            format!("· {name} not finished"),
                            self.theme.dim(),
                        )));
                    }
                }
            }
            ToUi::Queue(queue) => {
                self.sending.retain(|(kind, text)| !queue.iter().any(|q| q.kind == *kind && q.text == *text));
                self.queue = queue;
            }
            ToUi::Notice { text, kind } => {
                self.finish_output();
                let style = match kind {
                    NoticeKind::Info => ratatui::style::Style::new(),
                    NoticeKind::Warning => self.theme.yellow(),
                    _ => self.theme.red(),
                };
                let shown: Vec<Line<'static>> =
                    lines(&text).map(|l| Line::from(Span::styled(clean(l), style))).collect();
                self.push_lines(shown);
            }
            ToUi::Paths(paths) => self.paths = paths,
            ToUi::Diff(diff) => {
                self.finish_output();
                self.push_lines(crate::diff::diff_lines(&diff, self.theme));
            }
            ToUi::Picker { title, items, reply } => {
                self.modals.push_back(Modal::new(modal::Kind::Picker(modal::Picker {
                    title,
                    items,
                    selected: 0,
                    reply: Some(reply),
                })))
            }
            ToUi::Edit { turn, text } => {
                self.editor.set(&text);
                self.edited();
                self.editing = Some(turn);
                self.last_esc = None;
            }
            ToUi::Unsent(text) => {
                self.sending.retain(|(_, sent)| *sent != text);
                if self.editor.is_empty() {
                    self.editor.set(&text);
                    self.edited();
                }
            }
            ToUi::Confirm { title, body, reply } => {
                self.modals.push_back(Modal::new(modal::Kind::Confirm(modal::Confirm {
                    title,
                    body,
                    reply: Some(reply),
                })))
            }
            ToUi::Exit => {
                self.finish_output();
                self.exit = true;
            }
        }
    }

    /// Whether the modal in front is an approval.
    pub(crate) fn asks_approval(&self) -> bool {
        self.modals.front().is_some_and(|modal| matches!(modal.kind, modal::Kind::Approval(_)))
    }

    /// Queues an approval modal for `call` (what `ToUi::Approval` does;
    /// here apart because a request cannot be built outside the core).
    pub(crate) fn ask(
        &mut self,
        call: modal::Call,
        diff: Option<String>,
        reply: oneshot::Sender<bosun_core::ApprovalDecision>,
    ) {
        self.modals.push_back(Modal::new(modal::Kind::Approval(modal::Approval {
            call,
            diff,
            reply: Some(reply),
            reason: None,
        })));
    }

    /// A paste (bracketed): into the editor, or into a reason being typed.
    pub fn paste(&mut self, text: String) {
        if let Some(modal::Kind::Approval(a)) = self.modals.front_mut().map(|m| &mut m.kind) {
            if let Some(typed) = &mut a.reason {
                typed.push_str(&text.replace(['\r', '\n'], " "));
            }
            return;
        }
        if !self.modals.is_empty() || self.pager.is_some() {
            return;
        }
        if self.search.is_some() {
            self.search_type(&text);
            return;
        }
        self.editor.paste(&text);
        self.edited();
    }

    /// The text changed: the completion popup opens again, browsing ends.
    pub(crate) fn edited(&mut self) {
        self.completion_dismissed = false;
        self.completion_selected = 0;
        self.history.reset();
    }

    pub(crate) fn push_lines(&mut self, lines: Vec<Line<'static>>) {
        let width = usize::from(self.width);
        self.scrollback.extend(wrap_all(lines, width));
    }

    pub(crate) fn push_line(&mut self, line: Line<'static>) {
        let width = usize::from(self.width);
        self.scrollback.extend(wrap(line, width, &[Span::raw("  ")]));
    }

    /// Everything streaming is finished: the reasoning and the answer go
    /// to the scrollback whole.
    pub(crate) fn finish_output(&mut self) {
        self.finish_reasoning();
        if !self.answer.trim().is_empty() {
            let answer = std::mem::take(&mut self.answer);
            self.commit_answer(&answer);
        }
        self.answer.clear();
        if self.answer_started {
            self.scrollback.push(Line::default());
        }
        self.answer_started = false;
    }

    pub(crate) fn commit_answer(&mut self, text: &str) {
        let rendered = crate::markdown::render(text, self.theme, usize::from(self.width));
        if rendered.is_empty() {
            return;
        }
        if self.answer_started {
            self.scrollback.push(Line::default());
        }
        self.answer_started = true;
        self.scrollback.extend(rendered);
    }

    /// The reasoning, as the scrollback keeps it: whole and dimmed when
    /// shown, else one line.
    pub(crate) fn finish_reasoning(&mut self) {
        if self.reasoning.trim().is_empty() {
            self.reasoning.clear();
            return;
        }
        let reasoning = std::mem::take(&mut self.reasoning);
        let lines = self.reasoning_lines(&reasoning, true);
        self.push_lines(lines);
    }

    /// Reasoning as lines: all of it when shown, else one summary line
    /// (`done`: it is over, so "thought" rather than "thinking…").
    pub(crate) fn reasoning_lines(&self, reasoning: &str, done: bool) -> Vec<Line<'static>> {
        let dim = self.theme.dim().patch(self.theme.italic());
        if self.show_reasoning {
            return lines(reasoning.trim()).map(|l| Line::from(Span::styled(clean(l), dim))).collect();
        }
        let words = reasoning.split_whitespace().count();
        let first = reasoning.trim().lines().next().unwrap_or_default();
        let head = if done { "thought" } else { "thinking…" };
        let width = usize::from(self.width).saturating_sub(30).max(10);
        let first = crate::text::truncate(&clean(first), width);
        vec![Line::from(Span::styled(format!("{head} {words} words · {first} (ctrl+t shows)"), dim))]
    }
}
