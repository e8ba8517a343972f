//! [`SessionBuilder`]: tools, prompt or resumed history, options, permissions,
//! limits and journal, resolved into a [`Session`] along one path that
//! [`SessionBuilder::authority_snapshot`] shares.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::authority::{AUTHORITY_VERSION, AuthoritySnapshot, WorkspaceIdentity};
use crate::error::BuildError;
use crate::history::{call_ids, validate_history};
use crate::inbox::{Pending, Slot};
use crate::journal::{Journal, JournalRecord};
use crate::limits::{Limits, Pricing};
use crate::message::{CallId, Message};
use crate::model::{GenerationOptions, Model, Support, Thinking, ToolChoice};
use crate::permission::{ApprovalHandler, DenyAll, Mode, PermissionRule};
use crate::replay::{Ledger, replay};
use crate::session::context::ContextBudget;
use crate::session::durable::Durable;
use crate::session::hooks::Hooks;
use crate::session::ids::CallIdRegistry;
use crate::session::policy::Policy;
use crate::session::tools::{ResolvedTool, ToolSet, ToolTable};
use crate::session::{OpeningCalls, Persistence, Session, SessionScope, ToolExecution};
use crate::tool::Tool;
use crate::tool_source::ToolSource;

/// The fraction of the context window at which compaction starts.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;

/// Builds a [`Session`].
pub struct SessionBuilder {
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
    disabled: BTreeSet<String>,
    system: Option<String>,
    history: Option<Vec<Message>>,
    options: GenerationOptions,
    first_round: Option<ToolChoice>,
    persistence: Persistence,
    opening: Option<OpeningCalls>,
    mode: Mode,
    rules: Vec<PermissionRule>,
    approver: Arc<dyn ApprovalHandler>,
    limits: Limits,
    execution: ToolExecution,
    workspace: Option<WorkspaceIdentity>,
    clock: bool,
    journal: Option<Box<dyn Journal>>,
    source: Option<Arc<dyn ToolSource>>,
    pricing: Option<Arc<dyn Pricing>>,
    artifacts: Option<Arc<dyn crate::artifacts::Artifacts>>,
    context_window: Option<u64>,
    compact_at: f64,
    hooks: crate::hooks::HookSet,
    child: bool,
    /// Told the session's scope once it is built or resumed.
    on_build: Vec<OnBuild>,
}

/// What [`SessionBuilder::on_build`] keeps until the session exists.
type OnBuild = Box<dyn FnOnce(&SessionScope) + Send>;

impl fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionBuilder")
            .field("tools", &self.tools.iter().map(|t| t.definition().name.clone()).collect::<Vec<_>>())
            .field("disabled", &self.disabled)
            .field("mode", &self.mode)
            .field("limits", &self.limits)
            .field("execution", &self.execution)
            .field("journal", &self.journal.is_some())
            .field("source", &self.source.is_some())
            .finish_non_exhaustive()
    }
}

/// What one resolution produces; `build` and `authority_snapshot` share it.
struct Resolved {
    tools: ToolSet,
    active: BTreeSet<String>,
    snapshot: AuthoritySnapshot,
}

impl SessionBuilder {
    pub(crate) fn new(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            tools: Vec::new(),
            disabled: BTreeSet::new(),
            system: None,
            history: None,
            options: GenerationOptions::default(),
            first_round: None,
            persistence: Persistence::off(),
            opening: None,
            mode: Mode::default(),
            rules: Vec::new(),
            approver: Arc::new(DenyAll),
            limits: Limits::default(),
            execution: ToolExecution::default(),
            workspace: None,
            clock: false,
            journal: None,
            source: None,
            pricing: None,
            artifacts: None,
            context_window: None,
            compact_at: DEFAULT_COMPACT_AT,
            hooks: crate::hooks::HookSet::default(),
            child: false,
            on_build: Vec::new(),
        }
    }

    /// Adds a hook; hooks are asked in the order they were added
    /// ([`SessionHooks`](crate::hooks::SessionHooks)).
    pub fn hook(mut self, hook: Arc<dyn crate::hooks::SessionHooks>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Marks the session as a delegated child: its hooks are asked at
    /// `SubagentStop` where a top-level session's are asked at `Stop`.
    pub fn child(mut self, child: bool) -> Self {
        self.child = child;
        self
    }

    /// Tells `told` what the session runs under ([`SessionScope`]) once it
    /// is built or resumed: how a tool given to this builder learns the
    /// session it serves before its first call (delegation starts its
    /// children from it). Not called by [`SessionBuilder::authority_snapshot`].
    pub fn on_build(mut self, told: impl FnOnce(&SessionScope) + Send + 'static) -> Self {
        self.on_build.push(Box::new(told));
        self
    }

    /// Sets every limit at once (a child inherits its parent's).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// [`SessionBuilder::journal`] for a journal already boxed.
    pub fn boxed_journal(mut self, journal: Box<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Adds a tool to the authority ceiling.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds shared tools to the authority ceiling.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Asks `source` between model rounds for tools withdrawn, back or new
    /// (see [`ToolSource`]). The tools it has now are given with
    /// [`SessionBuilder::tools`] as usual.
    pub fn tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.source = Some(source);
        self
    }

    /// Starts the session with `name` disabled (it stays in the ceiling).
    pub fn disable(mut self, name: impl Into<String>) -> Self {
        self.disabled.insert(name.into());
        self
    }

    /// The system prompt of a new session.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Continues from earlier messages (a system message may come first).
    pub fn history(mut self, messages: Vec<Message>) -> Self {
        self.history = Some(messages);
        self
    }

    /// Session-wide generation options; a turn may layer its own over them.
    pub fn options(mut self, options: GenerationOptions) -> Self {
        self.options = options;
        self
    }

    /// The tool choice of each turn's first model round when the turn's
    /// options set none and tools are offered. [`ToolChoice::Required`] makes
    /// a small model look before it answers: a question about the workspace
    /// otherwise gets an invented answer. Later rounds are left to the model.
    pub fn first_round_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.first_round = Some(choice);
        self
    }

    /// How hard a turn holds the model to its task (default
    /// [`Persistence::off`]): after a failed call the next rounds must be
    /// calls, and a turn whose prompt asks for a change is pushed to make it
    /// (see `session/persist.rs`). For small local models.
    pub fn persistence(mut self, rules: Persistence) -> Self {
        self.persistence = rules;
        self
    }

    /// Calls the session makes itself before the first round of a turn the
    /// person started, chosen from the prompt (reading the files it names,
    /// for a small model); see `session/opening.rs`.
    pub fn opening_calls(mut self, calls: OpeningCalls) -> Self {
        self.opening = Some(calls);
        self
    }

    /// The permission mode (default `propose`).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a permission rule.
    pub fn rule(mut self, rule: PermissionRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds permission rules.
    pub fn rules(mut self, rules: impl IntoIterator<Item = PermissionRule>) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Who answers approval requests (default: deny everything).
    pub fn approver(mut self, approver: impl ApprovalHandler + 'static) -> Self {
        self.approver = Arc::new(approver);
        self
    }

    /// A shared approver.
    pub fn shared_approver(mut self, approver: Arc<dyn ApprovalHandler>) -> Self {
        self.approver = approver;
        self
    }

    /// Model rounds per turn, clamped by [`Limits::HARD_MAX_ROUNDS`].
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.limits = self.limits.with_max_rounds(rounds);
        self
    }

    /// Tool timeout, clamped by [`Limits::HARD_MAX_TOOL_TIMEOUT`].
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.limits = self.limits.with_tool_timeout(timeout);
        self
    }

    /// Tool output ceiling, clamped by [`Limits::HARD_MAX_TOOL_OUTPUT`].
    pub fn tool_output_bytes(mut self, bytes: usize) -> Self {
        self.limits = self.limits.with_tool_output_bytes(bytes);
        self
    }

    /// Tokens a turn may spend ([`Limits::max_turn_tokens`]).
    pub fn max_turn_tokens(mut self, tokens: u64) -> Self {
        self.limits = self.limits.with_max_turn_tokens(tokens);
        self
    }

    /// How long a turn may take ([`Limits::max_turn_ms`]).
    pub fn max_turn_time(mut self, time: Duration) -> Self {
        self.limits = self.limits.with_max_turn_time(time);
        self
    }

    /// Keeps tool outputs longer than the output bound whole in `store`:
    /// the model is shown the head and tail with the artifact's id, and the
    /// `read_artifact` tool (added to the ceiling) pages through it.
    pub fn artifacts(mut self, store: Arc<dyn crate::artifacts::Artifacts>) -> Self {
        self.tools.push(Arc::new(crate::artifacts::ReadArtifact::new(Arc::clone(&store))));
        self.artifacts = Some(store);
        self
    }

    /// Prices the session's model calls: `model_round_end` and `turn_end`
    /// events, the turn's outcome and the journal's `turn_ended` then carry
    /// costs. Without it they carry tokens only.
    pub fn pricing(mut self, pricing: Arc<dyn Pricing>) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// What a turn may cost, in millionths of a dollar, priced by `pricing`
    /// ([`Limits::max_turn_cost_micros`]).
    pub fn max_turn_cost(mut self, micros: u64, pricing: Arc<dyn Pricing>) -> Self {
        self.limits = self.limits.with_max_turn_cost_micros(micros);
        self.pricing = Some(pricing);
        self
    }

    /// The model's context window, in tokens: when a request's estimate
    /// passes [`SessionBuilder::compact_at`] of it, what is sent is
    /// compacted. Without one, compaction happens only when the provider
    /// says a request overflowed.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens.max(1));
        self
    }

    /// The fraction of the window at which compaction starts, clamped to
    /// `0.1..=1.0`; default [`DEFAULT_COMPACT_AT`].
    pub fn compact_at(mut self, fraction: f64) -> Self {
        self.compact_at = if fraction.is_nan() { DEFAULT_COMPACT_AT } else { fraction.clamp(0.1, 1.0) };
        self
    }

    /// Runs the calls of one response one after another instead of in parallel.
    pub fn sequential_tools(mut self) -> Self {
        self.execution = ToolExecution::Sequential;
        self
    }

    /// The workspace the tools act on, for the authority snapshot.
    pub fn workspace(mut self, identity: WorkspaceIdentity) -> Self {
        self.workspace = Some(identity);
        self
    }

    /// Whether the session may see the clock (off unless set; invariant 19).
    /// Recorded in the authority snapshot: resuming with it changed fails.
    /// The core reads no clock itself; this records what the caller let the
    /// model and tools see.
    pub fn clock(mut self, on: bool) -> Self {
        self.clock = on;
        self
    }

    /// Where the session records itself.
    pub fn journal(mut self, journal: impl Journal + 'static) -> Self {
        self.journal = Some(Box::new(journal));
        self
    }

    /// The authority snapshot `build` would record, without building.
    pub fn authority_snapshot(&self) -> Result<AuthoritySnapshot, BuildError> {
        self.resolve().map(|r| r.snapshot)
    }

    fn resolve(&self) -> Result<Resolved, BuildError> {
        let mut tools = BTreeMap::new();
        for tool in &self.tools {
            let resolved = ResolvedTool::resolve(tool)?;
            let name = resolved.definition.name.clone();
            if tools.insert(name.clone(), Arc::new(resolved)).is_some() {
                return Err(BuildError::DuplicateTool(name));
            }
        }
        if let Some(unknown) = self.disabled.iter().find(|name| !tools.contains_key(*name)) {
            return Err(BuildError::UnknownTool(unknown.clone()));
        }
        let capabilities = self.model.capabilities();
        if !tools.is_empty() && capabilities.tools == Support::No {
            return Err(BuildError::Capability("tool calls"));
        }
        if matches!(self.options.thinking, Some(Thinking::On { .. } | Thinking::Off))
            && capabilities.thinking_toggle == Support::No
        {
            return Err(BuildError::Capability("turning thinking on or off"));
        }
        let active: BTreeSet<String> =
            tools.keys().filter(|n| !self.disabled.contains(*n)).cloned().collect();
        let snapshot = AuthoritySnapshot {
            version: AUTHORITY_VERSION,
            workspace: self.workspace.clone(),
            tools: tools.values().map(|t| t.authority()).collect(),
            enabled: active.iter().cloned().collect(),
            limits: self.limits,
            clock: self.clock,
        };
        Ok(Resolved { tools: Arc::new(tools), active, snapshot })
    }

    /// Builds a new session (or one continuing from [`SessionBuilder::history`]).
    /// With a journal, records the session's start in it.
    pub async fn build(mut self) -> Result<Session, BuildError> {
        let resolved = self.resolve()?;
        let (system, history) = match self.history.take() {
            Some(_) if self.system.is_some() => return Err(BuildError::PromptAndHistory),
            Some(mut messages) => {
                validate_history(&messages)?;
                let system = match messages.first() {
                    Some(Message::System { text }) => Some(text.clone()),
                    _ => None,
                };
                if system.is_some() {
                    messages.remove(0);
                }
                (system, messages)
            }
            None => (self.system.take(), Vec::new()),
        };
        if let Some(journal) = self.journal.as_mut() {
            let record = JournalRecord::SessionStarted {
                authority: resolved.snapshot.clone(),
                system: system.clone(),
            };
            journal.append(&record).await?;
        }
        Ok(self.into_session(
            resolved,
            system,
            history,
            Ledger::default(),
            &BTreeMap::new(),
            Pending::default(),
        ))
    }

    /// Resumes the session recorded in `journal`: replays it strictly, checks
    /// the authority is the same, closes a turn the last process left open
    /// (journaling how), and continues writing to the same journal.
    pub async fn resume(mut self, mut journal: impl Journal + 'static) -> Result<Session, BuildError> {
        if self.system.is_some() || self.history.is_some() {
            return Err(BuildError::PromptAndHistory);
        }
        let resolved = self.resolve()?;
        let records = journal.load().await?;
        let replayed = replay(&records)?;
        let change =
            (replayed.authority != resolved.snapshot).then(|| replayed.authority.compare(&resolved.snapshot));
        let widened = change.as_ref().filter(|c| c.widens());
        if let Some(change) = widened
            && !self.approver.accept_authority(change).await
        {
            return Err(BuildError::AuthorityMismatch { change: change.clone() });
        }
        for record in &replayed.recovery {
            journal.append(record).await?;
        }
        if let Some(change) = widened {
            // Replay stays strict: the wider snapshot the person accepted is
            // a record, and the next resume compares with it. A narrowing is
            // not: what was accepted stays the ceiling, so a server that
            // failed to start once asks nothing when it is back.
            let resumed = change.to_string().lines().map(str::to_owned).collect();
            let record = JournalRecord::AuthorityChanged { authority: resolved.snapshot.clone(), resumed };
            journal.append(&record).await?;
        }
        self.journal = Some(Box::new(journal));
        let ledger = Ledger::closed(replayed.turns, replayed.interrupted_prompt);
        let compaction = replayed.compaction;
        let mut session = self.into_session(
            resolved,
            replayed.system,
            replayed.messages,
            ledger,
            &replayed.provider_call_ids,
            replayed.pending,
        );
        session.context.compacted(compaction);
        session.seed_estimator();
        session.resumed_change = change;
        Ok(session)
    }

    /// What the session will run under, with its (resolved) system prompt.
    fn scope(&self, system: Option<String>) -> SessionScope {
        let tools = self.tools.iter().filter(|t| !self.disabled.contains(&t.definition().name)).cloned();
        SessionScope {
            model: Arc::clone(&self.model),
            tools: tools.collect(),
            mode: self.mode,
            rules: self.rules.clone(),
            approver: Arc::clone(&self.approver),
            limits: self.limits,
            pricing: self.pricing.clone(),
            system,
            context_window: self.context_window,
            compact_at: self.compact_at,
            artifacts: self.artifacts.clone(),
            workspace: self.workspace.clone(),
            clock: self.clock,
        }
    }

    fn into_session(
        mut self,
        resolved: Resolved,
        system: Option<String>,
        history: Vec<Message>,
        ledger: Ledger,
        provider_call_ids: &BTreeMap<CallId, String>,
        pending: Pending,
    ) -> Session {
        let call_ids = CallIdRegistry::resumed(call_ids(&history), provider_call_ids);
        let told = std::mem::take(&mut self.on_build);
        if !told.is_empty() {
            let scope = self.scope(system.clone());
            for told in told {
                told(&scope);
            }
        }
        Session {
            capabilities: self.model.capabilities(),
            model: self.model,
            tools: ToolTable::new(resolved.tools, resolved.active, BTreeMap::new()),
            source: self.source,
            pricing: self.pricing,
            artifacts: self.artifacts,
            context: ContextBudget::new(self.context_window, self.compact_at),
            hooks: Hooks::new(self.hooks, self.child),
            system,
            history,
            options: self.options,
            first_round: self.first_round,
            persistence: self.persistence,
            opening: self.opening,
            policy: Policy::new(self.mode, self.rules, self.approver),
            limits: self.limits,
            execution: self.execution,
            durable: Durable::new(Slot::new(self.journal, pending), ledger),
            authority: resolved.snapshot,
            resumed_change: None,
            call_ids,
        }
    }
}
