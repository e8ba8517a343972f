//! Custom slash commands: Markdown files, `NAME.md`, in the form Claude
//! Code reads from `.claude/commands/`: an optional YAML front matter
//! (`description`, `argument-hint`, `allowed-tools`, `model`), then a body
//! that becomes the prompt when the person types `/NAME ARGS`, with
//! `$ARGUMENTS` (and `$1` … `$9`) standing for what they typed after it.
//!
//! Where, first found wins a name (docs/interactive.md):
//! 1. the user's folders, in the order given (the CLI passes
//!    `~/.config/bosun/commands`, then `~/.claude/commands`),
//! 2. the project's `.bosun/commands/`, then `.claude/commands/`, at the
//!    workspace root; the caller passes the project only when it is trusted.
//!
//! The user's come first: a repository cannot replace a command the user
//! wrote by shipping one of the same name (invariant 20). A file in a
//! subfolder is namespaced by it: `frontend/test.md` is `/frontend:test`;
//! deeper folders are passed over.
//!
//! Read as agents are (the same folder reader, bounds and warnings; no
//! symlink followed). `allowed-tools` only narrows the turn's tools; a
//! command file grants nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::FileType;
use serde::Deserialize;

use crate::agents::{ToolList, tool_names, unknown_tools};
use crate::skills;
use crate::skills::front_matter::{self, collapse, one_line};
use crate::workspace::{RelPath, Workspace, WorkspaceError};

/// The project's command folders, in precedence order.
pub const PROJECT_DIRS: [&str; 2] = [".bosun/commands", ".claude/commands"];
/// Largest command file read; a larger one is skipped with a warning.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Longest name part (a file's stem or a subfolder's name), in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Most characters of a description taken from a body's first line.
const MAX_DERIVED_DESCRIPTION_CHARS: usize = 80;

/// Where a command was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandOrigin {
    /// One of the user's own folders.
    User,
    /// One of [`PROJECT_DIRS`] in the workspace.
    Project(&'static str),
}

impl fmt::Display for CommandOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("user"),
            Self::Project(_) => f.write_str("project"),
        }
    }
}

/// One custom command, as its file defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CustomCommand {
    name: String,
    description: String,
    argument_hint: Option<String>,
    tools: Option<Vec<String>>,
    model: Option<String>,
    body: String,
    origin: CommandOrigin,
    path: PathBuf,
}

impl CustomCommand {
    /// Its name, as typed after `/`: the file's stem, after `FOLDER:` for a
    /// file in a subfolder.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description: the front matter's, else the body's first line.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Its `argument-hint`, as written (`[file] [message]`).
    pub fn argument_hint(&self) -> Option<&str> {
        self.argument_hint.as_deref()
    }

    /// The tools its turn may use, as bosun names: `None` when the file has
    /// no `allowed-tools` (the session's tools), else a strict boundary.
    pub fn tools(&self) -> Option<&[String]> {
        self.tools.as_deref()
    }

    /// Its `model`, as written: the caller interprets it.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Where it was found.
    pub fn origin(&self) -> CommandOrigin {
        self.origin
    }

    /// Its file on disk, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The prompt for `/NAME arguments`: the body with `$ARGUMENTS` made
    /// `arguments` (trimmed) and `$1` … `$9` its words (a quoted phrase is
    /// one word; a missing word is empty). A body that names neither and is
    /// given arguments gets them after a blank line, as Claude Code does,
    /// so that what was typed is never dropped.
    pub fn expand(&self, arguments: &str) -> String {
        let arguments = arguments.trim();
        let words = shlex::split(arguments)
            .unwrap_or_else(|| arguments.split_whitespace().map(str::to_owned).collect());
        let mut out = String::with_capacity(self.body.len() + arguments.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(arguments);
                used = true;
                rest = tail;
            } else if let Some(digit) = after.bytes().next().filter(|b| (b'1'..=b'9').contains(b)) {
                let index = usize::from(digit - b'1');
                out.push_str(words.get(index).map_or("", String::as_str));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        if !used && !arguments.is_empty() {
            out = format!("{}\n\n{arguments}", out.trim_end());
        }
        out
    }
}

/// The custom commands of a conversation, by name. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Commands(Arc<BTreeMap<String, CustomCommand>>);

impl Commands {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The command named `name`.
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.0.get(name)
    }

    /// Every command, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &CustomCommand> {
        self.0.values()
    }
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct CommandDiscovery {
    /// The commands that apply.
    pub commands: Commands,
    /// What was skipped or is doubtful, and why, each naming its file or
    /// folder.
    pub warnings: Vec<String>,
}

/// Finds the commands in the user's folders `user` (those present) and in
/// the project folders of `project` (when given), in that order. Names in
/// `reserved` (the built-in commands) are not taken: such a file is a
/// warning. Never fails: whatever cannot be used is a warning.
pub fn discover(project: Option<&Workspace>, user: &[PathBuf], reserved: &[&str]) -> CommandDiscovery {
    let mut found = CommandDiscovery::default();
    let mut commands = BTreeMap::new();
    let mut scan = Scan { commands: &mut commands, found: &mut found, reserved };
    for dir in user {
        match std::fs::symlink_metadata(dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            // The user's own path: a symlink they made to it is theirs to follow.
            _ => match Workspace::open(dir) {
                Ok(base) => scan.folder(&base, &RelPath::root(), CommandOrigin::User, None),
                Err(error) => {
                    scan.found.warnings.push(format!("commands in {} not read: {error}", dir.display()))
                }
            },
        }
    }
    if let Some(workspace) = project {
        for dir in PROJECT_DIRS {
            let Ok(path) = RelPath::parse(dir) else { continue };
            scan.folder(workspace, &path, CommandOrigin::Project(dir), None);
        }
    }
    found.commands = Commands(Arc::new(commands));
    found
}

struct Scan<'a> {
    commands: &'a mut BTreeMap<String, CustomCommand>,
    found: &'a mut CommandDiscovery,
    reserved: &'a [&'a str],
}

impl Scan<'_> {
    /// Adds the commands of the folder `dir` beneath `base`; `namespace` is
    /// the subfolder's name when `dir` is one.
    fn folder(&mut self, base: &Workspace, dir: &RelPath, origin: CommandOrigin, namespace: Option<&str>) {
        let shown = |rel: &str| base.root_path().join(rel);
        let entries = match skills::folders(base, dir) {
            Ok(entries) => entries,
            Err(WorkspaceError::NotFound { .. }) => return,
            Err(WorkspaceError::Symlink { at, .. }) => {
                let at = shown(&at);
                self.warn(format!("{}: a symlink, not followed; its commands not read", at.display()));
                return;
            }
            Err(error) => {
                self.warn(format!("commands in {} not read: {error}", shown(&dir.as_string()).display()));
                return;
            }
        };
        if entries.more {
            self.warn(format!(
                "{} holds more than {} entries; only the first were read",
                shown(&dir.as_string()).display(),
                skills::MAX_ENTRIES_PER_DIR
            ));
        }
        for (file_name, kind) in entries.names {
            let rel = dir.join(&file_name);
            let path = shown(&rel);
            match kind {
                FileType::RegularFile | FileType::Unknown => {}
                FileType::Directory if namespace.is_none() => {
                    match (check_name(&file_name), RelPath::parse(&rel)) {
                        (Ok(()), Ok(sub)) => self.folder(base, &sub, origin, Some(&file_name)),
                        (Err(why), _) => {
                            self.warn(format!("{}: {why}; its commands not read", path.display()))
                        }
                        (_, Err(error)) => self.warn(format!("{}: {error}; skipped", path.display())),
                    }
                    continue;
                }
                // Deeper folders are not commands.
                FileType::Directory => continue,
                FileType::Symlink => {
                    self.warn(format!("{}: a symlink, not followed; skipped", path.display()));
                    continue;
                }
                _ => {
                    self.warn(format!("{}: not a regular file; skipped", path.display()));
                    continue;
                }
            }
            let Some(stem) = file_name.strip_suffix(".md") else { continue };
            if let Err(why) = check_name(stem) {
                self.warn(format!("{}: {why}; skipped", path.display()));
                continue;
            }
            let name = namespace.map_or_else(|| stem.to_owned(), |space| format!("{space}:{stem}"));
            if self.reserved.contains(&name.as_str()) {
                self.warn(format!(
                    "{}: `/{name}` is a built-in command, which is kept; skipped",
                    path.display()
                ));
                continue;
            }
            if let Some(winner) = self.commands.get(&name) {
                self.warn(format!(
                    "{}: `/{name}` is also defined by {}, which is kept",
                    path.display(),
                    winner.path.display()
                ));
                continue;
            }
            let parsed = RelPath::parse(&rel)
                .map_err(|error| error.to_string())
                .and_then(|file| skills::read_file(base, &file, MAX_FILE_BYTES))
                .and_then(|text| parse(&text));
            let (parsed, unknown) = match parsed {
                Ok(parsed) => parsed,
                Err(why) => {
                    self.warn(format!("{}: {why}; skipped", path.display()));
                    continue;
                }
            };
            if !unknown.is_empty() {
                self.warn(format!("{}: {}", path.display(), unknown_tools(&unknown)));
            }
            let Parsed { description, argument_hint, tools, model, body } = parsed;
            let command =
                CustomCommand { name, description, argument_hint, tools, model, body, origin, path };
            self.commands.insert(command.name.clone(), command);
        }
    }

    fn warn(&mut self, warning: String) {
        self.found.warnings.push(warning);
    }
}

/// A command file's front matter as written. Other keys are accepted and
/// ignored.
#[derive(Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Raw {
    description: Option<String>,
    argument_hint: Option<Hint>,
    allowed_tools: Option<ToolList>,
    model: Option<String>,
}

/// `argument-hint: [message]` is a YAML list of one; shown as written.
#[derive(Deserialize)]
#[serde(untagged, expecting = "`argument-hint` to be text")]
enum Hint {
    Text(String),
    List(Vec<String>),
}

impl Hint {
    fn shown(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::List(items) => items.iter().map(|item| format!("[{item}]")).collect::<Vec<_>>().join(" "),
        }
    }
}

/// What a file defines, before it is named and placed.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    description: String,
    argument_hint: Option<String>,
    tools: Option<Vec<String>>,
    model: Option<String>,
    body: String,
}

/// Parses the whole text of a command file: the command, and the tool names
/// it lists that bosun does not know (kept; warned about). The front matter
/// is optional: a file that does not open with `---` is all body.
fn parse(text: &str) -> Result<(Parsed, Vec<String>), String> {
    let opens_with_front_matter = text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .next()
        .is_some_and(|line| line.trim_end() == "---");
    let (raw, body) = if opens_with_front_matter {
        let (yaml, body) = front_matter::split(text, true)?;
        // Claude Code's own examples are not always YAML
        // (`argument-hint: [pr] [priority]`): lines of `key: value` then.
        let raw = front_matter::parse_yaml::<Raw>(yaml).or_else(|error| plain_lines(yaml).ok_or(error))?;
        (raw, body)
    } else {
        (Raw::default(), text)
    };
    let body = body.trim().to_owned();
    if body.is_empty() {
        return Err("it has no prompt after its front matter".to_owned());
    }
    let description = match raw.description.as_deref().map(collapse).filter(|d| !d.is_empty()) {
        Some(description) => description,
        None => derived_description(&body),
    };
    let mut unknown = Vec::new();
    let tools = raw.allowed_tools.map(|list| tool_names(list, &mut unknown));
    let clean = |value: Option<String>| value.map(|v| collapse(&v)).filter(|v| !v.is_empty());
    Ok((
        Parsed {
            description,
            argument_hint: clean(raw.argument_hint.map(Hint::shown)),
            tools,
            model: clean(raw.model),
            body,
        },
        unknown,
    ))
}

/// Front matter read as `key: value` lines (a value as written, outer
/// quotes dropped), for one that is not YAML; `None` when a line is neither
/// that, a `- item` under `allowed-tools:`, nor blank or a comment.
fn plain_lines(yaml: &str) -> Option<Raw> {
    let mut raw = Raw::default();
    let mut listing_tools = false;
    for line in yaml.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ").filter(|_| listing_tools && line.starts_with(' ')) {
            if let Some(ToolList::List(items)) = &mut raw.allowed_tools {
                items.push(unquoted(item));
            }
            continue;
        }
        let (key, value) = line.split_once(':')?;
        let value = unquoted(value);
        listing_tools = key == "allowed-tools" && value.is_empty();
        match key {
            "description" => raw.description = Some(value),
            "argument-hint" => raw.argument_hint = Some(Hint::Text(value)),
            "model" => raw.model = Some(value),
            "allowed-tools" if listing_tools => raw.allowed_tools = Some(ToolList::List(Vec::new())),
            "allowed-tools" => raw.allowed_tools = Some(ToolList::Text(value)),
            _ => {}
        }
    }
    Some(raw)
}

/// `value` trimmed, without one pair of surrounding quotes.
fn unquoted(value: &str) -> String {
    let value = value.trim();
    let inner = ['"', '\''].iter().find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q));
    inner.unwrap_or(value).to_owned()
}

/// A description from the body's first non-empty line, Markdown heading
/// marks dropped, cut to [`MAX_DERIVED_DESCRIPTION_CHARS`].
fn derived_description(body: &str) -> String {
    let line = body.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
    let line = collapse(line.trim_start_matches('#'));
    match line.char_indices().nth(MAX_DERIVED_DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", line[..at].trim_end()),
        None => line,
    }
}

/// Command names (and namespace folders): 1 to [`MAX_NAME_CHARS`] of ASCII
/// letters, digits, `-` and `_`, the first a letter or digit. Typed after
/// `/`, so no spaces, and nothing that looks like another character.
fn check_name(name: &str) -> Result<(), String> {
    let first_ok = name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric());
    let rest_ok = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if first_ok && rest_ok && name.len() <= MAX_NAME_CHARS {
        return Ok(());
    }
    Err(format!(
        "`{}` is not a command name (1 to {MAX_NAME_CHARS} of letters, digits, `-` and `_`)",
        one_line(name)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str) -> CustomCommand {
        CustomCommand {
            name: "c".into(),
            description: String::new(),
            argument_hint: None,
            tools: None,
            model: None,
            body: body.into(),
            origin: CommandOrigin::User,
            path: PathBuf::new(),
        }
    }

    #[test]
    fn arguments_fill_their_places() {
        let fix = command("Fix issue #$1 with priority $2: $ARGUMENTS. Cost $5, not $x.");
        assert_eq!(fix.expand(" 123 high "), "Fix issue #123 with priority high: 123 high. Cost , not $x.");
        let quoted = command("Title: $1; body: $2");
        assert_eq!(quoted.expand(r#""two words" rest"#), "Title: two words; body: rest");
    }

    #[test]
    fn arguments_a_body_does_not_name_are_appended_not_dropped() {
        assert_eq!(
            command("Review the diff.\n").expand("focus on errors"),
            "Review the diff.\n\nfocus on errors"
        );
        assert_eq!(command("Review the diff.").expand("  "), "Review the diff.");
    }

    #[test]
    fn front_matter_is_optional_and_a_description_is_derived() {
        let (parsed, _) = parse("# Run the tests\n\nThen fix what fails.").unwrap();
        assert_eq!(parsed.description, "Run the tests");
        assert_eq!(parsed.tools, None);
        let (parsed, unknown) = parse(
            "---\ndescription: Commit\nargument-hint: [message]\nallowed-tools: Bash(git add:*), Read, WebFetch\n\
             model: m1\n---\nCommit with $ARGUMENTS\n",
        )
        .unwrap();
        assert_eq!(parsed.description, "Commit");
        assert_eq!(parsed.argument_hint.as_deref(), Some("[message]"));
        assert_eq!(parsed.tools, Some(vec!["shell".into(), "read_file".into(), "WebFetch".into()]));
        assert_eq!(unknown, ["WebFetch"]);
        assert_eq!(parsed.model.as_deref(), Some("m1"));
        assert!(parse("---\ndescription: d\n---\n  \n").is_err());
        assert!(parse("---\n  description\n---\nbody").is_err());
    }

    #[test]
    fn front_matter_as_claude_codes_examples_write_it_is_read() {
        let (parsed, _) =
            parse("---\nargument-hint: [pr-number] [priority]\ndescription: Review a PR\n---\nReview $1")
                .unwrap();
        assert_eq!(parsed.argument_hint.as_deref(), Some("[pr-number] [priority]"));
        assert_eq!(parsed.description, "Review a PR");
        let (parsed, _) = parse("---\nargument-hint: [message]\n---\nCommit: $ARGUMENTS").unwrap();
        assert_eq!(parsed.argument_hint.as_deref(), Some("[message]"));
        let (parsed, _) =
            parse("---\ndescription: 'x: y' [z]\nallowed-tools:\n  - Read\n  - \"Grep\"\n---\nGo").unwrap();
        assert_eq!(parsed.description, "'x: y' [z]");
        assert_eq!(parsed.tools, Some(vec!["read_file".into(), "search".into()]));
    }

    #[test]
    fn names_are_letters_digits_dashes_and_underscores() {
        for good in ["review", "fix-issue", "Test_2", &"a".repeat(64)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "-x", "a b", "a:b", "ça", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
