//! Project trust (invariant 20): a repository's `.bosun/config.toml` is
//! written by whoever wrote the repository. Until the user trusts the
//! project (`bosun trust`, recorded in the user's own config as
//! `[projects."/abs/path"] trust_level = "trusted"`, the form Codex uses),
//! its config may only narrow: a stricter mode, more deny and ask rules,
//! fewer tools, lower limits. Everything else it sets is ignored and named.
//! Even a trusted project's rules are marked as the project's, so they never
//! allow a protected path, and its base URL never receives a key unless the
//! user's config lists the host in `allowed_key_hosts`.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use bosun_core::Mode;

use super::layer::{Answer, Layer, Prefixes, ToolRule, TrustLevel};

/// Largest project config read; a bigger one is refused unread.
const MAX_PROJECT_FILE_BYTES: u64 = 1024 * 1024;

/// What bosun made of the project's config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectConfig {
    /// The file.
    pub file: PathBuf,
    /// The project directory it configures (the one holding `.bosun/`).
    pub dir: PathBuf,
    /// Whether the user trusts it.
    pub trusted: bool,
    /// Keys it set that were not applied, by name.
    pub ignored: Vec<String>,
}

impl ProjectConfig {
    /// The one-line notice for stderr, when something was ignored.
    pub fn notice(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let what = if self.trusted { "even trusted" } else { "untrusted" };
        Some(format!(
            "ignored from the {what} project config {}: {}{}",
            self.file.display(),
            self.ignored.join(", "),
            if self.trusted { "" } else { " (`bosun trust` applies them)" },
        ))
    }
}

/// Whether the user's `projects` table trusts `dir`: the nearest listed
/// ancestor (or `dir` itself) decides; unlisted is untrusted.
pub fn is_trusted(user: Option<&Layer>, dir: &Path) -> bool {
    let Some(user) = user else { return false };
    dir.ancestors()
        .find_map(|ancestor| {
            user.projects
                .iter()
                .find(|(path, _)| Path::new(path) == ancestor)
                .and_then(|(_, entry)| entry.trust_level)
        })
        .is_some_and(|level| level == TrustLevel::Trusted)
}

/// The trust the user recorded for `dir` or its nearest listed ancestor.
pub fn recorded(user: Option<&Layer>, dir: &Path) -> Option<TrustLevel> {
    let user = user?;
    dir.ancestors().find_map(|ancestor| {
        user.projects
            .iter()
            .find(|(path, _)| Path::new(path) == ancestor)
            .and_then(|(_, entry)| entry.trust_level)
    })
}

/// Reads a project config file: no symlink at `.bosun` or the file, a
/// regular file, at most [`MAX_PROJECT_FILE_BYTES`].
pub fn load_project_file(path: &Path) -> Result<Layer> {
    for link in [path.parent(), Some(path)].into_iter().flatten() {
        let meta =
            std::fs::symlink_metadata(link).with_context(|| format!("cannot read {}", link.display()))?;
        if meta.file_type().is_symlink() {
            bail!("{} is a symbolic link; a project's config must be a plain file", link.display());
        }
    }
    let text = read_plain_file(path, MAX_PROJECT_FILE_BYTES)?;
    Layer::parse(&text, path)
}

/// Reads a file the project wrote: not through a symlink (`O_NOFOLLOW`), a
/// regular file (`O_NONBLOCK`, so a FIFO cannot hang the open), at most
/// `max` bytes of UTF-8.
pub fn read_plain_file(path: &Path, max: u64) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32 | rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.len() > max {
        bail!("{} is larger than {} KiB", path.display(), max / 1024);
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    if text.len() as u64 > max {
        bail!("{} is larger than {} KiB", path.display(), max / 1024);
    }
    Ok(text)
}

/// How much a mode allows, for "only stricter".
fn looseness(mode: Mode) -> u8 {
    match mode {
        Mode::ReadOnly => 0,
        Mode::Propose => 1,
        Mode::Write => 2,
        Mode::Autonomous => 3,
    }
}

/// The part of a project layer that applies, given the settings so far,
/// and the keys left out. An untrusted project may only narrow; every
/// project, trusted or not, is refused the user-only keys.
pub fn gate(layer: &Layer, trusted: bool, mode_so_far: Mode, limits: Limits) -> (Layer, Vec<String>) {
    let mut ignored = Vec::new();
    let mut kept = layer.clone();
    // Only the user's own file may say which projects and hosts to trust.
    if !kept.projects.is_empty() {
        ignored.push("projects".to_owned());
        kept.projects.clear();
    }
    if kept.allowed_key_hosts.take().is_some() {
        ignored.push("allowed_key_hosts".to_owned());
    }
    if trusted {
        return (kept, ignored);
    }
    let mut ignore = |name: &str, set: bool| {
        if set {
            ignored.push(name.to_owned());
        }
    };
    // A server is a program bosun starts: running one is the user's call.
    for name in std::mem::take(&mut kept.mcp_servers).into_keys() {
        ignore(&format!("mcp_servers.{name}"), true);
    }
    // A hook is a command bosun runs, like a server.
    for name in std::mem::take(&mut kept.hooks).into_keys() {
        ignore(&format!("hooks.{name}"), true);
    }
    ignore("model", kept.model.take().is_some());
    ignore("base_url", kept.base_url.take().is_some());
    ignore("sessions_db", kept.sessions_db.take().is_some());
    ignore("local_context", kept.local_context.take().is_some());
    ignore("local_threads", kept.local_threads.take().is_some());
    ignore("local_gpu_layers", kept.local_gpu_layers.take().is_some());
    // When to compact decides how much is summarized away, and what it costs.
    ignore("compact_at", kept.compact_at.take().is_some());
    // Which weights run (and a path to them) is the user's choice, like the model.
    ignore("local_model", kept.local_model.take().is_some());
    // How the local model is steered changes what it can be led to do.
    ignore("local_first_call", kept.local_first_call.take().is_some());
    ignore("local_path_grammar", kept.local_path_grammar.take().is_some());
    ignore("local_brief_tools", kept.local_brief_tools.take().is_some());
    ignore("local_examples", kept.local_examples.take().is_some());
    for name in std::mem::take(&mut kept.headers).into_keys() {
        ignore(&format!("headers.{name}"), true);
    }
    // How the provider is talked to is the user's business, like its URL.
    for name in std::mem::take(&mut kept.providers).into_keys() {
        ignore(&format!("providers.{name}"), true);
    }
    // Prices say what the user is told a run cost, and a window how much
    // history is sent: a repository may not set either.
    for name in std::mem::take(&mut kept.models).into_keys() {
        ignore(&format!("models.\"{name}\""), true);
    }
    ignore("context_window", kept.context_window.take().is_some());
    if let Some(mode) = kept.mode.as_deref().and_then(|m| super::parse_mode(m).ok())
        && looseness(mode) > looseness(mode_so_far)
    {
        ignore(&format!("mode = \"{mode}\" (looser than {mode_so_far})"), true);
        kept.mode = None;
    }
    if kept.project_docs == Some(true) {
        kept.project_docs = None;
    }
    if kept.clock == Some(true) {
        ignore("clock", true);
        kept.clock = None;
    }
    // Sub-agents multiply what a turn may do and spend: a project may turn
    // them off or run fewer at once, never more.
    if kept.subagents == Some(true) {
        ignore("subagents", true);
        kept.subagents = None;
    }
    if let Some(most) = kept.max_subagents {
        let (limit, whose) = match limits.max_subagents {
            Some(limit) => (limit, "the user's"),
            None => (super::MAX_SUBAGENTS, "the default"),
        };
        if most > limit {
            ignore(&format!("max_subagents (higher than {whose})"), true);
            kept.max_subagents = None;
        }
    }
    if let (Some(rounds), Some(limit)) = (kept.max_rounds, limits.max_rounds)
        && rounds > limit
    {
        ignore("max_rounds (higher than the user's)", true);
        kept.max_rounds = None;
    }
    if let (Some(secs), Some(limit)) = (kept.tool_timeout_secs, limits.tool_timeout_secs)
        && secs > limit
    {
        ignore("tool_timeout_secs (higher than the user's)", true);
        kept.tool_timeout_secs = None;
    }
    // A project may make a task's limits stricter, never looser.
    let turn = limits.turn;
    if let (Some(tokens), Some(limit)) = (kept.max_turn_tokens, turn.tokens)
        && tokens > limit
    {
        ignore("max_turn_tokens (higher than the user's)", true);
        kept.max_turn_tokens = None;
    }
    if let (Some(secs), Some(limit)) = (kept.max_turn_seconds, turn.seconds)
        && secs > limit
    {
        ignore("max_turn_seconds (higher than the user's)", true);
        kept.max_turn_seconds = None;
    }
    if let (Some(dollars), Some(limit)) = (kept.max_turn_cost, turn.cost_micros)
        && dollars * 1_000_000.0 > limit as f64
    {
        ignore("max_turn_cost (higher than the user's)", true);
        kept.max_turn_cost = None;
    }
    for (name, rule) in &mut kept.permissions {
        match rule {
            ToolRule::Always(Answer::Allow) => {
                ignore(&format!("permissions.{name} = \"allow\""), true);
                *rule = ToolRule::Prefixes(Prefixes::default());
            }
            ToolRule::Always(_) => {}
            ToolRule::Prefixes(prefixes) => {
                for allowed in std::mem::take(&mut prefixes.allow) {
                    ignore(&format!("permissions.{name} allow \"{allowed}\""), true);
                }
            }
        }
    }
    // A rule left with no entries says nothing; keep it out of `config show`.
    kept.permissions.retain(|_, rule| match rule {
        ToolRule::Prefixes(p) => !(p.allow.is_empty() && p.ask.is_empty() && p.deny.is_empty()),
        ToolRule::Always(_) => true,
    });
    // A profile in the project's file passes the same gate when chosen.
    for (name, profile) in &mut kept.profiles {
        let (narrowed, dropped) = gate(profile, false, mode_so_far, limits);
        *profile = narrowed;
        ignored.extend(dropped.into_iter().map(|key| format!("profiles.{name}.{key}")));
    }
    (kept, ignored)
}

/// The user's limits when the project layer is applied, for "only lower".
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Model rounds per turn.
    pub max_rounds: Option<u32>,
    /// Sub-agents at once.
    pub max_subagents: Option<u32>,
    /// Tool timeout, seconds.
    pub tool_timeout_secs: Option<u64>,
    /// The per-task limits.
    pub turn: super::TurnLimits,
}

/// Records `dir` as trusted (`Some(Trusted)`), untrusted, or removes its
/// entry (`None`) in the user's config file, keeping the rest of the file
/// as written (comments included). Written atomically.
pub fn record(user_file: &Path, dir: &Path, level: Option<TrustLevel>) -> Result<()> {
    edit_user_file(user_file, |doc| {
        let key = dir.to_str().with_context(|| format!("{} is not valid UTF-8", dir.display()))?;
        let projects = top_table(doc, "projects", user_file)?;
        match level {
            Some(level) => {
                let entry = projects
                    .entry(key)
                    .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
                    .as_table_mut()
                    .with_context(|| {
                        format!("{}: `projects.\"{key}\"` is not a table", user_file.display())
                    })?;
                entry.insert("trust_level", toml_edit::value(level.as_str()));
            }
            None => {
                projects.remove(key);
            }
        }
        Ok(())
    })
}

/// The top-level table `key` of the user's file (`[projects]`,
/// `[mcp_servers]`), created implicit (written only through its entries)
/// when missing.
pub fn top_table<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    key: &str,
    file: &Path,
) -> Result<&'a mut toml_edit::Table> {
    doc.entry(key)
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .with_context(|| format!("{}: `{key}` is not a table", file.display()))
}

/// Changes the user's config file with `edit`, keeping the rest as written
/// (comments included); the result must read back as a valid config before
/// it atomically replaces the file.
pub fn edit_user_file(
    user_file: &Path,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<()>,
) -> Result<()> {
    let text = match std::fs::read_to_string(user_file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", user_file.display())),
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().with_context(|| format!("{} is not valid TOML", user_file.display()))?;
    edit(&mut doc)?;
    let text = doc.to_string();
    Layer::parse(&text, user_file)?;
    let parent = user_file.parent().context("the user config path has no directory")?;
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let temp = parent.join(format!(".config.toml.{}.tmp", std::process::id()));
    std::fs::write(&temp, text).with_context(|| format!("cannot write {}", temp.display()))?;
    if let Ok(meta) = std::fs::metadata(user_file) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, user_file).with_context(|| format!("cannot replace {}", user_file.display()))?;
    Ok(())
}
