//! Unified diffs as coloured lines: `+` green, `-` red, `@@` cyan, the
//! file headers bold. Every line is sanitised before it is styled.

use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

use crate::text::{clean, lines};
use crate::theme::Theme;

/// The lines of a unified diff, coloured.
pub(crate) fn diff_lines(diff: &str, theme: Theme) -> Vec<Line<'static>> {
    lines(diff).map(|line| diff_line(line, theme)).collect()
}

fn diff_line(line: &str, theme: Theme) -> Line<'static> {
    let style = if line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ") {
        theme.bold()
    } else if line.starts_with("***") || line.starts_with("index ") {
        theme.dim()
    } else if line.starts_with('+') {
        theme.green()
    } else if line.starts_with('-') {
        theme.red()
    } else if line.starts_with("@@") {
        theme.cyan()
    } else {
        ratatui::style::Style::new()
    };
    Line::from(Span::styled(clean(line), style))
}

/// An edit's old and new text as a line diff: unchanged lines as context,
/// removed `- `, added `+ `.
pub(crate) fn change_lines(old: &str, new: &str, theme: Theme) -> Vec<Line<'static>> {
    TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|change| {
            let text = change.value();
            let text = text.strip_suffix('\n').unwrap_or(text);
            let (mark, style) = match change.tag() {
                ChangeTag::Delete => ("- ", theme.red()),
                ChangeTag::Insert => ("+ ", theme.green()),
                ChangeTag::Equal => ("  ", ratatui::style::Style::new()),
            };
            Line::from(Span::styled(format!("{mark}{}", clean(text)), style))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use ratatui::style::Color;

    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn diff_lines_are_coloured_by_their_mark() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n ctx\n";
        let lines = diff_lines(diff, Theme::new(true, None));
        let fg: Vec<Option<Color>> = lines.iter().map(|l| l.spans[0].style.fg).collect();
        assert_eq!(fg, [None, None, Some(Color::Cyan), Some(Color::Red), Some(Color::Green), None]);
        let plain = diff_lines(diff, Theme::new(false, None));
        assert!(plain.iter().all(|l| l.spans[0].style.fg.is_none()));
    }

    #[test]
    fn a_change_shows_context_removed_and_added_lines() {
        let lines = change_lines("a\nb\nc\n", "a\nB\nc\n", Theme::new(false, None));
        assert_eq!(text(&lines), ["  a", "- b", "+ B", "  c"]);
        let hostile = change_lines("x", "\x1b[2Ky", Theme::new(false, None));
        assert_eq!(text(&hostile), ["- x", "+ \\x1b[2Ky"]);
    }
}
