//! AWS credentials and SigV4 signing for Amazon Bedrock.
//!
//! Signing is `aws-sigv4`'s (AWS's maintained implementation); each
//! attempt is signed afresh, so its `x-amz-date` is the attempt's time.
//!
//! Credentials are read here, not through `aws-config`: that crate brings
//! the SDK's whole runtime (its own HTTP stack on hyper, the async runtime
//! glue, SSO and STS clients), which the binary would carry for every user
//! (docs/benchmarks.md). The sources most setups use are small: the
//! environment, and the shared `credentials` and `config` files with
//! profiles; `role_arn` profiles and web identity (EKS IRSA, GitHub
//! Actions OIDC), whose keys STS gives (`assume.rs`); SSO profiles
//! (`sso.rs`), with the token `aws sso login` cached; a profile's
//! `credential_process` (`process.rs`), run in the sandbox the front end
//! hands in; in ECS and EKS, the container credentials endpoint
//! (`container.rs`); on EC2, the instance metadata service (`imds.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::SystemTime;

use bosun_core::ModelError;

use crate::secret::ApiKey;

mod assume;
mod container;
mod http;
mod imds;
mod process;
mod sso;

pub use assume::AssumedRole;
pub use container::{ContainerCredentials, ECS_ENDPOINT_OVERRIDE, ECS_HOST};
pub use imds::{IMDS_ENDPOINT, InstanceMetadata};
pub use process::ProcessCredentials;
pub use sso::{SSO_PORTAL_OVERRIDE, SsoCredentials};

/// The service name Bedrock's runtime signs with.
pub const SERVICE: &str = "bedrock";
/// The service name STS requests are signed with.
pub const STS_SERVICE: &str = "sts";

/// An access key pair, with the session token of temporary credentials.
#[derive(Clone)]
pub struct AwsCredentials {
    /// `AKIA…` or `ASIA…`.
    pub access_key_id: String,
    secret_access_key: ApiKey,
    session_token: Option<ApiKey>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key id is not secret (it appears in every signed request);
        // the secret and the session token never print.
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("session_token", &self.session_token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// Credentials from their parts.
    pub fn new(access_key_id: impl Into<String>, secret: impl Into<String>, session: Option<String>) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: ApiKey::new(secret.into()),
            session_token: session.filter(|t| !t.is_empty()).map(ApiKey::new),
        }
    }
}

/// What [`AwsCredentialSource::credentials`] returns.
pub type CredentialsFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AwsCredentials, ModelError>> + Send + 'a>>;

/// Where the transport gets the keys each Bedrock attempt is signed with.
/// Asked before every attempt, so a source that fetches temporary keys
/// caches them until shortly before they expire. An error fails the
/// attempt as classified (a network error is retried, a refusal is not).
pub trait AwsCredentialSource: Send + Sync + std::fmt::Debug {
    /// Keys valid for at least the next few minutes.
    fn credentials(&self) -> CredentialsFuture<'_>;
}

/// Keys given as they are (environment, shared files): never refreshed.
impl AwsCredentialSource for AwsCredentials {
    fn credentials(&self) -> CredentialsFuture<'_> {
        let credentials = self.clone();
        Box::pin(async move { Ok(credentials) })
    }
}

/// What went wrong finding credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AwsAuthError {
    /// No source held credentials.
    #[error(
        "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the \
         profile (AWS_PROFILE={profile}) keys in ~/.aws/credentials or a role_arn or SSO settings in \
         ~/.aws/config, or set AWS_BEARER_TOKEN_BEDROCK; no web identity (AWS_WEB_IDENTITY_TOKEN_FILE \
         and AWS_ROLE_ARN) and no container credentials endpoint \
         (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI) is set"
    )]
    Missing {
        /// The profile looked for.
        profile: String,
    },
    /// The container credentials endpoint the environment names cannot be used.
    #[error("AWS container credentials: {0}")]
    Container(String),
    /// The profile's SSO settings cannot be used.
    #[error("AWS SSO: {0}")]
    Sso(String),
    /// The profile's `credential_process` cannot be run.
    #[error("AWS {0}")]
    Process(String),
    /// A `role_arn` profile or the web identity settings cannot be used.
    #[error("AWS assumed role: {0}")]
    Role(String),
    /// The HTTP client for a credentials endpoint could not be built.
    #[error("cannot build the HTTP client for AWS credentials: {0}")]
    Client(String),
    /// The request could not be signed.
    #[error("signing the AWS request failed: {0}")]
    Signing(String),
}

/// Reads the environment: a lookup function, so tests need not touch the
/// process's variables.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The profile in effect: `AWS_PROFILE`, else `default`.
pub fn profile_name(env: Env<'_>, configured: Option<&str>) -> String {
    configured
        .map(str::to_owned)
        .or_else(|| env("AWS_PROFILE"))
        .or_else(|| env("AWS_DEFAULT_PROFILE"))
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

pub(crate) fn home(env: Env<'_>) -> Option<PathBuf> {
    env("HOME").or_else(|| env("USERPROFILE")).map(PathBuf::from)
}

fn credentials_file(env: Env<'_>) -> Option<PathBuf> {
    env("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| Some(home(env)?.join(".aws/credentials")))
}

fn config_file(env: Env<'_>) -> Option<PathBuf> {
    env("AWS_CONFIG_FILE").map(PathBuf::from).or_else(|| Some(home(env)?.join(".aws/config")))
}

/// The sections of an INI file, keys lower-cased; a missing or unreadable
/// file is empty (the chain goes on to the next source).
fn ini(path: Option<&Path>) -> HashMap<String, HashMap<String, String>> {
    let text = path.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    parse_ini(&text)
}

pub(crate) fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut sections: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim().to_owned());
            sections.entry(name.trim().to_owned()).or_default();
            continue;
        }
        if let (Some(section), Some((key, value))) = (&current, line.split_once('=')) {
            let entry = sections.entry(section.clone()).or_default();
            entry.insert(key.trim().to_lowercase(), value.trim().to_owned());
        }
    }
    sections
}

/// The profile's section of the config file: `[profile NAME]`, or
/// `[default]` for the default profile.
fn config_section(
    config: &HashMap<String, HashMap<String, String>>,
    profile: &str,
) -> Option<HashMap<String, String>> {
    config
        .get(&format!("profile {profile}"))
        .or_else(|| (profile == "default").then(|| config.get("default")).flatten())
        .cloned()
}

/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with
/// `AWS_SESSION_TOKEN`), when both are set.
pub(crate) fn environment_keys(env: Env<'_>) -> Option<AwsCredentials> {
    let (id, secret) = (env("AWS_ACCESS_KEY_ID")?, env("AWS_SECRET_ACCESS_KEY")?);
    (!id.is_empty()).then(|| AwsCredentials::new(id, secret, env("AWS_SESSION_TOKEN")))
}

/// Credentials from the environment, then the profile's entry in the
/// credentials file, then its keys in the config file.
pub fn credentials(env: Env<'_>, profile: Option<&str>) -> Result<AwsCredentials, AwsAuthError> {
    // An explicit profile in bosun's config wins over keys in the environment.
    if profile.is_none()
        && let Some(keys) = environment_keys(env)
    {
        return Ok(keys);
    }
    let name = profile_name(env, profile);
    let file = ini(credentials_file(env).as_deref());
    if let Some(found) = file.get(&name).and_then(static_keys) {
        return Ok(found);
    }
    let config = ini(config_file(env).as_deref());
    config_section(&config, &name)
        .as_ref()
        .and_then(static_keys)
        .ok_or(AwsAuthError::Missing { profile: name })
}

/// A profile section's static keys, if it has them.
pub(crate) fn static_keys(section: &HashMap<String, String>) -> Option<AwsCredentials> {
    let id = section.get("aws_access_key_id")?;
    let secret = section.get("aws_secret_access_key")?;
    Some(AwsCredentials::new(id.clone(), secret.clone(), section.get("aws_session_token").cloned()))
}

/// The SDKs' default chain, as far as bosun follows it: keys in the
/// environment; then the profile: a `role_arn` profile's role (assumed
/// with STS from its `source_profile`, chained, or its `credential_source`,
/// or with its `web_identity_token_file`), else its static keys in the
/// shared files, else its SSO role (with the token `aws sso login`
/// cached), else its `credential_process` (run inside `confiner`'s
/// sandbox); then web identity from the environment
/// (`AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`); then the container
/// credentials endpoint (ECS, EKS Pod Identity) when the environment names
/// one; then the EC2 instance metadata service unless
/// `AWS_EC2_METADATA_DISABLED` is `true`. Each later source is asked only
/// when no earlier one has keys; the last is asked at the first request,
/// and its error then names every source tried.
pub fn source(
    env: Env<'_>,
    profile: Option<&str>,
    confiner: Option<std::sync::Arc<dyn crate::cloud::CommandConfiner>>,
) -> Result<std::sync::Arc<dyn AwsCredentialSource>, AwsAuthError> {
    // An explicit profile in bosun's config wins over keys in the environment.
    if profile.is_none()
        && let Some(keys) = environment_keys(env)
    {
        return Ok(std::sync::Arc::new(keys));
    }
    // A role profile's role_arn is used before keys beside it, as the SDKs do.
    if let Some(role) = assume::from_profile(env, &profile_name(env, profile), profile, confiner.as_ref())? {
        return Ok(role);
    }
    let missing = match credentials(env, profile) {
        Ok(found) => return Ok(std::sync::Arc::new(found)),
        Err(missing @ AwsAuthError::Missing { .. }) => missing,
        Err(other) => return Err(other),
    };
    // An SSO profile is the profile's own source: before the container's.
    let name = profile_name(env, profile);
    let config = ini(config_file(env).as_deref());
    if let Some(section) = config_section(&config, &name)
        && let Some(sso) = SsoCredentials::from_profile(env, &name, &section, &config)?
    {
        return Ok(std::sync::Arc::new(sso));
    }
    if let Some(section) = config_section(&config, &name)
        && let Some(process) = ProcessCredentials::from_profile(&name, &section, confiner)?
    {
        return Ok(std::sync::Arc::new(process));
    }
    if let Some(web) = AssumedRole::web_identity_from_env(env, profile)? {
        return Ok(std::sync::Arc::new(web));
    }
    if let Some(container) = ContainerCredentials::from_env(env)? {
        return Ok(std::sync::Arc::new(container));
    }
    if let Some(instance) = InstanceMetadata::from_env(env, &missing.to_string())? {
        return Ok(std::sync::Arc::new(instance));
    }
    Err(missing)
}

/// The region: the configured one, `AWS_REGION`, `AWS_DEFAULT_REGION`,
/// then the profile's `region` in the config file.
pub fn region(env: Env<'_>, configured: Option<&str>, profile: Option<&str>) -> Option<String> {
    let given =
        configured.map(str::to_owned).or_else(|| env("AWS_REGION")).or_else(|| env("AWS_DEFAULT_REGION"));
    if let Some(region) = given.filter(|r| !r.trim().is_empty()) {
        return Some(region.trim().to_owned());
    }
    let config = ini(config_file(env).as_deref());
    config_section(&config, &profile_name(env, profile))?.get("region").cloned()
}

/// The SigV4 headers for one POST to `service` (`bedrock`, `sts`):
/// `authorization`, `x-amz-date`, `x-amz-security-token` with temporary
/// credentials.
pub(crate) fn sign(
    credentials: &AwsCredentials,
    service: &str,
    region: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    time: SystemTime,
) -> Result<Vec<(String, String)>, ModelError> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    use aws_sigv4::sign::v4;
    let failed = |e: &dyn std::fmt::Display| {
        ModelError::Authentication(AwsAuthError::Signing(format!("{service}: {e}")).to_string())
    };
    let identity = aws_credential_types::Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.expose().to_owned(),
        credentials.session_token.as_ref().map(|t| t.expose().to_owned()),
        None,
        "bosun",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(&e))?
        .into();
    let request = SignableRequest::new(
        "POST",
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(&e))?;
    let (instructions, _signature) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
    let (headers, _params) = instructions.into_parts();
    Ok(headers.into_iter().map(|h| (h.name().to_owned(), h.value().to_owned())).collect())
}
