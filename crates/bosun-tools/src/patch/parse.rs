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

/// Every path a patch's headers name (added, deleted, updated, moved to),
/// whether or not the patch parses: what the permission pipeline checks
/// against protected paths before anything runs.
pub fn named_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| match marker(line.trim_start()) {
            Some(Marker::Add(path) | Marker::Delete(path) | Marker::Update(path) | Marker::MoveTo(path)) => {
                Some(path.to_owned())
            }
            _ => None,
        })
        .collect()
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
mod tests;
