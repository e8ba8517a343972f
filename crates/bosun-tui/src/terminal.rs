//! The real terminal: raw mode, bracketed paste, the keyboard protocol
//! that tells Shift+Enter from Enter, and an inline viewport under the
//! scrollback. [`Guard`] undoes all of it on every way out (return, error,
//! panic: the panic hook restores before the message is printed).

use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

/// Whether the keyboard protocol was pushed, so restoring pops it once.
static ENHANCED: AtomicBool = AtomicBool::new(false);
/// Whether the terminal is in our modes, so a second restore does nothing.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The live area's height for a terminal `rows` tall: small, so the
/// conversation keeps most of the screen, and less on a short terminal.
pub(crate) fn viewport_height(rows: u16) -> u16 {
    rows.saturating_sub(4).clamp(3, 14).min(rows)
}

/// The viewport's height while an approval waits: taller, so that a tall
/// terminal shows more of the change asked about (its diff is cut to the
/// viewport), up to all but 4 rows and at most 40.
pub(crate) fn approval_height(rows: u16) -> u16 {
    rows.saturating_sub(4).clamp(3, 40).min(rows).max(viewport_height(rows))
}

/// Puts the terminal back: modes off, keyboard protocol popped, cursor
/// shown. Safe to call more than once, and from the panic hook.
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(out, DisableBracketedPaste, DisableFocusChange, cursor::Show);
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// The terminal in the UI's modes until dropped.
#[derive(Debug)]
pub(crate) struct Guard {
    _private: (),
}

impl Guard {
    pub(crate) fn enter() -> std::io::Result<Self> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = Self { _private: () };
        let mut out = std::io::stdout();
        // Focus reports tell when to notify (`notify.rs`).
        execute!(out, EnableBracketedPaste, EnableFocusChange)?;
        // Asking waits for the terminal's answer, briefly; one that does
        // not speak the protocol gets Enter for Shift+Enter (Alt+Enter and
        // Ctrl+J still make new lines).
        if matches!(terminal::supports_keyboard_enhancement(), Ok(true)) {
            execute!(out, PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES))?;
            ENHANCED.store(true, Ordering::SeqCst);
        }
        Ok(guard)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        // A new line, so the message starts at the left edge below the
        // viewport rather than inside it.
        let _ = writeln!(std::io::stderr());
        previous(info);
    }));
}

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

/// An inline viewport `height` rows tall at the cursor.
pub(crate) fn inline(height: u16) -> std::io::Result<Term> {
    Terminal::with_options(
        CrosstermBackend::new(std::io::stdout()),
        TerminalOptions { viewport: Viewport::Inline(height) },
    )
}

/// Clears the viewport and leaves the cursor at its top, where the shell's
/// prompt then appears, right under the conversation.
pub(crate) fn leave(term: &mut Term) -> std::io::Result<()> {
    let area = term.get_frame().area();
    // Not `Terminal::clear`: it asks the terminal where the cursor is, and
    // the answer goes to the event stream's reader while a read is pending
    // (an exit asked for by the CLI, not by a key), so it times out.
    execute!(
        term.backend_mut(),
        cursor::MoveTo(0, area.y),
        terminal::Clear(terminal::ClearType::FromCursorDown),
        cursor::Show
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_viewport_stays_small_and_fits_short_terminals() {
        assert_eq!(viewport_height(50), 14);
        assert_eq!(viewport_height(24), 14);
        assert_eq!(viewport_height(12), 8);
        assert_eq!(viewport_height(5), 3);
        assert_eq!(viewport_height(2), 2);
        assert_eq!(approval_height(40), 36);
        assert_eq!(approval_height(100), 40);
        assert_eq!(approval_height(24), 20);
        assert_eq!(approval_height(5), 3);
    }

    #[test]
    fn restoring_twice_is_harmless() {
        restore();
        restore();
        assert!(!ACTIVE.load(Ordering::SeqCst));
    }
}
