//! One shell call from spawn to result: output pumped into the capture while
//! the command runs (its newest lines reported to the front end on a timer,
//! `live.rs`), then the group killed (on exit, timeout or cancellation
//! alike), the pipes drained, the leader reaped and the result written.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use bosun_core::event::OUTPUT_INTERVAL_MS;
use bosun_core::{ToolContext, ToolOutput};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;
use tokio::process::Command;
use tokio::time::{Instant, MissedTickBehavior};

use bosun_sandbox::SandboxedCall;

use super::capture::Capture;
use super::group::ProcessGroup;
use super::live::Live;

/// How long the pipes are read after the group is killed. Only a process that
/// left the group can hold them open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Size of each pipe's read buffer.
const READ_BUFFER: usize = 32 * 1024;

/// Why the command stopped.
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// Runs `command` to its end, its timeout or cancellation, and reports its
/// exit and output. Output is returned in every case; while the command
/// runs, its newest lines go to the call's progress sink at most once per
/// [`OUTPUT_INTERVAL_MS`].
pub(super) async fn run(
    mut command: Command,
    timeout: Duration,
    max_output: usize,
    context: &ToolContext,
    sandboxed: SandboxedCall,
    echo: Option<super::Echo>,
) -> ToolOutput {
    let (mut group, output) = match ProcessGroup::spawn(&mut command) {
        Ok(spawned) => spawned,
        Err(error) => return ToolOutput::error(format!("failed to start: {error}")),
    };
    let mut capture = Capture::new(max_output);
    let mut pipes = Pipes::new(output, echo);
    let mut live = Live::new(context.progress.clone());
    let interval = Duration::from_millis(OUTPUT_INTERVAL_MS);
    let mut reports = tokio::time::interval_at(Instant::now() + interval, interval);
    reports.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);

    let ending = loop {
        // Each report ends this select, dropping the pump (cancel-safe:
        // no byte is lost) and starting it again on the next pass.
        tokio::select! {
            biased;
            () = group.exited() => break Ending::Exited,
            () = pipes.pump(&mut capture, &mut live), if pipes.open() => {}
            () = context.cancel.cancelled() => break Ending::Cancelled,
            () = &mut deadline => break Ending::TimedOut,
            _ = reports.tick() => live.flush(),
        }
    };

    // Whatever ended the call, nothing the command started outlives it:
    // backgrounded grandchildren are killed with the group.
    group.kill();
    let held_open = tokio::time::timeout(DRAIN_GRACE, pipes.pump(&mut capture, &mut live)).await.is_err();
    let status = group.reap().await;

    let (first_line, is_error) = match ending {
        Ending::Exited => describe_exit(status),
        Ending::TimedOut => (format!("killed: timed out after {}", seconds(timeout)), true),
        Ending::Cancelled => ("killed: cancelled".to_owned(), true),
    };
    let mut text = first_line;
    text.push('\n');
    let output = capture.render();
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&output);
    }
    if held_open {
        text.push_str("\n[stopped reading: the output is held open by a process outside the group]");
    }
    if is_error && let Some(note) = sandboxed.explain(&output) {
        text.push('\n');
        text.push_str(&note);
    }
    for note in sandboxed.finish() {
        text.push('\n');
        text.push_str(&note);
    }
    ToolOutput::new(vec![bosun_core::ContentPart::text(text)], is_error)
}

fn describe_exit(status: io::Result<ExitStatus>) -> (String, bool) {
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (format!("exit code: {code}"), code != 0),
            (None, Some(signal)) => (format!("killed by signal {signal}"), true),
            (None, None) => (format!("exit status: {status}"), true),
        },
        Err(error) => (format!("exit status unknown: {error}"), true),
    }
}

/// `2 s`, `0.25 s`.
pub(super) fn seconds(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        let text = format!("{:.3}", duration.as_secs_f64());
        format!("{} s", text.trim_end_matches('0'))
    }
}

/// The pipe the child's stdout and stderr both write to.
struct Pipes {
    output: Option<Receiver>,
    buffer: Vec<u8>,
    echo: Option<super::Echo>,
}

impl Pipes {
    fn new(output: Receiver, echo: Option<super::Echo>) -> Self {
        Self { output: Some(output), buffer: vec![0; READ_BUFFER], echo }
    }

    /// Whether the pipe may still give output.
    fn open(&self) -> bool {
        self.output.is_some()
    }

    /// Reads the pipe into `capture` and `live` until end of file.
    /// Cancel-safe: no byte read is lost if dropped, and a later call
    /// carries on.
    async fn pump(&mut self, capture: &mut Capture, live: &mut Live) {
        while let Some(output) = &mut self.output {
            match output.read(&mut self.buffer).await {
                Ok(0) => self.output = None,
                Ok(n) => {
                    if let Some(echo) = &self.echo {
                        (echo.0)(&self.buffer[..n]);
                    }
                    capture.push(&self.buffer[..n]);
                    live.push(&self.buffer[..n]);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::debug!(%error, "shell: reading the command's output failed");
                    self.output = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_without_trailing_zeros() {
        assert_eq!(seconds(Duration::from_secs(120)), "120 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_millis(1)), "0.001 s");
    }
}
