//! What a turn shows: the answer on stdout, progress on stderr (human), or
//! one JSON event per line on stdout (`--json`).
//!
//! Human output passes every untrusted text through [`crate::sanitize`]
//! before our colours are added (invariant 20): what goes to stderr always,
//! the answer and the reasoning when their stream is a terminal. An answer
//! piped or written to a file stays byte-exact.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use bosun_core::event::Decision;
use bosun_core::{Event, EventSink, SinkError};
use bosun_tui::wording::{hook_line, key_argument};
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Env;
use crate::config::models::Costing;
use crate::sanitize;
use bosun_agent::json_events::OutputFailed;

/// Colour for one output stream, or plain text. Decided once in `main`
/// ([`Palettes::decide`]) and handed to whatever writes to that stream, so
/// a stream that is not a terminal never gets escapes because another one is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Palette {
    enabled: bool,
}

impl Palette {
    /// No colour.
    #[cfg(test)]
    pub const PLAIN: Self = Self { enabled: false };
    /// Colour.
    #[cfg(test)]
    pub const COLOUR: Self = Self { enabled: true };

    const RED: Style = AnsiColor::Red.on_default();
    const GREEN: Style = AnsiColor::Green.on_default();
    const CYAN: Style = AnsiColor::Cyan.on_default();
    const DIM: Style = Style::new().dimmed();
    const BOLD: Style = Style::new().bold();

    /// The palette of a stream: colour when it is a terminal, unless
    /// `NO_COLOR` is set (to anything but blanks).
    pub fn for_stream(env: &Env, terminal: bool) -> Self {
        Self { enabled: terminal && env.get("NO_COLOR").is_none() }
    }

    fn paint(self, style: Style, text: &str) -> String {
        if self.enabled { format!("{style}{text}{style:#}") } else { text.to_owned() }
    }

    /// Red.
    pub fn red(self, text: &str) -> String {
        self.paint(Self::RED, text)
    }
    /// Green.
    pub fn green(self, text: &str) -> String {
        self.paint(Self::GREEN, text)
    }
    /// Dim.
    pub fn dim(self, text: &str) -> String {
        self.paint(Self::DIM, text)
    }
    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.paint(Self::BOLD, text)
    }
    /// Cyan.
    pub fn cyan(self, text: &str) -> String {
        self.paint(Self::CYAN, text)
    }
}

/// The palettes of the streams bosun styles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Palettes {
    /// The answer and listings (`sessions`).
    pub stdout: Palette,
    /// Progress, tool lines, diffs, notes and errors.
    pub stderr: Palette,
    /// The approval prompt on `/dev/tty`: a terminal whenever it opens.
    pub tty: Palette,
}

impl Palettes {
    /// Looks at the environment and at stderr once, for the whole run.
    pub fn decide(env: &Env) -> Self {
        Self {
            stdout: Palette::for_stream(env, std::io::stdout().is_terminal()),
            stderr: Palette::for_stream(env, std::io::stderr().is_terminal()),
            tty: Palette::for_stream(env, true),
        }
    }
}

fn broken(error: std::io::Error) -> SinkError {
    SinkError::new(OutputFailed(error))
}

/// The first line of `text`, sanitised.
fn first_line(text: &str) -> std::borrow::Cow<'_, str> {
    sanitize::line(text.split('\n').next().unwrap_or_default())
}

/// Human output.
pub struct HumanSink {
    spinner: Option<ProgressBar>,
    progress: bool,
    /// Colour for stderr, where everything but the answer goes.
    palette: Palette,
    /// Whether stdout (the answer) and stderr (reasoning) are terminals:
    /// only then are they sanitised, so piped answers stay byte-exact.
    stdout_terminal: bool,
    stderr_terminal: bool,
    streamed: bool,
    ends_with_newline: bool,
    /// Whether streamed reasoning on stderr has no newline at its end yet:
    /// the next line there (a call, a note, the tokens line) must start
    /// one of its own rather than run on after the reasoning.
    reasoning_open: bool,
    /// How the session's model is billed, for the cost on the tokens line.
    costing: Costing,
    /// Calls whose denial was said: their error result is not said again.
    denied: std::collections::HashSet<bosun_core::CallId>,
}

impl std::fmt::Debug for HumanSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanSink").finish_non_exhaustive()
    }
}

impl HumanSink {
    /// A sink colouring stderr with `palette`; spinners only when stderr is
    /// a terminal.
    pub fn new(palette: Palette) -> Self {
        let stderr_terminal = std::io::stderr().is_terminal();
        Self {
            spinner: None,
            progress: stderr_terminal,
            palette,
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal,
            streamed: false,
            ends_with_newline: true,
            reasoning_open: false,
            costing: Costing::Unknown,
            denied: Default::default(),
        }
    }

    /// Shows the turn's cost on the tokens line by `costing`.
    pub fn with_costing(mut self, costing: Costing) -> Self {
        self.costing = costing;
        self
    }

    /// Whether a call's end gets a line: not an error result whose denial
    /// was just said ("denied: why" then "✗ denied …" said it twice).
    fn says_end(&mut self, call: bosun_core::CallId, is_error: bool) -> bool {
        !(self.denied.remove(&call) && is_error)
    }

    /// Ends streamed reasoning with a newline, once, before stderr gets
    /// another line.
    fn end_reasoning(&mut self) {
        if std::mem::take(&mut self.reasoning_open) {
            eprintln!();
        }
    }

    fn note(&mut self, line: &str) {
        self.end_reasoning();
        match &self.spinner {
            Some(spinner) => spinner.println(line),
            None => eprintln!("{line}"),
        }
    }
}

impl EventSink for HumanSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        let palette = self.palette;
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
                let _ = write!(err, "{}", palette.dim(&shown));
                if !text.is_empty() {
                    self.reasoning_open = !text.ends_with('\n');
                }
            }
            Event::ModelRoundStart { round, .. } if round > 1 && self.streamed && !self.ends_with_newline => {
                println!();
                self.ends_with_newline = true;
            }
            Event::ToolCallProposed { name, arguments, .. } => {
                self.end_reasoning();
                if self.streamed && !self.ends_with_newline {
                    println!();
                    self.ends_with_newline = true;
                }
                let shown = sanitize::line(&name);
                eprintln!(
                    "{} {} {}",
                    palette.cyan("●"),
                    palette.bold(&shown),
                    key_argument(&name, &arguments)
                );
            }
            Event::ApprovalDecided {
                call_id,
                decision: Decision::Deny | Decision::DeniedByPolicy,
                reason,
                ..
            } => {
                self.denied.insert(call_id);
                let reason = reason.unwrap_or_default();
                self.note(&palette.red(&format!("  denied: {}", sanitize::line(&reason))));
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
            Event::ToolOutput { tail, .. } => {
                if let (Some(spinner), Some(last)) = (&self.spinner, tail.last()) {
                    spinner.set_message(sanitize::line(last).into_owned());
                }
            }
            Event::ToolEnd { call_id, name, is_error, output } => {
                if let Some(spinner) = self.spinner.take() {
                    spinner.finish_and_clear();
                }
                if !self.says_end(call_id, is_error) {
                    // Said with the denial.
                } else if is_error {
                    eprintln!("  {}", palette.red(&format!("✗ {}", first_line(&output))));
                } else if name == "edit_file" || name == "apply_patch" || name == "write_file" {
                    for line in output.lines().skip(1) {
                        let line = sanitize::block(line);
                        let line = line.as_ref();
                        let shown = if line.starts_with("+++") || line.starts_with("---") {
                            palette.dim(line)
                        } else if line.starts_with('+') {
                            palette.green(line)
                        } else if line.starts_with('-') {
                            palette.red(line)
                        } else {
                            palette.dim(line)
                        };
                        eprintln!("  {shown}");
                    }
                } else if name == "shell" {
                    eprintln!("  {}", palette.dim(&first_line(&output)));
                }
            }
            Event::PlanUpdated { plan, .. } => {
                let (done, all) = plan.progress();
                self.note(&palette.bold(&format!("  plan ({done}/{all} done)")));
                for step in &plan.steps {
                    let mark = match step.status {
                        bosun_core::plan::StepStatus::Completed => "✔",
                        bosun_core::plan::StepStatus::InProgress => "▶",
                        _ => "□",
                    };
                    self.note(&format!("    {mark} {}", sanitize::line(&step.step)));
                }
            }
            Event::ModelRetry { attempt, wait_ms, reason } => {
                let seconds = Duration::from_millis(wait_ms).as_secs_f64();
                let line =
                    format!("  retrying (attempt {attempt}) in {seconds:.1} s: {}", sanitize::line(&reason));
                self.note(&palette.dim(&line));
            }
            Event::Error { message, .. } => {
                self.end_reasoning();
                eprintln!("{}", palette.red(&format!("error: {}", sanitize::block(&message))));
            }
            Event::Compacted { tier, before, after, cached_prefix, .. } => {
                let how = match tier {
                    1 => "old tool results shortened",
                    2 => "older work summarized",
                    _ => "older messages left out",
                };
                self.note(&palette.dim(&format!("  context compacted ({how}): ~{before} → ~{after} tokens; the prompt cache keeps the first ~{cached_prefix}")));
            }
            Event::ToolsChanged { withdrawn, restored, added, notices } => {
                for notice in &notices {
                    self.note(&palette.dim(&format!("  {}", sanitize::line(notice))));
                }
                for (what, names) in [("withdrawn", &withdrawn), ("back", &restored), ("new", &added)] {
                    if !names.is_empty() {
                        let line = format!("  tools {what}: {}", sanitize::line(&names.join(", ")));
                        self.note(&palette.dim(&line));
                    }
                }
            }
            Event::HookRun { run } => {
                if let Some((failed, line)) = hook_line(&run) {
                    self.note(&if failed { palette.red(&line) } else { palette.dim(&line) });
                }
            }
            Event::Subagent { child, event, .. } => {
                if let Some(line) = child_line(&child, &event, 1) {
                    self.note(&palette.dim(&line));
                }
            }
            Event::TurnEnd { spend, .. } => {
                self.end_reasoning();
                if self.streamed && !self.ends_with_newline {
                    println!();
                }
                eprintln!("{}", palette.dim(&tokens_line(&spend, &self.costing)));
            }
            _ => {}
        }
        Ok(())
    }
}

/// The indented line for a sub-agent's event, when it is worth one: its
/// tool calls, refusals, failures and its end. `depth` indents a
/// grandchild's under its parent's; the child is named by the end of its
/// session id (the start of a v7 id is its time, alike across siblings).
fn child_line(child: &str, event: &Event, depth: usize) -> Option<String> {
    let who = format!("{}↳ {}", "  ".repeat(depth), &child[child.len().saturating_sub(8)..]);
    let what = match event {
        Event::Subagent { child, event, .. } => return child_line(child, event, depth + 1),
        Event::ToolCallProposed { name, arguments, .. } => {
            format!("● {} {}", sanitize::line(name), key_argument(name, arguments))
        }
        Event::ApprovalDecided { decision: Decision::Deny | Decision::DeniedByPolicy, reason, .. } => {
            format!("denied: {}", sanitize::line(reason.as_deref().unwrap_or_default()))
        }
        Event::ToolEnd { is_error: true, output, .. } => format!("✗ {}", first_line(output)),
        Event::Error { message, .. } => format!("error: {}", sanitize::line(message)),
        Event::TurnEnd { spend, .. } => {
            let usage = spend.total().usage;
            format!("done ({}, {} out)", prompt_tokens(&usage), usage.output)
        }
        _ => return None,
    };
    Some(format!("{who} {}", what.trim_end()))
}

/// The line after a turn: its tokens (with the share of the prompt a
/// provider's cache served) and what they cost, by bucket.
fn tokens_line(spend: &bosun_core::Spend, costing: &Costing) -> String {
    let usage = spend.total().usage;
    format!("tokens: {}, {} out, {}", prompt_tokens(&usage), usage.output, costing.describe_spend(spend))
}

/// `12000 in`, or `12000 in (85% cached)` when a cache served some of it.
pub fn prompt_tokens(usage: &bosun_core::Usage) -> String {
    let prompt = usage.input + usage.cache_read + usage.cache_write;
    if usage.cache_read == 0 {
        return format!("{prompt} in");
    }
    let percent = (usage.cache_read as f64 * 100.0 / prompt as f64).floor();
    format!("{prompt} in ({percent}% cached)")
}

/// `--json`: one event per line on stdout, with the session id.
pub type JsonSink = bosun_agent::json_events::JsonLines<std::io::Stdout>;

/// The `--json` sink of `session`.
pub fn json_sink(session: &str) -> JsonSink {
    JsonSink::new(session, std::io::stdout())
}

/// Writes to stdout, flushed. A reader that stopped reading
/// (`bosun sessions list | head`) is an `ErrorKind::BrokenPipe` error, which
/// `main` ends quietly on, as other Unix tools do.
pub fn out(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_fmt(args).and_then(|()| stdout.flush())
}

/// [`out`] and a newline.
pub fn outln(args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    out(format_args!("{args}\n"))
}

/// Whether `error` is stdout's reader gone (`| head`).
pub fn broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_calls_error_result_is_not_said_again() {
        let mut sink = HumanSink::new(Palette::PLAIN);
        let (denied, failed) = (bosun_core::CallId::new_v7(), bosun_core::CallId::new_v7());
        let decided =
            Event::ApprovalDecided { call_id: denied, decision: Decision::Deny, reason: Some("no".into()) };
        sink.emit(decided).unwrap();
        assert!(!sink.says_end(denied, true), "its denial said it");
        assert!(sink.says_end(failed, true), "another call's failure is said");
        assert!(sink.says_end(denied, true), "once only");
    }

    #[test]
    fn colours_are_the_escapes_bosun_wrote_by_hand_before() {
        let on = Palette::COLOUR;
        assert_eq!(on.red("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(on.green("x"), "\x1b[32mx\x1b[0m");
        assert_eq!(on.cyan("●"), "\x1b[36m●\x1b[0m");
        assert_eq!(on.dim("a b"), "\x1b[2ma b\x1b[0m");
        assert_eq!(on.bold(""), "\x1b[1m\x1b[0m");
    }

    #[test]
    fn a_plain_palette_leaves_the_text_alone() {
        let off = Palette::PLAIN;
        for text in ["", "x", "\x1b[31m already escaped"] {
            assert_eq!(
                [off.red(text), off.green(text), off.cyan(text), off.dim(text), off.bold(text)],
                [text; 5]
            );
        }
    }

    #[test]
    fn the_tokens_line_shows_the_cost_or_says_it_is_unknown() {
        use bosun_core::{Pricing as _, Spend, Spent};
        let mut usage = bosun_core::Usage::new(1_000, 2_000);
        usage.cache_read = 200_000;
        usage.cache_write = 10_000;
        let table = bosun_providers::ModelTable::builtin().unwrap();
        let opus = table.find("anthropic", "claude-opus-5-5").unwrap();
        let pricing = table.pricing("anthropic", opus);
        let mut spend = Spend::default();
        spend.main = Spent::new(usage, pricing.cost_micros(&usage));
        let priced = Costing::Priced(pricing.clone());
        // 1,000 × $4 + 200,000 × $0.20 + 10,000 × $5 + 2,000 × $20 per million.
        assert_eq!(tokens_line(&spend, &priced), "tokens: 211000 in (94% cached), 2000 out, $0.1340");
        assert_eq!(
            tokens_line(&spend, &Costing::Unknown),
            "tokens: 211000 in (94% cached), 2000 out, cost unknown"
        );
        assert_eq!(
            tokens_line(&spend, &Costing::Local),
            "tokens: 211000 in (94% cached), 2000 out, $0 (local model)"
        );
        // A summary's cost is named apart; 10,000 in × $4 + 500 out × $20.
        let summary = bosun_core::Usage::new(10_000, 500);
        spend.compaction = Spent::new(summary, pricing.cost_micros(&summary));
        assert_eq!(
            tokens_line(&spend, &priced),
            "tokens: 221000 in (90% cached), 2500 out, $0.1840 (compaction $0.0500)"
        );
        // Sub-agents' tokens are named apart too; 5,000 in × $4 + 100 out × $20.
        let children = bosun_core::Usage::new(5_000, 100);
        spend.subagents = Spent::new(children, pricing.cost_micros(&children));
        assert_eq!(
            tokens_line(&spend, &priced),
            "tokens: 226000 in (88% cached), 2600 out, $0.2060 (compaction $0.0500, sub-agents $0.0220)"
        );
        // No cache read: no share shown.
        assert_eq!(prompt_tokens(&bosun_core::Usage::new(5, 1)), "5 in");
    }

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        let bare = Env::from_pairs(&[]);
        assert_eq!(Palette::for_stream(&bare, true), Palette::COLOUR);
        assert_eq!(Palette::for_stream(&bare, false), Palette::PLAIN);
        let no_color = Env::from_pairs(&[("NO_COLOR", "1")]);
        assert_eq!(Palette::for_stream(&no_color, true), Palette::PLAIN);
        // A blank NO_COLOR counts as unset, as every variable bosun reads.
        let blank = Env::from_pairs(&[("NO_COLOR", " ")]);
        assert_eq!(Palette::for_stream(&blank, true), Palette::COLOUR);
    }
}
