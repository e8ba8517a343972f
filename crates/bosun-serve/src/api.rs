//! The HTTP API under `/v1`: sessions (create, list, show, send, steer,
//! cancel, resume, delete), their events as Server-Sent Events, approvals
//! (list, answer), and the OpenAPI document generated from these handlers.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use bosun_agent::{Agent, StoredSession};
use bosun_core::{ApprovalDecision, GrantScope, Reason};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use crate::ServerState;
use crate::approvals::{HttpApprover, PendingApproval};
use crate::error::ApiError;
use crate::hosted::{Hosted, SessionView, Taken};
use crate::hub::EventHub;
use crate::sessions::SessionStore;

/// What a new session runs with.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// The workspace: an absolute path to an existing folder.
    pub workspace: String,
    /// `PROVIDER/MODEL`, `local/NAME` or `local:PATH.gguf` (default: the
    /// configuration's).
    pub model: Option<String>,
    /// `read-only`, `propose`, `write`, `autonomous` or `plan` (default:
    /// the configuration's; an untrusted workspace's config may only
    /// narrow it).
    pub mode: Option<String>,
    /// Most model rounds per turn.
    pub max_rounds: Option<u32>,
    /// Most dollars per turn.
    pub max_cost: Option<f64>,
}

/// A person's text for a session.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Text {
    /// The text.
    pub text: String,
}

/// How a message was taken.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sent {
    /// `true`: a turn was running, and the message waits as a follow-up.
    pub queued: bool,
}

/// The server's sessions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    /// Oldest first.
    pub sessions: Vec<SessionView>,
}

/// The pending approvals.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    /// Oldest first.
    pub approvals: Vec<PendingApproval>,
}

/// An answer to an approval.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// `once` (this call), `session` (this tool for the rest of the
    /// session) or `deny`.
    pub decision: String,
    /// Why, for a denial (the model reads it).
    pub reason: Option<String>,
}

/// Where a stream of events starts.
#[derive(Debug, Deserialize)]
pub struct After {
    /// The number of the last event already seen (as `Last-Event-ID`).
    pub after: Option<u64>,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "bosun serve", description = "Many bosun sessions behind one API. Every route needs `Authorization: Bearer TOKEN`."),
    paths(
        create_session, list_sessions, show_session, send_message, steer, cancel, resume, fork, delete_session,
        events, list_approvals, answer_approval
    ),
    components(schemas(
        CreateSession, Text, Sent, SessionView, SessionList, PendingApproval, ApprovalList, Answer, ForkAt, Forked
    )),
    modifiers(&Bearer)
)]
pub(crate) struct ApiDoc;

struct Bearer;

impl utoipa::Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        openapi.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
    }
}

/// `GET /openapi.json`.
pub(crate) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

fn hosted(state: &ServerState, id: &str) -> Result<Arc<Hosted>, ApiError> {
    state.session(id).ok_or_else(|| ApiError::not_found(format!("session `{id}` on this server")))
}

/// Builds an agent for `workspace` under the server's environment.
async fn agent_for(
    state: &ServerState,
    workspace: &std::path::Path,
    overrides: bosun_agent::config::Overrides,
) -> Result<Agent, ApiError> {
    let mut builder =
        Agent::builder(workspace).env(state.env.clone()).overrides(overrides).notices(state.notices.clone());
    if let SessionStore::Shared(shared) = &state.sessions_store {
        builder = builder.shared_store(shared.clone());
    }
    builder.build().await.map_err(|e| ApiError::bad_request(format!("{e:#}")))
}

/// Hosts a built session: its stream opened and `init` published.
async fn host(
    state: &ServerState,
    agent: Agent,
    session: bosun_core::Session,
    id: String,
) -> Result<Arc<Hosted>, ApiError> {
    // The server's own connection when the session's store is the server's
    // (the usual case): one connection, and one page cache, for every hub.
    let internal = |e: bosun_agent::Error| ApiError::internal(format!("{e:#}"));
    let store = match &state.sessions_store {
        SessionStore::Shared(shared) => SessionStore::Shared(shared.clone()),
        SessionStore::Local(local) => {
            let path = bosun_agent::parts::store_path(agent.settings(), &state.env).map_err(internal)?;
            if path == local.path() {
                SessionStore::Local(local.clone())
            } else {
                SessionStore::Local(
                    bosun_agent::parts::store(agent.settings(), &state.env).map_err(internal)?,
                )
            }
        }
    };
    let hub = EventHub::open(&id, store).await.map_err(ApiError::internal)?;
    let workspace = session.authority().workspace.as_ref().map(|w| w.path.clone()).unwrap_or_default();
    hub.publish(&bosun_agent::json_events::init_json(&id, agent.settings(), session.mode(), &workspace));
    let hosted = Hosted::new(agent, session, id, hub);
    state.insert(Arc::clone(&hosted));
    Ok(hosted)
}

fn approver(state: &ServerState) -> (Arc<HttpApprover>, Arc<OnceLock<String>>) {
    let session = Arc::new(OnceLock::new());
    (
        Arc::new(HttpApprover { session: Arc::clone(&session), approvals: Arc::clone(&state.approvals) }),
        session,
    )
}

/// Creates a session.
#[utoipa::path(post, path = "/v1/sessions", request_body = CreateSession,
    responses((status = 201, body = SessionView), (status = 400, description = "a bad workspace, model or mode")))]
pub(crate) async fn create_session(
    State(state): State<Arc<ServerState>>,
    Json(body): Json<CreateSession>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let workspace = match &state.allowed_roots {
        Some(roots) => bosun_agent::workspace_guard::inside_roots(&body.workspace, roots)
            .map_err(ApiError::bad_request)?,
        None => {
            let workspace = PathBuf::from(&body.workspace);
            if !workspace.is_absolute() || !workspace.is_dir() {
                let shown = &body.workspace;
                return Err(ApiError::bad_request(format!("`{shown}` is not an absolute path to a folder")));
            }
            workspace
        }
    };
    let mut overrides = bosun_agent::config::Overrides::default();
    overrides.model = body.model;
    overrides.mode = match body.mode.as_deref() {
        Some(mode) => Some(
            bosun_agent::config::parse_mode(mode)
                .map_err(|e| ApiError::bad_request(format!("{e:#}")))?
                .as_str(),
        ),
        None => None,
    };
    overrides.max_rounds = body.max_rounds;
    overrides.max_cost = body.max_cost;
    let agent = agent_for(&state, &workspace, overrides).await?;
    let (approver, named) = approver(&state);
    let (session, id) = match agent.new_session(approver).await {
        Ok(built) => built,
        Err(error) => {
            agent.shutdown().await;
            return Err(ApiError::bad_request(format!("{error:#}")));
        }
    };
    let _ = named.set(id.clone());
    let hosted = host(&state, agent, session, id).await?;
    Ok((StatusCode::CREATED, Json(hosted.view().await)))
}

/// Which sessions a listing shows.
#[derive(Debug, Deserialize)]
pub struct Listing {
    /// Also the store's newest sessions this server does not hold (state
    /// `stored`; `POST /v1/sessions/{id}/resume` hosts one).
    pub stored: Option<bool>,
}

/// Stored sessions a listing shows at most.
const STORED_LISTED: usize = 100;

/// Lists the sessions this server holds, and with `?stored=true` the
/// store's newest others.
#[utoipa::path(get, path = "/v1/sessions", params(("stored" = Option<bool>, Query)),
    responses((status = 200, body = SessionList)))]
pub(crate) async fn list_sessions(
    State(state): State<Arc<ServerState>>,
    Query(listing): Query<Listing>,
) -> Result<Json<SessionList>, ApiError> {
    let mut sessions = Vec::new();
    for hosted in state.sessions() {
        sessions.push(hosted.view().await);
    }
    if listing.stored == Some(true) {
        let stored = state.sessions_store.list(STORED_LISTED).await.map_err(ApiError::internal)?;
        for summary in stored {
            if sessions.iter().any(|s| s.id == summary.id) {
                continue;
            }
            sessions.push(SessionView {
                id: summary.id,
                workspace: summary.workspace.unwrap_or_default(),
                model: summary.model.unwrap_or_default(),
                mode: String::new(),
                state: "stored".to_owned(),
                title: summary.title,
            });
        }
    }
    Ok(Json(SessionList { sessions }))
}

/// Shows one session.
#[utoipa::path(get, path = "/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 200, body = SessionView), (status = 404)))]
pub(crate) async fn show_session(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    Ok(Json(hosted(&state, &id)?.view().await))
}

/// Sends a task, or a follow-up when a turn runs.
#[utoipa::path(post, path = "/v1/sessions/{id}/messages", params(("id" = String, Path)), request_body = Text,
    responses((status = 202, body = Sent), (status = 404)))]
pub(crate) async fn send_message(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Json(body): Json<Text>,
) -> Result<(StatusCode, Json<Sent>), ApiError> {
    if body.text.trim().is_empty() {
        return Err(ApiError::bad_request("the text is empty"));
    }
    let taken = hosted(&state, &id)?.send(body.text).await.map_err(ApiError::conflict)?;
    Ok((StatusCode::ACCEPTED, Json(Sent { queued: taken == Taken::Queued })))
}

/// Steers the running turn: the text reaches the model at its next round.
#[utoipa::path(post, path = "/v1/sessions/{id}/steer", params(("id" = String, Path)), request_body = Text,
    responses((status = 202), (status = 409, description = "no turn runs")))]
pub(crate) async fn steer(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Json(body): Json<Text>,
) -> Result<StatusCode, ApiError> {
    hosted(&state, &id)?.steer(body.text).await.map_err(ApiError::conflict)?;
    Ok(StatusCode::ACCEPTED)
}

/// Cancels the running turn: it stops at its last checkpoint.
#[utoipa::path(post, path = "/v1/sessions/{id}/cancel", params(("id" = String, Path)),
    responses((status = 202), (status = 409, description = "no turn runs")))]
pub(crate) async fn cancel(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if hosted(&state, &id)?.cancel() {
        Ok(StatusCode::ACCEPTED)
    } else {
        Err(ApiError::conflict("no turn is running"))
    }
}

/// Opens a stored session on this server (after a restart, or one another
/// front end ran), on the model it ran on. An interrupted turn's prompt is
/// answered by the next message.
#[utoipa::path(post, path = "/v1/sessions/{id}/resume", params(("id" = String, Path)),
    responses((status = 200, body = SessionView), (status = 404), (status = 409, description = "another process holds it")))]
pub(crate) async fn resume(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    if let Some(hosted) = state.session(&id) {
        return Ok(Json(hosted.view().await));
    }
    let hosted = open_stored(&state, &id).await?;
    Ok(Json(hosted.view().await))
}

/// Hosts stored session `id` (a whole id or a unique prefix).
async fn open_stored(state: &ServerState, id: &str) -> Result<Arc<Hosted>, ApiError> {
    let id = state.sessions_store.resolve_id(id).await.map_err(store_error)?;
    let workspace = state.sessions_store.workspace(&id).await.map_err(store_error)?;
    let workspace = workspace
        .map(PathBuf::from)
        .ok_or_else(|| ApiError::conflict(format!("session `{id}` has no workspace to open")))?;
    let agent = agent_for(state, &workspace, bosun_agent::config::Overrides::default()).await?;
    let (approver, named) = approver(state);
    let _ = named.set(id.clone());
    let (session, id) = match agent.open(StoredSession::Id(id), approver).await {
        Ok(opened) => opened,
        Err(error) => {
            agent.shutdown().await;
            return Err(ApiError::conflict(format!("{error:#}")));
        }
    };
    host(state, agent, session, id).await
}

/// Where a fork starts.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkAt {
    /// The stored message to branch at (an assistant answer or a batch's
    /// last result); none: the newest.
    pub at: Option<i64>,
}

/// A fork's new branch and the session on it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Forked {
    /// The new branch, now the session's head (the old one stays).
    pub branch: String,
    /// The session, hosted again on the new branch.
    pub session: SessionView,
}

/// Starts a new branch of an idle session at a message and goes on there;
/// the branch it leaves stays in the store.
#[utoipa::path(post, path = "/v1/sessions/{id}/fork", params(("id" = String, Path)), request_body = ForkAt,
    responses((status = 200, body = Forked), (status = 404), (status = 409, description = "a turn runs")))]
pub(crate) async fn fork(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Json(body): Json<ForkAt>,
) -> Result<Json<Forked>, ApiError> {
    if let Some(hosted) = state.session(&id) {
        if hosted.is_running() {
            return Err(ApiError::conflict("a turn is running: cancel it or wait for it first"));
        }
        // Let go of the session (its journal's lease) for the fork.
        if let Some(hosted) = state.remove(&id) {
            state.approvals.withdraw_session(&id);
            hosted.shut_down().await;
        }
    }
    let id = state.sessions_store.resolve_id(&id).await.map_err(store_error)?;
    let branch = state.sessions_store.fork_at(&id, body.at).map_err(|e| ApiError::conflict(e.to_string()))?;
    let hosted = open_stored(&state, &id).await?;
    Ok(Json(Forked { branch, session: hosted.view().await }))
}

/// Stops a session and deletes it from the store.
#[utoipa::path(delete, path = "/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 204), (status = 404)))]
pub(crate) async fn delete_session(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let hosted =
        state.remove(&id).ok_or_else(|| ApiError::not_found(format!("session `{id}` on this server")))?;
    state.approvals.withdraw_session(&id);
    hosted.shut_down().await;
    drop(hosted);
    state.sessions_store.delete(&id).await.map_err(ApiError::internal)?;
    Ok(StatusCode::NO_CONTENT)
}

/// The session's events as Server-Sent Events (`id:` the event's number,
/// `data:` its JSON, as a line of `bosun exec --json`), from the first
/// or from after `Last-Event-ID` (or `?after=N`), then live.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", params(("id" = String, Path), ("after" = Option<u64>, Query)),
    responses((status = 200, content_type = "text/event-stream"), (status = 404)))]
pub(crate) async fn events(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(after): Query<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, std::convert::Infallible>>>, ApiError> {
    let hosted = hosted(&state, &id)?;
    let last_seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(after.after)
        .unwrap_or(0);
    let stream = crate::stream::events(Arc::clone(&hosted.hub), last_seen, state.stopping.clone());
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Lists the approvals waiting for an answer.
#[utoipa::path(get, path = "/v1/approvals", responses((status = 200, body = ApprovalList)))]
pub(crate) async fn list_approvals(State(state): State<Arc<ServerState>>) -> Json<ApprovalList> {
    Json(ApprovalList { approvals: state.approvals.list() })
}

/// Answers an approval.
#[utoipa::path(post, path = "/v1/approvals/{id}", params(("id" = String, Path)), request_body = Answer,
    responses((status = 200), (status = 400), (status = 404, description = "unknown or already answered")))]
pub(crate) async fn answer_approval(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Json(body): Json<Answer>,
) -> Result<StatusCode, ApiError> {
    let decision = match body.decision.as_str() {
        "once" => ApprovalDecision::ApproveOnce,
        "session" => ApprovalDecision::ApproveForSession { scope: GrantScope::Tool },
        "deny" => {
            let text = body.reason.as_deref().unwrap_or("denied by the person watching");
            ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") }
        }
        other => {
            return Err(ApiError::bad_request(format!("unknown decision `{other}`: once, session or deny")));
        }
    };
    if state.approvals.answer(&id, decision) {
        Ok(StatusCode::OK)
    } else {
        Err(ApiError::not_found(format!("pending approval `{id}`")))
    }
}

/// A store's answer as the API's: a session it does not have (or an id
/// that names none or several) is not found; anything else is the server's.
fn store_error(error: crate::sessions::StoreFailure) -> ApiError {
    if error.is_not_found() { ApiError::not_found(error.to_string()) } else { ApiError::internal(error) }
}
