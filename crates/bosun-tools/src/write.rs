//! `write_file {path, content}`: create a file, or replace one the session
//! has read, atomically (invariant 17).

use bosun_core::{CallEffects, ToolCategory, ToolOutput};
use rustix::fs::FileType;
use serde::Deserialize;
use serde_json::json;

use crate::common::{Shared, Stop, refuse, stale};
use crate::file_tool::{FileTool, Work};
use crate::workspace::{Precondition, RelPath, WorkspaceError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    content: String,
}

/// Creates or replaces a file.
#[derive(Debug)]
pub struct WriteFile;

impl FileTool for WriteFile {
    type Args = Args;
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create a file with the given content, or replace a whole file. Missing \
        parent directories are created. To replace an existing file, read it first with read_file; prefer \
        edit_file or apply_patch for changes to part of a file.";
    const CATEGORY: ToolCategory = ToolCategory::Write;
    const WORK: Work = Work::ToCompletion;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn effects(arguments: &serde_json::Value) -> CallEffects {
        CallEffects::writes(arguments.get("path").and_then(serde_json::Value::as_str).map(str::to_owned))
    }

    fn run(shared: &Shared, args: &Args, _stop: &Stop) -> ToolOutput {
        write(shared, args)
    }
}

fn write(shared: &Shared, args: &Args) -> ToolOutput {
    let path = match RelPath::parse(&args.path) {
        Ok(path) => path,
        Err(error) => return refuse(error),
    };
    // Held from the look at what is there through the swap and the ledger
    // update, so no other call of this workspace changes it in between.
    let _lock = shared.workspace.lock_paths([&path]);
    match replace(shared, &path, &args.content) {
        Ok(created) => {
            let verb = if created { "created" } else { "replaced" };
            let lines = args.content.lines().count();
            ToolOutput::text(format!("{verb} `{path}` ({} bytes, {lines} lines)", args.content.len()))
        }
        Err(WorkspaceError::Changed { .. }) => stale(shared, &path, shared.check_via(shared.write_via())),
        Err(error) => refuse(error),
    }
}

/// Creates or replaces `path`; says whether it created it.
fn replace(shared: &Shared, path: &RelPath, content: &str) -> Result<bool, WorkspaceError> {
    let precondition = match shared.workspace.kind(path)? {
        None => Precondition::Absent,
        Some(FileType::RegularFile) => match shared.ledger.get(path) {
            Some(identity) => Precondition::Unchanged(identity),
            None => return Err(WorkspaceError::NotRead { path: path.to_string() }),
        },
        Some(FileType::Directory) => {
            return Err(WorkspaceError::NotAFile { path: path.to_string(), kind: "directory" });
        }
        Some(FileType::Symlink) => {
            return Err(WorkspaceError::Symlink { path: path.to_string(), at: path.to_string() });
        }
        Some(_) => return Err(WorkspaceError::NotAFile { path: path.to_string(), kind: "special file" }),
    };
    let report = shared.store(path, content, &precondition, shared.write_via())?;
    shared.ledger.record(path, report.identity.clone());
    Ok(report.created)
}
