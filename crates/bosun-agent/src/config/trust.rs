//! Project trust (invariant 20): a repository's `.bosun/config.toml` is
//! written by whoever wrote the repository. Until the user trusts the
//! project (`bosun trust`, recorded in the user's own config as
//! `[projects."/abs/path"] trust_level = "trusted"`, the form Codex uses),
//! its config may only narrow what is in effect without it, defaults
//! included: a stricter mode and sandbox, more deny and ask rules, fewer
//! tools, lower limits. [`gate`] decides every key of a layer by name (a new
//! key does not compile until it is decided); what it leaves out is named.
//! Whoever wrote it, a project's profile never shadows the user's profile of
//! the same name, its rules are marked as the project's (they never allow a
//! protected path), its base URL never receives a key unless the user's
//! config lists that origin in `allowed_key_hosts`, and its sandbox's looser
//! values yield to the user's. `bosun trust` refuses `/` and the home
//! directory (or one holding it) without `--force` ([`trust_target`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail};
use bosun_core::Mode;

use super::Settings;
use super::layer::{Layer, ProviderSettings, TrustLevel};
use super::permissions::{Answer, Prefixes, ToolRule};
use super::sandbox;

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

/// How much a mode allows, for "only stricter": a front end that lets a
/// caller choose a mode holds it to the user's with this too.
pub fn looseness(mode: Mode) -> u8 {
    match mode {
        Mode::ReadOnly | Mode::Plan => 0,
        Mode::Propose => 1,
        Mode::Write => 2,
        Mode::Autonomous => 3,
    }
}

/// The part of a project layer that applies, and the keys left out, named
/// for the notice. `before` is what is in effect without the project
/// (built-in defaults and the user's own file), `user` the user's file.
///
/// Every key is decided here by name: the layer is taken apart and built
/// again whole, so a key added to [`Layer`] does not compile until it is
/// decided. The user-only keys are refused to every project; every project
/// profile the user's file also names is refused (the user's wins); a
/// trusted project's other keys apply (its sandbox's looser values only
/// where the user's file set none); an untrusted project's apply only when
/// they are no looser than what is in effect.
pub fn gate(layer: &Layer, trusted: bool, before: &Settings, user: Option<&Layer>) -> (Layer, Vec<String>) {
    let Layer {
        model,
        base_url,
        reasoning_effort,
        notifications,
        mode,
        project_docs,
        sessions_db,
        store_url,
        max_rounds,
        tool_timeout_secs,
        max_turn_tokens,
        max_turn_seconds,
        max_turn_cost,
        compact_at,
        local_context,
        local_threads,
        local_gpu_layers,
        local_model,
        local_first_call,
        local_persistence,
        local_read_named,
        local_path_grammar,
        local_brief_tools,
        local_examples,
        clock,
        subagents,
        max_subagents,
        permissions,
        headers,
        providers,
        disabled_tools,
        mcp_servers,
        hooks,
        models,
        context_window,
        allowed_key_hosts,
        projects,
        profiles,
        sandbox,
        rewind,
        web,
        openapi,
    } = layer;
    let mut gate = Gate { trusted, ignored: Vec::new() };
    let defaults = bosun_core::Limits::default();
    let turn = before.turn_limits;
    // Fields are evaluated in the order written: the notice lists them so.
    let kept = Layer {
        // Which projects to trust and where keys may go: only the user's
        // own file may say, or a repository could vouch for itself.
        projects: gate.user_only("projects", projects, BTreeMap::is_empty),
        allowed_key_hosts: gate.user_only("allowed_key_hosts", allowed_key_hosts, Option::is_none),
        // Which hosts bosun's own process may reach, and with which key
        // (invariant 19): a repository could otherwise send what the
        // model reads to a host of its choosing.
        web: gate.user_only("web", web, Option::is_none),
        // Which APIs bosun's own process calls, with which credentials: the
        // same as `[web]`.
        openapi: gate.user_only("openapi", openapi, BTreeMap::is_empty),
        // Where served sessions are kept: a repository could otherwise send
        // every journal (the code the model read) to a database of its own.
        store_url: gate.user_only("store_url", store_url, Option::is_none),
        // Where requests go and with what: the user's business (network).
        model: gate.trusted_only("model", model),
        base_url: gate.trusted_only("base_url", base_url),
        // What each request costs, as the model is.
        reasoning_effort: gate.trusted_only("reasoning_effort", reasoning_effort),
        // How the person is interrupted: theirs to choose.
        notifications: gate.trusted_only("notifications", notifications),
        headers: gate.trusted_only_each(headers, |name| format!("headers.{name}")),
        // How the provider is talked to (retries, timeouts), like its URL;
        // never a token command, which runs with the network and the
        // user's cloud credentials readable (`credential_sandbox.rs`).
        providers: gate.providers(providers),
        sessions_db: gate.trusted_only("sessions_db", sessions_db),
        // What is kept of the user's files, and how much of their disk.
        rewind: gate.trusted_only("rewind", rewind),
        // Which weights run (and a path to them), and on what hardware.
        local_context: gate.trusted_only("local_context", local_context),
        local_threads: gate.trusted_only("local_threads", local_threads),
        local_gpu_layers: gate.trusted_only("local_gpu_layers", local_gpu_layers),
        // When to compact decides how much is summarized away, and what it costs.
        compact_at: gate.trusted_only("compact_at", compact_at),
        local_model: gate.trusted_only("local_model", local_model),
        // How the local model is steered changes what it can be led to do.
        local_first_call: gate.trusted_only("local_first_call", local_first_call),
        local_persistence: gate.trusted_only("local_persistence", local_persistence),
        local_read_named: gate.trusted_only("local_read_named", local_read_named),
        local_path_grammar: gate.trusted_only("local_path_grammar", local_path_grammar),
        local_brief_tools: gate.trusted_only("local_brief_tools", local_brief_tools),
        local_examples: gate.trusted_only("local_examples", local_examples),
        // Prices say what a run is said to cost and whether a cost limit
        // stops it; a window how much history is sent.
        models: gate.trusted_only_each(models, |name| format!("models.\"{name}\"")),
        context_window: gate.trusted_only("context_window", context_window),
        // A server or a hook is a program bosun would start.
        mcp_servers: gate.trusted_only_each(mcp_servers, |name| format!("mcp_servers.{name}")),
        hooks: gate.trusted_only_each(hooks, |name| format!("hooks.{name}")),
        mode: gate.mode(mode, before.mode),
        project_docs: gate.only_off("project_docs", *project_docs, before.project_docs),
        clock: gate.only_off("clock", *clock, before.clock),
        // Sub-agents multiply what a task may do and spend: on only over
        // the user's own `true` (unset, the wiring decides, and for a local
        // model that is off).
        subagents: gate.only_off("subagents", *subagents, before.subagents == Some(true)),
        max_subagents: gate.lower(
            "max_subagents",
            *max_subagents,
            before.max_subagents,
            Some(super::MAX_SUBAGENTS),
        ),
        // Limits only lower, measured against the defaults too.
        max_rounds: gate.lower("max_rounds", *max_rounds, before.max_rounds, Some(defaults.max_rounds)),
        tool_timeout_secs: gate.lower(
            "tool_timeout_secs",
            *tool_timeout_secs,
            before.tool_timeout_secs,
            Some(defaults.tool_timeout().as_secs()),
        ),
        max_turn_tokens: gate.lower("max_turn_tokens", *max_turn_tokens, turn.tokens, None),
        max_turn_seconds: gate.lower("max_turn_seconds", *max_turn_seconds, turn.seconds, None),
        max_turn_cost: gate.lower(
            "max_turn_cost",
            *max_turn_cost,
            turn.cost_micros.map(|micros| micros as f64 / 1_000_000.0),
            None,
        ),
        // Fewer tools only narrow.
        disabled_tools: disabled_tools.clone(),
        permissions: gate.permissions(permissions),
        sandbox: sandbox
            .as_ref()
            .map(|table| {
                let users = user.and_then(|u| u.sandbox.as_ref());
                sandbox::gate(table, trusted, users, &before.sandbox, &mut gate.ignored)
            })
            .filter(|table| !table.is_empty()),
        profiles: gate.profiles(profiles, before, user),
    };
    (kept, gate.ignored)
}

/// The gate's verdicts, key by key, and the keys it left out.
struct Gate {
    trusted: bool,
    ignored: Vec<String>,
}

impl Gate {
    fn ignore(&mut self, name: String) {
        self.ignored.push(name);
    }

    /// A key only the user's own file may set, trusted project or not.
    fn user_only<T: Default>(&mut self, name: &str, value: &T, unset: impl Fn(&T) -> bool) -> T {
        if !unset(value) {
            self.ignore(name.to_owned());
        }
        T::default()
    }

    /// A key only a trusted project may set.
    fn trusted_only<T: Clone>(&mut self, name: &str, value: &Option<T>) -> Option<T> {
        if self.trusted || value.is_none() {
            return value.clone();
        }
        self.ignore(name.to_owned());
        None
    }

    /// A table whose entries only a trusted project may set, each named.
    fn trusted_only_each<V: Clone>(
        &mut self,
        table: &BTreeMap<String, V>,
        named: impl Fn(&str) -> String,
    ) -> BTreeMap<String, V> {
        if self.trusted {
            return table.clone();
        }
        for name in table.keys() {
            self.ignore(named(name));
        }
        BTreeMap::new()
    }

    /// A project's provider tables (trusted only), without a
    /// `token_command`: only the user's own file names a program that
    /// reads the user's cloud credentials.
    fn providers(
        &mut self,
        providers: &BTreeMap<String, ProviderSettings>,
    ) -> BTreeMap<String, ProviderSettings> {
        let mut kept = self.trusted_only_each(providers, |name| format!("providers.{name}"));
        for (name, table) in &mut kept {
            if table.token_command.take().is_some() {
                self.ignore(format!("providers.{name}.token_command"));
            }
        }
        kept
    }

    /// The mode, when no looser than the one in effect.
    fn mode(&mut self, mode: &Option<String>, before: Mode) -> Option<String> {
        let text = mode.as_ref()?;
        // A mode that does not parse is kept, so applying it names the error.
        if let Ok(parsed) = super::parse_mode(text)
            && !self.trusted
            && looseness(parsed) > looseness(before)
        {
            self.ignore(format!("mode = \"{parsed}\" (looser than {before})"));
            return None;
        }
        Some(text.clone())
    }

    /// A switch whose `true` allows more: `false` always applies, `true`
    /// only when it is already in effect.
    fn only_off(&mut self, name: &str, value: Option<bool>, before: bool) -> Option<bool> {
        if value == Some(true) && !before && !self.trusted {
            self.ignore(name.to_owned());
            return None;
        }
        value
    }

    /// A limit, applied when no higher than the user's, else than the
    /// default; with neither (no limit), any value narrows.
    fn lower<T: PartialOrd + Copy>(
        &mut self,
        name: &str,
        value: Option<T>,
        users: Option<T>,
        default: Option<T>,
    ) -> Option<T> {
        let value = value?;
        if self.trusted {
            return Some(value);
        }
        let (limit, whose) = match (users, default) {
            (Some(limit), _) => (limit, "the user's"),
            (None, Some(limit)) => (limit, "the default"),
            (None, None) => return Some(value),
        };
        if value > limit {
            self.ignore(format!("{name} (higher than {whose})"));
            return None;
        }
        Some(value)
    }

    /// Rules: a trusted project's as written (marked as the project's when
    /// applied); an untrusted one's deny and ask answers only.
    fn permissions(&mut self, table: &BTreeMap<String, ToolRule>) -> BTreeMap<String, ToolRule> {
        if self.trusted {
            return table.clone();
        }
        let mut kept = BTreeMap::new();
        for (name, rule) in table {
            let narrowed = match rule {
                ToolRule::Always(Answer::Allow) => {
                    self.ignore(format!("permissions.{name} = \"allow\""));
                    continue;
                }
                ToolRule::Always(answer) => ToolRule::Always(*answer),
                ToolRule::Prefixes(prefixes) => {
                    for allowed in &prefixes.allow {
                        self.ignore(format!("permissions.{name} allow \"{allowed}\""));
                    }
                    // A rule left with no entries says nothing; keep it out of `config show`.
                    if prefixes.ask.is_empty() && prefixes.deny.is_empty() {
                        continue;
                    }
                    ToolRule::Prefixes(Prefixes {
                        allow: Vec::new(),
                        ask: prefixes.ask.clone(),
                        deny: prefixes.deny.clone(),
                    })
                }
            };
            kept.insert(name.clone(), narrowed);
        }
        kept
    }

    /// Profiles: one the user's own file also names is the user's (a
    /// repository cannot redefine `--profile safe`); the others pass the
    /// same gate when chosen.
    fn profiles(
        &mut self,
        profiles: &BTreeMap<String, Layer>,
        before: &Settings,
        user: Option<&Layer>,
    ) -> BTreeMap<String, Layer> {
        let mut kept = BTreeMap::new();
        for (name, profile) in profiles {
            if user.is_some_and(|user| user.profiles.contains_key(name)) {
                self.ignore(format!("profiles.{name} (your own profile of that name wins)"));
                continue;
            }
            let (narrowed, dropped) = gate(profile, self.trusted, before, user);
            self.ignored.extend(dropped.into_iter().map(|key| format!("profiles.{name}.{key}")));
            kept.insert(name.clone(), narrowed);
        }
        kept
    }
}

/// Why `dir` is too wide to trust without `--force`, if it is: `/`, the
/// home directory or a directory holding it, where trusting would trust
/// every project below.
pub fn too_wide(dir: &Path, home: Option<&Path>) -> Option<String> {
    if dir.parent().is_none() {
        return Some(format!("{} is the root directory", dir.display()));
    }
    let home = home.filter(|home| home.is_absolute())?;
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    if home == dir {
        return Some(format!("{} is your home directory", dir.display()));
    }
    home.starts_with(dir).then(|| format!("{} holds your home directory", dir.display()))
}

/// The directory `bosun trust` records: `target` as given (`explicit`),
/// else the repository root of `workdir` (the nearest directory holding
/// `.git`), else `workdir`. A directory [`too_wide`] is refused unless
/// `force`: outside a repository, the nearest one above can be a dotfiles
/// repository at `$HOME`.
pub fn trust_target(workdir: &Path, explicit: bool, home: Option<&Path>, force: bool) -> Result<PathBuf> {
    let root = if explicit {
        workdir.to_path_buf()
    } else {
        workdir.ancestors().find(|a| a.join(".git").exists()).unwrap_or(workdir).to_path_buf()
    };
    if let Some(why) = too_wide(&root, home).filter(|_| !force) {
        let found = if explicit || root == workdir {
            String::new()
        } else {
            format!(" (the nearest repository above {})", workdir.display())
        };
        bail!(
            "not trusting {}{found}: {why}, and trusting it would trust every project below it. Trust a \
             project's own directory (`bosun trust DIR`), or pass --force to trust it anyway",
            root.display()
        );
    }
    Ok(root)
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
