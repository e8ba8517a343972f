//! The assembled agent: configuration resolved for a workspace, its tools
//! (the workspace's, an embedder's own, the configured MCP servers'), and
//! sessions built on them, new or stored, with the store, hooks, skills,
//! sub-agents, artifacts and the system prompt. Every front end builds its
//! sessions here, so each gets the same agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::{ApprovalHandler, Model, Session, SessionBuilder, Tool};
use bosun_mcp::McpServers;
use bosun_store_pg::PgStore;
use bosun_tools::{FileAccess, ShellRunner, Workspace};

use crate::children;
use crate::config::{self, Env, Overrides, Settings};
use crate::error::{Context, Result};
use crate::mcp::ServerRequests;
use crate::notice::Notices;

/// How an [`Agent`] is assembled: the workspace, the environment and
/// configuration it reads, and what a program adds of its own.
#[must_use]
pub struct AgentBuilder {
    dir: PathBuf,
    env: Env,
    profile: Option<String>,
    overrides: Overrides,
    settings: Option<Settings>,
    tools: Vec<Arc<dyn Tool>>,
    through: crate::parts::Through,
    model: Option<(Arc<dyn Model>, Option<u64>)>,
    requests: ServerRequests,
    notices: Notices,
    shared: Option<PgStore>,
}

impl AgentBuilder {
    /// The environment configuration is read with (default: empty, so
    /// nothing is read from the process's own unless given).
    pub fn env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    /// The configuration profile to apply.
    pub fn profile(mut self, name: impl Into<String>) -> Self {
        self.profile = Some(name.into());
        self
    }

    /// Values set by the program (a front end's flags), above every file.
    pub fn overrides(mut self, overrides: Overrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// Settings the program already resolved (then `profile` and
    /// `overrides` are not applied again).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// A tool of the program's own, offered beside the workspace's; one
    /// with a workspace tool's name replaces it (an editor's `write_file`).
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Where the workspace's file tools read and write files' text besides
    /// the disk (an editor's buffers; see `bosun_tools::FileAccess`), their
    /// checks unchanged.
    pub fn file_access(mut self, access: Arc<dyn FileAccess>) -> Self {
        self.through.files = Some(access);
        self
    }

    /// Where the `shell` tool's sandboxed calls run (an editor's terminal;
    /// see `bosun_tools::ShellRunner`): still inside the sandbox, under
    /// the same rules.
    pub fn shell_runner(mut self, runner: Arc<dyn ShellRunner>) -> Self {
        self.through.shell = Some(runner);
        self
    }

    /// A model of the program's own instead of the configured one, with its
    /// context window in tokens when known.
    pub fn model(mut self, model: Arc<dyn Model>, context_window: Option<u64>) -> Self {
        self.model = Some((model, context_window));
        self
    }

    /// What answers MCP servers' questions and sampling requests (default:
    /// declined and refused).
    pub fn server_requests(mut self, requests: ServerRequests) -> Self {
        self.requests = requests;
        self
    }

    /// Where notices go (default: dropped).
    pub fn notices(mut self, notices: Notices) -> Self {
        self.notices = notices;
        self
    }

    /// Keep sessions' journals in `store`, a Postgres database several
    /// hosts share (`bosun serve` with `store_url`), instead of the local
    /// file ([`crate::shared`] says what stays local).
    pub fn shared_store(mut self, store: PgStore) -> Self {
        self.shared = Some(store);
        self
    }

    /// Resolves the configuration, opens the workspace and starts the
    /// configured MCP servers.
    ///
    /// # Errors
    /// When the configuration is invalid, the workspace is `/` or the home
    /// folder and the settings do not allow it (`allow_any_workspace`), the
    /// workspace cannot be opened or its sandbox cannot be built. A server
    /// that fails to start is a notice, not an error; so is a workspace
    /// outside version control ([`crate::Notice::Advice`]).
    pub async fn build(self) -> Result<Agent> {
        let settings = match self.settings {
            Some(settings) => settings,
            None => config::resolve(&self.dir, &self.env, self.profile.as_deref(), &self.overrides)?,
        };
        let advice = crate::workspace_guard::check(&self.dir, &self.env, settings.allow_any_workspace)?;
        if let Some(advice) = advice {
            self.notices.tell(crate::Notice::Advice(advice));
        }
        let (workspace, mut tools) =
            crate::parts::tools_with(&self.dir, &self.env, &settings, &self.notices, self.through)?;
        tools.retain(|t| !self.tools.iter().any(|own| own.definition().name == t.definition().name));
        tools.extend(self.tools);
        let root = workspace.root_path().to_path_buf();
        let mcp =
            crate::mcp::start_into(&settings, &self.env, &root, &mut tools, &self.requests, &self.notices)
                .await;
        Ok(Agent {
            settings,
            env: self.env,
            workspace,
            tools,
            mcp,
            model: self.model,
            requests: self.requests,
            notices: self.notices,
            shared: self.shared,
        })
    }
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("dir", &self.dir)
            .field("profile", &self.profile)
            .field("tools", &tool_names(&self.tools))
            .finish_non_exhaustive()
    }
}

/// Which stored session to open.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoredSession {
    /// The session with this id.
    Id(String),
    /// The workspace's most recent session.
    Latest,
}

/// A workspace with its configuration and tools, ready to run sessions.
/// [`Agent::shutdown`] stops the MCP servers it started.
pub struct Agent {
    settings: Settings,
    env: Env,
    workspace: Workspace,
    tools: Vec<Arc<dyn Tool>>,
    mcp: Option<Arc<McpServers>>,
    model: Option<(Arc<dyn Model>, Option<u64>)>,
    requests: ServerRequests,
    notices: Notices,
    shared: Option<PgStore>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("root", &self.root())
            .field("model", &crate::model::model_label(&self.settings))
            .field("tools", &tool_names(&self.tools))
            .finish_non_exhaustive()
    }
}

fn tool_names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|tool| tool.definition().name.clone()).collect()
}

impl Agent {
    /// An agent for the workspace at `dir`.
    pub fn builder(dir: impl Into<PathBuf>) -> AgentBuilder {
        AgentBuilder {
            dir: dir.into(),
            env: Env::default(),
            profile: None,
            overrides: Overrides::default(),
            settings: None,
            tools: Vec::new(),
            through: Default::default(),
            model: None,
            requests: ServerRequests::refused(),
            notices: Notices::ignored(),
            shared: None,
        }
    }

    /// The agent the user's configuration describes for `dir`, read with `env`.
    ///
    /// # Errors
    /// As [`AgentBuilder::build`].
    pub async fn from_config(dir: impl Into<PathBuf>, env: Env) -> Result<Self> {
        Self::builder(dir).env(env).build().await
    }

    /// The resolved configuration.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The environment configuration was read with.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The workspace's root directory.
    pub fn root(&self) -> &Path {
        self.workspace.root_path()
    }

    /// Every tool sessions are offered.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tool named `name`, when the workspace, the program or a server offers it.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.definition().name == name).cloned()
    }

    /// The MCP servers that started, if any.
    pub fn mcp_servers(&self) -> Option<&Arc<McpServers>> {
        self.mcp.as_ref()
    }

    /// A new stored session under this agent's settings, asking `approver`.
    ///
    /// # Errors
    /// When the model cannot be loaded, the store cannot be opened or the
    /// session cannot be built (a disabled tool that does not exist, a cost
    /// limit on a model with no prices).
    pub async fn new_session(&self, approver: Arc<dyn ApprovalHandler>) -> Result<(Session, String)> {
        self.new_session_as(&self.settings, approver).await
    }

    /// [`Agent::new_session`] under other `settings` (a front end that
    /// changed the model or mode since the agent was built).
    ///
    /// # Errors
    /// As [`Agent::new_session`].
    pub async fn new_session_as(
        &self,
        settings: &Settings,
        approver: Arc<dyn ApprovalHandler>,
    ) -> Result<(Session, String)> {
        let (model, window) = self.model(settings).await?;
        let store = crate::parts::store(settings, &self.env)?;
        let journal = crate::shared::new_journal(&store, self.shared.as_ref(), settings).await?;
        let id = journal.session_id().to_owned();
        let (system, warning) = crate::parts::system_prompt(&self.workspace, settings, &self.env);
        if let Some(warning) = warning {
            self.notices.warn(warning);
        }
        let builder = self.top_level(settings, &store, &id, (model, window))?;
        let builder = crate::parts::with_hooks(builder, settings, &self.env, &self.workspace, &id)
            .system_prompt(system)
            .shared_approver(approver);
        let session = journal.build(builder).await?;
        Ok((session, id))
    }

    /// A stored session resumed on the model it ran on (and the base URL
    /// the user gave it), unless this agent's settings name another with
    /// `--model` ([`crate::stored::settings_for`]); its journal records the
    /// model it resumes on. A sub-agent's session resumes with the authority
    /// it was recorded with.
    ///
    /// # Errors
    /// When there is no such session (or the id is an ambiguous or too
    /// short prefix), or today's authority is wider than the one it was
    /// recorded with and `approver` did not accept the difference
    /// ([`bosun_core::ApprovalHandler::accept_authority`]; invariant 7: a
    /// narrower one resumes with a notice), or as [`Agent::new_session`].
    pub async fn open(
        &self,
        which: StoredSession,
        approver: Arc<dyn ApprovalHandler>,
    ) -> Result<(Session, String)> {
        self.open_as(&self.settings, which, approver).await
    }

    /// The id of the stored session `which` names (a whole id or a unique
    /// prefix of at least [`bosun_store::MIN_ID_PREFIX`] characters, or the
    /// workspace's latest) and the settings it resumes under: `settings`
    /// with the session's recorded model and base URL unless they name
    /// their own with `--model` (`--base-url`). A front end shows these
    /// settings as the session's (its model label, its prices), and builds
    /// its agent with them ([`crate::stored::resolve`] before there is one).
    ///
    /// # Errors
    /// When the store cannot be read or no session matches.
    pub fn stored_settings(&self, settings: &Settings, which: &StoredSession) -> Result<(String, Settings)> {
        crate::stored::resolve_in(&self.workspace.identity().path, &self.env, settings, which)
    }

    /// [`Agent::open`] under other `settings` (the same session resumed on
    /// another model when they name one with `--model`).
    ///
    /// # Errors
    /// As [`Agent::open`].
    pub async fn open_as(
        &self,
        settings: &Settings,
        which: StoredSession,
        approver: Arc<dyn ApprovalHandler>,
    ) -> Result<(Session, String)> {
        // One store and one read of the session: its id, the settings it
        // resumes under, and whether it is a sub-agent's.
        let store = crate::parts::store(settings, &self.env)?;
        if let Some(shared) = &self.shared {
            return self.open_shared(shared, &store, settings, which, approver).await;
        }
        let (id, summary) = crate::stored::find(&store, &self.workspace.identity().path, &which)?;
        let settings = &crate::stored::settings_for(settings, &summary);
        let (model, window) = self.model(settings).await?;
        let label = crate::model::model_label(settings);
        let journal =
            store.open_session(&id)?.with_model_at(label, crate::stored::recorded_base_url(settings));
        let journal = journal.with_effort(crate::stored::recorded_effort(settings));
        let builder = match summary.parent {
            Some(_) => {
                let parts = (settings, &self.env, &self.workspace);
                let (tools, source) = (self.tools.clone(), self.source());
                children::resumed_child(&store, &id, (model, window), tools, source, parts, &self.notices)?
            }
            None => self.top_level(settings, &store, &id, (model, window))?,
        };
        self.resume_on(builder, settings, id, approver, journal).await
    }

    /// [`Agent::open_as`] for a session in the shared store: found there,
    /// its journal's lease taken there (refused while another host holds
    /// it), its local parts (rewind, artifacts, sub-agents) in `store`.
    async fn open_shared(
        &self,
        shared: &PgStore,
        store: &bosun_store::Store,
        settings: &Settings,
        which: StoredSession,
        approver: Arc<dyn ApprovalHandler>,
    ) -> Result<(Session, String)> {
        let (id, recorded) = crate::shared::find(shared, &self.workspace.identity().path, &which).await?;
        let settings = &crate::stored::settings_for_recorded(settings, &recorded.recorded());
        let (model, window) = self.model(settings).await?;
        let journal = crate::shared::open_journal(shared, &id, settings).await?;
        let builder = self.top_level(settings, store, &id, (model, window))?;
        self.resume_on(builder, settings, id, approver, journal).await
    }

    /// Resumes stored session `id` from `journal` with `builder`'s parts
    /// and the hooks, telling how its authority changed since it was recorded.
    async fn resume_on(
        &self,
        builder: SessionBuilder,
        settings: &Settings,
        id: String,
        approver: Arc<dyn ApprovalHandler>,
        journal: impl bosun_core::Journal + 'static,
    ) -> Result<(Session, String)> {
        let builder = crate::parts::with_hooks(builder, settings, &self.env, &self.workspace, &id);
        let session = builder
            .shared_approver(approver)
            .resume(journal)
            .await
            .with_context(|| format!("cannot resume session {id}"))?;
        if let Some(change) = session.resumed_change() {
            let how = if change.widens() { "a wider authority, as accepted" } else { "a narrower authority" };
            let words: Vec<String> = change.to_string().lines().map(str::to_owned).collect();
            self.notices.info(format!("session {id} resumes under {how}: {}", words.join("; ")));
        }
        Ok((session, id))
    }

    /// Stops the MCP servers this agent started.
    pub async fn shutdown(self) {
        crate::mcp::stop(self.mcp).await;
    }

    async fn model(&self, settings: &Settings) -> Result<(Arc<dyn Model>, Option<u64>)> {
        let (model, window) = match &self.model {
            Some((model, window)) => (Arc::clone(model), *window),
            None => crate::model::model(settings, &self.env, &self.workspace, &self.notices).await?,
        };
        self.requests.sampler.model_ready(&model, settings.model.as_deref().unwrap_or("local"));
        Ok((model, window))
    }

    /// The builder of the top-level stored session `id`: the session's
    /// parts, its tools' changes to the workspace kept for rewind,
    /// delegation to children kept in `store`, and its artifacts.
    fn top_level(
        &self,
        settings: &Settings,
        store: &bosun_store::Store,
        id: &str,
        (model, window): (Arc<dyn Model>, Option<u64>),
    ) -> Result<SessionBuilder> {
        let recorded = (&self.workspace, store, id);
        let tools = crate::rewind::capturing(self.tools.clone(), recorded, &settings.rewind, &self.notices);
        let builder = crate::parts::builder(model, window, &self.workspace, tools, self.source(), settings)?;
        let parts = (settings, &self.env, &self.workspace);
        let builder = children::with_delegation(builder, store, id, parts, &self.notices);
        Ok(crate::parts::with_artifacts(builder, settings, store, id))
    }

    fn source(&self) -> Option<Arc<dyn bosun_core::ToolSource>> {
        crate::mcp::source(&self.mcp)
    }
}
