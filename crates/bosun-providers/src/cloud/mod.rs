//! The clouds that resell the vendors' models: Azure OpenAI (and Azure AI
//! Foundry) and Google Vertex AI. Each speaks a protocol bosun already has
//! (Chat Completions or Responses on Azure; Gemini or Anthropic Messages
//! on Vertex) under its own URLs, headers and, for Claude on Vertex, its own
//! body envelope. So a cloud is not a protocol: it is a [`Cloud`] on the
//! [`ProviderConfig`](crate::ProviderConfig), consulted where a request's URL,
//! headers and body are made, and a [`TokenSource`] for the bearer tokens
//! these clouds take instead of (or beside) a key.

pub mod aws;
mod command;
pub mod google;
mod token;

use serde_json::Value;

pub(crate) use command::run_credential_command;
pub use command::{CommandConfiner, CommandToken};
pub use google::{GoogleAuthError, GoogleCredentials};
pub use token::{StaticToken, TokenFuture, TokenSource};

use crate::config::{Api, ProviderConfig};
use crate::protocol::Protocol;

/// The Chat Completions `api-version` sent to an Azure deployment URL when
/// the config names none: the newest generally available data-plane
/// version of the dated API.
pub const AZURE_CHAT_API_VERSION: &str = "2024-10-21";

/// The `api-version` value that selects Azure's v1 API: `/openai/v1/…`
/// paths, the deployment named in the body's `model`, no version query.
/// The default for the Responses API, which Azure serves there.
pub const AZURE_V1: &str = "v1";

/// What Anthropic's Messages body says in place of `model` on Vertex.
pub const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Where a provider's models are served from, when not from the vendor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cloud {
    /// The vendor's own API (or a compatible server) at the base URL.
    #[default]
    Direct,
    /// Azure OpenAI: the base URL is the resource endpoint
    /// (`https://RESOURCE.openai.azure.com`, or a Foundry
    /// `https://RESOURCE.services.ai.azure.com`), the model a deployment.
    Azure {
        /// `v1` ([`AZURE_V1`]) or a dated version (`2024-10-21`,
        /// `2025-04-01-preview`).
        api_version: String,
    },
    /// Vertex AI: the base URL is the regional host, the model a publisher
    /// model of Google (Gemini) or Anthropic (Claude).
    Vertex {
        /// The Google Cloud project id.
        project: String,
        /// The region (`us-east5`) or `global`.
        location: String,
    },
    /// Amazon Bedrock: the base URL is the region's runtime endpoint, the
    /// model a Bedrock model id or inference profile.
    Bedrock {
        /// The AWS region requests are signed for (`us-east-1`).
        region: String,
    },
}

/// Vertex's host for `location`: `global` has no region prefix.
pub fn vertex_host(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        region => format!("https://{region}-aiplatform.googleapis.com"),
    }
}

/// The request URL for `model`.
pub(crate) fn url(config: &ProviderConfig, protocol: &dyn Protocol, model: &str) -> String {
    let base = config.base_url.trim_end_matches('/');
    match &config.cloud {
        Cloud::Direct | Cloud::Bedrock { .. } => protocol.url(config, model),
        Cloud::Azure { api_version } => {
            // An endpoint pasted with the SDK's `/openai` or `/openai/v1` suffix is tolerated.
            let base =
                base.strip_suffix("/openai/v1").or_else(|| base.strip_suffix("/openai")).unwrap_or(base);
            let version = query_value(api_version);
            match (config.api, api_version.as_str()) {
                (Api::OpenAiResponses, AZURE_V1) => format!("{base}/openai/v1/responses"),
                (Api::OpenAiResponses, _) => format!("{base}/openai/responses?api-version={version}"),
                (_, AZURE_V1) => format!("{base}/openai/v1/chat/completions"),
                _ => format!(
                    "{base}/openai/deployments/{}/chat/completions?api-version={version}",
                    path_segment(model)
                ),
            }
        }
        Cloud::Vertex { project, location } => {
            let model = model.trim();
            let model = model.strip_prefix("models/").unwrap_or(model);
            let (publisher, method) = match config.api {
                Api::AnthropicMessages => ("anthropic", "streamRawPredict"),
                _ => ("google", "streamGenerateContent?alt=sse"),
            };
            format!(
                "{base}/v1/projects/{}/locations/{}/publishers/{publisher}/models/{}:{method}",
                path_segment(project),
                path_segment(location),
                path_segment(model)
            )
        }
    }
}

/// The protocol's headers as this cloud takes them: Azure's key goes in
/// `api-key`, Vertex takes only the bearer token (added by the transport)
/// and no vendor version header (Claude's version is in the body).
pub(crate) fn headers(config: &ProviderConfig, protocol: &dyn Protocol) -> Vec<(String, String)> {
    match &config.cloud {
        Cloud::Direct => protocol.headers(config),
        Cloud::Azure { .. } => match config.api_key.as_ref().filter(|k| !k.is_empty()) {
            Some(key) => vec![("api-key".to_owned(), key.expose().to_owned())],
            None => Vec::new(),
        },
        Cloud::Vertex { .. } | Cloud::Bedrock { .. } => Vec::new(),
    }
}

/// The protocol's body in this cloud's envelope: Claude on Vertex names its
/// model in the URL, not the body, and its API version in the body.
pub(crate) fn envelope(config: &ProviderConfig, mut body: Value) -> Value {
    if let (Cloud::Vertex { .. }, Api::AnthropicMessages, Value::Object(map)) =
        (&config.cloud, config.api, &mut body)
    {
        map.remove("model");
        map.insert("anthropic_version".into(), Value::String(VERTEX_ANTHROPIC_VERSION.to_owned()));
    }
    body
}

/// A name as one URL path segment: the characters a deployment, project or
/// model id may hold pass, anything else is percent-encoded, so a name
/// cannot add a path segment or a query.
pub(crate) fn path_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn query_value(value: &str) -> String {
    path_segment(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::for_api;
    use crate::secret::ApiKey;
    use serde_json::json;

    fn azure(api: Api, version: &str) -> ProviderConfig {
        ProviderConfig::azure("https://res.openai.azure.com/", api).with_azure_api_version(version)
    }

    #[test]
    fn azure_urls_follow_the_api_version() {
        let chat = azure(Api::OpenAiChat, "2024-10-21");
        assert_eq!(
            url(&chat, &*for_api(chat.api), "my gpt"),
            "https://res.openai.azure.com/openai/deployments/my%20gpt/chat/completions?api-version=2024-10-21"
        );
        let v1 = azure(Api::OpenAiChat, "v1");
        assert_eq!(
            url(&v1, &*for_api(v1.api), "d"),
            "https://res.openai.azure.com/openai/v1/chat/completions"
        );
        let responses =
            azure(Api::OpenAiResponses, "v1").with_base_url("https://r.services.ai.azure.com/openai/v1");
        assert_eq!(
            url(&responses, &*for_api(responses.api), "d"),
            "https://r.services.ai.azure.com/openai/v1/responses"
        );
        let dated = azure(Api::OpenAiResponses, "2025-04-01-preview");
        assert_eq!(
            url(&dated, &*for_api(dated.api), "d"),
            "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
        );
        assert_eq!(
            ProviderConfig::azure("https://x", Api::OpenAiChat).cloud,
            Cloud::Azure { api_version: AZURE_CHAT_API_VERSION.to_owned() }
        );
        assert_eq!(
            ProviderConfig::azure("https://x", Api::OpenAiResponses).cloud,
            Cloud::Azure { api_version: AZURE_V1.to_owned() }
        );
    }

    #[test]
    fn tokens_and_keys_never_print() {
        let config = azure(Api::OpenAiChat, "v1")
            .with_key(ApiKey::new("az-secret"))
            .with_token_source(std::sync::Arc::new(StaticToken::new(ApiKey::new("entra-secret"))));
        let debug = format!("{config:?}");
        assert!(!debug.contains("az-secret") && !debug.contains("entra-secret"), "{debug}");
        assert!(debug.contains("StaticToken"), "{debug}");
    }

    #[test]
    fn azure_sends_its_key_as_api_key_and_never_as_a_bearer() {
        let config = azure(Api::OpenAiChat, "v1").with_key(ApiKey::new("az-secret"));
        let sent = headers(&config, &*for_api(config.api));
        assert_eq!(sent, vec![("api-key".to_owned(), "az-secret".to_owned())]);
        assert!(headers(&azure(Api::OpenAiChat, "v1"), &*for_api(Api::OpenAiChat)).is_empty());
    }

    #[test]
    fn vertex_urls_name_project_region_publisher_and_model() {
        let gemini = ProviderConfig::vertex("proj-1", "us-central1", "gemini-2.5-pro");
        assert_eq!(gemini.api, Api::Gemini);
        assert_eq!(
            url(&gemini, &*for_api(gemini.api), "gemini-2.5-pro"),
            "https://us-central1-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-central1/publishers/\
             google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        let claude = ProviderConfig::vertex("proj-1", "global", "claude-sonnet-4-5@20250929");
        assert_eq!(claude.api, Api::AnthropicMessages);
        assert_eq!(
            url(&claude, &*for_api(claude.api), "claude-sonnet-4-5@20250929"),
            "https://aiplatform.googleapis.com/v1/projects/proj-1/locations/global/publishers/anthropic/models/\
             claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert!(headers(&claude, &*for_api(claude.api)).is_empty(), "no anthropic-version header, no key");
    }

    #[test]
    fn claude_on_vertex_carries_its_version_in_the_body_and_no_model() {
        let claude = ProviderConfig::vertex("p", "global", "claude-x");
        let body = envelope(&claude, json!({"model": "claude-x", "max_tokens": 5}));
        assert_eq!(body, json!({"anthropic_version": "vertex-2023-10-16", "max_tokens": 5}));
        let gemini = ProviderConfig::vertex("p", "global", "gemini-x");
        assert_eq!(envelope(&gemini, json!({"contents": []})), json!({"contents": []}));
        let direct = ProviderConfig::new("anthropic", Api::AnthropicMessages, "http://x");
        assert_eq!(envelope(&direct, json!({"model": "m"})), json!({"model": "m"}));
    }
}
