//! The workspace's paths as argument values for the local model's tool
//! grammar: `read_file` and `edit_file` can name only files that exist,
//! `list_files` only directories, `search` either. A small model otherwise
//! invents paths (`current_directory`, `src/main.rs` in a project without
//! one); `write_file` and `apply_patch` stay free, since they create files.
//!
//! The paths are listed again before every request, through the
//! workspace's handles and ignore rules, as `list_files` lists them. A tree
//! too large to list within [`MAX_ENTRIES`] gives no values: every path is
//! free text again, rather than a grammar that leaves real files out.

use bosun_core::ToolDefinition;
use bosun_local::{ArgumentHints, ArgumentValues};
use bosun_tools::Workspace;
use bosun_tools::workspace::{EntryKind, Flow, RelPath};

/// Most entries listed; past this the paths are left free.
pub const MAX_ENTRIES: usize = 400;
/// How deep the listing goes.
const MAX_DEPTH: usize = 8;
/// The root, as `list_files` and `search` accept it.
const ROOT: &str = ".";

/// [`ArgumentHints`] from a workspace's entries.
pub struct WorkspacePaths {
    workspace: Workspace,
}

impl WorkspacePaths {
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }

    /// The workspace's files and directories, or `None` when there are too
    /// many or the walk fails.
    fn entries(&self) -> Option<(Vec<String>, Vec<String>)> {
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        let mut complete = true;
        let walked = self.workspace.walk(&RelPath::root(), MAX_DEPTH, &mut |entry| {
            if files.len() + dirs.len() >= MAX_ENTRIES {
                complete = false;
                return Flow::Stop;
            }
            match entry.kind {
                EntryKind::File => files.push(entry.path.to_owned()),
                EntryKind::Dir => dirs.push(entry.path.to_owned()),
                // Never followed or read by the tools: not worth offering.
                EntryKind::Symlink | EntryKind::Other => {}
            }
            Flow::Continue
        });
        (walked.is_ok() && complete).then_some((files, dirs))
    }
}

impl ArgumentHints for WorkspacePaths {
    fn argument_values(&self, tools: &[ToolDefinition]) -> ArgumentValues {
        let mut values = ArgumentValues::default();
        let Some((files, dirs)) = self.entries() else { return values };
        let roots = || std::iter::once(ROOT.to_owned()).chain(dirs.iter().cloned());
        for tool in tools {
            let allowed: Vec<String> = match tool.name.as_str() {
                // Nothing to read or edit in an empty workspace: an empty
                // list leaves the path free, and the tool says it is missing.
                "read_file" | "edit_file" => files.clone(),
                "list_files" => roots().collect(),
                "search" => roots().chain(files.iter().cloned()).collect(),
                _ => continue,
            };
            values.insert(tool.name.clone(), "path", allowed);
        }
        values
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition::new(name, "", json!({"type": "object"}))
    }

    #[test]
    fn each_tool_gets_the_kind_of_path_it_takes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("README.md"), "r").unwrap();
        std::fs::write(dir.path().join("src/deep/lib.rs"), "l").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out.bin"), "o").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let names = ["read_file", "edit_file", "list_files", "search", "write_file", "shell"];
        let tools: Vec<ToolDefinition> = names.iter().map(|n| tool(n)).collect();
        let values = hints.argument_values(&tools);
        let files = [".gitignore", "README.md", "src/deep/lib.rs"];
        assert_eq!(values.get("read_file", "path").unwrap(), files, "ignored and symlinked entries left out");
        assert_eq!(values.get("edit_file", "path").unwrap(), files);
        assert_eq!(values.get("list_files", "path").unwrap(), [".", "src", "src/deep"]);
        let both = [".", "src", "src/deep", ".gitignore", "README.md", "src/deep/lib.rs"];
        assert_eq!(values.get("search", "path").unwrap(), both);
        assert!(values.get("write_file", "path").is_none(), "a new file's path is free");
        assert!(values.get("shell", "path").is_none());
        // Only the tools offered get values.
        assert!(hints.argument_values(&tools[..1]).get("list_files", "path").is_none());
    }

    #[test]
    fn a_file_created_after_one_request_is_there_for_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let tools = [tool("read_file")];
        assert_eq!(hints.argument_values(&tools).get("read_file", "path").unwrap(), [] as [&str; 0]);
        std::fs::write(dir.path().join("new.txt"), "n").unwrap();
        assert_eq!(hints.argument_values(&tools).get("read_file", "path").unwrap(), ["new.txt"]);
    }

    #[test]
    fn a_tree_too_large_to_list_leaves_every_path_free() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_ENTRIES {
            std::fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let values = hints.argument_values(&[tool("read_file"), tool("list_files")]);
        assert!(values.is_empty(), "{values:?}");
    }
}
