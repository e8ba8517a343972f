//! One configuration layer as written in TOML, checked strictly: unknown
//! keys are errors naming their path, and API keys are refused (they belong
//! in environment variables).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail};
use serde::Deserialize;

use super::Env;
use super::permissions::ToolRule;

/// A layer: a file, a profile, the environment or the flags.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// `PROVIDER/MODEL`.
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
    /// How hard the model reasons: `low`, `medium`, `high`, or `off`.
    pub reasoning_effort: Option<String>,
    /// How the conversation tells that a turn ended or an approval waits
    /// while the terminal is not focused: `bell`, `osc9` or `off`.
    pub notifications: Option<String>,
    /// `read-only`, `propose`, `write` or `autonomous`.
    pub mode: Option<String>,
    /// Add AGENTS.md instructions.
    pub project_docs: Option<bool>,
    /// The session database.
    pub sessions_db: Option<PathBuf>,
    /// A Postgres database `bosun serve` keeps sessions in, shared by hosts.
    pub store_url: Option<StoreUrlText>,
    /// Model rounds per turn.
    pub max_rounds: Option<u32>,
    /// Tool timeout, seconds.
    pub tool_timeout_secs: Option<u64>,
    /// Most tokens one task (turn) may spend.
    pub max_turn_tokens: Option<u64>,
    /// Longest one task may take, seconds.
    pub max_turn_seconds: Option<u64>,
    /// Most one task may cost, in dollars (needs a priced model).
    pub max_turn_cost: Option<f64>,
    /// The fraction of the context window at which compaction starts.
    pub compact_at: Option<f64>,
    /// The most context tokens a local model uses (its file's size when smaller).
    pub local_context: Option<u32>,
    /// Threads a local model runs on (the physical cores when unset).
    pub local_threads: Option<u32>,
    /// Layers of a local model offloaded to a GPU (llama.cpp's default, all
    /// of them, when unset; only builds with a GPU backend have one).
    pub local_gpu_layers: Option<u32>,
    /// The local model run when no `--model` is given: a catalog name, an
    /// `hf:` reference already pulled, or an absolute path to a `.gguf`.
    pub local_model: Option<String>,
    /// A local model's first round of each turn must call a tool (default
    /// true): a small model otherwise answers questions about the
    /// workspace from invention.
    pub local_first_call: Option<bool>,
    /// A local model is held to its task (default true): after a failed
    /// call the next rounds are calls, and a change is pushed until made
    /// (`bosun_core::Persistence`).
    pub local_persistence: Option<bool>,
    /// The files a prompt names are read for a local model before its
    /// first round (default true; `bosun_tools::named`).
    pub local_read_named: Option<bool>,
    /// A local model's path arguments may only name paths that exist
    /// (default false; see `hints`).
    pub local_path_grammar: Option<bool>,
    /// A local model gets the brief tool set (default true): short
    /// descriptions, essential arguments, no apply_patch.
    pub local_brief_tools: Option<bool>,
    /// A local model is shown three example turns before each conversation
    /// (default true; see `examples`).
    pub local_examples: Option<bool>,
    /// Let the model see today's date (a local model's chat template asks for
    /// it); off, the template gets a fixed neutral date (invariant 19).
    pub clock: Option<bool>,
    /// Whether the session offers `delegate_tasks` (sub-agents); unset, the
    /// wiring decides (on for a hosted model, off for the local one).
    pub subagents: Option<bool>,
    /// Most sub-agents running at once per session, 1 to 10.
    pub max_subagents: Option<u32>,
    /// Per-tool permission rules.
    #[serde(default)]
    pub permissions: BTreeMap<String, ToolRule>,
    /// Extra headers sent to the provider.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Per-provider transport settings, by provider name (`openai`,
    /// `anthropic`, …): `[providers.openai] request_max_retries = 2`.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Tools to leave out of the session.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// MCP servers by name: `[mcp_servers.github] command = "…"`.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, super::mcp::McpServerEntry>,
    /// Command hooks by point: `[[hooks.PreToolUse]] matcher = "shell"
    /// command = "…"` (see `hooks.rs`, docs/hooks.md).
    #[serde(default)]
    pub hooks: BTreeMap<String, Vec<super::hooks::HookEntry>>,
    /// What is known of models, by `PROVIDER/MODEL` or bare model name:
    /// `[models."openai/gpt-6.2-sol"] price_output = 10` (see `models.rs`).
    #[serde(default)]
    pub models: BTreeMap<String, super::models::ModelEntry>,
    /// The session model's context window, over the model table's.
    pub context_window: Option<u32>,
    /// Hosts (besides each provider's own) that may receive the provider's
    /// key when a project's config sets the base URL (user file only).
    pub allowed_key_hosts: Option<Vec<String>>,
    /// Per-project settings by absolute path (user file only):
    /// `[projects."/abs/path"] trust_level = "trusted"`.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectEntry>,
    /// Named profiles (files only).
    #[serde(default)]
    pub profiles: BTreeMap<String, Layer>,
    /// What an OS sandbox around the commands bosun runs may do (`sandbox.rs`).
    pub sandbox: Option<super::sandbox::SandboxLayer>,
    /// What is kept of files before tools change them (`rewind.rs`).
    pub rewind: Option<super::rewind::RewindLayer>,
    /// The network tools, `web_fetch` and `web_search` (user file only;
    /// `web.rs`).
    pub web: Option<super::web::WebLayer>,
    /// OpenAPI specs whose operations are tools (user file only; `openapi.rs`).
    #[serde(default)]
    pub openapi: BTreeMap<String, super::openapi::OpenApiLayer>,
}

/// How bosun talks to one provider, as Codex names these settings; what is
/// unset keeps the adapter's default. The cloud keys (`endpoint`,
/// `api_version`, `deployments` for Azure; `project`, `location` for
/// Vertex; `region`, `profile` for Bedrock) say where a cloud's models are (docs/providers.md).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Retries of a failed request before any content arrived (default 3).
    pub request_max_retries: Option<u32>,
    /// Longest silence inside a streaming answer (default 300 000).
    pub stream_idle_timeout_ms: Option<u64>,
    /// Longest wait from sending a request to its first event (default 60 000).
    pub first_byte_timeout_ms: Option<u64>,
    /// Bound on a request with all its retries, until content arrives
    /// (default 600 000).
    pub request_timeout_ms: Option<u64>,
    /// Longest `Retry-After` honoured; a longer one fails at once, saying
    /// when to retry (default 60 000).
    pub max_retry_after_ms: Option<u64>,
    /// Azure: the resource endpoint (`https://RESOURCE.openai.azure.com`;
    /// else `AZURE_OPENAI_ENDPOINT`).
    pub endpoint: Option<String>,
    /// Azure: `v1` or a dated `api-version` (else `AZURE_OPENAI_API_VERSION`,
    /// else the provider's default).
    pub api_version: Option<String>,
    /// Azure: a command printing an Entra ID token (`["az", "account",
    /// "get-access-token", …]`), run without a shell, when neither
    /// `AZURE_OPENAI_API_KEY` nor `AZURE_OPENAI_AD_TOKEN` is set.
    pub token_command: Option<Vec<String>>,
    /// Azure: which model each deployment runs (`my-gpt = "gpt-5.1"`), for
    /// its window and prices.
    #[serde(default)]
    pub deployments: BTreeMap<String, String>,
    /// Vertex: the Google Cloud project (else `GOOGLE_CLOUD_PROJECT`, …).
    pub project: Option<String>,
    /// Vertex: the region or `global` (else `GOOGLE_CLOUD_LOCATION`,
    /// `CLOUD_ML_REGION`; default `global`).
    pub location: Option<String>,
    /// Bedrock: the AWS region (else `AWS_REGION`, `AWS_DEFAULT_REGION`,
    /// the profile's `region`).
    pub region: Option<String>,
    /// Bedrock: the AWS profile in the shared files (else `AWS_PROFILE`,
    /// else `default`).
    pub profile: Option<String>,
}

impl ProviderSettings {
    /// `later`'s values over these.
    pub fn merged(self, later: Self) -> Self {
        let mut deployments = self.deployments;
        deployments.extend(later.deployments);
        Self {
            request_max_retries: later.request_max_retries.or(self.request_max_retries),
            stream_idle_timeout_ms: later.stream_idle_timeout_ms.or(self.stream_idle_timeout_ms),
            first_byte_timeout_ms: later.first_byte_timeout_ms.or(self.first_byte_timeout_ms),
            request_timeout_ms: later.request_timeout_ms.or(self.request_timeout_ms),
            max_retry_after_ms: later.max_retry_after_ms.or(self.max_retry_after_ms),
            endpoint: later.endpoint.or(self.endpoint),
            api_version: later.api_version.or(self.api_version),
            token_command: later.token_command.or(self.token_command),
            deployments,
            project: later.project.or(self.project),
            location: later.location.or(self.location),
            region: later.region.or(self.region),
            profile: later.profile.or(self.profile),
        }
    }

    /// Each set value as `(key, value)`, for `config show`.
    pub fn entries(&self) -> Vec<(String, String)> {
        let numbers = [
            ("request_max_retries", self.request_max_retries.map(u64::from)),
            ("stream_idle_timeout_ms", self.stream_idle_timeout_ms),
            ("first_byte_timeout_ms", self.first_byte_timeout_ms),
            ("request_timeout_ms", self.request_timeout_ms),
            ("max_retry_after_ms", self.max_retry_after_ms),
        ];
        let texts = [
            ("endpoint", &self.endpoint),
            ("api_version", &self.api_version),
            ("project", &self.project),
            ("location", &self.location),
            ("region", &self.region),
            ("profile", &self.profile),
        ];
        let mut entries: Vec<(String, String)> = numbers
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_owned(), value?.to_string())))
            .collect();
        if let Some(command) = &self.token_command {
            entries.push(("token_command".to_owned(), command.join(" ")));
        }
        entries.extend(texts.into_iter().filter_map(|(key, value)| Some((key.to_owned(), value.clone()?))));
        entries.extend(
            self.deployments.iter().map(|(name, model)| (format!("deployments.{name}"), model.clone())),
        );
        entries
    }
}

/// One project's entry in the user's config.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectEntry {
    /// `trusted` or `untrusted`.
    pub trust_level: Option<TrustLevel>,
}

/// Whether the user trusts a project's files to widen what bosun may do.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    /// The project's config applies in full.
    Trusted,
    /// The project's config may only narrow.
    Untrusted,
}

impl TrustLevel {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trusted => "trusted",
            Self::Untrusted => "untrusted",
        }
    }
}

/// Key names that hold secrets; refused in files.
const SECRET_KEYS: &[&str] = &["api_key", "apikey", "key", "token", "secret", "password", "authorization"];
/// How well-known API keys begin.
const KEY_PREFIXES: &[&str] = &["sk-", "sk-ant-", "AIza", "gsk_", "xai-", "ghp_", "github_pat_"];

impl Layer {
    /// Environment variables and the setting each sets.
    pub const ENV_VARS: &'static [(&'static str, &'static str)] = &[
        ("model", "BOSUN_MODEL"),
        ("base_url", "BOSUN_BASE_URL"),
        ("mode", "BOSUN_MODE"),
        ("project_docs", "BOSUN_PROJECT_DOCS"),
        ("sessions_db", "BOSUN_SESSIONS_DB"),
        ("store_url", "BOSUN_STORE_URL"),
        ("max_rounds", "BOSUN_MAX_ROUNDS"),
        ("max_turn_tokens", "BOSUN_MAX_TURN_TOKENS"),
        ("max_turn_seconds", "BOSUN_MAX_TURN_SECONDS"),
        ("max_turn_cost", "BOSUN_MAX_TURN_COST"),
        ("compact_at", "BOSUN_COMPACT_AT"),
        ("local_context", "BOSUN_LOCAL_CONTEXT"),
        ("local_threads", "BOSUN_LOCAL_THREADS"),
        ("local_gpu_layers", "BOSUN_LOCAL_GPU_LAYERS"),
        ("local_model", "BOSUN_LOCAL_MODEL"),
        ("clock", "BOSUN_CLOCK"),
        ("local_first_call", "BOSUN_LOCAL_FIRST_CALL"),
        ("local_persistence", "BOSUN_LOCAL_PERSISTENCE"),
        ("local_read_named", "BOSUN_LOCAL_READ_NAMED"),
        ("local_path_grammar", "BOSUN_LOCAL_PATH_GRAMMAR"),
        ("local_brief_tools", "BOSUN_LOCAL_BRIEF_TOOLS"),
        ("local_examples", "BOSUN_LOCAL_EXAMPLES"),
        ("subagents", "BOSUN_SUBAGENTS"),
        ("max_subagents", "BOSUN_MAX_SUBAGENTS"),
    ];

    /// Reads and checks a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text, path)
    }

    /// Checks a file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let table: toml::Table =
            toml::from_str(text).with_context(|| format!("{} is not valid TOML", path.display()))?;
        refuse_secrets(&toml::Value::Table(table.clone()), "", path)?;
        let layer: Layer = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let at = e.path().to_string();
            crate::error::invalid!("{}: at `{at}`: {}", path.display(), e.inner())
        })?;
        for (name, profile) in &layer.profiles {
            if !profile.profiles.is_empty() {
                bail!("{}: profile `{name}` may not hold profiles", path.display());
            }
        }
        Ok(layer)
    }

    /// The `BOSUN_*` variables as a layer.
    pub fn from_env(env: &Env) -> Result<Self> {
        let number = |var: &str| -> Result<Option<u32>> {
            env.get(var).map(|v| v.parse().with_context(|| format!("{var}={v} is not a number"))).transpose()
        };
        let big = |var: &str| -> Result<Option<u64>> {
            env.get(var).map(|v| v.parse().with_context(|| format!("{var}={v} is not a number"))).transpose()
        };
        let fraction = |var: &str| -> Result<Option<f64>> {
            env.get(var).map(|v| v.parse().with_context(|| format!("{var}={v} is not a number"))).transpose()
        };
        let flag = |var: &str| -> Result<Option<bool>> {
            env.get(var)
                .map(|v| match v {
                    "1" | "true" | "yes" => Ok(true),
                    "0" | "false" | "no" => Ok(false),
                    other => bail!("{var}={other}: use true or false"),
                })
                .transpose()
        };
        Ok(Self {
            model: env.get("BOSUN_MODEL").map(str::to_owned),
            base_url: env.get("BOSUN_BASE_URL").map(str::to_owned),
            mode: env.get("BOSUN_MODE").map(str::to_owned),
            project_docs: flag("BOSUN_PROJECT_DOCS")?,
            sessions_db: env.get("BOSUN_SESSIONS_DB").map(PathBuf::from),
            store_url: env.get("BOSUN_STORE_URL").map(|url| StoreUrlText(url.to_owned())),
            max_rounds: number("BOSUN_MAX_ROUNDS")?,
            max_turn_tokens: big("BOSUN_MAX_TURN_TOKENS")?,
            max_turn_seconds: big("BOSUN_MAX_TURN_SECONDS")?,
            max_turn_cost: fraction("BOSUN_MAX_TURN_COST")?,
            compact_at: fraction("BOSUN_COMPACT_AT")?,
            local_context: number("BOSUN_LOCAL_CONTEXT")?,
            local_threads: number("BOSUN_LOCAL_THREADS")?,
            local_gpu_layers: number("BOSUN_LOCAL_GPU_LAYERS")?,
            local_model: env.get("BOSUN_LOCAL_MODEL").map(str::to_owned),
            clock: flag("BOSUN_CLOCK")?,
            local_first_call: flag("BOSUN_LOCAL_FIRST_CALL")?,
            local_persistence: flag("BOSUN_LOCAL_PERSISTENCE")?,
            local_read_named: flag("BOSUN_LOCAL_READ_NAMED")?,
            local_path_grammar: flag("BOSUN_LOCAL_PATH_GRAMMAR")?,
            local_brief_tools: flag("BOSUN_LOCAL_BRIEF_TOOLS")?,
            local_examples: flag("BOSUN_LOCAL_EXAMPLES")?,
            subagents: flag("BOSUN_SUBAGENTS")?,
            max_subagents: number("BOSUN_MAX_SUBAGENTS")?,
            ..Self::default()
        })
    }

    /// Copies one setting into `into` (so each variable gets its own source).
    pub fn copy_key(&self, key: &str, into: &mut Layer) {
        match key {
            "model" => into.model = self.model.clone(),
            "base_url" => into.base_url = self.base_url.clone(),
            "mode" => into.mode = self.mode.clone(),
            "project_docs" => into.project_docs = self.project_docs,
            "sessions_db" => into.sessions_db = self.sessions_db.clone(),
            "store_url" => into.store_url = self.store_url.clone(),
            "max_rounds" => into.max_rounds = self.max_rounds,
            "max_turn_tokens" => into.max_turn_tokens = self.max_turn_tokens,
            "max_turn_seconds" => into.max_turn_seconds = self.max_turn_seconds,
            "max_turn_cost" => into.max_turn_cost = self.max_turn_cost,
            "compact_at" => into.compact_at = self.compact_at,
            "local_context" => into.local_context = self.local_context,
            "local_threads" => into.local_threads = self.local_threads,
            "local_gpu_layers" => into.local_gpu_layers = self.local_gpu_layers,
            "local_model" => into.local_model = self.local_model.clone(),
            "clock" => into.clock = self.clock,
            "local_first_call" => into.local_first_call = self.local_first_call,
            "local_persistence" => into.local_persistence = self.local_persistence,
            "local_read_named" => into.local_read_named = self.local_read_named,
            "local_path_grammar" => into.local_path_grammar = self.local_path_grammar,
            "local_brief_tools" => into.local_brief_tools = self.local_brief_tools,
            "local_examples" => into.local_examples = self.local_examples,
            "subagents" => into.subagents = self.subagents,
            "max_subagents" => into.max_subagents = self.max_subagents,
            _ => {}
        }
    }
}

fn refuse_secrets(value: &toml::Value, at: &str, path: &Path) -> Result<()> {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                let here = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                let lower = key.to_lowercase();
                let secret_name =
                    SECRET_KEYS.iter().any(|s| lower == *s || lower.ends_with(&format!("_{s}")));
                if secret_name && at.starts_with("mcp_servers") {
                    bail!(
                        "{}: `{here}` looks like a secret, and config files do not hold secrets. Pass it from \
                         bosun's environment: `env_vars = [\"{key}\"]` for a program, `bearer_token_env_var` \
                         or `env_http_headers` for a URL",
                        path.display()
                    );
                }
                if secret_name && !at.starts_with("permissions") {
                    bail!(
                        "{}: `{here}` looks like a secret; API keys are not read from config files. Set the \
                         provider's environment variable instead (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, …)",
                        path.display()
                    );
                }
                refuse_secrets(inner, &here, path)?;
            }
        }
        toml::Value::String(text) if KEY_PREFIXES.iter().any(|p| text.starts_with(p) && text.len() > 20) => {
            bail!(
                "{}: the value of `{at}` looks like an API key; keys are not read from config files. Set the \
                 provider's environment variable instead (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, …)",
                path.display()
            );
        }
        toml::Value::Array(items) => {
            for item in items {
                refuse_secrets(item, at, path)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `store_url` as written. Its `Debug` never shows a password, as a layer
/// from the environment may hold one.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct StoreUrlText(pub String);

impl std::fmt::Debug for StoreUrlText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = bosun_store_pg::PgUrl::parse(&self.0)
            .map_or_else(|_| "(unreadable)".to_owned(), |u| u.redacted());
        f.debug_tuple("StoreUrlText").field(&shown).finish()
    }
}
