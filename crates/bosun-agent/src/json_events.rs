//! Events as JSON lines, the one form every front end gives programs
//! (`bosun exec --json`, a server's event stream): each event's stable JSON
//! (bosun-core's table, frozen by its tests) with the session's id added as
//! `session_id`.

use std::io::Write;

use bosun_core::{Event, EventSink, SinkError};

/// The JSON object of `event` in `session`.
///
/// # Errors
/// When the event cannot be serialised (it always can: a bug otherwise).
pub fn event_json(event: &Event, session: &str) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(event)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("session_id".into(), serde_json::Value::String(session.to_owned()));
    }
    Ok(value)
}

/// A sink writing one JSON event per line to `out`, flushed after each, so
/// a reader sees every event as it happens. A write that fails (a closed
/// pipe) fails the sink, which cancels the turn (invariant 14).
#[derive(Debug)]
pub struct JsonLines<W> {
    session: String,
    out: W,
}

impl<W: Write + Send> JsonLines<W> {
    /// Lines of `session`'s events to `out`.
    pub fn new(session: &str, out: W) -> Self {
        Self { session: session.to_owned(), out }
    }
}

impl<W: Write + Send> JsonLines<W> {
    /// Writes one line that is not an event of the turn (`init`, `result`).
    ///
    /// # Errors
    /// When the output cannot be written.
    pub fn line(&mut self, value: &serde_json::Value) -> Result<(), OutputFailed> {
        writeln!(self.out, "{value}").and_then(|()| self.out.flush()).map_err(OutputFailed)
    }
}

/// The first line of a run's events (`"type": "init"`): which session, on
/// which model, in which mode, workspace and sandbox, by which bosun, so a
/// script knows what it reads before the turn says anything.
pub fn init_json(
    session: &str,
    settings: &crate::config::Settings,
    mode: bosun_core::Mode,
    workspace: &str,
) -> serde_json::Value {
    serde_json::json!({
        "type": "init",
        "session_id": session,
        "model": crate::model::model_label(settings),
        "reasoning_effort": crate::stored::recorded_effort(settings),
        "mode": mode.to_string(),
        "workspace": workspace,
        "sandbox": settings.sandbox.mode.to_string(),
        "network": settings.sandbox.network,
        "bosun_version": env!("CARGO_PKG_VERSION"),
    })
}

/// How a run ended, for [`result_json`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunResult<'a> {
    /// The turn completed with this outcome.
    Completed(&'a bosun_core::TurnOutcome),
    /// The turn failed (or its answer was refused, as by an output schema).
    Failed(String),
    /// The turn was cancelled.
    Cancelled,
}

impl<'a> RunResult<'a> {
    /// How a turn's result reads: completed, cancelled (also when the sink
    /// stopped it) or failed with its error.
    pub fn of(result: &'a Result<bosun_core::TurnOutcome, bosun_core::TurnError>) -> Self {
        match result {
            Ok(outcome) => Self::Completed(outcome),
            Err(error) if error.is_cancelled() => Self::Cancelled,
            Err(error) => Self::Failed(error.to_string()),
        }
    }
}

/// The last line of a run's events (`"type": "result"`): the outcome, the
/// answer, why the model stopped, the turn's usage and cost, and how long
/// it took, as the peers' stream-json ends with.
pub fn result_json(
    session: &str,
    result: &RunResult<'_>,
    duration: std::time::Duration,
) -> serde_json::Value {
    let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    match result {
        RunResult::Completed(outcome) => serde_json::json!({
            "type": "result",
            "session_id": session,
            "outcome": "completed",
            "turn": outcome.turn,
            "answer": outcome.answer,
            "stop_reason": outcome.stop_reason,
            "usage": outcome.usage,
            "cost_micros": outcome.spend.total().cost_micros,
            "rounds": outcome.rounds,
            "duration_ms": duration_ms,
        }),
        RunResult::Failed(error) => serde_json::json!({
            "type": "result",
            "session_id": session,
            "outcome": "failed",
            "error": error,
            "duration_ms": duration_ms,
        }),
        RunResult::Cancelled => serde_json::json!({
            "type": "result",
            "session_id": session,
            "outcome": "cancelled",
            "duration_ms": duration_ms,
        }),
    }
}

/// Writing a front end's output failed (a closed pipe, a full disk): the
/// cause a sink that writes reports.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the output: {0}")]
pub struct OutputFailed(pub std::io::Error);

impl<W: Write + Send> EventSink for JsonLines<W> {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        let value = event_json(&event, &self.session).map_err(SinkError::new)?;
        writeln!(self.out, "{value}")
            .and_then(|()| self.out.flush())
            .map_err(|e| SinkError::new(OutputFailed(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_one_line_of_its_json_with_the_session_id() {
        let mut lines = JsonLines::new("s-1", Vec::new());
        lines.emit(Event::TextDelta { text: "hi\nthere".into() }).unwrap();
        lines.emit(Event::TextDelta { text: "!".into() }).unwrap();
        let written = String::from_utf8(lines.out).unwrap();
        let parsed: Vec<serde_json::Value> =
            written.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(parsed.len(), 2, "{written}");
        assert_eq!(parsed[0]["session_id"], "s-1");
        assert_eq!(parsed[0]["type"], "text_delta");
        assert_eq!(parsed[0]["text"], "hi\nthere");
    }

    #[test]
    fn a_runs_lines_say_how_it_ended() {
        let cancelled = result_json("s-1", &RunResult::Cancelled, std::time::Duration::from_millis(1500));
        assert_eq!(
            cancelled,
            serde_json::json!({"type": "result", "session_id": "s-1", "outcome": "cancelled", "duration_ms": 1500})
        );
        let failed = result_json("s-1", &RunResult::Failed("no".into()), std::time::Duration::ZERO);
        assert_eq!(
            (&failed["outcome"], &failed["error"]),
            (&serde_json::json!("failed"), &serde_json::json!("no"))
        );
        let mut lines = JsonLines::new("s-1", Vec::new());
        lines.line(&cancelled).unwrap();
        assert_eq!(String::from_utf8(lines.out).unwrap(), format!("{cancelled}\n"));
    }

    #[test]
    fn a_write_that_fails_fails_the_sink() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let error = JsonLines::new("s", Closed).emit(Event::TextDelta { text: "x".into() }).unwrap_err();
        assert!(error.to_string().contains("cannot write the output"), "{error}");
    }
}
