//! The UI without a terminal: frames drawn into ratatui's `TestBackend`
//! (snapshots of their text, plain asserts on their colours) and the
//! behaviour of keys and messages, with time passed in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod behaviour;
mod frames;
mod output;

use std::time::Instant;

use bosun_core::{CallId, Event};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::text::Line;

use crate::{App, Options, Status, ToUi};

fn status() -> Status {
    let mut status = Status::new("claude-sonnet", "propose", "0190aaaa-bbbb-7ccc-8ddd-eeee5e55101d");
    status.context_used = Some((42_000, 200_000));
    status.tokens = 18_250;
    status.cost_micros = Some(31_400);
    status
}

fn options(color: bool) -> Options {
    let mut options = Options::new(status());
    options.color = color;
    options.dark = Some(true);
    options
}

/// An app 80 columns wide at `t0`.
fn app_at(color: bool, t0: Instant) -> App {
    let mut app = App::new(options(color));
    app.resize(80, 24);
    app.tick(t0);
    app
}

fn app() -> App {
    app_at(true, Instant::now())
}

fn draw(app: &App, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| crate::render(app, frame)).unwrap();
    terminal.backend().buffer().clone()
}

/// One row's text: a wide character's second cell is skipped.
fn row(buffer: &Buffer, y: u16) -> String {
    let mut row = String::new();
    let mut x = 0;
    while x < buffer.area.width {
        let symbol = buffer[(x, y)].symbol();
        row.push_str(symbol);
        x += (crate::text::width(symbol) as u16).max(1);
    }
    row
}

/// The frame's text, rows trimmed at the right.
fn text(buffer: &Buffer) -> String {
    (0..buffer.area.height).map(|y| row(buffer, y).trim_end().to_owned()).collect::<Vec<_>>().join("\n")
}

fn lines_text(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first cell whose symbol starts `needle` on a row containing it.
fn cell_of<'a>(buffer: &'a Buffer, needle: &str) -> &'a ratatui::buffer::Cell {
    for y in 0..buffer.area.height {
        let row = row(buffer, y);
        if let Some(byte) = row.find(needle) {
            let column = crate::text::width(&row[..byte]) as u16;
            return &buffer[(column, y)];
        }
    }
    panic!("{needle:?} not in the frame:\n{}", text(buffer));
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.key(key(KeyCode::Char(c)));
    }
}

fn event(app: &mut App, event: Event) {
    app.handle(ToUi::Event(event));
}

fn delta(app: &mut App, text: &str) {
    event(app, Event::TextDelta { text: text.into() });
}

fn propose(app: &mut App, name: &str, arguments: serde_json::Value) -> CallId {
    let call_id = CallId::new_v7();
    event(app, Event::ToolCallProposed { call_id, name: name.into(), arguments });
    call_id
}
