//! Sub-agents: `delegate_tasks` for hosted models, its
//! children kept as sessions in the sessions database, each linked to the
//! parent session and the call that started it (docs/agents.md).
//!
//! A child gets its own journal (so a crash leaves it resumable by itself,
//! and the parent's call is reported interrupted, never re-run), its own
//! artifacts (which read its ancestors' by id), the configured command
//! hooks under its own session id, and the model its named agent asks for.

use std::sync::Arc;

use bosun_core::delegate::{
    AgentProfile, ChildSessions, ChildSlot, ChildTask, Delegation, DelegationExt, SlotFuture,
};
use bosun_core::{CallId, SessionBuilder};
use bosun_store::Store;
use bosun_tools::Workspace;
use bosun_tools::agents::{AgentDef, AgentOrigin};

use crate::config::{Env, Settings};
use crate::error::Result;
use crate::notice::Notices;

/// Whether the session offers `delegate_tasks`: `subagents` when set, else
/// on for hosted models and off for the local one (a small model's tool
/// list is kept short; its prompt is measured by the local task suite).
pub fn enabled(settings: &Settings) -> bool {
    settings.subagents.unwrap_or_else(|| !crate::config::models::uses_local_model(settings))
}

/// Claude Code's model aliases in agent files: bosun runs such an agent on
/// the session's model rather than guess which model an alias means today.
const INHERITED: [&str; 4] = ["inherit", "sonnet", "opus", "haiku"];

/// Whether a file's `model` (an agent's, a custom command's) means the
/// session's own model: `inherit`, or one of Claude Code's aliases.
pub fn means_session_model(model: &str) -> bool {
    INHERITED.contains(&model.trim())
}

/// The named agents of a run, and what the person should be told about them.
pub fn agents(workspace: &Workspace, settings: &Settings, env: &Env) -> (Vec<AgentProfile>, Vec<String>) {
    let user = crate::parts::user_folders(env, "agents");
    let found = bosun_tools::agents::discover(settings.project_docs.then_some(workspace), &user);
    let trusted = settings.workspace_trusted;
    let mut warnings = found.warnings;
    let profiles = found
        .agents
        .iter()
        .map(|agent| {
            let model = agent_model(agent, trusted, &mut warnings);
            AgentProfile::new(
                agent.name(),
                agent.description(),
                agent.tools().map(<[String]>::to_vec),
                model,
                agent.prompt(),
            )
        })
        .collect();
    (profiles, warnings)
}

/// The model an agent file asks for, when bosun will honour it: not an
/// alias, and not from an untrusted project (a project's config may not
/// pick the model either, docs/trust.md).
fn agent_model(agent: &AgentDef, trusted: bool, warnings: &mut Vec<String>) -> Option<String> {
    let model = agent.model().map(str::trim).filter(|m| !m.is_empty())?;
    if means_session_model(model) {
        return None;
    }
    if matches!(agent.origin(), AgentOrigin::Project(_)) && !trusted {
        warnings.push(format!(
            "agent `{}` ({}) asks for model `{model}`; an untrusted project does not choose models, so it runs \
             on the session's",
            agent.name(),
            agent.path().display()
        ));
        return None;
    }
    Some(model.to_owned())
}

/// Where a session's children go: the sessions database, linked to it.
#[derive(Clone)]
pub struct StoredChildren {
    store: Store,
    /// The session whose calls start these children.
    parent: String,
    settings: Arc<Settings>,
    env: Arc<Env>,
    workspace: Workspace,
    notices: Notices,
}

impl std::fmt::Debug for StoredChildren {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredChildren").field("parent", &self.parent).finish_non_exhaustive()
    }
}

impl StoredChildren {
    /// Children of the stored session `parent`.
    pub fn new(
        store: Store,
        parent: &str,
        (settings, env, workspace): (&Settings, &Env, &Workspace),
        notices: &Notices,
    ) -> Self {
        Self {
            store,
            parent: parent.to_owned(),
            settings: Arc::new(settings.clone()),
            env: Arc::new(env.clone()),
            workspace: workspace.clone(),
            notices: notices.clone(),
        }
    }

    /// The model spec a child runs on, when not the session's: a
    /// `PROVIDER/MODEL` or local form as written, or a bare model id of the
    /// session's provider.
    fn model_spec(&self, asked: &str) -> String {
        if crate::config::models::is_local_spec(asked) || asked.contains('/') {
            return asked.to_owned();
        }
        match self.settings.model.as_deref().and_then(|spec| spec.split_once('/')) {
            Some((provider, _)) => format!("{provider}/{asked}"),
            None => asked.to_owned(),
        }
    }

    async fn open_slot(&self, call_id: CallId, agent: Option<&AgentProfile>) -> Result<ChildSlot> {
        let mut settings = (*self.settings).clone();
        let mut model = None;
        if let Some(asked) = agent.and_then(|a| a.model.as_deref()) {
            settings.model = Some(self.model_spec(asked));
            let (resolved, window) =
                crate::model::model(&settings, &self.env, &self.workspace, &self.notices).await?;
            model = Some((resolved, window));
        }
        let journal = self
            .store
            .new_session()
            .with_model(crate::model::model_label(&settings))
            .with_parent(&self.parent, call_id.to_string());
        let id = journal.session_id().to_owned();
        let mut slot = ChildSlot::new(id.clone());
        slot.journal = Some(Box::new(journal));
        if !crate::config::models::uses_local_model(&settings) {
            slot.artifacts = Some(Arc::new(self.store.artifacts(&id)));
        }
        slot.hooks = crate::parts::command_hooks(&settings, &self.env, &self.workspace, &id);
        if let Some((resolved, window)) = model {
            slot.model = Some(resolved);
            slot.context_window = window;
        }
        slot.children = Some(Arc::new(Self { parent: id, ..self.clone() }));
        Ok(slot)
    }
}

impl ChildSessions for StoredChildren {
    fn open<'a>(
        &'a self,
        call_id: CallId,
        _: usize,
        _: &'a ChildTask,
        agent: Option<&'a AgentProfile>,
    ) -> SlotFuture<'a> {
        Box::pin(async move { self.open_slot(call_id, agent).await.map_err(|error| format!("{error:#}")) })
    }
}

/// Adds delegation to the builder of the top-level stored session
/// `session`, when it is enabled; warnings about the agent files go to
/// `notices`.
pub fn with_delegation(
    builder: SessionBuilder,
    store: &Store,
    session: &str,
    parts: (&Settings, &Env, &Workspace),
    notices: &Notices,
) -> SessionBuilder {
    if !enabled(parts.0) {
        return builder;
    }
    let (delegation, warnings) = delegation(store, session, 0, parts, notices);
    for warning in warnings {
        notices.warn(warning);
    }
    builder.delegation(delegation)
}

/// Delegation for stored session `session` at `depth`: the named agents,
/// children kept in `store`, the configured cap; and the agent files'
/// warnings.
fn delegation(
    store: &Store,
    session: &str,
    depth: u32,
    parts: (&Settings, &Env, &Workspace),
    notices: &Notices,
) -> (Delegation, Vec<String>) {
    let (settings, env, workspace) = parts;
    let (agents, warnings) = agents(workspace, settings, env);
    let children = StoredChildren::new(store.clone(), session, parts, notices);
    let mut delegation = Delegation::new(Arc::new(children)).agents(agents).at_depth(depth);
    if let Some(n) = settings.max_subagents {
        delegation = delegation.max_children(n as usize);
    }
    (delegation, warnings)
}

/// The builder for a sub-agent's session resumed by itself: the configured
/// tools narrowed to those its authority was recorded with, `find_tools`
/// (finding nothing: every tool is shown) and `delegate_tasks` at its depth
/// when it had them, and its artifacts. Anything else differing (a tool
/// gone or changed, agents edited) fails the resume closed (invariant 7).
pub fn resumed_child(
    store: &Store,
    id: &str,
    (model, window): (Arc<dyn bosun_core::Model>, Option<u64>),
    tools: Vec<Arc<dyn bosun_core::Tool>>,
    source: Option<Arc<dyn bosun_core::ToolSource>>,
    (settings, env, workspace): (&Settings, &Env, &Workspace),
    notices: &Notices,
) -> Result<SessionBuilder> {
    use bosun_core::artifacts::ReadArtifact;
    use bosun_core::delegate::{DELEGATE_TASKS, FIND_TOOLS, deferred_tools};
    let authority = store.authority(id)?;
    let names: std::collections::BTreeSet<&str> =
        authority.tools.iter().map(|t| t.definition.name.as_str()).collect();
    let own = [DELEGATE_TASKS, FIND_TOOLS, ReadArtifact::NAME];
    let tools: Vec<_> = tools
        .into_iter()
        .filter(|t| {
            let name = t.definition().name.as_str();
            names.contains(name) && !own.contains(&name)
        })
        .collect();
    let mut narrowed = settings.clone();
    narrowed.disabled_tools.retain(|name| names.contains(name.as_str()));
    let mut builder = crate::parts::builder(model, window, workspace, tools, source, &narrowed)?;
    if names.contains(FIND_TOOLS) {
        builder = builder.tools([deferred_tools(Vec::new()).0]);
    }
    if names.contains(ReadArtifact::NAME) {
        builder = builder.artifacts(Arc::new(store.artifacts(id)));
    }
    if names.contains(DELEGATE_TASKS) {
        let (delegation, _) = delegation(store, id, depth(store, id), (settings, env, workspace), notices);
        builder = builder.delegation(delegation);
    }
    Ok(builder)
}

/// How many parents a stored session has (bounded: links are data).
fn depth(store: &Store, id: &str) -> u32 {
    let mut depth = 0;
    let mut at = id.to_owned();
    while depth < 16 {
        let Some(parent) = store.show(&at).ok().and_then(|d| d.summary.parent) else { break };
        depth += 1;
        at = parent.session;
    }
    depth
}
