//! Container credentials: what ECS tasks and EKS Pod Identity give a
//! workload, an HTTP endpoint answering with temporary keys.
//!
//! `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is a path on the ECS agent
//! (169.254.170.2); `AWS_CONTAINER_CREDENTIALS_FULL_URI` is a whole URL,
//! accepted (as the SDKs accept it) only over https or to a loopback or
//! ECS/EKS agent address, since the request may carry an authorization
//! token and the answer is a key.

use std::time::{Duration, Instant};

use bosun_core::ModelError;
use serde::Deserialize;

use super::{AwsCredentialSource, AwsCredentials, CredentialsFuture, Env};
use crate::secret::ApiKey;

/// The ECS agent's address, which a relative URI is resolved against.
pub const ECS_HOST: &str = "169.254.170.2";
/// Test-only: replaces `http://169.254.170.2` for a relative URI, so a test
/// can stand a local server in for the ECS agent. No SDK reads it.
pub const ECS_ENDPOINT_OVERRIDE: &str = "BOSUN_TEST_AWS_CONTAINER_ENDPOINT";
/// Largest credentials response read.
const MAX_RESPONSE: usize = 64 * 1024;

/// Where the authorization header's value comes from.
enum Authorization {
    None,
    Token(ApiKey),
    /// Read at each fetch: EKS rotates the file's token.
    File(String),
}

/// Keys from the container credentials endpoint, cached until five
/// minutes before they expire. `Debug` shows the URL, never a token.
pub struct ContainerCredentials {
    url: String,
    authorization: Authorization,
    client: reqwest::Client,
    cache: super::http::Cache,
}

impl std::fmt::Debug for ContainerCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerCredentials").field("url", &self.url).finish_non_exhaustive()
    }
}

/// Whether a full URI may be asked for keys: https anywhere, http only to
/// loopback or the ECS/EKS agent addresses.
fn allowed(url: &reqwest::Url) -> bool {
    if url.scheme() == "https" {
        return true;
    }
    if url.scheme() != "http" {
        return false;
    }
    let Some(host) = url.host_str() else { return false };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            ip.is_loopback() || ip.octets() == [169, 254, 170, 2] || ip.octets() == [169, 254, 170, 23]
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23]
        }
        Err(_) => false,
    }
}

impl ContainerCredentials {
    /// The endpoint the environment names, if any; an error when it names
    /// one that may not be used.
    pub fn from_env(env: Env<'_>) -> Result<Option<Self>, super::AwsAuthError> {
        let invalid = |reason: String| super::AwsAuthError::Container(reason);
        let url = if let Some(relative) = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            let root = env(ECS_ENDPOINT_OVERRIDE).unwrap_or_else(|| format!("http://{ECS_HOST}"));
            format!("{}/{}", root.trim_end_matches('/'), relative.trim().trim_start_matches('/'))
        } else if let Some(full) = env("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
            let parsed = reqwest::Url::parse(full.trim())
                .map_err(|e| invalid(format!("AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL ({e})")))?;
            if !allowed(&parsed) {
                return Err(invalid(format!(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI {full} is neither https nor a loopback or ECS/EKS \
                     agent address"
                )));
            }
            full.trim().to_owned()
        } else {
            return Ok(None);
        };
        let authorization =
            match (env("AWS_CONTAINER_AUTHORIZATION_TOKEN"), env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
                (_, Some(file)) => Authorization::File(file),
                (Some(token), None) => Authorization::Token(ApiKey::new(token)),
                (None, None) => Authorization::None,
            };
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(Some(Self { url, authorization, client, cache: super::http::Cache::default() }))
    }

    async fn fetch(&self) -> Result<(AwsCredentials, Option<Instant>), ModelError> {
        let mut request = self.client.get(&self.url);
        let token = match &self.authorization {
            Authorization::None => None,
            Authorization::Token(token) => Some(token.expose().to_owned()),
            Authorization::File(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| {
                        ModelError::Authentication(format!(
                            "cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {path}: {e}"
                        ))
                    })?
                    .trim()
                    .to_owned(),
            ),
        };
        if let Some(token) = token {
            request = request.header("authorization", token);
        }
        let body = super::http::read(request, &self.url, "container credentials", MAX_RESPONSE).await?;
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Answer {
            access_key_id: String,
            secret_access_key: String,
            token: Option<String>,
            expiration: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            ModelError::Protocol(format!("the container credentials from {} are not keys ({e})", self.url))
        })?;
        let expires = answer.expiration.as_deref().and_then(super::http::instant_of);
        Ok((AwsCredentials::new(answer.access_key_id, answer.secret_access_key, answer.token), expires))
    }
}

impl AwsCredentialSource for ContainerCredentials {
    fn credentials(&self) -> CredentialsFuture<'_> {
        Box::pin(self.cache.get(self.fetch()))
    }
}
