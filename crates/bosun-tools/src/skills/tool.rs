//! The `skill` tool ([`SkillTool`]): a skill's instructions and the files of
//! its folder; and `read_file` reaching those files ([`SkillFiles`]).
//!
//! Addressing: a skill's file is `skill://NAME/PATH`, PATH relative to the
//! skill's folder (`skill://NAME/` alone is its `SKILL.md`). `read_file`
//! takes such a path before any workspace path, and reads it beneath a
//! handle on that one folder, opened for the call: no symlink followed, no
//! `..` out, regular files only, the workspace's size and output bounds.
//! Only reads: no other tool is given these handles. (`skill://…` cannot
//! name a workspace file: a workspace directory called `skill:` is still
//! reached as `skill:/…`, with one slash.)

use std::sync::Arc;

use bosun_core::{
    CallEffects, CancellationPolicy, ContentPart, RetryPolicy, Tool, ToolCategory, ToolContext,
    ToolDefinition, ToolFuture, ToolOutput,
};
use serde_json::{Value, json};

use super::{MAX_FRONT_MATTER_BYTES, Skill, SkillOrigin, Skills, front_matter, read_text};
use crate::common::{Ledger, Shared, blocking, parse_args};
use crate::limits::ToolLimits;
use crate::workspace::{EntryKind, Flow, RelPath, Workspace, WorkspaceError};

/// How `read_file` paths name a skill's files: `skill://NAME/PATH`.
pub const SKILL_SCHEME: &str = "skill://";
/// Most bytes of instructions the `skill` tool returns; the rest is read
/// with `read_file`.
pub const MAX_BODY_BYTES: usize = 32 * 1024;
/// Most files of a skill's folder listed.
pub const MAX_LISTED_FILES: usize = 200;
/// How deep the listing goes below the skill's folder.
const MAX_LIST_DEPTH: usize = 6;

/// `skill {name}`: loads one skill.
#[derive(Debug)]
pub struct SkillTool {
    skills: Skills,
    definition: ToolDefinition,
}

impl SkillTool {
    /// The tool over `skills`. Its definition names no skill, so adding or
    /// changing a skill leaves the session's authority as it was.
    pub fn new(skills: Skills) -> Self {
        let definition = ToolDefinition::new(
            "skill",
            "Load a skill listed under <skills> in the system prompt: returns its instructions and the files in \
             its folder. Call it when a task matches a skill's description, before doing the task.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 64,
                        "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "description": "The skill's name, as listed"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        );
        Self { skills, definition }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

impl Tool for SkillTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        let skills = self.skills.clone();
        Box::pin(async move {
            let args: Args = match parse_args("skill", arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            blocking(move || load(&skills, &args.name)).await
        })
    }
}

/// The refusal of a name that is no skill, naming some that are.
fn unknown(skills: &Skills, name: &str) -> ToolOutput {
    let names: Vec<&str> = skills.iter().take(50).map(Skill::name).collect();
    let more = if skills.iter().count() > names.len() { ", …" } else { "" };
    ToolOutput::error(format!(
        "no skill is named `{}`; the skills are: {}{more}",
        front_matter::one_line(name),
        names.join(", ")
    ))
}

fn load(skills: &Skills, name: &str) -> ToolOutput {
    let Some(skill) = skills.get(name) else { return unknown(skills, name) };
    let root = match skill.open() {
        Ok(root) => root,
        Err(error) => return ToolOutput::error(format!("skill `{name}` cannot be opened: {error}")),
    };
    let skill_md = RelPath::parse("SKILL.md").unwrap_or_else(|_| RelPath::root());
    let text = root
        .open_file(&skill_md)
        .map_err(|e| e.to_string())
        .and_then(|(file, _)| read_text(file, MAX_FRONT_MATTER_BYTES + MAX_BODY_BYTES));
    let (text, complete) = match text {
        Ok(read) => read,
        Err(why) => return ToolOutput::error(format!("skill `{name}`: its SKILL.md cannot be read: {why}")),
    };
    let body = front_matter::body(&text);
    let kept = if complete && body.len() <= MAX_BODY_BYTES { body } else { cut(body, MAX_BODY_BYTES) };
    let mut out = format!("<skill name=\"{name}\">\n");
    out.push_str(&match skill.origin() {
        SkillOrigin::Project(_) => format!(
            "From {}; its folder is `{}` in the workspace.\n\n",
            skill.origin(),
            skill.folder.as_string()
        ),
        SkillOrigin::User => format!(
            "From {}; its folder is {}, outside the workspace.\n\n",
            skill.origin(),
            skill.path().display()
        ),
    });
    out.push_str(kept.trim());
    out.push('\n');
    if kept.len() < body.len() || !complete {
        let end = text.len() - body.len() + kept.len();
        let next = text[..end].lines().count() + 1;
        out.push_str(&format!(
            "[instructions cut at {} KiB: read the rest with read_file at `{SKILL_SCHEME}{name}/SKILL.md`, \
             offset {next}]\n",
            MAX_BODY_BYTES / 1024
        ));
    }
    out.push_str("</skill>\n\n");
    out.push_str(&format!(
        "Files in the skill's folder (paths in its instructions are relative to it); read one with read_file \
         at `{SKILL_SCHEME}{name}/PATH`:\n"
    ));
    out.push_str(&listing(&root, name));
    ToolOutput::text(out)
}

/// `text` up to `max` bytes, ending at a line end where there is one.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(at) => &text[..=at],
        None => &text[..end],
    }
}

/// The files of the skill's folder, one address a line, bounded.
fn listing(root: &Workspace, name: &str) -> String {
    let mut out = String::new();
    let mut listed = 0;
    let mut more = false;
    let walked = root.walk(&RelPath::root(), MAX_LIST_DEPTH, &mut |entry| {
        let note = match entry.kind {
            EntryKind::File => "",
            EntryKind::Symlink => " (a symlink: not followed, cannot be read)",
            EntryKind::Other => " (not a regular file)",
            EntryKind::Dir => return Flow::Continue,
        };
        if listed == MAX_LISTED_FILES {
            more = true;
            return Flow::Stop;
        }
        listed += 1;
        out.push_str(&format!("{SKILL_SCHEME}{name}/{}{note}\n", entry.path));
        Flow::Continue
    });
    if let Err(error) = walked {
        out.push_str(&format!("(the folder cannot be listed: {error})\n"));
    }
    if more {
        out.push_str(&format!("[more files; only the first {MAX_LISTED_FILES} are listed]\n"));
    }
    out
}

/// `read_file` that also reads a skill's files at `skill://NAME/PATH`; any
/// other path goes to the tool it wraps, unchanged. Its definition is the
/// wrapped tool's, so the session's authority is the same with or without
/// skills.
pub struct SkillFiles {
    inner: Arc<dyn Tool>,
    skills: Skills,
    limits: ToolLimits,
}

impl std::fmt::Debug for SkillFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillFiles").field("tool", &self.inner.definition().name).finish()
    }
}

impl SkillFiles {
    /// `read_file` (`inner`, full or brief) reaching `skills`' files too,
    /// within `limits`.
    pub fn new(inner: Arc<dyn Tool>, skills: Skills, limits: ToolLimits) -> Self {
        Self { inner, skills, limits }
    }
}

impl Tool for SkillFiles {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    fn category(&self) -> ToolCategory {
        self.inner.category()
    }

    fn cancellation(&self) -> CancellationPolicy {
        self.inner.cancellation()
    }

    fn retry(&self) -> RetryPolicy {
        self.inner.retry()
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        self.inner.effects(arguments)
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        let in_skill =
            arguments.get("path").and_then(Value::as_str).is_some_and(|p| p.starts_with(SKILL_SCHEME));
        if !in_skill {
            return self.inner.execute(arguments, context);
        }
        let (skills, limits) = (self.skills.clone(), self.limits);
        Box::pin(async move {
            let args: crate::read::Args = match parse_args("read_file", arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            blocking(move || read_skill_file(&skills, limits, args)).await
        })
    }
}

/// One `read_file` of `skill://NAME/PATH`.
fn read_skill_file(skills: &Skills, limits: ToolLimits, mut args: crate::read::Args) -> ToolOutput {
    let address = args.path.clone();
    let rest = address.strip_prefix(SKILL_SCHEME).unwrap_or_default();
    let (name, file) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(skill) = skills.get(name) else { return unknown(skills, name) };
    let file = if file.is_empty() { "SKILL.md" } else { file };
    match RelPath::parse(file) {
        Ok(_) => {}
        Err(WorkspaceError::Escapes { .. } | WorkspaceError::Absolute { .. }) => {
            return ToolOutput::error(format!(
                "`{}` leaves the skill's folder; a skill's paths are relative to it",
                front_matter::one_line(&address)
            ));
        }
        Err(error) => return ToolOutput::error(format!("skill `{name}`: {error}")),
    }
    let root = match skill.open() {
        Ok(root) => root,
        Err(error) => return ToolOutput::error(format!("skill `{name}` cannot be opened: {error}")),
    };
    let shared = Shared { workspace: root, limits, ledger: Ledger::default(), access: None };
    args.path = file.to_owned();
    let mut output = crate::read::read(&shared, &args);
    if output.is_error
        && let Some(ContentPart::Text { text }) = output.content.first_mut()
    {
        *text = format!("skill `{name}`: {text}");
    }
    output
}
