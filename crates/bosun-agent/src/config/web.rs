//! The `[web]` table: bosun-web's network tools, `web_fetch` and
//! `web_search`, off unless the user's own config turns them on
//! (invariant 19: opt-in, asking, no hidden vendors). Which hosts bosun's
//! own process talks to, and with which key, is the user's choice alone: a
//! project's config, trusted or not, cannot set any of this table
//! (`trust::gate` refuses it whole, and [`Settings::apply_from`] applies it
//! from the user's layers only), and no variable or flag sets it. There is
//! no default search provider. A key is never in a file: `search.key_env`
//! names the environment variable holding it, and it is sent only to the
//! provider's URL (and its own same-site redirects).
//!
//! [`Settings::apply_from`]: super::Settings

use std::sync::Arc;

use bosun_core::Tool;
use bosun_web::{SearchKind, SearchProvider, WebFetch, WebLimits, WebSearch};
use serde::Deserialize;

use super::Env;
use crate::error::{Result, bail};

/// Brave's Web Search endpoint, the URL of `provider = "brave"` unless
/// `url` names another.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

/// The resolved `[web]` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebSettings {
    /// Whether `web_fetch` is offered (default false).
    pub fetch: bool,
    /// The search provider `web_search` asks; `None` (the default): no
    /// `web_search`.
    pub search: Option<SearchSettings>,
    /// Longest a call may take, seconds (bosun-web's default when unset).
    pub timeout_secs: Option<u64>,
    /// Most bytes of a response read.
    pub max_response_bytes: Option<usize>,
    /// Most redirects followed.
    pub max_redirects: Option<usize>,
}

/// The search provider the user named.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchSettings {
    /// Its API.
    pub kind: SearchKind,
    /// Its endpoint.
    pub url: String,
    /// The environment variable holding its key, if it takes one.
    pub key_env: Option<String>,
    /// Most results a call returns.
    pub max_results: Option<usize>,
}

/// `[web]` as the user's file (or one of its profiles) writes it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebLayer {
    /// Offer `web_fetch`.
    pub fetch: Option<bool>,
    /// Longest a call may take, seconds.
    pub timeout_secs: Option<u64>,
    /// Most bytes of a response read.
    pub max_response_bytes: Option<usize>,
    /// Most redirects followed.
    pub max_redirects: Option<usize>,
    /// The search provider; replaces a lower layer's whole.
    pub search: Option<SearchLayer>,
}

/// `[web.search]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SearchLayer {
    /// `searxng`, `brave`, or `none` (a profile turning search off).
    pub provider: String,
    /// The endpoint: a SearxNG instance (required), Brave's API (default
    /// [`BRAVE_URL`]).
    pub url: Option<String>,
    /// The environment variable holding the key (required for Brave).
    pub key_env: Option<String>,
    /// Most results a call returns, 1 to 20.
    pub max_results: Option<usize>,
}

impl WebSettings {
    /// Applies one of the user's layers; `source` names it in errors.
    /// Returns what it set, as `(key, value)` for `config show`.
    pub fn apply(&mut self, layer: &WebLayer, source: &str) -> Result<Vec<(&'static str, String)>> {
        let WebLayer { fetch, timeout_secs, max_response_bytes, max_redirects, search } = layer;
        let mut set = Vec::new();
        if let Some(fetch) = fetch {
            self.fetch = *fetch;
            set.push(("web.fetch", fetch.to_string()));
        }
        if let Some(secs) = timeout_secs {
            let most = WebLimits::HARD_MAX_TIMEOUT.as_secs();
            if !(1..=most).contains(secs) {
                bail!("web.timeout_secs = {secs}, from {source}: use 1 to {most}");
            }
            self.timeout_secs = Some(*secs);
            set.push(("web.timeout_secs", secs.to_string()));
        }
        if let Some(bytes) = max_response_bytes {
            let most = WebLimits::HARD_MAX_RESPONSE_BYTES;
            if !(1..=most).contains(bytes) {
                bail!("web.max_response_bytes = {bytes}, from {source}: use 1 to {most}");
            }
            self.max_response_bytes = Some(*bytes);
            set.push(("web.max_response_bytes", bytes.to_string()));
        }
        if let Some(redirects) = max_redirects {
            let most = WebLimits::HARD_MAX_REDIRECTS;
            if *redirects > most {
                bail!("web.max_redirects = {redirects}, from {source}: use 0 to {most}");
            }
            self.max_redirects = Some(*redirects);
            set.push(("web.max_redirects", redirects.to_string()));
        }
        if let Some(search) = search {
            self.search = search.resolve(source)?;
            let shown = self.search.as_ref().map_or_else(|| "none".to_owned(), SearchSettings::summary);
            set.push(("web.search", shown));
        }
        Ok(set)
    }

    /// The bounds of a call.
    pub fn limits(&self) -> WebLimits {
        let mut limits = WebLimits::default();
        if let Some(secs) = self.timeout_secs {
            limits = limits.with_timeout(std::time::Duration::from_secs(secs));
        }
        if let Some(bytes) = self.max_response_bytes {
            limits = limits.with_max_response_bytes(bytes);
        }
        if let Some(redirects) = self.max_redirects {
            limits = limits.with_max_redirects(redirects);
        }
        limits
    }

    /// The tools these settings turn on, the key read from `env`.
    pub fn tools(&self, env: &Env) -> Result<WebTools> {
        let limits = self.limits();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if self.fetch {
            tools.push(Arc::new(WebFetch::new(limits)?));
        }
        let Some(search) = &self.search else { return Ok(WebTools { tools, left_out: None }) };
        let key = match &search.key_env {
            Some(var) => match env.get(var).filter(|key| !key.trim().is_empty()) {
                Some(key) => Some(key.trim().to_owned()),
                None => {
                    let why = format!(
                        "web_search is not offered: web.search.key_env names {var}, which is not set in bosun's \
                         environment"
                    );
                    return Ok(WebTools { tools, left_out: Some(why) });
                }
            },
            None => None,
        };
        let mut provider = SearchProvider::new(search.kind, &search.url, key)?;
        if let Some(most) = search.max_results {
            provider = provider.with_max_results(most);
        }
        tools.push(Arc::new(WebSearch::new(provider, limits)?));
        Ok(WebTools { tools, left_out: None })
    }
}

/// The tools [`WebSettings::tools`] built.
#[non_exhaustive]
pub struct WebTools {
    /// `web_fetch` and `web_search`, those turned on.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Why a tool turned on was left out (its key's variable is not set),
    /// for a notice.
    pub left_out: Option<String>,
}

impl std::fmt::Debug for WebTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|tool| tool.definition().name.as_str()).collect();
        f.debug_struct("WebTools").field("tools", &names).field("left_out", &self.left_out).finish()
    }
}

impl SearchLayer {
    /// The provider this table names (`None` for `none`), checked.
    fn resolve(&self, source: &str) -> Result<Option<SearchSettings>> {
        let Self { provider, url, key_env, max_results } = self;
        if provider == "none" {
            return Ok(None);
        }
        let Some(kind) = SearchKind::parse(provider) else {
            bail!(
                "web.search.provider = \"{provider}\", from {source}: use \"searxng\", \"brave\" or \"none\""
            );
        };
        let url = match (kind, url) {
            (_, Some(url)) => url.clone(),
            (SearchKind::Brave, None) => BRAVE_URL.to_owned(),
            (_, None) => {
                bail!("web.search, from {source}: name your SearxNG instance with `url = \"https://…\"`")
            }
        };
        if let Err(error) = bosun_web::checked_url(&url) {
            bail!("web.search.url, from {source}: {error}");
        }
        if let Some(var) = key_env
            && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            bail!(
                "web.search.key_env = \"{var}\", from {source}: name an environment variable (letters, digits, _); \
                 the key itself is never written in a config file"
            );
        }
        if kind == SearchKind::Brave && key_env.is_none() {
            bail!(
                "web.search, from {source}: Brave needs a key; name the environment variable holding it with \
                 `key_env = \"BRAVE_SEARCH_API_KEY\"`"
            );
        }
        if let Some(most) = max_results
            && !(1..=SearchProvider::MAX_RESULTS).contains(most)
        {
            bail!("web.search.max_results = {most}, from {source}: use 1 to {}", SearchProvider::MAX_RESULTS);
        }
        Ok(Some(SearchSettings { kind, url, key_env: key_env.clone(), max_results: *max_results }))
    }
}

impl SearchSettings {
    /// For `config show`: the provider, its URL and the key's variable
    /// (never the key).
    pub fn summary(&self) -> String {
        let key = self.key_env.as_ref().map(|var| format!(", key from ${var}")).unwrap_or_default();
        format!("{} at {}{key}", self.kind.name(), self.url)
    }
}
