//! The bytes a search examines: each line cut at [`MAX_LINE_BYTES`], and
//! the search stopped between reads when the call is cancelled or out of
//! time.
//!
//! Matching cost grows with the length of the line (and, for some
//! patterns, with pattern × line), and a searcher holds a whole line in
//! memory. So a line longer than the bound (minified code, a data dump) is
//! searched only in its first [`MAX_LINE_BYTES`]; the rest of it, up to its
//! newline, is skipped unread by the matcher. Newlines always pass, so line
//! numbers stay right; the tool reports how many lines were cut and the
//! first one.

use std::io::{self, Read};

/// Longest part of a line that is searched, in bytes.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most bytes taken from the file per read: half the line bound, so a read
/// that starts within the first half of a line cannot carry it past the
/// bound and needs only a look for its last newline.
const READ_BYTES: usize = MAX_LINE_BYTES / 2;

/// Lines cut short in one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CutLines {
    /// How many.
    pub(crate) count: usize,
    /// The first one's number, from 1.
    pub(crate) first: u64,
}

/// Wraps a file: cuts long lines, and reads as ended once `halted` says so.
pub(crate) struct LineCap<'h, R> {
    inner: R,
    halted: &'h dyn Fn() -> bool,
    /// Bytes of the current line passed on so far.
    in_line: usize,
    /// Past the bound of the current line: dropping until its newline.
    skipping: bool,
    /// The current line's number, from 1.
    line: u64,
    cut: CutLines,
}

impl<'h, R: Read> LineCap<'h, R> {
    pub(crate) fn new(inner: R, halted: &'h dyn Fn() -> bool) -> Self {
        Self { inner, halted, in_line: 0, skipping: false, line: 1, cut: CutLines::default() }
    }

    /// The lines cut so far.
    pub(crate) fn cut(&self) -> CutLines {
        self.cut
    }

    /// Keeps what may be searched of `buf[..n]`, in place; returns its length.
    fn filter(&mut self, buf: &mut [u8], n: usize) -> usize {
        if !self.skipping && self.in_line + n <= MAX_LINE_BYTES {
            // No line can pass the bound here: just track where the last one starts.
            self.line += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
            self.in_line = match buf[..n].iter().rposition(|&b| b == b'\n') {
                Some(last) => n - last - 1,
                None => self.in_line + n,
            };
            return n;
        }
        let (mut read, mut kept) = (0, 0);
        while read < n {
            let newline = buf[read..n].iter().position(|&b| b == b'\n').map(|at| read + at);
            let end = newline.unwrap_or(n);
            if !self.skipping {
                let room = MAX_LINE_BYTES - self.in_line;
                let take = (end - read).min(room);
                buf.copy_within(read..read + take, kept);
                kept += take;
                self.in_line += take;
                if end - read > room {
                    self.skipping = true;
                    if self.cut.count == 0 {
                        self.cut.first = self.line;
                    }
                    self.cut.count += 1;
                }
            }
            match newline {
                Some(at) => {
                    buf[kept] = b'\n';
                    kept += 1;
                    read = at + 1;
                    self.line += 1;
                    self.in_line = 0;
                    self.skipping = false;
                }
                None => read = n,
            }
        }
        kept
    }
}

impl<R: Read> Read for LineCap<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min(READ_BYTES);
        if want == 0 {
            return Ok(0);
        }
        loop {
            if (self.halted)() {
                return Ok(0);
            }
            let n = self.inner.read(&mut buf[..want])?;
            if n == 0 {
                return Ok(0);
            }
            let kept = self.filter(buf, n);
            // All of it was the skipped tail of a long line: read on.
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn through(input: &[u8], halted: &dyn Fn() -> bool) -> (Vec<u8>, CutLines) {
        let mut reader = LineCap::new(input, halted);
        let mut out = Vec::new();
        // Small reads too, to cross every boundary.
        let mut buf = [0u8; 7000];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        (out, reader.cut())
    }

    #[test]
    fn short_lines_pass_unchanged() {
        let input: Vec<u8> = (0..20_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        assert_eq!(through(&input, &|| false), (input, CutLines::default()));
    }

    #[test]
    fn long_lines_are_cut_at_the_bound_and_newlines_kept() {
        let long = "x".repeat(MAX_LINE_BYTES * 3 + 5);
        let exact = "y".repeat(MAX_LINE_BYTES);
        let input = format!("a\n{long}\n{exact}\nb\n{long}");
        let (out, cut) = through(input.as_bytes(), &|| false);
        let head = "x".repeat(MAX_LINE_BYTES);
        assert_eq!(String::from_utf8(out).unwrap(), format!("a\n{head}\n{exact}\nb\n{head}"));
        assert_eq!(cut, CutLines { count: 2, first: 2 });
    }

    #[test]
    fn a_halted_read_ends_the_input() {
        assert_eq!(through(b"some\nlines\n", &|| true).0, b"");
    }
}
