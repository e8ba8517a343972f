//! The session's model from the resolved settings: a hosted model with its
//! key (sent only to a host the user chose), headers and transport
//! settings, or a local GGUF model with its engine options, prompt cache
//! and argument hints; and its context window.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bosun_core::Model;
use bosun_local::{LocalModel, LocalOptions};
use bosun_providers::{ApiKey, HostedModel, ProviderConfig};
use bosun_tools::Workspace;

use crate::config::models::uses_local_model;
use crate::config::{Env, ProviderSettings, Settings};
use crate::error::{Context, Result, bail};
use crate::hints::WorkspacePaths;
use crate::notice::Notices;

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
    notices: &Notices,
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
    let described = crate::config::models::session_model(settings)?;
    let window = described.prompt_window().unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let hosted = hosted(spec.unwrap_or_default(), settings, env, notices)?.with_images(described.images);
    Ok((Arc::new(hosted), Some(u64::from(window))))
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

fn hosted(spec: &str, settings: &Settings, env: &Env, notices: &Notices) -> Result<HostedModel> {
    let Some((provider, name)) = spec.split_once('/') else {
        bail!(
            "`{spec}` is not PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5), local:PATH.gguf or local/NAME"
        );
    };
    if let Some(url) = settings.base_url.as_deref() {
        check_base_url(url)?;
    }
    let mut config = if crate::clouds::is_cloud(provider) {
        // A cloud's credentials go only where the user chose, as a key does.
        if let Some(why) = key_refused(settings) {
            bail!("not sending {provider}'s credentials: {why}");
        }
        crate::clouds::config(provider, name, settings, env)?
    } else {
        keyed(provider, settings, env, notices)?
    };
    for (name, value) in &settings.headers {
        check_header(name, value)?;
        config = config.with_header(name.clone(), value.clone());
    }
    if let Some(transport) = settings.providers.get(provider) {
        config = with_transport(config, transport);
    }
    Ok(HostedModel::new(config, name)?)
}

/// A vendor's (or a compatible server's) config, its key from the
/// environment.
fn keyed(provider: &str, settings: &Settings, env: &Env, notices: &Notices) -> Result<ProviderConfig> {
    let mut config = match (provider, settings.base_url.as_deref()) {
        ("openai-compatible", Some(url)) => ProviderConfig::openai_compatible(url),
        ("openai-compatible", None) => {
            bail!("`openai-compatible` needs a base URL: --base-url http://HOST:PORT/v1")
        }
        (name, _) => ProviderConfig::preset(name).with_context(|| {
            format!(
                "unknown provider `{name}`; known: {}, azure, azure-responses, vertex, bedrock, openai-compatible, local",
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
            Some(why) if config.key_env.is_none() => notices.warn(format!("not sending {var}: {why}")),
            Some(why) => bail!("not sending {var}: {why}"),
        },
        None => {
            if let Some(var) = config.key_env.clone() {
                bail!("{provider} needs an API key: set {var}");
            }
        }
    }
    Ok(config)
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
    let shown = bosun_core::sanitize::line(name);
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

/// The models a picker offers (`/model` with no name): the session's own
/// first, then every model of bosun's table (and the config's `[models]`)
/// whose provider has its key in the environment, by provider and name, as
/// `PROVIDER/MODEL`; the local model last. A provider without a key is left
/// out: its models could not answer.
pub fn choices(settings: &Settings, env: &Env) -> Vec<String> {
    let current = model_label(settings);
    let mut offered = vec![current.clone()];
    let has_key = |provider: &str| {
        bosun_providers::key_vars(provider).iter().any(|var| env.get(var).is_some_and(|v| !v.is_empty()))
    };
    let mut hosted: Vec<String> = bosun_providers::ModelTable::shared()
        .map(|table| table.models().iter().map(|m| format!("{}/{}", m.provider, m.id)).collect())
        .unwrap_or_default();
    hosted.extend(settings.models.keys().filter(|name| name.contains('/')).cloned());
    hosted.retain(|spec| spec.split_once('/').is_some_and(|(provider, _)| has_key(provider)));
    hosted.sort();
    hosted.dedup();
    let local = format!("local/{}", settings.local_model.as_deref().unwrap_or(bosun_models::DEFAULT_MODEL));
    for spec in hosted.into_iter().chain([local]) {
        if !offered.contains(&spec) {
            offered.push(spec);
        }
    }
    offered
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
