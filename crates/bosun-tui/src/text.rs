//! Untrusted text made safe to draw, and lines wrapped by display width.
//!
//! Every span of untrusted text is built by [`clean`] or [`clean_line`]:
//! sanitised first (so an ESC is the four characters `\x1b`), then tabs
//! expanded, since a terminal cell cannot hold a tab.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::sanitize;

const TAB: &str = "    ";

/// Text of one line of a block: controls shown, tabs as spaces.
pub(crate) fn clean(text: &str) -> String {
    let shown = sanitize::block(text);
    let shown = if shown.contains('\n') { shown.replace('\n', "\\n") } else { shown.into_owned() };
    if shown.contains('\t') { shown.replace('\t', TAB) } else { shown }
}

/// Text meant for one line: newlines and tabs shown as `\n` and `\t`.
pub(crate) fn clean_line(text: &str) -> String {
    sanitize::line(text).into_owned()
}

/// The lines of `text` split on `\n` only (a `\r` stays, to be shown),
/// without the empty piece after a final newline.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.strip_suffix('\n').unwrap_or(text).split('\n').filter(move |_| !text.is_empty())
}

/// The display width of a string.
pub(crate) fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `max` columns, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Wraps `line` to `width` columns, breaking at spaces where it can;
/// lines after the first start with `indent` (dropped if it leaves no room).
pub(crate) fn wrap(line: Line<'static>, width: usize, indent: &[Span<'static>]) -> Vec<Line<'static>> {
    let width = width.max(1);
    let cells: Vec<(char, Style)> =
        line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
    let total: usize = cells.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
    if total <= width {
        return vec![line];
    }
    let indent_width: usize = indent.iter().map(|s| width_of(&s.content)).sum();
    let indent: &[Span<'static>] = if indent_width + 8 > width { &[] } else { indent };
    let indent_width = if indent.is_empty() { 0 } else { indent_width };

    let mut out = Vec::new();
    let mut current: Vec<(char, Style)> = Vec::new();
    let mut used = 0;
    let mut room = width;
    for (c, style) in cells {
        let w = c.width().unwrap_or(0);
        if used + w > room && !current.is_empty() {
            // Break at this space, or the last one past the start.
            let rest = match current.iter().rposition(|(c, _)| *c == ' ') {
                _ if c == ' ' => Vec::new(),
                Some(at) if at > 0 => {
                    let rest = current.split_off(at + 1);
                    while current.last().is_some_and(|(c, _)| *c == ' ') {
                        current.pop();
                    }
                    rest
                }
                _ => Vec::new(),
            };
            out.push(build(&current, if out.is_empty() { &[] } else { indent }, line.style));
            current = rest;
            used = current.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
            room = width - indent_width;
        }
        if current.is_empty() && c == ' ' && !out.is_empty() {
            continue;
        }
        current.push((c, style));
        used += w;
    }
    if !current.is_empty() || out.is_empty() {
        out.push(build(&current, if out.is_empty() { &[] } else { indent }, line.style));
    }
    out
}

/// Wraps every line, each with no indent.
pub(crate) fn wrap_all(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    lines.into_iter().flat_map(|l| wrap(l, width, &[])).collect()
}

fn width_of(text: &str) -> usize {
    width(text)
}

fn build(cells: &[(char, Style)], indent: &[Span<'static>], style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = indent.to_vec();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for &(c, s) in cells {
        if current.is_some_and(|cur| cur != s)
            && let Some(cur) = current
        {
            spans.push(Span::styled(std::mem::take(&mut text), cur));
        }
        current = Some(s);
        text.push(c);
    }
    if let Some(cur) = current {
        spans.push(Span::styled(text, cur));
    }
    Line::from(spans).style(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_indents_continuations() {
        let line = Line::from("- the quick brown fox jumps over the lazy dog");
        let wrapped = wrap(line, 20, &[Span::raw("  ")]);
        assert_eq!(plain(&wrapped), ["- the quick brown", "  fox jumps over the", "  lazy dog"]);
        for l in &wrapped {
            assert!(l.width() <= 20);
        }
    }

    #[test]
    fn wide_characters_count_by_display_width() {
        let wrapped = wrap(Line::from("日本語日本語日本語"), 7, &[]);
        assert_eq!(plain(&wrapped), ["日本語", "日本語", "日本語"]);
        let long = wrap(Line::from("abcdefghij"), 4, &[]);
        assert_eq!(plain(&long), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn clean_shows_controls_and_expands_tabs() {
        assert_eq!(clean("a\x1b[2Jb\tc"), "a\\x1b[2Jb    c");
        assert_eq!(clean("x\ny"), "x\\ny");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
