//! Elicitation on the terminal: an MCP server asking the person for input
//! in the middle of a call. With a terminal (the condition the approval
//! prompt uses), [`TerminalElicitor`] shows the server's name and message
//! (sanitised: both are the server's words), offers to answer, decline or
//! cancel, asks for each field of the flat form with the schema's default
//! filled in (Enter keeps it), checks types, ranges, choices and required
//! fields, and shows what would be sent before it is. Without one,
//! [`NoTerminal`] declines with a reason the server reads.
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

use bosun_mcp::{ElicitFuture, ElicitationKind, ElicitationRequest, ElicitationResponse, Elicitor};
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use serde_json::{Map, Value};

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

// ------------------------------------------------------------------ the form

/// One field of a flat form.
#[derive(Debug, PartialEq)]
struct Field {
    key: String,
    /// Its title, else its key (the server's words, unsanitised).
    label: String,
    description: Option<String>,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

#[derive(Debug, PartialEq)]
enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        format: Option<String>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
        integer: bool,
    },
    Boolean,
    /// One of these (value, title).
    Choice(Vec<(String, Option<String>)>),
    /// Some of these.
    Choices {
        options: Vec<(String, Option<String>)>,
        min: Option<u64>,
        max: Option<u64>,
    },
    /// A type this prompt cannot ask for (the schema is not flat).
    Other(String),
}

/// The fields of a requested schema: the required ones first, each group in
/// the schema's order as bosun-mcp passes it on (JSON objects here keep
/// their keys sorted, so the server's own order is not known).
fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object);
    let text = |p: &Value, key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut fields: Vec<Field> = properties
        .into_iter()
        .flatten()
        .map(|(key, property)| Field {
            key: key.clone(),
            label: text(property, "title").unwrap_or_else(|| key.clone()),
            description: text(property, "description"),
            required: required.contains(&key.as_str()),
            default: property.get("default").cloned(),
            kind: kind(property),
        })
        .collect();
    fields.sort_by_key(|f| !f.required);
    fields
}

fn kind(property: &Value) -> Kind {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    match property.get("type").and_then(Value::as_str) {
        Some("string") => match options(property) {
            Some(options) => Kind::Choice(options),
            None => Kind::Text {
                min: count("minLength"),
                max: count("maxLength"),
                format: property.get("format").and_then(Value::as_str).map(str::to_owned),
            },
        },
        Some(kind @ ("number" | "integer")) => {
            Kind::Number { min: number("minimum"), max: number("maximum"), integer: kind == "integer" }
        }
        Some("boolean") => Kind::Boolean,
        Some("array") => match property.get("items").and_then(options) {
            Some(options) => Kind::Choices { options, min: count("minItems"), max: count("maxItems") },
            None => Kind::Other("a list".into()),
        },
        Some(other) => Kind::Other(other.to_owned()),
        None => Kind::Other("no type".into()),
    }
}

/// The choices of `enum` (titled by `enumNames`), `oneOf` or `anyOf`.
fn options(schema: &Value) -> Option<Vec<(String, Option<String>)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        let title = |i: usize| names.and_then(|n| n.get(i)).and_then(Value::as_str).map(str::to_owned);
        let values = values.iter().enumerate().filter_map(|(i, v)| Some((v.as_str()?.to_owned(), title(i))));
        return Some(values.collect());
    }
    let titled = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
    let option = |o: &Value| {
        let title = o.get("title").and_then(Value::as_str).map(str::to_owned);
        Some((o.get("const")?.as_str()?.to_owned(), title))
    };
    Some(titled.iter().filter_map(option).collect())
}

/// What to type, after the field's label.
fn hint(kind: &Kind) -> String {
    match kind {
        Kind::Text { format: Some(format), .. } => format!("text, {format}"),
        Kind::Text { .. } => "text".into(),
        Kind::Number { integer, min, max } => {
            let what = if *integer { "whole number" } else { "number" };
            match (min, max) {
                (Some(min), Some(max)) => format!("{what}, {min} to {max}"),
                (Some(min), None) => format!("{what}, at least {min}"),
                (None, Some(max)) => format!("{what}, at most {max}"),
                (None, None) => what.into(),
            }
        }
        Kind::Boolean => "y/n".into(),
        Kind::Choice(_) => "a number or a value".into(),
        Kind::Choices { .. } => "numbers or values, comma-separated".into(),
        Kind::Other(kind) => kind.clone(),
    }
}

/// A default as the person would type it.
fn typed(default: &Value) -> String {
    match default {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "y".into(),
        Value::Bool(false) => "n".into(),
        Value::Array(items) => items.iter().map(typed).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The value of `input` for `field`, or what is wrong with it.
fn parse(kind: &Kind, input: &str) -> Result<Value, String> {
    match kind {
        Kind::Text { min, max, format } => {
            let chars = input.chars().count() as u64;
            if let Some(min) = min.filter(|m| chars < *m) {
                return Err(format!("give at least {min} characters"));
            }
            if let Some(max) = max.filter(|m| chars > *m) {
                return Err(format!("give at most {max} characters"));
            }
            if let Some(format) = format {
                check_format(format, input)?;
            }
            Ok(Value::String(input.to_owned()))
        }
        Kind::Number { min, max, integer } => {
            let (number, value) = if *integer {
                let n: i64 = input.parse().map_err(|_| "give a whole number".to_owned())?;
                (serde_json::Number::from(n), n as f64)
            } else {
                let n = input.parse::<f64>().ok().filter(|n| n.is_finite()).ok_or("give a number")?;
                (serde_json::Number::from_f64(n).ok_or("give a number")?, n)
            };
            if min.is_some_and(|m| value < m) || max.is_some_and(|m| value > m) {
                return Err(format!("give a {}", hint(kind)));
            }
            Ok(Value::Number(number))
        }
        Kind::Boolean => match input.to_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".into()),
        },
        Kind::Choice(options) => choose(options, input).map(Value::String),
        Kind::Choices { options, min, max } => {
            let mut chosen = Vec::new();
            for word in input.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                let value = choose(options, word)?;
                if !chosen.contains(&value) {
                    chosen.push(value);
                }
            }
            let n = chosen.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                let (min, max) = (min.unwrap_or(0), max.map_or("any".to_owned(), |m| m.to_string()));
                return Err(format!("choose from {min} to {max}"));
            }
            Ok(Value::Array(chosen.into_iter().map(Value::String).collect()))
        }
        Kind::Other(kind) => Err(format!("bosun cannot ask for {kind}")),
    }
}

/// An option by its number, its value or its title (any case).
fn choose(options: &[(String, Option<String>)], input: &str) -> Result<String, String> {
    let by_number = input.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| options.get(i));
    let found = by_number.or_else(|| options.iter().find(|(value, _)| value == input)).or_else(|| {
        options.iter().find(|(_, title)| title.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(input)))
    });
    match found {
        Some((value, _)) => Ok(value.clone()),
        None => Err(format!("choose 1 to {}", options.len())),
    }
}

/// The formats the spec names, checked loosely: enough to catch a slip.
fn check_format(format: &str, input: &str) -> Result<(), String> {
    let fine = match format {
        "email" => input.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        "uri" => input.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty() && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        }),
        "date" => is_date(input),
        "date-time" => {
            input.get(..10).is_some_and(is_date) && input.get(10..11).is_some_and(|t| t == "T" || t == " ")
        }
        _ => true,
    };
    if fine { Ok(()) } else { Err(format!("give a valid {format}")) }
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
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
    let fields = fields(schema);
    let blocked: Vec<&Field> =
        fields.iter().filter(|f| f.required && matches!(f.kind, Kind::Other(_))).collect();
    for field in &blocked {
        let kind = hint(&field.kind);
        writeln!(
            out,
            "  the required field `{}` is {}, which bosun cannot ask for",
            sanitize::line(&field.key),
            sanitize::line(&kind)
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
        Some('d') => return Ok(declined()),
        _ => return Ok(ElicitationResponse::Cancel),
    }
    let mut values = Map::new();
    for field in fields.iter().filter(|f| !matches!(f.kind, Kind::Other(_))) {
        let Some(value) = ask_field(input, out, palette, field)? else {
            return Ok(ElicitationResponse::Cancel);
        };
        if let Some(value) = value {
            values.insert(field.key.clone(), value);
        }
    }
    writeln!(out, "send to `{server}`:")?;
    if values.is_empty() {
        writeln!(out, "  (nothing)")?;
    }
    for (key, value) in &values {
        writeln!(out, "  {}: {}", sanitize::line(key), sanitize::line(&typed(value)))?;
    }
    writeln!(out, "  [y] send\n  [d] decline\n  [c] cancel")?;
    Ok(match pick(input, out, palette, "send?", "ydc")? {
        Some('y') => ElicitationResponse::Accept(Value::Object(values)),
        Some('d') => declined(),
        _ => ElicitationResponse::Cancel,
    })
}

fn declined() -> ElicitationResponse {
    ElicitationResponse::Decline { reason: "the user declined".to_owned() }
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
        for (i, (value, title)) in options.iter().enumerate() {
            let shown = match title {
                Some(title) => format!("{title} ({value})"),
                None => value.clone(),
            };
            writeln!(out, "    {}) {}", i + 1, sanitize::line(&shown))?;
        }
    }
    let default = field.default.as_ref().map(typed);
    let mut prompt = format!("{} ({}", sanitize::line(&field.label), sanitize::line(&hint(&field.kind)));
    if field.required {
        prompt.push_str(", required");
    }
    prompt.push(')');
    if let Some(default) = &default {
        prompt.push_str(&format!(" [{}]", sanitize::line(default)));
    }
    loop {
        write!(out, "{}: ", palette.bold(&prompt))?;
        out.flush()?;
        let Some(line) = read(input)? else { return Ok(None) };
        let line = line.trim();
        let typed = match (line.is_empty(), &default) {
            (false, _) => line.to_owned(),
            (true, Some(default)) => default.clone(),
            (true, None) if field.required => {
                writeln!(out, "  a value is required")?;
                continue;
            }
            (true, None) => return Ok(Some(None)),
        };
        match parse(&field.kind, &typed) {
            Ok(value) => return Ok(Some(Some(value))),
            Err(problem) if line.is_empty() => {
                writeln!(out, "  the server's default does not fit ({problem}); type a value")?;
            }
            Err(problem) => writeln!(out, "  {problem}")?,
        }
    }
}

#[cfg(test)]
#[path = "elicit_tests.rs"]
mod tests;
