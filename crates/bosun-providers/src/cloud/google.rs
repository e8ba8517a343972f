//! Google application default credentials, as Vertex AI takes them: an
//! OAuth access token from a service-account key file (a JWT-bearer grant
//! signed RS256, sent to the key's `token_uri`), from the gcloud user
//! credentials file (an `authorized_user` refresh-token grant), or from the
//! metadata server of the machine bosun runs on.
//!
//! Implemented here on reqwest and ring rather than through a crate, for
//! reasons found in each (docs.rs, late 2026): `gcp_auth` builds its
//! metadata and refresh-token requests from fixed Google URLs, so no test
//! can point them at a local server, and brings its own hyper client;
//! Google's `google-cloud-auth` honours `GCE_METADATA_HOST` but is built on
//! reqwest 0.12 (bosun is on 0.13: a second HTTP and TLS stack),
//! `google-cloud-gax`, and aws-lc-rs by default. What bosun needs is three
//! documented requests, each tested end to end here against a local token
//! endpoint that checks the assertion's signature and claims: the JWT is
//! three base64 parts signed with ring, already bosun's TLS crypto.
//!
//! Which file to read is the caller's choice (`GOOGLE_APPLICATION_CREDENTIALS`,
//! then `~/.config/gcloud/application_default_credentials.json`, then the
//! metadata server, as Google's libraries do): this module reads no
//! environment.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bosun_core::ModelError;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde::Deserialize;
use serde_json::json;

use super::token::{TokenFuture, TokenSource};
use crate::secret::ApiKey;

/// The scope Vertex AI needs.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Where a refresh token is exchanged when the file names no `token_uri`.
pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The metadata server's host inside Google Cloud.
pub const METADATA_HOST: &str = "metadata.google.internal";

/// How long before its expiry a token is replaced: long enough that a
/// token handed out is good for any request's headers to be sent.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// Lifetime asked for a service-account assertion (Google's maximum).
const ASSERTION_LIFETIME: u64 = 3600;
/// Largest token response read.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// Why Google credentials could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GoogleAuthError {
    /// The credentials file could not be read.
    #[error("cannot read the Google credentials file {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file is not a credential bosun can use.
    #[error("the Google credentials file {path} cannot be used: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// One source of Google access tokens, each token cached until shortly
/// before it expires. `Debug` names the kind and account, never a secret.
pub struct GoogleCredentials {
    kind: Kind,
    client: reqwest::Client,
    cache: tokio::sync::Mutex<Option<(ApiKey, Instant)>>,
}

enum Kind {
    ServiceAccount {
        email: String,
        key: Box<RsaKeyPair>,
        key_id: Option<String>,
        token_uri: String,
        project: Option<String>,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: ApiKey,
        refresh_token: ApiKey,
        token_uri: String,
        project: Option<String>,
    },
    Metadata {
        root: String,
    },
}

impl std::fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::ServiceAccount { email, token_uri, .. } => {
                f.debug_struct("ServiceAccount").field("email", email).field("token_uri", token_uri).finish()
            }
            Kind::AuthorizedUser { client_id, token_uri, .. } => f
                .debug_struct("AuthorizedUser")
                .field("client_id", client_id)
                .field("token_uri", token_uri)
                .finish(),
            Kind::Metadata { root } => f.debug_struct("MetadataServer").field("root", root).finish(),
        }
    }
}

/// The fields of the two credential files bosun reads.
#[derive(Deserialize)]
struct File {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    project_id: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    quota_project_id: Option<String>,
}

impl GoogleCredentials {
    /// The credentials in a service-account key file or a gcloud
    /// `authorized_user` file.
    pub fn from_file(path: &Path) -> Result<Self, GoogleAuthError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| GoogleAuthError::Read { path: shown.clone(), reason: e.to_string() })?;
        Self::from_json(&text, &shown)
    }

    /// The credentials in `json`, a file's text; `origin` names it in errors.
    pub fn from_json(json: &str, origin: &str) -> Result<Self, GoogleAuthError> {
        let invalid = |reason: String| GoogleAuthError::Invalid { path: origin.to_owned(), reason };
        let file: File =
            serde_json::from_str(json).map_err(|e| invalid(format!("not JSON credentials ({e})")))?;
        let missing = |field: &str| invalid(format!("it has no `{field}`"));
        let kind = match file.kind.as_deref() {
            Some("service_account") => {
                let pem = file.private_key.ok_or_else(|| missing("private_key"))?;
                let der = pem_body(&pem).ok_or_else(|| invalid("`private_key` is not a PEM key".into()))?;
                let key = RsaKeyPair::from_pkcs8(&der)
                    .map_err(|e| invalid(format!("`private_key` is not a PKCS#8 RSA key ({e})")))?;
                Kind::ServiceAccount {
                    key: Box::new(key),
                    email: file.client_email.ok_or_else(|| missing("client_email"))?,
                    key_id: file.private_key_id,
                    token_uri: file.token_uri.unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
                    project: file.project_id,
                }
            }
            Some("authorized_user") => Kind::AuthorizedUser {
                client_id: file.client_id.ok_or_else(|| missing("client_id"))?,
                client_secret: ApiKey::new(file.client_secret.ok_or_else(|| missing("client_secret"))?),
                refresh_token: ApiKey::new(file.refresh_token.ok_or_else(|| missing("refresh_token"))?),
                token_uri: file.token_uri.unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
                project: file.quota_project_id,
            },
            Some(other) => {
                return Err(invalid(format!(
                    "its type is `{other}`; bosun reads `service_account` and `authorized_user` files"
                )));
            }
            None => return Err(missing("type")),
        };
        Self::with_kind(kind)
    }

    /// The metadata server at `host` (`metadata.google.internal` in Google
    /// Cloud; `GCE_METADATA_HOST` names another, as Google's libraries
    /// read it: a `host:port`, or a URL).
    pub fn metadata_server(host: &str) -> Result<Self, GoogleAuthError> {
        let host = host.trim().trim_end_matches('/');
        let root = if host.contains("://") { host.to_owned() } else { format!("http://{host}") };
        Self::with_kind(Kind::Metadata { root })
    }

    fn with_kind(kind: Kind) -> Result<Self, GoogleAuthError> {
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| GoogleAuthError::Client(e.to_string()))?;
        Ok(Self { kind, client, cache: tokio::sync::Mutex::new(None) })
    }

    /// The project the file names (a key's `project_id`, a user file's
    /// `quota_project_id`), for when the config names none.
    pub fn project_id(&self) -> Option<&str> {
        match &self.kind {
            Kind::ServiceAccount { project, .. } | Kind::AuthorizedUser { project, .. } => project.as_deref(),
            Kind::Metadata { .. } => None,
        }
    }

    /// What kind of credential this is, for messages.
    pub fn describe(&self) -> &'static str {
        match self.kind {
            Kind::ServiceAccount { .. } => "service-account key",
            Kind::AuthorizedUser { .. } => "gcloud user credentials",
            Kind::Metadata { .. } => "metadata server",
        }
    }

    async fn cached_token(&self) -> Result<ApiKey, ModelError> {
        // Held across the fetch: concurrent requests wait for one token.
        let mut cache = self.cache.lock().await;
        if let Some((token, expires)) = cache.as_ref()
            && Instant::now() + REFRESH_MARGIN < *expires
        {
            return Ok(token.clone());
        }
        let (token, lifetime) = self.fetch().await?;
        // A token shorter-lived than the margin is used for half its life.
        let usable = if lifetime > REFRESH_MARGIN * 2 { lifetime } else { lifetime / 2 + REFRESH_MARGIN };
        *cache = Some((token.clone(), Instant::now() + usable));
        Ok(token)
    }

    async fn fetch(&self) -> Result<(ApiKey, Duration), ModelError> {
        let (uri, request, target) = match &self.kind {
            Kind::ServiceAccount { email, key, key_id, token_uri, .. } => {
                let assertion = assertion(email, key, key_id.as_deref(), token_uri)?;
                let form = form(&[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", &assertion),
                ]);
                let request = self.client.post(token_uri).header("content-type", FORM).body(form);
                (token_uri.as_str(), request, token_uri.clone())
            }
            Kind::AuthorizedUser { client_id, client_secret, refresh_token, token_uri, .. } => {
                let form = form(&[
                    ("grant_type", "refresh_token"),
                    ("client_id", client_id),
                    ("client_secret", client_secret.expose()),
                    ("refresh_token", refresh_token.expose()),
                ]);
                let request = self.client.post(token_uri).header("content-type", FORM).body(form);
                (token_uri.as_str(), request, token_uri.clone())
            }
            Kind::Metadata { root } => {
                let url = format!("{root}/computeMetadata/v1/instance/service-accounts/default/token");
                (root.as_str(), self.client.get(&url).header("metadata-flavor", "Google"), url)
            }
        };
        let what = self.describe();
        let response = request.send().await.map_err(|error| {
            let (message, _) = crate::network::describe(&error, &target);
            match self.kind {
                // Unreachable means not in Google Cloud: no retry will change that.
                Kind::Metadata { .. } if error.is_connect() => ModelError::Authentication(format!(
                    "no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, gcloud's \
                     application_default_credentials.json was not found (`gcloud auth application-default \
                     login` writes it), and the metadata server cannot be reached ({message})"
                )),
                _ => ModelError::Network(format!("getting a Google access token ({what}): {message}")),
            }
        })?;
        let status = response.status();
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ModelError::Network(format!("reading the Google token response from {uri}: {e}")))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_TOKEN_RESPONSE {
                return Err(ModelError::Protocol(format!(
                    "the Google token response from {uri} is too large"
                )));
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            let code = status.as_u16();
            let reason = refusal(&text);
            let message = format!("Google refused the {what} at {uri}: HTTP {code}{reason}");
            // A server in trouble may answer the next attempt; a refused grant will not.
            return Err(if code == 429 || code >= 500 {
                ModelError::Network(message)
            } else {
                ModelError::Authentication(message)
            });
        }
        #[derive(Deserialize)]
        struct Granted {
            access_token: String,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        let granted: Granted = serde_json::from_str(&text).map_err(|e| {
            ModelError::Protocol(format!("the Google token response from {uri} has no access_token ({e})"))
        })?;
        let lifetime = Duration::from_secs(granted.expires_in.unwrap_or(ASSERTION_LIFETIME));
        Ok((ApiKey::new(granted.access_token), lifetime))
    }
}

impl TokenSource for GoogleCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.cached_token())
    }
}

const FORM: &str = "application/x-www-form-urlencoded";

fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

/// `": invalid_grant (Bad Request)"` from an OAuth error body, when it has one.
fn refusal(body: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
    let nested = value.pointer("/error/message").and_then(serde_json::Value::as_str).map(str::to_owned);
    match (text("error"), text("error_description").or(nested)) {
        (Some(error), Some(description)) => format!(": {error} ({description})"),
        (Some(error), None) => format!(": {error}"),
        (None, Some(description)) => format!(": {description}"),
        (None, None) => String::new(),
    }
}

/// The DER bytes inside a PEM block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let inner: String =
        pem.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("-----")).collect();
    STANDARD.decode(inner).ok().filter(|der| !der.is_empty())
}

/// The signed JWT of a service account's token request (RFC 7523): issued
/// by the account, for `token_uri`, asking for the cloud-platform scope,
/// valid for an hour from now.
fn assertion(
    email: &str,
    key: &RsaKeyPair,
    key_id: Option<&str>,
    token_uri: &str,
) -> Result<String, ModelError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut header = json!({"alg": "RS256", "typ": "JWT"});
    if let Some(id) = key_id {
        header["kid"] = json!(id);
    }
    let claims = json!({
        "iss": email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": token_uri,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(&RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), signing_input.as_bytes(), &mut signature)
        .map_err(|_| ModelError::Authentication("cannot sign the service-account assertion".into()))?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_credentials_say_why_and_never_print_secrets() {
        let error = GoogleCredentials::from_json(r#"{"type": "external_account"}"#, "f.json").unwrap_err();
        assert!(error.to_string().contains("`external_account`"), "{error}");
        let error = GoogleCredentials::from_json(r#"{"type": "authorized_user"}"#, "f.json").unwrap_err();
        assert!(error.to_string().contains("no `client_id`"), "{error}");
        let user = r#"{"type": "authorized_user", "client_id": "c", "client_secret": "s3cret",
            "refresh_token": "r3fresh", "quota_project_id": "q"}"#;
        let credentials = GoogleCredentials::from_json(user, "f.json").unwrap();
        assert_eq!(credentials.project_id(), Some("q"));
        let debug = format!("{credentials:?}");
        assert!(!debug.contains("s3cret") && !debug.contains("r3fresh"), "{debug}");
        assert!(debug.contains(GOOGLE_TOKEN_URI), "{debug}");
    }

    #[test]
    fn oauth_refusals_are_summarised() {
        assert_eq!(
            refusal(r#"{"error": "invalid_grant", "error_description": "Bad"}"#),
            ": invalid_grant (Bad)"
        );
        assert_eq!(refusal("not json"), "");
        let metadata = GoogleCredentials::metadata_server("127.0.0.1:9").unwrap();
        assert_eq!(format!("{metadata:?}"), r#"MetadataServer { root: "http://127.0.0.1:9" }"#);
    }
}
