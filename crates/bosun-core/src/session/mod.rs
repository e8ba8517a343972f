//! [`Session`]: history, the authority ceiling and the active tool subset,
//! and the entry point of a turn. The turn itself lives in `turn.rs` (model
//! rounds, commit, roll back) and `batch.rs` (gating and running tool calls).

mod batch;
mod builder;
mod compact;
pub use compact::CompactOutcome;
mod context;
mod durable;
mod hooking;
mod hooks;
mod ids;
mod opening;
mod persist;
mod policy;
mod progress;
pub use opening::{OpeningCall, OpeningCalls};
pub use persist::Persistence;
mod invoke;
mod record;
mod scope;
mod tools;
mod turn;
mod updates;

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use crate::journal::Compaction;
pub use crate::message::UserInput;
pub use batch::{NOT_RUN, WITHDRAWN};
pub use builder::SessionBuilder;
pub use context::{Estimator, KEEP_UNITS, SHORT_RESULT, SUMMARY_PROMPT, chars_of};
pub use invoke::CANCELLED;
pub use progress::PROGRESS_INTERVAL;
pub use scope::SessionScope;

use crate::authority::AuthoritySnapshot;
use crate::error::BuildError;
use crate::inbox::{Inbox, Queued};
use crate::journal::JournalError;
use crate::limits::{Limits, Pricing};
use crate::message::{CallId, Message, StopReason, Usage};
use crate::model::{Capabilities, GenerationOptions, Model, ToolChoice};
use crate::permission::Mode;
use crate::tool_source::ToolSource;
use policy::Policy;
use tools::ToolTable;

/// Whether the calls of one response run at once or one after another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolExecution {
    /// All approved calls run concurrently; results commit in call order.
    #[default]
    Parallel,
    /// Calls run in order; after a cancellation no further call starts.
    Sequential,
}

/// An agent conversation: runs one turn at a time (invariant 1).
///
/// Turns never overlap: `run` borrows the session mutably.
///
/// ```compile_fail
/// # async fn overlap(mut session: bosun_core::Session) {
/// let first = session.run("fix the test", &mut Vec::new());
/// let second = session.run("explain it", &mut Vec::new()); // second &mut borrow
/// # let _ = (first, second); }
/// ```
pub struct Session {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) capabilities: Capabilities,
    /// The ceiling, the active subset, the withdrawn, and what is shown.
    pub(crate) tools: ToolTable,
    /// Asked between rounds for tools withdrawn, back, or new.
    pub(crate) source: Option<Arc<dyn ToolSource>>,
    /// Prices a turn's usage for its cost limit.
    pub(crate) pricing: Option<Arc<dyn Pricing>>,
    /// Where outputs past the bound are kept whole.
    pub(crate) artifacts: Option<Arc<dyn crate::artifacts::Artifacts>>,
    /// The embedder's hooks, and whether `SessionStart` ran.
    pub(crate) hooks: hooks::Hooks,
    /// The window, what is sent of history, and the request's estimate.
    pub(crate) context: context::ContextBudget,
    pub(crate) system: Option<String>,
    pub(crate) history: Vec<Message>,
    pub(crate) options: GenerationOptions,
    /// See [`SessionBuilder::first_round_tool_choice`].
    pub(crate) first_round: Option<ToolChoice>,
    /// See [`SessionBuilder::persistence`].
    pub(crate) persistence: Persistence,
    /// See [`SessionBuilder::opening_calls`].
    pub(crate) opening: Option<OpeningCalls>,
    /// The mode, rules and approver a call is decided by, and the grants.
    pub(crate) policy: Policy,
    pub(crate) limits: Limits,
    pub(crate) execution: ToolExecution,
    /// The journal, the queue and the ledger: the one writer of records.
    pub(crate) durable: durable::Durable,
    pub(crate) authority: AuthoritySnapshot,
    /// How the authority resumed under differed from the recorded one.
    pub(crate) resumed_change: Option<crate::AuthorityChange>,
    pub(crate) call_ids: ids::CallIdRegistry,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("turns", &self.durable.ledger().turns())
            .field("messages", &self.history.len())
            .field("active", self.tools.active())
            .field("mode", &self.policy.mode())
            .field("authority", &self.authority.digest())
            .finish_non_exhaustive()
    }
}

/// Per-turn options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TurnOptions {
    /// Fields set here override the session's generation options for this turn.
    pub generation: GenerationOptions,
    /// Cancels the turn when fired.
    pub cancel: CancellationToken,
}

impl TurnOptions {
    /// Options that cancel the turn when `cancel` fires.
    pub fn cancel_on(cancel: CancellationToken) -> Self {
        Self { cancel, ..Self::default() }
    }

    /// Overrides generation options for the turn.
    pub fn with_generation(mut self, generation: GenerationOptions) -> Self {
        self.generation = generation;
        self
    }
}

/// What a completed turn produced.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TurnOutcome {
    /// The turn's number.
    pub turn: u64,
    /// The final answer text.
    pub answer: String,
    /// Tokens used by all rounds of the turn, every bucket together.
    pub usage: Usage,
    /// The same by bucket (main rounds, compaction, tools), priced when the
    /// session has prices.
    pub spend: crate::spend::Spend,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Model rounds taken.
    pub rounds: u32,
    /// The prompt asked for a change ([`crate::intent::intent`]) and no call that writes
    /// or runs succeeded in the turn: the answer may claim a change that was
    /// never made.
    pub unfinished_change: bool,
}

impl Session {
    /// Starts building a session on `model`.
    pub fn builder(model: impl Model + 'static) -> SessionBuilder {
        SessionBuilder::new(Arc::new(model))
    }

    /// A handle that queues messages while a turn runs: steering for the
    /// running turn's next safe point, follow-ups for after it.
    pub fn inbox(&self) -> Inbox {
        self.durable.inbox()
    }

    /// What the session's model supports (an image sent to a model whose
    /// `images` is `No` is refused before the turn starts).
    pub fn capabilities(&self) -> crate::model::Capabilities {
        self.capabilities
    }

    /// The model's context window in tokens, when the session knows it.
    pub fn context_window(&self) -> Option<u64> {
        self.context.window()
    }

    /// The messages waiting in the queue, oldest first.
    pub async fn queued(&self) -> Vec<Queued> {
        self.durable.queued().await
    }

    /// Starts building a session on a shared model.
    pub fn builder_shared(model: Arc<dyn Model>) -> SessionBuilder {
        SessionBuilder::new(model)
    }

    /// Committed messages, oldest first (without the system prompt).
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// The authority snapshot the session runs under: the one recorded at
    /// build time, or the newest one its tool source's changes journaled.
    pub fn authority(&self) -> &AuthoritySnapshot {
        &self.authority
    }

    /// How the authority this session resumed under differs from the one
    /// it was recorded with (narrowed, or widened with the person's
    /// acceptance), for a front end to say; `None` when it is the same or
    /// the session is new.
    pub fn resumed_change(&self) -> Option<&crate::AuthorityChange> {
        self.resumed_change.as_ref()
    }

    /// Turns started so far (including rolled-back ones).
    pub fn turns(&self) -> u64 {
        self.durable.ledger().turns()
    }

    /// The prompt of the last turn when it left no trace in history: it
    /// rolled back (invariant 12) or a crash interrupted it before any
    /// commit. Kept live and on resume, so it can be sent again (invariant
    /// 21); the next turn clears it.
    pub fn interrupted_prompt(&self) -> Option<&Message> {
        self.durable.ledger().interrupted_prompt()
    }

    /// The journal failure that stopped this session, if one did. Such a
    /// session refuses every further turn
    /// ([`TurnErrorKind::JournalLost`](crate::TurnErrorKind::JournalLost));
    /// resume it from its journal.
    pub fn journal_failure(&self) -> Option<&JournalError> {
        self.durable.lost()
    }

    /// The permission mode.
    pub fn mode(&self) -> Mode {
        self.policy.mode()
    }

    /// The session-wide generation options.
    pub fn options(&self) -> &GenerationOptions {
        &self.options
    }

    /// Changes the session-wide generation options for later turns (a
    /// turn's own still layer over them); a turn checks them against the
    /// model's capabilities when it starts.
    pub fn set_options(&mut self, options: GenerationOptions) {
        self.options = options;
    }

    /// The permission rules calls are decided by, in order.
    pub fn rules(&self) -> &[crate::PermissionRule] {
        self.policy.rules()
    }

    /// Adds a rule for later calls of this session (the person's own, as
    /// `/permissions` adds one: kept in memory, as grants are; the stored
    /// authority is not changed, so a resume runs under the configured
    /// rules again). A deny still wins over any allow.
    pub fn add_rule(&mut self, rule: crate::PermissionRule) {
        self.policy.rules_mut().push(rule);
    }

    /// Removes the rule at `index` of [`Session::rules`] for later calls.
    pub fn remove_rule(&mut self, index: usize) -> Option<crate::PermissionRule> {
        let rules = self.policy.rules_mut();
        (index < rules.len()).then(|| rules.remove(index))
    }

    /// What the person approved for the rest of the session, in words.
    pub fn grants(&self) -> Vec<String> {
        self.policy.grants()
    }

    /// Changes the permission mode for later turns.
    pub fn set_mode(&mut self, mode: Mode) {
        self.policy.set_mode(mode);
    }

    /// The model's plan as its last accepted `update_plan` call set it
    /// (a resumed session's from its journal).
    pub fn plan(&self) -> Option<crate::plan::Plan> {
        crate::plan::Plan::latest(self.history())
    }

    /// Names of the active tools, sorted.
    pub fn active_tools(&self) -> impl Iterator<Item = &str> {
        self.tools.active().iter().map(String::as_str)
    }

    /// Names of the tools their source withdrew, sorted.
    pub fn withdrawn_tools(&self) -> impl Iterator<Item = &str> {
        self.tools.withdrawn().keys().map(String::as_str)
    }

    /// Names of every tool in the authority ceiling, sorted.
    pub fn available_tools(&self) -> impl Iterator<Item = &str> {
        self.tools.ceiling().keys().map(String::as_str)
    }

    /// The model's own id for a session-minted call id; a resumed session
    /// knows those of its journal too.
    pub fn provider_call_id(&self, id: CallId) -> Option<&str> {
        self.call_ids.origin(id)
    }

    /// Session-minted ids given to calls the model named `provider_id`
    /// (models may reuse ids, so there can be several).
    pub fn minted_call_ids(&self, provider_id: &str) -> &[CallId] {
        self.call_ids.minted_for(provider_id)
    }

    /// Whether `id` is a call id of this session's history.
    pub fn knows_call_id(&self, id: CallId) -> bool {
        self.call_ids.is_used(id)
    }

    /// Disables a tool; it stays in the authority ceiling.
    pub fn disable_tool(&mut self, name: &str) -> Result<(), BuildError> {
        self.tools.disable(name)
    }

    /// Re-enables a tool of the authority ceiling.
    pub fn enable_tool(&mut self, name: &str) -> Result<(), BuildError> {
        self.tools.enable(name)
    }

    /// Replaces the active subset. Atomic: an unknown name changes nothing.
    pub fn set_active_tools<I, S>(&mut self, names: I) -> Result<(), BuildError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tools.set_active(names)
    }

    /// Re-enables every tool of the authority ceiling.
    pub fn restore_tools(&mut self) {
        self.tools.restore();
    }

    /// What is sent of history now.
    pub fn compaction(&self) -> &Compaction {
        self.context.compaction()
    }
}
