//! Words both front ends use, so the line prompt of `bosun exec` and the
//! terminal UI say the same: what a session grant covers, how an argv is
//! shown, and what a hook's run says. Everything untrusted in them is
//! sanitised here.

use bosun_core::GrantScope;
use bosun_core::hooks::{HookOutcome, HookPoint, HookRun};

use crate::sanitize;

/// What approving for the session grants, and the label that says so.
pub fn session_grant(tool: &str, protected: bool) -> (GrantScope, String) {
    // A tool-wide grant never covers a protected path (`.git/`, …): offer
    // this exact call only.
    if protected {
        let label = "approve this exact call for the rest of the session (it touches a protected path)";
        (GrantScope::SameCall, label.to_owned())
    } else if tool == "shell" {
        (GrantScope::SameCall, "approve this exact command for the rest of the session".to_owned())
    } else {
        (GrantScope::Tool, format!("approve all later `{}` calls in this session", sanitize::line(tool)))
    }
}

/// An argv as one POSIX shell line: words outside a small safe set are
/// single-quoted (`'` as `'\''`). Not yet sanitised.
pub fn quote_argv(argv: &[serde_json::Value]) -> String {
    let quote = |word: &str| {
        let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
        if !word.is_empty() && word.chars().all(safe) {
            word.to_owned()
        } else {
            format!("'{}'", word.replace('\'', r"'\''"))
        }
    };
    argv.iter()
        .map(|item| match item {
            serde_json::Value::String(word) => quote(word),
            other => quote(&other.to_string()),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The argument worth showing for a call, one line, sanitised: its first
/// line and ` …` when more follow.
pub fn key_argument(name: &str, arguments: &serde_json::Value) -> String {
    let field = match name {
        "shell" => "command",
        "search" => "pattern",
        "apply_patch" => return String::new(),
        _ => "path",
    };
    match arguments.get(field) {
        Some(serde_json::Value::String(text)) => {
            let text = text.strip_suffix('\n').unwrap_or(text);
            match text.split_once('\n') {
                Some((first, _)) => format!("{} …", crate::text::clean_line(first)),
                None => crate::text::clean_line(text),
            }
        }
        Some(serde_json::Value::Array(argv)) => {
            let words: Vec<String> =
                argv.iter().map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_owned)).collect();
            crate::text::clean_line(&words.join(" "))
        }
        Some(other) => crate::text::clean_line(&other.to_string()),
        None => String::new(),
    }
}

/// The line for a hook's run, when it has something to say: a block
/// (`false`: a decision, not a failure), or a failure, a timeout or a panic
/// (`true`). Other outcomes are in `--json`'s `hook_run` events only.
pub fn hook_line(run: &HookRun) -> Option<(bool, String)> {
    let hook = sanitize::line(&run.hook);
    let reason = run.reason.as_deref().map(|r| sanitize::line(r.split('\n').next().unwrap_or_default()));
    let with_reason = |text: String| match &reason {
        Some(reason) if !reason.is_empty() => format!("{text}: {reason}"),
        _ => text,
    };
    let off = if run.switched_off { " (off for the rest of the session)" } else { "" };
    let line = match run.outcome {
        HookOutcome::Blocked => {
            let what = match run.point {
                HookPoint::UserPromptSubmit => "blocked the prompt",
                HookPoint::PreToolUse => "blocked the call",
                HookPoint::PostToolUse => "flagged the result",
                HookPoint::Stop | HookPoint::SubagentStop => "keeps the agent going",
                _ => "blocked",
            };
            return Some((false, with_reason(format!("  hook {hook} {what}"))));
        }
        HookOutcome::Failed => with_reason(format!("  hook {hook} failed at {}", run.point)),
        HookOutcome::TimedOut => format!("  hook {hook} timed out at {}{off}", run.point),
        HookOutcome::Panicked => format!("  hook {hook} panicked at {}{off}", run.point),
        _ => return None,
    };
    Some((true, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_grant_says_its_scope() {
        assert_eq!(session_grant("shell", false).0, GrantScope::SameCall);
        let (scope, label) = session_grant("edit_file", false);
        assert_eq!(
            (scope, label.as_str()),
            (GrantScope::Tool, "approve all later `edit_file` calls in this session")
        );
        assert_eq!(session_grant("edit_file", true).0, GrantScope::SameCall);
    }

    #[allow(clippy::unwrap_used)]
    #[test]
    fn a_hooks_block_or_failure_is_one_line_and_the_rest_is_quiet() {
        let run = |outcome: &str, point: &str, reason: Option<&str>, off: bool| -> HookRun {
            let mut value = serde_json::json!({
                "point": point, "hook": "PreToolUse:Bash#1 (./check.sh)", "duration_ms": 5, "outcome": outcome,
                "switched_off": off,
            });
            if let Some(reason) = reason {
                value["reason"] = reason.into();
            }
            serde_json::from_value(value).unwrap()
        };
        let hook = "hook PreToolUse:Bash#1 (./check.sh)";
        let blocked = hook_line(&run("blocked", "PreToolUse", Some("no rm\nsecond line"), false));
        assert_eq!(blocked, Some((false, format!("  {hook} blocked the call: no rm"))));
        let going = hook_line(&run("blocked", "Stop", Some("tests fail"), false));
        assert_eq!(going, Some((false, format!("  {hook} keeps the agent going: tests fail"))));
        let failed =
            hook_line(&run("failed", "PreToolUse", Some("hook x exited with code 3\u{1b}[31m"), false));
        let (is_error, line) = failed.unwrap();
        assert!(
            is_error && line.starts_with(&format!("  {hook} failed at PreToolUse: hook x exited")),
            "{line}"
        );
        assert!(!line.contains('\u{1b}'), "sanitized: {line:?}");
        let slow = hook_line(&run("timed_out", "Stop", Some("timed out after 1000 ms"), true));
        assert_eq!(
            slow,
            Some((true, format!("  {hook} timed out at Stop (off for the rest of the session)")))
        );
        for quiet in ["continued", "noted", "asked", "updated_input", "ignored"] {
            assert_eq!(hook_line(&run(quiet, "PreToolUse", Some("x"), false)), None, "{quiet}");
        }
    }
}
