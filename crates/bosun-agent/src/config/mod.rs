//! Configuration: TOML layered as built-in defaults < user file < project
//! file < `--profile` < `BOSUN_*` environment variables < flags, each value
//! remembering where it came from. The one place bosun reads files and the
//! environment for settings.

pub mod hooks;
mod hosts;
mod layer;
pub mod mcp;
pub mod models;
pub mod openapi;
mod permissions;
pub mod rewind;
pub mod sandbox;
mod trust;
pub mod url;
pub mod web;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail};
use bosun_core::permission::RuleOrigin;
use bosun_core::{Mode, PermissionRule};

pub use bosun_core::env::Env;
pub use hosts::KeyHost;
pub use layer::{Layer, ProviderSettings, TrustLevel};
pub use permissions::TypedRule;
pub use rewind::RewindSettings;
pub use sandbox::{SandboxMode, SandboxSettings};
pub use trust::{ProjectConfig, edit_user_file, looseness, record as record_trust, top_table, trust_target};
pub use web::WebSettings;

/// The most sub-agents a session may run at once (`max_subagents`): the
/// library's cap on children per parent.
pub const MAX_SUBAGENTS: u32 = bosun_core::delegate::MAX_CHILDREN as u32;

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Built in.
    Default,
    /// A configuration file.
    File(PathBuf),
    /// A profile in a configuration file.
    Profile(String, PathBuf),
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
    /// What a stored session recorded of how it ran (its model), by id.
    Session(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Profile(name, path) => write!(f, "profile `{name}` in {}", path.display()),
            Self::Env(name) => write!(f, "environment {name}"),
            Self::Flag(name) => write!(f, "flag {name}"),
            Self::Session(id) => write!(f, "session {id}"),
        }
    }
}

/// The resolved settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `PROVIDER/MODEL`, if any is configured.
    pub model: Option<String>,
    /// A base URL override for the provider.
    pub base_url: Option<String>,
    /// How hard the model reasons: `None` leaves the model's default,
    /// `Some(None)` turns reasoning off, `Some(Some(level))` asks for it.
    pub reasoning_effort: Option<Option<bosun_core::Effort>>,
    /// How the conversation notifies while the terminal is not focused:
    /// `bell` (the default), `osc9` or `off`.
    pub notifications: Option<String>,
    /// The permission mode.
    pub mode: Mode,
    /// Whether AGENTS.md instructions are added.
    pub project_docs: bool,
    /// The session database.
    pub sessions_db: Option<PathBuf>,
    /// The Postgres database `bosun serve` keeps sessions in instead
    /// (`store_url`, the user's own file or `BOSUN_STORE_URL` only).
    pub store_url: Option<bosun_store_pg::PgUrl>,
    /// Model rounds per turn.
    pub max_rounds: Option<u32>,
    /// Tool timeout in seconds.
    pub tool_timeout_secs: Option<u64>,
    /// Per-task limits (`max_turn_*`); none by default.
    pub turn_limits: TurnLimits,
    /// The fraction of the context window at which compaction starts.
    pub compact_at: Option<f64>,
    /// The context cap of a local model.
    pub local_context: Option<u32>,
    /// The threads of a local model.
    pub local_threads: Option<u32>,
    /// The layers of a local model offloaded to a GPU.
    pub local_gpu_layers: Option<u32>,
    /// The local model run when no `--model` is given (see `bosun_models::resolve_local`).
    pub local_model: Option<String>,
    /// Whether a local model's first round must call a tool.
    pub local_first_call: bool,
    /// Whether a local model is held to its task (`bosun_core::Persistence`).
    pub local_persistence: bool,
    /// Whether the files a prompt names are read before a local model's
    /// first round.
    pub local_read_named: bool,
    /// Whether a local model's path arguments are held to existing paths.
    pub local_path_grammar: bool,
    /// Whether a local model gets the brief tool set.
    pub local_brief_tools: bool,
    /// Whether a local model is shown the example turns.
    pub local_examples: bool,
    /// Whether the model may see today's date.
    pub clock: bool,
    /// Whether the session offers sub-agents (`delegate_tasks`); `None`:
    /// not set, the wiring's default (on for a hosted model, off for the
    /// local one).
    pub subagents: Option<bool>,
    /// Most sub-agents running at once per session (1 to 10); `None`: the
    /// library's 10.
    pub max_subagents: Option<u32>,
    /// Permission rules, from every layer.
    pub rules: Vec<PermissionRule>,
    /// Extra provider headers.
    pub headers: Vec<(String, String)>,
    /// Transport settings by provider name.
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Tools left out of the session.
    pub disabled_tools: Vec<String>,
    /// MCP servers by name, the enabled and the disabled.
    pub mcp_servers: BTreeMap<String, mcp::McpServer>,
    /// What the config says of models (`[models."MODEL"]`), merged over
    /// the layers key by key.
    pub models: BTreeMap<String, bosun_providers::ModelOverride>,
    /// The session model's context window (`context_window`).
    pub context_window: Option<u32>,
    /// Command hooks, in the order they are asked: the user's, the
    /// project's (trusted only), then `.claude/settings*.json`'s.
    pub hooks: Vec<hooks::ConfiguredHook>,
    /// What reading `.claude/settings*.json` left to say (an untrusted
    /// project's hooks not run, hook entries skipped, permission entries
    /// not applied), for stderr.
    pub hook_notices: Vec<String>,
    /// What reading the project's `.mcp.json` left to say (servers of an
    /// untrusted project not started, keys not read), for stderr.
    pub mcp_notices: Vec<String>,
    /// Origins (scheme, host, port) besides the provider's own that may
    /// receive its key when a project's config set the base URL.
    pub allowed_key_hosts: Vec<KeyHost>,
    /// Whether the base URL in effect came from a project's config.
    pub base_url_from_project: bool,
    /// Whether the user trusts the workspace (`bosun trust`): what the
    /// project's files may choose beyond prompt text (hooks, agents' models).
    pub workspace_trusted: bool,
    /// What an OS sandbox around the commands bosun runs may do (`[sandbox]`,
    /// `--sandbox`; `sandbox.rs`).
    pub sandbox: SandboxSettings,
    /// What is kept of files before tools change them (`[rewind]`;
    /// `rewind.rs`).
    pub rewind: RewindSettings,
    /// The network tools the user turned on (`[web]`, the user's own
    /// config only; `web.rs`).
    pub web: WebSettings,
    /// The OpenAPI specs the user named (`[openapi.NAME]`, the user's own
    /// config only; `openapi.rs`).
    pub openapi: openapi::OpenApiSettings,
    /// The project's config file, if one was found, and what was made of it.
    pub project: Option<ProjectConfig>,
    /// Each setting, its shown value and its source, for `config show`.
    pub sources: BTreeMap<String, (String, Source)>,
    /// Whether `/` or the home folder may be the workspace
    /// (`--allow-any-workspace`; [`crate::workspace_guard`]).
    pub allow_any_workspace: bool,
}

impl Settings {
    pub(crate) fn defaults() -> Self {
        let mut settings = Self {
            model: None,
            base_url: None,
            reasoning_effort: None,
            notifications: None,
            mode: Mode::Propose,
            project_docs: true,
            sessions_db: None,
            store_url: None,
            max_rounds: None,
            tool_timeout_secs: None,
            turn_limits: TurnLimits::default(),
            compact_at: None,
            local_context: None,
            local_threads: None,
            local_gpu_layers: None,
            local_model: None,
            local_first_call: true,
            local_persistence: true,
            local_read_named: true,
            // Measured on the local suite: it keeps invented paths out, but
            // forces a question about a missing file onto one that exists
            // (docs/benchmarks.md), so it is off until it does better.
            local_path_grammar: false,
            local_brief_tools: true,
            local_examples: true,
            clock: false,
            subagents: None,
            max_subagents: None,
            rules: Vec::new(),
            headers: Vec::new(),
            providers: BTreeMap::new(),
            disabled_tools: Vec::new(),
            mcp_servers: BTreeMap::new(),
            models: BTreeMap::new(),
            context_window: None,
            hooks: Vec::new(),
            hook_notices: Vec::new(),
            workspace_trusted: false,
            mcp_notices: Vec::new(),
            allowed_key_hosts: Vec::new(),
            base_url_from_project: false,
            sandbox: SandboxSettings::default(),
            rewind: RewindSettings::default(),
            web: WebSettings::default(),
            openapi: openapi::OpenApiSettings::default(),
            project: None,
            sources: BTreeMap::new(),
            allow_any_workspace: false,
        };
        settings.note("mode", "propose", Source::Default);
        settings.note("project_docs", "true", Source::Default);
        settings.note("clock", "false", Source::Default);
        settings.note("local_first_call", "true", Source::Default);
        settings.note("local_persistence", "true", Source::Default);
        settings.note("local_read_named", "true", Source::Default);
        settings.note("local_path_grammar", "false", Source::Default);
        settings.note("local_brief_tools", "true", Source::Default);
        settings.note("local_examples", "true", Source::Default);
        settings.note("sandbox.mode", SandboxMode::default(), Source::Default);
        settings.note("sandbox.network", "false", Source::Default);
        settings.note("web.fetch", "false", Source::Default);
        settings.note("web.search", "none", Source::Default);
        settings
    }

    pub(crate) fn note(&mut self, key: &str, value: impl fmt::Display, source: Source) {
        self.sources.insert(key.to_owned(), (value.to_string(), source));
    }

    fn apply(&mut self, layer: &Layer, source: &Source) -> Result<()> {
        self.apply_from(layer, source, RuleOrigin::User)
    }

    /// Applies a layer. A project's rules are marked as the project's and
    /// add to the user's instead of replacing them, so they only narrow.
    fn apply_from(&mut self, layer: &Layer, source: &Source, origin: RuleOrigin) -> Result<()> {
        if let Some(model) = &layer.model {
            self.model = Some(model.clone());
            self.note("model", model, source.clone());
        }
        if let Some(url) = &layer.base_url {
            self.base_url = Some(url.clone());
            self.base_url_from_project = origin == RuleOrigin::Project;
            self.note("base_url", url, source.clone());
        }
        if let Some(effort) = &layer.reasoning_effort {
            let parsed = parse_effort(effort).with_context(|| format!("reasoning_effort, from {source}"))?;
            self.reasoning_effort = Some(parsed);
            self.note("reasoning_effort", effort, source.clone());
        }
        if let Some(how) = &layer.notifications {
            if !["bell", "osc9", "off"].contains(&how.as_str()) {
                bail!("unknown notifications `{how}`, from {source}: use bell, osc9 or off");
            }
            self.notifications = Some(how.clone());
            self.note("notifications", how, source.clone());
        }
        if let Some(mode) = &layer.mode {
            self.mode = parse_mode(mode).with_context(|| format!("mode, from {source}"))?;
            self.note("mode", mode, source.clone());
        }
        if let Some(docs) = layer.project_docs {
            self.project_docs = docs;
            self.note("project_docs", docs, source.clone());
        }
        if let Some(db) = &layer.sessions_db {
            self.sessions_db = Some(db.clone());
            self.note("sessions_db", db.display(), source.clone());
        }
        if let Some(url) = &layer.store_url {
            let parsed = match bosun_store_pg::PgUrl::parse(&url.0) {
                Ok(parsed) => parsed,
                Err(error) => bail!("store_url, from {source}: {error}"),
            };
            // As with API keys: a file is read by more than its owner
            // (backups, dotfile repositories); a password goes in the variable.
            if parsed.has_password() && !matches!(source, Source::Env(_)) {
                bail!(
                    "store_url, from {source}: a password is not read from config files; give the URL with its \
                     password in BOSUN_STORE_URL instead"
                );
            }
            self.note("store_url", parsed.redacted(), source.clone());
            self.store_url = Some(parsed);
        }
        if let Some(rounds) = layer.max_rounds {
            self.max_rounds = Some(rounds);
            self.note("max_rounds", rounds, source.clone());
        }
        if let Some(secs) = layer.tool_timeout_secs {
            self.tool_timeout_secs = Some(secs);
            self.note("tool_timeout_secs", secs, source.clone());
        }
        if let Some(tokens) = layer.max_turn_tokens {
            self.turn_limits.tokens = Some(tokens.max(1));
            self.note("max_turn_tokens", tokens, source.clone());
        }
        if let Some(secs) = layer.max_turn_seconds {
            self.turn_limits.seconds = Some(secs.max(1));
            self.note("max_turn_seconds", secs, source.clone());
        }
        if let Some(dollars) = layer.max_turn_cost {
            if !(dollars.is_finite() && dollars > 0.0) {
                bail!("max_turn_cost = {dollars}, from {source}: use a positive number of dollars");
            }
            self.turn_limits.cost_micros = Some((dollars * 1_000_000.0).round() as u64);
            self.note("max_turn_cost", format!("${dollars}"), source.clone());
        }
        if let Some(fraction) = layer.compact_at {
            if !(0.1..=1.0).contains(&fraction) {
                bail!("compact_at = {fraction}, from {source}: use a fraction from 0.1 to 1.0");
            }
            self.compact_at = Some(fraction);
            self.note("compact_at", fraction, source.clone());
        }
        if let Some(tokens) = layer.local_context {
            if tokens < 512 {
                bail!("local_context = {tokens}, from {source}: use at least 512 tokens");
            }
            self.local_context = Some(tokens);
            self.note("local_context", tokens, source.clone());
        }
        if let Some(threads) = layer.local_threads {
            if threads == 0 {
                bail!("local_threads = 0, from {source}: use at least 1");
            }
            self.local_threads = Some(threads);
            self.note("local_threads", threads, source.clone());
        }
        if let Some(layers) = layer.local_gpu_layers {
            self.local_gpu_layers = Some(layers);
            self.note("local_gpu_layers", layers, source.clone());
        }
        if let Some(model) = &layer.local_model {
            if model.trim().is_empty() {
                bail!("local_model, from {source}, is empty: name a model from `bosun models list`");
            }
            self.local_model = Some(model.clone());
            self.note("local_model", model, source.clone());
        }
        if let Some(clock) = layer.clock {
            self.clock = clock;
            self.note("clock", clock, source.clone());
        }
        if let Some(first_call) = layer.local_first_call {
            self.local_first_call = first_call;
            self.note("local_first_call", first_call, source.clone());
        }
        if let Some(persistence) = layer.local_persistence {
            self.local_persistence = persistence;
            self.note("local_persistence", persistence, source.clone());
        }
        if let Some(read) = layer.local_read_named {
            self.local_read_named = read;
            self.note("local_read_named", read, source.clone());
        }
        if let Some(paths) = layer.local_path_grammar {
            self.local_path_grammar = paths;
            self.note("local_path_grammar", paths, source.clone());
        }
        if let Some(brief) = layer.local_brief_tools {
            self.local_brief_tools = brief;
            self.note("local_brief_tools", brief, source.clone());
        }
        if let Some(examples) = layer.local_examples {
            self.local_examples = examples;
            self.note("local_examples", examples, source.clone());
        }
        if let Some(subagents) = layer.subagents {
            self.subagents = Some(subagents);
            self.note("subagents", subagents, source.clone());
        }
        if let Some(most) = layer.max_subagents {
            if !(1..=MAX_SUBAGENTS).contains(&most) {
                bail!("max_subagents = {most}, from {source}: use a number from 1 to {MAX_SUBAGENTS}");
            }
            self.max_subagents = Some(most);
            self.note("max_subagents", most, source.clone());
        }
        let mut added = Vec::new();
        for (name, rule) in &layer.permissions {
            added.extend(rule.rules(name).with_context(|| format!("in {source}"))?);
            self.note(&format!("permissions.{name}"), rule, source.clone());
        }
        if origin == RuleOrigin::Project {
            self.rules.extend(added.into_iter().map(PermissionRule::from_project));
        } else {
            // A later user layer's rules for a tool replace the user's
            // earlier ones for it; a project's stay, since they only narrow.
            // One layer's entries never replace each other (`Bash` and
            // `shell` are one tool).
            self.rules.retain(|r| {
                r.origin == RuleOrigin::Project || !added.iter().any(|new| new.target == r.target)
            });
            self.rules.extend(added);
        }
        for tool in &layer.disabled_tools {
            if !self.disabled_tools.contains(tool) {
                self.disabled_tools.push(tool.clone());
            }
        }
        if !layer.disabled_tools.is_empty() {
            self.note("disabled_tools", self.disabled_tools.join(", "), source.clone());
        }
        for (name, entry) in &layer.mcp_servers {
            entry.check(name).with_context(|| format!("in {source}"))?;
            // A later layer's server of the same name replaces it whole.
            self.mcp_servers
                .insert(name.clone(), mcp::McpServer { entry: entry.clone(), source: source.clone() });
            self.note(&format!("mcp_servers.{name}"), entry.summary(), source.clone());
        }
        hooks::apply_layer(self, &layer.hooks, source)?;
        for (name, entry) in &layer.models {
            let over = entry.to_override().with_context(|| format!("models.\"{name}\", from {source}"))?;
            let merged = self.models.get(name).copied().unwrap_or_default().merged(over);
            self.models.insert(name.clone(), merged);
            self.note(&format!("models.\"{name}\""), entry.summary(), source.clone());
        }
        if let Some(tokens) = layer.context_window {
            if tokens == 0 {
                bail!("context_window = 0, from {source}: a model takes at least one token");
            }
            self.context_window = Some(tokens);
            self.note("context_window", tokens, source.clone());
        }
        if let Some(hosts) = &layer.allowed_key_hosts {
            self.allowed_key_hosts = hosts
                .iter()
                .map(|entry| KeyHost::parse(entry).with_context(|| format!("in {source}")))
                .collect::<Result<_>>()?;
            self.note("allowed_key_hosts", hosts.join(", "), source.clone());
        }
        if let Some(table) = &layer.sandbox {
            self.sandbox.apply(table, source)?;
            let sandbox::SandboxLayer { mode, network, writable_roots, deny_read } = table;
            if let Some(mode) = mode {
                self.note("sandbox.mode", mode, source.clone());
            }
            if let Some(network) = network {
                self.note("sandbox.network", network, source.clone());
            }
            if writable_roots.is_some() {
                let shown = self.sandbox.writable_roots.iter().map(|p| p.display().to_string());
                self.note("sandbox.writable_roots", shown.collect::<Vec<_>>().join(", "), source.clone());
            }
            if deny_read.is_some() {
                let shown = self.sandbox.deny_read.iter().map(|p| p.display().to_string());
                self.note("sandbox.deny_read", shown.collect::<Vec<_>>().join(", "), source.clone());
            }
        }
        if let Some(table) = &layer.rewind {
            for (key, value) in self.rewind.apply(table, &source.to_string())? {
                self.note(key, value, source.clone());
            }
        }
        // The gate leaves a project's `[web]` out; this holds even for a
        // layer that did not pass it (invariant 19).
        if let Some(table) = layer.web.as_ref().filter(|_| origin == RuleOrigin::User) {
            for (key, value) in self.web.apply(table, &source.to_string())? {
                self.note(key, value, source.clone());
            }
        }
        if origin == RuleOrigin::User {
            for (key, value) in self.openapi.apply(&layer.openapi, &source.to_string())? {
                self.note(&key, value, source.clone());
            }
        }
        for (name, value) in &layer.headers {
            self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            self.headers.push((name.clone(), value.clone()));
            self.note(&format!("headers.{name}"), value, source.clone());
        }
        for (name, settings) in &layer.providers {
            for (key, value) in settings.entries() {
                self.note(&format!("providers.{name}.{key}"), value, source.clone());
            }
            let merged = self.providers.get(name).cloned().unwrap_or_default().merged(settings.clone());
            self.providers.insert(name.clone(), merged);
        }
        Ok(())
    }
}

pub fn parse_mode(text: &str) -> Result<Mode> {
    Ok(match text {
        "read-only" => Mode::ReadOnly,
        "propose" => Mode::Propose,
        "write" => Mode::Write,
        "autonomous" => Mode::Autonomous,
        "plan" => Mode::Plan,
        other => bail!("unknown mode `{other}`: use read-only, plan, propose, write or autonomous"),
    })
}

/// A reasoning effort as written in a config file, `--effort` or
/// `/effort`: `low`, `medium`, `high`, or `off` (`Ok(None)`).
pub fn parse_effort(text: &str) -> Result<Option<bosun_core::Effort>> {
    if text == "off" {
        return Ok(None);
    }
    match bosun_core::Effort::parse(text) {
        Some(effort) => Ok(Some(effort)),
        None => bail!("unknown reasoning effort `{text}`: use low, medium, high or off"),
    }
}

/// Where the user configuration file lives.
pub fn user_file(env: &Env) -> Option<PathBuf> {
    if let Some(dir) = env.get("XDG_CONFIG_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Some(dir.join("bosun/config.toml"));
    }
    env.get("HOME").map(|home| PathBuf::from(home).join(".config/bosun/config.toml"))
}

/// The nearest `.bosun/config.toml` from `dir` up to the project root (the
/// nearest directory holding `.git`).
pub fn project_file(dir: &Path) -> Option<PathBuf> {
    for ancestor in dir.ancestors() {
        let candidate = ancestor.join(".bosun/config.toml");
        if candidate.is_file() {
            return Some(candidate);
        }
        if ancestor.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The project root to ask about trusting, when the user never said and the
/// project holds what trusting would enable (its `.bosun/` config, agents
/// or skills, a `.mcp.json`, `.claude/` agents, skills or hooks): the
/// nearest directory holding `.git`, else `dir`.
pub fn unasked_trust(dir: &Path, env: &Env) -> Result<Option<PathBuf>> {
    let root = dir.ancestors().find(|a| a.join(".git").exists()).unwrap_or(dir);
    // Never offered for `/` or the home directory: a yes would trust every
    // project below (`bosun trust --force` still can).
    if trust::too_wide(root, env.get("HOME").map(Path::new)).is_some() {
        return Ok(None);
    }
    let user = match user_file(env).filter(|p| p.is_file()) {
        Some(path) => Some(Layer::load(&path)?),
        None => None,
    };
    if trust::recorded(user.as_ref(), dir).is_some() {
        return Ok(None);
    }
    // `symlink_metadata`: a planted link is asked about, never followed.
    let holds = [".bosun", ".mcp.json", ".claude"]
        .iter()
        .any(|name| std::fs::symlink_metadata(root.join(name)).is_ok());
    Ok(holds.then(|| root.to_path_buf()))
}

/// Per-task limits: hitting one ends the task with a checkpoint, a message
/// naming it, and exit code 1. None is set unless configured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TurnLimits {
    /// Tokens (prompt, cached prompt and output, over all rounds).
    pub tokens: Option<u64>,
    /// Wall time, seconds.
    pub seconds: Option<u64>,
    /// Cost, millionths of a dollar.
    pub cost_micros: Option<u64>,
}

/// What one command sets over every file and variable (the CLI's flags; a
/// server's or an embedder's request): each given value is applied as a
/// layer of its own, named by the flag that sets it.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Overrides {
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--effort`.
    pub reasoning_effort: Option<String>,
    /// `--mode`, by its name (`read-only`, `propose`, `write`, `autonomous`).
    pub mode: Option<&'static str>,
    /// `--no-project-docs`.
    pub no_project_docs: bool,
    /// `--max-rounds`.
    pub max_rounds: Option<u32>,
    /// `--max-tokens`.
    pub max_tokens: Option<u64>,
    /// `--max-time`, in seconds.
    pub max_time: Option<u64>,
    /// `--max-cost`, in dollars.
    pub max_cost: Option<f64>,
    /// `--sandbox`.
    pub sandbox: Option<SandboxMode>,
    /// `--allow-any-workspace`: `/` or the home folder may be the workspace.
    pub allow_any_workspace: bool,
}

/// Resolves the settings for a command run in `dir`.
pub fn resolve(dir: &Path, env: &Env, profile: Option<&str>, flags: &Overrides) -> Result<Settings> {
    let mut settings = Settings::defaults();
    let mut files = Vec::new();
    let mut user_layer = None;
    if let Some(path) = user_file(env).filter(|p| p.is_file()) {
        let layer = Layer::load(&path)?;
        settings.apply(&layer, &Source::File(path.clone()))?;
        user_layer = Some(layer.clone());
        files.push((path, layer));
    }
    if let Some(path) = project_file(dir) {
        let layer = trust::load_project_file(&path)?;
        let project_dir = path.parent().and_then(Path::parent).unwrap_or(dir).to_path_buf();
        let trusted = trust::is_trusted(user_layer.as_ref(), &project_dir);
        let (applied, ignored) = trust::gate(&layer, trusted, &settings, user_layer.as_ref());
        settings.apply_from(&applied, &Source::File(path.clone()), RuleOrigin::Project)?;
        settings.project = Some(ProjectConfig { file: path.clone(), dir: project_dir, trusted, ignored });
        files.push((path, applied));
    }
    project_mcp_json(&mut settings, dir, user_layer.as_ref(), env)?;
    let trusted =
        settings.project.as_ref().map_or_else(|| trust::is_trusted(user_layer.as_ref(), dir), |p| p.trusted);
    settings.workspace_trusted = trusted;
    hooks::project_claude_settings(&mut settings, dir, trusted)?;
    permissions::project_claude_permissions(&mut settings, dir, trusted)?;
    let profile = profile.map(str::to_owned).or_else(|| env.get("BOSUN_PROFILE").map(str::to_owned));
    if let Some(name) = profile {
        // The user's file first: a project's profile never shadows the
        // user's (the gate also drops it, naming it).
        let found = files.iter().find_map(|(path, layer)| layer.profiles.get(&name).map(|p| (path, p)));
        let Some((path, layer)) = found else {
            bail!("no profile `{name}` in the configuration files ({})", describe_files(&files));
        };
        let from_project = settings.project.as_ref().is_some_and(|p| &p.file == path);
        let origin = if from_project { RuleOrigin::Project } else { RuleOrigin::User };
        settings.apply_from(layer, &Source::Profile(name.clone(), path.clone()), origin)?;
    }
    let from_env = Layer::from_env(env)?;
    for (key, var) in Layer::ENV_VARS {
        if env.get(var).is_some() {
            let mut one = Layer::default();
            from_env.copy_key(key, &mut one);
            settings.apply(&one, &Source::Env(var))?;
        }
    }
    let mut flag = |layer: Layer, name: &'static str| settings.apply(&layer, &Source::Flag(name));
    if let Some(model) = &flags.model {
        flag(Layer { model: Some(model.clone()), ..Layer::default() }, "--model")?;
    }
    if let Some(url) = &flags.base_url {
        flag(Layer { base_url: Some(url.clone()), ..Layer::default() }, "--base-url")?;
    }
    if let Some(effort) = &flags.reasoning_effort {
        flag(Layer { reasoning_effort: Some(effort.clone()), ..Layer::default() }, "--effort")?;
    }
    if let Some(mode) = flags.mode {
        flag(Layer { mode: Some(mode.to_owned()), ..Layer::default() }, "--mode")?;
    }
    if flags.no_project_docs {
        flag(Layer { project_docs: Some(false), ..Layer::default() }, "--no-project-docs")?;
    }
    if let Some(rounds) = flags.max_rounds {
        flag(Layer { max_rounds: Some(rounds), ..Layer::default() }, "--max-rounds")?;
    }
    if let Some(tokens) = flags.max_tokens {
        flag(Layer { max_turn_tokens: Some(tokens), ..Layer::default() }, "--max-tokens")?;
    }
    if let Some(secs) = flags.max_time {
        flag(Layer { max_turn_seconds: Some(secs), ..Layer::default() }, "--max-time")?;
    }
    if let Some(dollars) = flags.max_cost {
        flag(Layer { max_turn_cost: Some(dollars), ..Layer::default() }, "--max-cost")?;
    }
    if let Some(mode) = flags.sandbox {
        let table = sandbox::SandboxLayer { mode: Some(mode), ..sandbox::SandboxLayer::default() };
        flag(Layer { sandbox: Some(table), ..Layer::default() }, "--sandbox")?;
    }
    settings.allow_any_workspace = flags.allow_any_workspace;
    settings.sandbox.expand_home(env.get("HOME"))?;
    Ok(settings)
}

/// The servers of the workspace's `.mcp.json`, below every TOML file: a
/// server of the same name in a config file wins. Read only when the
/// workspace is trusted (invariant 20); otherwise named as not started.
fn project_mcp_json(settings: &mut Settings, dir: &Path, user: Option<&Layer>, env: &Env) -> Result<()> {
    let path = dir.join(mcp::MCP_JSON);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    let trusted = settings.project.as_ref().map_or_else(|| trust::is_trusted(user, dir), |p| p.trusted);
    if !trusted {
        settings.mcp_notices.push(format!(
            "{} names MCP servers, which an untrusted project cannot start (`bosun trust` allows them)",
            path.display()
        ));
        return Ok(());
    }
    let text = trust::read_plain_file(&path, mcp::MAX_MCP_JSON_BYTES)?;
    let (servers, notices) =
        mcp::parse_mcp_json(&text, env).with_context(|| format!("in {}", path.display()))?;
    settings.mcp_notices.extend(notices);
    let source = Source::File(path);
    for (name, entry) in servers {
        if settings.mcp_servers.contains_key(&name) {
            continue;
        }
        settings.note(&format!("mcp_servers.{name}"), entry.summary(), source.clone());
        settings.mcp_servers.insert(name, mcp::McpServer { entry, source: source.clone() });
    }
    Ok(())
}

fn describe_files(files: &[(PathBuf, Layer)]) -> String {
    if files.is_empty() {
        return "none found".to_owned();
    }
    files.iter().map(|(p, _)| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// `bosun config show`.
pub fn show(settings: &Settings) -> String {
    let mut out = String::new();
    match &settings.project {
        Some(project) => {
            let trust = if project.trusted { "trusted" } else { "untrusted: its config may only narrow" };
            out.push_str(&format!("# project {} ({trust})\n", project.dir.display()));
            for key in &project.ignored {
                out.push_str(&format!("# ignored from {}: {key}\n", project.file.display()));
            }
        }
        None => out.push_str("# no project config\n"),
    }
    for (key, (value, source)) in &settings.sources {
        out.push_str(&format!("{key} = {value}    # {source}\n"));
    }
    if settings.model.is_none() {
        match &settings.local_model {
            Some(local) => out.push_str(&format!("# model: not set: the local model {local} (local_model)\n")),
            None => out.push_str(
                "# model: not set: the embedded local model (`bosun models pull`), or name one with --model PROVIDER/MODEL\n",
            ),
        }
    }
    out
}

/// The working directory: `-C DIR` or the current one.
pub fn workdir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir).with_context(|| format!("cannot use {} as the workspace", dir.display()))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
#[cfg(test)]
mod web_tests;
