//! The tool set for small models ([`WorkspaceTools::brief`]): the same tools
//! with one-sentence descriptions and only the arguments a task needs.
//!
//! Measured on Qwen2.5-Coder-0.5B (docs/benchmarks.md): the full
//! definitions are most of a 1,577-token prefix the model reads before the
//! task, and it copies their examples as arguments (the example patch of
//! `apply_patch`, say). `apply_patch` is left out (`edit_file` and
//! `write_file` do its work in the shape such a model gets right); so are
//! the tuning arguments (`offset`, `depth`, `glob`, `timeout_ms`, …), which
//! keep their defaults, and `search`'s `path` (it searches everywhere). A brief schema is a subset of the full one, so the
//! tool runs unchanged on what it validates.
//!
//! [`WorkspaceTools::brief`]: crate::WorkspaceTools::brief

use std::sync::Arc;

use bosun_core::{
    CallEffects, CancellationPolicy, RetryPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture,
};
use serde_json::{Value, json};

/// A tool shown to the model under another definition.
struct Briefed {
    tool: Arc<dyn Tool>,
    definition: ToolDefinition,
}

impl Tool for Briefed {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        self.tool.category()
    }

    fn cancellation(&self) -> CancellationPolicy {
        self.tool.cancellation()
    }

    fn retry(&self) -> RetryPolicy {
        self.tool.retry()
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        self.tool.effects(arguments)
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        self.tool.execute(arguments, context)
    }
}

/// The brief description and schema of a tool, by name; `None` leaves the
/// tool out of the brief set.
fn brief_definition(name: &str) -> Option<(&'static str, Value)> {
    let string = |description: &str| json!({"type": "string", "minLength": 1, "description": description});
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    Some(match name {
        "read_file" => (
            "Read a file and return its lines, numbered.",
            object(json!({"path": string("The file to read")}), &["path"]),
        ),
        "list_files" => (
            "List the files and directories in a directory.",
            object(json!({"path": string("The directory (leave it out for the whole workspace)")}), &[]),
        ),
        // Always the whole workspace: given a `path`, a small model narrows
        // the search to a file it guessed, and misses the match.
        "search" => (
            "Search all the files for a regular expression; returns each matching line as path:line:text.",
            object(json!({"pattern": string("What to find")}), &["pattern"]),
        ),
        "edit_file" => (
            "Replace old_text with new_text in a file; old_text must appear in it exactly once.",
            object(
                json!({
                    "path": string("The file to change"),
                    "old_text": string("The exact text to replace"),
                    "new_text": {"type": "string", "description": "The text to put in its place"}
                }),
                &["path", "old_text", "new_text"],
            ),
        ),
        "write_file" => (
            "Create a file with the given content, or replace all of a file's content.",
            object(
                json!({
                    "path": string("The file to write"),
                    "content": {"type": "string", "description": "The whole content of the file"}
                }),
                &["path", "content"],
            ),
        ),
        "shell" => (
            "Run a bash command in the workspace and return what it prints.",
            object(json!({"command": string("The command line")}), &["command"]),
        ),
        _ => return None,
    })
}

/// The brief set of `tools`: those with a brief definition, under it.
pub(crate) fn brief(tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
    tools
        .into_iter()
        .filter_map(|tool| {
            let (description, parameters) = brief_definition(&tool.definition().name)?;
            let definition = ToolDefinition::new(tool.definition().name.clone(), description, parameters);
            Some(Arc::new(Briefed { tool, definition }) as Arc<dyn Tool>)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property of a brief schema is in the full one with the same
    /// type, and every brief requirement is a full one: a brief call is a
    /// valid full call.
    #[test]
    fn each_brief_schema_is_a_subset_of_the_full_one() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let workspace = crate::Workspace::open(dir.path()).map_err(|e| e.to_string())?;
        let full = crate::WorkspaceTools::new(workspace).build();
        let mut briefed = 0;
        for tool in &full {
            let full = &tool.definition().parameters;
            let Some((_, brief)) = brief_definition(&tool.definition().name) else { continue };
            briefed += 1;
            let name = &tool.definition().name;
            let properties = brief["properties"].as_object().ok_or("no properties")?;
            for (key, property) in properties {
                let original = &full["properties"][key];
                if original.is_null() {
                    return Err(format!("{name}.{key} is not a property of the full schema"));
                }
                let types_agree = original.get("type") == property.get("type")
                    || original["anyOf"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|t| t["type"] == property["type"]));
                if !types_agree {
                    return Err(format!("{name}.{key}: {property} against {original}"));
                }
            }
            let required = |schema: &Value| -> Vec<String> {
                schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            let full_required = required(full);
            if let Some(missing) = full_required.iter().find(|r| !required(&brief).contains(r)) {
                return Err(format!("{name}: the full schema requires {missing}, the brief one does not"));
            }
        }
        if briefed != 6 {
            return Err(format!("{briefed} tools briefed, expected all but apply_patch"));
        }
        Ok(())
    }
}
