//! The status line: model · mode · context used · tokens · cost · session.

use ratatui::text::{Line, Span};

use crate::protocol::Status;
use crate::text::clean_line;
use crate::theme::Theme;

/// `12345` as `12.3k`, `1234567` as `1.2M`.
pub(crate) fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Millionths of a dollar as dollars, to the hundredth of a cent.
pub(crate) fn dollars(micros: u64) -> String {
    format!("${:.4}", micros as f64 / 1e6)
}

/// The status line's spans; `right` (a hint) goes at the end.
pub(crate) fn status_line(status: &Status, theme: Theme, right: Option<&str>) -> Line<'static> {
    let mut parts: Vec<String> = Vec::new();
    if !status.model.is_empty() {
        parts.push(clean_line(&status.model));
    }
    if !status.mode.is_empty() {
        parts.push(clean_line(&status.mode));
    }
    if let Some((used, window)) = status.context_used
        && window > 0
    {
        let percent = (used as f64 * 100.0 / window as f64).round();
        parts.push(format!("ctx {percent}%"));
    }
    parts.push(format!("{} tok", tokens(status.tokens)));
    if let Some(cost) = status.cost_micros {
        parts.push(dollars(cost));
    }
    if !status.session_id.is_empty() {
        let id: Vec<char> = status.session_id.chars().collect();
        let short: String = id[id.len().saturating_sub(8)..].iter().collect();
        parts.push(clean_line(&short));
    }
    let mut spans = vec![Span::styled(parts.join(" · "), theme.dim())];
    if let Some(right) = right {
        spans.push(Span::styled(format!("  {right}"), theme.yellow()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(dollars(12_345), "$0.0123");
    }

    #[test]
    fn the_status_line_shows_what_is_known() {
        let mut status = Status::new("claude-x", "propose", "0190aaaa-bbbb-7ccc-8ddd-eeee12345678");
        status.context_used = Some((45_000, 200_000));
        status.tokens = 12_345;
        status.cost_micros = Some(123_400);
        let line = status_line(&status, Theme::new(false, None), None);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "claude-x · propose · ctx 23% · 12.3k tok · $0.1234 · 12345678");
        let bare = status_line(&Status::new("m", "write", ""), Theme::new(false, None), Some("hint"));
        let text: String = bare.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "m · write · 0 tok  hint");
    }
}
