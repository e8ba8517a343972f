//! Keys: to the modal when one is open, to the completion popup when it
//! is, else to the editor; what they mean may depend on whether a turn
//! runs. The key table is [`KEYS`], which `/help` prints.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::text::{Line, Span};

use crate::app::{App, DOUBLE_CTRL_C, DOUBLE_ESC};
use crate::input::{Completion, accept, complete};
use crate::modal::Outcome;
use crate::protocol::{FromUi, QueuedKind};
use crate::text::clean_line;

/// The keys, as `/help` lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("enter", "send (while a turn runs: steer it)"),
    ("tab", "while a turn runs: queue as a follow-up; else complete"),
    ("shift+enter, alt+enter, ctrl+j", "new line"),
    ("esc", "while a turn runs: cancel it (the text stays)"),
    ("esc esc", "on empty input: edit your previous message (sent, it goes on as a new branch)"),
    ("ctrl+c", "cancel the turn, or clear the text; twice within 2 s quits"),
    ("ctrl+d", "quit, on empty input"),
    ("up / down", "history (on the first / last line); up on empty input takes back a queued message"),
    ("alt+up", "take back the last queued message"),
    ("shift+tab", "while idle: the next mode (read-only → propose → write)"),
    ("ctrl+t", "show or hide the model's reasoning"),
    ("ctrl+o", "the whole output of the last tool call (←/→ other calls, q closes)"),
    ("ctrl+r", "search the history (again: older; enter takes it, esc gives up)"),
    ("ctrl+a / ctrl+e, home / end", "start / end of the line"),
    ("alt+left / alt+right", "word back / forward"),
    ("ctrl+u / ctrl+k / ctrl+w", "delete to line start / to line end / the word before"),
    ("@path, /command, !command", "attach a file, run a command, run a shell command"),
    ("pgup / pgdn", "scroll a prompt"),
];

impl App {
    /// A key at `Instant::now()`.
    pub fn key(&mut self, key: KeyEvent) -> Vec<FromUi> {
        self.key_at(key, Instant::now())
    }

    /// A key pressed at `now`; what to send the CLI.
    pub fn key_at(&mut self, key: KeyEvent, now: Instant) -> Vec<FromUi> {
        self.tick(now);
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c(now);
        }
        if let Some(modal) = self.modals.front_mut() {
            let page = usize::from(self.height.saturating_sub(6)).max(1);
            if modal.key(key, page) == Outcome::Done {
                self.modals.pop_front();
            }
            return Vec::new();
        }
        if self.pager.is_some() {
            self.pager_key(key);
            return Vec::new();
        }
        if self.search.is_some() {
            return self.search_key(key);
        }
        if let Some(completion) = self.completion()
            && let Some(out) = self.completion_key(key, &completion)
        {
            return out;
        }
        self.editor_key(key)
    }

    /// The popup's candidates, unless Esc closed it.
    pub(crate) fn completion(&self) -> Option<Completion> {
        if self.completion_dismissed || self.search.is_some() {
            return None;
        }
        complete(&self.editor, &self.paths, &self.commands)
    }

    /// A key for the popup; `None` passes it on to the editor.
    fn completion_key(&mut self, key: KeyEvent, completion: &Completion) -> Option<Vec<FromUi>> {
        let last = completion.items.len().saturating_sub(1);
        match key.code {
            KeyCode::Up => self.completion_selected = self.completion_selected.saturating_sub(1),
            KeyCode::Down => self.completion_selected = (self.completion_selected + 1).min(last),
            KeyCode::Tab | KeyCode::Enter if key.modifiers.is_empty() => {
                let choice = completion.items.get(self.completion_selected.min(last))?.0.clone();
                accept(&mut self.editor, completion, &choice);
                self.edited();
            }
            KeyCode::Esc => self.completion_dismissed = true,
            _ => return None,
        }
        Some(Vec::new())
    }

    fn ctrl_c(&mut self, now: Instant) -> Vec<FromUi> {
        // Ctrl+C in the pager or a search only leaves it.
        if self.modals.is_empty() && (self.pager.take().is_some() || self.search.take().is_some()) {
            return Vec::new();
        }
        let again = self.last_ctrl_c.is_some_and(|at| now.saturating_duration_since(at) <= DOUBLE_CTRL_C);
        if again {
            self.exit = true;
            return vec![FromUi::Exit];
        }
        self.last_ctrl_c = Some(now);
        // A Ctrl+C answers every prompt waiting, as Esc would.
        for mut modal in self.modals.drain(..) {
            modal.dismiss();
        }
        if self.busy.is_some() {
            return vec![FromUi::Cancel];
        }
        self.editor.clear();
        self.edited();
        self.editing = None;
        Vec::new()
    }

    /// Esc on an empty editor while idle: the second within
    /// [`DOUBLE_ESC`] asks for the previous message to edit.
    fn esc(&mut self, now: Instant) -> Vec<FromUi> {
        if self.busy.is_some() || !self.editor.is_empty() {
            return Vec::new();
        }
        if self.last_esc.is_some_and(|at| now.saturating_duration_since(at) <= DOUBLE_ESC) {
            self.last_esc = None;
            return vec![FromUi::EditPrevious];
        }
        self.last_esc = Some(now);
        Vec::new()
    }

    /// Whether to show "esc again edits your previous message".
    pub(crate) fn esc_armed(&self) -> bool {
        self.last_esc.is_some_and(|at| self.now.saturating_duration_since(at) <= DOUBLE_ESC)
    }

    /// Whether to show "ctrl+c again quits".
    pub(crate) fn ctrl_c_armed(&self) -> bool {
        self.last_ctrl_c.is_some_and(|at| self.now.saturating_duration_since(at) <= DOUBLE_CTRL_C)
    }

    fn editor_key(&mut self, key: KeyEvent) -> Vec<FromUi> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let before = self.editor.text().to_owned();
        let mut out = Vec::new();
        match key.code {
            KeyCode::Enter if shift || alt => self.editor.insert("\n"),
            KeyCode::Char('j') if ctrl => self.editor.insert("\n"),
            KeyCode::Enter => out = self.submit(QueuedKind::Steer),
            KeyCode::Tab if self.busy.is_some() && !self.editor.is_empty() => {
                out = self.submit(QueuedKind::FollowUp)
            }
            KeyCode::BackTab => out.push(FromUi::CycleMode),
            KeyCode::Esc if self.busy.is_some() => out.push(FromUi::Cancel),
            KeyCode::Esc => return self.esc(self.now),
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => {
                self.exit = true;
                out.push(FromUi::Exit);
            }
            KeyCode::Char('t') if ctrl => self.show_reasoning = !self.show_reasoning,
            KeyCode::Char('o') if ctrl => self.toggle_pager(),
            KeyCode::Char('r') if ctrl => self.start_search(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.editor.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.editor.kill_word(),
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Char(c) if !ctrl => {
                let mut buf = [0; 4];
                self.editor.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Backspace if alt || ctrl => self.editor.kill_word(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left if alt || ctrl => self.editor.word_left(),
            KeyCode::Right if alt || ctrl => self.editor.word_right(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up if alt => out = self.unqueue(),
            KeyCode::Up => {
                if self.editor.is_empty() && !self.queue.is_empty() {
                    out = self.unqueue();
                } else if self.editor.on_first_line() {
                    if let Some(older) = self.history.older(self.editor.text()) {
                        self.editor.set(&older);
                    }
                    return out;
                } else {
                    self.editor.up();
                }
            }
            KeyCode::Down => {
                if self.editor.on_last_line() {
                    if let Some(newer) = self.history.newer() {
                        self.editor.set(&newer);
                    }
                    return out;
                }
                self.editor.down();
            }
            _ => {}
        }
        if key.code != KeyCode::Esc {
            self.last_esc = None;
        }
        if self.editor.text() != before {
            self.edited();
            if self.editor.is_empty() {
                // Cleared: the edit is given up.
                self.editing = None;
            }
        }
        out
    }

    /// Takes the last queued message back into the editor.
    fn unqueue(&mut self) -> Vec<FromUi> {
        let Some(last) = self.queue.pop() else {
            return Vec::new();
        };
        if !self.editor.is_empty() {
            self.editor.insert("\n");
        }
        self.editor.insert(&last.text);
        self.edited();
        vec![FromUi::Unqueue(last.id)]
    }

    /// `text` as if typed into an empty input and entered.
    pub(crate) fn send_typed(&mut self, text: &str) -> Vec<FromUi> {
        self.editor.insert(text);
        self.edited();
        self.submit(QueuedKind::Steer)
    }

    /// Enter (or Tab while busy): what the text is. `/name args` and
    /// `!cmd` are the same busy or not; a message steers or follows up a
    /// running turn, else starts one. `/help` is answered here.
    fn submit(&mut self, busy_kind: QueuedKind) -> Vec<FromUi> {
        if self.editor.text().trim().is_empty() {
            // Idle with messages left queued (a cancelled turn keeps them):
            // an empty Enter delivers them.
            if self.busy.is_none() && busy_kind == QueuedKind::Steer && !self.queue.is_empty() {
                return vec![FromUi::Submit(String::new())];
            }
            return Vec::new();
        }
        let text = self.editor.take();
        self.edited();
        self.history.push(&text);
        if let Some(command) = text.strip_prefix('/') {
            let command = command.trim();
            let (name, args) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
            if name == "help" {
                self.help();
                return Vec::new();
            }
            return vec![FromUi::Command { name: name.to_owned(), args: args.trim().to_owned() }];
        }
        if let Some(command) = text.strip_prefix('!') {
            return vec![FromUi::Shell(command.to_owned())];
        }
        self.echo(&text);
        if self.busy.is_none() {
            if let Some(turn) = self.editing.take() {
                return vec![FromUi::Resend { turn, text }];
            }
            return vec![FromUi::Submit(text)];
        }
        self.sending.push((busy_kind, text.clone()));
        vec![match busy_kind {
            QueuedKind::Steer => FromUi::Steer(text),
            _ => FromUi::FollowUp(text),
        }]
    }

    /// The person's message, into the scrollback when it starts a turn.
    fn echo(&mut self, text: &str) {
        if self.busy.is_some() {
            return;
        }
        self.finish_output();
        let bold = self.theme.bold();
        let lines: Vec<Line<'static>> = crate::text::lines(text)
            .enumerate()
            .map(|(i, l)| {
                Line::from(vec![
                    Span::styled(if i == 0 { "› " } else { "  " }, self.theme.cyan().patch(bold)),
                    Span::styled(crate::text::clean(l), bold),
                ])
            })
            .collect();
        self.push_lines(lines);
        self.scrollback.push(Line::default());
    }

    fn help(&mut self) {
        let bold = self.theme.bold();
        let dim = self.theme.dim();
        let mut lines = vec![Line::from(Span::styled("commands", bold))];
        let mut commands = self.commands.clone();
        if !commands.iter().any(|c| c.name == "help") {
            commands.insert(0, crate::protocol::SlashCommand::new("help", "this list"));
        }
        for command in &commands {
            lines.push(Line::from(vec![
                Span::raw(format!("  /{:<12} ", clean_line(&command.name))),
                Span::styled(clean_line(&command.help), dim),
            ]));
        }
        lines.push(Line::from(Span::styled("keys", bold)));
        for (key, what) in KEYS {
            lines.push(Line::from(vec![Span::raw(format!("  {key:<30} ")), Span::styled(*what, dim)]));
        }
        self.finish_output();
        self.push_lines(lines);
    }
}
