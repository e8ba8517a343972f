//! What a command hook's exit and output mean, in Claude Code's protocol.
//!
//! Exit 0: stdout that is a JSON object may decide (`decision`, `continue`
//! and `stopReason`, `hookSpecificOutput` with `permissionDecision`,
//! `updatedInput`, `additionalContext`); plain stdout is a note at
//! `UserPromptSubmit` and `SessionStart`, and ignored elsewhere. Exit 2:
//! block, with stderr as the reason. Anything else (another code, a
//! signal, stdout that starts like JSON but does not parse) is a
//! [`HookError`], shown to the user, and the point goes on.
//!
//! A hook can only narrow: `"approve"` and `"allow"` are read and ignored.
//! When one output says several things, the strongest wins: block, then
//! ask, then replaced arguments, then a note.

use std::os::unix::process::ExitStatusExt;

use bosun_core::hooks::{HookDecision, HookError, HookPoint};
use serde_json::{Map, Value};

use super::process::{Kept, MAX_STDOUT_BYTES, Ran};

/// Most of stderr quoted in an error.
const STDERR_QUOTED_BYTES: usize = 2000;

/// The decision `ran` stands for.
pub(super) fn decide(name: &str, point: HookPoint, ran: &Ran) -> Result<HookDecision, HookError> {
    let status = match &ran.status {
        Ok(status) => status,
        Err(error) => {
            return Err(failed(name, &format!("its exit status is unknown ({error})"), &ran.stderr));
        }
    };
    match (status.code(), status.signal()) {
        (Some(0), _) => on_success(name, point, &ran.stdout),
        (Some(2), _) => {
            let reason = ran.stderr.text().trim().to_owned();
            Ok(HookDecision::Block(if reason.is_empty() { default_block(name) } else { reason }))
        }
        (Some(code), _) => Err(failed(name, &format!("exited with code {code}"), &ran.stderr)),
        (None, Some(signal)) => Err(failed(name, &format!("was killed by signal {signal}"), &ran.stderr)),
        (None, None) => Err(failed(name, &format!("ended with {status}"), &ran.stderr)),
    }
}

fn on_success(name: &str, point: HookPoint, stdout: &Kept) -> Result<HookDecision, HookError> {
    let text = stdout.text();
    let text = text.trim();
    if text.starts_with('{') {
        if stdout.was_cut() {
            let why =
                format!("printed over {} KiB, so its JSON output was not read", MAX_STDOUT_BYTES / 1024);
            return Err(HookError::new(format!("hook {name} {why}")));
        }
        return match serde_json::from_str::<Map<String, Value>>(text) {
            Ok(object) => from_json(name, point, &object),
            Err(error) => {
                Err(HookError::new(format!("hook {name} printed JSON that does not parse: {error}")))
            }
        };
    }
    let takes_plain_note = matches!(point, HookPoint::UserPromptSubmit | HookPoint::SessionStart);
    if takes_plain_note && !text.is_empty() {
        return Ok(HookDecision::Note(text.to_owned()));
    }
    Ok(HookDecision::Continue)
}

/// The decision of a JSON object on stdout.
fn from_json(name: &str, point: HookPoint, object: &Map<String, Value>) -> Result<HookDecision, HookError> {
    let field = Fields { name, object, at: "" };
    let specific = match object.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(specific)) => Some(Fields { name, object: specific, at: "hookSpecificOutput." }),
        Some(_) => return Err(field.wrong("hookSpecificOutput", "an object")),
    };
    let reason = field.text("reason")?;
    if field.flag("continue")? == Some(false) {
        let why = field.text("stopReason")?.or(reason);
        return Ok(HookDecision::Block(why.map_or_else(|| default_block(name), str::to_owned)));
    }
    match field.text("decision")? {
        None | Some("approve") => {}
        Some("block") => {
            return Ok(HookDecision::Block(reason.map_or_else(|| default_block(name), str::to_owned)));
        }
        Some(other) => return Err(field.unknown("decision", other)),
    }
    let Some(specific) = specific else { return Ok(HookDecision::Continue) };
    let permission_reason = specific.text("permissionDecisionReason")?.or(reason);
    match specific.text("permissionDecision")? {
        None | Some("allow") => {}
        Some("deny") => {
            return Ok(HookDecision::Block(
                permission_reason.map_or_else(|| default_block(name), str::to_owned),
            ));
        }
        Some("ask") => {
            let why =
                permission_reason.map_or_else(|| format!("hook {name} asks for approval"), str::to_owned);
            return Ok(HookDecision::Ask(why));
        }
        Some(other) => return Err(specific.unknown("permissionDecision", other)),
    }
    match specific.object.get("updatedInput") {
        None | Some(Value::Null) => {}
        Some(value @ Value::Object(_)) if point == HookPoint::PreToolUse => {
            return Ok(HookDecision::UpdateInput(value.clone()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(specific.wrong("updatedInput", "an object")),
    }
    match specific.text("additionalContext")?.map(str::trim) {
        Some(context) if !context.is_empty() => Ok(HookDecision::Note(context.to_owned())),
        _ => Ok(HookDecision::Continue),
    }
}

/// Typed reads of one JSON object's fields; a field of the wrong type is
/// an error naming it.
struct Fields<'a> {
    name: &'a str,
    object: &'a Map<String, Value>,
    /// The path to the object, for errors.
    at: &'static str,
}

impl<'a> Fields<'a> {
    fn text(&self, key: &str) -> Result<Option<&'a str>, HookError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, HookError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(self.wrong(key, "true or false")),
        }
    }

    fn wrong(&self, key: &str, expected: &str) -> HookError {
        HookError::new(format!("hook {}: `{}{key}` in its JSON output is not {expected}", self.name, self.at))
    }

    fn unknown(&self, key: &str, value: &str) -> HookError {
        let value = super::matcher::cut(value, 40);
        HookError::new(format!(
            "hook {}: `{}{key}` = \"{value}\" in its JSON output is unknown",
            self.name, self.at
        ))
    }
}

fn default_block(name: &str) -> String {
    format!("blocked by hook {name}")
}

/// A run that failed: the hook, what happened, and the end of its stderr.
fn failed(name: &str, what: &str, stderr: &Kept) -> HookError {
    let text = stderr.text();
    let text = text.trim();
    if text.is_empty() {
        return HookError::new(format!("hook {name} {what}"));
    }
    let mut start = text.len().saturating_sub(STDERR_QUOTED_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    HookError::new(format!("hook {name} {what}; stderr: {cut}{}", &text[start..]))
}
