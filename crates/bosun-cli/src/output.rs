//! What a turn shows: the answer on stdout, progress on stderr (human), or
//! one JSON event per line on stdout (`--json`).
//!
//! Human output passes every untrusted text through [`crate::sanitize`]
//! before our colours are added (invariant 20): what goes to stderr always,
//! the answer and the reasoning when their stream is a terminal. An answer
//! piped or written to a file stays byte-exact.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use bosun_core::event::Decision;
use bosun_core::{Event, EventSink, SinkError};
use indicatif::{ProgressBar, ProgressStyle};

use crate::sanitize;

/// Colours, decided once from `NO_COLOR` and whether stderr is a terminal.
pub mod style {
    use std::sync::OnceLock;

    static ENABLED: OnceLock<bool> = OnceLock::new();

    /// Decides whether to colour (call once, early).
    pub fn init(enabled: bool) {
        let _ = ENABLED.set(enabled);
    }

    fn paint(code: &str, text: &str) -> String {
        if *ENABLED.get().unwrap_or(&false) { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// Red.
    pub fn red(text: &str) -> String {
        paint("31", text)
    }
    /// Green.
    pub fn green(text: &str) -> String {
        paint("32", text)
    }
    /// Dim.
    pub fn dim(text: &str) -> String {
        paint("2", text)
    }
    /// Bold.
    pub fn bold(text: &str) -> String {
        paint("1", text)
    }
    /// Cyan.
    pub fn cyan(text: &str) -> String {
        paint("36", text)
    }
}

fn broken(error: std::io::Error) -> SinkError {
    SinkError(format!("cannot write the output: {error}"))
}

/// The argument worth showing for a call, sanitised as one line: its first
/// line, and ` …` when more follow.
fn key_argument(name: &str, arguments: &serde_json::Value) -> String {
    let field = match name {
        "shell" => "command",
        "search" => "pattern",
        "apply_patch" => return String::new(),
        _ => "path",
    };
    match arguments.get(field) {
        Some(serde_json::Value::String(text)) => {
            let text = text.strip_suffix('\n').unwrap_or(text);
            match text.split_once('\n') {
                Some((first, _)) => format!("{} …", sanitize::line(first)),
                None => sanitize::line(text).into_owned(),
            }
        }
        Some(other) => sanitize::line(&other.to_string()).into_owned(),
        None => String::new(),
    }
}

/// The first line of `text`, sanitised.
fn first_line(text: &str) -> std::borrow::Cow<'_, str> {
    sanitize::line(text.split('\n').next().unwrap_or_default())
}

/// Human output.
pub struct HumanSink {
    spinner: Option<ProgressBar>,
    progress: bool,
    /// Whether stdout (the answer) and stderr (reasoning) are terminals:
    /// only then are they sanitised, so piped answers stay byte-exact.
    stdout_terminal: bool,
    stderr_terminal: bool,
    streamed: bool,
    ends_with_newline: bool,
}

impl std::fmt::Debug for HumanSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanSink").finish_non_exhaustive()
    }
}

impl HumanSink {
    /// A sink; spinners only when stderr is a terminal.
    pub fn new() -> Self {
        let stderr_terminal = std::io::stderr().is_terminal();
        Self {
            spinner: None,
            progress: stderr_terminal,
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal,
            streamed: false,
            ends_with_newline: true,
        }
    }

    fn note(&self, line: &str) {
        match &self.spinner {
            Some(spinner) => spinner.println(line),
            None => eprintln!("{line}"),
        }
    }
}

impl EventSink for HumanSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        match event {
            Event::TextDelta { text } => {
                let shown = if self.stdout_terminal { sanitize::block(&text) } else { text.as_str().into() };
                let mut out = std::io::stdout().lock();
                out.write_all(shown.as_bytes()).and_then(|()| out.flush()).map_err(broken)?;
                self.streamed = true;
                self.ends_with_newline = text.ends_with('\n');
            }
            Event::ReasoningDelta { text } => {
                let shown = if self.stderr_terminal { sanitize::block(&text) } else { text.as_str().into() };
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{}", style::dim(&shown));
            }
            Event::ModelRoundStart { round, .. } if round > 1 && self.streamed && !self.ends_with_newline => {
                println!();
                self.ends_with_newline = true;
            }
            Event::ToolCallProposed { name, arguments, .. } => {
                if self.streamed && !self.ends_with_newline {
                    println!();
                    self.ends_with_newline = true;
                }
                let shown = sanitize::line(&name);
                eprintln!("{} {} {}", style::cyan("●"), style::bold(&shown), key_argument(&name, &arguments));
            }
            Event::ApprovalDecided {
                decision: Decision::Deny | Decision::DeniedByPolicy, reason, ..
            } => {
                let reason = reason.unwrap_or_default();
                self.note(&style::red(&format!("  denied: {}", sanitize::line(&reason))));
            }
            Event::ToolStart { name, .. } if self.progress => {
                let spinner = ProgressBar::new_spinner();
                if let Ok(template) = ProgressStyle::with_template("  {spinner} {msg} {elapsed}") {
                    spinner.set_style(template);
                }
                spinner.set_message(sanitize::line(&name).into_owned());
                spinner.enable_steady_tick(Duration::from_millis(120));
                self.spinner = Some(spinner);
            }
            Event::ToolProgress { message, .. } => {
                if let Some(spinner) = &self.spinner {
                    spinner.set_message(sanitize::line(&message).into_owned());
                }
            }
            Event::ToolEnd { name, is_error, output, .. } => {
                if let Some(spinner) = self.spinner.take() {
                    spinner.finish_and_clear();
                }
                if is_error {
                    eprintln!("  {}", style::red(&format!("✗ {}", first_line(&output))));
                } else if name == "edit_file" || name == "apply_patch" || name == "write_file" {
                    for line in output.lines().skip(1) {
                        let line = sanitize::block(line);
                        let line = line.as_ref();
                        let shown = if line.starts_with("+++") || line.starts_with("---") {
                            style::dim(line)
                        } else if line.starts_with('+') {
                            style::green(line)
                        } else if line.starts_with('-') {
                            style::red(line)
                        } else {
                            style::dim(line)
                        };
                        eprintln!("  {shown}");
                    }
                } else if name == "shell" {
                    eprintln!("  {}", style::dim(&first_line(&output)));
                }
            }
            Event::Error { message, .. } => {
                eprintln!("{}", style::red(&format!("error: {}", sanitize::block(&message))));
            }
            Event::TurnEnd { usage, .. } => {
                if self.streamed && !self.ends_with_newline {
                    println!();
                }
                eprintln!(
                    "{}",
                    style::dim(&format!(
                        "tokens: {} in, {} out",
                        usage.input + usage.cache_read,
                        usage.output
                    ))
                );
            }
            _ => {}
        }
        Ok(())
    }
}

/// `--json`: one event per line on stdout, with the session id.
#[derive(Debug)]
pub struct JsonSink {
    session: String,
}

impl JsonSink {
    /// A sink tagging events with `session`.
    pub fn new(session: &str) -> Self {
        Self { session: session.to_owned() }
    }
}

impl EventSink for JsonSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        let mut value = serde_json::to_value(&event).map_err(|e| SinkError(e.to_string()))?;
        if let Some(object) = value.as_object_mut() {
            object.insert("session_id".into(), serde_json::Value::String(self.session.clone()));
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{value}").and_then(|()| out.flush()).map_err(broken)
    }
}
