//! `list_files {path?, depth?}`: a sorted, gitignore-aware listing that
//! never follows a symlink, bounded in depth, count and time.

use std::time::{Duration, Instant};

use bosun_core::{Tool, ToolCategory, ToolDefinition, ToolFuture, ToolOutput};
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::json;

use crate::common::{Context, Shared, blocking, cap, parse_args, refuse};
use crate::workspace::RelPath;

const DEFAULT_DEPTH: usize = 3;
const MAX_DEPTH: usize = 32;
/// Longest a listing may walk before it stops with a note.
const TIME_BUDGET: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

/// Lists files and directories.
#[derive(Debug)]
pub struct ListFilesTool {
    shared: Shared,
    definition: ToolDefinition,
}

impl ListFilesTool {
    pub(crate) fn new(shared: Shared) -> Self {
        let definition = ToolDefinition::new(
            "list_files",
            "List files and directories under a path (default: the workspace root), sorted, directories ending \
             in `/`. Honours .gitignore; skips .git. `depth` limits how deep to go (default 3).",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace root (default: the root)"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "How many levels to descend (default 3)"}
                },
                "additionalProperties": false
            }),
        );
        Self { shared, definition }
    }
}

impl Tool for ListFilesTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, _context: Context) -> ToolFuture<'a> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let args: Args = match parse_args("list_files", arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            blocking(move || list(&shared, &args)).await
        })
    }
}

/// A gitignore-aware walker over `dir`, as list and search both use it.
pub(crate) fn walker(root: &std::path::Path, dir: &RelPath) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root.join(dir.as_string()));
    builder
        .hidden(false)
        .follow_links(false)
        .git_global(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

fn list(shared: &Shared, args: &Args) -> ToolOutput {
    let dir = match RelPath::parse(args.path.as_deref().unwrap_or("")) {
        Ok(dir) => dir,
        Err(error) => return refuse(error),
    };
    // Resolve through handles first: refuses a symlink anywhere in the path.
    if let Err(error) = shared.workspace.open_dir(&dir, false) {
        return refuse(error);
    }
    let root = shared.workspace.root_path();
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
    let mut builder = walker(root, &dir);
    builder.max_depth(Some(depth)).sort_by_file_name(|a, b| a.cmp(b));
    let started = Instant::now();
    let mut entries = Vec::new();
    let mut truncated = None;
    for entry in builder.build() {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= shared.limits.max_entries {
            truncated = Some(format!(
                "[listing stopped at {} entries; list a subdirectory or lower depth]",
                entries.len()
            ));
            break;
        }
        if started.elapsed() > TIME_BUDGET {
            truncated = Some(format!("[listing stopped after {} s]", TIME_BUDGET.as_secs()));
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else { continue };
        let mut line = relative.display().to_string();
        if entry.path_is_symlink() {
            line.push_str(" (symlink, not followed)");
        } else if entry.file_type().is_some_and(|t| t.is_dir()) {
            line.push('/');
        }
        entries.push(line);
    }
    let mut text = if entries.is_empty() { format!("`{dir}` is empty") } else { entries.join("\n") };
    if let Some(note) = truncated {
        text.push('\n');
        text.push_str(&note);
    }
    ToolOutput::text(cap(text, shared.limits.max_output_bytes, "listing"))
}
