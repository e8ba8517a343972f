//! The one sanitiser for untrusted text on its way to a terminal (invariant
//! 20): model text and reasoning, tool names, arguments and output, diffs,
//! stored messages and error messages. A terminal obeys some characters
//! instead of showing them (`\r` overwrites, ESC starts a cursor move, a
//! colour, a title or a clipboard write, U+202E reverses what follows), so
//! what it shows can differ from what the text says. Every such character is
//! shown visibly instead:
//!
//! - C0 controls (but `\n` and `\t` in a block) and DEL: `\r`, `\n`, `\t`,
//!   else `\xHH` (ESC is the four characters `\x1b`);
//! - C1 controls U+0080–U+009F: `\u{9b}`;
//! - bidi controls, zero-width and other invisible format characters:
//!   `⟪U+202E⟫`.
//!
//! The mapping is per character with no state, so text split anywhere (as
//! streamed deltas are) sanitises to the same as the whole. Clean text is
//! borrowed, not copied. Colours are added by the caller after this, so they
//! are the only escapes that reach the terminal.

use std::borrow::Cow;
use std::fmt::Write;

/// Text of several lines: keeps `\n` and `\t`, shows every other control.
pub fn block(text: &str) -> Cow<'_, str> {
    sanitize(text, false)
}

/// Text meant for one line: also shows `\n` as `\n` and `\t` as `\t`.
pub fn line(text: &str) -> Cow<'_, str> {
    sanitize(text, true)
}

/// How a character is shown.
enum Shown {
    /// As itself.
    Plain,
    /// As a backslash escape (`\r`, `\x1b`, `\u{9b}`).
    Escaped,
    /// Flagged by its code point (`⟪U+202E⟫`).
    Flagged,
}

fn class(c: char, one_line: bool) -> Shown {
    match c {
        '\n' | '\t' if !one_line => Shown::Plain,
        '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}' => Shown::Escaped,
        // Bidi embeddings, overrides, isolates and marks.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}' => {
            Shown::Flagged
        }
        // Zero-width and invisible format characters: zero-width space,
        // joiners, word joiner, invisible operators, deprecated format
        // controls, byte order mark, soft hyphen, line and paragraph
        // separators, interlinear annotations, and the tag characters that
        // can spell hidden ASCII.
        '\u{200b}'..='\u{200d}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206a}'..='\u{206f}'
        | '\u{feff}'
        | '\u{00ad}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' => Shown::Flagged,
        _ => Shown::Plain,
    }
}

fn sanitize(text: &str, one_line: bool) -> Cow<'_, str> {
    let Some(first) = text.char_indices().find(|&(_, c)| !matches!(class(c, one_line), Shown::Plain)) else {
        return Cow::Borrowed(text);
    };
    let (clean, rest) = text.split_at(first.0);
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(clean);
    for c in rest.chars() {
        match class(c, one_line) {
            Shown::Plain => out.push(c),
            Shown::Escaped => push_escaped(&mut out, c),
            // Writing to a String cannot fail.
            Shown::Flagged => {
                let _ = write!(out, "⟪U+{:04X}⟫", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    let _ = match c {
        '\r' => write!(out, "\\r"),
        '\n' => write!(out, "\\n"),
        '\t' => write!(out, "\\t"),
        '\0'..='\x7f' => write!(out, "\\x{:02x}", u32::from(c)),
        _ => write!(out, "\\u{{{:x}}}", u32::from(c)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> (String, String) {
        (block(text).into_owned(), line(text).into_owned())
    }

    #[test]
    fn clean_text_is_borrowed() {
        for text in ["", "plain ascii", "ünïcödé ✓ 日本語 🚀", "tabs\tand\nlines\n"] {
            assert!(matches!(block(text), Cow::Borrowed(t) if t == text), "{text:?}");
        }
        for text in ["", "plain ascii", "ünïcödé ✓ 日本語 🚀"] {
            assert!(matches!(line(text), Cow::Borrowed(t) if t == text), "{text:?}");
        }
        // A line with a newline is not clean as a line.
        assert!(matches!(line("a\nb"), Cow::Owned(_)));
    }

    #[test]
    fn newline_and_tab_stay_in_a_block_and_show_on_a_line() {
        assert_eq!(both("a\tb\nc"), ("a\tb\nc".into(), "a\\tb\\nc".into()));
    }

    #[test]
    fn c0_controls_are_shown() {
        assert_eq!(both("rm -rf ~\rls -la  "), ("rm -rf ~\\rls -la  ".into(), "rm -rf ~\\rls -la  ".into()));
        assert_eq!(block("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
        assert_eq!(block("\x1b[2K\x1b[1A"), "\\x1b[2K\\x1b[1A");
        assert_eq!(block("abc\x08\x08\x08xyz"), "abc\\x08\\x08\\x08xyz");
        assert_eq!(block("\0\x07\x0b\x0c\x1f"), "\\x00\\x07\\x0b\\x0c\\x1f");
        assert_eq!(block("\x1b]52;c;cm0gLXJmIH4=\x07"), "\\x1b]52;c;cm0gLXJmIH4=\\x07");
        assert_eq!(block("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(
            block("\x1b]8;;https://e.test\x1b\\x\x1b]8;;\x1b\\"),
            "\\x1b]8;;https://e.test\\x1b\\x\\x1b]8;;\\x1b\\"
        );
    }

    #[test]
    fn del_is_shown() {
        assert_eq!(both("a\x7fb"), ("a\\x7fb".into(), "a\\x7fb".into()));
    }

    #[test]
    fn c1_controls_are_shown() {
        assert_eq!(block("\u{9b}31mred"), "\\u{9b}31mred");
        assert_eq!(block("\u{80}\u{85}\u{9d}\u{9f}"), "\\u{80}\\u{85}\\u{9d}\\u{9f}");
        // The first character after C1 is plain.
        assert_eq!(block("\u{a0}é"), "\u{a0}é");
    }

    #[test]
    fn bidi_controls_are_flagged() {
        assert_eq!(block("ls \u{202e}~ fr- mr"), "ls ⟪U+202E⟫~ fr- mr");
        for (c, shown) in [
            ('\u{202a}', "⟪U+202A⟫"),
            ('\u{202b}', "⟪U+202B⟫"),
            ('\u{202c}', "⟪U+202C⟫"),
            ('\u{202d}', "⟪U+202D⟫"),
            ('\u{2066}', "⟪U+2066⟫"),
            ('\u{2067}', "⟪U+2067⟫"),
            ('\u{2068}', "⟪U+2068⟫"),
            ('\u{2069}', "⟪U+2069⟫"),
            ('\u{200e}', "⟪U+200E⟫"),
            ('\u{200f}', "⟪U+200F⟫"),
            ('\u{061c}', "⟪U+061C⟫"),
        ] {
            assert_eq!(line(&c.to_string()), shown);
        }
    }

    #[test]
    fn invisible_characters_are_flagged() {
        assert_eq!(block("rm\u{200b} -rf"), "rm⟪U+200B⟫ -rf");
        for (c, shown) in [
            ('\u{200c}', "⟪U+200C⟫"),
            ('\u{200d}', "⟪U+200D⟫"),
            ('\u{2060}', "⟪U+2060⟫"),
            ('\u{feff}', "⟪U+FEFF⟫"),
            ('\u{00ad}', "⟪U+00AD⟫"),
            ('\u{2028}', "⟪U+2028⟫"),
            ('\u{e0041}', "⟪U+E0041⟫"),
        ] {
            assert_eq!(block(&c.to_string()), shown);
        }
    }

    #[test]
    fn a_split_anywhere_sanitises_as_the_whole() {
        let text = "ok \x1b]0;pwned\x07 then \x1b[2J\r\u{9b}\u{202e}\u{200b} done\n";
        let whole = block(text);
        for (at, _) in text.char_indices() {
            let (a, b) = text.split_at(at);
            assert_eq!(format!("{}{}", block(a), block(b)), whole, "split at {at}");
            assert_eq!(format!("{}{}", line(a), line(b)), line(text), "split at {at}");
        }
        // In the middle of an escape sequence.
        assert_eq!(format!("{}{}", block("a\x1b["), block("31mb")), "a\\x1b[31mb");
        assert_eq!(format!("{}{}", block("a\x1b"), block("[31mb")), "a\\x1b[31mb");
    }

    #[test]
    fn nothing_a_terminal_obeys_survives() {
        // Every code point that the classes cover comes out as printable
        // ASCII escapes or flags, never as itself.
        let hostile: String = ('\0'..='\u{a0}').chain('\u{2000}'..='\u{2070}').collect();
        let shown = line(&hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        for c in ['\u{202e}', '\u{200b}', '\u{2066}', '\u{feff}'] {
            assert!(!shown.contains(c), "{c:?}");
        }
    }
}
