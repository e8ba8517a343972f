//! The sessions one connection holds and what each ACP request does to
//! them: `session/new` and `session/load` build a session through
//! `bosun-agent` (the same trust gate and sandbox as the CLI's),
//! `session/prompt` runs a turn under its own cancellation, which
//! `session/cancel` fires, `session/set_mode` changes the mode within the
//! user's own, and `session/set_config_option` reopens the session on
//! another model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::Client;
use agent_client_protocol::Error;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use bosun_agent::{Agent, StoredSession};
use bosun_core::model::Support;
use bosun_core::{Mode, Session, TurnOptions};
use tokio_util::sync::CancellationToken;

use crate::AcpOptions;
use crate::approve::EditorApprover;
use crate::fs::{ClientFiles, EditorFiles};
use crate::modes;
use crate::terminal::EditorTerminal;
use crate::updates::UpdateSink;

/// One session the editor opened.
struct Hosted {
    id: String,
    /// The id the editor's tools and approvals name, shared with them.
    named: Arc<OnceLock<String>>,
    /// The MCP servers the client passed, for a reopened session.
    servers: Vec<McpServer>,
    /// The models offered, and the one the session runs on.
    models: Vec<String>,
    model: Mutex<String>,
    /// Whether the model takes images.
    images: Mutex<Support>,
    agent: tokio::sync::Mutex<Option<Agent>>,
    /// The session; `None` only if reopening it on another model failed.
    session: tokio::sync::Mutex<Option<Session>>,
    workspace: PathBuf,
    /// The user's own mode for the workspace: the loosest the editor may set.
    user_mode: Mode,
    /// The mode the editor chose, applied before the next turn.
    mode: Mutex<Mode>,
    /// The running turn's cancellation, while one runs.
    running: Mutex<Option<CancellationToken>>,
}

/// Everything one connection holds.
pub(crate) struct Sessions {
    options: AcpOptions,
    held: Mutex<HashMap<String, Arc<Hosted>>>,
    /// Whether the client reads and writes text files for its sessions
    /// (`fs` at `initialize`).
    editor_files: Mutex<ClientFiles>,
    /// Whether the client runs terminals (`terminal` at `initialize`).
    editor_terminals: AtomicBool,
}

fn failed(message: impl std::fmt::Display) -> Error {
    Error::internal_error().data(serde_json::Value::String(message.to_string()))
}

fn invalid(message: impl std::fmt::Display) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.to_string()))
}

impl Sessions {
    pub(crate) fn new(options: AcpOptions) -> Self {
        Self {
            options,
            held: Mutex::new(HashMap::new()),
            editor_files: Mutex::default(),
            editor_terminals: AtomicBool::new(false),
        }
    }

    fn get(&self, id: &str) -> Result<Arc<Hosted>, Error> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| invalid(format!("no session `{id}` on this connection")))
    }

    /// Takes what the client said it can do at `initialize`.
    pub(crate) fn client_files(&self, files: ClientFiles) {
        *self.editor_files.lock().unwrap_or_else(PoisonError::into_inner) = files;
    }

    pub(crate) fn client_terminals(&self, terminals: bool) {
        self.editor_terminals.store(terminals, Ordering::Relaxed);
    }

    /// The session's agent; its file tools reading and writing through the
    /// editor as far as the client offers to.
    async fn agent(
        &self,
        workspace: &Path,
        connection: &ConnectionTo<Client>,
        named: &Arc<OnceLock<String>>,
        servers: &[McpServer],
        model: Option<String>,
    ) -> Result<Agent, Error> {
        let (env, notices) = (&self.options.env, &self.options.notices);
        let mut overrides = bosun_agent::config::Overrides::default();
        overrides.model = model;
        let settings =
            crate::mcp::settings_with(workspace, env, servers, notices, &overrides).map_err(failed)?;
        let mut builder =
            Agent::builder(workspace).env(env.clone()).notices(notices.clone()).settings(settings);
        let files = *self.editor_files.lock().unwrap_or_else(PoisonError::into_inner);
        if files.reads || files.writes {
            builder =
                builder.file_access(Arc::new(EditorFiles::new(files, connection.clone(), named.clone())));
        }
        // The terminal runs bosun's own binary, which must be this one.
        if self.editor_terminals.load(Ordering::Relaxed)
            && let Ok(program) = std::env::current_exe()
        {
            let runner = EditorTerminal::new(connection.clone(), named.clone(), program);
            builder = builder.shell_runner(Arc::new(runner));
        }
        builder.build().await.map_err(|e| failed(format!("{e:#}")))
    }

    fn host(&self, agent: Agent, session: Session, opened: Opened) -> Arc<Hosted> {
        let Opened { id, named, servers, workspace } = opened;
        let user_mode = agent.settings().mode;
        let models = crate::model::offered(agent.settings());
        let hosted = Arc::new(Hosted {
            id: id.clone(),
            named,
            servers,
            model: Mutex::new(bosun_agent::model::model_label(agent.settings())),
            images: Mutex::new(crate::prompt::images(agent.settings())),
            models,
            agent: tokio::sync::Mutex::new(Some(agent)),
            mode: Mutex::new(session.mode()),
            session: tokio::sync::Mutex::new(Some(session)),
            workspace,
            user_mode,
            running: Mutex::new(None),
        });
        self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(id, hosted.clone());
        hosted
    }

    /// `session/new`: a session in the client's folder.
    pub(crate) async fn create(
        &self,
        request: NewSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let workspace = workspace(&request.cwd)?;
        let named = Arc::new(OnceLock::new());
        let agent = self.agent(&workspace, &connection, &named, &request.mcp_servers, None).await?;
        let approver = Arc::new(EditorApprover::new(connection, named.clone(), workspace.clone()));
        let (session, id) = match agent.new_session(approver).await {
            Ok(made) => made,
            Err(error) => {
                agent.shutdown().await;
                return Err(failed(format!("{error:#}")));
            }
        };
        let _ = named.set(id.clone());
        let mode = session.mode();
        let opened = Opened { id: id.clone(), named, servers: request.mcp_servers, workspace };
        let hosted = self.host(agent, session, opened);
        Ok(NewSessionResponse::new(id)
            .modes(modes::state(mode, hosted.user_mode))
            .config_options(hosted.config_options()))
    }

    /// `session/load`: a stored session, its history replayed as updates
    /// before the answer.
    pub(crate) async fn load(
        &self,
        request: LoadSessionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let env = &self.options.env;
        let path = bosun_store::default_path(|name| env.get(name).map(str::to_owned))
            .ok_or_else(|| failed("cannot tell where sessions are kept: set BOSUN_HOME or HOME"))?;
        let store = bosun_store::Store::open_read_only(&path).map_err(failed)?;
        let id = store.resolve_id(&request.session_id.0).map_err(invalid)?;
        let stored = store.show(&id).map_err(invalid)?.summary.workspace;
        let stored = stored.ok_or_else(|| invalid(format!("session `{id}` has no workspace")))?;
        // The session runs where it was recorded; the editor must be there too.
        let workspace = workspace(Path::new(&stored))?;
        if self::workspace(&request.cwd)? != workspace {
            return Err(invalid(format!("session `{id}` belongs to {}", workspace.display())));
        }
        let named = Arc::new(OnceLock::new());
        let _ = named.set(id.clone());
        let agent = self.agent(&workspace, &connection, &named, &request.mcp_servers, None).await?;
        let approver = Arc::new(EditorApprover::new(connection.clone(), named.clone(), workspace.clone()));
        let (session, id) = match agent.open(StoredSession::Id(id), approver).await {
            Ok(opened) => opened,
            Err(error) => {
                agent.shutdown().await;
                return Err(failed(format!("{error:#}")));
            }
        };
        UpdateSink::new(connection, id.clone(), workspace.clone())
            .replay(session.history())
            .map_err(failed)?;
        let mode = session.mode();
        let opened = Opened { id, named, servers: request.mcp_servers, workspace };
        let hosted = self.host(agent, session, opened);
        Ok(LoadSessionResponse::new()
            .modes(modes::state(mode, hosted.user_mode))
            .config_options(hosted.config_options()))
    }

    /// Marks a turn of session `id` as begun, in the order requests arrive,
    /// so a `session/cancel` sent right after the prompt finds it.
    ///
    /// # Errors
    /// When there is no such session or a turn of it runs.
    pub(crate) fn begin(&self, id: &str) -> Result<Turn, Error> {
        let hosted = self.get(id)?;
        let mut running = hosted.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.is_some() {
            return Err(invalid(format!("session `{id}` is already running a turn")));
        }
        let token = CancellationToken::new();
        *running = Some(token.clone());
        drop(running);
        Ok(Turn { hosted, token })
    }

    /// `session/prompt`: one turn; the answer's stop reason says how it
    /// ended (`cancelled` after `session/cancel`).
    pub(crate) async fn prompt(
        &self,
        turn: Turn,
        request: PromptRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        let id = request.session_id.0.to_string();
        let (hosted, token) = (turn.hosted.clone(), turn.token.clone());
        let images = *hosted.images.lock().unwrap_or_else(PoisonError::into_inner);
        let parts = crate::prompt::parts(&request.prompt, images).map_err(invalid)?;
        // Held for the turn; a model change waits for no turn.
        let mut held = hosted.session.lock().await;
        let Some(session) = held.as_mut() else {
            return Err(failed(format!("session `{id}` could not be reopened")));
        };
        let mode = *hosted.mode.lock().unwrap_or_else(PoisonError::into_inner);
        if session.mode() != mode {
            session.set_mode(mode);
        }
        let mut sink = UpdateSink::new(connection, id.clone(), hosted.workspace.clone());
        let result = session.run_with(parts, TurnOptions::cancel_on(token.clone()), &mut sink).await;
        drop(turn);
        sink.close_open_calls();
        match result {
            Ok(outcome) => Ok(PromptResponse::new(match outcome.stop_reason {
                bosun_core::StopReason::Length => StopReason::MaxTokens,
                bosun_core::StopReason::Refusal => StopReason::Refusal,
                _ => StopReason::EndTurn,
            })),
            Err(_) if token.is_cancelled() => Ok(PromptResponse::new(StopReason::Cancelled)),
            Err(error) if error.is_cancelled() => Ok(PromptResponse::new(StopReason::Cancelled)),
            Err(error) => Err(failed(format!("bosun session {id}: {error}"))),
        }
    }

    /// `session/cancel`: the running turn stops (its pending approval is
    /// denied, a started tool is stopped or waited for).
    pub(crate) fn cancel(&self, id: &str) {
        if let Ok(hosted) = self.get(id)
            && let Some(token) = hosted.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        {
            token.cancel();
        }
    }

    /// `session/set_mode`: a mode no looser than the user's own.
    pub(crate) async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let hosted = self.get(&request.session_id.0)?;
        let asked = modes::parse(&request.mode_id.0)
            .ok_or_else(|| invalid(format!("no mode `{}`", request.mode_id.0)))?;
        if !modes::allowed(asked, hosted.user_mode) {
            return Err(invalid(format!(
                "mode `{asked}` is looser than the user's own for this workspace (`{}`)",
                hosted.user_mode
            )));
        }
        *hosted.mode.lock().unwrap_or_else(PoisonError::into_inner) = asked;
        // Now when no turn runs; else before the next one.
        if let Ok(mut held) = hosted.session.try_lock()
            && let Some(session) = held.as_mut()
        {
            session.set_mode(asked);
        }
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option` of the model: the session reopened on
    /// the chosen one (offered ones only; not while a turn runs).
    pub(crate) async fn set_option(
        &self,
        request: SetSessionConfigOptionRequest,
        connection: ConnectionTo<Client>,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let hosted = self.get(&request.session_id.0)?;
        if &*request.config_id.0 != crate::model::MODEL_OPTION {
            return Err(invalid(format!("no option `{}`", request.config_id.0)));
        }
        let chosen = request.value.as_value_id().map(|v| v.0.to_string()).unwrap_or_default();
        if !hosted.models.contains(&chosen) {
            return Err(invalid(format!("model `{chosen}` is not one offered")));
        }
        let Ok(mut held) = hosted.session.try_lock() else {
            return Err(invalid("the model cannot change while a turn runs"));
        };
        let current = hosted.model.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if chosen != current {
            let ws = &hosted.workspace;
            let agent =
                self.agent(ws, &connection, &hosted.named, &hosted.servers, Some(chosen.clone())).await?;
            let approver = Arc::new(EditorApprover::new(connection, hosted.named.clone(), ws.clone()));
            // The stored session is held by the open one: let it go first.
            drop(held.take());
            let reopened = match agent.open(StoredSession::Id(hosted.id.clone()), approver.clone()).await {
                Ok((reopened, _)) => reopened,
                Err(error) => {
                    agent.shutdown().await;
                    // Back on the model it ran on, if that still opens.
                    if let Some(old) = hosted.agent.lock().await.as_ref()
                        && let Ok((again, _)) = old.open(StoredSession::Id(hosted.id.clone()), approver).await
                    {
                        *held = Some(again);
                    }
                    return Err(failed(format!("{error:#}")));
                }
            };
            *held = Some(reopened);
            if let Some(old) = hosted.agent.lock().await.replace(agent) {
                old.shutdown().await;
            }
            let settings = hosted
                .agent
                .lock()
                .await
                .as_ref()
                .map(|a| crate::prompt::images(a.settings()))
                .unwrap_or_default();
            *hosted.images.lock().unwrap_or_else(PoisonError::into_inner) = settings;
            *hosted.model.lock().unwrap_or_else(PoisonError::into_inner) = chosen;
        }
        Ok(SetSessionConfigOptionResponse::new(hosted.config_options()))
    }

    /// Every session's turn cancelled and its agent's servers stopped.
    pub(crate) async fn shutdown(&self) {
        let held: Vec<_> =
            self.held.lock().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, h)| h).collect();
        for hosted in held {
            if let Some(token) = hosted.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                token.cancel();
            }
            if let Some(agent) = hosted.agent.lock().await.take() {
                agent.shutdown().await;
            }
        }
    }
}

/// A begun turn: its cancellation, cleared from the session when it ends
/// (however it ends).
pub(crate) struct Turn {
    hosted: Arc<Hosted>,
    token: CancellationToken,
}

impl Drop for Turn {
    fn drop(&mut self) {
        *self.hosted.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// What a session was opened with, kept to reopen it.
struct Opened {
    id: String,
    named: Arc<OnceLock<String>>,
    servers: Vec<McpServer>,
    workspace: PathBuf,
}

impl Hosted {
    fn config_options(&self) -> Vec<agent_client_protocol::v1::schema::SessionConfigOption> {
        let current = self.model.lock().unwrap_or_else(PoisonError::into_inner).clone();
        crate::model::options(&current, &self.models)
    }
}

/// The client's folder, which must be absolute; canonical.
fn workspace(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!("the folder `{}` is not an absolute path", cwd.display())));
    }
    cwd.canonicalize().map_err(|e| invalid(format!("the folder `{}`: {e}", cwd.display())))
}
