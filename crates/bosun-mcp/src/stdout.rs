//! A stdio server's stdout on its way to rmcp, watched for lines that are
//! not JSON-RPC. rmcp skips such lines silently (a server that logs to
//! stdout would otherwise break the session), so without this a server that
//! prints only garbage just looks hung; with it, the failure says what the
//! server printed.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Bytes of the first stray line kept for the message.
const SAMPLE: usize = 120;

#[derive(Debug, Default)]
struct Seen {
    stray_lines: u64,
    first: String,
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
}

/// Passes bytes through unchanged, looking at the start of each line.
pub(crate) struct WatchedStdout<R> {
    inner: R,
    seen: StrayOutput,
    /// The start of the current line, up to [`SAMPLE`] bytes.
    line: Vec<u8>,
    /// The current line started with `{` or `[` (after blanks).
    looks_json: Option<bool>,
}

impl<R> WatchedStdout<R> {
    pub(crate) fn new(inner: R, seen: StrayOutput) -> Self {
        Self { inner, seen, line: Vec::new(), looks_json: None }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' {
                self.end_line();
                continue;
            }
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
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchedStdout<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let filled = &buf.filled()[before..];
            if filled.is_empty() {
                // End of file: a last line without a newline counts too.
                this.end_line();
            } else {
                this.observe(filled);
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
    }
}
