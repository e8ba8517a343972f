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
//!
//! The files the model has read (successful `read_file` calls in the
//! conversation, the latest first) are read again, as they are now, and
//! `edit_file`'s old text is held to text that occurs in the file the call
//! names: a small model misquotes a line it has seen (`LOG_LEVEL = info`
//! for `LOG_LEVEL=info`), and the grammar then cannot write the misquote.

use bosun_core::{Message, ToolDefinition};
use bosun_local::{ArgumentHints, ArgumentValues, FileTexts};
use bosun_tools::Workspace;
use bosun_tools::workspace::{EntryKind, Flow, RelPath};

/// Most entries listed; past this the paths are left free.
pub const MAX_ENTRIES: usize = 400;
/// Most files whose text `edit_file` must quote, the latest read first.
const MAX_QUOTED_FILES: usize = 4;
/// Largest file quoted; a larger one leaves its old text free.
const MAX_QUOTED_BYTES: u64 = 16 * 1024;
/// How deep the listing goes.
const MAX_DEPTH: usize = 8;
/// The root, as `list_files` and `search` accept it.
const ROOT: &str = ".";

/// [`ArgumentHints`] from a workspace's entries.
#[derive(Debug)]
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

    /// The files of successful `read_file` calls in `messages`, latest
    /// first, with their text as it is now: at most [`MAX_QUOTED_FILES`],
    /// each UTF-8 and at most [`MAX_QUOTED_BYTES`].
    fn read_texts(&self, messages: &[Message]) -> Vec<(String, String)> {
        let succeeded = |id| {
            messages
                .iter()
                .any(|m| matches!(m, Message::ToolResult { call_id, is_error: false, .. } if *call_id == id))
        };
        let mut texts: Vec<(String, String)> = Vec::new();
        let calls = messages.iter().rev().flat_map(|m| m.tool_calls().collect::<Vec<_>>());
        for call in calls.filter(|call| call.name == "read_file" && succeeded(call.id)) {
            let Some(path) = call.arguments.get("path").and_then(|p| p.as_str()) else { continue };
            let Ok(rel) = RelPath::parse(path) else { continue };
            let path = rel.to_string();
            if texts.len() >= MAX_QUOTED_FILES || texts.iter().any(|(seen, _)| *seen == path) {
                continue;
            }
            let Ok(read) = self.workspace.read(&rel, MAX_QUOTED_BYTES) else { continue };
            if let Ok(text) = String::from_utf8(read.bytes) {
                texts.push((path, text));
            }
        }
        texts
    }
}

impl ArgumentHints for WorkspacePaths {
    fn argument_values(&self, tools: &[ToolDefinition], messages: &[Message]) -> ArgumentValues {
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
        if tools.iter().any(|tool| tool.name == "edit_file") {
            let files = self.read_texts(messages);
            let texts = FileTexts { path_argument: "path".into(), text_argument: "old_text".into(), files };
            values.insert_texts("edit_file", texts);
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
        let values = hints.argument_values(&tools, &[]);
        let files = [".gitignore", "README.md", "src/deep/lib.rs"];
        assert_eq!(values.get("read_file", "path").unwrap(), files, "ignored and symlinked entries left out");
        assert_eq!(values.get("edit_file", "path").unwrap(), files);
        assert_eq!(values.get("list_files", "path").unwrap(), [".", "src", "src/deep"]);
        let both = [".", "src", "src/deep", ".gitignore", "README.md", "src/deep/lib.rs"];
        assert_eq!(values.get("search", "path").unwrap(), both);
        assert!(values.get("write_file", "path").is_none(), "a new file's path is free");
        assert!(values.get("shell", "path").is_none());
        // Only the tools offered get values.
        assert!(hints.argument_values(&tools[..1], &[]).get("list_files", "path").is_none());
    }

    /// A `read_file` call of `path` and its result, failed or not.
    fn read_call(id: &str, path: &str, failed: bool) -> [Message; 2] {
        let call = json!({"role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "tool_call", "id": id, "name": "read_file", "arguments": {"path": path}}]});
        let result = json!({"role": "tool_result", "call_id": id, "tool_name": "read_file",
            "content": [{"type": "text", "text": "…"}], "is_error": failed});
        [serde_json::from_value(call).unwrap(), serde_json::from_value(result).unwrap()]
    }

    #[test]
    fn the_files_read_are_the_texts_an_edit_must_quote_as_they_are_now() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.txt", "b.txt", "c.txt"] {
            std::fs::write(dir.path().join(name), format!("{name} before\n")).unwrap();
        }
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let tools = [tool("read_file"), tool("edit_file")];
        let mut messages = Vec::new();
        messages.extend(read_call("01a23de0-0000-7000-8000-000000000001", "a.txt", false));
        messages.extend(read_call("01a23de0-0000-7000-8000-000000000002", "./b.txt", false));
        messages.extend(read_call("01a23de0-0000-7000-8000-000000000003", "c.txt", true));
        std::fs::write(dir.path().join("a.txt"), "a.txt after\n").unwrap();
        let values = hints.argument_values(&tools, &messages);
        let texts = values.texts("edit_file").unwrap();
        assert_eq!((texts.path_argument.as_str(), texts.text_argument.as_str()), ("path", "old_text"));
        let expected =
            [("b.txt".to_owned(), "b.txt before\n".to_owned()), ("a.txt".into(), "a.txt after\n".into())];
        assert_eq!(texts.files, expected, "latest read first, the failed read left out, today's text");
        // No edit tool offered, or nothing read: nothing to quote.
        assert!(hints.argument_values(&tools[..1], &messages).texts("edit_file").is_none());
        assert!(hints.argument_values(&tools, &[]).texts("edit_file").is_none());
    }

    #[test]
    fn a_file_created_after_one_request_is_there_for_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let tools = [tool("read_file")];
        assert_eq!(hints.argument_values(&tools, &[]).get("read_file", "path").unwrap(), [] as [&str; 0]);
        std::fs::write(dir.path().join("new.txt"), "n").unwrap();
        assert_eq!(hints.argument_values(&tools, &[]).get("read_file", "path").unwrap(), ["new.txt"]);
    }

    #[test]
    fn a_tree_too_large_to_list_leaves_every_path_free() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_ENTRIES {
            std::fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        let hints = WorkspacePaths::new(Workspace::open(dir.path()).unwrap());
        let values = hints.argument_values(&[tool("read_file"), tool("list_files")], &[]);
        assert!(values.is_empty(), "{values:?}");
    }
}
