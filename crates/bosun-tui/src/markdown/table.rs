//! Markdown tables as aligned terminal rows: each cell padded to its
//! column's width and alignment, the widest columns cut with `…` while the
//! table is wider than the screen, the header bold over a rule.

use pulldown_cmark::Alignment;
use ratatui::text::{Line, Span};

use crate::text::{truncate, width};
use crate::theme::Theme;

/// A table being read: its columns' alignments and its rows' cell texts.
pub(super) struct Table {
    pub(super) alignments: Vec<Alignment>,
    pub(super) rows: Vec<Vec<String>>,
    /// How many of the first rows are the header.
    pub(super) header_rows: usize,
}

/// Narrowest a cut column gets: a letter and `…`, or three columns.
const MIN_COLUMN: usize = 3;

impl Table {
    pub(super) fn new(alignments: Vec<Alignment>) -> Self {
        Self { alignments, rows: Vec::new(), header_rows: 0 }
    }

    /// The table in lines at most `max_width` wide (unless even its
    /// narrowest columns are wider).
    pub(super) fn lines(&self, theme: Theme, max_width: usize) -> Vec<Line<'static>> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (column, cell) in row.iter().enumerate() {
                widths[column] = widths[column].max(width(cell));
            }
        }
        let separators = 3 * columns.saturating_sub(1);
        while widths.iter().sum::<usize>() + separators > max_width {
            let Some((column, &widest)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else { break };
            if widest <= MIN_COLUMN {
                break;
            }
            widths[column] = widest - 1;
        }
        let mut out = Vec::new();
        for (index, row) in self.rows.iter().enumerate() {
            let header = index < self.header_rows;
            let mut spans = Vec::new();
            for (column, &room) in widths.iter().enumerate() {
                if column > 0 {
                    spans.push(Span::styled(" │ ", theme.dim()));
                }
                let cell = truncate(row.get(column).map_or("", String::as_str), room);
                let pad = room.saturating_sub(width(&cell));
                let (left, right) = match self.alignments.get(column) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                let text = format!("{}{cell}{}", " ".repeat(left), " ".repeat(right));
                spans.push(if header { Span::styled(text, theme.bold()) } else { Span::raw(text) });
            }
            out.push(Line::from(spans));
            if header && index + 1 == self.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push(Line::from(Span::styled(rule.join("─┼─"), theme.dim())));
            }
        }
        out
    }
}
