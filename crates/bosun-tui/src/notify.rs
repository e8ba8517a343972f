//! Telling the person, when the terminal is not in front of them, that a
//! turn ended or an approval waits: the terminal bell, or an OSC 9 desktop
//! notification (iTerm2, WezTerm, kitty, Windows Terminal, Ghostty). Only
//! while the terminal reports it lost focus (focus reporting, `CSI ? 1004
//! h`): a person watching the screen needs no bell. A terminal that never
//! reports focus is taken as focused, so it is never rung at.

use std::io::Write;

use crate::app::App;
use crate::protocol::Notify;

/// Longest notification text, in characters.
const MAX_CHARS: usize = 120;

impl App {
    /// The terminal gained (`true`) or lost focus.
    pub(crate) fn focus(&mut self, focused: bool) {
        self.focused = focused;
        if focused {
            self.notification = None;
        }
    }

    /// Asks for `text` to be shown as a notification when the terminal is
    /// not focused and notifications are on.
    pub(crate) fn notify(&mut self, text: &str) {
        if !self.focused && self.notify != Notify::Off {
            self.notification = Some(text.to_owned());
        }
    }

    /// The notification waiting to be written, taken.
    pub(crate) fn take_notification(&mut self) -> Option<(Notify, String)> {
        self.notification.take().map(|text| (self.notify, text))
    }
}

/// Writes the notification: a bell, or OSC 9 with `text` (control
/// characters dropped, so nothing in it can end or extend the sequence).
pub(crate) fn write(out: &mut impl Write, kind: Notify, text: &str) -> std::io::Result<()> {
    match kind {
        Notify::Off => return Ok(()),
        Notify::Bell => out.write_all(b"\x07")?,
        Notify::Osc9 => {
            let clean: String = text.chars().filter(|c| !c.is_control()).take(MAX_CHARS).collect();
            write!(out, "\x1b]9;{clean}\x07")?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, Status, ToUi};

    fn app(notify: Notify) -> App {
        let mut options = Options::new(Status::new("m", "propose", "id"));
        options.notify = notify;
        App::new(options)
    }

    fn turn(app: &mut App) {
        app.handle(ToUi::Busy(true));
        app.handle(ToUi::Busy(false));
    }

    #[test]
    fn a_turns_end_is_told_only_while_the_terminal_is_not_focused() {
        let mut app = app(Notify::Osc9);
        turn(&mut app);
        assert_eq!(app.take_notification(), None, "focused: nothing");
        app.focus(false);
        turn(&mut app);
        assert_eq!(app.take_notification(), Some((Notify::Osc9, "bosun: the turn is done".to_owned())));
        assert_eq!(app.take_notification(), None, "told once");
        // Idle with nothing running: no turn ended.
        app.handle(ToUi::Busy(false));
        assert_eq!(app.take_notification(), None);
        let mut off = self::app(Notify::Off);
        off.focus(false);
        turn(&mut off);
        assert_eq!(off.take_notification(), None, "off: never");
    }

    #[test]
    fn osc9_carries_no_control_characters() {
        let mut out = Vec::new();
        write(&mut out, Notify::Osc9, "bosun: approve \x1b]0;pwned\x07 rm").unwrap();
        assert_eq!(out, b"\x1b]9;bosun: approve ]0;pwned rm\x07");
        let mut bell = Vec::new();
        write(&mut bell, Notify::Bell, "anything").unwrap();
        assert_eq!(bell, b"\x07");
        let mut off = Vec::new();
        write(&mut off, Notify::Off, "anything").unwrap();
        assert!(off.is_empty());
    }
}
