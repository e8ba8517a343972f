//! Named agents: Markdown files, `NAME.md`, in the form Claude Code reads
//! from `.claude/agents/`: YAML front matter with `name`, `description`,
//! optionally `tools` and `model`, then a body that is the agent's system
//! prompt. `delegate_tasks` runs a task as one of them.
//!
//! Where, first found wins a name (docs/agents.md):
//! 1. the user's folder (the CLI passes `~/.config/bosun/agents`),
//! 2. the project's `.bosun/agents/`, then `.claude/agents/`, at the
//!    workspace root.
//!
//! The user's come first: a repository cannot replace an agent the user
//! wrote by shipping one of the same name (invariant 20). An agent that
//! loses to one found earlier is listed in [`AgentDiscovery::shadowed`].
//!
//! Read as skills are (see [`crate::skills`], whose front matter parser and
//! folder reader this uses): project folders through the workspace's
//! handle, the user's through a handle on their folder, no symlink followed
//! (a symlinked folder or agent file is skipped with a warning), regular
//! files only, at most [`MAX_FILE_BYTES`] a file and
//! [`MAX_FILES_PER_DIR`] entries a folder; subfolders and files not named
//! `*.md` are passed over. A file that cannot be used is a warning naming
//! it, never a failure.
//!
//! `tools` only narrows: `None` (no `tools` key) leaves the parent's whole
//! authority, `Some(list)` is a strict boundary. An agent file grants
//! nothing; its child's calls go through the permission pipeline.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::FileType;
use serde::Deserialize;

use crate::compat::bosun_tool_name;
use crate::skills;
use crate::skills::front_matter::{self, collapse, one_line};
use crate::workspace::{RelPath, Workspace, WorkspaceError};

/// The project's agent folders, in precedence order.
pub const PROJECT_DIRS: [&str; 2] = [".bosun/agents", ".claude/agents"];
/// Largest agent file read; a larger one is skipped with a warning.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Most entries read from one agents folder; more are named in a warning.
pub const MAX_FILES_PER_DIR: usize = skills::MAX_ENTRIES_PER_DIR;
/// Longest agent name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Most agents listed by [`Agents::tool_description_section`].
pub const MAX_LISTED_AGENTS: usize = 50;
/// Most characters of a description listed by
/// [`Agents::tool_description_section`] (then `…`).
pub const MAX_LISTED_DESCRIPTION_CHARS: usize = 200;
/// Most unknown tool names one warning names.
const MAX_NAMED_UNKNOWN: usize = 10;

/// bosun's own tool names, kept as written in `tools`. With Claude Code's
/// names (mapped by [`bosun_tool_name`]) and `mcp__SERVER__TOOL` names,
/// these are the names that are not warned about.
pub const BOSUN_TOOLS: [&str; 10] = [
    "read_file",
    "write_file",
    "edit_file",
    "apply_patch",
    "list_files",
    "search",
    "shell",
    "skill",
    "delegate_tasks",
    "read_artifact",
];

/// Where an agent was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentOrigin {
    /// The user's own folder.
    User,
    /// One of [`PROJECT_DIRS`] in the workspace.
    Project(&'static str),
}

impl fmt::Display for AgentOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("the user's agents"),
            Self::Project(dir) => write!(f, "the project's {dir}"),
        }
    }
}

/// One named agent, as its file defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentDef {
    name: String,
    description: String,
    tools: Option<Vec<String>>,
    model: Option<String>,
    prompt: String,
    origin: AgentOrigin,
    path: PathBuf,
}

impl AgentDef {
    /// Its name: the front matter's `name`, else the file's stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description, on one line (whitespace runs made one space).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tools it may use, as bosun names (Claude Code's mapped, others
    /// as written, duplicates dropped, in the file's order): `None` when
    /// the file has no `tools` list (the parent's whole authority),
    /// `Some(list)` a strict boundary (an empty list: no tools).
    pub fn tools(&self) -> Option<&[String]> {
        self.tools.as_deref()
    }

    /// Whether `tool` is inside its boundary: always without a list, else
    /// when the list names it exactly.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|list| list.iter().any(|t| t == tool))
    }

    /// Its `model`, as written (`sonnet`, `inherit`, a model id, …): the
    /// caller interprets it.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Its system prompt: the file's body after the front matter, trimmed.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// Where it was found.
    pub fn origin(&self) -> AgentOrigin {
        self.origin
    }

    /// Its file on disk, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The named agents of a session, by name. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Agents(Arc<BTreeMap<String, AgentDef>>);

impl Agents {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.0.get(name)
    }

    /// Every agent, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &AgentDef> {
        self.0.values()
    }

    /// The listing for `delegate_tasks`' description: a heading line, then
    /// `- NAME: DESCRIPTION` per agent in name order (the same bytes from
    /// run to run), each description at most
    /// [`MAX_LISTED_DESCRIPTION_CHARS`] characters (then `…`), at most
    /// [`MAX_LISTED_AGENTS`] agents, and a line counting those left out.
    /// No trailing newline. `None` when there are no agents.
    pub fn tool_description_section(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut section = String::from(
            "Agents a task can name (each runs the task with its own instructions and, when it lists \
             them, only its tools):",
        );
        for agent in self.iter().take(MAX_LISTED_AGENTS) {
            section.push_str(&format!("\n- {}: {}", agent.name, cut(&agent.description)));
        }
        let more = self.len().saturating_sub(MAX_LISTED_AGENTS);
        if more > 0 {
            section
                .push_str(&format!("\n({more} more agents not listed for space; they can still be named)"));
        }
        Some(section)
    }
}

/// `text`, at most [`MAX_LISTED_DESCRIPTION_CHARS`] characters, then `…`.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_LISTED_DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct AgentDiscovery {
    /// The agents that apply.
    pub agents: Agents,
    /// Agents that lost to one of the same name found first: the loser's
    /// file, and where the winner came from.
    pub shadowed: Vec<(PathBuf, AgentOrigin)>,
    /// What was skipped or is doubtful, and why, each naming its file or
    /// folder.
    pub warnings: Vec<String>,
}

/// Finds the agents in the user's folders `user` (those present, in order)
/// and in the project folders of `project` (when given), in that order.
/// Never fails: whatever cannot be used is a warning.
pub fn discover(project: Option<&Workspace>, user: &[PathBuf]) -> AgentDiscovery {
    let mut found = AgentDiscovery::default();
    let mut agents = BTreeMap::new();
    for dir in user {
        match std::fs::symlink_metadata(dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            // The user's own path: a symlink they made to it is theirs to follow.
            _ => match Workspace::open(dir) {
                Ok(base) => scan(&base, &RelPath::root(), AgentOrigin::User, &mut agents, &mut found),
                Err(error) => found.warnings.push(format!("agents in {} not read: {error}", dir.display())),
            },
        }
    }
    if let Some(workspace) = project {
        for dir in PROJECT_DIRS {
            let Ok(path) = RelPath::parse(dir) else { continue };
            scan(workspace, &path, AgentOrigin::Project(dir), &mut agents, &mut found);
        }
    }
    found.agents = Agents(Arc::new(agents));
    found
}

/// Adds the agents of the folder `dir` beneath `base`.
fn scan(
    base: &Workspace,
    dir: &RelPath,
    origin: AgentOrigin,
    agents: &mut BTreeMap<String, AgentDef>,
    found: &mut AgentDiscovery,
) {
    let shown = |rel: &str| base.root_path().join(rel);
    let entries = match skills::folders(base, dir) {
        Ok(entries) => entries,
        Err(WorkspaceError::NotFound { .. }) => return,
        Err(WorkspaceError::Symlink { at, .. }) => {
            let at = shown(&at);
            found.warnings.push(format!("{}: a symlink, not followed; its agents not read", at.display()));
            return;
        }
        Err(error) => {
            let at = shown(&dir.as_string());
            found.warnings.push(format!("agents in {} not read: {error}", at.display()));
            return;
        }
    };
    if entries.more {
        found.warnings.push(format!(
            "{} holds more than {MAX_FILES_PER_DIR} entries; only the first {MAX_FILES_PER_DIR} were read",
            shown(&dir.as_string()).display()
        ));
    }
    for (file_name, kind) in entries.names {
        let Some(stem) = file_name.strip_suffix(".md") else { continue };
        let rel = dir.join(&file_name);
        let path = shown(&rel);
        match kind {
            FileType::RegularFile | FileType::Unknown => {}
            // Subfolders are not agents.
            FileType::Directory => continue,
            FileType::Symlink => {
                found.warnings.push(format!("{}: a symlink, not followed; skipped", path.display()));
                continue;
            }
            _ => {
                found.warnings.push(format!("{}: not a regular file; skipped", path.display()));
                continue;
            }
        }
        let parsed = RelPath::parse(&rel)
            .map_err(|error| error.to_string())
            .and_then(|file| skills::read_file(base, &file, MAX_FILE_BYTES))
            .and_then(|text| parse(&text, stem));
        let (parsed, unknown) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                found.warnings.push(format!("{}: {why}; skipped", path.display()));
                continue;
            }
        };
        if !unknown.is_empty() {
            found.warnings.push(format!("{}: {}", path.display(), unknown_tools(&unknown)));
        }
        let agent = AgentDef {
            name: parsed.name,
            description: parsed.description,
            tools: parsed.tools,
            model: parsed.model,
            prompt: parsed.prompt,
            origin,
            path,
        };
        match agents.get(&agent.name) {
            Some(winner) => {
                if winner.origin == origin {
                    found.warnings.push(format!(
                        "{}: the agent `{}` is also defined by {}, which is kept",
                        agent.path.display(),
                        agent.name,
                        winner.path.display()
                    ));
                }
                found.shadowed.push((agent.path, winner.origin));
            }
            None => {
                agents.insert(agent.name.clone(), agent);
            }
        }
    }
}

/// An agent file's front matter as written. Other keys (`color`,
/// `permissionMode`, `skills`, …) are accepted and ignored.
#[derive(Default, Deserialize)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    tools: Option<ToolList>,
    model: Option<String>,
}

/// `tools: Read, Grep` (Claude Code's form) or a YAML list.
#[derive(Deserialize)]
#[serde(untagged, expecting = "`tools` to be a comma-separated string or a list of names")]
pub(crate) enum ToolList {
    Text(String),
    List(Vec<String>),
}

/// What a file defines, before it is placed.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    name: String,
    description: String,
    tools: Option<Vec<String>>,
    model: Option<String>,
    prompt: String,
}

/// Parses the whole text of the file `STEM.md`: the agent, and the tool
/// names it lists that bosun does not know (kept; warned about).
fn parse(text: &str, stem: &str) -> Result<(Parsed, Vec<String>), String> {
    let (yaml, body) = front_matter::split(text, true)?;
    let raw: Raw = front_matter::parse_yaml(yaml)?;
    let name = raw.name.unwrap_or_else(|| stem.to_owned());
    check_name(&name)?;
    let description = collapse(raw.description.as_deref().unwrap_or_default());
    if description.is_empty() {
        return Err("its front matter has no `description`".to_owned());
    }
    let mut unknown = Vec::new();
    let tools = raw.tools.map(|list| tool_names(list, &mut unknown));
    let model = raw.model.map(|model| model.trim().to_owned()).filter(|model| !model.is_empty());
    let prompt = body.trim().to_owned();
    Ok((Parsed { name, description, tools, model, prompt }, unknown))
}

/// Agent names: 1 to [`MAX_NAME_CHARS`] of `a-z`, `0-9`, `-` and `_`, the
/// first a letter or digit (`[a-z0-9][a-z0-9_-]{0,63}`). ASCII only, so
/// no two names look alike.
fn check_name(name: &str) -> Result<(), String> {
    let first_ok = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let rest_ok =
        name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if first_ok && rest_ok && name.len() <= MAX_NAME_CHARS {
        return Ok(());
    }
    Err(format!(
        "its name `{}` is not 1 to {MAX_NAME_CHARS} of a-z, 0-9, `-` and `_` starting with a letter or digit",
        one_line(name)
    ))
}

/// The listed tools as bosun names, duplicates dropped; the names bosun
/// does not know go to `unknown` too.
pub(crate) fn tool_names(list: ToolList, unknown: &mut Vec<String>) -> Vec<String> {
    let written = match list {
        ToolList::Text(text) => text.split(',').map(str::to_owned).collect(),
        ToolList::List(items) => items,
    };
    let mut names: Vec<String> = Vec::new();
    for item in &written {
        let item = item.trim();
        // Claude Code's `Bash(git add:*)` grants a pattern; bosun grants
        // nothing by a list, so the pattern is the tool's name alone.
        let item =
            item.strip_suffix(')').and_then(|item| item.split_once('(')).map_or(item, |(name, _)| name);
        if item.is_empty() {
            continue;
        }
        let name = match bosun_tool_name(item) {
            Some(mapped) => mapped,
            None => {
                if !is_known(item) && !unknown.iter().any(|u| u == item) {
                    unknown.push(item.to_owned());
                }
                item
            }
        };
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// A bosun tool's name, or an MCP server's (`mcp__SERVER`) or its tool's
/// (`mcp__SERVER__TOOL`).
fn is_known(name: &str) -> bool {
    BOSUN_TOOLS.contains(&name) || name.strip_prefix("mcp__").is_some_and(|rest| !rest.is_empty())
}

/// The warning for unknown tool names, naming at most [`MAX_NAMED_UNKNOWN`].
pub(crate) fn unknown_tools(unknown: &[String]) -> String {
    let mut named: Vec<String> =
        unknown.iter().take(MAX_NAMED_UNKNOWN).map(|name| format!("`{}`", one_line(name))).collect();
    if unknown.len() > MAX_NAMED_UNKNOWN {
        named.push(format!("and {} more", unknown.len() - MAX_NAMED_UNKNOWN));
    }
    format!("tools bosun does not have, kept but matching nothing: {}", named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_chosen_pattern() {
        for good in ["code-reviewer", "a", "9lives", "test_runner", "x-", &"a".repeat(64)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "-x", "_x", "Code", "code reviewer", "ça", "a/b", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tool_lists_are_mapped_deduplicated_and_unknown_names_kept() {
        let mut unknown = Vec::new();
        let text = ToolList::Text(" Read, Edit,MultiEdit, , shell, mcp__gh__issues, WebFetch ".into());
        assert_eq!(
            tool_names(text, &mut unknown),
            ["read_file", "edit_file", "shell", "mcp__gh__issues", "WebFetch"]
        );
        assert_eq!(unknown, ["WebFetch"]);
        let mut unknown = Vec::new();
        let list = ToolList::List(vec!["Grep".into(), "search".into(), "mcp__".into()]);
        assert_eq!(tool_names(list, &mut unknown), ["search", "mcp__"]);
        assert_eq!(unknown, ["mcp__"]);
    }

    #[test]
    fn a_long_description_is_cut_on_a_character() {
        let long = "é".repeat(MAX_LISTED_DESCRIPTION_CHARS + 5);
        let listed = cut(&long);
        assert_eq!(listed.chars().count(), MAX_LISTED_DESCRIPTION_CHARS + 1);
        assert!(listed.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn an_empty_tools_value_is_no_list_and_an_empty_list_no_tools() {
        let parsed = |yaml: &str| parse(&format!("---\ndescription: d\n{yaml}\n---\nbody\n"), "a");
        assert_eq!(parsed("tools:").map(|(p, _)| p.tools), Ok(None));
        assert_eq!(parsed("tools: []").map(|(p, _)| p.tools), Ok(Some(vec![])));
        assert_eq!(parsed("tools: \"\"").map(|(p, _)| p.tools), Ok(Some(vec![])));
        assert_eq!(parsed("model: \"  \"").map(|(p, _)| p.model), Ok(None));
        assert!(parsed("tools: {a: 1}").is_err());
    }
}
