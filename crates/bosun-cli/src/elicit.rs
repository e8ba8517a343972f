//! Elicitation on the terminal: an MCP server asking the person for input
//! in the middle of a call. With a terminal (the condition the approval
//! prompt uses), [`TerminalElicitor`] shows the server's name and message
//! (sanitised: both are the server's words), offers to answer, decline or
//! cancel, asks for each field of the flat form with the schema's default
//! filled in (Enter keeps it), and shows what would be sent before it is.
//! The form itself (its fields, the checks of types, ranges, choices and
//! required fields, the content sent) is bosun-mcp's [`form`]. Without a
//! terminal, [`NoTerminal`] declines with a reason the server reads.
//!
//! The prompt holds the terminal ([`approve::hold_terminal`]) while it asks,
//! so it never interleaves with an approval prompt. A server that withdraws
//! its question (the call timed out or was cancelled) stops the prompt at
//! once: the read waits on the terminal and on a wake-up descriptor, not on
//! the terminal alone.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bosun_mcp::form::{self, Answers, Field, Kind};
use bosun_mcp::{ElicitFuture, ElicitationKind, ElicitationRequest, ElicitationResponse, Elicitor};
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use serde_json::Value;

use crate::approve;
use crate::output::Palette;
use crate::sanitize;

/// The elicitor for this run: the terminal prompt when there is a person to
/// ask, else a decline.
pub fn elicitor(tty: Palette) -> Arc<dyn Elicitor> {
    if approve::has_terminal() { Arc::new(TerminalElicitor { palette: tty }) } else { Arc::new(NoTerminal) }
}

/// No terminal to ask on: every request is declined, saying why.
#[derive(Debug)]
pub struct NoTerminal;

/// The reason [`NoTerminal`] gives.
const NO_TERMINAL: &str =
    "bosun is running without a terminal to ask the user on; continue without this input";

impl Elicitor for NoTerminal {
    fn elicit(&self, _request: ElicitationRequest) -> ElicitFuture<'_> {
        Box::pin(std::future::ready(ElicitationResponse::Decline { reason: NO_TERMINAL.to_owned() }))
    }
}

/// Asks on the controlling terminal (`/dev/tty`).
#[derive(Debug)]
pub struct TerminalElicitor {
    palette: Palette,
}

impl Elicitor for TerminalElicitor {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_> {
        let palette = self.palette;
        Box::pin(async move {
            let ElicitationKind::Form { schema } = request.kind else {
                let reason = "bosun does not open URLs for MCP servers".to_owned();
                return ElicitationResponse::Decline { reason };
            };
            let wake = match Wake::new() {
                Ok(wake) => Arc::new(wake),
                Err(error) => return declined_after(&format!("the prompt cannot start: {error}")),
            };
            // Dropped with this future (the server withdrew the question):
            // the prompt's read wakes and ends.
            let _stop = StopOnDrop(Arc::clone(&wake));
            let (server, message) = (request.server, request.message);
            let asked = tokio::task::spawn_blocking(move || {
                let _terminal = approve::hold_terminal();
                // Withdrawn while another prompt held the terminal: nothing to show.
                if wake.fired() {
                    return Err(withdrawn());
                }
                let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty")?;
                let mut out = tty.try_clone()?;
                let mut input = BufReader::new(Tty { tty, wake });
                let asked = ask(&mut input, &mut out, palette, &server, &message, &schema);
                if matches!(&asked, Err(e) if e.kind() == io::ErrorKind::ConnectionAborted) {
                    let _ = writeln!(out, "\n{}", palette.dim("(the server no longer waits for an answer)"));
                }
                asked
            })
            .await;
            match asked {
                Ok(Ok(response)) => response,
                Ok(Err(error)) if error.kind() == io::ErrorKind::ConnectionAborted => {
                    ElicitationResponse::Cancel
                }
                Ok(Err(error)) => declined_after(&format!("the prompt failed: {error}")),
                Err(_) => declined_after("the prompt failed"),
            }
        })
    }
}

fn declined_after(why: &str) -> ElicitationResponse {
    ElicitationResponse::Decline {
        reason: format!("bosun could not ask the user ({why}); continue without it"),
    }
}

/// A wake-up descriptor: written once, readable from then on.
#[derive(Debug)]
struct Wake {
    fd: OwnedFd,
    fired: AtomicBool,
}

impl Wake {
    fn new() -> io::Result<Self> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Self { fd, fired: AtomicBool::new(false) })
    }

    fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

fn withdrawn() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "withdrawn")
}

struct StopOnDrop(Arc<Wake>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.fire();
    }
}

/// The terminal as a reader that gives up, with `ConnectionAborted`, once
/// the wake-up descriptor fires.
struct Tty {
    tty: File,
    wake: Arc<Wake>,
}

impl Read for Tty {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut fds = [PollFd::new(&self.tty, PollFlags::IN), PollFd::new(&self.wake.fd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(error.into()),
            }
            if !fds[1].revents().is_empty() {
                return Err(withdrawn());
            }
            if !fds[0].revents().is_empty() {
                return self.tty.read(buf);
            }
        }
    }
}

// ---------------------------------------------------------------- the prompt

/// Reads one line; `None` at the end of input (the terminal closed).
fn read(input: &mut dyn BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
}

/// Asks `choices` (letter, meaning) until one is typed; `None` at the end of input.
fn pick(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    palette: Palette,
    question: &str,
    letters: &str,
) -> io::Result<Option<char>> {
    loop {
        let shown: Vec<String> = letters.chars().map(String::from).collect();
        write!(out, "{} [{}]: ", palette.bold(question), shown.join("/"))?;
        out.flush()?;
        let Some(line) = read(input)? else { return Ok(None) };
        let answer = line.trim().to_lowercase();
        if let Some(letter) = answer.chars().next().filter(|c| answer.len() == 1 && letters.contains(*c)) {
            return Ok(Some(letter));
        }
        writeln!(out, "please answer {}", shown.join(", "))?;
    }
}

/// The whole exchange for one form: `server` and `message` are the
/// server's (shown sanitised), `schema` its requested schema. The end of
/// input cancels.
fn ask(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    palette: Palette,
    server: &str,
    message: &str,
    schema: &Value,
) -> io::Result<ElicitationResponse> {
    let server = sanitize::line(server);
    writeln!(
        out,
        "\n{} MCP server {} asks for input:",
        palette.bold("?"),
        palette.bold(&format!("`{server}`"))
    )?;
    for line in message.lines() {
        writeln!(out, "  {}", sanitize::block(line))?;
    }
    let fields = form::fields(schema);
    let blocked: Vec<&Field> = fields.iter().filter(|f| f.required && !f.askable()).collect();
    for field in &blocked {
        writeln!(
            out,
            "  the required field `{}` is {}, which bosun cannot ask for",
            sanitize::line(&field.key),
            sanitize::line(&field.hint())
        )?;
    }
    let first = if blocked.is_empty() {
        writeln!(out, "  [a] answer\n  [d] decline\n  [c] cancel")?;
        pick(input, out, palette, "answer?", "adc")?
    } else {
        writeln!(out, "  [d] decline\n  [c] cancel")?;
        pick(input, out, palette, "answer?", "dc")?
    };
    match first {
        Some('a') => {}
        Some('d') => return Ok(form::declined()),
        _ => return Ok(ElicitationResponse::Cancel),
    }
    let mut answers = Answers::new();
    for field in fields.iter().filter(|f| f.askable()) {
        let Some(answer) = ask_field(input, out, palette, field)? else {
            return Ok(ElicitationResponse::Cancel);
        };
        answers.set(field, answer);
    }
    writeln!(out, "send to `{server}`:")?;
    if answers.is_empty() {
        writeln!(out, "  (nothing)")?;
    }
    for (key, value) in answers.iter() {
        writeln!(out, "  {}: {}", sanitize::line(key), sanitize::line(&form::typed(value)))?;
    }
    writeln!(out, "  [y] send\n  [d] decline\n  [c] cancel")?;
    Ok(match pick(input, out, palette, "send?", "ydc")? {
        Some('y') => answers.accept(),
        Some('d') => form::declined(),
        _ => ElicitationResponse::Cancel,
    })
}

/// One field until its answer is valid: `Some(None)` when an optional field
/// is left empty, `None` at the end of input.
fn ask_field(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    palette: Palette,
    field: &Field,
) -> io::Result<Option<Option<Value>>> {
    if let Some(description) = &field.description {
        writeln!(out, "  {}", palette.dim(&sanitize::line(description)))?;
    }
    if let Kind::Choice(options) | Kind::Choices { options, .. } = &field.kind {
        for (i, option) in options.iter().enumerate() {
            let shown = match &option.title {
                Some(title) => format!("{title} ({})", option.value),
                None => option.value.clone(),
            };
            writeln!(out, "    {}) {}", i + 1, sanitize::line(&shown))?;
        }
    }
    let mut prompt = format!("{} ({}", sanitize::line(&field.label), sanitize::line(&field.hint()));
    if field.required {
        prompt.push_str(", required");
    }
    prompt.push(')');
    if let Some(default) = field.typed_default() {
        prompt.push_str(&format!(" [{}]", sanitize::line(&default)));
    }
    loop {
        write!(out, "{}: ", palette.bold(&prompt))?;
        out.flush()?;
        let Some(line) = read(input)? else { return Ok(None) };
        match field.answer(&line) {
            Ok(answer) => return Ok(Some(answer)),
            Err(problem) => writeln!(out, "  {problem}")?,
        }
    }
}

#[cfg(test)]
#[path = "elicit_tests.rs"]
mod tests;
