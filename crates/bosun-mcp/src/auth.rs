//! OAuth for Streamable HTTP servers: OAuth 2.1 authorization code with
//! PKCE, as the MCP authorization spec asks, on rmcp's
//! `AuthorizationManager` (protected-resource and authorization-server
//! metadata discovery, dynamic client registration, the authorization URL,
//! the code exchange, refresh, scope upgrades).
//!
//! Authorization is reactive, the spec's way: a request goes out with the
//! token bosun has (refreshed when expired) or none; the server's `401`
//! challenge starts an authorization seeded from its `WWW-Authenticate`
//! header, and a `403 insufficient_scope` a step-up to the union of the
//! scopes held and those asked for. Both happen inside the HTTP client
//! (`auth_http.rs`), below rmcp's transport, so the request is sent again
//! with the new token and the MCP session never sees the failure. At most
//! [`MAX_AUTHORIZATIONS`] authorizations are tried for one request, so a
//! server that refuses every token cannot loop us.
//!
//! Visiting the authorization URL is an [`Authorizer`]'s job (the CLI's
//! `bosun mcp login` opens a browser and listens on a loopback port). With
//! none, a server that asks for authorization fails with
//! [`ServerError::Unauthorized`](crate::ServerError::Unauthorized); with a
//! stored token (see [`OAuthConfig::token_file`]) it is used and refreshed.
//!
//! Our own code, where rmcp's does not fit: the client secret a
//! registration gave and the discovered metadata are kept in the token file
//! (rmcp's store holds neither), and the 2025-03-26 revision's metadata at
//! the server's root is accepted even when its `issuer` names another path
//! (rmcp checks RFC 8414's issuer binding, which that revision did not ask
//! for).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt;
use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata, OAuthClientConfig};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::auth_store::{FileCredentials, Registration, TokenFile};
use crate::secret::Secret;

/// Most authorizations (a first one and step-ups) tried for one request.
pub const MAX_AUTHORIZATIONS: u32 = 3;
/// Largest metadata document read by the 2025-03-26 fallback.
const MAX_METADATA: usize = 1024 * 1024;

/// How bosun authorizes with one HTTP server.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// Where the tokens are kept between runs (one file per server, `0600`);
    /// `None` keeps them in memory for this run only.
    pub token_file: Option<PathBuf>,
    /// A client registered with the authorization server beforehand; when
    /// unset, a Client ID Metadata Document or dynamic registration is used.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// An `https://` URL where bosun's client metadata is published (a
    /// Client ID Metadata Document), used as the client id by authorization
    /// servers that support it.
    pub client_metadata_url: Option<String>,
    /// The name a dynamic registration gives.
    pub client_name: String,
    /// Visits authorization URLs; with none, a server asking for
    /// authorization that no stored token satisfies fails to start.
    pub authorizer: Option<Arc<dyn Authorizer>>,
}

impl OAuthConfig {
    /// Tokens in memory, dynamic registration, nobody to authorize.
    pub fn new() -> Self {
        Self {
            token_file: None,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "bosun".to_owned(),
            authorizer: None,
        }
    }

    /// Keeps the tokens in `path`.
    pub fn with_token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.token_file = Some(path.into());
        self
    }

    /// Uses a pre-registered client.
    pub fn with_client(mut self, client_id: impl Into<String>, client_secret: Option<Secret>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = client_secret;
        self
    }

    /// Offers `url` as a Client ID Metadata Document.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Authorizes through `authorizer`.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self::new()
    }
}

// The secret is redacted; the authorizer is shown as present or not.
impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("token_file", &self.token_file)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("authorizer", &self.authorizer.is_some())
            .finish()
    }
}

// Two configs are equal when they hold the same data and the same authorizer.
impl PartialEq for OAuthConfig {
    fn eq(&self, other: &Self) -> bool {
        let same_authorizer = match (&self.authorizer, &other.authorizer) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same_authorizer
            && self.token_file == other.token_file
            && self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && self.client_metadata_url == other.client_metadata_url
            && self.client_name == other.client_name
    }
}

impl Eq for OAuthConfig {}

/// The future an [`Authorizer`] returns.
pub type AuthorizeFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AuthorizationResponse, String>> + Send + 'a>>;

/// Has the authorization URL visited (a person in a browser) and returns
/// where the authorization server sent the browser back.
pub trait Authorizer: Send + Sync {
    /// The redirect URI registered and sent with each authorization.
    fn redirect_uri(&self) -> String;

    /// Visits `authorization.url` and returns the redirect's parameters.
    /// The caller checks the returned `state` against the one it sent.
    fn authorize(&self, authorization: Authorization) -> AuthorizeFuture<'_>;
}

/// One authorization to visit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Authorization {
    /// The server asking.
    pub server: String,
    /// The authorization server's URL to open.
    pub url: String,
    /// The `state` sent in it, which the redirect must carry back.
    pub state: String,
}

/// What the authorization server sent back on the redirect.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code (a secret until exchanged).
    pub code: Secret,
    /// The `state` it carried.
    pub state: String,
    /// The authorization server's `iss` (RFC 9207), when it sends one.
    pub issuer: Option<String>,
}

impl fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code)
            .field("state", &self.state)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl AuthorizationResponse {
    /// Reads a redirect URL's query: `code`, `state` and `iss`, or the
    /// `error` (and `error_description`) the authorization server gave.
    pub fn from_redirect_url(url: &str) -> Result<Self, String> {
        let url = reqwest::Url::parse(url).map_err(|e| format!("the redirect is not a URL: {e}"))?;
        let mut found: HashMap<String, String> = HashMap::new();
        for (key, value) in url.query_pairs() {
            found.entry(key.into_owned()).or_insert_with(|| value.into_owned());
        }
        if let Some(error) = found.get("error") {
            let description = found.get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
            return Err(format!("the authorization server refused: {error}{description}"));
        }
        let code = found.remove("code").ok_or("the redirect carries no `code`")?;
        let state = found.remove("state").ok_or("the redirect carries no `state`")?;
        Ok(Self { code: Secret::new(code), state, issuer: found.remove("iss") })
    }
}

/// One server's OAuth state, shared by every request of its connection.
pub(crate) struct OAuth {
    server: String,
    url: String,
    config: OAuthConfig,
    file: Option<Arc<TokenFile>>,
    http: reqwest::Client,
    state: tokio::sync::Mutex<State>,
    /// Why the server could not be authorized, for the start-up error; set
    /// only when a `401` or `403` could not be answered.
    failure: Mutex<Option<String>>,
    /// Why the token file could not be used, told when that matters.
    unusable_store: Mutex<Option<String>>,
}

/// What one request has tried so far; each way out is bounded.
#[derive(Debug, Default)]
struct Tries {
    /// Authorizations, first and step-ups (at most [`MAX_AUTHORIZATIONS`]).
    authorizations: u32,
    /// The silent refresh after a rejected token (at most one).
    refreshed: bool,
    /// A token another request obtained meanwhile (taken at most once).
    took_newer: bool,
}

#[derive(Default)]
struct State {
    manager: Option<AuthorizationManager>,
    /// The stored tokens were looked for (once).
    loaded: bool,
    /// This run registered or configured the client, so a step-up can
    /// reuse it.
    registered: bool,
}

impl OAuth {
    pub(crate) fn new(server: &str, url: &str, config: OAuthConfig, http: reqwest::Client) -> Self {
        let file = config.token_file.clone().map(|path| Arc::new(TokenFile::new(path, url)));
        Self {
            server: server.to_owned(),
            url: url.to_owned(),
            config,
            file,
            http,
            state: tokio::sync::Mutex::new(State::default()),
            failure: Mutex::new(None),
            unusable_store: Mutex::new(None),
        }
    }

    /// Why the server could not be authorized, if that is why it failed.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn failed(&self, reason: String) {
        tracing::warn!(server = %self.server, %reason, "mcp: authorization failed");
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
    }

    /// The token to send now (refreshed when it has expired), if any.
    pub(crate) async fn token(&self) -> Option<String> {
        let mut state = self.state.lock().await;
        if !state.loaded {
            state.loaded = true;
            match self.stored_manager().await {
                Ok(manager) => state.manager = manager,
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "mcp: the stored tokens cannot be used");
                    let reason = format!("the stored tokens cannot be used: {error}");
                    *self.unusable_store.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
                }
            }
        }
        let manager = state.manager.as_ref()?;
        match manager.get_access_token().await {
            Ok(token) => Some(token),
            Err(AuthError::AuthorizationRequired) => None,
            Err(error) => {
                tracing::info!(server = %self.server, %error, "mcp: no usable token; sending none");
                None
            }
        }
    }

    /// A manager set up from the token file, when it holds tokens.
    async fn stored_manager(&self) -> Result<Option<AuthorizationManager>, AuthError> {
        let Some(file) = &self.file else { return Ok(None) };
        let reader = Arc::clone(file);
        let stored = tokio::task::spawn_blocking(move || reader.read())
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        let Some(stored) = stored else { return Ok(None) };
        let (Some(registration), Some(metadata), Some(_)) =
            (stored.registration, stored.metadata, stored.credentials)
        else {
            return Ok(None);
        };
        let mut manager = self.new_manager().await?;
        manager.set_metadata(metadata);
        manager.configure_client(client_config(&registration, &registration.redirect_or(&self.url)))?;
        Ok(Some(manager))
    }

    async fn new_manager(&self) -> Result<AuthorizationManager, AuthError> {
        // rmcp builds its own HTTP client for discovery.
        crate::tls::install_default_provider();
        let mut manager = AuthorizationManager::new(self.url.as_str()).await?;
        if let Some(file) = &self.file {
            manager.set_credential_store(FileCredentials::new(Arc::clone(file)));
        }
        Ok(manager)
    }

    /// Runs `call` with the current token; on a `401` or `403
    /// insufficient_scope`, refreshes or authorizes and runs it again.
    pub(crate) async fn send<T, F, Fut>(&self, call: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let mut token = self.token().await;
        let mut tries = Tries::default();
        loop {
            let error = match call(token.clone()).await {
                Err(
                    error
                    @ (StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)),
                ) => error,
                other => return other,
            };
            match self.recover(token.as_deref(), &error, &mut tries).await {
                Some(fresh) => token = Some(fresh),
                None => return Err(error),
            }
        }
    }

    /// A token worth sending again after `error`, or `None` to give up.
    async fn recover(
        &self,
        sent: Option<&str>,
        error: &StreamableHttpError<reqwest::Error>,
        tries: &mut Tries,
    ) -> Option<String> {
        let mut state = self.state.lock().await;
        let step_up = matches!(error, StreamableHttpError::InsufficientScope(_));
        let challenge = error.auth_challenge().map(str::to_owned);
        if let Some(manager) = &state.manager {
            // Another request may have authorized while this one waited
            // (taken once: a server refusing every token ends below).
            if !tries.took_newer
                && let Ok(current) = manager.get_access_token().await
                && Some(current.as_str()) != sent
            {
                tries.took_newer = true;
                return Some(current);
            }
            // A rejected token may only have expired early: one refresh.
            if !step_up
                && !tries.refreshed
                && sent.is_some()
                && {
                    tries.refreshed = true;
                    manager.refresh_token().await.is_ok()
                }
                && let Ok(fresh) = manager.get_access_token().await
                && Some(fresh.as_str()) != sent
            {
                return Some(fresh);
            }
        }
        let Some(authorizer) = self.config.authorizer.clone() else {
            let unusable = self.unusable_store.lock().unwrap_or_else(PoisonError::into_inner).clone();
            self.failed(match (step_up, unusable) {
                (true, _) => "the server asks for more scopes than the stored token holds".to_owned(),
                (false, Some(unusable)) => unusable,
                (false, None) => "no stored token can be used".to_owned(),
            });
            return None;
        };
        if tries.authorizations >= MAX_AUTHORIZATIONS {
            self.failed(format!("the server still refuses after {MAX_AUTHORIZATIONS} authorizations"));
            return None;
        }
        tries.authorizations += 1;
        let result = match (step_up, state.registered) {
            (true, true) => self.step_up(&mut state, authorizer.as_ref(), error).await,
            _ => self.authorize(&mut state, authorizer.as_ref(), challenge.as_deref()).await,
        };
        let manager = state.manager.as_ref()?;
        match result.map(|()| manager) {
            Ok(manager) => match manager.get_access_token().await {
                Ok(token) => Some(token),
                Err(error) => {
                    self.failed(format!("no token after authorizing: {error}"));
                    None
                }
            },
            Err(error) => {
                self.failed(error.to_string());
                None
            }
        }
    }

    /// A whole authorization: discovery (seeded by the challenge), client
    /// registration, the visit, the code exchange.
    async fn authorize(
        &self,
        state: &mut State,
        authorizer: &dyn Authorizer,
        challenge: Option<&str>,
    ) -> Result<(), AuthError> {
        let mut manager = match state.manager.take() {
            Some(manager) => manager,
            None => self.new_manager().await?,
        };
        let result = self.authorize_with(&mut manager, authorizer, challenge).await;
        state.manager = Some(manager);
        state.registered = result.is_ok();
        result
    }

    async fn authorize_with(
        &self,
        manager: &mut AuthorizationManager,
        authorizer: &dyn Authorizer,
        challenge: Option<&str>,
    ) -> Result<(), AuthError> {
        let metadata = self.discover(manager, challenge).await?;
        manager.set_metadata(metadata.clone());
        // The challenge's scopes, else the protected resource's
        // `scopes_supported`, else none (the parameter is left out).
        let scopes = manager.select_initial_scopes(&[]).await;
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let redirect_uri = authorizer.redirect_uri();
        let registration = self.register(manager, &metadata, &redirect_uri, &scopes).await?;
        manager.configure_client(client_config(&registration, &redirect_uri))?;
        let url = manager.get_authorization_url(&scopes).await?;
        self.visit(manager, authorizer, url).await?;
        if let Some(file) = self.file.clone() {
            let registration = Registration { redirect_uri: Some(redirect_uri), ..registration };
            let saved = tokio::task::spawn_blocking(move || {
                file.update(|stored| {
                    stored.registration = Some(registration);
                    stored.metadata = Some(metadata);
                })
            });
            saved
                .await
                .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
                .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        }
        Ok(())
    }

    /// The authorization server's metadata, through rmcp's discovery, or
    /// the 2025-03-26 revision's document at the server's own root.
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: Option<&str>,
    ) -> Result<AuthorizationMetadata, AuthError> {
        match manager.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => Ok(resolution.metadata),
            // rmcp read the document at the root of the MCP server's origin
            // and refused its issuer: the 2025-03-26 revision names that very
            // document (its authorization base URL is the server's origin)
            // and does not bind the issuer to where it is published.
            Err(AuthError::AuthorizationServerMismatch { expected_issuer, received_issuer })
                if is_origin_root(&expected_issuer, &self.url) =>
            {
                tracing::info!(server = %self.server, %received_issuer,
                    "mcp: 2025-03-26 authorization metadata at the server's root");
                self.root_metadata().await
            }
            Err(error) => Err(error),
        }
    }

    async fn root_metadata(&self) -> Result<AuthorizationMetadata, AuthError> {
        let mut url = reqwest::Url::parse(&self.url)?;
        url.set_path("/.well-known/oauth-authorization-server");
        url.set_query(None);
        let response = self
            .http
            .get(url.clone())
            .header("MCP-Protocol-Version", "2025-03-26")
            .send()
            .await?
            .error_for_status()?;
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            body.extend_from_slice(&chunk?);
            if body.len() > MAX_METADATA {
                return Err(AuthError::MetadataError(format!("{url} is larger than {MAX_METADATA} bytes")));
            }
        }
        serde_json::from_slice(&body).map_err(|e| AuthError::MetadataError(format!("{url}: {e}")))
    }

    /// The client: pre-registered, else a Client ID Metadata Document where
    /// the authorization server takes one, else dynamically registered.
    async fn register(
        &self,
        manager: &mut AuthorizationManager,
        metadata: &AuthorizationMetadata,
        redirect_uri: &str,
        scopes: &[&str],
    ) -> Result<Registration, AuthError> {
        if let Some(client_id) = &self.config.client_id {
            let client_secret = self.config.client_secret.as_ref().map(|s| s.expose().to_owned());
            return Ok(Registration { client_id: client_id.clone(), client_secret, redirect_uri: None });
        }
        let takes_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        if takes_documents && let Some(url) = &self.config.client_metadata_url {
            return Ok(Registration { client_id: url.clone(), client_secret: None, redirect_uri: None });
        }
        let registered = manager.register_client(&self.config.client_name, redirect_uri, scopes).await?;
        Ok(Registration {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            redirect_uri: None,
        })
    }

    /// A step-up: the scopes held plus those the `403` asks for.
    async fn step_up(
        &self,
        state: &mut State,
        authorizer: &dyn Authorizer,
        error: &StreamableHttpError<reqwest::Error>,
    ) -> Result<(), AuthError> {
        let StreamableHttpError::InsufficientScope(insufficient) = error else {
            return Err(AuthError::InternalError("a step-up needs a 403".into()));
        };
        let manager = state.manager.as_ref().ok_or(AuthError::AuthorizationRequired)?;
        let required = insufficient.get_required_scope().unwrap_or_default();
        let url = manager.request_scope_upgrade(required).await?;
        self.visit(manager, authorizer, url).await
    }

    /// Has the authorizer visit `url`, checks the `state` it brings back
    /// and exchanges the code.
    async fn visit(
        &self,
        manager: &AuthorizationManager,
        authorizer: &dyn Authorizer,
        url: String,
    ) -> Result<(), AuthError> {
        let parsed = reqwest::Url::parse(&url)?;
        let state =
            parsed.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()).unwrap_or_default();
        let authorization = Authorization { server: self.server.clone(), url, state: state.clone() };
        let response = authorizer.authorize(authorization).await.map_err(AuthError::AuthorizationFailed)?;
        if response.state != state {
            return Err(AuthError::AuthorizationFailed(
                "the redirect's `state` is not the one sent; refused".to_owned(),
            ));
        }
        manager
            .exchange_code_for_token_with_issuer(
                response.code.expose(),
                &response.state,
                response.issuer.as_deref(),
            )
            .await?;
        Ok(())
    }
}

fn client_config(registration: &Registration, redirect_uri: &str) -> OAuthClientConfig {
    let config = OAuthClientConfig::new(registration.client_id.clone(), redirect_uri);
    match &registration.client_secret {
        Some(secret) => config.with_client_secret(secret.clone()),
        None => config,
    }
}

/// Whether `issuer` is the root of `url`'s origin (`https://host:port/`).
fn is_origin_root(issuer: &str, url: &str) -> bool {
    let (Ok(issuer), Ok(url)) = (reqwest::Url::parse(issuer), reqwest::Url::parse(url)) else { return false };
    issuer.origin() == url.origin() && matches!(issuer.path(), "" | "/") && issuer.query().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_gives_its_code_state_and_issuer_or_the_refusal() {
        let response = AuthorizationResponse::from_redirect_url(
            "http://127.0.0.1:5/callback?code=c%2B1&state=s&iss=https%3A%2F%2Fas",
        )
        .unwrap();
        assert_eq!((response.code.expose(), response.state.as_str()), ("c+1", "s"));
        assert_eq!(response.issuer.as_deref(), Some("https://as"));
        assert!(!format!("{response:?}").contains("c+1"), "the code is redacted");
        let refused = AuthorizationResponse::from_redirect_url(
            "http://127.0.0.1:5/callback?error=access_denied&error_description=no&state=s",
        )
        .unwrap_err();
        assert!(refused.contains("access_denied: no"), "{refused}");
        assert!(AuthorizationResponse::from_redirect_url("http://127.0.0.1:5/callback?state=s").is_err());
    }

    #[test]
    fn only_the_root_of_the_servers_own_origin_counts_as_the_2025_03_26_location() {
        assert!(is_origin_root("http://localhost:3000/", "http://localhost:3000/mcp"));
        assert!(is_origin_root("http://localhost:3000", "http://localhost:3000/mcp"));
        assert!(!is_origin_root("http://localhost:3000/tenant", "http://localhost:3000/mcp"));
        assert!(!is_origin_root("http://localhost:3001/", "http://localhost:3000/mcp"));
        assert!(!is_origin_root("https://localhost:3000/", "http://localhost:3000/mcp"));
    }

    #[test]
    fn debug_never_shows_the_client_secret() {
        let config = OAuthConfig::new().with_client("id", Some(Secret::new("s3cret")));
        let shown = format!("{config:?}");
        assert!(shown.contains("\"id\"") && !shown.contains("s3cret"), "{shown}");
    }
}
