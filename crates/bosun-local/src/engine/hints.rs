//! Argument values for the tool grammar: what a string argument may be, as
//! far as the caller knows (the paths that exist in the workspace, say).
//!
//! A small model asked which files are here calls `list_files` with the path
//! `current_directory`; given the paths that exist as the only spellings the
//! grammar allows, it names one of them. The engine asks its
//! [`ArgumentHints`] before every request, so a file created by the previous
//! call is already there. The values narrow the grammar only: the model is
//! shown the tools' own schemas, and the tool still checks what it gets.

use std::collections::BTreeMap;

use bosun_core::ToolDefinition;

/// Allowed values of string arguments, by tool and argument name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ArgumentValues(BTreeMap<(String, String), Vec<String>>);

impl ArgumentValues {
    /// Allows `argument` of `tool` only the given `values` (an empty list
    /// leaves it free).
    pub fn insert(&mut self, tool: impl Into<String>, argument: impl Into<String>, values: Vec<String>) {
        self.0.insert((tool.into(), argument.into()), values);
    }

    /// The values listed for `argument` of `tool`, if any.
    pub fn get(&self, tool: &str, argument: &str) -> Option<&[String]> {
        self.0.get(&(tool.to_owned(), argument.to_owned())).map(Vec::as_slice)
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(Vec::is_empty)
    }
}

/// Where the engine gets [`ArgumentValues`] for a request's tools.
pub trait ArgumentHints: Send + Sync {
    /// The values for `tools`, as things are now. Called once per request,
    /// on the caller's task, before generation starts: keep it quick and
    /// bounded (return nothing rather than a huge list).
    fn argument_values(&self, tools: &[ToolDefinition]) -> ArgumentValues;
}
