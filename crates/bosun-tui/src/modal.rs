//! Modals: the approval prompt, the picker and the yes/no question. One is
//! shown at a time; the others wait in order. Each answers on its oneshot
//! exactly once (a dropped receiver is the CLI's business).

use bosun_core::{ApprovalDecision, Reason};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use tokio::sync::oneshot;

use crate::diff::{change_lines, diff_lines};
use crate::protocol::PickItem;
use crate::text::{clean, clean_line, lines};
use crate::theme::Theme;
use crate::wording::{quote_argv, session_grant};

/// What an approval is about, taken from the request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub(crate) tool: String,
    pub(crate) arguments: serde_json::Value,
    pub(crate) reason: String,
    pub(crate) protected: bool,
}

impl From<&bosun_core::ApprovalRequest> for Call {
    fn from(request: &bosun_core::ApprovalRequest) -> Self {
        Self {
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            reason: request.reason.clone(),
            protected: request.protected,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Approval {
    pub(crate) call: Call,
    pub(crate) diff: Option<String>,
    pub(crate) reply: Option<oneshot::Sender<ApprovalDecision>>,
    /// The reason being typed, after `n` or `d`.
    pub(crate) reason: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Picker {
    pub(crate) title: String,
    pub(crate) items: Vec<PickItem>,
    pub(crate) selected: usize,
    pub(crate) reply: Option<oneshot::Sender<Option<String>>>,
}

#[derive(Debug)]
pub(crate) struct Confirm {
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) reply: Option<oneshot::Sender<bool>>,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Approval(Approval),
    Picker(Picker),
    Confirm(Confirm),
}

#[derive(Debug)]
pub(crate) struct Modal {
    pub(crate) kind: Kind,
    /// Rows scrolled past at the top of the body.
    pub(crate) scroll: usize,
}

/// What a key did to the modal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Still open.
    Open,
    /// Answered; close it.
    Done,
}

/// Exactly what the call runs or changes: the whole command, or the
/// change. Sanitised before it is styled.
pub(crate) fn describe(call: &Call, diff: Option<&str>, theme: Theme) -> Vec<Line<'static>> {
    let args = &call.arguments;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let bold = |s: String| Line::from(Span::styled(s, theme.bold()));
    let mut out = Vec::new();
    match call.tool.as_str() {
        "shell" => match args.get("command") {
            Some(serde_json::Value::String(command)) => {
                for (i, l) in lines(command).enumerate() {
                    out.push(Line::from(format!("{}{}", if i == 0 { "$ " } else { "> " }, clean(l))));
                }
                if out.is_empty() {
                    out.push(Line::from("$ "));
                }
            }
            Some(serde_json::Value::Array(argv)) => {
                out.push(Line::from(format!("$ {}", clean_line(&quote_argv(argv)))))
            }
            Some(other) => out.push(Line::from(format!("$ {}", clean_line(&other.to_string())))),
            None => {}
        },
        "edit_file" | "write_file" | "apply_patch" if diff.is_some() => {
            if !text("path").is_empty() {
                out.push(bold(format!("{} {}", verb(&call.tool), clean_line(text("path")))));
            }
            out.extend(diff_lines(diff.unwrap_or_default(), theme));
        }
        "edit_file" => {
            let every = if args.get("replace_all") == Some(&serde_json::Value::Bool(true)) {
                " (every occurrence)"
            } else {
                ""
            };
            out.push(bold(format!("edit {}{every}", clean_line(text("path")))));
            out.extend(change_lines(text("old_text"), text("new_text"), theme));
        }
        "write_file" => {
            let content: Vec<&str> = lines(text("content")).collect();
            out.push(bold(format!("write {} ({} lines)", clean_line(text("path")), content.len())));
            for l in content {
                out.push(Line::from(Span::styled(format!("+ {}", clean(l)), theme.green())));
            }
        }
        "apply_patch" => out.extend(diff_lines(text("patch"), theme)),
        _ => {
            if let Some(diff) = diff {
                out.extend(diff_lines(diff, theme));
            } else {
                let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
                out.extend(lines(&pretty).map(|l| Line::from(clean(l))));
            }
        }
    }
    out
}

fn verb(tool: &str) -> &'static str {
    match tool {
        "write_file" => "write",
        "apply_patch" => "patch",
        _ => "edit",
    }
}

impl Modal {
    pub(crate) fn new(kind: Kind) -> Self {
        Self { kind, scroll: 0 }
    }

    /// The heading, the body (scrolled) and the key lines (always shown).
    pub(crate) fn content(
        &self,
        theme: Theme,
        waiting: usize,
    ) -> (String, Vec<Line<'static>>, Vec<Line<'static>>) {
        let key = |k: &str, what: String| {
            Line::from(vec![Span::styled(format!("[{k}] "), theme.bold()), Span::raw(what)])
        };
        let more = if waiting > 0 { format!(" ({waiting} more waiting)") } else { String::new() };
        match &self.kind {
            Kind::Approval(a) => {
                let mut body = vec![Line::from(vec![
                    Span::styled("? ", theme.yellow().patch(theme.bold())),
                    Span::styled(clean_line(&a.call.tool), theme.bold()),
                    Span::raw(" wants to run:"),
                ])];
                body.extend(describe(&a.call, a.diff.as_deref(), theme));
                if !a.call.reason.is_empty() {
                    body.push(Line::from(Span::styled(
                        format!("why: {}", clean_line(&a.call.reason)),
                        theme.dim(),
                    )));
                }
                let keys = match &a.reason {
                    Some(typed) => vec![
                        Line::from(vec![
                            Span::styled("reason: ", theme.bold()),
                            Span::raw(clean_line(typed)),
                        ]),
                        Line::from(Span::styled(
                            "enter denies with this reason · esc denies without",
                            theme.dim(),
                        )),
                    ],
                    None => {
                        let (_, label) = session_grant(&a.call.tool, a.call.protected);
                        vec![
                            key("y", "approve once".to_owned()),
                            key("a", label),
                            key("n", "deny, with a reason to type · [esc] deny".to_owned()),
                        ]
                    }
                };
                (format!("approve?{more}"), body, keys)
            }
            Kind::Picker(p) => {
                let body = if p.items.is_empty() {
                    vec![Line::from(Span::styled("(nothing to choose)", theme.dim()))]
                } else {
                    p.items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            let text = format!(
                                "{} {}",
                                if i == p.selected { "›" } else { " " },
                                clean_line(&item.label)
                            );
                            if i == p.selected {
                                Line::from(Span::styled(text, theme.reverse()))
                            } else {
                                Line::from(text)
                            }
                        })
                        .collect()
                };
                let keys =
                    vec![Line::from(Span::styled("↑/↓ choose · enter open · esc cancel", theme.dim()))];
                (format!("{}{more}", clean_line(&p.title)), body, keys)
            }
            Kind::Confirm(c) => {
                let body = lines(&c.body).map(|l| Line::from(clean(l))).collect();
                (format!("{}{more}", clean_line(&c.title)), body, vec![key("y", "yes  [n] no".to_owned())])
            }
        }
    }

    /// The row of the picker's choice, to keep it in view.
    pub(crate) fn selected_row(&self) -> Option<usize> {
        match &self.kind {
            Kind::Picker(p) => Some(p.selected),
            _ => None,
        }
    }

    /// Answers it as Esc would: an approval denied without a reason, a
    /// picker with nothing, a question with no.
    pub(crate) fn dismiss(&mut self) {
        match &mut self.kind {
            Kind::Approval(a) => answer(&mut a.reply, deny("")),
            Kind::Picker(p) => answer(&mut p.reply, None),
            Kind::Confirm(c) => answer(&mut c.reply, false),
        }
    }

    pub(crate) fn key(&mut self, key: KeyEvent, page: usize) -> Outcome {
        match key.code {
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(page.max(1));
                return Outcome::Open;
            }
            KeyCode::PageDown => {
                self.scroll += page.max(1);
                return Outcome::Open;
            }
            _ => {}
        }
        match &mut self.kind {
            Kind::Approval(a) => approval_key(a, key, &mut self.scroll),
            Kind::Picker(p) => picker_key(p, key),
            Kind::Confirm(c) => match key.code {
                KeyCode::Char('y' | 'Y') => {
                    answer(&mut c.reply, true);
                    Outcome::Done
                }
                KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                    answer(&mut c.reply, false);
                    Outcome::Done
                }
                _ => Outcome::Open,
            },
        }
    }
}

fn answer<T>(reply: &mut Option<oneshot::Sender<T>>, value: T) {
    if let Some(reply) = reply.take() {
        let _ = reply.send(value);
    }
}

fn deny(typed: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: Reason::lossy(typed, "denied by the user") }
}

fn approval_key(a: &mut Approval, key: KeyEvent, scroll: &mut usize) -> Outcome {
    if let Some(typed) = &mut a.reason {
        match key.code {
            KeyCode::Enter => {
                let reason = deny(typed);
                answer(&mut a.reply, reason);
                return Outcome::Done;
            }
            KeyCode::Esc => {
                answer(&mut a.reply, deny(""));
                return Outcome::Done;
            }
            KeyCode::Backspace => {
                typed.pop();
            }
            KeyCode::Char(c) if !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                typed.push(c);
            }
            _ => {}
        }
        return Outcome::Open;
    }
    match key.code {
        KeyCode::Char('y' | 'Y') => answer(&mut a.reply, ApprovalDecision::ApproveOnce),
        KeyCode::Char('a' | 'A') => {
            let (scope, _) = session_grant(&a.call.tool, a.call.protected);
            answer(&mut a.reply, ApprovalDecision::ApproveForSession { scope });
        }
        KeyCode::Char('n' | 'N' | 'd' | 'D') => {
            a.reason = Some(String::new());
            return Outcome::Open;
        }
        KeyCode::Esc => answer(&mut a.reply, deny("")),
        KeyCode::Up => {
            *scroll = scroll.saturating_sub(1);
            return Outcome::Open;
        }
        KeyCode::Down => {
            *scroll += 1;
            return Outcome::Open;
        }
        _ => return Outcome::Open,
    }
    Outcome::Done
}

fn picker_key(p: &mut Picker, key: KeyEvent) -> Outcome {
    let last = p.items.len().saturating_sub(1);
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => p.selected = p.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => p.selected = (p.selected + 1).min(last),
        KeyCode::Home => p.selected = 0,
        KeyCode::End => p.selected = last,
        KeyCode::Enter => {
            let chosen = p.items.get(p.selected).map(|item| item.id.clone());
            answer(&mut p.reply, chosen);
            return Outcome::Done;
        }
        KeyCode::Esc | KeyCode::Char('q') => {
            answer(&mut p.reply, None);
            return Outcome::Done;
        }
        _ => {}
    }
    Outcome::Open
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(tool: &str, arguments: serde_json::Value) -> Call {
        Call { tool: tool.into(), arguments, reason: String::new(), protected: false }
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn a_hostile_command_is_shown_whole_and_visibly() {
        let plain = Theme::new(false, None);
        let shown =
            describe(&call("shell", json!({"command": "echo hi\n\x1b[1A\x1b[2Krm -rf ~\n"})), None, plain);
        assert_eq!(text(&shown), ["$ echo hi", "> \\x1b[1A\\x1b[2Krm -rf ~"]);
        let argv = json!({"command": ["rm", "-rf", "~", "it's", "a\nb\x1b[2K"]});
        assert_eq!(
            text(&describe(&call("shell", argv), None, plain)),
            [r"$ rm -rf '~' 'it'\''s' 'a\nb\x1b[2K'"]
        );
    }

    #[test]
    fn writes_show_every_line_and_other_tools_their_arguments() {
        let plain = Theme::new(false, None);
        let content: String = (0..30).map(|i| format!("l{i}\n")).collect();
        let shown =
            text(&describe(&call("write_file", json!({"path": "f", "content": content})), None, plain));
        assert_eq!(shown.len(), 31);
        assert_eq!(shown[0], "write f (30 lines)");
        assert_eq!(shown[30], "+ l29");
        let other = text(&describe(&call("fetch", json!({"url": "\u{202e}x"})), None, plain));
        assert_eq!(other, ["{", "  \"url\": \"⟪U+202E⟫x\"", "}"]);
    }
}
