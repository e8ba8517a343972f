//! The shell's child process and its process group, killed as a whole with
//! `SIGKILL` when the call times out, is cancelled or ends, and when this
//! guard is dropped (the tool's future dropped mid-run). Command hooks
//! (`crate::hooks`) run their commands through the same guard.
//!
//! The group is only signalled while its leader has not been reaped: a zombie
//! leader keeps its pid, and so the group id, from being reused, so a kill can
//! never reach an unrelated group. [`ProcessGroup::exited`] therefore waits
//! with `WNOWAIT`, and [`ProcessGroup::reap`] disarms the guard as it reaps.
//!
//! Not covered: a process that leaves the group (`setsid`, `setpgid`) escapes
//! the kill; containing that needs an OS sandbox (MISSION.md invariant 18).

use std::io;
use std::process::{ExitStatus, Stdio};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::net::unix::pipe::Receiver;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

/// A spawned child leading its own process group.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    /// Dropped after [`Drop::drop`] has killed the group; tokio's
    /// `kill_on_drop` then reaps it in the background.
    child: Child,
    /// `None` once the leader is reaped: the id may then be reused.
    pgid: Option<Pid>,
    /// `waitid(WNOWAIT)` on the blocking pool; `None` once it has returned.
    exit_watch: Option<JoinHandle<()>>,
}

/// The three pipes of a child spawned by [`ProcessGroup::spawn_piped`].
#[derive(Debug)]
pub(crate) struct Piped {
    /// The child's stdin; dropping it closes the child's input.
    pub(crate) stdin: ChildStdin,
    /// The child's stdout.
    pub(crate) stdout: ChildStdout,
    /// The child's stderr.
    pub(crate) stderr: ChildStderr,
}

impl ProcessGroup {
    /// Spawns `command` with stdin null and stdout and stderr both writing
    /// into one pipe (so the output keeps the order a terminal would show),
    /// as the leader of a new process group.
    pub(crate) fn spawn(command: &mut Command) -> io::Result<(Self, Receiver)> {
        let (reader, writer) = std::io::pipe()?;
        command.stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
        let spawned = Self::lead(command);
        // The command keeps its copies of the write end until told otherwise;
        // while any stays open here, the pipe never reaches end of file.
        command.stdout(Stdio::null()).stderr(Stdio::null());
        let mut group = spawned?;
        match Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader)) {
            Ok(output) => Ok((group, output)),
            Err(error) => {
                group.kill();
                Err(error)
            }
        }
    }

    /// Spawns `command` with stdin, stdout and stderr each a pipe of its
    /// own, as the leader of a new process group (command hooks: JSON in,
    /// stdout and stderr read apart).
    pub(crate) fn spawn_piped(command: &mut Command) -> io::Result<(Self, Piped)> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut group = Self::lead(command)?;
        let pipes = (group.child.stdin.take(), group.child.stdout.take(), group.child.stderr.take());
        match pipes {
            (Some(stdin), Some(stdout), Some(stderr)) => Ok((group, Piped { stdin, stdout, stderr })),
            _ => {
                group.kill();
                Err(io::Error::other("the child's pipes were not set up"))
            }
        }
    }

    /// Spawns `command`, its stdio already set, as the leader of a new
    /// process group, and starts watching for its exit.
    fn lead(command: &mut Command) -> io::Result<Self> {
        let child = command.process_group(0).kill_on_drop(true).spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
        // Started before anything can reap the leader, so the wait can only
        // ever concern this child.
        let exit_watch = pgid.map(|pid| {
            tokio::task::spawn_blocking(move || {
                let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                while let Err(rustix::io::Errno::INTR) = rustix::process::waitid(WaitId::Pid(pid), options) {}
            })
        });
        let mut group = Self { child, pgid, exit_watch };
        if pgid.is_none() {
            group.kill();
            return Err(io::Error::other("the child has no pid"));
        }
        Ok(group)
    }

    /// Resolves once the leader has exited, without reaping it. Cancel-safe:
    /// the watch survives a dropped call.
    pub(crate) async fn exited(&mut self) {
        if let Some(watch) = &mut self.exit_watch {
            if watch.await.is_err() {
                tracing::warn!("shell: waiting for the child's exit failed");
            }
            self.exit_watch = None;
        }
    }

    /// Sends `SIGKILL` to every process of the group (the leader too, if it
    /// is still running). Falls back to killing the leader alone.
    pub(crate) fn kill(&mut self) {
        let Some(pgid) = self.pgid else { return };
        match rustix::process::kill_process_group(pgid, Signal::KILL) {
            // ESRCH: nothing of the group is left.
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(error) => {
                tracing::warn!(%error, "shell: killing the process group failed; killing the leader");
                if let Err(error) = self.child.start_kill() {
                    tracing::warn!(%error, "shell: killing the child failed");
                }
            }
        }
    }

    /// Kills what is left of the group, then reaps the leader and disarms
    /// the guard.
    pub(crate) async fn reap(&mut self) -> io::Result<ExitStatus> {
        self.kill();
        // The watch must be done with the pid before it is released.
        self.exited().await;
        let status = self.child.wait().await;
        // Reaped (or unwaitable): the id is no longer ours to signal.
        self.pgid = None;
        status
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
