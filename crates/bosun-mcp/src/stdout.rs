//! A stdio server's stdout on its way to rmcp, watched for lines that are
//! not JSON-RPC. rmcp skips such lines silently (a server that logs to
//! stdout would otherwise break the session), so without this a server that
//! prints only garbage just looks hung; with it, the failure says what the
//! server printed.
//!
//! It also enforces the size of one message. rmcp discards a line longer
//! than its limit and reads on, so the call that line answered would wait
//! for its timeout; here such a line ends the stream instead, with an error
//! that says how big the line was, and the call fails at once saying so.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Bytes of the first stray line kept for the message.
const SAMPLE: usize = 120;

/// The largest message (one line) a server may send: rmcp's own limit, so
/// a line rmcp would drop is the line that ends the stream.
pub(crate) const MESSAGE_LIMIT: u64 = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH as u64;

/// Bytes read at a time while an oversized line is skipped to its end.
const SKIP_CHUNK: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Seen {
    stray_lines: u64,
    first: String,
    /// The size of a line over [`MESSAGE_LIMIT`], once one was read.
    oversized: Option<u64>,
}

/// What the server printed that was not JSON-RPC, shared with the reader.
#[derive(Clone, Debug, Default)]
pub(crate) struct StrayOutput(Arc<Mutex<Seen>>);

impl StrayOutput {
    /// A clause for an error message, or `None` when every line looked like
    /// JSON.
    pub(crate) fn describe(&self) -> Option<String> {
        let seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match seen.stray_lines {
            0 => None,
            1 => Some(format!("it printed a line on stdout that is not JSON-RPC: `{}`", seen.first)),
            n => Some(format!(
                "it printed {n} lines on stdout that are not JSON-RPC, the first: `{}`",
                seen.first
            )),
        }
    }

    /// A clause saying the server sent a message over the limit, if it did.
    pub(crate) fn oversized(&self) -> Option<String> {
        let seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        seen.oversized.map(|size| {
            format!(
                "sent a message of {} on stdout, over the limit of {} for one message",
                bytes(size),
                bytes(MESSAGE_LIMIT)
            )
        })
    }
}

/// A size for a person: `100.0 MiB`, `16 MiB`, `512 bytes`.
fn bytes(size: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if size < MIB {
        format!("{size} bytes")
    } else if size.is_multiple_of(MIB) {
        format!("{} MiB", size / MIB)
    } else {
        let mib = size as f64 / MIB as f64;
        format!("{mib:.1} MiB")
    }
}

/// Passes bytes through unchanged, looking at the start of each line.
pub(crate) struct WatchedStdout<R> {
    inner: R,
    seen: StrayOutput,
    /// The start of the current line, up to [`SAMPLE`] bytes.
    line: Vec<u8>,
    /// The current line started with `{` or `[` (after blanks).
    looks_json: Option<bool>,
    /// Bytes of the current line so far.
    line_bytes: u64,
    /// The current line is over [`MESSAGE_LIMIT`] and has not ended in
    /// what was read: the rest of it is read here, counted and dropped.
    skipping: Option<Vec<u8>>,
    /// An oversized line was read to its end: the stream ends with an error.
    ended: bool,
}

impl<R> WatchedStdout<R> {
    pub(crate) fn new(inner: R, seen: StrayOutput) -> Self {
        Self { inner, seen, line: Vec::new(), looks_json: None, line_bytes: 0, skipping: None, ended: false }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' {
                if self.line_bytes > MESSAGE_LIMIT {
                    self.record_oversized();
                    return;
                }
                self.end_line();
                continue;
            }
            self.line_bytes += 1;
            if self.looks_json.is_none() && !byte.is_ascii_whitespace() {
                self.looks_json = Some(byte == b'{' || byte == b'[');
            }
            if self.looks_json == Some(false) && self.line.len() < SAMPLE {
                self.line.push(byte);
            }
        }
    }

    fn end_line(&mut self) {
        if self.looks_json == Some(false) {
            let mut seen = self.seen.0.lock().unwrap_or_else(PoisonError::into_inner);
            if seen.stray_lines == 0 {
                seen.first = String::from_utf8_lossy(&self.line).trim().to_owned();
            }
            seen.stray_lines += 1;
        }
        self.line.clear();
        self.looks_json = None;
        self.line_bytes = 0;
    }

    /// Records the oversized line's size: the stream ends here.
    fn record_oversized(&mut self) {
        self.seen.0.lock().unwrap_or_else(PoisonError::into_inner).oversized = Some(self.line_bytes);
        self.skipping = None;
        self.ended = true;
    }

    /// The error that ends the stream after an oversized line.
    fn too_big(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a message of {} is over the limit of {}", bytes(self.line_bytes), bytes(MESSAGE_LIMIT)),
        )
    }
}

impl<R: AsyncRead + Unpin> WatchedStdout<R> {
    /// Reads the rest of an oversized line, counting it, until its newline
    /// or the end of the stream; then fails.
    fn poll_skip(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        loop {
            let Some(scratch) = self.skipping.as_mut() else { return Poll::Ready(Ok(())) };
            let mut chunk = ReadBuf::new(scratch);
            match Pin::new(&mut self.inner).poll_read(cx, &mut chunk) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) => {
                    let read = chunk.filled();
                    let end = read.iter().position(|&b| b == b'\n');
                    self.line_bytes += end.unwrap_or(read.len()) as u64;
                    if read.is_empty() || end.is_some() {
                        self.record_oversized();
                        return Poll::Ready(Err(self.too_big()));
                    }
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchedStdout<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(Err(this.too_big()));
        }
        if this.skipping.is_some() {
            return this.poll_skip(cx);
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let filled = &buf.filled()[before..];
            if filled.is_empty() {
                // End of file: a last line without a newline counts too.
                this.end_line();
            } else {
                this.observe(filled);
                if !this.ended && this.line_bytes > MESSAGE_LIMIT {
                    // What was read passes on (rmcp drops it with the line);
                    // the next read skips the rest and fails.
                    this.skipping = Some(vec![0; SKIP_CHUNK]);
                }
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn stray_lines_are_counted_and_the_first_kept() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\"}\nhello there\n  [1]\nnot json either";
        let seen = StrayOutput::default();
        let mut watched = WatchedStdout::new(input, seen.clone());
        let mut out = Vec::new();
        watched.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, input, "bytes pass unchanged");
        assert_eq!(
            seen.describe().as_deref(),
            Some("it printed 2 lines on stdout that are not JSON-RPC, the first: `hello there`")
        );
        assert_eq!(seen.oversized(), None);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_ends_the_stream_with_its_size() {
        let size = MESSAGE_LIMIT + 5 * 1024 * 1024 + 512 * 1024;
        let mut input = b"{\"jsonrpc\":\"2.0\"}\n".to_vec();
        input.push(b'{');
        input.resize(input.len() + usize::try_from(size).unwrap() - 1, b'x');
        input.extend_from_slice(b"\n{\"after\":1}\n");
        // Through a pipe-sized buffer, as a server's stdout arrives.
        let (mut writer, reader) = tokio::io::duplex(64 * 1024);
        let prefix_len = input.iter().position(|&b| b == b'\n').unwrap() + 1;
        let writing = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // The reader stops at the end of the oversized line.
            let _ = writer.write_all(&input).await;
        });
        let seen = StrayOutput::default();
        let mut watched = WatchedStdout::new(reader, seen.clone());
        let mut out = Vec::new();
        let error = watched.read_to_end(&mut out).await.unwrap_err();
        drop(watched);
        writing.await.unwrap();
        assert!(out.len() > prefix_len);
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(error.to_string(), "a message of 21.5 MiB is over the limit of 16 MiB");
        assert!(out.len() as u64 <= MESSAGE_LIMIT + 64 * 1024, "the rest of the line is not passed on");
        assert!(out.starts_with(b"{\"jsonrpc\":\"2.0\"}\n"), "the lines before it pass");
        assert_eq!(
            seen.oversized().as_deref(),
            Some("sent a message of 21.5 MiB on stdout, over the limit of 16 MiB for one message")
        );
    }

    #[test]
    fn sizes_read_as_a_person_would_say_them() {
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(16 * 1024 * 1024), "16 MiB");
        assert_eq!(bytes(100_000_000), "95.4 MiB");
    }
}
