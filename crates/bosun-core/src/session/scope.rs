//! [`SessionScope`]: what a session runs under, told to whoever asked the
//! builder for it ([`SessionBuilder::on_build`](crate::SessionBuilder::on_build)).
//! A tool that starts sessions of its own (delegation) builds them from it
//! through the public builder, so the session knows nothing of such tools.

use std::fmt;
use std::sync::Arc;

use crate::artifacts::Artifacts;
use crate::authority::WorkspaceIdentity;
use crate::limits::{Limits, Pricing};
use crate::model::Model;
use crate::permission::{ApprovalHandler, Mode, PermissionRule};
use crate::tool::Tool;

/// A session's model, authority, policy and settings as it was built or
/// resumed: what a session started from inside it inherits.
#[derive(Clone)]
#[non_exhaustive]
pub struct SessionScope {
    /// The model.
    pub model: Arc<dyn Model>,
    /// The authorized tools, disabled ones left out, in the order given.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The permission mode.
    pub mode: Mode,
    /// The permission rules.
    pub rules: Vec<PermissionRule>,
    /// Who answers approval requests.
    pub approver: Arc<dyn ApprovalHandler>,
    /// The limits.
    pub limits: Limits,
    /// Prices of the model's calls, when the session has them.
    pub pricing: Option<Arc<dyn Pricing>>,
    /// The system prompt (a resumed session's, as its journal holds it).
    pub system: Option<String>,
    /// The model's context window, when known.
    pub context_window: Option<u64>,
    /// The fraction of the window at which compaction starts.
    pub compact_at: f64,
    /// Where outputs past the bound are kept whole.
    pub artifacts: Option<Arc<dyn Artifacts>>,
    /// The workspace the tools act on.
    pub workspace: Option<WorkspaceIdentity>,
    /// Whether the session may see the clock.
    pub clock: bool,
}

impl fmt::Debug for SessionScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionScope")
            .field("tools", &self.tools.iter().map(|t| t.definition().name.as_str()).collect::<Vec<_>>())
            .field("mode", &self.mode)
            .field("rules", &self.rules.len())
            .field("limits", &self.limits)
            .field("context_window", &self.context_window)
            .field("compact_at", &self.compact_at)
            .field("workspace", &self.workspace)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}
