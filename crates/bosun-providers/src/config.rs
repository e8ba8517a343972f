//! Provider configuration as data: which wire API, where, which key, which
//! quirks. Deployments (Ollama, vLLM, OpenRouter, …) are presets over the
//! four protocols, never code of their own.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::cloud::{AZURE_CHAT_API_VERSION, AZURE_V1, Cloud, TokenSource};
use crate::secret::ApiKey;

/// The wire API a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Api {
    /// OpenAI Chat Completions (`POST {base}/chat/completions`).
    OpenAiChat,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    AnthropicMessages,
    /// OpenAI Responses (`POST {base}/responses`).
    OpenAiResponses,
    /// Google Gemini (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`).
    Gemini,
    /// Amazon Bedrock's ConverseStream (`POST {base}/model/{model}/converse-stream`).
    BedrockConverse,
}

impl Api {
    /// The tag stored with provider data (reasoning signatures, encrypted
    /// reasoning, thought signatures) so it is only replayed to this API.
    pub fn tag(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::AnthropicMessages => "anthropic-messages",
            Self::OpenAiResponses => "openai-responses",
            Self::Gemini => "gemini",
            Self::BedrockConverse => "bedrock-converse",
        }
    }
}

/// How an OpenAI-compatible server differs from OpenAI.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quirks {
    /// The request field for the output token limit (`max_completion_tokens`
    /// for OpenAI, `max_tokens` for most compatible servers).
    pub max_tokens_field: &'static str,
    /// Where reasoning arrives in Chat Completions deltas.
    pub reasoning: ReasoningFormat,
    /// Whether to ask for a final usage chunk (`stream_options.include_usage`).
    pub stream_usage: bool,
    /// Whether `reasoning_effort` takes `"medium"` (OpenAI's does; xAI's
    /// takes only `"low"` and `"high"`, so medium is sent as high there).
    pub medium_effort: bool,
    /// Whether the server takes OpenAI's `prompt_cache_key` (OpenAI's does;
    /// a compatible server may refuse a field it does not know).
    pub prompt_cache_key: bool,
}

/// Where a Chat Completions server puts reasoning text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningFormat {
    /// `delta.reasoning_content` (DeepSeek, xAI, vLLM, llama.cpp).
    ReasoningContent,
    /// `delta.reasoning` (OpenRouter, Ollama).
    Reasoning,
    /// No reasoning field.
    None,
}

impl Default for Quirks {
    fn default() -> Self {
        Self {
            max_tokens_field: "max_tokens",
            reasoning: ReasoningFormat::ReasoningContent,
            stream_usage: true,
            medium_effort: false,
            prompt_cache_key: false,
        }
    }
}

/// Where each provider's API key is read from, first set wins, and whether
/// the provider needs one (a local or self-hosted server may take a key but
/// needs none). The one table: presets name its first variable in
/// `key_env`, and front ends read the variables [`key_vars`] gives.
const KEYS: &[(&str, &[&str], bool)] = &[
    ("openai", &["OPENAI_API_KEY"], true),
    ("openai-responses", &["OPENAI_API_KEY"], true),
    ("anthropic", &["ANTHROPIC_API_KEY"], true),
    ("gemini", &["GEMINI_API_KEY", "GOOGLE_API_KEY"], true),
    ("openrouter", &["OPENROUTER_API_KEY"], true),
    ("groq", &["GROQ_API_KEY"], true),
    ("deepseek", &["DEEPSEEK_API_KEY"], true),
    ("mistral", &["MISTRAL_API_KEY"], true),
    ("xai", &["XAI_API_KEY"], true),
    ("openai-compatible", &["OPENAI_API_KEY"], false),
    ("vllm", &["OPENAI_API_KEY"], false),
    ("llamacpp", &["OPENAI_API_KEY"], false),
    ("ollama", &["OPENAI_API_KEY"], false),
    // Or an Entra ID token (`AZURE_OPENAI_AD_TOKEN`): the front end decides.
    ("azure", &["AZURE_OPENAI_API_KEY"], false),
    ("azure-responses", &["AZURE_OPENAI_API_KEY"], false),
];

/// The environment variables a provider's key is read from, first set wins;
/// none for an unknown provider.
pub fn key_vars(provider: &str) -> &'static [&'static str] {
    KEYS.iter().find(|(name, _, _)| *name == provider).map_or(&[], |(_, vars, _)| vars)
}

/// Whether the provider refuses requests without a key.
pub fn needs_key(provider: &str) -> bool {
    KEYS.iter().any(|(name, _, needed)| *name == provider && *needed)
}

/// Everything needed to reach one provider.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// A short name for messages (`openai`, `ollama`, …).
    pub name: String,
    /// The wire API.
    pub api: Api,
    /// The base URL, as the provider's official SDK takes it: ending in `/v1`
    /// for OpenAI-style APIs, the root for Anthropic and Gemini.
    pub base_url: String,
    /// The key, if the provider needs one.
    pub api_key: Option<ApiKey>,
    /// The environment variable a key conventionally comes from, named in
    /// authentication errors (the key itself never is).
    pub key_env: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// The cloud serving the models, when not their vendor (Azure, Vertex):
    /// its URLs, headers and body envelope.
    pub cloud: Cloud,
    /// Where each request's bearer token comes from, for a provider that
    /// takes tokens (Vertex's Google credentials, Azure's Entra ID token).
    pub token: Option<Arc<dyn TokenSource>>,
    /// The AWS credentials each Bedrock request is signed with (SigV4).
    pub aws: Option<Arc<dyn crate::cloud::aws::AwsCredentialSource>>,
    /// Compatible-server differences.
    pub quirks: Quirks,
    /// Longest silence (no `data:` line, keep-alives do not count) before a
    /// stream is abandoned (`stream_idle_timeout_ms`; default 300 s). Also
    /// bounds the wait for the response headers, should it be the shorter.
    pub idle_timeout: Duration,
    /// Longest wait from sending a request to the first `data:` line of its
    /// response (`first_byte_timeout_ms`; default 60 s): a server that
    /// accepts and never answers, or sends headers or keep-alives and then
    /// nothing, fails this attempt here rather than after the idle timeout.
    pub first_byte_timeout: Duration,
    /// Longest a request may go without content reaching the caller,
    /// counting every attempt and every wait between attempts
    /// (`request_timeout_ms`; default 600 s). Once an answer streams, only
    /// [`idle_timeout`](Self::idle_timeout) bounds it, so a long answer is
    /// never cut for its length.
    pub request_timeout: Duration,
    /// How long a stream whose finish reason is in may stay open before the
    /// response is accepted as complete (`finish_grace_ms`; default 2 s):
    /// usage sent after the finish reason arrives within it, a server that
    /// never closes does not cost the answer.
    pub finish_grace: Duration,
    /// Longest wait a server may ask for (`Retry-After`, `retry-after-ms`,
    /// "try again in …") that is honoured (`max_retry_after_ms`; default
    /// 60 s). A longer one is not waited for: the request fails as rate
    /// limited, saying when to retry.
    pub max_retry_after: Duration,
    /// Caps on what a response may hold.
    pub limits: StreamLimits,
    /// Retries of transient failures (`request_max_retries`: see
    /// [`ProviderConfig::with_request_max_retries`]) and their backoff.
    pub retry: RetryPolicy,
    /// What the transport waits on; [`TokioSleeper`] unless replaced.
    pub sleeper: Arc<dyn Sleeper>,
}

/// Caps on one response, so that a broken server or proxy cannot make the
/// transport hold unbounded memory before any timer fires. Exceeding one
/// fails the request with a `ModelError::Protocol` naming the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLimits {
    /// Longest SSE line, in bytes (`max_line_bytes`; default 8 MiB).
    pub line: usize,
    /// Largest SSE event (its `data:` lines joined), in bytes
    /// (`max_event_bytes`; default 16 MiB).
    pub event: usize,
    /// Largest response body, in bytes (`max_response_bytes`; default 64 MiB).
    pub response: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self { line: 8 << 20, event: 16 << 20, response: 64 << 20 }
    }
}

impl StreamLimits {
    /// Sets the longest SSE line, in bytes.
    pub fn with_line(mut self, bytes: usize) -> Self {
        self.line = bytes;
        self
    }

    /// Sets the largest SSE event, in bytes.
    pub fn with_event(mut self, bytes: usize) -> Self {
        self.event = bytes;
        self
    }

    /// Sets the largest response body, in bytes.
    pub fn with_response(mut self, bytes: usize) -> Self {
        self.response = bytes;
        self
    }
}

/// The timer behind every wait of the transport: the wait for a response's
/// headers, the watchdog over a stream (asked for anew when a stream starts
/// and after every chunk that held a `data:` line) and the wait before a
/// retry. Each wait asked for is the shortest of the limits in force (idle,
/// first byte, whole request, finish grace), measured on [`Sleeper::now`].
/// A test replaces it to see which waits were asked for and to end them
/// when it chooses, so that no test of retries or of the watchdog depends
/// on how fast the machine runs.
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    /// A future that completes once `duration` has passed. Dropping it
    /// abandons the wait.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;

    /// The time on the clock [`Sleeper::sleep`] runs on: limits that span
    /// several waits (the first byte, the whole request) are measured with
    /// it, so they move exactly as the waits do.
    fn now(&self) -> Instant;

    /// The calendar time, for a `Retry-After` given as an HTTP date.
    fn system_time(&self) -> SystemTime;
}

/// [`Sleeper`] on tokio's timer: the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn now(&self) -> Instant {
        // tokio's clock, so that a runtime with paused time moves it too.
        tokio::time::Instant::now().into_std()
    }

    fn system_time(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Exponential backoff with jitter, for transient failures only (HTTP 408,
/// 409, 429, 5xx, connection failures and timeouts, in-stream server errors)
/// and only while nothing of the response reached the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all (1 means no retry).
    pub max_attempts: u32,
    /// First delay.
    pub base_delay: Duration,
    /// Largest backoff delay. A server's own wait is capped by
    /// [`ProviderConfig::max_retry_after`] instead.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// Sets the number of attempts (at least 1).
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets the base and maximum delays.
    pub fn with_delays(mut self, base: Duration, max: Duration) -> Self {
        self.base_delay = base;
        self.max_delay = max.max(base);
        self
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 4, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(60) }
    }
}

/// Default idle-stream watchdog.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default wait from a request to the first `data:` line of its response.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default bound on a request before content reaches the caller.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Default time a finished response's stream may stay open.
pub const DEFAULT_FINISH_GRACE: Duration = Duration::from_secs(2);
/// Default longest server-requested wait that is honoured.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

impl ProviderConfig {
    /// A configuration for `api` at `base_url`, no key, default quirks.
    pub fn new(name: impl Into<String>, api: Api, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            api,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            key_env: None,
            headers: Vec::new(),
            cloud: Cloud::Direct,
            token: None,
            aws: None,
            quirks: Quirks::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            finish_grace: DEFAULT_FINISH_GRACE,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
            limits: StreamLimits::default(),
            retry: RetryPolicy::default(),
            sleeper: Arc::new(TokioSleeper),
        }
    }

    /// Sets the key.
    pub fn with_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Overrides the base URL.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the idle watchdog ([`ProviderConfig::idle_timeout`]).
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the first-byte timeout ([`ProviderConfig::first_byte_timeout`]).
    pub fn with_first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.first_byte_timeout = timeout;
        self
    }

    /// Sets the bound on a whole request ([`ProviderConfig::request_timeout`]).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the grace given a finished stream ([`ProviderConfig::finish_grace`]).
    pub fn with_finish_grace(mut self, grace: Duration) -> Self {
        self.finish_grace = grace;
        self
    }

    /// Sets the longest server-requested wait honoured
    /// ([`ProviderConfig::max_retry_after`]).
    pub fn with_max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// Sets the caps on a response ([`StreamLimits`]).
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets how many times a failed request is tried again
    /// (`request_max_retries`): `0` means one attempt only. The backoff
    /// delays are kept.
    pub fn with_request_max_retries(mut self, retries: u32) -> Self {
        self.retry.max_attempts = retries.saturating_add(1);
        self
    }

    /// How many times a failed request is tried again (attempts in all,
    /// less one; default 3).
    pub fn request_max_retries(&self) -> u32 {
        self.retry.max_attempts.saturating_sub(1)
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the timer the transport waits on (see [`Sleeper`]).
    pub fn with_sleeper(mut self, sleeper: impl Sleeper + 'static) -> Self {
        self.sleeper = Arc::new(sleeper);
        self
    }

    /// Sets the quirks.
    pub fn with_quirks(mut self, quirks: Quirks) -> Self {
        self.quirks = quirks;
        self
    }

    /// The preset for a provider name, or `None`: `openai`,
    /// `openai-responses`, `anthropic`, `gemini`, `ollama`, `openrouter`,
    /// `groq`, `deepseek`, `mistral`, `xai`, `vllm`, `llamacpp`.
    /// (`openai-compatible` needs a base URL: [`ProviderConfig::openai_compatible`].)
    pub fn preset(name: &str) -> Option<Self> {
        let chat = |base: &str| Self::new(name, Api::OpenAiChat, base);
        let reasoning = |format| Quirks { reasoning: format, ..Quirks::default() };
        let mut config = match name {
            "openai" => chat("https://api.openai.com/v1").with_quirks(Quirks {
                max_tokens_field: "max_completion_tokens",
                reasoning: ReasoningFormat::None,
                stream_usage: true,
                medium_effort: true,
                prompt_cache_key: true,
            }),
            "openai-responses" => Self::new(name, Api::OpenAiResponses, "https://api.openai.com/v1"),
            "anthropic" => Self::new(name, Api::AnthropicMessages, "https://api.anthropic.com"),
            "gemini" => Self::new(name, Api::Gemini, "https://generativelanguage.googleapis.com"),
            "ollama" => chat("http://127.0.0.1:11434/v1").with_quirks(reasoning(ReasoningFormat::Reasoning)),
            "openrouter" => {
                chat("https://openrouter.ai/api/v1").with_quirks(reasoning(ReasoningFormat::Reasoning))
            }
            "groq" => chat("https://api.groq.com/openai/v1"),
            "deepseek" => chat("https://api.deepseek.com/v1"),
            "mistral" => chat("https://api.mistral.ai/v1"),
            "xai" => chat("https://api.x.ai/v1"),
            "vllm" => chat("http://127.0.0.1:8000/v1"),
            "llamacpp" => chat("http://127.0.0.1:8080/v1"),
            _ => return None,
        };
        if needs_key(name) {
            config.key_env = key_vars(name).first().map(|var| (*var).to_owned());
        }
        Some(config)
    }

    /// Azure OpenAI (or Azure AI Foundry) at `endpoint`, the resource's
    /// `https://RESOURCE.openai.azure.com`: Chat Completions (provider
    /// `azure`, deployment URLs with `api-version` [`AZURE_CHAT_API_VERSION`])
    /// or Responses (`azure-responses`, the v1 API). The model is the
    /// deployment's name. A key ([`ProviderConfig::with_key`], sent as
    /// `api-key`) or a token source ([`ProviderConfig::with_token_source`])
    /// authenticates it.
    pub fn azure(endpoint: impl Into<String>, api: Api) -> Self {
        let (name, api, version) = match api {
            Api::OpenAiResponses => ("azure-responses", api, AZURE_V1),
            _ => ("azure", Api::OpenAiChat, AZURE_CHAT_API_VERSION),
        };
        let mut config = Self::new(name, api, endpoint).with_quirks(Quirks {
            max_tokens_field: "max_completion_tokens",
            reasoning: ReasoningFormat::None,
            stream_usage: true,
            medium_effort: true,
            prompt_cache_key: false,
        });
        config.cloud = Cloud::Azure { api_version: version.to_owned() };
        config
    }

    /// Sets Azure's `api-version` (`v1` or a dated one); no effect elsewhere.
    pub fn with_azure_api_version(mut self, version: impl Into<String>) -> Self {
        if let Cloud::Azure { api_version } = &mut self.cloud {
            *api_version = version.into().trim().to_owned();
        }
        self
    }

    /// Vertex AI in `project` at `location` (a region, or `global`), for
    /// `model`: Anthropic's Messages API for a `claude-…` model, Gemini's
    /// for any other. Authenticated by a token source
    /// ([`ProviderConfig::with_token_source`], Google credentials).
    pub fn vertex(project: impl Into<String>, location: impl Into<String>, model: &str) -> Self {
        let location = location.into();
        let api = if model.trim().starts_with("claude") { Api::AnthropicMessages } else { Api::Gemini };
        let mut config = Self::new("vertex", api, crate::cloud::vertex_host(&location));
        config.cloud = Cloud::Vertex { project: project.into(), location };
        config
    }

    /// Amazon Bedrock in `region`, through the Converse API. Authenticated
    /// by AWS credentials ([`ProviderConfig::with_aws_credentials`], SigV4)
    /// or a Bedrock API key as a token source.
    pub fn bedrock(region: impl Into<String>) -> Self {
        let region = region.into();
        let mut config =
            Self::new("bedrock", Api::BedrockConverse, crate::protocol::bedrock::endpoint(&region));
        config.cloud = Cloud::Bedrock { region };
        config
    }

    /// Sets the AWS credentials Bedrock requests are signed with.
    pub fn with_aws_credentials(mut self, credentials: crate::cloud::aws::AwsCredentials) -> Self {
        self.aws = Some(Arc::new(credentials));
        self
    }

    /// Sets where the keys Bedrock requests are signed with come from
    /// (container credentials, instance metadata), asked before each attempt.
    pub fn with_aws_source(mut self, source: Arc<dyn crate::cloud::aws::AwsCredentialSource>) -> Self {
        self.aws = Some(source);
        self
    }

    /// Sets where bearer tokens come from.
    pub fn with_token_source(mut self, source: Arc<dyn TokenSource>) -> Self {
        self.token = Some(source);
        self
    }

    /// A generic OpenAI-compatible server at `base_url`.
    pub fn openai_compatible(base_url: impl Into<String>) -> Self {
        Self::new("openai-compatible", Api::OpenAiChat, base_url)
    }

    /// Names of all presets.
    pub const PRESETS: &'static [&'static str] = &[
        "openai",
        "openai-responses",
        "anthropic",
        "gemini",
        "ollama",
        "openrouter",
        "groq",
        "deepseek",
        "mistral",
        "xai",
        "vllm",
        "llamacpp",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_exists_and_keys_are_named_not_held() {
        for name in ProviderConfig::PRESETS {
            let config = ProviderConfig::preset(name).unwrap();
            assert!(config.api_key.is_none());
            assert!(!config.base_url.ends_with('/'));
        }
        assert_eq!(ProviderConfig::preset("gemini").unwrap().key_env.as_deref(), Some("GEMINI_API_KEY"));
        assert_eq!(key_vars("gemini"), ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
        assert_eq!(ProviderConfig::preset("ollama").unwrap().key_env, None, "a local server needs no key");
        assert_eq!(key_vars("ollama"), ["OPENAI_API_KEY"], "but may take one");
        assert!(key_vars("nope").is_empty() && !needs_key("nope"));
        for name in ProviderConfig::PRESETS {
            assert!(!key_vars(name).is_empty(), "{name} is in the key table");
        }
        assert!(ProviderConfig::preset("nope").is_none());
        let debug =
            format!("{:?}", ProviderConfig::preset("openai").unwrap().with_key(ApiKey::new("sk-live-1")));
        assert!(!debug.contains("sk-live-1"), "{debug}");
    }

    #[test]
    fn transport_limits_have_their_documented_defaults_and_builders() {
        let config = ProviderConfig::new("x", Api::OpenAiChat, "http://x");
        assert_eq!(config.idle_timeout, Duration::from_secs(300));
        assert_eq!(config.first_byte_timeout, Duration::from_secs(60));
        assert_eq!(config.request_timeout, Duration::from_secs(600));
        assert_eq!(config.finish_grace, Duration::from_secs(2));
        assert_eq!(config.max_retry_after, Duration::from_secs(60));
        assert_eq!(config.limits, StreamLimits { line: 8 << 20, event: 16 << 20, response: 64 << 20 });
        assert_eq!(config.request_max_retries(), 3);
        let config = config.with_request_max_retries(0);
        assert_eq!((config.request_max_retries(), config.retry.max_attempts), (0, 1));
        let config = config.with_request_max_retries(u32::MAX);
        assert_eq!(config.retry.max_attempts, u32::MAX, "saturates, never wraps to no attempt");
    }
}
