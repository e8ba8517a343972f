//! What a proposed file change would do, as a unified diff, for a person
//! asked to approve it: the file read through the workspace's handles (no
//! symlink followed, nothing outside the root), the change applied in
//! memory the way the tool would apply it. Nothing is written.

use serde_json::Value;

use crate::diff::{edit_diff, replace, unified_diff};
use crate::workspace::{RelPath, Workspace};

/// Files larger than this are not previewed (the approval shows the
/// arguments instead).
const MAX_PREVIEW_BYTES: u64 = 1024 * 1024;

/// The diff `write_file` or `edit_file` would make with `arguments`, when
/// it can be told: `None` for other tools, unreadable or binary files, and
/// an edit whose text is not in the file (the call would fail).
pub fn preview(workspace: &Workspace, tool: &str, arguments: &Value) -> Option<String> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let path = RelPath::parse(text("path")?).ok()?;
    let current = || -> Option<String> {
        let read = workspace.read(&path, MAX_PREVIEW_BYTES).ok()?;
        String::from_utf8(read.bytes).ok()
    };
    match tool {
        "write_file" => {
            let before = match workspace.kind(&path) {
                Ok(None) => String::new(),
                _ => current()?,
            };
            Some(unified_diff(&path, &before, text("content")?))
        }
        "edit_file" => {
            let before = current()?;
            let (old, new) = (text("old_text")?, text("new_text")?);
            let every = arguments.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
            if old.is_empty() || !before.contains(old) {
                return None;
            }
            let (after, replaced) = replace(&before, old, new, every);
            Some(edit_diff(&path, &before, &after, &replaced))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn an_edit_and_a_write_are_previewed_as_the_tools_would_change_the_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let edit = json!({"path": "a.txt", "old_text": "two", "new_text": "2"});
        let diff = preview(&workspace, "edit_file", &edit).unwrap();
        assert!(diff.contains("-two\n") && diff.contains("+2\n"), "{diff}");
        let write = json!({"path": "new.txt", "content": "fresh\n"});
        let diff = preview(&workspace, "write_file", &write).unwrap();
        assert!(diff.contains("+fresh\n"), "{diff}");
        // Text not in the file: the edit would fail, so nothing to show.
        let missing = json!({"path": "a.txt", "old_text": "four", "new_text": "4"});
        assert_eq!(preview(&workspace, "edit_file", &missing), None);
        assert_eq!(preview(&workspace, "shell", &json!({"command": "ls"})), None);
        // Nothing outside the root.
        let escape = json!({"path": "../x", "content": "y"});
        assert_eq!(preview(&workspace, "write_file", &escape), None);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\ntwo\nthree\n");
    }
}
