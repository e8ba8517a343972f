//! One run of a hook's command: spawned as the leader of its own process
//! group (the shell tool's guard, `crate::shell::group`), its stdin fed the
//! JSON input then closed, stdout and stderr read at once and apart, each
//! kept within a bound and the rest read and thrown away, so a hook that
//! prints without end neither fills memory nor blocks on a full pipe.
//!
//! The group is killed when the leader exits (nothing the hook put in the
//! background outlives the run) and when the run's future is dropped (the
//! session's timeout, a cancelled turn): the guard's `Drop` kills it.

use std::convert::Infallible;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use crate::shell::group::{Piped, ProcessGroup};

/// Most of a hook's stdout kept (its head: JSON is read whole or not at all).
pub const MAX_STDOUT_BYTES: usize = 64 * 1024;
/// Most of a hook's stderr kept (its tail: the end says why it failed).
pub const MAX_STDERR_BYTES: usize = 64 * 1024;
/// How long the pipes are read after the group is killed. Only a process
/// that left the group can hold them open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Size of each pipe's read buffer.
const READ_BUFFER: usize = 16 * 1024;

/// How a run ended.
#[derive(Debug)]
pub(super) struct Ran {
    /// The leader's exit status (an error when it could not be reaped).
    pub(super) status: io::Result<ExitStatus>,
    /// Its stdout, bounded.
    pub(super) stdout: Kept,
    /// Its stderr, bounded.
    pub(super) stderr: Kept,
}

/// Runs `command` with `input` on its stdin, to the end. `Err` when it
/// cannot be started.
pub(super) async fn run(mut command: Command, input: Vec<u8>) -> io::Result<Ran> {
    let (mut group, Piped { stdin, stdout, stderr }) = ProcessGroup::spawn_piped(&mut command)?;
    let mut pipes = Pipes::new(stdout, stderr);
    let mut out = Kept::head(MAX_STDOUT_BYTES);
    let mut err = Kept::tail(MAX_STDERR_BYTES);
    {
        let feeding = async move {
            feed(stdin, &input).await;
            std::future::pending::<Infallible>().await
        };
        let pumping = async {
            pipes.pump(&mut out, &mut err).await;
            // Both pipes are closed; the command may still run.
            std::future::pending::<Infallible>().await
        };
        tokio::select! {
            biased;
            () = group.exited() => {}
            never = feeding => match never {},
            never = pumping => match never {},
        }
    }
    // Whatever it left in the background dies with it; what it wrote before
    // it exited is still in the pipes.
    group.kill();
    if tokio::time::timeout(DRAIN_GRACE, pipes.pump(&mut out, &mut err)).await.is_err() {
        tracing::debug!("hook: the output is held open by a process outside the group");
    }
    let status = group.reap().await;
    Ok(Ran { status, stdout: out, stderr: err })
}

/// Writes `input`, then closes stdin (by dropping it). A hook that does not
/// read its input, or exits first, is no error.
async fn feed(mut stdin: ChildStdin, input: &[u8]) {
    if let Err(error) = stdin.write_all(input).await
        && error.kind() != io::ErrorKind::BrokenPipe
    {
        tracing::debug!(%error, "hook: writing the input failed");
    }
}

/// The child's stdout and stderr until each reaches end of file.
struct Pipes {
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_buffer: Vec<u8>,
    err_buffer: Vec<u8>,
}

impl Pipes {
    fn new(stdout: ChildStdout, stderr: ChildStderr) -> Self {
        Self {
            stdout: Some(stdout),
            stderr: Some(stderr),
            out_buffer: vec![0; READ_BUFFER],
            err_buffer: vec![0; READ_BUFFER],
        }
    }

    /// Reads both pipes into `out` and `err` until both are closed.
    /// Cancel-safe: no byte read is lost if dropped, and a later call
    /// carries on.
    async fn pump(&mut self, out: &mut Kept, err: &mut Kept) {
        let Self { stdout, stderr, out_buffer, err_buffer } = self;
        while stdout.is_some() || stderr.is_some() {
            tokio::select! {
                read = read_some(stdout, out_buffer) => on_read(read, stdout, out_buffer, out),
                read = read_some(stderr, err_buffer) => on_read(read, stderr, err_buffer, err),
            }
        }
    }
}

/// One read of `pipe`; never resolves once it is closed.
async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buffer: &mut [u8]) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buffer).await,
        None => std::future::pending().await,
    }
}

fn on_read<R>(read: io::Result<usize>, pipe: &mut Option<R>, buffer: &[u8], kept: &mut Kept) {
    match read {
        Ok(0) => *pipe = None,
        Ok(n) => kept.push(&buffer[..n]),
        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
        Err(error) => {
            tracing::debug!(%error, "hook: reading the output failed");
            *pipe = None;
        }
    }
}

/// Output kept within a bound: the head or the tail; the rest is counted.
#[derive(Debug)]
pub(super) struct Kept {
    bytes: Vec<u8>,
    cap: usize,
    tail: bool,
    total: u64,
}

impl Kept {
    fn head(cap: usize) -> Self {
        Self { bytes: Vec::new(), cap, tail: false, total: 0 }
    }

    fn tail(cap: usize) -> Self {
        Self { bytes: Vec::new(), cap, tail: true, total: 0 }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total = self.total.saturating_add(chunk.len() as u64);
        if self.tail {
            self.bytes.extend_from_slice(chunk);
            // Dropped in batches, so the copying stays linear.
            if self.bytes.len() >= 2 * self.cap {
                self.bytes.drain(..self.bytes.len() - self.cap);
            }
        } else {
            let room = self.cap.saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&chunk[..room.min(chunk.len())]);
        }
    }

    /// Whether bytes were left out.
    pub(super) fn was_cut(&self) -> bool {
        self.total > self.cap as u64
    }

    /// What was kept, as text (invalid UTF-8 replaced).
    pub(super) fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.cap);
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_keeps_the_first_bytes_and_the_tail_the_last() {
        let mut head = Kept::head(4);
        let mut tail = Kept::tail(4);
        for chunk in [&b"abc"[..], b"defg", b"hi"] {
            head.push(chunk);
            tail.push(chunk);
        }
        assert_eq!((head.text().as_str(), head.was_cut()), ("abcd", true));
        assert_eq!((tail.text().as_str(), tail.was_cut()), ("fghi", true));
        assert!(tail.bytes.capacity() < 64, "the tail stays near its cap");
        let mut short = Kept::head(8);
        short.push(b"ok");
        assert_eq!((short.text().as_str(), short.was_cut()), ("ok", false));
    }
}
