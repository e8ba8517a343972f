//! Agent Skills: folders holding a `SKILL.md` (YAML front matter with
//! `name` and `description`, then instructions) and any other files.
//!
//! Where, first found wins a name (docs/skills.md):
//! 1. the user's folder (the CLI passes `~/.config/bosun/skills`),
//! 2. the project's `.bosun/skills/`, then `.claude/skills/`, then
//!    `.agents/skills/`, at the workspace root.
//!
//! The user's come first, as in Claude Code: a repository cannot replace a
//! skill the user wrote by shipping one of the same name (invariant 20). A
//! skill that loses to one found earlier is listed in
//! [`Discovery::shadowed`].
//!
//! Progressive disclosure: [`Skills::prompt_section`] lists names and
//! descriptions for the system prompt (sorted by name, at most
//! [`MAX_PROMPT_BYTES`]); the `skill` tool ([`SkillTool`]) returns a
//! skill's instructions and the files of its folder; `read_file` reads
//! those files at `skill://NAME/PATH` (see `tool.rs`), and nothing else
//! outside the workspace.
//!
//! Every read is the file tools' kind (invariant 16): project folders
//! through the workspace's handle, the user's through a handle on their
//! folder, a skill's files through a handle on the skill's folder opened
//! beneath those; no symlink followed (a symlinked skill folder or
//! `SKILL.md` is skipped with a warning), regular files only, bounded reads.
//! A broken `SKILL.md` is a warning naming the file, never a failure.

pub(crate) mod front_matter;
mod tool;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_core::Tool;
use rustix::fs::{AtFlags, Dir, FileType};

use crate::limits::ToolLimits;
use crate::workspace::{RelPath, Workspace, WorkspaceError};

pub use front_matter::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};
pub use tool::{MAX_BODY_BYTES, MAX_LISTED_FILES, SKILL_SCHEME, SkillFiles, SkillTool};

/// The project's skill folders, in precedence order.
pub const PROJECT_DIRS: [&str; 3] = [".bosun/skills", ".claude/skills", ".agents/skills"];
/// Most bytes of a `SKILL.md` read to find its front matter.
pub const MAX_FRONT_MATTER_BYTES: usize = 16 * 1024;
/// Most entries read from one skills folder; more are named in a warning.
pub const MAX_ENTRIES_PER_DIR: usize = 200;
/// Most bytes of the system prompt's skill list.
pub const MAX_PROMPT_BYTES: usize = 8 * 1024;

/// Where a skill was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkillOrigin {
    /// The user's own folder.
    User,
    /// One of [`PROJECT_DIRS`] in the workspace.
    Project(&'static str),
}

impl fmt::Display for SkillOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("the user's skills"),
            Self::Project(dir) => write!(f, "the project's {dir}"),
        }
    }
}

/// One skill found.
#[derive(Clone)]
pub struct Skill {
    name: String,
    description: String,
    origin: SkillOrigin,
    /// The handle its folder is opened beneath when used: the workspace, or
    /// the user's skills folder.
    base: Workspace,
    /// Its folder beneath `base`.
    folder: RelPath,
}

impl fmt::Debug for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skill").field("name", &self.name).field("origin", &self.origin).finish()
    }
}

impl Skill {
    /// Its name (its folder's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description, on one line.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where it was found.
    pub fn origin(&self) -> SkillOrigin {
        self.origin
    }

    /// Its folder on disk.
    pub fn path(&self) -> PathBuf {
        self.base.root_path().join(self.folder.as_string())
    }

    /// Its folder opened as a root of its own (no symlink followed on the
    /// way), for one call.
    pub(crate) fn open(&self) -> Result<Workspace, WorkspaceError> {
        self.base.subdir(&self.folder)
    }
}

/// The skills of a session, by name. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Skills(Arc<BTreeMap<String, Skill>>);

impl Skills {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.0.get(name)
    }

    /// Every skill, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.0.values()
    }

    /// The system prompt's section: each name and description in name
    /// order (so the prompt is the same bytes from run to run), at most
    /// [`MAX_PROMPT_BYTES`]; skills past that are counted, not listed (the
    /// tool still loads them by name). `None` when there are no skills.
    pub fn prompt_section(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let head = format!(
            "\n\n<skills>\nSkills are instructions for particular tasks, loaded when needed. When a task matches a \
             skill's description, call the `skill` tool with its name first and follow what it returns; read \
             the files of a skill with read_file at `{SKILL_SCHEME}NAME/PATH`.\n"
        );
        let tail = "</skills>";
        // Room for the note on skills left out.
        let budget = MAX_PROMPT_BYTES.saturating_sub(head.len() + tail.len() + 80);
        let mut list = String::new();
        let mut left_out = 0;
        for skill in self.iter() {
            let line = format!("- {}: {}\n", skill.name, skill.description);
            if left_out > 0 || list.len() + line.len() > budget {
                left_out += 1;
                continue;
            }
            list.push_str(&line);
        }
        if left_out > 0 {
            list.push_str(&format!("({left_out} more skills not listed for space)\n"));
        }
        Some(format!("{head}{list}{tail}"))
    }
}

/// `tools` offering `skills`: `read_file` (full or brief) wrapped in
/// [`SkillFiles`], and the [`SkillTool`] added last. Unchanged when there
/// are no skills.
pub fn attach(tools: Vec<Arc<dyn Tool>>, skills: Skills, limits: ToolLimits) -> Vec<Arc<dyn Tool>> {
    if skills.is_empty() {
        return tools;
    }
    let mut tools: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .map(|tool| match tool.definition().name.as_str() {
            "read_file" => Arc::new(SkillFiles::new(tool, skills.clone(), limits)) as Arc<dyn Tool>,
            _ => tool,
        })
        .collect();
    tools.push(Arc::new(SkillTool::new(skills)));
    tools
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The skills that apply.
    pub skills: Skills,
    /// Skills that lost to one of the same name found first: the loser's
    /// folder, and where the winner came from.
    pub shadowed: Vec<(PathBuf, SkillOrigin)>,
    /// What was skipped and why, each naming its file or folder.
    pub warnings: Vec<String>,
}

/// Finds the skills in the user's folders `user` (those present, in order)
/// and in the project folders of `project` (when given), in that order.
/// Never fails: whatever cannot be used is a warning.
pub fn discover(project: Option<&Workspace>, user: &[PathBuf]) -> Discovery {
    let mut found = Discovery::default();
    let mut skills = BTreeMap::new();
    for dir in user {
        match std::fs::symlink_metadata(dir) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            // The user's own path: a symlink they made to it is theirs to follow.
            _ => match Workspace::open(dir) {
                Ok(base) => scan(&base, &RelPath::root(), SkillOrigin::User, &mut skills, &mut found),
                Err(error) => found.warnings.push(format!("skills in {} not read: {error}", dir.display())),
            },
        }
    }
    if let Some(workspace) = project {
        for dir in PROJECT_DIRS {
            let Ok(path) = RelPath::parse(dir) else { continue };
            scan(workspace, &path, SkillOrigin::Project(dir), &mut skills, &mut found);
        }
    }
    found.skills = Skills(Arc::new(skills));
    found
}

/// Adds the skills of the folder `dir` beneath `base`.
fn scan(
    base: &Workspace,
    dir: &RelPath,
    origin: SkillOrigin,
    skills: &mut BTreeMap<String, Skill>,
    found: &mut Discovery,
) {
    let shown = |rel: &str| base.root_path().join(rel).display().to_string();
    let entries = match folders(base, dir) {
        Ok(entries) => entries,
        Err(WorkspaceError::NotFound { .. }) => return,
        Err(WorkspaceError::Symlink { at, .. }) => {
            found.warnings.push(format!("{}: a symlink, not followed; its skills not read", shown(&at)));
            return;
        }
        Err(error) => {
            found.warnings.push(format!("skills in {} not read: {error}", shown(&dir.as_string())));
            return;
        }
    };
    if entries.more {
        found.warnings.push(format!(
            "{} holds more than {MAX_ENTRIES_PER_DIR} entries; only the first {MAX_ENTRIES_PER_DIR} were read",
            shown(&dir.as_string())
        ));
    }
    for (name, kind) in entries.names {
        let rel = dir.join(&name);
        match kind {
            FileType::Directory => {}
            FileType::Symlink => {
                found
                    .warnings
                    .push(format!("{}: a symlinked skill folder, not followed; skipped", shown(&rel)));
                continue;
            }
            // Loose files (a README) are not skills.
            _ => continue,
        }
        let Ok(folder) = RelPath::parse(&rel) else { continue };
        let skill_md = format!("{rel}/SKILL.md");
        let front = match read_front(base, &folder) {
            Ok(Some(front)) => front,
            Ok(None) => {
                found.warnings.push(format!("{}: no SKILL.md; not a skill", shown(&rel)));
                continue;
            }
            Err(why) => {
                found.warnings.push(format!("{}: {why}; skipped", shown(&skill_md)));
                continue;
            }
        };
        let skill = Skill {
            name: front.name,
            description: front_matter::collapse(&front.description),
            origin,
            base: base.clone(),
            folder,
        };
        match skills.get(&skill.name) {
            Some(winner) => found.shadowed.push((skill.path(), winner.origin)),
            None => {
                skills.insert(skill.name.clone(), skill);
            }
        }
    }
}

/// The entries of a skills (or agents) folder, sorted by name.
pub(crate) struct Folders {
    pub(crate) names: Vec<(String, FileType)>,
    pub(crate) more: bool,
}

/// Reads at most [`MAX_ENTRIES_PER_DIR`] entries of `dir` through `base`'s
/// handle, with their types as they are (never followed). Hidden names and
/// names that are not UTF-8 are passed over. Unlike a walk, ignore files do
/// not apply: a skill is found whether or not git tracks it.
pub(crate) fn folders(base: &Workspace, dir: &RelPath) -> Result<Folders, WorkspaceError> {
    let fd = base.open_dir(dir, false)?;
    let mut reader = Dir::read_from(&fd).map_err(|e| WorkspaceError::io(dir, "read the directory", e))?;
    let mut names = Vec::new();
    let mut more = false;
    while let Some(entry) = reader.read() {
        let entry = entry.map_err(|e| WorkspaceError::io(dir, "read the directory", e))?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        if names.len() >= MAX_ENTRIES_PER_DIR {
            more = true;
            break;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|s| FileType::from_raw_mode(s.st_mode))
                .unwrap_or(FileType::Unknown),
            known => known,
        };
        names.push((name.to_owned(), kind));
    }
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Folders { names, more })
}

/// The checked front matter of `folder/SKILL.md`; `None` when it has none.
fn read_front(base: &Workspace, folder: &RelPath) -> Result<Option<front_matter::FrontMatter>, String> {
    let path = RelPath::parse(&folder.join("SKILL.md")).map_err(|e| e.to_string())?;
    let (file, _) = match base.open_file(&path) {
        Ok(opened) => opened,
        Err(WorkspaceError::NotFound { .. }) => return Ok(None),
        Err(WorkspaceError::Symlink { .. }) => return Err("a symlink, not followed".to_owned()),
        Err(error) => return Err(error.to_string()),
    };
    let (text, complete) = read_text(file, MAX_FRONT_MATTER_BYTES)?;
    let folder_name = folder.components().last().map_or("", String::as_str);
    front_matter::parse(&text, complete, folder_name).map(Some)
}

/// The text of the file `file` beneath `base` (an agent's or a command's
/// Markdown): a regular file, not a symlink, at most `limit` bytes.
pub(crate) fn read_file(base: &Workspace, file: &RelPath, limit: usize) -> Result<String, String> {
    let (handle, stat) = base.open_file(file).map_err(|error| match error {
        WorkspaceError::Symlink { .. } => "a symlink, not followed".to_owned(),
        other => other.to_string(),
    })?;
    let size = u64::try_from(stat.st_size).unwrap_or_default();
    if size > limit as u64 {
        return Err(format!("it is {size} bytes, over the {} KiB limit", limit / 1024));
    }
    // Bounded again: the file may grow while it is read.
    match read_text(handle, limit)? {
        (text, true) => Ok(text),
        (_, false) => Err(format!("it is over the {} KiB limit", limit / 1024)),
    }
}

/// At most `limit` bytes of `file` as text, and whether that was all of it.
/// A character cut by the limit is dropped; other bad UTF-8 is an error.
pub(crate) fn read_text(file: impl Read, limit: usize) -> Result<(String, bool), String> {
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot be read: {e}"))?;
    let complete = bytes.len() <= limit;
    bytes.truncate(limit);
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, complete)),
        Err(error) if !complete && error.utf8_error().error_len().is_none() => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            Ok((String::from_utf8(bytes).unwrap_or_default(), false))
        }
        Err(_) => Err("not UTF-8 text".to_owned()),
    }
}
