//! Approval handlers: a prompt on the terminal, a refusal when there is no
//! terminal, and approve-all for sandboxes that ask for it by flag. The
//! prompt itself ([`prompt`]) also asks about MCP servers' sampling
//! requests, and holds the terminal ([`hold_terminal`]) as the elicitation
//! prompt does, so no two prompts interleave.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::{Mutex, MutexGuard, PoisonError};

use std::sync::Arc;

use bosun_core::permission::{AcceptFuture, ApprovalFuture};
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, AuthorityChange, Reason};

use crate::output::Palette;
use crate::sanitize;
use bosun_tui::wording::{quote_argv, session_grant};

/// Whether there is a person to ask: a controlling terminal to prompt on,
/// and stderr on a terminal (so they see what is going on).
pub fn has_terminal() -> bool {
    std::fs::File::open("/dev/tty").is_ok() && std::io::stderr().is_terminal()
}

/// One prompt at a time on the terminal: approvals, sampling and
/// elicitation would otherwise mix their lines and take each other's answers.
static TERMINAL: Mutex<()> = Mutex::new(());

/// Holds the terminal for one prompt, blocking while another has it.
pub fn hold_terminal() -> MutexGuard<'static, ()> {
    TERMINAL.lock().unwrap_or_else(PoisonError::into_inner)
}

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
pub struct TerminalPrompt {
    /// Colour for the terminal asked on.
    palette: Palette,
}

impl TerminalPrompt {
    /// A prompt coloured with `palette`.
    pub fn new(palette: Palette) -> Self {
        Self { palette }
    }
}

impl ApprovalHandler for TerminalPrompt {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let (request, palette) = (request.clone(), self.palette);
        Box::pin(async move {
            match tokio::task::spawn_blocking(move || ask(palette, &request)).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(error)) => deny(&format!("the approval prompt failed: {error}")),
                Err(_) => deny("the approval prompt failed"),
            }
        })
    }
}

/// How a resume under a wider authority is answered
/// ([`ApprovalHandler::accept_authority`]).
#[derive(Clone, Copy, Debug)]
pub enum AuthorityAnswer {
    /// `--accept-authority`.
    Accept,
    /// Asked on the controlling terminal.
    Ask(Palette),
    /// No terminal and no flag: refused, and the error names the flag.
    Refuse,
}

impl AuthorityAnswer {
    /// The flag, else the terminal when there is one, else a refusal.
    pub fn for_run(accept: bool, palette: Palette) -> Self {
        if accept {
            Self::Accept
        } else if has_terminal() {
            Self::Ask(palette)
        } else {
            Self::Refuse
        }
    }

    /// The answer about `change`.
    pub async fn answer(self, change: &AuthorityChange) -> bool {
        match self {
            Self::Accept => true,
            Self::Refuse => false,
            Self::Ask(palette) => {
                let change = change.clone();
                let asked = tokio::task::spawn_blocking(move || ask_authority(palette, &change)).await;
                matches!(asked, Ok(Ok(true)))
            }
        }
    }
}

/// `calls`' decisions, and `authority`'s answer about a wider authority.
pub struct WithAuthority {
    calls: Arc<dyn ApprovalHandler>,
    authority: AuthorityAnswer,
}

impl std::fmt::Debug for WithAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithAuthority").field("authority", &self.authority).finish_non_exhaustive()
    }
}

impl WithAuthority {
    /// `calls` deciding tool calls, `authority` answering for resumes.
    pub fn new(calls: Arc<dyn ApprovalHandler>, authority: AuthorityAnswer) -> Self {
        Self { calls, authority }
    }
}

impl ApprovalHandler for WithAuthority {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        self.calls.decide(request)
    }

    fn accept_authority<'a>(&'a self, change: &'a AuthorityChange) -> AcceptFuture<'a> {
        Box::pin(self.authority.answer(change))
    }
}

/// Asks on the controlling terminal whether to resume under `change`,
/// shown one difference a line (sanitised: tool names and paths come from
/// servers and the file system).
pub fn ask_authority(palette: Palette, change: &AuthorityChange) -> std::io::Result<bool> {
    let _terminal = hold_terminal();
    let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let mut reader = BufReader::new(tty.try_clone()?);
    writeln!(tty, "\n{} {}", palette.bold("?"), palette.bold(AUTHORITY_QUESTION))?;
    for line in change.to_string().lines() {
        let line = sanitize::line(line);
        let shown = if line.starts_with('+') { palette.red(&line) } else { palette.dim(&line) };
        writeln!(tty, "  {shown}")?;
    }
    loop {
        write!(tty, "{} [y/n]: ", palette.bold("resume under it?"))?;
        tty.flush()?;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(false);
        }
        match line.trim().to_lowercase().as_str() {
            "y" | "yes" => return Ok(true),
            "n" | "no" => return Ok(false),
            _ => writeln!(tty, "please answer y or n")?,
        }
    }
}

/// The question before a resume under a wider authority, in every front end.
pub const AUTHORITY_QUESTION: &str =
    "This session may do more now than when it was recorded (+ widens, - narrows):";

fn deny(text: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") }
}

/// What the person sees: the exact command, or the change. Every piece of
/// the request is sanitised before our colours are added (invariant 20).
fn describe(palette: Palette, tool: &str, args: &serde_json::Value) -> String {
    let text = |key: &str| args.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    match tool {
        "shell" => match args.get("command") {
            Some(serde_json::Value::String(command)) => shell_lines(command),
            Some(serde_json::Value::Array(argv)) => format!("$ {}", sanitize::line(&quote_argv(argv))),
            Some(other) => format!("$ {}", sanitize::line(&other.to_string())),
            None => String::new(),
        },
        "edit_file" => {
            let every = if args.get("replace_all") == Some(&serde_json::Value::Bool(true)) {
                " (every occurrence)"
            } else {
                ""
            };
            let mut out = format!("edit {}{every}\n", sanitize::line(text("path")));
            for l in lines(text("old_text")) {
                out.push_str(&format!("{}\n", palette.red(&format!("- {}", sanitize::block(l)))));
            }
            for l in lines(text("new_text")) {
                out.push_str(&format!("{}\n", palette.green(&format!("+ {}", sanitize::block(l)))));
            }
            out
        }
        "write_file" => {
            const SHOWN: usize = 20;
            let content: Vec<&str> = lines(text("content")).collect();
            let mut out = format!("write {} ({} lines)\n", sanitize::line(text("path")), content.len());
            for l in content.iter().take(SHOWN) {
                out.push_str(&format!("{}\n", palette.green(&format!("+ {}", sanitize::block(l)))));
            }
            if content.len() > SHOWN {
                out.push_str(&format!(
                    "{}\n",
                    palette.dim(&format!("… {} more lines", content.len() - SHOWN))
                ));
            }
            out
        }
        "apply_patch" => lines(text("patch"))
            .map(|l| {
                let l = sanitize::block(l);
                let shown = match l.chars().next() {
                    Some('+') if !l.starts_with("***") => palette.green(&l),
                    Some('-') => palette.red(&l),
                    _ => l.into_owned(),
                };
                format!("{shown}\n")
            })
            .collect(),
        _ => sanitize::line(&args.to_string()).into_owned(),
    }
}

/// The lines of `text`, split on `\n` only (so a `\r` stays, to be shown),
/// without the empty piece after a final newline.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.strip_suffix('\n').unwrap_or(text).split('\n').filter(move |_| !text.is_empty())
}

/// A shell command, every line shown: `$ ` before the first, `> ` before
/// each further one.
fn shell_lines(command: &str) -> String {
    let mut out = String::new();
    for (i, l) in lines(command).enumerate() {
        out.push_str(if i == 0 { "$ " } else { "\n> " });
        out.push_str(&sanitize::block(l));
    }
    if out.is_empty() { "$ ".to_owned() } else { out }
}

fn ask(palette: Palette, request: &ApprovalRequest) -> std::io::Result<ApprovalDecision> {
    let (scope, label) = session_grant(&request.tool, request.protected);
    let heading =
        format!("{} {} wants to run:", palette.bold("?"), palette.bold(&sanitize::line(&request.tool)));
    let body = describe(palette, &request.tool, &request.arguments);
    Ok(match prompt(palette, &heading, body.trim_end(), &sanitize::line(&request.reason), &label)? {
        Answer::Once => ApprovalDecision::ApproveOnce,
        Answer::ForSession => ApprovalDecision::ApproveForSession { scope },
        Answer::Deny(reason) => deny(&reason),
    })
}

/// The person's answer to [`prompt`].
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// `y`.
    Once,
    /// `a`.
    ForSession,
    /// `n`, or the terminal closed: why.
    Deny(String),
}

/// Asks on the controlling terminal, holding it: `heading`, `body` and `why`
/// (sanitised by the caller), then approve once, `session` (what `a`
/// grants), or deny with an optional reason.
pub fn prompt(
    palette: Palette,
    heading: &str,
    body: &str,
    why: &str,
    session: &str,
) -> std::io::Result<Answer> {
    let _terminal = hold_terminal();
    let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let mut reader = BufReader::new(tty.try_clone()?);
    writeln!(tty, "\n{heading}")?;
    writeln!(tty, "{body}")?;
    if !why.is_empty() {
        writeln!(tty, "{}", palette.dim(&format!("  why: {why}")))?;
    }
    writeln!(tty, "  [y] approve once\n  [a] {session}\n  [n] deny")?;
    loop {
        write!(tty, "{} [y/a/n]: ", palette.bold("approve?"))?;
        tty.flush()?;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(Answer::Deny("the user closed the terminal".to_owned()));
        }
        match line.trim().to_lowercase().as_str() {
            "y" | "yes" => return Ok(Answer::Once),
            "a" | "always" => return Ok(Answer::ForSession),
            "n" | "no" => {
                write!(tty, "reason (optional, one line): ")?;
                tty.flush()?;
                let mut reason = String::new();
                reader.read_line(&mut reason)?;
                let reason = if reason.trim().is_empty() { "denied by the user" } else { reason.trim() };
                return Ok(Answer::Deny(reason.to_owned()));
            }
            _ => writeln!(tty, "please answer y, a or n")?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hostile_command_is_shown_whole_and_visibly() {
        let shown = describe(Palette::PLAIN, "shell", &json!({"command": "rm -rf ~\rls -la  "}));
        assert_eq!(shown, "$ rm -rf ~\\rls -la  ");
        let shown =
            describe(Palette::PLAIN, "shell", &json!({"command": "echo hi\n\x1b[1A\x1b[2Krm -rf ~\n"}));
        assert_eq!(shown, "$ echo hi\n> \\x1b[1A\\x1b[2Krm -rf ~");
        let shown = describe(Palette::PLAIN, "shell", &json!({"command": "ls \u{202e}~ fr- mr"}));
        assert_eq!(shown, "$ ls ⟪U+202E⟫~ fr- mr");
    }

    #[test]
    fn an_argv_is_one_quoted_sanitised_line() {
        let argv = json!({"command": ["rm", "-rf", "~", "it's", "", "a\nb\x1b[2K", "plain/path.txt"]});
        assert_eq!(
            describe(Palette::PLAIN, "shell", &argv),
            r"$ rm -rf '~' 'it'\''s' '' 'a\nb\x1b[2K' plain/path.txt"
        );
    }

    #[test]
    fn edits_writes_patches_and_other_tools_are_sanitised() {
        let edit = json!({"path": "a\x1b]0;t\x07.rs", "old_text": "x\ty\r\n", "new_text": "\u{9b}2J\nz"});
        assert_eq!(
            describe(Palette::PLAIN, "edit_file", &edit),
            "edit a\\x1b]0;t\\x07.rs\n- x\ty\\r\n+ \\u{9b}2J\n+ z\n"
        );
        let every = json!({"path": "p", "old_text": "a", "new_text": "b", "replace_all": true});
        assert_eq!(describe(Palette::PLAIN, "edit_file", &every), "edit p (every occurrence)\n- a\n+ b\n");
        let content: String = (0..25).map(|i| format!("line {i}\n")).collect();
        let shown = describe(Palette::PLAIN, "write_file", &json!({"path": "f", "content": content}));
        assert!(shown.starts_with("write f (25 lines)\n+ line 0\n"), "{shown}");
        assert!(shown.ends_with("+ line 19\n… 5 more lines\n"), "{shown}");
        let patch = "*** Begin Patch\n+ok\x1b[8m\n-\u{200b}gone\n";
        assert_eq!(
            describe(Palette::PLAIN, "apply_patch", &json!({"patch": patch})),
            "*** Begin Patch\n+ok\\x1b[8m\n-⟪U+200B⟫gone\n"
        );
        assert_eq!(describe(Palette::PLAIN, "other", &json!({"q": "\u{202e}"})), "{\"q\":\"⟪U+202E⟫\"}");
    }

    #[test]
    fn colour_is_added_after_sanitising_and_only_when_asked_for() {
        let edit = json!({"path": "p", "old_text": "a\x1b[2J", "new_text": "b"});
        let coloured = describe(Palette::COLOUR, "edit_file", &edit);
        assert_eq!(coloured, "edit p\n\x1b[31m- a\\x1b[2J\x1b[0m\n\x1b[32m+ b\x1b[0m\n");
        let patch = json!({"patch": "*** Begin Patch\n+x\n-y\n ctx\n"});
        assert_eq!(
            describe(Palette::COLOUR, "apply_patch", &patch),
            "*** Begin Patch\n\x1b[32m+x\x1b[0m\n\x1b[31m-y\x1b[0m\n ctx\n"
        );
        assert_eq!(describe(Palette::PLAIN, "edit_file", &edit), "edit p\n- a\\x1b[2J\n+ b\n");
    }
}
