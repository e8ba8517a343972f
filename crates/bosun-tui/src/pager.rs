//! The pager (Ctrl+O): the whole result of a recent tool call as the model
//! saw it (a `tool_end` event carries it, within the session's output
//! bound), scrolled in the viewport. Left/Right step between the last
//! [`KEPT`] calls; q, Esc or Ctrl+O close it. Untrusted text: every line
//! is cleaned before it is styled.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::app::App;
use crate::text::{clean, clean_line, lines, truncate, wrap_all};
use crate::theme::Theme;

/// Calls whose output is kept for the pager.
pub(crate) const KEPT: usize = 20;
/// Bytes of one result kept at most: the session's hard bound on a result,
/// so what the pager holds stays under [`KEPT`] times it even when a
/// producer ignored the bound.
pub(crate) const KEPT_BYTES: usize = bosun_core::Limits::HARD_MAX_TOOL_OUTPUT;

/// One call's result.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) name: String,
    /// The argument worth showing, already sanitised.
    pub(crate) summary: String,
    /// The result's text, raw.
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

/// The last [`KEPT`] results, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    kept: VecDeque<Output>,
}

impl Outputs {
    /// Keeps `output`; true when the oldest was let go to make room.
    pub(crate) fn push(&mut self, output: Output) -> bool {
        let full = self.kept.len() == KEPT;
        if full {
            self.kept.pop_front();
        }
        self.kept.push_back(output);
        full
    }

    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }

    pub(crate) fn get(&self, at: usize) -> Option<&Output> {
        self.kept.get(at)
    }
}

/// Which result is shown, and how far it is scrolled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pager {
    pub(crate) at: usize,
    pub(crate) scroll: usize,
}

/// The rows an output takes at `width`.
fn body(output: &Output, theme: Theme, width: usize) -> Vec<Line<'static>> {
    let style = if output.is_error { theme.red() } else { ratatui::style::Style::new() };
    let shown: Vec<Line<'static>> =
        lines(&output.text).map(|l| Line::from(Span::styled(clean(l), style))).collect();
    if shown.is_empty() {
        return vec![Line::from(Span::styled("(no output)", theme.dim()))];
    }
    wrap_all(shown, width)
}

/// Rows of text in a viewport of `height` rows: less the status line, the
/// title and the keys.
fn text_rows(height: usize) -> usize {
    height.saturating_sub(3).max(1)
}

impl App {
    /// Keeps a finished call's result for the pager.
    pub(crate) fn keep_output(&mut self, mut output: Output) {
        if output.text.len() > KEPT_BYTES {
            let end = (0..=KEPT_BYTES).rev().find(|&at| output.text.is_char_boundary(at)).unwrap_or(0);
            output.text.truncate(end);
            output.text.push_str("\n… (the rest is not kept for the pager)");
        }
        if self.outputs.push(output)
            && let Some(pager) = &mut self.pager
        {
            pager.at = pager.at.saturating_sub(1);
        }
    }

    /// Ctrl+O: the pager on the newest result, or closed when open.
    pub(crate) fn toggle_pager(&mut self) {
        if self.pager.take().is_some() {
            return;
        }
        if let Some(at) = self.outputs.len().checked_sub(1) {
            self.pager = Some(Pager { at, scroll: 0 });
        }
    }

    /// A key while the pager is open.
    pub(crate) fn pager_key(&mut self, key: KeyEvent) {
        let Some(mut pager) = self.pager else { return };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let page = text_rows(usize::from(crate::terminal::viewport_height(self.height)));
        let rows = self
            .outputs
            .get(pager.at)
            .map_or(0, |output| body(output, self.theme, usize::from(self.width)).len());
        let last = rows.saturating_sub(page);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.pager = None;
                return;
            }
            KeyCode::Char('o') if ctrl => {
                self.pager = None;
                return;
            }
            KeyCode::Up | KeyCode::Char('k') => pager.scroll = pager.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => pager.scroll += 1,
            KeyCode::PageUp => pager.scroll = pager.scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => pager.scroll += page,
            KeyCode::Home | KeyCode::Char('g') => pager.scroll = 0,
            KeyCode::End | KeyCode::Char('G') => pager.scroll = last,
            KeyCode::Left | KeyCode::Char('h') if pager.at > 0 => {
                pager = Pager { at: pager.at - 1, scroll: 0 }
            }
            KeyCode::Right | KeyCode::Char('l') if pager.at + 1 < self.outputs.len() => {
                pager = Pager { at: pager.at + 1, scroll: 0 }
            }
            _ => {}
        }
        pager.scroll = pager.scroll.min(last);
        self.pager = Some(pager);
    }
}

/// Draws the open pager into `area` (everything above the status line).
pub(crate) fn draw(app: &App, pager: Pager, frame: &mut Frame<'_>, area: Rect) {
    let Some(output) = app.outputs.get(pager.at) else { return };
    let theme = app.theme;
    let width = usize::from(area.width);
    let body = body(output, theme, width);
    let rows = text_rows(usize::from(area.height) + 1);
    let scroll = pager.scroll.min(body.len().saturating_sub(rows));
    let shown_to = (scroll + rows).min(body.len());
    let mark = if output.is_error { "✗" } else { "✓" };
    let mut title = format!(" {mark} {}", clean_line(&output.name));
    if !output.summary.is_empty() {
        title.push(' ');
        title.push_str(&output.summary);
    }
    let place = format!(
        " · call {} of {} · lines {}–{} of {} ",
        pager.at + 1,
        app.outputs.len(),
        scroll + 1,
        shown_to,
        body.len()
    );
    let title = truncate(&title, width.saturating_sub(crate::text::width(&place) + 2));
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(theme.dim())
        .title(Line::from(vec![Span::styled(title, theme.bold()), Span::styled(place, theme.dim())]));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut shown: Vec<Line<'static>> = body.into_iter().skip(scroll).take(rows).collect();
    shown.resize(usize::from(inner.height.saturating_sub(1)), Line::default());
    let keys = "↑/↓ pgup/pgdn home/end scroll · ←/→ other calls · q or esc closes";
    shown.push(Line::from(Span::styled(truncate(keys, width), theme.dim())));
    frame.render_widget(Paragraph::new(shown), inner);
}
