//! `list_files {path?, depth?}`: a sorted, gitignore-aware listing that
//! never follows a symlink, bounded in depth, count and time, and stopped
//! between entries when the call is cancelled or times out.

use std::time::{Duration, Instant};

use bosun_core::{ToolCategory, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::common::{Shared, Stop, cap, refuse};
use crate::file_tool::{FileTool, Work};
use crate::nearby::refuse_near;
use crate::workspace::{EntryKind, Flow, RelPath};

const DEFAULT_DEPTH: usize = 3;
const MAX_DEPTH: usize = 32;
/// Longest a listing may walk before it stops with a note.
const TIME_BUDGET: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

/// Lists files and directories.
#[derive(Debug)]
pub struct ListFiles;

impl FileTool for ListFiles {
    type Args = Args;
    const NAME: &'static str = "list_files";
    const DESCRIPTION: &'static str = "List files and directories under a path (default: the workspace root), \
        sorted, directories ending in `/`. Honours .gitignore; skips .git. `depth` limits how deep to go \
        (default 3).";
    const CATEGORY: ToolCategory = ToolCategory::Read;
    const WORK: Work = Work::Stoppable;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the workspace root (default: the root)"},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "How many levels to descend (default 3)"}
            },
            "additionalProperties": false
        })
    }

    fn run(shared: &Shared, args: &Args, stop: &Stop) -> ToolOutput {
        list(shared, args, stop)
    }
}

fn list(shared: &Shared, args: &Args, stop: &Stop) -> ToolOutput {
    let dir = match RelPath::parse(args.path.as_deref().unwrap_or("")) {
        Ok(dir) => dir,
        Err(error) => return refuse(error),
    };
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
    let started = Instant::now();
    let max_entries = shared.limits.max_entries;
    let mut entries = Vec::new();
    let mut truncated = None;
    let mut cancelled = false;
    let walked = shared.workspace.walk(&dir, depth, &mut |entry| {
        if stop.is_set() {
            cancelled = true;
            truncated =
                Some(format!("[listing cancelled after {} entries; it is incomplete]", entries.len()));
            return Flow::Stop;
        }
        if entries.len() >= max_entries {
            truncated = Some(format!(
                "[listing stopped at {max_entries} entries; list a subdirectory or lower depth]"
            ));
            return Flow::Stop;
        }
        if started.elapsed() > TIME_BUDGET {
            truncated = Some(format!("[listing stopped after {} s]", TIME_BUDGET.as_secs()));
            return Flow::Stop;
        }
        let mut line = entry.path.to_owned();
        match entry.kind {
            EntryKind::Dir => line.push('/'),
            EntryKind::Symlink => line.push_str(" (symlink, not followed)"),
            EntryKind::Other => line.push_str(" (special file)"),
            EntryKind::File => {}
        }
        entries.push(line);
        Flow::Continue
    });
    if let Err(error) = walked {
        return refuse_near(&shared.workspace, &dir, error);
    }
    let mut text = if entries.is_empty() { format!("`{dir}` is empty") } else { entries.join("\n") };
    if let Some(note) = truncated {
        text.push('\n');
        text.push_str(&note);
    }
    let mut output = ToolOutput::text(cap(text, shared.limits.max_output_bytes, "listing"));
    output.is_error = cancelled;
    output
}
