//! Hunk location and application to text ([`apply_hunks`]), and the
//! all-or-nothing planning of a whole patch ([`plan`]).
//!
//! A file is handled as lines, each remembering its own terminator (`\n`,
//! `\r\n`, or none for a last line without one), so untouched and context
//! lines come out byte for byte as they went in. Added lines take the file's
//! style: the terminator of its first line, `\n` when it has none.

use std::collections::HashSet;

use super::{FileChange, Hunk, HunkLine, Operation, Patch, PatchError, clip};

/// How many of a hunk's expected lines a mismatch error shows.
const SHOWN_LINES: usize = 5;

/// Check every operation of `patch` against the files `read` returns, and
/// say what to write. Nothing is returned unless every operation succeeds:
/// adds target missing files, deletes and updates existing ones, moves
/// missing targets, no path is named twice, and every hunk applies.
///
/// `read(path)` gives `Ok(Some(content))` for an existing file, `Ok(None)`
/// for a missing one and `Err(reason)` when the path is refused; it is
/// called with paths exactly as the patch wrote them. The changes come back
/// in patch order.
pub fn plan(
    patch: &Patch,
    read: &mut dyn FnMut(&str) -> Result<Option<String>, String>,
) -> Result<Vec<FileChange>, PatchError> {
    let mut seen = HashSet::new();
    for operation in &patch.operations {
        let move_to = match operation {
            Operation::Update { move_to, .. } => move_to.as_deref(),
            Operation::Add { .. } | Operation::Delete { .. } => None,
        };
        for path in std::iter::once(operation.path()).chain(move_to) {
            if !seen.insert(path_key(path)) {
                return Err(PatchError::DuplicatePath { path: path.to_owned(), line: None });
            }
        }
    }
    let mut read =
        |path: &str| read(path).map_err(|message| PatchError::Read { path: path.to_owned(), message });
    let mut changes = Vec::with_capacity(patch.operations.len());
    for operation in &patch.operations {
        changes.push(match operation {
            Operation::Add { path, content } => {
                if read(path)?.is_some() {
                    return Err(PatchError::AddExisting { path: path.clone() });
                }
                FileChange::Write { path: path.clone(), content: content.clone(), create: true }
            }
            Operation::Delete { path } => {
                if read(path)?.is_none() {
                    return Err(PatchError::Missing { path: path.clone(), operation: "delete" });
                }
                FileChange::Delete { path: path.clone() }
            }
            Operation::Update { path, move_to, hunks } => {
                let Some(original) = read(path)? else {
                    return Err(PatchError::Missing { path: path.clone(), operation: "update" });
                };
                let content = apply_hunks(path, &original, hunks)?;
                match move_to {
                    Some(to) => {
                        if read(to)?.is_some() {
                            return Err(PatchError::MoveOntoExisting { from: path.clone(), to: to.clone() });
                        }
                        FileChange::Move { from: path.clone(), to: to.clone(), content }
                    }
                    None => FileChange::Write { path: path.clone(), content, create: false },
                }
            }
        });
    }
    Ok(changes)
}

/// A path as compared for "named twice": empty and `.` components dropped,
/// so `./a//b` and `a/b` are one file. `..` is left alone (the caller's
/// workspace refuses what escapes).
pub(super) fn path_key(path: &str) -> String {
    path.split('/').filter(|part| !part.is_empty() && *part != ".").collect::<Vec<_>>().join("/")
}

/// Apply `hunks`, in order, to `original` (the content of `path`, which is
/// used only in errors) and return the new content.
///
/// Each hunk is searched for from the line after the previous hunk's match.
/// A header (`@@ text`) is found first, at or after that position, and the
/// hunk searched for after it. The hunk's context and removed lines must
/// appear as consecutive lines: compared exactly, else ignoring trailing
/// whitespace, else ignoring leading and trailing whitespace; the first
/// match at the first level that has one wins, so repeated text is
/// disambiguated by earlier hunks and headers. A hunk marked `*** End of
/// File` must match at the end. A hunk with no context or removed lines
/// inserts at the current position (after its header; at the end when so
/// marked). Empty context lines at the end of a hunk that does not match
/// are taken for separators and the hunk retried without them.
///
/// Context lines keep the file's text; line endings and the presence or
/// absence of a final newline are preserved.
pub fn apply_hunks(path: &str, original: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let lines = split_lines(original);
    let newline = lines.iter().map(|line| line.end).find(|end| !end.is_empty()).unwrap_or("\n");
    let final_newline = lines.last().is_none_or(|line| !line.end.is_empty());
    let mut out: Vec<FileLine<'_>> = Vec::with_capacity(lines.len());
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let (start, body) = locate(path, &lines, hunk, index + 1, cursor)?;
        out.extend_from_slice(&lines[cursor..start]);
        let mut at = start;
        for line in body {
            match line {
                HunkLine::Context(_) => {
                    out.extend(lines.get(at).copied());
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => out.push(FileLine { text, end: "" }),
            }
        }
        cursor = at;
    }
    out.extend_from_slice(&lines[cursor..]);
    let mut content = String::with_capacity(original.len());
    let count = out.len();
    for (index, line) in out.iter().enumerate() {
        content.push_str(line.text);
        if index + 1 < count || final_newline {
            content.push_str(if line.end.is_empty() { newline } else { line.end });
        }
    }
    Ok(content)
}

/// A line of a file and its terminator.
#[derive(Debug, Clone, Copy)]
struct FileLine<'a> {
    text: &'a str,
    /// `"\n"`, `"\r\n"`, or `""` for a last line without one (and for added
    /// lines, which get the file's style).
    end: &'static str,
}

fn split_lines(text: &str) -> Vec<FileLine<'_>> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(newline) = rest.find('\n') else {
            lines.push(FileLine { text: rest, end: "" });
            break;
        };
        let line = &rest[..newline];
        lines.push(match line.strip_suffix('\r') {
            Some(text) => FileLine { text, end: "\r\n" },
            None => FileLine { text: line, end: "\n" },
        });
        rest = &rest[newline + 1..];
    }
    lines
}

/// Where `hunk` (the `number`th) applies, searching from line `cursor`, and
/// which of its lines to apply there (all, or all but trailing empty
/// context lines).
fn locate<'h>(
    path: &str,
    lines: &[FileLine<'_>],
    hunk: &'h Hunk,
    number: usize,
    cursor: usize,
) -> Result<(usize, &'h [HunkLine]), PatchError> {
    let mut from = cursor;
    let mut header_at = None;
    if let Some(header) = &hunk.header {
        let Some(found) = seek(lines, &[header.as_str()], cursor, false) else {
            return Err(PatchError::HeaderNotFound {
                path: path.to_owned(),
                hunk: number,
                patch_line: hunk.patch_line,
                header: header.clone(),
                from_line: cursor + 1,
            });
        };
        header_at = Some(found);
        from = found + 1;
    }
    let full = hunk.lines.as_slice();
    let blank_tail =
        full.iter().rev().take_while(|line| matches!(line, HunkLine::Context(t) if t.is_empty()));
    let trimmed = &full[..full.len() - blank_tail.count()];
    for body in [full, trimmed] {
        let old: Vec<&str> = old_side(body).collect();
        if old.is_empty() {
            return Ok((if hunk.at_end_of_file { lines.len() } else { from }, body));
        }
        // The header line may itself be the hunk's first context line.
        let starts = std::iter::once(from).chain(header_at);
        if let Some(start) = starts.filter_map(|start| seek(lines, &old, start, hunk.at_end_of_file)).next() {
            return Ok((start, body));
        }
        if trimmed.len() == full.len() {
            break;
        }
    }
    let old: Vec<&str> = old_side(full).collect();
    let mut expected: Vec<String> = full
        .iter()
        .filter_map(|line| match line {
            HunkLine::Context(text) => Some(format!("     {}", clip(text))),
            HunkLine::Remove(text) => Some(format!("    -{}", clip(text))),
            HunkLine::Add(_) => None,
        })
        .take(SHOWN_LINES)
        .collect();
    if old.len() > SHOWN_LINES {
        expected.push(format!("    … and {} more", old.len() - SHOWN_LINES));
    }
    Err(PatchError::HunkNotFound {
        path: path.to_owned(),
        hunk: number,
        patch_line: hunk.patch_line,
        expected: expected.join("\n"),
        from_line: from + 1,
        at_end_of_file: hunk.at_end_of_file,
    })
}

pub(super) fn old_side(lines: &[HunkLine]) -> impl Iterator<Item = &str> {
    lines.iter().filter_map(|line| match line {
        HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
        HunkLine::Add(_) => None,
    })
}

/// How strictly two lines are compared; tried in this order.
#[derive(Debug, Clone, Copy)]
enum Level {
    Exact,
    IgnoreTrailingWhitespace,
    IgnoreSurroundingWhitespace,
}

impl Level {
    const ALL: [Self; 3] = [Self::Exact, Self::IgnoreTrailingWhitespace, Self::IgnoreSurroundingWhitespace];

    fn same(self, file: &str, patch: &str) -> bool {
        match self {
            Self::Exact => file == patch,
            Self::IgnoreTrailingWhitespace => file.trim_end() == patch.trim_end(),
            Self::IgnoreSurroundingWhitespace => file.trim() == patch.trim(),
        }
    }
}

/// The first line index at or after `from` where `pattern` (non-empty)
/// appears, at the strictest level that finds it; with `at_end`, only a
/// match ending at the last line counts.
fn seek(lines: &[FileLine<'_>], pattern: &[&str], from: usize, at_end: bool) -> Option<usize> {
    let last_start = lines.len().checked_sub(pattern.len())?;
    if from > last_start {
        return None;
    }
    let starts = if at_end { last_start..=last_start } else { from..=last_start };
    Level::ALL.into_iter().find_map(|level| {
        starts.clone().find(|&start| {
            lines[start..].iter().zip(pattern).all(|(line, expected)| level.same(line.text, expected))
        })
    })
}

#[cfg(test)]
mod tests;
