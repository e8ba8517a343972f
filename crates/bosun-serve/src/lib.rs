//! `bosun serve`: one process holding many sessions behind an HTTP API.
//!
//! Each session has its own agent (workspace, configuration under the same
//! trust rules as the CLI, model, mode, sandbox, MCP servers). Its events
//! go out as Server-Sent Events in the JSON form of `bosun exec --json`,
//! numbered and kept in the store ([`hub`]), so a client that reconnects
//! with `Last-Event-ID` gets exactly what it missed. Approvals wait for an
//! authenticated client's answer ([`approvals`]). Every route but the page's
//! static files needs the bearer token ([`token`]); the server listens on
//! loopback unless told otherwise, bounds request bodies, and sends no CORS
//! headers unless an origin is configured. At shutdown running turns are
//! cancelled to their last checkpoint; `POST /v1/sessions/{id}/resume`
//! opens a stored session again after a restart.
//!
//! The binary's `bosun serve` is a thin front end over [`Server`].

mod api;
mod approvals;
mod error;
mod hosted;
mod hub;
mod page;
mod sessions;
mod stream;
mod token;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use bosun_agent::Notices;
use bosun_core::env::Env;
use bosun_store::Store;
use tokio_util::sync::CancellationToken;

pub use approvals::PendingApproval;
pub use error::{ApiError, ServeError};
pub use hosted::SessionView;
pub use page::CSP;
pub use token::{MIN_TOKEN_CHARS, Token, TokenSource};

use hosted::Hosted;
use sessions::SessionStore;

/// The largest request body, in bytes: a task's text, not a file upload.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The address `bosun serve` listens on unless told another.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7777";

/// How a server runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The token every API request must carry.
    pub token: Token,
    /// The environment sessions' configuration is read with.
    pub env: Env,
    /// The local store: sessions are resumed from it unless `shared` is
    /// set, and their local parts (rewind, artifacts) are kept in it.
    pub store: Store,
    /// A Postgres database several servers share (`store_url`): sessions'
    /// journals and events are kept there instead.
    pub shared: Option<bosun_store_pg::PgStore>,
    /// Origins allowed to call the API from a browser page of their own
    /// (none: no CORS headers at all).
    pub cors_origins: Vec<String>,
    /// Where the agents' notices go.
    pub notices: Notices,
    /// When set, folders a session's workspace must be inside (canonical).
    pub allowed_roots: Option<Vec<std::path::PathBuf>>,
}

impl ServeOptions {
    /// Options with no CORS origin and notices dropped.
    pub fn new(token: Token, env: Env, store: Store) -> Self {
        Self {
            token,
            env,
            store,
            shared: None,
            cors_origins: Vec::new(),
            notices: Notices::ignored(),
            allowed_roots: None,
        }
    }
}

/// What every handler shares.
pub(crate) struct ServerState {
    token: Token,
    pub(crate) env: Env,
    /// Where sessions are listed, resumed and their events kept.
    pub(crate) sessions_store: SessionStore,
    pub(crate) notices: Notices,
    pub(crate) allowed_roots: Option<Vec<std::path::PathBuf>>,
    sessions: Mutex<BTreeMap<String, Arc<Hosted>>>,
    pub(crate) approvals: Arc<approvals::Approvals>,
    /// Fired at shutdown: event streams end.
    pub(crate) stopping: CancellationToken,
}

impl ServerState {
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Hosted>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    pub(crate) fn sessions(&self) -> Vec<Arc<Hosted>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    pub(crate) fn insert(&self, hosted: Arc<Hosted>) {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(hosted.id.clone(), hosted);
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Hosted>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
    }
}

/// A server: its routes, and the sessions they reach.
pub struct Server {
    state: Arc<ServerState>,
    cors_origins: Vec<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("sessions", &self.state.sessions().len()).finish_non_exhaustive()
    }
}

impl Server {
    /// A server with no session yet.
    pub fn new(options: ServeOptions) -> Self {
        let state = Arc::new(ServerState {
            token: options.token,
            env: options.env,
            sessions_store: match options.shared {
                Some(shared) => SessionStore::Shared(shared),
                None => SessionStore::Local(options.store),
            },
            notices: options.notices,
            allowed_roots: options.allowed_roots,
            sessions: Mutex::new(BTreeMap::new()),
            approvals: Arc::default(),
            stopping: CancellationToken::new(),
        });
        Self { state, cors_origins: options.cors_origins }
    }

    /// The routes: the API under `/v1` and `/openapi.json` behind the
    /// token, the page's files open.
    ///
    /// # Errors
    /// When a configured CORS origin is not a valid header value.
    pub fn router(&self) -> Result<Router, ServeError> {
        let api = Router::new()
            .route("/v1/sessions", post(api::create_session).get(api::list_sessions))
            .route("/v1/sessions/{id}", get(api::show_session).delete(api::delete_session))
            .route("/v1/sessions/{id}/messages", post(api::send_message))
            .route("/v1/sessions/{id}/steer", post(api::steer))
            .route("/v1/sessions/{id}/cancel", post(api::cancel))
            .route("/v1/sessions/{id}/resume", post(api::resume))
            .route("/v1/sessions/{id}/fork", post(api::fork))
            .route("/v1/sessions/{id}/events", get(api::events))
            .route("/v1/approvals", get(api::list_approvals))
            .route("/v1/approvals/{id}", post(api::answer_approval))
            .route("/openapi.json", get(api::openapi))
            .route_layer(middleware::from_fn_with_state(Arc::clone(&self.state), authenticate));
        let mut router = Router::new()
            .route("/", get(page::index))
            .route("/app.js", get(page::script))
            .route("/app.css", get(page::style))
            .merge(api)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(&self.state));
        if !self.cors_origins.is_empty() {
            let origins = self
                .cors_origins
                .iter()
                .map(|o| {
                    HeaderValue::from_str(o).map_err(|_| ServeError::Token(format!("bad CORS origin `{o}`")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let cors = tower_http::cors::CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([
                    axum::http::Method::GET,
                    axum::http::Method::POST,
                    axum::http::Method::DELETE,
                ])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::HeaderName::from_static("last-event-id"),
                ]);
            router = router.layer(cors);
        }
        Ok(router)
    }

    /// Serves on `listener` until `shutdown` fires; then cancels every
    /// running turn, waits for each to reach its checkpoint, and stops the
    /// sessions' MCP servers.
    ///
    /// # Errors
    /// When serving fails.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let router = self.router()?;
        let stopping = self.state.stopping.clone();
        let state = Arc::clone(&self.state);
        let signal = async move {
            shutdown.await;
            stopping.cancel();
            for hosted in state.sessions() {
                hosted.cancel();
            }
        };
        // Events are small writes; without NODELAY each one after the first
        // can wait for the client's delayed ACK (40 ms on Linux).
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "serve: TCP_NODELAY not set");
            }
        });
        axum::serve(listener, router).with_graceful_shutdown(signal).await?;
        for hosted in self.state.sessions() {
            hosted.shut_down().await;
        }
        Ok(())
    }
}

/// Whether `addr` may be listened on without `--allow-remote`.
///
/// # Errors
/// [`ServeError::NotLoopback`] for any other address.
pub fn check_loopback(addr: &SocketAddr, allow_remote: bool) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(ServeError::NotLoopback(addr.to_string()))
    }
}

/// Refuses a request without the server's bearer token.
async fn authenticate(State(state): State<Arc<ServerState>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(token) if state.token.matches(token.trim()) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            axum::Json(
                serde_json::json!({"error": "a bearer token is required (Authorization: Bearer TOKEN)"}),
            ),
        )
            .into_response(),
    }
}
