//! The few styles the UI uses. Only the terminal's own foreground and
//! background and the named ANSI colours, so light and dark themes both
//! read; with colour off, only modifiers (bold, dim, reverse) remain.

use ratatui::style::{Color, Modifier, Style};

/// Colour or not, and the background when known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Theme {
    pub(crate) color: bool,
    /// `Some(false)` on a light background: yellow is swapped for a colour
    /// that stays legible there.
    pub(crate) dark: Option<bool>,
}

impl Theme {
    pub(crate) fn new(color: bool, dark: Option<bool>) -> Self {
        Self { color, dark }
    }

    pub(crate) fn fg(self, color: Color) -> Style {
        if self.color { Style::new().fg(color) } else { Style::new() }
    }

    pub(crate) fn red(self) -> Style {
        self.fg(Color::Red)
    }
    pub(crate) fn green(self) -> Style {
        self.fg(Color::Green)
    }
    pub(crate) fn cyan(self) -> Style {
        self.fg(Color::Cyan)
    }
    pub(crate) fn blue(self) -> Style {
        self.fg(Color::Blue)
    }
    pub(crate) fn magenta(self) -> Style {
        self.fg(Color::Magenta)
    }
    /// Warnings: yellow, but magenta on a light background where yellow
    /// fades into white.
    pub(crate) fn yellow(self) -> Style {
        if self.dark == Some(false) { self.fg(Color::Magenta) } else { self.fg(Color::Yellow) }
    }
    pub(crate) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    pub(crate) fn bold(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub(crate) fn italic(self) -> Style {
        Style::new().add_modifier(Modifier::ITALIC)
    }
    pub(crate) fn crossed_out(self) -> Style {
        Style::new().add_modifier(Modifier::CROSSED_OUT)
    }
    pub(crate) fn reverse(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
}

/// The background from `COLORFGBG` (`fg;bg`, set by rxvt, Konsole and
/// others): the ANSI colours 0–6 and 8 are dark.
pub(crate) fn guess_dark(colorfgbg: Option<&str>) -> Option<bool> {
    let bg: u8 = colorfgbg?.rsplit(';').next()?.trim().parse().ok()?;
    Some(matches!(bg, 0..=6 | 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colorfgbg_names_the_background() {
        assert_eq!(guess_dark(Some("15;0")), Some(true));
        assert_eq!(guess_dark(Some("0;default;15")), Some(false));
        assert_eq!(guess_dark(Some("garbage")), None);
        assert_eq!(guess_dark(None), None);
    }

    #[test]
    fn without_colour_only_modifiers_are_left() {
        let plain = Theme::new(false, None);
        for style in [plain.red(), plain.green(), plain.cyan(), plain.yellow(), plain.blue()] {
            assert_eq!(style.fg, None);
        }
        assert_eq!(Theme::new(true, Some(false)).yellow().fg, Some(Color::Magenta));
        assert_eq!(Theme::new(true, None).yellow().fg, Some(Color::Yellow));
    }
}
