//! The JSON object a command hook reads on stdin, with Claude Code's field
//! names: `session_id`, `cwd`, `hook_event_name`, then the point's own
//! fields. Tool names are bosun's (`shell`, `edit_file`, …).

use std::path::Path;

use bosun_core::hooks::{CompactTrigger, HookInput, StartSource};
use serde_json::{Map, Value, json};

/// The stdin object for `input`.
pub(super) fn stdin_json(input: &HookInput, session_id: &str, cwd: &Path) -> Value {
    let mut object = Map::new();
    object.insert("session_id".into(), json!(session_id));
    object.insert("cwd".into(), json!(cwd.to_string_lossy()));
    object.insert("hook_event_name".into(), json!(input.point().name()));
    let mut put = |key: &str, value: Value| {
        object.insert(key.to_owned(), value);
    };
    match input {
        HookInput::SessionStart { source } => put("source", json!(source_name(*source))),
        HookInput::UserPromptSubmit { prompt, .. } => put("prompt", json!(prompt)),
        HookInput::PreToolUse { tool_name, tool_input, .. } => {
            put("tool_name", json!(tool_name));
            put("tool_input", tool_input.clone());
        }
        HookInput::PostToolUse { tool_name, tool_input, tool_response, is_error, .. } => {
            put("tool_name", json!(tool_name));
            put("tool_input", tool_input.clone());
            put("tool_response", json!({ "output": tool_response, "is_error": is_error }));
        }
        HookInput::PreCompact { trigger, .. } => put("trigger", json!(trigger_name(*trigger))),
        HookInput::Stop { stop_hook_active, .. } | HookInput::SubagentStop { stop_hook_active, .. } => {
            put("stop_hook_active", json!(stop_hook_active));
        }
        // Library-only points: a command hook is never configured for them.
        _ => {}
    }
    Value::Object(object)
}

/// What a `SessionStart` or `PreCompact` matcher is matched against, and
/// the tool name at `PreToolUse` / `PostToolUse`; `None` at points without
/// a matcher.
pub(super) fn matched_name(input: &HookInput) -> Option<&str> {
    match input {
        HookInput::SessionStart { source } => Some(source_name(*source)),
        HookInput::PreCompact { trigger, .. } => Some(trigger_name(*trigger)),
        _ => input.tool_name(),
    }
}

fn source_name(source: StartSource) -> &'static str {
    match source {
        StartSource::Resume => "resume",
        _ => "startup",
    }
}

fn trigger_name(trigger: CompactTrigger) -> &'static str {
    match trigger {
        CompactTrigger::Manual => "manual",
        _ => "auto",
    }
}
