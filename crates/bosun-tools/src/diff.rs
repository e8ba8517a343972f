//! Unified diffs of a file before and after a change.
//!
//! [`unified_diff`] diffs two whole texts. [`edit_diff`] answers an edit
//! whose replaced byte ranges are known: it diffs only a window of lines
//! around each range, so an edit of one line of a 10 MB file does not
//! tokenise and hash every line of it, and it numbers the hunks as lines of
//! the whole file. Lines are split as `similar` splits them (after `\n`,
//! `\r\n` or a lone `\r`), so a window's lines are the file's lines.
//!
//! Why a window gives the whole-file answer: outside the windows both texts
//! are the same bytes, so the whole-file diff (Myers, which first strips the
//! common prefix and suffix) reaches the first and last differing lines
//! exactly as a window's diff does, provided the common prefix stops inside
//! the window; a window whose change comes too close to its end is grown
//! until it does. With one window the rest of the work is the same diff of
//! the same lines. With several, Myers on the whole file splits the span
//! between them at its own middle, which may align an ambiguous change
//! (a block of repeated lines) differently, though as minimally; a change in
//! several windows of a small file is therefore diffed whole.

#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::ops::Range;

use similar::udiff::UnifiedHunkHeader;
use similar::{DiffOp, DiffTag, TextDiff, group_diff_ops};

use crate::workspace::RelPath;

/// Lines of context around each change in a hunk.
const CONTEXT: usize = 3;
/// Unchanged lines a window starts with before its first replaced range and
/// ends with after its last; more than [`CONTEXT`], so a hunk's context is
/// inside the window.
const MARGIN: usize = CONTEXT + 1;
/// At most this size, a change in several windows is diffed whole (see the
/// module docs); a whole diff of it takes a few milliseconds.
const WHOLE_FILE_MAX_BYTES: usize = 256 * 1024;

/// A unified diff between two versions of `path`.
pub(crate) fn unified_diff(path: &RelPath, before: &str, after: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// One replaced range: its bytes in the text before and in the text after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replaced {
    pub(crate) old: Range<usize>,
    pub(crate) new: Range<usize>,
}

/// `text` with `old` replaced by `new`, the first time or every time (the
/// text `str::replacen(.., 1)` or `str::replace` gives), and the ranges
/// replaced.
pub(crate) fn replace(text: &str, old: &str, new: &str, every: bool) -> (String, Vec<Replaced>) {
    let mut out = String::with_capacity(text.len());
    let mut replaced = Vec::new();
    let mut copied = 0;
    for (at, _) in text.match_indices(old).take(if every { usize::MAX } else { 1 }) {
        out.push_str(&text[copied..at]);
        let start = out.len();
        out.push_str(new);
        replaced.push(Replaced { old: at..at + old.len(), new: start..out.len() });
        copied = at + old.len();
    }
    out.push_str(&text[copied..]);
    (out, replaced)
}

/// The unified diff of an edit: `after` is `before` with each of
/// `replaced` (in order, not overlapping) replaced. The text
/// [`unified_diff`] gives, from windows around the replaced ranges (but for
/// the alignment of repeated lines in a change in several windows of a large
/// file, see the module docs).
pub(crate) fn edit_diff(path: &RelPath, before: &str, after: &str, replaced: &[Replaced]) -> String {
    let windowed = match windows(before.as_bytes(), replaced) {
        Some(spans) if spans.len() == 1 || before.len() > WHOLE_FILE_MAX_BYTES => {
            windowed_diff(path, before, after, replaced, spans)
        }
        _ => None,
    };
    // `None` only for ranges that do not describe the two texts; the whole
    // diff is still right then.
    windowed.unwrap_or_else(|| unified_diff(path, before, after))
}

/// The windowed diff, whatever the number of windows (tests compare it with
/// [`unified_diff`]).
#[cfg(test)]
fn windowed(path: &RelPath, before: &str, after: &str, replaced: &[Replaced]) -> Option<String> {
    let spans = windows(before.as_bytes(), replaced)?;
    windowed_diff(path, before, after, replaced, spans)
}

/// A window: bytes `old` of the text before, holding replaced ranges
/// `first..=last`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    old: Range<usize>,
    first: usize,
    last: usize,
}

/// A window's lines on both sides and their diff, in window line numbers.
struct Window<'t> {
    span: Span,
    /// Line number (from 0) of the window's first line in the text before
    /// and in the text after.
    old_line: usize,
    new_line: usize,
    old_lines: Vec<&'t str>,
    new_lines: Vec<&'t str>,
    ops: Vec<DiffOp>,
}

impl Window<'_> {
    /// Unchanged lines after the window's last change, on the shorter side.
    fn tail(&self) -> usize {
        let change = self.ops.iter().rev().find(|op| op.tag() != DiffTag::Equal);
        change.map_or(0, |op| {
            (self.old_lines.len() - op.old_range().end).min(self.new_lines.len() - op.new_range().end)
        })
    }
}

/// Diffs each window, growing one whose change comes too close to its end,
/// then renders the hunks with the whole text's line numbers.
fn windowed_diff(
    path: &RelPath,
    before: &str,
    after: &str,
    replaced: &[Replaced],
    mut spans: Vec<Span>,
) -> Option<String> {
    let bytes = before.as_bytes();
    let mut windows: Vec<Window<'_>> = Vec::with_capacity(spans.len());
    let mut index = 0;
    let mut growth = vec![MARGIN; spans.len()];
    while index < spans.len() {
        let window = diff_window(before, after, replaced, &spans[index])?;
        let end = spans[index].old.end;
        if window.tail() >= CONTEXT || end == bytes.len() {
            windows.push(window);
            index += 1;
            continue;
        }
        // The common prefix ran (nearly) to the window's end: grow it, taking
        // in the next window if it reaches it.
        growth[index] = growth[index].saturating_mul(2);
        let grown = forward(bytes, end, growth[index], bytes.len());
        spans[index].old.end = grown;
        while index + 1 < spans.len() && spans[index + 1].old.start <= spans[index].old.end {
            let next = spans.remove(index + 1);
            growth.remove(index + 1);
            spans[index].old.end = spans[index].old.end.max(next.old.end);
            spans[index].last = next.last;
        }
    }
    number(bytes, &mut windows)?;
    render(path, &windows, bytes)
}

/// Diffs one window's lines.
fn diff_window<'t>(
    before: &'t str,
    after: &'t str,
    replaced: &[Replaced],
    span: &Span,
) -> Option<Window<'t>> {
    let (first, last) = (replaced.get(span.first)?, replaced.get(span.last)?);
    // Outside the replaced ranges both texts hold the same bytes, so the
    // window's ends sit at the same distance from them in the text after.
    let new_start = first.new.start.checked_sub(first.old.start.checked_sub(span.old.start)?)?;
    let new_end = last.new.end.checked_add(span.old.end.checked_sub(last.old.end)?)?;
    let old_text = before.get(span.old.clone())?;
    let new_text = after.get(new_start..new_end)?;
    let diff = TextDiff::from_lines(old_text, new_text);
    Some(Window {
        span: span.clone(),
        old_line: 0,
        new_line: 0,
        old_lines: diff.old_slices().to_vec(),
        new_lines: diff.new_slices().to_vec(),
        ops: diff.ops().to_vec(),
    })
}

/// Sets each window's first line numbers, counting the lines between them.
fn number(bytes: &[u8], windows: &mut [Window<'_>]) -> Option<()> {
    let (mut old_line, mut new_line, mut at) = (0, 0, 0);
    for window in windows {
        let gap = count_lines(bytes.get(at..window.span.old.start)?);
        window.old_line = old_line + gap;
        window.new_line = new_line + gap;
        old_line = window.old_line + window.old_lines.len();
        new_line = window.new_line + window.new_lines.len();
        at = window.span.old.end;
    }
    Some(())
}

/// The whole text's diff ops, from the windows' ops and the unchanged lines
/// between them, and the hunks as `similar` renders them.
fn render(path: &RelPath, windows: &[Window<'_>], bytes: &[u8]) -> Option<String> {
    let mut ops: Vec<DiffOp> = Vec::new();
    let mut push = |op: DiffOp| {
        if op.old_range().is_empty() && op.new_range().is_empty() {
            return;
        }
        // Adjacent equal runs are one run, as in a whole-file diff: hunks are
        // cut where a run is long.
        if let (DiffOp::Equal { len, .. }, Some(DiffOp::Equal { len: last, .. })) = (op, ops.last_mut()) {
            *last += len;
            return;
        }
        ops.push(op);
    };
    let (mut old_line, mut new_line) = (0, 0);
    for window in windows {
        push(DiffOp::Equal { old_index: old_line, new_index: new_line, len: window.old_line - old_line });
        for op in &window.ops {
            push(shift(*op, window.old_line, window.new_line));
        }
        old_line = window.old_line + window.old_lines.len();
        new_line = window.new_line + window.new_lines.len();
    }
    let end = windows.last()?.span.old.end;
    push(DiffOp::Equal { old_index: old_line, new_index: new_line, len: count_lines(bytes.get(end..)?) });

    let hunks: Vec<Vec<DiffOp>> =
        group_diff_ops(ops, CONTEXT).into_iter().filter(|hunk| !hunk.is_empty()).collect();
    let mut out = String::new();
    if hunks.is_empty() {
        return Some(out);
    }
    let _ = writeln!(out, "--- a/{path}\n+++ b/{path}");
    for hunk in &hunks {
        let _ = writeln!(out, "{}", UnifiedHunkHeader::new(hunk));
        for op in hunk {
            let (tag, old, new) = op.as_tag_tuple();
            if tag != DiffTag::Insert {
                let mark = if tag == DiffTag::Equal { ' ' } else { '-' };
                for line in old {
                    write_line(&mut out, mark, line_at(windows, line, Side::Old)?);
                }
            }
            if matches!(tag, DiffTag::Insert | DiffTag::Replace) {
                for line in new {
                    write_line(&mut out, '+', line_at(windows, line, Side::New)?);
                }
            }
        }
    }
    Some(out)
}

/// A line as `similar` writes it in a hunk, with its note when the line
/// does not end the file with a line break.
fn write_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with(['\r', '\n']) {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

fn shift(op: DiffOp, old: usize, new: usize) -> DiffOp {
    match op {
        DiffOp::Equal { old_index, new_index, len } => {
            DiffOp::Equal { old_index: old_index + old, new_index: new_index + new, len }
        }
        DiffOp::Delete { old_index, old_len, new_index } => {
            DiffOp::Delete { old_index: old_index + old, old_len, new_index: new_index + new }
        }
        DiffOp::Insert { old_index, new_index, new_len } => {
            DiffOp::Insert { old_index: old_index + old, new_index: new_index + new, new_len }
        }
        DiffOp::Replace { old_index, old_len, new_index, new_len } => {
            DiffOp::Replace { old_index: old_index + old, old_len, new_index: new_index + new, new_len }
        }
    }
}

#[derive(Clone, Copy)]
enum Side {
    Old,
    New,
}

/// Line `line` of the whole text before or after; every line a hunk shows
/// is in a window (a window has more unchanged lines at each end than a
/// hunk shows).
fn line_at<'t>(windows: &[Window<'t>], line: usize, side: Side) -> Option<&'t str> {
    let start = |w: &Window<'_>| match side {
        Side::Old => w.old_line,
        Side::New => w.new_line,
    };
    let after = windows.partition_point(|w| start(w) <= line);
    let window = windows.get(after.checked_sub(1)?)?;
    let lines = match side {
        Side::Old => &window.old_lines,
        Side::New => &window.new_lines,
    };
    lines.get(line - start(window)).copied()
}

/// The windows around `replaced`, in the text before: each from
/// [`MARGIN`] lines before the line of its first range to `MARGIN` lines
/// after the line of its last; ranges whose windows would meet share one.
/// Every scan stays between two ranges, so finding them reads each byte
/// between ranges a bounded number of times, however long the lines.
fn windows(bytes: &[u8], replaced: &[Replaced]) -> Option<Vec<Span>> {
    let first = replaced.first()?;
    let mut spans = Vec::new();
    let mut start = back(bytes, first.old.start, MARGIN, 0);
    let mut first_index = 0;
    for (index, pair) in replaced.windows(2).enumerate() {
        let [previous, next] = pair else { return None };
        if previous.old.end > next.old.start || next.old.start > bytes.len() {
            return None;
        }
        let end = forward(bytes, previous.old.end, MARGIN + 1, next.old.start);
        let next_start = back(bytes, next.old.start, MARGIN, end);
        if next_start > end {
            spans.push(Span { old: start..end, first: first_index, last: index });
            start = next_start;
            first_index = index + 1;
        }
    }
    let last = replaced.last()?;
    let end = forward(bytes, last.old.end, MARGIN + 1, bytes.len());
    spans.push(Span { old: start..end, first: first_index, last: replaced.len() - 1 });
    Some(spans)
}

/// Whether a line starts at `at` (the text's ends count).
fn is_line_start(bytes: &[u8], at: usize) -> bool {
    match at.checked_sub(1).and_then(|before| bytes.get(before)) {
        None => true,
        Some(b'\n') => true,
        Some(b'\r') => bytes.get(at) != Some(&b'\n'),
        Some(_) => at >= bytes.len(),
    }
}

/// The start of the line holding `at`, then of `lines` lines before it,
/// going no lower than `floor`.
fn back(bytes: &[u8], at: usize, lines: usize, floor: usize) -> usize {
    let mut at = at.min(bytes.len());
    for step in 0..=lines {
        if step > 0 {
            if at <= floor {
                return floor;
            }
            at -= 1;
        }
        while at > floor && !is_line_start(bytes, at) {
            at -= 1;
        }
    }
    at
}

/// The end of the `lines`-th line ending after `at`, going no further than
/// `limit` (returned if reached first).
fn forward(bytes: &[u8], at: usize, lines: usize, limit: usize) -> usize {
    let limit = limit.min(bytes.len());
    let mut at = at;
    for _ in 0..lines {
        if at >= limit {
            return limit;
        }
        match bytes[at..limit].iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(offset) => {
                let end = at + offset;
                let crlf = bytes.get(end) == Some(&b'\r') && bytes.get(end + 1) == Some(&b'\n');
                at = end + if crlf { 2 } else { 1 };
            }
            None => return limit,
        }
    }
    at.min(limit)
}

/// How many lines `similar` splits `bytes` into (a last line without a
/// line break counts). `bytes` starts and ends where lines do.
fn count_lines(bytes: &[u8]) -> usize {
    let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
    let lone_cr = if bytes.contains(&b'\r') {
        let mut count = 0;
        for (at, &b) in bytes.iter().enumerate() {
            if b == b'\r' && bytes.get(at + 1) != Some(&b'\n') {
                count += 1;
            }
        }
        count
    } else {
        0
    };
    let partial = !bytes.is_empty() && !bytes.ends_with(b"\n") && !bytes.ends_with(b"\r");
    breaks + lone_cr + usize::from(partial)
}
