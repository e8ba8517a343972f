//! A running command's newest lines for the front end: output is split into
//! lines as it arrives (a `\r` starts its line again, as a terminal would),
//! the last few are kept, and [`Live::flush`] reports them through the
//! call's progress sink when something changed. The run loop calls it on a
//! timer, so a command printing a million lines makes a few reports a
//! second, not a million.

use std::collections::VecDeque;

use bosun_core::event::{OUTPUT_LINE_BYTES, OUTPUT_TAIL_LINES};
use bosun_core::tool::ProgressSink;

/// The newest lines of one call's output.
#[derive(Debug)]
pub(super) struct Live {
    sink: ProgressSink,
    /// Finished lines, oldest first, at most [`OUTPUT_TAIL_LINES`].
    done: VecDeque<Vec<u8>>,
    /// The line being written, cut at [`OUTPUT_LINE_BYTES`].
    current: Vec<u8>,
    /// A `\r` was the last byte: the line starts again unless `\n` follows.
    carriage: bool,
    /// Finished lines so far.
    finished: u64,
    /// Output arrived since the last report.
    dirty: bool,
}

impl Live {
    pub(super) fn new(sink: ProgressSink) -> Self {
        Self {
            sink,
            done: VecDeque::with_capacity(OUTPUT_TAIL_LINES),
            current: Vec::new(),
            carriage: false,
            finished: 0,
            dirty: false,
        }
    }

    /// Takes a chunk of output.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.dirty = true;
        for &byte in chunk {
            match byte {
                b'\n' => {
                    self.carriage = false;
                    self.finished += 1;
                    if self.done.len() == OUTPUT_TAIL_LINES {
                        self.done.pop_front();
                    }
                    self.done.push_back(std::mem::take(&mut self.current));
                }
                b'\r' => self.carriage = true,
                _ => {
                    if std::mem::take(&mut self.carriage) {
                        self.current.clear();
                    }
                    if self.current.len() < OUTPUT_LINE_BYTES {
                        self.current.push(byte);
                    }
                }
            }
        }
    }

    /// The newest lines (the one being written last, when it has text) and
    /// the lines written so far.
    pub(super) fn snapshot(&self) -> (Vec<String>, u64) {
        let mut tail: Vec<String> =
            self.done.iter().map(|line| String::from_utf8_lossy(line).into_owned()).collect();
        let mut lines = self.finished;
        if !self.current.is_empty() {
            tail.push(String::from_utf8_lossy(&self.current).into_owned());
            lines += 1;
        }
        tail.drain(..tail.len().saturating_sub(OUTPUT_TAIL_LINES));
        (tail, lines)
    }

    /// Reports the newest lines if output arrived since the last report.
    pub(super) fn flush(&mut self) {
        if std::mem::take(&mut self.dirty) {
            let (tail, lines) = self.snapshot();
            self.sink.output(tail, lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Live {
        Live::new(ProgressSink::disconnected())
    }

    #[test]
    fn lines_are_split_across_chunks_and_the_newest_kept() {
        let mut live = live();
        let text: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        for chunk in text.as_bytes().chunks(7) {
            live.push(chunk);
        }
        live.push(b"partial");
        let (tail, lines) = live.snapshot();
        assert_eq!(lines, 26);
        assert_eq!(tail.len(), OUTPUT_TAIL_LINES);
        assert_eq!(tail.first().map(String::as_str), Some("line 17"));
        assert_eq!(tail.last().map(String::as_str), Some("partial"));
    }

    #[test]
    fn a_carriage_return_starts_the_line_again_but_crlf_ends_it() {
        let mut live = live();
        live.push(b"10%\r");
        live.push(b"55%\r100%\r\ndone\r\n");
        let (tail, lines) = live.snapshot();
        assert_eq!(tail, ["100%", "done"]);
        assert_eq!(lines, 2);
    }

    #[test]
    fn a_long_line_is_cut_and_a_report_needs_new_output() {
        let mut live = live();
        live.push(&vec![b'x'; 3 * OUTPUT_LINE_BYTES]);
        assert!(live.dirty);
        assert_eq!(live.snapshot().0[0].len(), OUTPUT_LINE_BYTES);
        live.flush();
        assert!(!live.dirty, "reported");
        live.push(b"");
        assert!(!live.dirty, "nothing new, nothing to report");
    }
}
