//! `edit_file {path, old_text, new_text, replace_all?}`: an exact
//! replacement that must match once (or everywhere, when asked), written
//! atomically, answered with a unified diff.

use bosun_core::{CallEffects, ToolCategory, ToolOutput};
use serde::Deserialize;
use serde_json::json;
use similar::TextDiff;

use crate::common::{Shared, Stop, cap, refuse, stale};
use crate::diff::{edit_diff, replace};
use crate::file_tool::{FileTool, Work};
use crate::nearby::refuse_near;
use crate::workspace::{Precondition, RelPath, WorkspaceError};

/// Files longer than this get no "nearest lines" hint (it is quadratic).
const HINT_MAX_LINES: usize = 20_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    old_text: String,
    new_text: String,
    #[serde(default)]
    replace_all: bool,
}

/// Replaces exact text in a file.
#[derive(Debug)]
pub struct EditFile;

impl FileTool for EditFile {
    type Args = Args;
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace exact text in a file. `old_text` must match the file exactly \
        (including indentation) and exactly once, unless `replace_all` is true. Include enough surrounding lines \
        to make it unique. Returns a unified diff of the change.";
    const CATEGORY: ToolCategory = ToolCategory::Write;
    const WORK: Work = Work::ToCompletion;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root"},
                "old_text": {"type": "string", "minLength": 1, "description": "The exact text to replace"},
                "new_text": {"type": "string", "description": "The replacement text"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one", "default": false}
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": false
        })
    }

    fn effects(arguments: &serde_json::Value) -> CallEffects {
        CallEffects::writes(arguments.get("path").and_then(serde_json::Value::as_str).map(str::to_owned))
    }

    fn run(shared: &Shared, args: &Args, _stop: &Stop) -> ToolOutput {
        edit(shared, args)
    }
}

fn edit(shared: &Shared, args: &Args) -> ToolOutput {
    let path = match RelPath::parse(&args.path) {
        Ok(path) => path,
        Err(error) => return refuse(error),
    };
    // Held from the read through the swap and the ledger update: edits of
    // one file in one response apply one after the other, none lost.
    let _lock = shared.workspace.lock_paths([&path]);
    let via = shared.edit_via();
    let file = match shared.load(&path, via) {
        Ok(file) => file,
        Err(error) => return refuse_near(&shared.workspace, &path, error),
    };
    if let Some(seen) = shared.ledger.get(&path)
        && seen.hash != file.identity.hash
    {
        return stale(shared, &path, via);
    }
    let Ok(original) = String::from_utf8(file.bytes) else {
        return ToolOutput::error(format!("`{path}` is not UTF-8 text; edit_file only edits text"));
    };
    if args.old_text == args.new_text {
        return ToolOutput::error("old_text and new_text are the same; nothing to change");
    }
    let count = original.matches(args.old_text.as_str()).count();
    if count == 0 {
        return ToolOutput::error(not_found_message(&path, &original, &args.old_text));
    }
    if count > 1 && !args.replace_all {
        let lines = match_lines(&original, &args.old_text);
        return ToolOutput::error(format!(
            "`old_text` occurs {count} times in `{path}` (at lines {}); include more surrounding lines so it \
             matches once, or set replace_all",
            lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    let (updated, replaced) = replace(&original, &args.old_text, &args.new_text, args.replace_all);
    let written = shared.store(&path, &updated, &Precondition::Unchanged(file.identity), via);
    match written {
        Ok(report) => {
            shared.ledger.record(&path, report.identity);
            let diff = edit_diff(&path, &original, &updated, &replaced);
            let plural = if count == 1 { "" } else { "s" };
            let text = format!("edited `{path}`: {count} replacement{plural}\n{diff}");
            ToolOutput::text(cap(text, shared.limits.max_output_bytes, "diff"))
        }
        Err(WorkspaceError::Changed { .. }) => stale(shared, &path, via),
        Err(error) => refuse(error),
    }
}

fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    text.match_indices(needle).take(10).map(|(at, _)| text[..at].matches('\n').count() + 1).collect()
}

/// Says why nothing matched and where the closest lines are.
fn not_found_message(path: &RelPath, original: &str, old_text: &str) -> String {
    let mut message = format!("`old_text` was not found in `{path}`.");
    let squash = |s: &str| s.lines().map(str::trim).collect::<Vec<_>>().join("\n");
    if squash(original).contains(&squash(old_text)) {
        message
            .push_str(" It matches when leading and trailing whitespace is ignored: check the indentation.");
        return message;
    }
    let Some(first) = old_text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return message;
    };
    let lines: Vec<&str> = original.lines().collect();
    if lines.len() > HINT_MAX_LINES {
        return message;
    }
    let mut scored: Vec<(f32, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (TextDiff::from_chars(first, l.trim()).ratio(), i))
        .filter(|(score, _)| *score >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if !scored.is_empty() {
        message.push_str(" Nearest lines:");
        for (_, index) in scored.into_iter().take(3) {
            message.push_str(&format!("\n{:>6}\t{}", index + 1, lines[index]));
        }
    }
    message
}
