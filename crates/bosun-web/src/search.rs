//! `web_search`: a query sent to the one search provider the user named
//! (none by default: invariant 19, no hidden vendors). Two JSON APIs, both
//! documented and simple: a SearxNG instance's `format=json` (self-hosted,
//! no vendor at all) and Brave's Web Search API (hosted, a key). Results
//! are bounded in number and each one checked: an http(s) URL without
//! credentials, a title, a snippet, both cut to a length.

use std::fmt;

use bosun_core::{
    CallEffects, CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::Client;
use crate::network;
use crate::{WebError, WebLimits, checked_url};

/// Longest title kept, in characters.
const MAX_TITLE_CHARS: usize = 200;
/// Longest snippet kept, in characters.
const MAX_SNIPPET_CHARS: usize = 500;
/// Largest answer read from a provider.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Which API the provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchKind {
    /// A SearxNG instance's JSON API (`/search?q=…&format=json`; the
    /// instance must allow the json format).
    Searxng,
    /// Brave's Web Search API (`X-Subscription-Token`).
    Brave,
}

impl SearchKind {
    /// The kind as the configuration names it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "searxng" => Some(Self::Searxng),
            "brave" => Some(Self::Brave),
            _ => None,
        }
    }

    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Brave => "brave",
        }
    }
}

/// The search provider the user configured.
#[derive(Clone)]
#[non_exhaustive]
pub struct SearchProvider {
    /// The API.
    pub kind: SearchKind,
    /// The endpoint: a SearxNG instance (its root or its `/search`), or
    /// Brave's `https://api.search.brave.com/res/v1/web/search`.
    pub url: Url,
    key: Option<String>,
    /// Most results returned, 1 to [`SearchProvider::MAX_RESULTS`].
    pub max_results: usize,
}

impl fmt::Debug for SearchProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchProvider")
            .field("kind", &self.kind)
            .field("url", &self.url.as_str())
            .field("key", &self.key.as_ref().map(|_| "(redacted)"))
            .field("max_results", &self.max_results)
            .finish()
    }
}

impl SearchProvider {
    /// The most results a call may return.
    pub const MAX_RESULTS: usize = 20;
    /// Results returned unless configured.
    pub const DEFAULT_RESULTS: usize = 5;

    /// A provider at `url`, with `key` when it takes one (Brave needs one).
    pub fn new(kind: SearchKind, url: &str, key: Option<String>) -> Result<Self, WebError> {
        let url = checked_url(url)?;
        if kind == SearchKind::Brave && key.is_none() {
            return Err(WebError::Provider {
                host: url.host_str().unwrap_or_default().to_owned(),
                message: "nothing: Brave's API needs a key, and none was given".to_owned(),
            });
        }
        Ok(Self { kind, url, key, max_results: Self::DEFAULT_RESULTS })
    }

    /// Returns at most `results`, clamped to `1..=MAX_RESULTS`.
    pub fn with_max_results(mut self, results: usize) -> Self {
        self.max_results = results.clamp(1, Self::MAX_RESULTS);
        self
    }

    fn host(&self) -> String {
        self.url.host_str().unwrap_or_default().to_owned()
    }

    /// The request for `query`: its URL and headers.
    fn request(&self, query: &str) -> Result<(Url, HeaderMap), WebError> {
        let mut url = self.url.clone();
        let (name, value) = match self.kind {
            SearchKind::Searxng => {
                if !url.path().trim_end_matches('/').ends_with("/search") {
                    let path = format!("{}/search", url.path().trim_end_matches('/'));
                    url.set_path(&path);
                }
                url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
                (AUTHORIZATION, self.key.as_ref().map(|key| format!("Bearer {key}")))
            }
            SearchKind::Brave => {
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &self.max_results.to_string());
                (HeaderName::from_static("x-subscription-token"), self.key.clone())
            }
        };
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            let mut value = HeaderValue::from_str(&value).map_err(|_| WebError::Provider {
                host: self.host(),
                message: "nothing: the key is not a valid header".to_owned(),
            })?;
            // Kept out of reqwest's own Debug output.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok((url, headers))
    }

    /// The results in an answer, checked and bounded; and how many were left out.
    fn results(&self, body: &[u8]) -> Result<(Vec<Hit>, usize), WebError> {
        let bad = |message: String| WebError::Provider { host: self.host(), message };
        let raw: Vec<RawHit> = match self.kind {
            SearchKind::Searxng => {
                serde_json::from_slice::<Searxng>(body)
                    .map_err(|error| bad(format!("JSON bosun cannot read as SearxNG's: {error}")))?
                    .results
            }
            SearchKind::Brave => serde_json::from_slice::<Brave>(body)
                .map_err(|error| bad(format!("JSON bosun cannot read as Brave's: {error}")))?
                .web
                .map(|web| web.results)
                .unwrap_or_default(),
        };
        let mut left_out = 0;
        let mut hits = Vec::new();
        for raw in raw {
            match raw.checked() {
                Some(hit) if hits.len() < self.max_results => hits.push(hit),
                Some(_) => {}
                None => left_out += 1,
            }
        }
        Ok((hits, left_out))
    }
}

#[derive(Deserialize)]
struct Searxng {
    #[serde(default)]
    results: Vec<RawHit>,
}

#[derive(Deserialize)]
struct Brave {
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<RawHit>,
}

/// One result as a provider sends it (SearxNG's `content`, Brave's `description`).
#[derive(Deserialize)]
struct RawHit {
    url: Option<String>,
    title: Option<String>,
    #[serde(alias = "description")]
    content: Option<String>,
}

/// One checked result.
#[derive(Debug, PartialEq, Eq)]
struct Hit {
    url: String,
    title: String,
    snippet: String,
}

impl RawHit {
    fn checked(self) -> Option<Hit> {
        let url = checked_url(self.url.as_deref()?).ok()?.to_string();
        let title = clean(self.title.as_deref().unwrap_or_default(), MAX_TITLE_CHARS);
        if title.is_empty() {
            return None;
        }
        let snippet = clean(self.content.as_deref().unwrap_or_default(), MAX_SNIPPET_CHARS);
        Some(Hit { url, title, snippet })
    }
}

/// Text on one line: tags (Brave marks matches with `<strong>`) and control
/// characters out, whitespace folded, cut to `max` characters.
fn clean(text: &str, max: usize) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            c if c.is_control() => plain.push(' '),
            c => plain.push(c),
        }
    }
    let folded = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &folded[..end]),
        None => folded,
    }
}

/// The `web_search` tool.
#[derive(Debug)]
pub struct WebSearch {
    definition: ToolDefinition,
    provider: SearchProvider,
    client: Client,
}

impl WebSearch {
    /// The tool over `provider`; answers are read within `limits` (at most
    /// 1 MiB of them).
    pub fn new(provider: SearchProvider, limits: WebLimits) -> Result<Self, WebError> {
        let definition = ToolDefinition::new(
            "web_search",
            format!(
                "Search the web through the user's search provider ({} at {}); returns up to {} results, each a \
                 title, URL and snippet. Every call asks the user first. Read a result with web_fetch.",
                provider.kind.name(),
                provider.host(),
                provider.max_results
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "What to search for"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        );
        let limits = limits.with_max_response_bytes(limits.max_response_bytes.min(MAX_ANSWER_BYTES));
        Ok(Self { definition, provider, client: Client::new(limits)? })
    }

    async fn search(&self, query: &str) -> Result<String, WebError> {
        let (url, headers) = self.provider.request(query)?;
        let fetched = self.client.get(url, "application/json", &headers).await?;
        let host = self.provider.host();
        if fetched.elsewhere.is_some() || !fetched.status.is_success() {
            let body = String::from_utf8_lossy(&fetched.body);
            let message = format!("HTTP {}: {}", fetched.status, clean(&body, 300));
            return Err(WebError::Provider { host, message });
        }
        if fetched.cut {
            let message = format!("more than {MAX_ANSWER_BYTES} bytes");
            return Err(WebError::Provider { host, message });
        }
        let (hits, left_out) = self.provider.results(&fetched.body)?;
        let mut out =
            format!("{} results for \"{query}\" from {} at {host}:\n", hits.len(), self.provider.kind.name());
        for (n, hit) in hits.iter().enumerate() {
            out.push_str(&format!("\n{}. {}\n   {}\n", n + 1, hit.title, hit.url));
            if !hit.snippet.is_empty() {
                out.push_str(&format!("   {}\n", hit.snippet));
            }
        }
        if left_out > 0 {
            out.push_str(&format!("\n({left_out} results left out: no http(s) URL or no title)\n"));
        }
        Ok(bosun_tools::limits::cap(out, self.client.limits.max_output_bytes, "output"))
    }
}

impl Tool for WebSearch {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::Interruptible
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default();
        network::effects(&format!("`web_search` sends \"{query}\" to {}", self.provider.host()))
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default();
            let search = async {
                match self.search(query).await {
                    Ok(text) => ToolOutput::text(text),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            };
            network::cancellable(&context, search).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn results_are_checked_bounded_and_cleaned() {
        let provider = SearchProvider::new(SearchKind::Brave, "https://api.example/search", Some("k".into()))
            .unwrap()
            .with_max_results(2);
        let long = "x".repeat(1000);
        let body = json!({"web": {"results": [
            {"url": "javascript:alert(1)", "title": "bad scheme", "description": "d"},
            {"url": "https://a.example/1", "title": "One", "description": format!("<strong>match</strong>\n{long}")},
            {"url": "https://u:p@b.example/", "title": "creds", "description": "d"},
            {"url": "https://c.example/", "title": "  ", "description": "no title"},
            {"url": "https://d.example/2", "title": "Two\u{1b}[31m", "description": ""},
            {"url": "https://e.example/3", "title": "Three", "description": "past the count"}
        ]}});
        let (hits, left_out) = provider.results(body.to_string().as_bytes()).unwrap();
        assert_eq!(left_out, 3, "{hits:?}");
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].url, "https://a.example/1");
        assert!(hits[0].snippet.starts_with("match xxx") && hits[0].snippet.ends_with('…'));
        assert_eq!(hits[0].snippet.chars().count(), MAX_SNIPPET_CHARS + 1);
        assert_eq!(hits[1].title, "Two [31m");
        let error = provider.results(b"<html>").unwrap_err().to_string();
        assert!(error.contains("cannot read as Brave's"), "{error}");
    }

    #[test]
    fn requests_carry_the_query_and_the_key_where_each_api_wants_them() {
        let searx = SearchProvider::new(SearchKind::Searxng, "http://127.0.0.1:8888/", None).unwrap();
        let (url, headers) = searx.request("rust & tokio").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:8888/search?q=rust+%26+tokio&format=json");
        assert!(headers.is_empty());
        let token =
            SearchProvider::new(SearchKind::Searxng, "https://s.example/search/", Some("T".into())).unwrap();
        let (url, headers) = token.request("q").unwrap();
        assert_eq!(url.as_str(), "https://s.example/search/?q=q&format=json");
        assert_eq!(headers.get("authorization").unwrap(), "Bearer T");
        assert!(headers.get("authorization").unwrap().is_sensitive());
        let brave =
            SearchProvider::new(SearchKind::Brave, "https://api.example/res/v1/web/search", Some("K".into()))
                .unwrap();
        let (url, headers) = brave.request("q").unwrap();
        assert_eq!(url.as_str(), "https://api.example/res/v1/web/search?q=q&count=5");
        assert_eq!(headers.get("x-subscription-token").unwrap(), "K");
        let shown = format!("{brave:?}");
        assert!(shown.contains("(redacted)") && !shown.contains("\"K\""), "{shown}");
        assert!(SearchProvider::new(SearchKind::Brave, "https://api.example/", None).is_err());
    }
}
