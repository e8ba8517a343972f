//! Drawing: a pure function from the [`App`] to a frame. From the bottom
//! up: the status line, the input box, the completion popup, the pending
//! queue, and above them the live part of the turn (the reasoning, the
//! answer's unfinished tail, running tools), its newest lines. A modal
//! takes everything above the status line and scrolls inside it.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::app::App;
use crate::events::seconds;
use crate::input::{CompletionKind, POPUP_ROWS};
use crate::modal::Modal;
use crate::protocol::QueuedKind;
use crate::status::status_line;
use crate::text::{clean, clean_line, truncate, wrap_all};
use crate::theme::Theme;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Rows of the input box at most (the text scrolls to the cursor).
const INPUT_ROWS: usize = 6;
/// Queued messages listed at most.
const QUEUE_ROWS: usize = 4;
/// Lines of a running call's output shown under it.
pub(crate) const LIVE_OUTPUT_ROWS: usize = 5;
const PROMPT: &str = "› ";

impl App {
    /// Draws the UI into `frame` (see [`render`]).
    pub fn render(&self, frame: &mut Frame<'_>) {
        render(self, frame);
    }
}

/// Draws `app` into `frame`: no terminal needed, so tests draw into a
/// `TestBackend`.
pub fn render(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    if area.height == 0 || area.width == 0 {
        return;
    }
    let width = usize::from(area.width);
    let status_area = Rect { y: area.bottom() - 1, height: 1, ..area };
    frame.render_widget(Paragraph::new(status_line(&app.status, app.theme, None)), status_area);
    let above = Rect { height: area.height - 1, ..area };
    if let Some(modal) = app.modals.front() {
        draw_modal(app.theme, app.modals.len() - 1, modal, frame, above);
        return;
    }
    if let Some(pager) = app.pager {
        crate::pager::draw(app, pager, frame, above);
        return;
    }

    // The input box: a rule, then the text (or a history search and its
    // match).
    let searching = app.search.as_ref().map(|search| {
        let mut shown = crate::input::Editor::default();
        shown.set(app.search_match().unwrap_or_default());
        (search, shown)
    });
    let editor = searching.as_ref().map_or(&app.editor, |(_, shown)| shown);
    let (rows, (cursor_row, cursor_col)) = editor.layout(width, PROMPT.len());
    let search_rows = usize::from(searching.is_some());
    let room = usize::from(above.height.saturating_sub(1)).saturating_sub(search_rows).max(1);
    let shown_rows = rows.len().min(INPUT_ROWS).min(room);
    let first = (cursor_row + 1).saturating_sub(shown_rows);
    let input_height = (shown_rows + search_rows) as u16 + 1;
    let input_area = Rect {
        y: above.bottom().saturating_sub(input_height),
        height: input_height.min(above.height),
        ..above
    };
    let mut input_lines = vec![rule(app, width)];
    if let Some((search, _)) = &searching {
        let mut spans =
            vec![Span::styled("reverse search: ", app.theme.yellow()), Span::raw(clean_line(&search.query))];
        if search.found.is_none() && !search.query.is_empty() {
            spans.push(Span::styled(" (no match)", app.theme.dim()));
        }
        input_lines.push(fit(spans, width));
    }
    if searching.is_some() {
        for (i, row) in rows.iter().enumerate().skip(first).take(shown_rows) {
            let lead = if i == 0 { PROMPT } else { "  " };
            input_lines.push(Line::from(vec![Span::raw(lead), Span::styled(row.clone(), app.theme.dim())]));
        }
    } else if app.editor.is_empty() {
        let placeholder = if app.busy.is_some() {
            "enter steers the turn · tab queues a follow-up · esc cancels"
        } else {
            "message · @path attaches · /help"
        };
        input_lines.push(Line::from(vec![
            Span::styled(PROMPT, app.theme.cyan().patch(app.theme.bold())),
            Span::styled(placeholder, app.theme.dim()),
        ]));
    } else {
        for (i, row) in rows.iter().enumerate().skip(first).take(shown_rows) {
            let lead = if i == 0 { PROMPT } else { "  " };
            input_lines.push(Line::from(vec![
                Span::styled(lead, app.theme.cyan().patch(app.theme.bold())),
                Span::raw(row.clone()),
            ]));
        }
    }
    frame.render_widget(Paragraph::new(input_lines), input_area);
    let (x, y) = match &searching {
        Some((search, _)) => {
            let column = "reverse search: ".len() + crate::text::width(&clean_line(&search.query));
            (area.x + column.min(width.saturating_sub(1)) as u16, input_area.y + 1)
        }
        None => (
            area.x + (PROMPT.len() + cursor_col).min(width.saturating_sub(1)) as u16,
            input_area.y + 1 + (cursor_row - first) as u16,
        ),
    };
    frame.set_cursor_position((x, y.min(input_area.bottom().saturating_sub(1))));

    let mut bottom = input_area.y;
    let mut lines_above: Vec<Line<'static>> = Vec::new();
    if let Some(completion) = app.completion() {
        let selected = app.completion_selected.min(completion.items.len().saturating_sub(1));
        let start = (selected + 1).saturating_sub(POPUP_ROWS);
        for (i, (item, help)) in completion.items.iter().enumerate().skip(start).take(POPUP_ROWS) {
            let sigil = if completion.kind == CompletionKind::Path { "@" } else { "/" };
            let text = truncate(&format!("  {sigil}{}", clean_line(item)), width);
            let mut spans =
                vec![if i == selected { Span::styled(text, app.theme.reverse()) } else { Span::raw(text) }];
            if !help.is_empty() {
                spans.push(Span::styled(
                    format!("  {}", truncate(&clean_line(help), width / 2)),
                    app.theme.dim(),
                ));
            }
            lines_above.push(Line::from(spans));
        }
    }
    let queue_lines = queue_lines(app, width);
    let below = queue_lines.len() + lines_above.len();
    let mut stacked = queue_lines;
    stacked.extend(lines_above);
    let stacked_height = (below as u16).min(bottom.saturating_sub(above.y));
    if stacked_height > 0 {
        let skip = stacked.len() - usize::from(stacked_height);
        let area = Rect { y: bottom - stacked_height, height: stacked_height, ..above };
        frame.render_widget(Paragraph::new(stacked.split_off(skip)), area);
        bottom = area.y;
    }

    let live_height = bottom.saturating_sub(above.y);
    if live_height > 0 {
        let mut live = live_lines(app, width);
        let keep = usize::from(live_height);
        if live.len() > keep {
            live.drain(..live.len() - keep);
        }
        frame.render_widget(Paragraph::new(live), Rect { height: live_height, ..above });
    }
}

/// The rule over the input, with a hint at its right end when there is one.
fn rule(app: &App, width: usize) -> Line<'static> {
    let hint = if app.ctrl_c_armed() {
        Some(" ctrl+c again quits ")
    } else if app.esc_armed() {
        Some(" esc again edits your previous message ")
    } else if app.editing.is_some() {
        Some(" editing: enter sends it as a new branch ")
    } else {
        None
    };
    let Some(hint) = hint.filter(|h| h.len() + 4 < width) else {
        return Line::from(Span::styled("─".repeat(width), app.theme.dim()));
    };
    Line::from(vec![
        Span::styled("─".repeat(width - hint.len() - 2), app.theme.dim()),
        Span::styled(hint, app.theme.yellow()),
        Span::styled("──", app.theme.dim()),
    ])
}

fn spinner(since: Instant, now: Instant) -> &'static str {
    let tenths = now.saturating_duration_since(since).as_millis() / 100;
    SPINNER[(tenths % SPINNER.len() as u128) as usize]
}

/// The live part of the turn, wrapped to `width`.
pub(crate) fn live_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let theme = app.theme;
    let mut out = Vec::new();
    if !app.reasoning.trim().is_empty() {
        out.extend(wrap_all(app.reasoning_lines(&app.reasoning, false), width));
    }
    if !app.answer.trim().is_empty() {
        out.extend(crate::markdown::render(&app.answer, theme, width));
    }
    for call in &app.calls {
        let (mark, clock) = match call.started {
            Some(started) => (spinner(started, app.now), Some(app.now.saturating_duration_since(started))),
            None if call.waiting_approval => ("?", None),
            None => ("·", None),
        };
        let mut spans = vec![
            Span::styled(format!("{mark} "), theme.cyan()),
            Span::styled(clean_line(&call.name), theme.bold()),
        ];
        if !call.summary.is_empty() {
            spans.push(Span::raw(format!(" {}", call.summary)));
        }
        if let Some(clock) = clock {
            spans.push(Span::styled(format!(" · {}", seconds(clock)), theme.dim()));
        }
        if call.waiting_approval {
            spans.push(Span::styled(" · waiting for approval", theme.yellow()));
        }
        if let Some(progress) = &call.progress {
            spans.push(Span::styled(format!(" · {progress}"), theme.dim()));
        }
        out.push(fit(spans, width));
        let from = call.tail.len().saturating_sub(LIVE_OUTPUT_ROWS);
        let above = call.lines.saturating_sub((call.tail.len() - from) as u64);
        if above > 0 {
            out.push(Line::from(Span::styled(format!("  │ … +{above} lines"), theme.dim())));
        }
        for line in &call.tail[from..] {
            out.push(fit(vec![Span::styled(format!("  │ {}", clean(line)), theme.dim())], width));
        }
    }
    if let Some(since) = app.busy
        && app.calls.is_empty()
    {
        let text = format!(
            "{} working · {} · esc cancels",
            spinner(since, app.now),
            seconds(app.now.saturating_duration_since(since))
        );
        out.push(Line::from(Span::styled(text, theme.dim())));
    }
    out
}

/// One row: spans past `width` cut, with `…` where the cut is.
fn fit(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut out = Vec::new();
    for span in spans {
        let w = crate::text::width(&span.content);
        if used + w <= width {
            used += w;
            out.push(span);
            continue;
        }
        let room = width.saturating_sub(used);
        if room > 0 {
            out.push(Span::styled(truncate(&span.content, room), span.style));
        }
        break;
    }
    Line::from(out)
}

/// The library's queue, then what was sent and is not in it yet.
fn queue_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let kind = |k: QueuedKind| if k == QueuedKind::Steer { "steer" } else { "follow-up" };
    let mut all: Vec<(String, String)> =
        app.queue.iter().map(|q| (format!("queued ({}): ", kind(q.kind)), q.text.clone())).collect();
    all.extend(app.sending.iter().map(|(k, text)| (format!("sending ({}): ", kind(*k)), text.clone())));
    let more = all.len().saturating_sub(QUEUE_ROWS);
    let mut out: Vec<Line<'static>> = all
        .into_iter()
        .take(QUEUE_ROWS)
        .map(|(head, text)| {
            let first = text.lines().next().unwrap_or_default();
            let room = width.saturating_sub(crate::text::width(&head)).max(4);
            Line::from(vec![
                Span::styled(head, app.theme.dim()),
                Span::raw(truncate(&clean_line(first), room)),
            ])
        })
        .collect();
    if more > 0 {
        out.push(Line::from(Span::styled(format!("… {more} more"), app.theme.dim())));
    }
    if !out.is_empty() {
        out.push(Line::from(Span::styled("alt+↑ takes the last one back", app.theme.dim())));
    }
    out
}

/// Draws `modal` into `area` (its heading on a rule, the body scrolled to
/// its choice, the keys at the bottom), `waiting` more said to wait behind
/// it. The conversation's modals and the picker outside it (`pick.rs`)
/// are both drawn here.
pub(crate) fn draw_modal(theme: Theme, waiting: usize, modal: &Modal, frame: &mut Frame<'_>, area: Rect) {
    let width = usize::from(area.width);
    let (title, body, keys) = modal.content(theme, waiting);
    let body = wrap_all(body, width);
    let keys = wrap_all(keys, width);
    let inner_height = usize::from(area.height.saturating_sub(1));
    let key_rows = keys.len().min(inner_height);
    let rows = inner_height - key_rows;
    let max_scroll = body.len().saturating_sub(rows);
    let scroll = match modal.selected_row() {
        Some(selected) if rows > 0 => selected.saturating_sub(rows - 1).min(max_scroll),
        _ => modal.scroll.min(max_scroll),
    };
    let more = if max_scroll > 0 {
        format!(" · {}–{} of {} · pgup/pgdn", scroll + 1, (scroll + rows).min(body.len()), body.len())
    } else {
        String::new()
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(theme.dim())
        .title(Span::styled(format!(" {} {more}", truncate(&title, width.saturating_sub(30))), theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut shown: Vec<Line<'static>> = body.into_iter().skip(scroll).take(rows).collect();
    shown.resize(rows, Line::default());
    shown.extend(keys.into_iter().take(key_rows));
    frame.render_widget(Paragraph::new(shown), inner);
    if let crate::modal::Kind::Approval(approval) = &modal.kind
        && let Some(typed) = &approval.reason
    {
        let x = inner.x + (8 + crate::text::width(&clean_line(typed))).min(width.saturating_sub(1)) as u16;
        frame.set_cursor_position((x, inner.bottom().saturating_sub(2)));
    }
}
