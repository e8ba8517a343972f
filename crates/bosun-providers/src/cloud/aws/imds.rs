//! Instance metadata (IMDSv2): the keys of the IAM role an EC2 instance
//! runs as. A session token is asked for first (PUT), then the role's name
//! and its keys, each with that token.
//!
//! Asked last in the chain and on every machine that has no other keys, so
//! the connection times out after a second: off EC2 nothing answers
//! 169.254.169.254, and waiting longer only delays the error.

use std::time::{Duration, Instant};

use bosun_core::ModelError;
use serde::Deserialize;

use super::{AwsCredentialSource, AwsCredentials, CredentialsFuture, Env};

/// The metadata service's address on EC2.
pub const IMDS_ENDPOINT: &str = "http://169.254.169.254";
/// How long the session token asked for lives (the SDKs' choice, 6 hours).
const TOKEN_TTL: &str = "21600";
/// Largest answer read.
const MAX_RESPONSE: usize = 64 * 1024;
const ROLES: &str = "/latest/meta-data/iam/security-credentials/";

/// The instance's role keys, cached until five minutes before they expire.
/// `Debug` shows the endpoint only.
pub struct InstanceMetadata {
    endpoint: String,
    /// What was looked for before, said when the service does not answer.
    tried: String,
    client: reqwest::Client,
    cache: super::http::Cache,
}

impl std::fmt::Debug for InstanceMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceMetadata").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl InstanceMetadata {
    /// The service at `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else
    /// 169.254.169.254; none when `AWS_EC2_METADATA_DISABLED` is `true`.
    /// `tried` names the sources looked at before, for the error when the
    /// service does not answer either.
    pub fn from_env(env: Env<'_>, tried: &str) -> Result<Option<Self>, super::AwsAuthError> {
        if env("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .map(|e| e.trim().trim_end_matches('/').to_owned())
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| IMDS_ENDPOINT.to_owned());
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(5))
            // The metadata service is never reached through a proxy.
            .no_proxy()
            .build()
            .map_err(|e| super::AwsAuthError::Client(e.to_string()))?;
        Ok(Some(Self { endpoint, tried: tried.to_owned(), client, cache: super::http::Cache::default() }))
    }

    async fn fetch(&self) -> Result<(AwsCredentials, Option<Instant>), ModelError> {
        let url = format!("{}/latest/api/token", self.endpoint);
        let token = self.client.put(&url).header("x-aws-ec2-metadata-token-ttl-seconds", TOKEN_TTL);
        // Not answering is "not on EC2": said with everything tried, and
        // not retried, since no retry will put the machine on EC2.
        let token = match token.send().await {
            Err(error) if error.is_connect() || error.is_timeout() => {
                let (reason, _) = crate::network::describe(&error, &url);
                return Err(ModelError::Authentication(format!(
                    "{}; and the EC2 instance metadata service at {} did not answer ({reason})",
                    self.tried, self.endpoint
                )));
            }
            sent => sent,
        };
        let token = super::http::body(token, &url, "an instance metadata token", MAX_RESPONSE).await?;
        let token = String::from_utf8_lossy(&token).trim().to_owned();
        let get = |path: String| {
            let url = format!("{}{path}", self.endpoint);
            (self.client.get(&url).header("x-aws-ec2-metadata-token", token.as_str()), url)
        };
        let (request, url) = get(ROLES.to_owned());
        let roles = super::http::read(request, &url, "the instance's role name", MAX_RESPONSE)
            .await
            .map_err(|error| match error {
                ModelError::Authentication(m) if m.contains("HTTP 404") => {
                    ModelError::Authentication(format!(
                        "{}; and this EC2 instance has no IAM role (instance profile) attached",
                        self.tried
                    ))
                }
                other => other,
            })?;
        let roles = String::from_utf8_lossy(&roles);
        let Some(role) = roles.lines().map(str::trim).find(|l| !l.is_empty()) else {
            return Err(ModelError::Authentication(format!(
                "{}; and this EC2 instance has no IAM role (instance profile) attached",
                self.tried
            )));
        };
        let (request, url) = get(format!("{ROLES}{role}"));
        let body = super::http::read(request, &url, "the instance role's keys", MAX_RESPONSE).await?;
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Answer {
            code: Option<String>,
            access_key_id: Option<String>,
            secret_access_key: Option<String>,
            token: Option<String>,
            expiration: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            ModelError::Protocol(format!("the instance role's keys from {url} are not JSON ({e})"))
        })?;
        let (Some(id), Some(secret)) = (answer.access_key_id, answer.secret_access_key) else {
            let code = answer.code.unwrap_or_default();
            return Err(ModelError::Authentication(format!(
                "the instance metadata service gave no keys for role {role} (Code {code})"
            )));
        };
        let expires = answer.expiration.as_deref().and_then(super::http::instant_of);
        Ok((AwsCredentials::new(id, secret, answer.token), expires))
    }
}

impl AwsCredentialSource for InstanceMetadata {
    fn credentials(&self) -> CredentialsFuture<'_> {
        Box::pin(self.cache.get(self.fetch()))
    }
}
