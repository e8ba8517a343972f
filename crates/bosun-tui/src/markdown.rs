//! The model's Markdown as terminal lines: headings, nested lists,
//! emphasis, inline code, fenced code (highlighted by its language), links
//! (text, then the address dimmed), block quotes, rules and tables
//! (`table.rs`: aligned columns, cut to the width). Wrapped to the
//! width here, so a list item's or a quote's continuation lines keep their
//! indent.
//!
//! While an answer streams, [`complete_prefix`] says how much of it is
//! finished blocks, which go to the scrollback; the rest is re-rendered on
//! each delta.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

mod table;

use crate::highlight::highlight;
use crate::text::{clean, wrap};
use crate::theme::Theme;

/// Renders `text` to lines at most `width` columns wide.
pub(crate) fn render(text: &str, theme: Theme, width: usize) -> Vec<Line<'static>> {
    let mut renderer = Renderer::new(theme, width);
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        if matches!(event, Event::End(TagEnd::CodeBlock)) {
            // A fence still streaming is closed by the parser at the end
            // of the text; its closing line is not drawn until it comes.
            let source = text.get(range).unwrap_or_default().trim_end();
            let closed = source.lines().count() > 1 && (source.ends_with("```") || source.ends_with("~~~"));
            renderer.open_fence = !closed && source.starts_with(['`', '~']);
        }
        renderer.event(event);
    }
    renderer.flush();
    renderer.out
}

/// The length of the longest prefix of `text` that is whole blocks: up to
/// a blank line followed by the start of a new block (not an indented
/// continuation or a list item, which could still belong to what came
/// before), or the end of a closed code fence. Only complete lines count.
pub(crate) fn complete_prefix(text: &str) -> usize {
    let mut safe = 0;
    let mut fence: Option<(char, usize)> = None;
    let mut after_blank = false;
    let mut in_list = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if !line.ends_with('\n') {
            break;
        }
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start_matches(' ').len();
        let trimmed = body.trim_start_matches(' ');
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        if let Some((c, n)) = fence {
            if indent < 4 && run(c) >= n && trimmed.trim_start_matches(c).trim().is_empty() {
                fence = None;
                safe = at;
                after_blank = false;
            }
            continue;
        }
        if indent < 4
            && let Some(c) = ['`', '~'].into_iter().find(|&c| run(c) >= 3)
        {
            if after_blank || start == safe {
                safe = start;
            }
            fence = Some((c, run(c)));
            continue;
        }
        if trimmed.is_empty() {
            after_blank = true;
            continue;
        }
        let item = indent == 0 && is_list_item(trimmed);
        if after_blank && indent == 0 && !body.starts_with('\t') {
            // A list item after a list and a blank line is the same
            // (loose) list; anything else at the margin starts afresh.
            if !(item && in_list) {
                safe = start;
            }
            in_list = item;
        } else if item {
            in_list = true;
        }
        after_blank = false;
    }
    safe
}

fn is_list_item(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return rest.is_empty() || rest.starts_with(' ');
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(['.', ')'])
}

/// One open list: the next number (ordered lists), and the width of the
/// current item's marker, which its continuation lines are indented by.
struct List {
    next: Option<u64>,
    indent: usize,
}

struct Renderer {
    theme: Theme,
    width: usize,
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    quote: usize,
    lists: Vec<List>,
    /// The current item's marker, for the first line it starts.
    marker: Option<String>,
    code: Option<(String, String)>,
    /// Open links: their address and where their text starts in `spans`.
    links: Vec<(String, usize)>,
    /// A blank line is owed before the next block.
    blank: bool,
    /// The code block ending is not closed in the text yet.
    open_fence: bool,
    /// A table being read, and where the current cell's text starts in `spans`.
    table: Option<(table::Table, usize)>,
}

impl Renderer {
    fn new(theme: Theme, width: usize) -> Self {
        Self {
            theme,
            width: width.max(10),
            out: Vec::new(),
            spans: Vec::new(),
            styles: Vec::new(),
            quote: 0,
            lists: Vec::new(),
            marker: None,
            code: None,
            links: Vec::new(),
            blank: false,
            open_fence: false,
            table: None,
        }
    }

    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn push_style(&mut self, style: Style) {
        self.styles.push(style);
    }

    fn quote_prefix(&self) -> Vec<Span<'static>> {
        (0..self.quote).map(|_| Span::styled("│ ", self.theme.dim())).collect()
    }

    /// Quote bars, then the indent of every open list.
    fn continuation(&self) -> Vec<Span<'static>> {
        let mut prefix = self.quote_prefix();
        let spaces: usize = self.lists.iter().map(|l| l.indent).sum();
        if spaces > 0 {
            prefix.push(Span::raw(" ".repeat(spaces)));
        }
        prefix
    }

    fn first_prefix(&mut self) -> Vec<Span<'static>> {
        let Some(marker) = self.marker.take() else {
            return self.continuation();
        };
        let mut prefix = self.quote_prefix();
        let outer: usize = self.lists.iter().rev().skip(1).map(|l| l.indent).sum();
        if outer > 0 {
            prefix.push(Span::raw(" ".repeat(outer)));
        }
        prefix.push(Span::raw(marker));
        prefix
    }

    fn emit(&mut self, content: Vec<Span<'static>>) {
        let mut spans = self.first_prefix();
        spans.extend(content);
        let indent = self.continuation();
        self.out.extend(wrap(Line::from(spans), self.width, &indent));
    }

    /// Ends the line being built, if it has anything (or a pending marker).
    fn flush(&mut self) {
        if self.spans.is_empty() && self.marker.is_none() {
            return;
        }
        let content = std::mem::take(&mut self.spans);
        self.emit(content);
    }

    fn start_block(&mut self) {
        self.flush();
        if self.blank && !self.out.is_empty() {
            let bars = self.quote_prefix();
            self.out.push(Line::from(bars));
        }
        self.blank = false;
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        for (i, piece) in text.split('\n').enumerate() {
            if i > 0 {
                self.flush();
            }
            if !piece.is_empty() {
                self.spans.push(Span::styled(clean(piece), style));
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(text) => {
                    code.push_str(&text);
                    return;
                }
                Event::End(TagEnd::CodeBlock) => {}
                _ => return,
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => self.text(&text),
            Event::Code(code) => {
                let style = self.style().patch(self.theme.cyan());
                let shown = if self.theme.color { clean(&code) } else { format!("`{}`", clean(&code)) };
                self.spans.push(Span::styled(shown, style));
            }
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.start_block();
                let rule = "─".repeat(self.width.min(40));
                self.emit(vec![Span::styled(rule, self.theme.dim())]);
                self.blank = true;
            }
            Event::TaskListMarker(done) => {
                self.spans.push(Span::raw(if done { "[x] " } else { "[ ] " }));
            }
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let style = match level {
                    HeadingLevel::H1 => self.theme.bold().add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => self.theme.bold(),
                    _ => self.theme.bold().add_modifier(Modifier::ITALIC),
                };
                self.push_style(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush();
                }
                self.lists.push(List { next: start, indent: 2 });
            }
            Tag::Item => {
                self.flush();
                if self.blank {
                    self.out.push(Line::from(self.quote_prefix()));
                    self.blank = false;
                }
                let depth = self.lists.len();
                if let Some(list) = self.lists.last_mut() {
                    let marker = match &mut list.next {
                        Some(n) => {
                            let marker = format!("{n}. ");
                            *n += 1;
                            marker
                        }
                        None => match depth {
                            1 => "• ".to_owned(),
                            2 => "◦ ".to_owned(),
                            _ => "▪ ".to_owned(),
                        },
                    };
                    list.indent = crate::text::width(&marker);
                    self.marker = Some(marker);
                }
            }
            Tag::Table(alignments) => {
                self.start_block();
                self.table = Some((table::Table::new(alignments), 0));
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some((table, _)) = &mut self.table {
                    table.rows.push(Vec::new());
                    table.header_rows += usize::from(matches!(tag, Tag::TableHead));
                }
            }
            Tag::TableCell => {
                let from = self.spans.len();
                if let Some((_, cell)) = &mut self.table {
                    *cell = from;
                }
            }
            Tag::Emphasis => self.push_style(self.theme.italic()),
            Tag::Strong => self.push_style(self.theme.bold()),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.spans.len()));
                self.push_style(self.theme.blue().add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.spans.len()));
                self.text("[image: ");
                self.push_style(Style::new());
            }
            _ => self.push_style(Style::new()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.blank = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank = true;
            }
            TagEnd::CodeBlock => self.code_block(),
            TagEnd::TableCell => {
                if let Some((table, from)) = &mut self.table {
                    let text: String = self.spans.drain(*from..).map(|s| s.content.into_owned()).collect();
                    if let Some(row) = table.rows.last_mut() {
                        row.push(text);
                    }
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {}
            TagEnd::Table => {
                if let Some((table, _)) = self.table.take() {
                    let indent = self.continuation();
                    let room = self
                        .width
                        .saturating_sub(indent.iter().map(|s| crate::text::width(&s.content)).sum());
                    for line in table.lines(self.theme, room) {
                        let mut spans = indent.clone();
                        spans.extend(line.spans);
                        self.out.push(Line::from(spans));
                    }
                }
                self.blank = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.marker = None;
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if matches!(tag, TagEnd::Image) {
                    self.text("]");
                }
                if let Some((url, from)) = self.links.pop() {
                    let shown: String = self
                        .spans
                        .get(from..)
                        .unwrap_or_default()
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if !url.is_empty() && shown != url && !url.starts_with('#') {
                        self.spans.push(Span::styled(format!(" ({})", clean(&url)), self.theme.dim()));
                    }
                }
            }
            _ => {
                self.styles.pop();
            }
        }
    }

    fn code_block(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        let fence = self.theme.dim();
        self.emit(vec![Span::styled(format!("```{}", clean(&lang)), fence)]);
        for spans in highlight(&code, &lang, self.theme) {
            self.emit(spans);
        }
        if !self.open_fence {
            self.emit(vec![Span::styled("```", fence)]);
        }
        self.blank = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: usize) -> Vec<String> {
        render(text, Theme::new(false, None), width)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn blocks_are_separated_and_lists_nest() {
        let shown = plain("# Title\n\nSome *text*.\n\n- one\n- two\n  1. a\n  2. b\n\n> quoted\n\n---\n", 40);
        assert_eq!(
            shown,
            [
                "Title",
                "",
                "Some text.",
                "",
                "• one",
                "• two",
                "  1. a",
                "  2. b",
                "",
                "│ quoted",
                "",
                &"─".repeat(40)
            ]
        );
    }

    #[test]
    fn tables_are_aligned_columns_cut_to_the_width() {
        let text = "| name | size | note |\n|:-----|-----:|:----:|\n| a.rs | 12 | ok |\n| long_name.rs | 3400 | `x` |\n";
        let shown = plain(text, 80);
        assert_eq!(
            shown,
            [
                "name         │ size │ note",
                "─────────────┼──────┼─────",
                "a.rs         │   12 │  ok ",
                "long_name.rs │ 3400 │ `x` ",
            ]
        );
        // Narrower than the table: the widest column gives way first.
        let narrow = plain(text, 20);
        assert!(narrow.iter().all(|l| crate::text::width(l) <= 20), "{narrow:#?}");
        assert_eq!(narrow[3], "long_… │ 3400 │ `x` ", "{narrow:#?}");
    }

    #[test]
    fn long_items_wrap_under_their_text() {
        let shown = plain("- a list item that is long enough to wrap\n", 20);
        assert_eq!(shown, ["• a list item that", "  is long enough to", "  wrap"]);
    }

    #[test]
    fn links_show_their_address_and_inline_code_its_ticks_without_colour() {
        assert_eq!(
            plain("see [docs](https://x.test) and `f()`\n", 80),
            ["see docs (https://x.test) and `f()`"]
        );
        assert_eq!(plain("<https://x.test>\n", 80), ["https://x.test"]);
    }

    #[test]
    fn code_keeps_its_fence_and_lines() {
        assert_eq!(plain("```rust\nfn a() {}\n\n  b\n```\n", 80), ["```rust", "fn a() {}", "", "  b", "```"]);
        // Still streaming: no closing fence yet.
        assert_eq!(plain("```rust\nfn a() {}\n", 80), ["```rust", "fn a() {}"]);
    }

    #[test]
    fn escapes_in_text_are_shown_not_obeyed() {
        let shown = plain("hi \x1b[2J there\n", 80);
        assert_eq!(shown, ["hi \\x1b[2J there"]);
    }

    #[test]
    fn finished_blocks_are_found_while_streaming() {
        let text = "para one\nstill one\n\nsecond\n";
        assert_eq!(&text[..complete_prefix(text)], "para one\nstill one\n\n");
        // The new block's first line is not complete yet.
        assert_eq!(complete_prefix("para\n\nsec"), 0);
        // A list continuing after a blank line stays in the tail.
        assert_eq!(complete_prefix("- a\n\n- b\n"), 0);
        let list = "intro:\n\n1. a\n2. b";
        assert_eq!(&list[..complete_prefix(list)], "intro:\n\n");
        // A closed fence is finished; an open one is not.
        let fenced = "```\ncode\n\nmore\n```\nafter";
        assert_eq!(&fenced[..complete_prefix(fenced)], "```\ncode\n\nmore\n```\n");
        assert_eq!(complete_prefix("```\ncode\n\nmore\n"), 0);
        let before_fence = "intro\n\n```rust\nlet x;\n";
        assert_eq!(&before_fence[..complete_prefix(before_fence)], "intro\n\n");
    }
}
