//! Builds what a session needs from the resolved settings: the model with
//! its key, the workspace tools, the store, the system prompt, the rules.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bosun_core::{ContentPart, Model, Session, SessionBuilder, Tool, ToolChoice};
use bosun_local::{LocalModel, LocalOptions};

use crate::hints::WorkspacePaths;
use bosun_providers::{ApiKey, HostedModel, ProviderConfig};
use bosun_store::Store;
use bosun_tools::hooks::CommandHook;
use bosun_tools::{Workspace, WorkspaceTools};

use crate::config::models::uses_local_model;
use crate::config::{Env, ProviderSettings, Settings};
use crate::instructions;

/// Context tokens a local model uses at most unless `local_context` says:
/// enough for an agent turn, far less memory than a 32k training context.
const LOCAL_CONTEXT: u32 = 8192;

/// The model the settings name: a hosted `PROVIDER/MODEL`, a local GGUF
/// (`local:PATH`, `local/NAME` of a pulled model, or a pulled `hf:` file), or,
/// when nothing is configured, `local_model` or else the embedded default
/// (the pulled Qwen2.5-Coder model). A local model's path arguments are
/// held to `workspace`'s paths when `local_path_grammar` is on.
/// The session's model, and its context window in tokens when known (the
/// local engine's context size; a hosted model's from `context_window`,
/// `[models."MODEL"]` or the model table).
pub async fn model(
    settings: &Settings,
    env: &Env,
    workspace: &Workspace,
) -> Result<(Arc<dyn Model>, Option<u64>)> {
    let spec = settings.model.as_deref();
    let local =
        match spec {
            None => Some(bosun_models::resolve_local(env, settings.local_model.as_deref()).with_context(
                || {
                    match &settings.local_model {
                Some(name) => format!("the configured local_model `{name}` cannot be used"),
                None => "no model is configured and the embedded default is not downloaded yet: run `bosun \
                         models pull`, or name a hosted model with --model PROVIDER/MODEL (e.g. \
                         anthropic/claude-sonnet-4-5)"
                    .to_owned(),
            }
                },
            )?),
            Some(spec) if spec.starts_with("hf:") => Some(bosun_models::local_path(env, Some(spec))?),
            Some(spec) if spec.starts_with("local:") => Some(PathBuf::from(&spec["local:".len()..])),
            Some(spec) if spec.starts_with("local/") => {
                let rest = &spec["local/".len()..];
                // A path (`local//abs/file.gguf`, `local/./file.gguf`) or a pulled model's name.
                if rest.ends_with(".gguf") && Path::new(rest).is_file() {
                    Some(PathBuf::from(rest))
                } else {
                    Some(bosun_models::local_path(env, Some(rest))?)
                }
            }
            Some(_) => None,
        };
    if let Some(path) = local {
        if !path.is_file() {
            bail!("no model file at {}", path.display());
        }
        let shown = path.display().to_string();
        let mut options =
            LocalOptions::default().context_cap(settings.local_context.unwrap_or(LOCAL_CONTEXT));
        // The template sees today's date only with the clock on (invariant 19).
        options = options.clock(settings.clock);
        if let Some(threads) = settings.local_threads {
            options = options.threads(threads);
        }
        if let Some(layers) = settings.local_gpu_layers {
            options = options.gpu_layers(layers);
        }
        // Each command is a new process with the same system prompt and
        // tools: the prompt cache spares processing them again.
        if let Ok(dir) = bosun_models::prompt_cache_dir(env) {
            options = options.prompt_cache(dir);
        }
        let mut loaded = tokio::task::spawn_blocking(move || LocalModel::load(&path, options))
            .await
            .context("loading the local model stopped")?
            .with_context(|| format!("cannot load {shown}"))?;
        if settings.local_examples && settings.local_brief_tools {
            loaded = loaded.with_examples(crate::examples::local_examples());
        }
        if settings.local_path_grammar {
            loaded = loaded.with_argument_hints(Arc::new(WorkspacePaths::new(workspace.clone())));
        }
        // `context_window` may only lower the engine's: it cannot hold more.
        let window = settings.context_window.map_or(loaded.context_size(), |w| w.min(loaded.context_size()));
        return Ok((Arc::new(loaded), Some(u64::from(window))));
    }
    let window =
        crate::config::models::session_model(settings)?.prompt_window().unwrap_or(DEFAULT_CONTEXT_WINDOW);
    Ok((Arc::new(hosted(spec.unwrap_or_default(), settings, env)?), Some(u64::from(window))))
}

/// Keeps outputs past the bound whole in the session's store, with the
/// `read_artifact` tool, for a hosted model. Not for the local one: a small
/// model's tool list is kept short (its prompt is measured by the local
/// task suite), and its context could not take many pages anyway.
pub fn with_artifacts(
    builder: bosun_core::SessionBuilder,
    settings: &Settings,
    store: &bosun_store::Store,
    session: &str,
) -> bosun_core::SessionBuilder {
    if uses_local_model(settings) { builder } else { builder.artifacts(Arc::new(store.artifacts(session))) }
}

/// The context window assumed for a hosted model that neither bosun's model
/// table nor the config knows (`context_window` sets it; bosun says so at
/// start, see [`window_notice`]). Compaction starts at `compact_at` of it; a
/// provider that reports an overflow first is compacted for all the same.
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;

/// The line telling the person that the window is assumed, when it is.
pub fn window_notice(settings: &Settings) -> Result<Option<String>> {
    if uses_local_model(settings) {
        return Ok(None);
    }
    let model = crate::config::models::session_model(settings)?;
    Ok(model.prompt_window().is_none().then(|| {
        format!(
            "bosun: the context window of {} is not known; assuming {DEFAULT_CONTEXT_WINDOW} tokens (set \
             `context_window` in the config, or under [models.\"{}\"])",
            model.name, model.name
        )
    }))
}

/// The model a session runs on as the store records it: `PROVIDER/MODEL`,
/// or `local/NAME` for the embedded engine.
pub fn model_label(settings: &Settings) -> String {
    match &settings.model {
        Some(spec) => spec.clone(),
        None => format!("local/{}", settings.local_model.as_deref().unwrap_or(bosun_models::DEFAULT_MODEL)),
    }
}

fn hosted(spec: &str, settings: &Settings, env: &Env) -> Result<HostedModel> {
    let Some((provider, name)) = spec.split_once('/') else {
        bail!(
            "`{spec}` is not PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5), local:PATH.gguf or local/NAME"
        );
    };
    if let Some(url) = settings.base_url.as_deref() {
        check_base_url(url)?;
    }
    let mut config = match (provider, settings.base_url.as_deref()) {
        ("openai-compatible", Some(url)) => ProviderConfig::openai_compatible(url),
        ("openai-compatible", None) => {
            bail!("`openai-compatible` needs a base URL: --base-url http://HOST:PORT/v1")
        }
        (name, _) => ProviderConfig::preset(name).with_context(|| {
            format!(
                "unknown provider `{name}`; known: {}, openai-compatible, local",
                ProviderConfig::PRESETS.join(", ")
            )
        })?,
    };
    if let Some(url) = settings.base_url.as_deref() {
        config = config.with_base_url(url);
    }
    let key = bosun_providers::key_vars(provider).iter().find_map(|var| env.get(var).map(|key| (*var, key)));
    match key {
        Some((var, key)) => match key_refused(settings) {
            None => config = config.with_key(ApiKey::new(key)),
            // A key-less server (a local openai-compatible one) still works.
            Some(why) if config.key_env.is_none() => {
                eprintln!("bosun: not sending {var}: {}", crate::sanitize::line(&why))
            }
            Some(why) => bail!("not sending {var}: {why}"),
        },
        None => {
            if let Some(var) = config.key_env.clone() {
                bail!("{provider} needs an API key: set {var}");
            }
        }
    }
    for (name, value) in &settings.headers {
        check_header(name, value)?;
        config = config.with_header(name.clone(), value.clone());
    }
    if let Some(transport) = settings.providers.get(provider) {
        config = with_transport(config, transport);
    }
    Ok(HostedModel::new(config, name)?)
}

/// The `[providers.NAME]` settings over the adapter's defaults.
fn with_transport(mut config: ProviderConfig, transport: &ProviderSettings) -> ProviderConfig {
    let ms = Duration::from_millis;
    if let Some(retries) = transport.request_max_retries {
        config = config.with_request_max_retries(retries);
    }
    if let Some(idle) = transport.stream_idle_timeout_ms {
        config = config.with_idle_timeout(ms(idle));
    }
    if let Some(first) = transport.first_byte_timeout_ms {
        config = config.with_first_byte_timeout(ms(first));
    }
    if let Some(whole) = transport.request_timeout_ms {
        config = config.with_request_timeout(ms(whole));
    }
    if let Some(wait) = transport.max_retry_after_ms {
        config = config.with_max_retry_after(ms(wait));
    }
    config
}

/// A base URL is configuration: one that cannot be used is refused before
/// any request (exit 2), never reported later as a network failure.
fn check_base_url(url: &str) -> Result<()> {
    crate::config::url::http_url("the base URL", url)?;
    Ok(())
}

/// A header that HTTP cannot carry is refused the same way.
fn check_header(name: &str, value: &str) -> Result<()> {
    let shown = crate::sanitize::line(name);
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        bail!(
            "the header name `{shown}` is not a valid HTTP header name (letters, digits and `-`, no spaces)"
        );
    }
    if reqwest::header::HeaderValue::from_str(value).is_err() {
        bail!(
            "the value of header `{shown}` is not a valid HTTP header value (no newlines or control characters)"
        );
    }
    Ok(())
}

/// Why the provider's key must not go to the base URL in effect, if so: a
/// key goes to the provider's preset host or to a base URL the user set
/// (own config, environment, flags); a project's base URL gets it only when
/// the user's config lists its origin (scheme, host and port) in
/// `allowed_key_hosts` (invariant 20).
fn key_refused(settings: &Settings) -> Option<String> {
    let url = settings.base_url.as_deref().filter(|_| settings.base_url_from_project)?;
    let parsed = reqwest::Url::parse(url).ok();
    if let Some(parsed) = &parsed
        && settings.allowed_key_hosts.iter().any(|allowed| allowed.allows(parsed))
    {
        return None;
    }
    let file = settings.project.as_ref().map_or_else(String::new, |p| format!(" ({})", p.file.display()));
    let entry = parsed.as_ref().and_then(crate::config::KeyHost::entry_for);
    Some(format!(
        "the project's config{file} sets base_url = {url}, and keys go only to a host you chose; to send it \
         there, add \"{}\" to allowed_key_hosts in your own config",
        entry.as_deref().unwrap_or(url)
    ))
}

/// The session database path.
pub fn store_path(settings: &Settings, env: &Env) -> Result<PathBuf> {
    if let Some(path) = &settings.sessions_db {
        return Ok(path.clone());
    }
    bosun_store::default_path(|name| env.get(name).map(str::to_owned))
        .context("cannot tell where to keep sessions: set BOSUN_HOME or HOME")
}

/// Opens the store.
pub fn store(settings: &Settings, env: &Env) -> Result<Store> {
    let path = store_path(settings, env)?;
    Ok(Store::open(&path)?)
}

/// The workspace and its tools: the brief set for a local model unless
/// `local_brief_tools` is off.
pub fn tools(
    dir: &Path,
    env: &Env,
    settings: &Settings,
    notices: &bosun_agent::Notices,
) -> Result<(Workspace, Vec<Arc<dyn Tool>>)> {
    let workspace = Workspace::open(dir)?;
    let sandbox = crate::sandboxing::for_workspace(workspace.root_path(), env, settings, notices)?;
    let shell = shell_config(&workspace, env).with_sandbox(sandbox);
    let skills = skills(&workspace, settings, env).skills;
    let tools = WorkspaceTools::new(workspace.clone()).shell(shell).skills(skills);
    let tools = if settings.local_brief_tools && uses_local_model(settings) {
        tools.build_brief()
    } else {
        tools.build()
    };
    Ok((workspace, tools))
}

/// What the shell and command hooks run with: the workspace root, PATH and
/// HOME from bosun's environment, nothing else of it.
fn shell_config(workspace: &Workspace, env: &Env) -> bosun_tools::ShellConfig {
    bosun_tools::ShellConfig::new(workspace.root_path().to_path_buf())
        .with_path(env.get("PATH").unwrap_or("/usr/local/bin:/usr/bin:/bin"))
        .with_home(env.get("HOME"))
}

/// Adds the configured command hooks (docs/hooks.md) to `builder`, in
/// their order, each run for the stored session `session` in the workspace
/// root with the shell's PATH and HOME.
pub fn with_hooks(
    mut builder: SessionBuilder,
    settings: &Settings,
    env: &Env,
    workspace: &Workspace,
    session: &str,
) -> SessionBuilder {
    for hook in command_hooks(settings, env, workspace, session) {
        builder = builder.hook(hook);
    }
    builder
}

/// The configured command hooks, in their order, each run for the stored
/// session `session` in the workspace root with the shell's PATH and HOME.
pub fn command_hooks(
    settings: &Settings,
    env: &Env,
    workspace: &Workspace,
    session: &str,
) -> Vec<Arc<dyn bosun_core::hooks::SessionHooks>> {
    let root = workspace.root_path();
    // `tools` builds the same sandbox first and stops the start when it
    // cannot; a failure here is that one, already reported.
    let shell = match crate::sandboxing::for_workspace(root, env, settings, &bosun_agent::Notices::ignored())
    {
        Ok(sandbox) => shell_config(workspace, env).with_sandbox(sandbox),
        Err(error) => {
            tracing::warn!("hooks: the sandbox could not be built: {error:#}");
            shell_config(workspace, env)
        }
    };
    settings
        .hooks
        .iter()
        .map(|hook| {
            Arc::new(CommandHook::new(hook.spec.clone(), session, root, &shell))
                as Arc<dyn bosun_core::hooks::SessionHooks>
        })
        .collect()
}

const BASE_PROMPT: &str = "You are bosun, a careful coding agent working in the user's workspace. Use the tools \
to read, search, edit and run things; paths are relative to the workspace root. Read a file before changing it, \
keep changes small and focused, and run the project's checks when it helps. When you are done, answer briefly \
with what you did.";

/// The prompt for small local models. Measured on Qwen2.5-Coder-0.5B: the
/// longer prompt above, with the tool list, makes it guess what a file says
/// instead of reading it; this shorter one, which says plainly that files are
/// unseen until read, gets the call.
const LOCAL_PROMPT: &str = "You are bosun, a helpful coding assistant. You cannot see the user's files: call \
read_file to read one, and the other tools to search, edit or run things. Paths are relative to the workspace \
root. When you have what you need, answer briefly.";

/// The system prompt, with project instructions when enabled and the
/// skills' list; also returns a warning to show when the instructions were
/// cut or a skill was skipped.
pub fn system_prompt(workspace: &Workspace, settings: &Settings, env: &Env) -> (String, Option<String>) {
    let base = if uses_local_model(settings) { LOCAL_PROMPT } else { BASE_PROMPT };
    let mut prompt = base.to_owned();
    let mut warnings = Vec::new();
    if settings.project_docs {
        // Read through the workspace's own handle, as the file tools read.
        let found = instructions::collect(workspace);
        if let Some(section) = instructions::section(&found) {
            prompt.push_str(&section);
        }
        warnings.extend(found.warning);
    }
    let found = skills(workspace, settings, env);
    prompt.extend(found.skills.prompt_section());
    warnings.extend(found.warnings);
    (prompt, (!warnings.is_empty()).then(|| warnings.join("; ")))
}

/// The skills of a run (docs/skills.md): the user's (`skills/` beside the
/// user's config file) and, unless `project_docs` is off, the project's.
/// An untrusted project's are read too, as its AGENTS.md is: prompt text and
/// files to read, not authority.
fn skills(workspace: &Workspace, settings: &Settings, env: &Env) -> bosun_tools::skills::Discovery {
    let user = crate::config::user_file(env).and_then(|file| file.parent().map(|dir| dir.join("skills")));
    bosun_tools::skills::discover(settings.project_docs.then_some(workspace), user.as_deref())
}

/// A builder with everything but the journal, prompt and approver.
pub fn builder(
    model: Arc<dyn Model>,
    context_window: Option<u64>,
    workspace: &Workspace,
    tools: Vec<Arc<dyn Tool>>,
    source: Option<Arc<dyn bosun_core::ToolSource>>,
    settings: &Settings,
) -> anyhow::Result<SessionBuilder> {
    let mut builder = Session::builder_shared(model)
        .workspace(workspace.identity().clone())
        .tools(tools)
        .mode(settings.mode)
        .rules(settings.rules.clone())
        .clock(settings.clock);
    if let Some(source) = source {
        builder = builder.tool_source(source);
    }
    if let Some(rounds) = settings.max_rounds {
        builder = builder.max_rounds(rounds);
    }
    if let Some(secs) = settings.tool_timeout_secs {
        builder = builder.tool_timeout(Duration::from_secs(secs));
    }
    let limits = settings.turn_limits;
    if let Some(tokens) = limits.tokens {
        builder = builder.max_turn_tokens(tokens);
    }
    if let Some(secs) = limits.seconds {
        builder = builder.max_turn_time(Duration::from_secs(secs));
    }
    if let Some(micros) = limits.cost_micros {
        // A cost limit on a model bosun cannot price could never be kept.
        let Some(pricing) = crate::config::models::pricing(settings) else {
            anyhow::bail!(
                "max_turn_cost is set, but bosun has no prices for {}: add them under [models] in the config, \
                 or drop the cost limit",
                settings.model.as_deref().unwrap_or("the local model")
            );
        };
        builder = builder.max_turn_cost(micros, pricing);
    } else if let Some(pricing) = crate::config::models::pricing(settings) {
        // Events, the journal and `sessions show` then carry costs.
        builder = builder.pricing(pricing);
    }
    if let Some(window) = context_window {
        builder = builder.context_window(window);
    }
    if let Some(fraction) = settings.compact_at {
        builder = builder.compact_at(fraction);
    }
    if settings.local_persistence && uses_local_model(settings) {
        // The rules decide the first round too: a look only when the
        // prompt is about the workspace (`local_first_call`).
        let rules = bosun_core::Persistence::for_small_models().with_look_first(settings.local_first_call);
        builder = builder.persistence(rules);
    } else if settings.local_first_call && uses_local_model(settings) {
        builder = builder.first_round_tool_choice(ToolChoice::Required);
    }
    if settings.local_read_named && uses_local_model(settings) {
        builder = builder.opening_calls(read_named_files(workspace.clone()));
    }
    // `disabled_tools` leaves tools out of what the model is offered; a
    // call to one gets a refusal before any approval (invariant 5). A name
    // that is no tool fails the build, naming it.
    for tool in &settings.disabled_tools {
        builder = builder.disable(tool.clone());
    }
    Ok(builder)
}

/// Files a local model is shown before its first round: up to this many
/// that the prompt names.
const NAMED_FILES_READ: usize = 3;

/// The opening calls that read, with `read_file`, the files a prompt names.
fn read_named_files(workspace: Workspace) -> bosun_core::OpeningCalls {
    Arc::new(move |prompt: &[ContentPart]| {
        let text = bosun_core::message::text_lines(prompt);
        bosun_tools::named::named_files(&workspace, &text, NAMED_FILES_READ)
            .into_iter()
            .map(|path| bosun_core::OpeningCall::new("read_file", serde_json::json!({ "path": path })))
            .collect()
    })
}

#[cfg(test)]
mod checks {
    use super::{check_base_url, check_header};

    #[test]
    fn headers_http_cannot_carry_are_refused_naming_the_header_not_its_value() {
        assert!(check_header("x-custom", "a value").is_ok());
        let spaced = check_header("x custom", "v").unwrap_err().to_string();
        assert!(spaced.contains("`x custom` is not a valid HTTP header name"), "{spaced}");
        let newline = check_header("x-token", "secret\nInjected: yes").unwrap_err().to_string();
        assert!(newline.contains("header `x-token` is not a valid HTTP header value"), "{newline}");
        assert!(!newline.contains("secret"), "the value is not echoed: {newline}");
    }

    #[test]
    fn base_urls_must_be_http_with_a_host() {
        assert!(check_base_url("http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("https://api.example.com/v1").is_ok());
        for (bad, why) in
            [("not a url", "is not a URL"), ("ftp://h/v1", "not ftp://"), ("file:///etc", "not file://")]
        {
            let error = check_base_url(bad).unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }
}
