//! The minijinja environment that behaves like Hugging Face's `apply_chat_template`.
//!
//! HF renders with Jinja2 (`trim_blocks`, `lstrip_blocks`, loop controls), a
//! `tojson` that is Python's `json.dumps`, and the globals `raise_exception`
//! and `strftime_now` (the neutral date unless the clock is on, see
//! `clock`); templates also call Python methods (`.strip()`,
//! `.startswith()`, `.items()`, `.get()`), which minijinja-contrib's pycompat
//! callback provides. Not provided: HF's `{% generation %}` tag (training
//! masks only; no GGUF template is known to need it).

use std::fmt;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind};

use super::{clock, json};

/// The names the two templates are registered under; they appear in errors.
pub(crate) const MAIN: &str = "chat_template";
/// See [`MAIN`].
pub(crate) const TOOL_USE: &str = "chat_template.tool_use";

/// The message of a template's `raise_exception(…)`, attached to the
/// minijinja error as its source so the renderer can tell it apart.
#[derive(Debug)]
pub(crate) struct Raised(pub(crate) String);

impl fmt::Display for Raised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// A fresh environment with HF's syntax settings, filters and globals.
pub(crate) fn environment() -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_syntax(SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build()?);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", json::tojson);
    env.add_function("raise_exception", raise_exception);
    set_clock(&mut env, false);
    Ok(env)
}

/// Registers `strftime_now`: the system clock when `clock`, the neutral
/// date otherwise.
pub(crate) fn set_clock(env: &mut Environment<'static>, clock: bool) {
    env.add_function("strftime_now", move |format: &str| clock::strftime_now(format, clock));
}

/// `raise_exception(message)`: aborts rendering with the template's message.
fn raise_exception(message: Value) -> Result<Value, Error> {
    let message = match message.as_str() {
        Some(text) => text.to_owned(),
        None => message.to_string(),
    };
    Err(Error::new(ErrorKind::InvalidOperation, message.clone()).with_source(Raised(message)))
}

/// The `raise_exception` message carried by `error`, if it came from one.
pub(crate) fn raised_message(error: &Error) -> Option<&str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(current) = source {
        if let Some(raised) = current.downcast_ref::<Raised>() {
            return Some(&raised.0);
        }
        source = current.source();
    }
    None
}
