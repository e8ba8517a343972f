//! Sub-agents: the `delegate_tasks` tool hands tasks to child sessions that
//! run under the parent's authority (the seeds' delegation contract).
//!
//! - **Authority** is the parent's tool set, narrowed by a named agent's
//!   `tools` list when it has one; nothing widens it. A task's `tools` are
//!   preferences: the set the child is shown first. The child finds the rest
//!   of its authority with `find_tools` (`find.rs`).
//! - The child runs in the parent's mode under the parent's rules; its
//!   approvals go to the parent's approver, saying which child asks.
//! - At most [`MAX_CHILDREN`] run at once per parent (configurable lower),
//!   and at most [`MAX_DEPTH`] levels deep. The parent's cancellation
//!   cancels every child and the call waits for them all.
//! - Each child's tokens are reported with the call's result, so they count
//!   in the parent's `subagents` bucket and its budget; each child's events reach
//!   the parent's stream as `subagent` events.
//! - Where the child is kept (a journal, artifacts) and which hooks it gets
//!   is the embedder's ([`ChildSessions`]); a crash while a child runs leaves
//!   the parent's call interrupted (invariant 15), never re-run.

mod find;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::artifacts::{Artifacts, ReadArtifact};
use crate::event::{Event, EventSink, SinkError};
use crate::hooks::SessionHooks;
use crate::journal::Journal;
use crate::message::{CallId, Usage};
use crate::model::Model;
use crate::permission::{ApprovalFuture, ApprovalHandler, ApprovalRequest};
use crate::session::{Session, SessionBuilder, SessionScope, TurnOptions};
use crate::tool::{Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};

pub use find::{FIND_TOOLS, NOT_FOUND_YET, deferred_tools};

/// The tool's name.
pub const DELEGATE_TASKS: &str = "delegate_tasks";
/// Most tasks in one call.
pub const MAX_TASKS_PER_CALL: usize = 10;
/// Most children of one session running at once.
pub const MAX_CHILDREN: usize = 10;
/// Deepest level a child may run at (a top-level session is at 0).
pub const MAX_DEPTH: u32 = 2;
/// Longest answer of one child kept in the call's result, in bytes.
pub const CHILD_ANSWER_BYTES: usize = 16 * 1024;

/// What a child is told it is, before the parent's system prompt's rules
/// and the task (a named agent's body replaces it).
pub const CHILD_PROMPT: &str = "You are a sub-agent: a parent agent handed you one task in the same \
     workspace. Do it with your tools; if a tool you need is not offered, look for it with \
     find_tools. Then answer with what the parent needs to go on: the result, the files you touched, \
     what is still open. Be brief; the parent sees only your final answer.";

/// A named agent, from the files users keep (`.bosun/agents/NAME.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentProfile {
    /// The name tasks give.
    pub name: String,
    /// What it is for, shown to the parent model.
    pub description: String,
    /// A strict boundary on the parent's tools, when present.
    pub tools: Option<Vec<String>>,
    /// The model it asks for (the embedder resolves it), if any.
    pub model: Option<String>,
    /// Its system prompt.
    pub prompt: String,
}

impl AgentProfile {
    /// A profile.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        tools: Option<Vec<String>>,
        model: Option<String>,
        prompt: impl Into<String>,
    ) -> Self {
        Self { name: name.into(), description: description.into(), tools, model, prompt: prompt.into() }
    }
}

/// One task of a `delegate_tasks` call, as the embedder is shown it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ChildTask {
    /// What to do.
    pub task: String,
    /// A named agent, if any.
    #[serde(default)]
    pub agent: Option<String>,
    /// Tools to show first (preferences, never a grant).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// Where a child session lives, from the embedder.
#[derive(Default)]
#[non_exhaustive]
pub struct ChildSlot {
    /// The child session's id (a store's), for events and the result.
    pub id: String,
    /// Its journal, if it is kept.
    pub journal: Option<Box<dyn Journal>>,
    /// Where its long outputs go.
    pub artifacts: Option<Arc<dyn Artifacts>>,
    /// Its hooks (asked at `SubagentStop` where a parent's ask at `Stop`).
    pub hooks: Vec<Arc<dyn SessionHooks>>,
    /// The model for it, in place of the parent's (a named agent's `model`).
    pub model: Option<Arc<dyn Model>>,
    /// That model's context window (without `model`, the parent's is kept).
    pub context_window: Option<u64>,
    /// Where the child's own children are kept (a store links them to the
    /// child); the parent's [`ChildSessions`] when `None`.
    pub children: Option<Arc<dyn ChildSessions>>,
}

impl fmt::Debug for ChildSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSlot")
            .field("id", &self.id)
            .field("journal", &self.journal.is_some())
            .field("artifacts", &self.artifacts.is_some())
            .field("hooks", &self.hooks.len())
            .field("model", &self.model.is_some())
            .field("context_window", &self.context_window)
            .field("children", &self.children.is_some())
            .finish()
    }
}

impl ChildSlot {
    /// A slot with only an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into(), ..Self::default() }
    }
}

/// The future [`ChildSessions::open`] returns.
pub type SlotFuture<'a> = Pin<Box<dyn Future<Output = Result<ChildSlot, String>> + Send + 'a>>;

/// The embedder's part of delegation: where each child is kept.
pub trait ChildSessions: Send + Sync {
    /// A new child for task `index` of the parent's call `call_id`. An
    /// `Err` fails that task with the message.
    fn open<'a>(
        &'a self,
        call_id: CallId,
        index: usize,
        task: &'a ChildTask,
        agent: Option<&'a AgentProfile>,
    ) -> SlotFuture<'a>;
}

/// Children kept nowhere: in memory, with made-up ids.
#[derive(Clone, Copy, Debug, Default)]
pub struct InMemoryChildren;

impl ChildSessions for InMemoryChildren {
    fn open<'a>(
        &'a self,
        call_id: CallId,
        index: usize,
        _: &'a ChildTask,
        _: Option<&'a AgentProfile>,
    ) -> SlotFuture<'a> {
        Box::pin(async move { Ok(ChildSlot::new(format!("{call_id}/{}", index + 1))) })
    }
}

/// How a session delegates: its named agents, where children live, the cap.
#[derive(Clone)]
pub struct Delegation {
    agents: Arc<Vec<AgentProfile>>,
    children: Arc<dyn ChildSessions>,
    max_children: usize,
    depth: u32,
}

impl fmt::Debug for Delegation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delegation")
            .field("agents", &self.agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
            .field("max_children", &self.max_children)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Default for Delegation {
    fn default() -> Self {
        Self::new(Arc::new(InMemoryChildren))
    }
}

impl Delegation {
    /// Delegation with children kept by `children`, no named agents.
    pub fn new(children: Arc<dyn ChildSessions>) -> Self {
        Self { agents: Arc::new(Vec::new()), children, max_children: MAX_CHILDREN, depth: 0 }
    }

    /// The named agents tasks may name.
    pub fn agents(mut self, agents: Vec<AgentProfile>) -> Self {
        self.agents = Arc::new(agents);
        self
    }

    /// At most `n` children at once (1 to [`MAX_CHILDREN`]).
    pub fn max_children(mut self, n: usize) -> Self {
        self.max_children = n.clamp(1, MAX_CHILDREN);
        self
    }

    /// Delegation for a session that is itself a child at `depth` (a
    /// sub-agent resumed on its own): its children are one level deeper.
    pub fn at_depth(mut self, depth: u32) -> Self {
        self.depth = depth.min(MAX_DEPTH);
        self
    }

    fn agent(&self, name: &str) -> Option<&AgentProfile> {
        self.agents.iter().find(|agent| agent.name == name)
    }
}

/// Adds delegation to a [`SessionBuilder`].
pub trait DelegationExt {
    /// Adds the `delegate_tasks` tool: sub-agents under the session's
    /// authority. Its children get the tools, mode, rules, approver and
    /// limits the session has when it is built ([`SessionScope`]).
    fn delegation(self, delegation: Delegation) -> Self;
}

impl DelegationExt for SessionBuilder {
    fn delegation(self, delegation: Delegation) -> Self {
        let parent = Arc::new(OnceLock::new());
        let tool = DelegateTasks::new(delegation, Arc::clone(&parent));
        self.tool(tool).on_build(move |scope| {
            // Kept without the tool itself, which keeps this scope: the two
            // would otherwise hold each other, and with them the model, the
            // tools and what those hold, for ever. No child is given it
            // (`child_authority`).
            let mut scope = scope.clone();
            scope.tools.retain(|tool| tool.definition().name != DELEGATE_TASKS);
            let _ = parent.set(scope);
        })
    }
}

/// The `delegate_tasks` tool.
struct DelegateTasks {
    definition: ToolDefinition,
    delegation: Delegation,
    /// The parent session's scope, set when it is built (the tool exists
    /// before the session does), this tool left out of its tools.
    scope: Arc<OnceLock<SessionScope>>,
    running: Arc<Semaphore>,
}

impl DelegateTasks {
    fn new(delegation: Delegation, scope: Arc<OnceLock<SessionScope>>) -> Self {
        let definition = definition(&delegation.agents);
        let running = Arc::new(Semaphore::new(delegation.max_children));
        Self { definition, delegation, scope, running }
    }
}

fn definition(agents: &[AgentProfile]) -> ToolDefinition {
    let mut description = format!(
        "Hand independent subtasks to sub-agents that work in parallel in this workspace, each with its \
         own conversation and your tools, and get each one's final answer back. Up to \
         {MAX_TASKS_PER_CALL} tasks per call. Write each task so it stands alone: the sub-agent sees \
         only it. `agent` picks a named agent; `tools` names the tools to show it first."
    );
    if !agents.is_empty() {
        description.push_str("\nNamed agents:");
        let mut sorted: Vec<&AgentProfile> = agents.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        for agent in sorted.iter().take(50) {
            let short: String = agent.description.chars().take(200).collect();
            description.push_str(&format!("\n- {}: {short}", agent.name));
        }
    }
    let parameters = json!({
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TASKS_PER_CALL,
                "items": {
                    "type": "object",
                    "properties": {
                        "task": {"type": "string", "description": "What the sub-agent should do, on its own."},
                        "agent": {"type": "string", "description": "A named agent, if one fits."},
                        "tools": {"type": "array", "items": {"type": "string"}, "description": "Tools to show it first."},
                    },
                    "required": ["task"],
                },
            },
        },
        "required": ["tasks"],
    });
    ToolDefinition::new(DELEGATE_TASKS, description, parameters)
}

#[derive(Deserialize)]
struct Arguments {
    tasks: Vec<ChildTask>,
}

impl Tool for DelegateTasks {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Its children's calls go through their own pipeline; delegating
    /// itself only starts conversations.
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(scope) = self.scope.get() else {
                return ToolOutput::error("delegate_tasks is not ready: its session was not built");
            };
            let tasks = match serde_json::from_value::<Arguments>(arguments) {
                Ok(arguments) => arguments.tasks,
                Err(error) => return ToolOutput::error(format!("invalid tasks: {error}")),
            };
            let runs =
                tasks.iter().enumerate().map(|(index, task)| self.run_child(scope, index, task, &context));
            let ended = futures_util::future::join_all(runs).await;
            let mut usage = Usage::default();
            let mut text = String::new();
            let mut failed = 0;
            for (index, child) in ended.iter().enumerate() {
                usage += child.usage;
                failed += usize::from(child.failed);
                if index > 0 {
                    text.push_str("\n\n");
                }
                text.push_str(&child.report(index));
            }
            let output = if failed == ended.len() { ToolOutput::error(text) } else { ToolOutput::text(text) };
            output.with_subagent_usage(usage)
        })
    }
}

/// How one child ended.
struct ChildEnd {
    id: Option<String>,
    agent: Option<String>,
    answer: Result<String, String>,
    failed: bool,
    usage: Usage,
}

impl ChildEnd {
    fn failed(agent: Option<&str>, id: Option<String>, why: String) -> Self {
        Self { id, agent: agent.map(str::to_owned), answer: Err(why), failed: true, usage: Usage::default() }
    }

    /// Its part of the call's result.
    fn report(&self, index: usize) -> String {
        let mut head = format!("## task {}", index + 1);
        if let Some(agent) = &self.agent {
            head.push_str(&format!(" (agent {agent})"));
        }
        if let Some(id) = &self.id {
            head.push_str(&format!(" [session {id}]"));
        }
        match &self.answer {
            Ok(answer) => format!("{head}\n{}", bounded(answer)),
            Err(why) => format!("{head}\nfailed: {why}"),
        }
    }
}

impl DelegateTasks {
    async fn run_child(
        &self,
        scope: &SessionScope,
        index: usize,
        task: &ChildTask,
        context: &ToolContext,
    ) -> ChildEnd {
        let agent = match &task.agent {
            Some(name) => match self.delegation.agent(name) {
                Some(agent) => Some(agent),
                None => {
                    let known: Vec<&str> = self.delegation.agents.iter().map(|a| a.name.as_str()).collect();
                    let why = format!("no agent named `{name}`; named agents: {}", list_or_none(&known));
                    return ChildEnd::failed(Some(name), None, why);
                }
            },
            None => None,
        };
        let agent_name = agent.map(|a| a.name.as_str());
        let permit = tokio::select! {
            biased;
            () = context.cancel.cancelled() => return ChildEnd::failed(agent_name, None, "cancelled before it started".into()),
            permit = Arc::clone(&self.running).acquire_owned() => permit,
        };
        let Ok(_permit) = permit else {
            return ChildEnd::failed(agent_name, None, "the parent session is gone".into());
        };
        let slot = match self.delegation.children.open(context.call_id, index, task, agent).await {
            Ok(slot) => slot,
            Err(why) => return ChildEnd::failed(agent_name, None, why),
        };
        let id = slot.id.clone();
        let session = match self.child_session(scope, task, agent, slot).await {
            Ok(session) => session,
            Err(why) => return ChildEnd::failed(agent_name, Some(id), why),
        };
        let mut session = session;
        let mut sink = ChildSink { id: id.clone(), context: context.clone(), usage: Usage::default() };
        let options = TurnOptions { cancel: context.cancel.child_token(), ..TurnOptions::default() };
        let ran = session.run_with(task.task.as_str(), options, &mut sink).await;
        let (answer, failed) = match ran {
            Ok(outcome) => (Ok(outcome.answer), false),
            Err(error) => {
                let left = match error.disposition {
                    crate::error::Disposition::RolledBack => "nothing it did was kept",
                    crate::error::Disposition::Checkpointed => "its session keeps what it did",
                };
                (Err(format!("{} ({left})", error.kind)), true)
            }
        };
        ChildEnd { id: Some(id), agent: agent_name.map(str::to_owned), answer, failed, usage: sink.usage }
    }

    /// The child's session: authority narrowed, preferences shown first.
    async fn child_session(
        &self,
        scope: &SessionScope,
        task: &ChildTask,
        agent: Option<&AgentProfile>,
        slot: ChildSlot,
    ) -> Result<Session, String> {
        let authority = child_authority(scope, agent);
        let names: BTreeSet<String> = authority.iter().map(|t| t.definition().name.clone()).collect();
        let shown = shown_first(&names, &task.tools);
        let window = if slot.model.is_some() { slot.context_window } else { scope.context_window };
        let model = slot.model.unwrap_or_else(|| Arc::clone(&scope.model));
        let approver: Arc<dyn ApprovalHandler> = Arc::new(ChildApprover {
            inner: Arc::clone(&scope.approver),
            who: format!("sub-agent {} ({})", slot.id, short(&task.task, 80)),
        });
        let role = agent.map_or(CHILD_PROMPT, |agent| agent.prompt.as_str());
        let system = match &scope.system {
            Some(parent) => format!("{role}\n\n{parent}"),
            None => role.to_owned(),
        };
        // The parent's workspace and clock are part of the child's recorded
        // authority, so a child resumed by itself in that workspace matches.
        let mut builder = Session::builder_shared(model)
            .tools(authority.iter().cloned())
            .mode(scope.mode)
            .rules(scope.rules.iter().cloned())
            .shared_approver(approver)
            .system_prompt(system)
            .limits(scope.limits)
            .compact_at(scope.compact_at)
            .clock(scope.clock)
            .child(true);
        if let Some(workspace) = &scope.workspace {
            builder = builder.workspace(workspace.clone());
        }
        if let Some(window) = window {
            builder = builder.context_window(window);
        }
        if let Some(pricing) = &scope.pricing {
            builder = builder.pricing(Arc::clone(pricing));
        }
        // `read_artifact` follows the agent's list like any tool; allowed,
        // it reads the child's own store (which, in a store that links
        // them, holds its ancestors' too) or else the parent's.
        let reads_artifacts = agent.is_none_or(|a| allows(a, ReadArtifact::NAME));
        if let Some(artifacts) =
            slot.artifacts.or_else(|| scope.artifacts.clone()).filter(|_| reads_artifacts)
        {
            builder = builder.artifacts(artifacts);
        }
        for hook in slot.hooks {
            builder = builder.hook(hook);
        }
        if shown.len() < names.len() {
            let hidden: Vec<Arc<dyn Tool>> =
                authority.iter().filter(|t| !shown.contains(&t.definition().name)).cloned().collect();
            let (finder, source) = deferred_tools(hidden);
            builder = builder.tool_source(source).tools([finder]);
        }
        let may_delegate = agent.is_none_or(|a| allows(a, DELEGATE_TASKS));
        if self.delegation.depth + 1 < MAX_DEPTH && may_delegate {
            let mut deeper = self.delegation.clone();
            deeper.depth += 1;
            if let Some(children) = slot.children {
                deeper.children = children;
            }
            builder = builder.delegation(deeper);
        }
        let built = match slot.journal {
            Some(journal) => builder.boxed_journal(journal).build().await,
            None => builder.build().await,
        };
        built.map_err(|error| format!("could not start: {error}"))
    }
}

/// The parent's tools a child may use: all of them, or those a named
/// agent's list names; never `delegate_tasks` itself (a child that may
/// delegate gets its own, one level deeper).
fn child_authority(scope: &SessionScope, agent: Option<&AgentProfile>) -> Vec<Arc<dyn Tool>> {
    scope
        .tools
        .iter()
        .filter(|tool| {
            let name = tool.definition().name.as_str();
            let own = [DELEGATE_TASKS, FIND_TOOLS, ReadArtifact::NAME].contains(&name);
            !own && agent.is_none_or(|a| allows(a, name))
        })
        .cloned()
        .collect()
}

/// Whether a named agent's list (when it has one) names `tool`.
fn allows(agent: &AgentProfile, tool: &str) -> bool {
    agent.tools.as_ref().is_none_or(|list| list.iter().any(|n| n == tool))
}

/// The names a child is shown first: its preferences inside its authority
/// (a qualified `mcp__SERVER__TOOL` is that tool), or all when none apply.
fn shown_first(authority: &BTreeSet<String>, preferences: &[String]) -> BTreeSet<String> {
    let chosen: BTreeSet<String> = preferences.iter().filter(|p| authority.contains(*p)).cloned().collect();
    if chosen.is_empty() { authority.clone() } else { chosen }
}

/// Passes a child's events to the parent's stream, tagged with its id, and
/// counts what its turns spent.
struct ChildSink {
    id: String,
    context: ToolContext,
    usage: Usage,
}

impl EventSink for ChildSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        if let Event::TurnEnd { usage, .. } = &event {
            self.usage += *usage;
        }
        self.context.progress.child_event(&self.id, event);
        Ok(())
    }
}

/// The parent's approver, told which child asks.
struct ChildApprover {
    inner: Arc<dyn ApprovalHandler>,
    who: String,
}

impl ApprovalHandler for ChildApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let mut asked = request.clone();
            asked.reason = format!("{} asks: {}", self.who, request.reason);
            self.inner.decide(&asked).await
        })
    }
}

fn bounded(text: &str) -> String {
    if text.len() <= CHILD_ANSWER_BYTES {
        return text.to_owned();
    }
    let mut end = CHILD_ANSWER_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut: the answer has {} bytes]", &text[..end], text.len())
}

fn short(text: &str, chars: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= chars {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(chars).collect();
    cut.push('…');
    cut
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}
