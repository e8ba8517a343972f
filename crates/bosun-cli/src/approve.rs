//! Approval handlers: a prompt on the terminal, a refusal when there is no
//! terminal, and approve-all for sandboxes that ask for it by flag.

use std::io::{BufRead, BufReader, Write};

use bosun_core::permission::ApprovalFuture;
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, GrantScope, Reason};

use crate::output::style;

/// Approves everything (`--dangerously-approve-all`).
#[derive(Debug)]
pub struct ApproveAll;

impl ApprovalHandler for ApproveAll {
    fn decide<'a>(&'a self, _request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async { ApprovalDecision::ApproveOnce })
    }
}

/// No terminal to ask on: every `ask` is a denial the model sees.
#[derive(Debug)]
pub struct NoTerminal;

impl ApprovalHandler for NoTerminal {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let reason = Reason::lossy(
            &format!(
                "`{}` needs approval and bosun is running without a terminal to ask on; the user can allow it \
                 in the configuration or rerun with --dangerously-approve-all",
                request.tool
            ),
            "approval needed, no terminal",
        );
        Box::pin(async move { ApprovalDecision::Deny { reason } })
    }
}

/// Asks on the controlling terminal (`/dev/tty`), so piped stdin and
/// stdout stay untouched.
#[derive(Debug)]
pub struct TerminalPrompt;

impl ApprovalHandler for TerminalPrompt {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let request = request.clone();
        Box::pin(async move {
            match tokio::task::spawn_blocking(move || ask(&request)).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(error)) => deny(&format!("the approval prompt failed: {error}")),
                Err(_) => deny("the approval prompt failed"),
            }
        })
    }
}

fn deny(text: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") }
}

/// What the person sees: the exact command, or the change.
pub fn describe(request: &ApprovalRequest) -> String {
    let args = &request.arguments;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    match request.tool.as_str() {
        "shell" => match args.get("command") {
            Some(serde_json::Value::String(command)) => format!("$ {command}"),
            Some(other) => format!("$ {other}"),
            None => String::new(),
        },
        "edit_file" => {
            let mut out = format!("edit {}\n", text("path"));
            out.extend(text("old_text").lines().map(|l| format!("{}\n", style::red(&format!("- {l}")))));
            out.extend(text("new_text").lines().map(|l| format!("{}\n", style::green(&format!("+ {l}")))));
            out
        }
        "write_file" => {
            let content = text("content");
            let mut out = format!("write {} ({} lines)\n", text("path"), content.lines().count());
            out.extend(content.lines().take(20).map(|l| format!("{}\n", style::green(&format!("+ {l}")))));
            out
        }
        "apply_patch" => text("patch")
            .lines()
            .map(|l| {
                let shown = match l.chars().next() {
                    Some('+') if !l.starts_with("***") => style::green(l),
                    Some('-') => style::red(l),
                    _ => l.to_owned(),
                };
                format!("{shown}\n")
            })
            .collect(),
        _ => args.to_string(),
    }
}

fn ask(request: &ApprovalRequest) -> std::io::Result<ApprovalDecision> {
    let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let mut reader = BufReader::new(tty.try_clone()?);
    writeln!(tty, "\n{} {} wants to run:", style::bold("?"), style::bold(&request.tool))?;
    writeln!(tty, "{}", describe(request).trim_end())?;
    loop {
        write!(
            tty,
            "{} [y] approve once  [a] approve for this session  [n] deny: ",
            style::bold("approve?")
        )?;
        tty.flush()?;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(deny("the user closed the terminal"));
        }
        match line.trim().to_lowercase().as_str() {
            "y" | "yes" => return Ok(ApprovalDecision::ApproveOnce),
            "a" | "always" => {
                // A command is granted exactly; edits are granted per tool.
                let scope = if request.tool == "shell" { GrantScope::SameCall } else { GrantScope::Tool };
                return Ok(ApprovalDecision::ApproveForSession { scope });
            }
            "n" | "no" => {
                write!(tty, "reason (optional, one line): ")?;
                tty.flush()?;
                let mut reason = String::new();
                reader.read_line(&mut reason)?;
                return Ok(deny(if reason.trim().is_empty() { "denied by the user" } else { reason.trim() }));
            }
            _ => writeln!(tty, "please answer y, a or n")?,
        }
    }
}
