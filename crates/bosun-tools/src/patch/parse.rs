//! The envelope parser: patch text to [`Patch`], with every error naming the
//! 1-based line of the patch where it was found.
//!
//! The text is split into lines (a trailing `\r` dropped from each), blank
//! lines around the whole are ignored, and a heredoc wrapper is peeled off
//! before `*** Begin Patch` is required. Markers (`*** …`) must start at
//! column 0; trailing whitespace after them is ignored.

use std::collections::HashMap;

use super::plan::path_key;
use super::{Hunk, HunkLine, Operation, Patch, PatchError, clip};

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const DELETE_FILE: &str = "*** Delete File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// Parse a patch. See the [module documentation](super) for the format.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let lines: Vec<Line<'_>> = text
        .split('\n')
        .enumerate()
        .map(|(index, text)| Line { number: index + 1, text: text.strip_suffix('\r').unwrap_or(text) })
        .collect();
    let body = envelope_body(&lines)?;
    let mut parser = Parser { lines: body, pos: 0, seen: HashMap::new() };
    parser.operations()
}

#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

/// Everything after `*** Begin Patch`, up to the end of the (unwrapped)
/// text; the parser finds `*** End Patch` itself.
fn envelope_body<'l, 'a>(lines: &'l [Line<'a>]) -> Result<&'l [Line<'a>], PatchError> {
    let mut lines = trim_blank(lines);
    if let (Some(first), Some(last)) = (lines.first(), lines.last())
        && first.text.trim() != BEGIN_PATCH
        && let Some(delimiter) = heredoc_delimiter(first.text)
    {
        if lines.len() < 2 || last.text.trim() != delimiter {
            return Err(syntax(
                last.number,
                format!("the heredoc opened at line {} is not closed by `{delimiter}`", first.number),
            ));
        }
        lines = trim_blank(&lines[1..lines.len() - 1]);
    }
    let Some(first) = lines.first() else {
        return Err(syntax(1, "the patch is empty; expected `*** Begin Patch`".to_owned()));
    };
    if first.text.trim() != BEGIN_PATCH {
        return Err(syntax(first.number, format!("expected `{BEGIN_PATCH}`, found `{}`", clip(first.text))));
    }
    Ok(&lines[1..])
}

fn trim_blank<'l, 'a>(mut lines: &'l [Line<'a>]) -> &'l [Line<'a>] {
    while let [first, rest @ ..] = lines
        && first.text.trim().is_empty()
    {
        lines = rest;
    }
    while let [rest @ .., last] = lines
        && last.text.trim().is_empty()
    {
        lines = rest;
    }
    lines
}

/// `EOF` from `apply_patch <<'EOF'`, `<<"EOF"`, `<<EOF` or `<<-EOF`.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let (_, after) = line.split_once("<<")?;
    let after = after.strip_prefix('-').unwrap_or(after).trim_start();
    let after = after.strip_prefix(['\'', '"']).unwrap_or(after);
    let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
    let delimiter = &after[..end];
    (!delimiter.is_empty()).then_some(delimiter)
}

fn syntax(line: usize, message: String) -> PatchError {
    PatchError::Syntax { line, message }
}

/// A line starting with `***`, classified.
enum Marker<'a> {
    EndPatch,
    Add(&'a str),
    Delete(&'a str),
    Update(&'a str),
    MoveTo(&'a str),
    EndOfFile,
    Unknown,
}

fn marker(text: &str) -> Option<Marker<'_>> {
    if !text.starts_with("***") {
        return None;
    }
    let text = text.trim_end();
    Some(if text == END_PATCH {
        Marker::EndPatch
    } else if text == END_OF_FILE {
        Marker::EndOfFile
    } else if let Some(path) = text.strip_prefix(ADD_FILE) {
        Marker::Add(path.trim())
    } else if let Some(path) = text.strip_prefix(DELETE_FILE) {
        Marker::Delete(path.trim())
    } else if let Some(path) = text.strip_prefix(UPDATE_FILE) {
        Marker::Update(path.trim())
    } else if let Some(path) = text.strip_prefix(MOVE_TO) {
        Marker::MoveTo(path.trim())
    } else {
        Marker::Unknown
    })
}

fn unknown_marker(line: Line<'_>) -> PatchError {
    syntax(
        line.number,
        format!(
            "unknown marker `{}`; expected `{ADD_FILE}`, `{DELETE_FILE}`, `{UPDATE_FILE}`, \
             `{MOVE_TO}`, `{END_OF_FILE}` or `{END_PATCH}`",
            clip(line.text)
        ),
    )
}

struct Parser<'l, 'a> {
    lines: &'l [Line<'a>],
    pos: usize,
    /// Normalised path to the line that first named it.
    seen: HashMap<String, usize>,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.pos).copied()
    }

    fn last_line(&self) -> usize {
        self.lines.last().map_or(1, |line| line.number)
    }

    fn operations(&mut self) -> Result<Patch, PatchError> {
        let mut operations = Vec::new();
        let end_line = loop {
            let Some(line) = self.peek() else {
                return Err(PatchError::MissingEndPatch { last_line: self.last_line() });
            };
            match marker(line.text) {
                Some(Marker::EndPatch) => break line.number,
                Some(Marker::Add(path)) => operations.push(self.add(line, path)?),
                Some(Marker::Delete(path)) => {
                    self.pos += 1;
                    let path = self.claim(line, DELETE_FILE, path)?;
                    operations.push(Operation::Delete { path });
                }
                Some(Marker::Update(path)) => operations.push(self.update(line, path)?),
                Some(Marker::MoveTo(_)) => return Err(misplaced_move(line)),
                Some(Marker::EndOfFile) => {
                    return Err(syntax(line.number, format!("`{END_OF_FILE}` must follow a hunk")));
                }
                Some(Marker::Unknown) => return Err(unknown_marker(line)),
                None if line.text.trim().is_empty() => self.pos += 1,
                None => {
                    return Err(syntax(
                        line.number,
                        format!(
                            "expected `{ADD_FILE}`, `{DELETE_FILE}`, `{UPDATE_FILE}` or `{END_PATCH}`, \
                             found `{}`",
                            clip(line.text)
                        ),
                    ));
                }
            }
        };
        if let Some(extra) = self.lines[self.pos + 1..].iter().find(|line| !line.text.trim().is_empty()) {
            return Err(syntax(
                extra.number,
                format!("unexpected text after `{END_PATCH}`: `{}`", clip(extra.text)),
            ));
        }
        if operations.is_empty() {
            return Err(syntax(
                end_line,
                format!("no file operations between `{BEGIN_PATCH}` and `{END_PATCH}`"),
            ));
        }
        Ok(Patch { operations })
    }

    /// Check a header's path: not empty, not named before.
    fn claim(&mut self, line: Line<'_>, header: &'static str, path: &str) -> Result<String, PatchError> {
        if path.is_empty() {
            return Err(PatchError::EmptyPath { line: line.number, header });
        }
        if self.seen.insert(path_key(path), line.number).is_some() {
            return Err(PatchError::DuplicatePath { path: path.to_owned(), line: Some(line.number) });
        }
        Ok(path.to_owned())
    }

    fn add(&mut self, header: Line<'_>, path: &str) -> Result<Operation, PatchError> {
        self.pos += 1;
        let path = self.claim(header, ADD_FILE, path)?;
        let mut content = String::new();
        let mut pending_blank_lines = 0;
        while let Some(line) = self.peek() {
            if let Some(text) = line.text.strip_prefix('+') {
                for _ in 0..pending_blank_lines {
                    content.push('\n');
                }
                pending_blank_lines = 0;
                content.push_str(text);
                content.push('\n');
            } else if line.text.trim().is_empty() {
                pending_blank_lines += 1;
            } else if marker(line.text).is_some() {
                break;
            } else {
                return Err(syntax(
                    line.number,
                    format!(
                        "expected a content line starting with '+' for `{ADD_FILE} {path}`, found `{}`",
                        clip(line.text)
                    ),
                ));
            }
            self.pos += 1;
        }
        Ok(Operation::Add { path, content })
    }

    fn update(&mut self, header: Line<'_>, path: &str) -> Result<Operation, PatchError> {
        self.pos += 1;
        let path = self.claim(header, UPDATE_FILE, path)?;
        let mut move_to = None;
        if let Some(line) = self.peek()
            && let Some(Marker::MoveTo(target)) = marker(line.text)
        {
            self.pos += 1;
            move_to = Some(self.claim(line, MOVE_TO, target)?);
        }
        let mut hunks = Vec::new();
        let mut current: Option<Hunk> = None;
        while let Some(line) = self.peek() {
            match marker(line.text) {
                None => {}
                Some(Marker::EndOfFile) => {
                    let Some(mut hunk) = current.take() else {
                        return Err(syntax(
                            line.number,
                            format!("`{END_OF_FILE}` must follow a hunk's lines"),
                        ));
                    };
                    hunk.at_end_of_file = true;
                    hunks.push(finished(hunk)?);
                    self.pos += 1;
                    continue;
                }
                Some(Marker::MoveTo(_)) => return Err(misplaced_move(line)),
                Some(Marker::Unknown) => return Err(unknown_marker(line)),
                Some(_) => break,
            }
            self.pos += 1;
            if let Some(rest) = line.text.strip_prefix("@@") {
                if let Some(hunk) = current.take() {
                    hunks.push(finished(hunk)?);
                }
                current = Some(Hunk {
                    header: hunk_header(rest),
                    lines: Vec::new(),
                    at_end_of_file: false,
                    patch_line: line.number,
                });
                continue;
            }
            // Blank lines between hunks, or before the first, separate.
            if current.is_none() && line.text.trim().is_empty() {
                continue;
            }
            let hunk_line = match line.text.chars().next() {
                Some(' ') => HunkLine::Context(line.text[1..].to_owned()),
                Some('-') => HunkLine::Remove(line.text[1..].to_owned()),
                Some('+') => HunkLine::Add(line.text[1..].to_owned()),
                // An empty (or whitespace-only) line is an empty context line.
                _ if line.text.trim().is_empty() => HunkLine::Context(String::new()),
                Some(_) | None => {
                    return Err(syntax(
                        line.number,
                        format!(
                            "expected a hunk line starting with ' ', '-' or '+', found `{}`",
                            clip(line.text)
                        ),
                    ));
                }
            };
            match current.as_mut() {
                Some(hunk) => hunk.lines.push(hunk_line),
                None if hunks.is_empty() => {
                    current = Some(Hunk {
                        header: None,
                        lines: vec![hunk_line],
                        at_end_of_file: false,
                        patch_line: line.number,
                    });
                }
                None => {
                    return Err(syntax(
                        line.number,
                        format!(
                            "expected `@@`, a file header or `{END_PATCH}` after `{END_OF_FILE}`, found `{}`",
                            clip(line.text)
                        ),
                    ));
                }
            }
        }
        if let Some(hunk) = current {
            hunks.push(finished(hunk)?);
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(PatchError::NoHunks { line: header.number, path });
        }
        Ok(Operation::Update { path, move_to, hunks })
    }
}

fn misplaced_move(line: Line<'_>) -> PatchError {
    syntax(line.number, format!("`{MOVE_TO}` must come directly after `{UPDATE_FILE}`"))
}

/// A hunk must have at least one line that is not an empty context line.
fn finished(hunk: Hunk) -> Result<Hunk, PatchError> {
    if hunk.lines.iter().all(|line| matches!(line, HunkLine::Context(text) if text.is_empty())) {
        return Err(syntax(
            hunk.patch_line,
            "empty hunk: expected lines starting with ' ', '-' or '+' after `@@`".to_owned(),
        ));
    }
    Ok(hunk)
}

/// The text after `@@`, trimmed, with a unified-diff range (`-1,3 +1,4 @@`)
/// dropped; `None` when nothing is left.
fn hunk_header(rest: &str) -> Option<String> {
    let text = rest.trim();
    let text = text
        .strip_prefix('-')
        .and_then(|after| after.split_once("@@"))
        .filter(|(range, _)| {
            let mut parts = range.split_whitespace();
            matches!(
                (parts.next(), parts.next(), parts.next()),
                (Some(old), Some(new), None) if is_range(old) && new.strip_prefix('+').is_some_and(is_range)
            )
        })
        .map_or(text, |(_, after)| after.trim());
    (!text.is_empty()).then(|| text.to_owned())
}

/// `12` or `12,7`.
fn is_range(text: &str) -> bool {
    let mut parts = text.split(',');
    let numeric = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    matches!((parts.next(), parts.next(), parts.next()), (Some(a), b, None) if numeric(a) && b.is_none_or(numeric))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrap(body: &str) -> String {
        format!("*** Begin Patch\n{body}*** End Patch\n")
    }

    fn syntax_line(text: &str) -> (usize, String) {
        match parse(text) {
            Err(PatchError::Syntax { line, message }) => (line, message),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    fn context(text: &str) -> HunkLine {
        HunkLine::Context(text.to_owned())
    }

    #[test]
    fn parses_each_header_kind_with_move_hunk_header_and_end_of_file() {
        let text = wrap(
            "*** Add File: new.txt\n+one\n+two\n*** Delete File: old.txt\n*** Update File: src.rs\n\
             *** Move to: renamed.rs\n@@ fn main() {\n keep\n-old\n+new\n@@\n-another\n+change\n*** End of File\n",
        );
        let patch = parse(&text).unwrap();
        let [add, delete, update] = patch.operations.as_slice() else { panic!("{patch:?}") };
        assert_eq!(add, &Operation::Add { path: "new.txt".into(), content: "one\ntwo\n".into() });
        assert_eq!(delete, &Operation::Delete { path: "old.txt".into() });
        let Operation::Update { path, move_to, hunks } = update else { panic!("{update:?}") };
        assert_eq!((path.as_str(), move_to.as_deref()), ("src.rs", Some("renamed.rs")));
        assert_eq!(hunks[0].header.as_deref(), Some("fn main() {"));
        assert_eq!(
            hunks[0].lines,
            [context("keep"), HunkLine::Remove("old".into()), HunkLine::Add("new".into())]
        );
        assert_eq!((hunks[0].patch_line, hunks[0].at_end_of_file), (8, false));
        assert_eq!(
            (hunks[1].header.as_deref(), hunks[1].patch_line, hunks[1].at_end_of_file),
            (None, 12, true)
        );
    }

    #[test]
    fn first_hunk_may_omit_its_at_at_line_and_empty_lines_are_empty_context() {
        let patch = parse(&wrap("*** Update File: a\n x\n\n-y\n+z\n")).unwrap();
        let Operation::Update { hunks, .. } = &patch.operations[0] else { panic!() };
        assert_eq!(hunks.len(), 1);
        assert_eq!(hunks[0].patch_line, 3);
        assert_eq!(
            hunks[0].lines,
            [context("x"), context(""), HunkLine::Remove("y".into()), HunkLine::Add("z".into())]
        );
    }

    #[test]
    fn unwraps_heredoc_wrappers_in_each_quoting_style() {
        for opener in ["apply_patch <<'EOF'", "<<\"EOF\"", "apply_patch <<EOF", "cat <<-EOF"] {
            let text = format!("{opener}\n{}EOF\n", wrap("*** Delete File: a\n"));
            let patch = parse(&text).unwrap_or_else(|error| panic!("{opener}: {error}"));
            assert_eq!(patch.operations, [Operation::Delete { path: "a".into() }]);
        }
    }

    #[test]
    fn tolerates_crlf_and_whitespace_around_the_patch() {
        let text = "\r\n  *** Begin Patch\r\n*** Add File: a.txt\r\n+hi\r\n*** End Patch  \r\n\r\n";
        let patch = parse(text).unwrap();
        assert_eq!(patch.operations, [Operation::Add { path: "a.txt".into(), content: "hi\n".into() }]);
    }

    #[test]
    fn add_file_keeps_inner_blank_lines_and_drops_trailing_separators() {
        let patch = parse(&wrap("*** Add File: a\n+one\n\n+three\n\n\n*** Delete File: b\n")).unwrap();
        assert_eq!(
            patch.operations[0],
            Operation::Add { path: "a".into(), content: "one\n\nthree\n".into() }
        );
        let empty = parse(&wrap("*** Add File: empty\n")).unwrap();
        assert_eq!(empty.operations[0], Operation::Add { path: "empty".into(), content: String::new() });
    }

    #[test]
    fn unified_diff_range_in_hunk_header_is_dropped() {
        let patch = parse(&wrap("*** Update File: a\n@@ -1,3 +1,4 @@ fn f()\n-x\n+y\n@@ -7 +8 @@\n-p\n+q\n"))
            .unwrap();
        let Operation::Update { hunks, .. } = &patch.operations[0] else { panic!() };
        assert_eq!(hunks[0].header.as_deref(), Some("fn f()"));
        assert_eq!(hunks[1].header, None);
    }

    #[test]
    fn update_with_move_and_no_hunks_is_a_rename() {
        let patch = parse(&wrap("*** Update File: a\n*** Move to: b\n")).unwrap();
        let expected = Operation::Update { path: "a".into(), move_to: Some("b".into()), hunks: vec![] };
        assert_eq!(patch.operations, [expected]);
    }

    #[test]
    fn error_for_a_bad_hunk_line_names_its_line() {
        let (line, message) = syntax_line(&wrap("*** Update File: a\n@@\n x\n-y\nfoo\n"));
        assert_eq!(line, 6);
        assert_eq!(message, "expected a hunk line starting with ' ', '-' or '+', found `foo`");
    }

    #[test]
    fn error_line_numbers_count_heredoc_and_leading_blank_lines() {
        let text = format!("\n\napply_patch <<'EOF'\n{}EOF", wrap("*** Update File: a\nbad\n"));
        assert_eq!(syntax_line(&text).0, 6);
    }

    #[test]
    fn error_for_missing_end_patch() {
        let error = parse("*** Begin Patch\n*** Delete File: a\n").unwrap_err();
        assert_eq!(error, PatchError::MissingEndPatch { last_line: 2 });
        assert_eq!(error.to_string(), "missing `*** End Patch` (the patch ends at line 2)");
    }

    #[test]
    fn error_for_missing_begin_patch_and_empty_patch() {
        assert_eq!(syntax_line("*** Delete File: a\n*** End Patch").0, 1);
        let (line, message) = syntax_line("\n\nhello\n");
        assert_eq!((line, message.as_str()), (3, "expected `*** Begin Patch`, found `hello`"));
        assert!(syntax_line("  \n").1.contains("empty"));
    }

    #[test]
    fn error_for_each_header_with_an_empty_path() {
        for (body, header) in [
            ("*** Add File: \n+x\n", ADD_FILE),
            ("*** Delete File:\n", DELETE_FILE),
            ("*** Update File:  \n-x\n", UPDATE_FILE),
            ("*** Update File: a\n*** Move to:\n-x\n", MOVE_TO),
        ] {
            let error = parse(&wrap(body)).unwrap_err();
            let line = if header == MOVE_TO { 3 } else { 2 };
            assert_eq!(error, PatchError::EmptyPath { line, header });
            assert_eq!(error.to_string(), format!("line {line}: `{header}` with an empty path"));
        }
    }

    #[test]
    fn error_for_a_path_named_twice_including_move_targets_and_dot_slash() {
        let error = parse(&wrap("*** Delete File: a.txt\n*** Add File: ./a.txt\n+x\n")).unwrap_err();
        assert_eq!(error.to_string(), "line 3: file `./a.txt` appears twice in the patch");
        let error = parse(&wrap("*** Delete File: b\n*** Update File: a\n*** Move to: b\n")).unwrap_err();
        assert_eq!(error, PatchError::DuplicatePath { path: "b".into(), line: Some(4) });
    }

    #[test]
    fn error_for_update_without_hunks_or_move() {
        let error = parse(&wrap("*** Update File: a\n*** Delete File: b\n")).unwrap_err();
        assert_eq!(error.to_string(), "line 2: `*** Update File: a` has no hunks");
    }

    #[test]
    fn error_for_an_empty_hunk() {
        let (line, message) = syntax_line(&wrap("*** Update File: a\n@@\n-x\n@@ fn f\n\n@@\n+y\n"));
        assert_eq!(line, 5);
        assert!(message.starts_with("empty hunk"), "{message}");
    }

    #[test]
    fn error_for_misplaced_markers() {
        let (line, message) = syntax_line(&wrap("*** Update File: a\n-x\n*** Move to: b\n"));
        assert_eq!(
            (line, message.as_str()),
            (4, "`*** Move to:` must come directly after `*** Update File:`")
        );
        assert_eq!(syntax_line(&wrap("*** Update File: a\n@@\n*** End of File\n")).0, 4);
        assert_eq!(syntax_line(&wrap("*** Delete File: a\n*** End of File\n")).0, 3);
        let (line, message) = syntax_line(&wrap("*** Update File: a\n-x\n*** End of File\n-y\n"));
        assert_eq!(line, 5);
        assert!(message.starts_with("expected `@@`"), "{message}");
        let (line, message) = syntax_line(&wrap("*** Delete File: a\n*** Rename File: b\n"));
        assert_eq!(line, 3);
        assert!(message.starts_with("unknown marker `*** Rename File: b`"), "{message}");
    }

    #[test]
    fn error_for_add_content_without_plus_and_stray_text() {
        let (line, message) = syntax_line(&wrap("*** Add File: a\n+x\ny\n"));
        assert_eq!(
            (line, message.as_str()),
            (4, "expected a content line starting with '+' for `*** Add File: a`, found `y`")
        );
        let (line, message) = syntax_line(&wrap("*** Delete File: a\nsomething\n"));
        assert_eq!(line, 3);
        assert!(message.ends_with("found `something`"), "{message}");
    }

    #[test]
    fn error_for_text_after_end_patch_unclosed_heredoc_and_no_operations() {
        assert_eq!(syntax_line(&format!("{}trailing\n", wrap("*** Delete File: a\n"))).0, 4);
        let (line, message) = syntax_line(&format!("apply_patch <<'EOF'\n{}", wrap("*** Delete File: a\n")));
        assert_eq!((line, message.as_str()), (4, "the heredoc opened at line 1 is not closed by `EOF`"));
        let (line, message) = syntax_line("*** Begin Patch\n\n*** End Patch");
        assert_eq!(
            (line, message.as_str()),
            (3, "no file operations between `*** Begin Patch` and `*** End Patch`")
        );
    }
}
