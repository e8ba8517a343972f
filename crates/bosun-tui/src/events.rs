//! Session events into the UI's state: text and reasoning streams, tool
//! calls from proposal to outcome, and the one-line notes the line output
//! (`bosun exec`) also prints. Every untrusted text is sanitised here or in
//! the helpers it goes through.

use std::time::{Duration, Instant};

use bosun_core::event::{Decision, OUTPUT_LINE_BYTES, TurnOutcomeKind};
use bosun_core::{Event, StopReason};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::app::{App, Running};
use crate::pager::Output;
use crate::render::LIVE_OUTPUT_ROWS;
use crate::text::{clean, clean_line, lines};
use crate::wording::{hook_line, key_argument};

/// Lines of a failed shell call's output shown.
const SHELL_TAIL: usize = 8;
/// Lines of a finished call's output left under its line (the last of a
/// command's, the first of another tool's).
const END_LINES: usize = 3;
/// Lines of a tool's diff shown in the scrollback.
const DIFF_LINES: usize = 200;

/// A duration as people read it: `0.4s`, `12s`, `2m05s`.
pub(crate) fn seconds(elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.1}s")
    } else if secs < 60.0 {
        format!("{}s", elapsed.as_secs())
    } else {
        format!("{}m{:02}s", elapsed.as_secs() / 60, elapsed.as_secs() % 60)
    }
}

fn first_line(text: &str) -> String {
    clean_line(text.split('\n').next().unwrap_or_default())
}

impl App {
    pub(crate) fn event(&mut self, event: Event) {
        match event {
            Event::TextDelta { text } => {
                self.finish_reasoning();
                self.answer.push_str(&text);
                let done = crate::markdown::complete_prefix(&self.answer);
                if done > 0 {
                    let finished: String = self.answer.drain(..done).collect();
                    self.commit_answer(&finished);
                }
            }
            Event::ReasoningDelta { text } => self.reasoning.push_str(&text),
            Event::ModelRoundStart { round, .. } if round > 1 => self.finish_output(),
            Event::ToolCallProposed { call_id, name, arguments } => {
                self.finish_output();
                let summary = key_argument(&name, &arguments);
                self.calls.push(Running {
                    id: call_id,
                    name,
                    summary,
                    proposed: self.now,
                    started: None,
                    progress: None,
                    tail: Vec::new(),
                    lines: 0,
                    waiting_approval: false,
                    denied: None,
                });
            }
            Event::ApprovalRequested { call_id, .. } => {
                if let Some(call) = self.call(call_id) {
                    call.waiting_approval = true;
                }
            }
            Event::ApprovalDecided { call_id, decision, reason } => {
                if let Some(call) = self.call(call_id) {
                    call.waiting_approval = false;
                    if matches!(decision, Decision::Deny | Decision::DeniedByPolicy | Decision::DeniedByHook)
                    {
                        call.denied = Some(clean_line(reason.as_deref().unwrap_or("denied")));
                    }
                }
            }
            Event::ToolStart { call_id, .. } => {
                let now = self.now;
                if let Some(call) = self.call(call_id) {
                    call.started = Some(now);
                }
            }
            Event::ToolProgress { call_id, message } => {
                if let Some(call) = self.call(call_id) {
                    call.progress = Some(first_line(&message));
                }
            }
            Event::ToolOutput { call_id, mut tail, lines } => {
                if let Some(call) = self.call(call_id) {
                    // The session bounds a report already; the UI keeps no
                    // more than it draws whatever a producer sends, so a
                    // flood cannot grow its state.
                    tail.drain(..tail.len().saturating_sub(LIVE_OUTPUT_ROWS));
                    for line in &mut tail {
                        if line.len() > OUTPUT_LINE_BYTES {
                            *line = line.chars().take(OUTPUT_LINE_BYTES).collect();
                        }
                    }
                    call.tail = tail;
                    call.lines = lines;
                }
            }
            Event::ToolRetry { call_id, attempt, delay_ms, error } => {
                let name = self.call(call_id).map(|c| c.name.clone()).unwrap_or_default();
                let line = format!(
                    "  retrying {} (attempt {attempt}) in {}: {}",
                    clean_line(&name),
                    seconds(Duration::from_millis(delay_ms)),
                    first_line(&error)
                );
                self.note(line);
            }
            Event::MessageDelivered { id, delivery, .. } => {
                self.finish_output();
                let text = self.queue.iter().find(|q| q.id == id).map(|q| first_line(&q.text));
                let how = match delivery {
                    bosun_core::Delivery::Steer => "steering",
                    bosun_core::Delivery::FollowUp => "follow-up",
                };
                let line = match text {
                    Some(text) => format!("› {text} ({how}, delivered)"),
                    None => format!("› queued message {id} delivered ({how})"),
                };
                self.note(line);
            }
            Event::ToolEnd { call_id, name, is_error, output } => {
                self.tool_end(call_id, &name, is_error, &output)
            }
            Event::PlanUpdated { plan, .. } => self.plan_updated(&plan),
            Event::ModelRetry { attempt, wait_ms, reason } => {
                let wait = seconds(Duration::from_millis(wait_ms));
                self.note(format!("  retrying (attempt {attempt}) in {wait}: {}", clean_line(&reason)));
            }
            Event::Error { message, .. } => {
                self.finish_output();
                let red = self.theme.red();
                let shown: Vec<Line<'static>> = lines(&message)
                    .enumerate()
                    .map(|(i, l)| {
                        Line::from(Span::styled(
                            format!("{}{}", if i == 0 { "error: " } else { "  " }, clean(l)),
                            red,
                        ))
                    })
                    .collect();
                self.push_lines(shown);
            }
            Event::Compacted { tier, before, after, cached_prefix, .. } => {
                let how = match tier {
                    1 => "old tool results shortened",
                    2 => "older work summarized",
                    _ => "older messages left out",
                };
                self.note(format!("  context compacted ({how}): ~{before} → ~{after} tokens; the prompt cache keeps the first ~{cached_prefix}"));
            }
            Event::ToolsChanged { withdrawn, restored, added, notices } => {
                for notice in &notices {
                    self.note(format!("  {}", clean_line(notice)));
                }
                for (what, names) in [("withdrawn", &withdrawn), ("back", &restored), ("new", &added)] {
                    if !names.is_empty() {
                        self.note(format!("  tools {what}: {}", clean_line(&names.join(", "))));
                    }
                }
            }
            Event::HookRun { run } => {
                if let Some((failed, line)) = hook_line(&run) {
                    let style = if failed { self.theme.red() } else { self.theme.dim() };
                    self.push_line(Line::from(Span::styled(line, style)));
                }
            }
            Event::Subagent { child, event, .. } => {
                if let Some(line) = child_line(&child, &event, 1) {
                    self.note(line);
                }
            }
            Event::TurnEnd { outcome, stop_reason, .. } => {
                self.finish_output();
                if outcome == TurnOutcomeKind::Cancelled {
                    self.note("(cancelled)".to_owned());
                }
                if stop_reason == Some(StopReason::Length) {
                    let line = "the answer was cut at the model's output limit";
                    self.push_line(Line::from(Span::styled(line, self.theme.yellow())));
                }
            }
            _ => {}
        }
    }

    fn call(&mut self, id: bosun_core::CallId) -> Option<&mut Running> {
        self.calls.iter_mut().find(|c| c.id == id)
    }

    fn note(&mut self, text: String) {
        let dim = self.theme.dim();
        self.push_line(Line::from(Span::styled(text, dim)));
    }

    fn tool_end(&mut self, id: bosun_core::CallId, name: &str, is_error: bool, output: &str) {
        self.finish_output();
        let theme = self.theme;
        let running = self.calls.iter().position(|c| c.id == id).map(|at| self.calls.remove(at));
        let (summary, took, denied) = match &running {
            Some(call) => {
                let since: Instant = call.started.unwrap_or(call.proposed);
                (
                    call.summary.clone(),
                    call.started.map(|_| self.now.saturating_duration_since(since)),
                    call.denied.clone(),
                )
            }
            None => (String::new(), None, None),
        };
        let (mark, style) = if is_error { ("✗", theme.red()) } else { ("✓", theme.green()) };
        let mut spans =
            vec![Span::styled(format!("{mark} "), style), Span::styled(clean_line(name), theme.bold())];
        if !summary.is_empty() {
            spans.push(Span::raw(format!(" {summary}")));
        }
        if let Some(took) = took {
            spans.push(Span::styled(format!(" · {}", seconds(took)), theme.dim()));
        }
        if let Some(reason) = &denied {
            spans.push(Span::styled(format!(" · denied: {reason}"), theme.red()));
        }
        self.push_line(Line::from(spans));

        if denied.is_some() {
            return;
        }
        if !output.is_empty() {
            self.keep_output(Output { name: name.to_owned(), summary, text: output.to_owned(), is_error });
        }
        if !is_error && matches!(name, "edit_file" | "apply_patch" | "write_file") {
            let diff: String = output.split_inclusive('\n').skip(1).collect();
            let mut shown = crate::diff::diff_lines(&diff, theme);
            let more = shown.len().saturating_sub(DIFF_LINES);
            shown.truncate(DIFF_LINES);
            let mut shown: Vec<Line<'static>> = shown.into_iter().map(indent).collect();
            if more > 0 {
                shown.push(indent(Line::from(Span::styled(format!("… {more} more lines"), theme.dim()))));
            }
            self.push_lines(shown);
        } else {
            let shown = excerpt(name, is_error, output, theme);
            self.push_lines(shown.into_iter().map(indent).collect());
        }
    }
}

fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("    ")];
    spans.extend(line.spans);
    Line::from(spans)
}

/// What of a finished call's output stays under its line: a command's
/// last lines (its status line first when it failed), another tool's
/// first lines (its last when it failed), and how many more Ctrl+O shows.
fn excerpt(name: &str, is_error: bool, output: &str, theme: crate::theme::Theme) -> Vec<Line<'static>> {
    let all: Vec<&str> = lines(output).collect();
    let shell = name == "shell";
    let (head, body) = match all.split_first() {
        Some((status, rest)) if shell && is_error => (Some(*status), rest),
        // A command's status line says what the mark already does.
        Some((_, rest)) if shell => (None, rest),
        _ => (None, &all[..]),
    };
    let style = match (is_error, shell) {
        (true, false) => theme.red(),
        (true, true) => Style::new(),
        (false, _) => theme.dim(),
    };
    let keep = if shell && is_error { SHELL_TAIL } else { END_LINES };
    let hidden = body.len().saturating_sub(keep);
    let from_end = shell || is_error;
    let kept = if from_end { &body[hidden..] } else { &body[..body.len() - hidden] };
    let hint = (hidden > 0)
        .then(|| Line::from(Span::styled(format!("… +{hidden} lines (ctrl+o to expand)"), theme.dim())));
    let mut out: Vec<Line<'static>> = Vec::new();
    if let Some(status) = head {
        out.push(Line::from(Span::styled(clean(status), theme.red())));
    }
    if from_end {
        out.extend(hint.clone());
    }
    out.extend(kept.iter().map(|l| Line::from(Span::styled(clean(l), style))));
    if !from_end {
        out.extend(hint);
    }
    out
}

/// The indented line for a sub-agent's event, when it is worth one: its
/// tool calls, refusals, failures and its end; the child named by the end
/// of its session id (the start of a v7 id is its time, alike in siblings).
fn child_line(child: &str, event: &Event, depth: usize) -> Option<String> {
    let short: String = child.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    let who = format!("{}↳ {}", "  ".repeat(depth), clean_line(&short));
    let what = match event {
        Event::Subagent { child, event, .. } => return child_line(child, event, depth + 1),
        Event::ToolCallProposed { name, arguments, .. } => {
            format!("● {} {}", clean_line(name), key_argument(name, arguments))
        }
        Event::ApprovalDecided { decision: Decision::Deny | Decision::DeniedByPolicy, reason, .. } => {
            format!("denied: {}", clean_line(reason.as_deref().unwrap_or_default()))
        }
        Event::ToolEnd { is_error: true, output, .. } => format!("✗ {}", first_line(output)),
        Event::Error { message, .. } => format!("error: {}", clean_line(message)),
        Event::TurnEnd { usage, .. } => {
            format!("done ({} in, {} out)", usage.input + usage.cache_read + usage.cache_write, usage.output)
        }
        _ => return None,
    };
    Some(format!("{who} {}", what.trim_end()))
}
