//! A choice on the terminal outside a conversation (`bosun resume` and
//! `bosun compact` with no session named): the conversation's picker, the
//! same modal drawn by the same code as `/resume`'s, in a small inline
//! viewport on stderr (stdout stays the command's; when it is not the
//! terminal, the choices go at the bottom of the screen). ↑/↓ (or j/k, Home, End,
//! PgUp/PgDn) move, Enter chooses, Esc, q or Ctrl+C cancel. The viewport is
//! cleared on the way out, whichever it is.

use std::io::{IsTerminal, Stderr, Write};

use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::oneshot;

use crate::modal::{Kind, Modal, Outcome, Picker};
use crate::protocol::PickItem;
use crate::render::draw_modal;
use crate::theme::{Theme, guess_dark};

/// Rows besides the choices: the heading's rule and the keys line.
const FRAME_ROWS: usize = 2;

/// Raw mode until dropped, and the cursor shown again (the drawing hides
/// it), on every way out.
#[derive(Debug)]
struct Raw;

impl Raw {
    fn enter() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        Ok(Self)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let mut err = std::io::stderr();
        let _ = execute!(err, cursor::Show);
        let _ = err.flush();
    }
}

/// Shows `items` under `title` on the terminal and returns the id of the
/// one chosen, or `None` when the person cancelled. `color` false: bold,
/// dim and reverse only (`NO_COLOR`). Blocks until a key decides; call it
/// where blocking is allowed.
///
/// # Errors
/// When the terminal cannot be put in raw mode, drawn on or read.
pub fn pick(title: impl Into<String>, items: Vec<PickItem>, color: bool) -> std::io::Result<Option<String>> {
    if items.is_empty() {
        return Ok(None);
    }
    let theme = Theme::new(color, guess_dark(std::env::var("COLORFGBG").ok().as_deref()));
    let (reply, mut answer) = oneshot::channel();
    let count = items.len();
    let mut modal =
        Modal::new(Kind::Picker(Picker { title: title.into(), items, selected: 0, reply: Some(reply) }));
    let (cols, rows) = match terminal::size()? {
        (0, _) | (_, 0) => (80, 24),
        size => size,
    };
    let height = u16::try_from(count + FRAME_ROWS).unwrap_or(u16::MAX).min(rows.saturating_sub(1)).max(3);
    let raw = Raw::enter()?;
    let viewport = if std::io::stdout().is_terminal() {
        Viewport::Inline(height)
    } else {
        // An inline viewport asks the terminal where the cursor is, on
        // stdout, which is not the terminal here: the choices go at the
        // bottom of the screen instead, after as many new lines as they
        // take, so they draw over nothing.
        let mut err = std::io::stderr();
        err.write_all("\n".repeat(usize::from(height)).as_bytes())?;
        err.flush()?;
        Viewport::Fixed(Rect::new(0, rows.saturating_sub(height), cols, height))
    };
    let mut term =
        Terminal::with_options(CrosstermBackend::new(std::io::stderr()), TerminalOptions { viewport })?;
    let chosen = choose(&mut term, &mut modal, theme);
    let cleared = clear(&mut term);
    drop(raw);
    chosen?;
    cleared?;
    // Answered (or dropped, when cancelled) before `choose` returned.
    Ok(answer.try_recv().ok().flatten())
}

/// Draws and reads keys until the modal is answered (through its reply)
/// or cancelled.
fn choose(
    term: &mut Terminal<CrosstermBackend<Stderr>>,
    modal: &mut Modal,
    theme: Theme,
) -> std::io::Result<()> {
    loop {
        let mut page = 1;
        term.draw(|frame| {
            let area = frame.area();
            page = usize::from(area.height).saturating_sub(FRAME_ROWS).max(1);
            draw_modal(theme, 0, modal, frame, area);
        })?;
        match crossterm::event::read()? {
            Event::Key(key) if key.kind != KeyEventKind::Release => {
                if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
                    // Raw mode turned Ctrl+C into a key: it cancels, as Esc does.
                    modal.dismiss();
                    return Ok(());
                }
                if modal.key(key, page) == Outcome::Done {
                    return Ok(());
                }
            }
            Event::Resize(..) => term.autoresize()?,
            _ => {}
        }
    }
}

/// Clears the viewport and leaves the cursor at its top, so what the
/// command prints next starts where the picker was.
fn clear(term: &mut Terminal<CrosstermBackend<Stderr>>) -> std::io::Result<()> {
    let area = term.get_frame().area();
    execute!(
        term.backend_mut(),
        cursor::MoveTo(0, area.y),
        terminal::Clear(terminal::ClearType::FromCursorDown),
        cursor::Show
    )
}
