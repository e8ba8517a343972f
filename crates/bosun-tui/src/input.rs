//! The input editor: multi-line text with a cursor, large pastes shown
//! collapsed but kept whole, and the `@path` / `/command` completions.

use unicode_width::UnicodeWidthChar;

use crate::protocol::SlashCommand;

/// A paste of more lines or characters than this is shown as one token.
const PASTE_LINES: usize = 5;
const PASTE_CHARS: usize = 500;
/// Completions shown at once.
pub(crate) const POPUP_ROWS: usize = 5;

#[derive(Debug, Default)]
pub(crate) struct Editor {
    text: String,
    /// A byte offset in `text`, on a char boundary.
    cursor: usize,
    /// Collapsed pastes: the token shown, and what it stands for.
    pastes: Vec<(String, String)>,
}

impl Editor {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    #[cfg(test)]
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.pastes.clear();
    }

    pub(crate) fn clear(&mut self) {
        self.set("");
    }

    /// The text with every collapsed paste put back, and the editor empty.
    pub(crate) fn take(&mut self) -> String {
        let mut text = std::mem::take(&mut self.text);
        for (token, content) in self.pastes.drain(..) {
            if let Some(at) = text.find(&token) {
                text.replace_range(at..at + token.len(), &content);
            }
        }
        self.cursor = 0;
        text
    }

    pub(crate) fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    /// A paste: line endings made `\n`; a large one becomes a token.
    pub(crate) fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        let chars = text.chars().count();
        if lines <= PASTE_LINES && chars <= PASTE_CHARS {
            self.insert(&text);
            return;
        }
        let base = if lines > 1 { format!("pasted {lines} lines") } else { format!("pasted {chars} chars") };
        let mut token = format!("[{base}]");
        let mut n = 1;
        while self.text.contains(&token) || self.pastes.iter().any(|(t, _)| *t == token) {
            n += 1;
            token = format!("[{base} #{n}]");
        }
        self.insert(&token);
        self.pastes.push((token, text));
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor].char_indices().next_back().map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..].chars().next().map(|c| self.cursor + c.len_utf8())
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(at) = self.prev_boundary() {
            self.text.replace_range(at..self.cursor, "");
            self.cursor = at;
        }
    }

    pub(crate) fn delete(&mut self) {
        if let Some(end) = self.next_boundary() {
            self.text.replace_range(self.cursor..end, "");
        }
    }

    pub(crate) fn left(&mut self) {
        if let Some(at) = self.prev_boundary() {
            self.cursor = at;
        }
    }

    pub(crate) fn right(&mut self) {
        if let Some(at) = self.next_boundary() {
            self.cursor = at;
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..].find('\n').map_or(self.text.len(), |i| self.cursor + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    pub(crate) fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        self.cursor = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    }

    pub(crate) fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        let skip = after.len() - after.trim_start().len();
        let word = after[skip..].find(char::is_whitespace).unwrap_or(after.len() - skip);
        self.cursor += skip + word;
    }

    /// Ctrl+U: deletes from the start of the line to the cursor.
    pub(crate) fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl+K: deletes from the cursor to the end of the line.
    pub(crate) fn kill_to_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    /// Ctrl+W: deletes the word before the cursor.
    pub(crate) fn kill_word(&mut self) {
        let end = self.cursor;
        self.word_left();
        self.text.replace_range(self.cursor..end, "");
    }

    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Up within the text: the same column of the line above.
    pub(crate) fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            return;
        }
        let column = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = column_at(&self.text, prev_start, start - 1, column);
    }

    /// Down within the text.
    pub(crate) fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            return;
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..].find('\n').map_or(self.text.len(), |i| next_start + i);
        self.cursor = column_at(&self.text, next_start, next_end, column);
    }

    /// The text as rows of at most `width` columns after a first-row
    /// prompt of `prompt` columns (later rows indented as much), and the
    /// cursor's row and column.
    pub(crate) fn layout(&self, width: usize, prompt: usize) -> (Vec<String>, (usize, usize)) {
        let room = width.saturating_sub(prompt).max(1);
        let mut rows = vec![String::new()];
        let mut used = 0;
        let mut cursor = (0, 0);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (rows.len() - 1, used);
            }
            if c == '\n' {
                rows.push(String::new());
                used = 0;
                continue;
            }
            let shown = crate::text::clean(&c.to_string());
            let w: usize = shown.chars().map(|c| c.width().unwrap_or(0)).sum();
            if used + w > room {
                rows.push(String::new());
                used = 0;
                if i == self.cursor {
                    cursor = (rows.len() - 1, 0);
                }
            }
            if let Some(row) = rows.last_mut() {
                row.push_str(&shown);
            }
            used += w;
        }
        if self.cursor >= self.text.len() {
            if used >= room {
                rows.push(String::new());
                used = 0;
            }
            cursor = (rows.len() - 1, used);
        }
        (rows, cursor)
    }
}

/// The byte offset of `column` chars into the line `start..end`, or its end.
fn column_at(text: &str, start: usize, end: usize, column: usize) -> usize {
    text[start..end].char_indices().nth(column).map_or(end, |(i, _)| start + i)
}

/// What a completion inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompletionKind {
    Path,
    Command,
}

/// The completions for the word at the cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    pub(crate) kind: CompletionKind,
    /// Where the word (after its `@` or `/`) starts.
    pub(crate) start: usize,
    /// Each candidate and its help.
    pub(crate) items: Vec<(String, String)>,
}

/// Candidates for the word before the cursor: `@` then part of a path,
/// or `/` then part of a command name at the very start.
pub(crate) fn complete(editor: &Editor, paths: &[String], commands: &[SlashCommand]) -> Option<Completion> {
    let before = &editor.text[..editor.cursor];
    let word_start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &before[word_start..];
    let after = &editor.text[editor.cursor..];
    if after.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    if let Some(query) = word.strip_prefix('@') {
        let mut items: Vec<(String, String)> =
            paths.iter().filter(|p| p.starts_with(query)).map(|p| (p.clone(), String::new())).collect();
        items.extend(
            paths
                .iter()
                .filter(|p| !p.starts_with(query) && p.contains(query))
                .map(|p| (p.clone(), String::new())),
        );
        items.truncate(50);
        if items.is_empty() || items.iter().any(|(p, _)| p == query) && items.len() == 1 {
            return None;
        }
        return Some(Completion { kind: CompletionKind::Path, start: word_start + 1, items });
    }
    if word_start == 0
        && let Some(query) = word.strip_prefix('/')
    {
        if commands.iter().any(|c| c.name == query) {
            return None;
        }
        let items: Vec<(String, String)> = commands
            .iter()
            .filter(|c| c.name.starts_with(query))
            .map(|c| (c.name.clone(), c.help.clone()))
            .collect();
        if items.is_empty() {
            return None;
        }
        return Some(Completion { kind: CompletionKind::Command, start: 1, items });
    }
    None
}

/// Puts `choice` in place of the word being completed, then a space
/// (none after a directory, so the path can go on).
pub(crate) fn accept(editor: &mut Editor, completion: &Completion, choice: &str) {
    let end = editor.cursor;
    let space = if choice.ends_with('/') { "" } else { " " };
    editor.text.replace_range(completion.start..end, &format!("{choice}{space}"));
    editor.cursor = completion.start + choice.len() + space.len();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Editor {
        let mut editor = Editor::default();
        editor.insert(text);
        editor
    }

    #[test]
    fn cursor_moves_and_edits_by_character_and_word() {
        let mut e = typed("héllo wörld");
        e.left();
        e.backspace();
        assert_eq!(e.text(), "héllo wörd");
        e.word_left();
        e.kill_to_end();
        assert_eq!(e.text(), "héllo ");
        e.home();
        e.delete();
        assert_eq!(e.text(), "éllo ");
        e.end();
        e.insert("x");
        e.kill_word();
        assert_eq!(e.text(), "éllo ");
        e.kill_to_start();
        assert_eq!((e.text(), e.cursor()), ("", 0));
    }

    #[test]
    fn up_and_down_move_between_lines_at_the_same_column() {
        let mut e = typed("abc\nd\nefgh");
        assert!(e.on_last_line() && !e.on_first_line());
        e.up();
        assert_eq!(e.cursor(), 5, "end of the short line");
        e.up();
        assert_eq!(e.cursor(), 1);
        assert!(e.on_first_line());
        e.down();
        e.down();
        assert_eq!(e.cursor(), 7);
    }

    #[test]
    fn a_large_paste_is_one_token_but_submitted_whole() {
        let mut e = typed("see ");
        let big: String = (0..8).map(|i| format!("line {i}\r\n")).collect();
        e.paste(&big);
        e.insert(" and ");
        e.paste(&big);
        assert_eq!(e.text(), "see [pasted 8 lines] and [pasted 8 lines #2]");
        let whole = e.take();
        let expected = big.replace("\r\n", "\n");
        assert_eq!(whole, format!("see {expected} and {expected}"));
        assert!(e.is_empty());
        e.paste("short\npaste");
        assert_eq!(e.text(), "short\npaste");
        e.clear();
        e.paste(&"x".repeat(600));
        assert_eq!(e.text(), "[pasted 600 chars]");
    }

    #[test]
    fn layout_wraps_rows_and_places_the_cursor() {
        let e = typed("abcdef\ngh");
        let (rows, cursor) = e.layout(6, 2);
        assert_eq!(rows, ["abcd", "ef", "gh"]);
        assert_eq!(cursor, (2, 2));
        let hostile = typed("a\x1bb");
        assert_eq!(hostile.layout(40, 2).0, ["a\\x1bb"]);
    }

    #[test]
    fn at_completes_paths_and_slash_completes_commands() {
        let paths = vec!["src/main.rs".to_owned(), "src/lib.rs".to_owned(), "README.md".to_owned()];
        let commands =
            vec![SlashCommand::new("resume", "resume a session"), SlashCommand::new("quit", "quit")];
        let mut e = typed("look at @src/m");
        let c = complete(&e, &paths, &commands).unwrap_or_else(|| unreachable!());
        assert_eq!(c.kind, CompletionKind::Path);
        assert_eq!(c.items, [("src/main.rs".to_owned(), String::new())]);
        accept(&mut e, &c, "src/main.rs");
        assert_eq!(e.text(), "look at @src/main.rs ");
        assert_eq!(complete(&e, &paths, &commands), None, "nothing after the space");

        let mut e = typed("/re");
        let c = complete(&e, &paths, &commands).unwrap_or_else(|| unreachable!());
        assert_eq!(c.items[0], ("resume".to_owned(), "resume a session".to_owned()));
        accept(&mut e, &c, "resume");
        assert_eq!(e.text(), "/resume ");
        assert_eq!(complete(&typed("say /re"), &paths, &commands), None, "only at the start");
        assert_eq!(complete(&typed("/quit"), &paths, &commands), None, "already whole");
        assert_eq!(complete(&typed("@lib"), &paths, &commands).map(|c| c.items.len()), Some(1), "substring");
    }
}
