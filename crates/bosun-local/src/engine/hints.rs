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

use bosun_core::{Message, ToolDefinition};

/// Allowed values of string arguments, by tool and argument name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ArgumentValues {
    values: BTreeMap<(String, String), Vec<String>>,
    texts: BTreeMap<String, FileTexts>,
}

/// Files whose text an argument must quote: with one of `files`' paths as
/// the path argument, the text argument can only be a piece of that file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileTexts {
    /// The argument naming the file (`path`).
    pub path_argument: String,
    /// The argument quoting it (`old_text`).
    pub text_argument: String,
    /// Each file's path, as the path argument spells it, and its text.
    pub files: Vec<(String, String)>,
}

impl ArgumentValues {
    /// Allows `argument` of `tool` only the given `values` (an empty list
    /// leaves it free).
    pub fn insert(&mut self, tool: impl Into<String>, argument: impl Into<String>, values: Vec<String>) {
        self.values.insert((tool.into(), argument.into()), values);
    }

    /// The values listed for `argument` of `tool`, if any.
    pub fn get(&self, tool: &str, argument: &str) -> Option<&[String]> {
        self.values.get(&(tool.to_owned(), argument.to_owned())).map(Vec::as_slice)
    }

    /// Holds the text argument of `tool` to text that occurs in the file its
    /// path argument names, for the files listed. Takes effect only where
    /// the path argument also has listed values (the files not listed here
    /// keep a free text argument), so a path outside the list cannot be used
    /// to write any text for a listed file. No files: no constraint.
    pub fn insert_texts(&mut self, tool: impl Into<String>, texts: FileTexts) {
        self.texts.insert(tool.into(), texts);
    }

    /// The file texts listed for `tool`, if any.
    pub fn texts(&self, tool: &str) -> Option<&FileTexts> {
        self.texts.get(tool).filter(|t| !t.files.is_empty())
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.values.values().all(Vec::is_empty) && self.texts.values().all(|t| t.files.is_empty())
    }
}

/// Where the engine gets [`ArgumentValues`] for a request's tools.
pub trait ArgumentHints: Send + Sync {
    /// The values for `tools`, as things are now, given the conversation so
    /// far (`messages`: which files the model has read, say). Called once
    /// per request, on the caller's task, before generation starts: keep it
    /// quick and bounded (return nothing rather than a huge list).
    fn argument_values(&self, tools: &[ToolDefinition], messages: &[Message]) -> ArgumentValues;
}
