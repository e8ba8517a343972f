//! `apply_patch {patch}`: the `*** Begin Patch` envelope, validated in full
//! before anything is written, then applied file by file atomically; a
//! failure while applying undoes the files already changed. The locks of
//! every path the patch names are held from the first read to the last
//! undo, so no other call of the workspace changes those files meanwhile.

use std::collections::HashMap;

use bosun_core::{CallEffects, ContentPart, ToolCategory, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::access::Via;
use crate::common::{Shared, Stop, cap, stale};
use crate::diff::unified_diff;
use crate::file_tool::{FileTool, Work};
use crate::patch::{self, FileChange, Operation};
use crate::workspace::{FileIdentity, Precondition, RelPath, WorkspaceError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    patch: String,
}

/// Applies a multi-file patch.
#[derive(Debug)]
pub struct ApplyPatch;

impl FileTool for ApplyPatch {
    type Args = Args;
    const NAME: &'static str = "apply_patch";
    const DESCRIPTION: &'static str = "Apply a patch to one or more files, all or nothing. Format:\n*** Begin \
        Patch\n*** Add File: path\n+new line\n*** Delete File: path\n*** Update File: path\n*** Move to: \
        new/path (optional)\n@@ optional line to anchor the hunk\n context line\n-removed line\n+added \
        line\n*** End Patch\nGive about 3 lines of context around each change. Paths are relative to the \
        workspace root.";
    const CATEGORY: ToolCategory = ToolCategory::Write;
    const WORK: Work = Work::ToCompletion;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {"type": "string", "minLength": 1, "description": "The whole patch, from *** Begin Patch to *** End Patch"}
            },
            "required": ["patch"],
            "additionalProperties": false
        })
    }

    fn effects(arguments: &serde_json::Value) -> CallEffects {
        let patch = arguments.get("patch").and_then(serde_json::Value::as_str).unwrap_or_default();
        CallEffects::writes(crate::patch::named_paths(patch))
    }

    fn run(shared: &Shared, args: &Args, _stop: &Stop) -> ToolOutput {
        apply(shared, &args.patch)
    }
}

/// A file as it was before the patch, to check against and to restore.
struct Before {
    identity: FileIdentity,
    content: String,
    mode: u32,
}

/// A change already made, and how to undo it.
enum Done {
    Created { path: RelPath, identity: FileIdentity },
    Replaced { path: RelPath, identity: FileIdentity, before: String },
    Deleted { path: RelPath, before: String, mode: u32 },
}

fn apply(shared: &Shared, text: &str) -> ToolOutput {
    let parsed = match patch::parse(text) {
        Ok(parsed) => parsed,
        Err(error) => {
            return ToolOutput::error(format!("the patch is malformed, nothing was changed: {error}"));
        }
    };
    // Every path the patch names, move targets too; a malformed one is
    // refused by the plan below, so it needs no lock.
    let paths: Vec<RelPath> = parsed
        .operations
        .iter()
        .flat_map(|operation| match operation {
            Operation::Update { path, move_to: Some(to), .. } => vec![path.as_str(), to.as_str()],
            other => vec![other.path()],
        })
        .filter_map(|name| RelPath::parse(name).ok())
        .collect();
    let _locks = shared.workspace.lock_paths(&paths);
    // An editor writes text but cannot delete or move a file: a patch that
    // does either is made on disk whole, so it reads what it changes.
    let moves = parsed.operations.iter().any(|operation| {
        matches!(operation, Operation::Delete { .. } | Operation::Update { move_to: Some(_), .. })
    });
    let via = if moves { Via::Disk } else { shared.edit_via() };
    let mut originals: HashMap<String, Before> = HashMap::new();
    let mut read = |name: &str| -> Result<Option<String>, String> {
        let path = RelPath::parse(name).map_err(|e| e.to_string())?;
        match shared.load(&path, via) {
            Ok(file) => {
                let content =
                    String::from_utf8(file.bytes).map_err(|_| format!("`{path}` is not UTF-8 text"))?;
                originals.insert(
                    name.to_owned(),
                    Before { identity: file.identity, content: content.clone(), mode: file.mode },
                );
                Ok(Some(content))
            }
            Err(WorkspaceError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    };
    let changes = match patch::plan(&parsed, &mut read) {
        Ok(changes) => changes,
        Err(error) => {
            return ToolOutput::error(format!("the patch does not apply, nothing was changed: {error}"));
        }
    };
    let mut done = Vec::new();
    let mut summary = Vec::new();
    let mut diffs = String::new();
    for change in &changes {
        match make(shared, via, change, &originals, &mut done) {
            Ok((line, diff)) => {
                summary.push(line);
                diffs.push_str(&diff);
            }
            Err(error) => {
                let undone = undo(shared, via, done);
                // A file changed from outside since the plan read it: show
                // what it holds now, to patch against.
                if let WorkspaceError::Changed { path } = &error
                    && let Ok(path) = RelPath::parse(path)
                {
                    let mut output = stale(shared, &path, via);
                    let head = format!("applying the patch failed, {undone}: ");
                    output.content.insert(0, ContentPart::text(head));
                    return output;
                }
                return ToolOutput::error(format!("applying the patch failed, {undone}: {error}"));
            }
        }
    }
    let text = format!("applied the patch:\n{}\n{diffs}", summary.join("\n"));
    ToolOutput::text(cap(text, shared.limits.max_output_bytes, "diff"))
}

fn make(
    shared: &Shared,
    via: Via,
    change: &FileChange,
    originals: &HashMap<String, Before>,
    done: &mut Vec<Done>,
) -> Result<(String, String), WorkspaceError> {
    let workspace = &shared.workspace;
    let before =
        |name: &str| originals.get(name).ok_or_else(|| WorkspaceError::Changed { path: name.to_owned() });
    match change {
        FileChange::Write { path: name, content, create: true } => {
            let path = RelPath::parse(name)?;
            let report = shared.store(&path, content, &Precondition::Absent, via)?;
            shared.ledger.record(&path, report.identity.clone());
            done.push(Done::Created { path: path.clone(), identity: report.identity });
            Ok((format!("A {path}"), unified_diff(&path, "", content)))
        }
        FileChange::Write { path: name, content, create: false } => {
            let path = RelPath::parse(name)?;
            let old = before(name)?;
            let report = shared.store(&path, content, &Precondition::Unchanged(old.identity.clone()), via)?;
            shared.ledger.record(&path, report.identity.clone());
            done.push(Done::Replaced {
                path: path.clone(),
                identity: report.identity,
                before: old.content.clone(),
            });
            Ok((format!("M {path}"), unified_diff(&path, &old.content, content)))
        }
        FileChange::Delete { path: name } => {
            let path = RelPath::parse(name)?;
            let old = before(name)?;
            workspace.delete(&path, &old.identity)?;
            shared.ledger.forget(&path);
            done.push(Done::Deleted { path: path.clone(), before: old.content.clone(), mode: old.mode });
            Ok((format!("D {path}"), unified_diff(&path, &old.content, "")))
        }
        FileChange::Move { from, to, content } => {
            let (from_path, to_path) = (RelPath::parse(from)?, RelPath::parse(to)?);
            let old = before(from)?;
            let report = workspace.create_with_mode(&to_path, content.as_bytes(), old.mode)?;
            done.push(Done::Created { path: to_path.clone(), identity: report.identity.clone() });
            workspace.delete(&from_path, &old.identity)?;
            shared.ledger.forget(&from_path);
            shared.ledger.record(&to_path, report.identity);
            done.push(Done::Deleted { path: from_path.clone(), before: old.content.clone(), mode: old.mode });
            Ok((format!("R {from_path} -> {to_path}"), unified_diff(&to_path, &old.content, content)))
        }
    }
}

/// Reverses changes already made, newest first; says how it went.
fn undo(shared: &Shared, via: Via, done: Vec<Done>) -> String {
    if done.is_empty() {
        return "nothing was changed".to_owned();
    }
    let mut failed = Vec::new();
    for change in done.into_iter().rev() {
        let result = match &change {
            // An editor cannot delete the file it made; the person is told.
            Done::Created { path, .. } if via == Via::Access => Err(WorkspaceError::Access {
                path: path.to_string(),
                op: "remove",
                reason: "an editor cannot delete files; remove it yourself".to_owned(),
            }),
            Done::Created { path, identity } => shared.workspace.delete(path, identity).map(|()| path),
            Done::Replaced { path, identity, before } => {
                shared.store(path, before, &Precondition::Unchanged(identity.clone()), via).map(|_| path)
            }
            Done::Deleted { path, before, mode } => {
                shared.workspace.create_with_mode(path, before.as_bytes(), *mode).map(|_| path)
            }
        };
        match result {
            Ok(path) => shared.ledger.forget(path),
            Err(error) => failed.push(error.to_string()),
        }
    }
    if failed.is_empty() {
        "the files already changed were restored".to_owned()
    } else {
        format!("and restoring the files already changed failed too ({})", failed.join("; "))
    }
}
