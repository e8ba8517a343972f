//! What a turn shows: the answer on stdout, progress on stderr (human), or
//! one JSON event per line on stdout (`--json`).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use bosun_core::event::Decision;
use bosun_core::{Event, EventSink, SinkError};
use indicatif::{ProgressBar, ProgressStyle};

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

/// The argument worth showing for a call.
fn key_argument(name: &str, arguments: &serde_json::Value) -> String {
    let field = match name {
        "shell" => "command",
        "search" => "pattern",
        "apply_patch" => return String::new(),
        _ => "path",
    };
    match arguments.get(field) {
        Some(serde_json::Value::String(text)) => text.lines().next().unwrap_or_default().to_owned(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Human output.
pub struct HumanSink {
    spinner: Option<ProgressBar>,
    progress: bool,
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
        Self {
            spinner: None,
            progress: std::io::stderr().is_terminal(),
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
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(broken)?;
                self.streamed = true;
                self.ends_with_newline = text.ends_with('\n');
            }
            Event::ReasoningDelta { text } => {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{}", style::dim(&text));
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
                eprintln!("{} {} {}", style::cyan("●"), style::bold(&name), key_argument(&name, &arguments));
            }
            Event::ApprovalDecided {
                decision: Decision::Deny | Decision::DeniedByPolicy, reason, ..
            } => {
                self.note(&style::red(&format!("  denied: {}", reason.unwrap_or_default())));
            }
            Event::ToolStart { name, .. } if self.progress => {
                let spinner = ProgressBar::new_spinner();
                if let Ok(template) = ProgressStyle::with_template("  {spinner} {msg} {elapsed}") {
                    spinner.set_style(template);
                }
                spinner.set_message(name);
                spinner.enable_steady_tick(Duration::from_millis(120));
                self.spinner = Some(spinner);
            }
            Event::ToolProgress { message, .. } => {
                if let Some(spinner) = &self.spinner {
                    spinner.set_message(message);
                }
            }
            Event::ToolEnd { name, is_error, output, .. } => {
                if let Some(spinner) = self.spinner.take() {
                    spinner.finish_and_clear();
                }
                if is_error {
                    let first = output.lines().next().unwrap_or_default();
                    eprintln!("  {}", style::red(&format!("✗ {first}")));
                } else if name == "edit_file" || name == "apply_patch" || name == "write_file" {
                    for line in output.lines().skip(1) {
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
                    eprintln!("  {}", style::dim(output.lines().next().unwrap_or_default()));
                }
            }
            Event::Error { message, .. } => eprintln!("{}", style::red(&format!("error: {message}"))),
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
