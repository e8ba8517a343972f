//! `write_file` through the editor: when the client says at `initialize`
//! that it writes text files (`fs.writeTextFile`), a session's `write_file`
//! sends `fs/write_text_file` to it, so the change lands in the editor's
//! buffer (and its undo history) rather than behind its back. The tool has
//! the built-in one's name, schema, category and effects, so the
//! permission pipeline (modes, rules, protected paths, approvals) judges it
//! exactly as it judges bosun's own. Its path must stay inside the
//! workspace: relative, no `..`, no symbolic link leading out.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::WriteTextFileRequest;
use bosun_core::{CallEffects, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};
use serde_json::{Value, json};

/// The name the built-in tool has, which this one replaces.
pub(crate) const WRITE_FILE: &str = "write_file";

pub(crate) struct EditorWriteFile {
    definition: ToolDefinition,
    connection: ConnectionTo<Client>,
    session: Arc<OnceLock<String>>,
    workspace: PathBuf,
}

impl std::fmt::Debug for EditorWriteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorWriteFile").field("workspace", &self.workspace).finish()
    }
}

impl EditorWriteFile {
    pub(crate) fn new(
        connection: ConnectionTo<Client>,
        session: Arc<OnceLock<String>>,
        workspace: PathBuf,
    ) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root"},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        });
        let description = "Create a file, or replace a whole file, with the given content (written through the \
            person's editor); parent directories are created. Prefer edit_file or apply_patch for changes to part \
            of a file.";
        Self {
            definition: ToolDefinition::new(WRITE_FILE, description, parameters),
            connection,
            session,
            workspace,
        }
    }

    async fn write(&self, arguments: Value) -> ToolOutput {
        let (Some(path), Some(content)) =
            (arguments.get("path").and_then(Value::as_str), arguments.get("content").and_then(Value::as_str))
        else {
            return ToolOutput::error("`path` and `content` are required strings");
        };
        let target = match inside(&self.workspace, path) {
            Ok(target) => target,
            Err(why) => return ToolOutput::error(why),
        };
        let Some(session) = self.session.get() else { return ToolOutput::error("the session is not ready") };
        let request = WriteTextFileRequest::new(session.clone(), target, content);
        match self.connection.send_request(request).block_task().await {
            Ok(_) => ToolOutput::text(format!(
                "wrote `{path}` through the editor ({} bytes, {} lines)",
                content.len(),
                content.lines().count()
            )),
            Err(error) => ToolOutput::error(format!("the editor did not write `{path}`: {error}")),
        }
    }
}

/// `path` made absolute inside `workspace` (canonical), or why not: an
/// absolute path, a `..`, or an existing ancestor that resolves outside.
pub(crate) fn inside(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if !relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("`{path}` must be a path inside the workspace, relative, without `..`"));
    }
    let target = workspace.join(relative);
    // The nearest ancestor that exists, resolved: a symbolic link must not
    // lead out of the workspace.
    let existing = target.ancestors().find(|a| a.exists()).unwrap_or(workspace);
    let real = existing.canonicalize().map_err(|e| format!("`{path}`: {e}"))?;
    if !real.starts_with(workspace) {
        return Err(format!("`{path}` leads outside the workspace"));
    }
    if target.is_dir() {
        return Err(format!("`{path}` is a directory"));
    }
    Ok(target)
}

impl Tool for EditorWriteFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        CallEffects::writes(arguments.get("path").and_then(Value::as_str).map(str::to_owned))
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        Box::pin(self.write(arguments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_must_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert_eq!(inside(&ws, "a/b.txt").unwrap(), ws.join("a/b.txt"));
        assert!(inside(&ws, "../x").is_err());
        assert!(inside(&ws, "/etc/passwd").is_err());
        std::os::unix::fs::symlink("/tmp", ws.join("out")).unwrap();
        assert!(inside(&ws, "out/x").unwrap_err().contains("outside"));
    }
}
