//! bosun-tui: the interactive terminal UI of the `bosun` command. A client
//! of a session's event stream: the CLI sends [`ToUi`] (every
//! [`bosun_core::Event`], approvals to answer, status, the steering queue)
//! and gets [`FromUi`] back (messages, steering, cancel, commands). [`run`]
//! drives the real terminal ([`pick`]: a choice outside a conversation,
//! drawn as the conversation's picker is); [`App`] holds all the state and [`render`]
//! draws it, a pure function, so both are tested without a terminal.
//!
//! The conversation goes into the terminal's own scrollback (finished
//! blocks, printed above a small inline viewport), so it survives the exit;
//! the viewport holds only what is still moving and the input.
//!
//! Not here: agent logic, configuration, sessions, files. Every untrusted
//! text (model output, tool arguments and results, diffs, labels) goes
//! through [`sanitize`] before it is styled (invariant 20).
#![deny(missing_docs)]

mod app;
mod diff;
mod events;
mod highlight;
mod history;
mod input;
mod keys;
mod markdown;
mod modal;
mod notify;
mod pager;
mod pick;
mod plan;
mod protocol;
mod reader;
mod render;
mod search;
mod status;
mod terminal;
mod text;
mod theme;
pub mod wording;

/// The sanitiser lives in `bosun-core`, below every front end that shows text.
pub use bosun_core::sanitize;

#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyEventKind};
use ratatui::widgets::{Paragraph, Widget};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

pub use app::App;
pub use keys::KEYS;
pub use pick::pick;
pub use protocol::{
    FromUi, NoticeKind, Notify, Options, PickItem, Queued, QueuedKind, SlashCommand, Status, ToUi,
};
pub use render::render;

/// How often a spinner moves while something runs.
const TICK: Duration = Duration::from_millis(100);

/// Runs the UI on the real terminal until Exit (either side). Enters raw
/// mode, bracketed paste and an inline viewport; a panic hook restores the
/// terminal before the panic message, and every way out restores it too.
/// Idle, it waits on the terminal and the channel with no timer.
pub async fn run(
    mut options: Options,
    mut to_ui: UnboundedReceiver<ToUi>,
    from_ui: UnboundedSender<FromUi>,
) -> std::io::Result<()> {
    if options.dark.is_none() {
        options.dark = theme::guess_dark(std::env::var("COLORFGBG").ok().as_deref());
    }
    let _guard = terminal::Guard::enter()?;
    let (cols, rows) = crossterm::terminal::size()?;
    let mut term = terminal::inline(terminal::viewport_height(rows))?;
    let first = options.first_message.take();
    let mut app = App::new(options);
    app.resize(cols, rows);
    for message in first.map(|text| app.send_typed(&text)).unwrap_or_default() {
        if from_ui.send(message).is_err() {
            return Ok(());
        }
    }
    let mut events = reader::Reader::start();
    let result = drive(&mut app, &mut term, &mut events, &mut to_ui, &from_ui).await;
    drop(events);
    app.finish_output();
    let flushed = flush(&mut app, &mut term).and_then(|()| terminal::leave(&mut term));
    result.and(flushed)
}

async fn drive(
    app: &mut App,
    term: &mut terminal::Term,
    events: &mut reader::Reader,
    to_ui: &mut UnboundedReceiver<ToUi>,
    from_ui: &UnboundedSender<FromUi>,
) -> std::io::Result<()> {
    loop {
        flush(app, term)?;
        term.draw(|frame| render(app, frame))?;
        if app.exited() {
            return Ok(());
        }
        let ticking = app.animating();
        tokio::select! {
            event = events.next() => match event {
                None => return Ok(()),
                Some(Err(error)) => return Err(error),
                Some(Ok(event)) => {
                    let sent = on_terminal(app, term, event)?;
                    // A key may have answered the approval.
                    fit_viewport(app, term)?;
                    for message in sent {
                        if from_ui.send(message).is_err() {
                            return Ok(());
                        }
                    }
                }
            },
            message = to_ui.recv() => {
                let Some(message) = message else { return Ok(()) };
                app.tick(Instant::now());
                app.handle(message);
                // Take what else is waiting before drawing: a burst of
                // deltas is one frame, not one each.
                while !app.exited() {
                    let Ok(message) = to_ui.try_recv() else { break };
                    app.handle(message);
                }
                if let Some((kind, text)) = app.take_notification() {
                    notify::write(term.backend_mut(), kind, &text)?;
                }
                fit_viewport(app, term)?;
            }
            () = tokio::time::sleep(TICK), if ticking => app.tick(Instant::now()),
        }
    }
}

fn on_terminal(app: &mut App, term: &mut terminal::Term, event: TermEvent) -> std::io::Result<Vec<FromUi>> {
    Ok(match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => app.key_at(key, Instant::now()),
        TermEvent::Paste(text) => {
            app.paste(text);
            Vec::new()
        }
        TermEvent::FocusGained => {
            app.focus(true);
            Vec::new()
        }
        TermEvent::FocusLost => {
            app.focus(false);
            Vec::new()
        }
        TermEvent::Resize(cols, rows) => {
            app.resize(cols, rows);
            fit_viewport(app, term)?;
            Vec::new()
        }
        _ => Vec::new(),
    })
}

/// Makes the viewport as tall as the app needs now: taller while an
/// approval waits (`terminal::approval_height`), the usual height else.
fn fit_viewport(app: &App, term: &mut terminal::Term) -> std::io::Result<()> {
    let height = if app.asks_approval() {
        terminal::approval_height(app.height)
    } else {
        terminal::viewport_height(app.height)
    };
    if term.get_frame().area().height != height {
        // Both ask the terminal where the cursor is; the reader thread lets
        // go of crossterm's reader between its polls, so the answer is read
        // (see `reader.rs`).
        term.clear()?;
        *term = terminal::inline(height)?;
    }
    Ok(())
}

/// Prints the finished lines above the viewport.
fn flush(app: &mut App, term: &mut terminal::Term) -> std::io::Result<()> {
    let lines = app.take_scrollback();
    for chunk in lines.chunks(usize::from(u16::MAX)) {
        let height = chunk.len() as u16;
        let chunk = chunk.to_vec();
        term.insert_before(height, |buf| Paragraph::new(chunk).render(buf.area, buf))?;
    }
    Ok(())
}
