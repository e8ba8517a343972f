//! A stdio server's process: the leader of its own process group, sent
//! `SIGKILL` by the kernel when bosun dies (parent-death signal, set by
//! `bosun-sandbox` whether or not it confines the server), killed with its
//! whole group on drop and at the end of the shutdown sequence. Confined,
//! the server is PID 1 of its own namespace, so what it starts (even a
//! process that `setsid`s away) ends with it. Its
//! stderr is kept as a bounded tail for error messages.
//!
//! As in `bosun-tools`' shell, the group is only signalled while its leader
//! has not been reaped: a zombie leader keeps its pid, and so the group id,
//! from being reused, so a kill can never reach an unrelated group. The exit
//! is therefore watched with `waitid(WNOWAIT)`, and only the last step of a
//! shutdown reaps.
//!
//! Not covered, unconfined (`--sandbox off`): a process that leaves the
//! group (`setsid`) escapes the kill.

use std::fmt;
use std::io;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Bytes of stderr kept.
const STDERR_KEPT: usize = 8 * 1024;
/// Bytes of stderr shown in an error message.
const STDERR_SHOWN: usize = 2 * 1024;
/// Longest wait for the stderr reader to reach the end once the process is
/// gone (a grandchild that left the group may hold the pipe open).
pub(crate) const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How the leader ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
    Unknown,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exit status {code}"),
            Self::Signal(9) => f.write_str("killed by SIGKILL"),
            Self::Signal(15) => f.write_str("ended by SIGTERM"),
            Self::Signal(signal) => write!(f, "killed by signal {signal}"),
            Self::Unknown => f.write_str("exit status unknown"),
        }
    }
}

/// The last bytes a server wrote to stderr, shared with its reader task.
#[derive(Clone)]
pub(crate) struct StderrTail {
    kept: Arc<Mutex<Vec<u8>>>,
    /// Set when the reader reached the end (every writer is gone).
    ended: Arc<watch::Sender<bool>>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self { kept: Arc::default(), ended: Arc::new(watch::channel(false).0) }
    }
}

impl StderrTail {
    /// Waits up to `bound` for the reader to reach the end, so that a
    /// message about an exit holds the last words.
    pub(crate) async fn ended_within(&self, bound: Duration) {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(bound, ended.wait_for(|e| *e)).await;
    }

    fn push(&self, bytes: &[u8]) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.extend_from_slice(bytes);
        if kept.len() > STDERR_KEPT {
            let cut = kept.len() - STDERR_KEPT;
            kept.drain(..cut);
        }
    }

    /// The tail for a message: at most [`STDERR_SHOWN`] bytes, whole lines
    /// when it had to be cut, trimmed.
    pub(crate) fn text(&self) -> String {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let mut start = kept.len().saturating_sub(STDERR_SHOWN);
        if start > 0
            && let Some(newline) = kept[start..].iter().position(|b| *b == b'\n')
        {
            start += newline + 1;
        }
        String::from_utf8_lossy(&kept[start..]).trim().to_owned()
    }
}

/// A running server process, leading its own group.
pub(crate) struct ServerProcess {
    child: Child,
    /// `None` once the leader is reaped: the id may then be reused.
    pgid: Option<Pid>,
    exit: watch::Receiver<Option<Exit>>,
    /// `waitid(WNOWAIT)` on the blocking pool; done once the leader exited.
    exit_watch: Option<JoinHandle<()>>,
    stderr: StderrTail,
    stderr_reader: Option<JoinHandle<()>>,
    /// The server's temporary folder lives as long as the server.
    _sandboxed: bosun_sandbox::SandboxedCall,
}

impl fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerProcess").field("pgid", &self.pgid).finish_non_exhaustive()
    }
}

impl ServerProcess {
    /// Spawns `command` (already readied by the sandbox, which makes it die
    /// with bosun) with piped stdio as the leader of a new process group.
    /// Returns the process and its stdout and stdin for the transport.
    /// `on_stderr` sees each chunk of stderr.
    pub(crate) fn spawn(
        mut command: Command,
        sandboxed: bosun_sandbox::SandboxedCall,
        on_stderr: impl Fn(&[u8]) + Send + 'static,
    ) -> io::Result<(Self, ChildStdout, ChildStdin)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
        let (exit_tx, exit) = watch::channel(None);
        // Started before anything can reap the leader, so the wait can only
        // ever concern this child.
        let exit_watch = pgid.map(|pid| {
            tokio::task::spawn_blocking(move || {
                let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                let exit = loop {
                    match rustix::process::waitid(WaitId::Pid(pid), options) {
                        Err(rustix::io::Errno::INTR) => continue,
                        Ok(Some(status)) => {
                            break match (status.exit_status(), status.terminating_signal()) {
                                (Some(code), _) => Exit::Code(code),
                                (None, Some(signal)) => Exit::Signal(signal),
                                (None, None) => Exit::Unknown,
                            };
                        }
                        Ok(None) | Err(_) => break Exit::Unknown,
                    }
                };
                let _ = exit_tx.send(Some(exit));
            })
        });
        let stderr = StderrTail::default();
        let stderr_reader = child.stderr.take().map(|mut pipe| {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                    tail.push(&buf[..n]);
                    on_stderr(&buf[..n]);
                }
                tail.ended.send_replace(true);
            })
        });
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let mut process =
            Self { child, pgid, exit, exit_watch, stderr, stderr_reader, _sandboxed: sandboxed };
        match (pgid, stdout, stdin) {
            (Some(_), Some(stdout), Some(stdin)) => Ok((process, stdout, stdin)),
            _ => {
                process.signal(Signal::KILL);
                Err(io::Error::other("the child has no pid or no pipes"))
            }
        }
    }

    /// The leader's pid, while it is not reaped.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
    }

    /// Resolves to the leader's exit once it has exited (it is not reaped).
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// The stderr tail so far.
    pub(crate) fn stderr(&self) -> StderrTail {
        self.stderr.clone()
    }

    /// Waits up to `grace` for the leader to exit.
    async fn exited_within(&mut self, grace: Duration) -> bool {
        let mut exit = self.exit.clone();
        matches!(tokio::time::timeout(grace, exit.wait_for(Option::is_some)).await, Ok(Ok(_)))
    }

    /// The shutdown sequence, once stdin is closed: wait, `SIGTERM` to the
    /// group, wait, `SIGKILL` to the group; then whatever is left of the
    /// group is killed (a leader that exited may leave children behind) and
    /// the leader reaped. Returns how the leader ended.
    pub(crate) async fn shutdown(&mut self, grace: Duration) -> Exit {
        if !self.exited_within(grace).await {
            self.signal(Signal::TERM);
            if !self.exited_within(grace).await {
                self.signal(Signal::KILL);
            }
        }
        self.reap().await
    }

    /// Kills the group now and reaps the leader.
    pub(crate) async fn kill(&mut self) -> Exit {
        self.signal(Signal::KILL);
        self.reap().await
    }

    /// Sends `SIGKILL` to the group without waiting; the leader is reaped
    /// when the process is dropped or shut down.
    pub(crate) fn kill_group(&mut self) {
        self.signal(Signal::KILL);
    }

    /// Kills what is left of the group, waits for the leader's exit and
    /// reaps it, then lets the stderr reader finish (bounded).
    async fn reap(&mut self) -> Exit {
        self.signal(Signal::KILL);
        // The watch must be done with the pid before it is released.
        if let Some(watch) = self.exit_watch.take()
            && watch.await.is_err()
        {
            tracing::warn!("mcp: waiting for a server's exit failed");
        }
        if let Err(error) = self.child.wait().await {
            tracing::warn!(%error, "mcp: reaping a server failed");
        }
        // Reaped (or unwaitable): the id is no longer ours to signal.
        self.pgid = None;
        if let Some(reader) = self.stderr_reader.take() {
            let abort = reader.abort_handle();
            if tokio::time::timeout(STDERR_DRAIN, reader).await.is_err() {
                abort.abort();
            }
        }
        (*self.exit.borrow()).unwrap_or(Exit::Unknown)
    }

    /// Sends `signal` to every process of the group; falls back to the leader.
    fn signal(&mut self, signal: Signal) {
        let Some(pgid) = self.pgid else { return };
        match rustix::process::kill_process_group(pgid, signal) {
            // ESRCH: nothing of the group is left.
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(error) => {
                tracing::warn!(%error, "mcp: signalling a server's process group failed");
                if signal == Signal::KILL
                    && let Err(error) = self.child.start_kill()
                {
                    tracing::warn!(%error, "mcp: killing a server failed");
                }
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Best effort with no runtime needed: the kernel delivers the signal,
        // tokio's `kill_on_drop` and orphan queue reap the leader.
        self.signal(Signal::KILL);
        if let Some(reader) = &self.stderr_reader {
            reader.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_is_bounded_and_starts_at_a_line() {
        let tail = StderrTail::default();
        for i in 0..2000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert!(text.len() <= STDERR_SHOWN, "{}", text.len());
        assert!(text.starts_with("line "), "{text:?}");
        assert!(text.ends_with("line 1999"), "{text:?}");
    }

    #[tokio::test]
    async fn shutdown_terms_then_reaps_a_server_that_ignores_stdin() {
        let mut command = Command::new("sh");
        command.args(["-c", "trap 'exit 7' TERM; while :; do sleep 0.05; done"]);
        let (mut process, _stdout, stdin) = process_or_panic(command);
        let pid = process.pid().unwrap();
        drop(stdin);
        let exit = process.shutdown(Duration::from_millis(100)).await;
        assert_eq!(exit, Exit::Code(7), "SIGTERM reached the trap");
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "reaped");
    }

    fn process_or_panic(mut command: Command) -> (ServerProcess, ChildStdout, ChildStdin) {
        let sandboxed = bosun_sandbox::unconfined(&mut command);
        ServerProcess::spawn(command, sandboxed, |_| {}).unwrap()
    }
}
