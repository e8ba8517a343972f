//! [`Policy`]: what a call is decided by (the mode, the rules, the approver
//! asked when they say ask) and the grants that approver gave for the rest
//! of the session. The mode may change between turns; the rules and the
//! approver are the session's for its life.

use std::sync::Arc;

use crate::permission::{
    ApprovalHandler, Decided, GrantScope, Grants, Mode, PermissionRule, ProposedCall, decide,
};

/// The session's permission policy.
pub(crate) struct Policy {
    mode: Mode,
    rules: Vec<PermissionRule>,
    approver: Arc<dyn ApprovalHandler>,
    /// In memory only: a resumed session asks again.
    grants: Grants,
}

impl Policy {
    pub(crate) fn new(mode: Mode, rules: Vec<PermissionRule>, approver: Arc<dyn ApprovalHandler>) -> Self {
        Self { mode, rules, approver, grants: Grants::default() }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Allow, ask or deny for `call` under the mode and the rules.
    pub(crate) fn decide(&self, call: &ProposedCall<'_>) -> Decided {
        decide(self.mode, &self.rules, call)
    }

    /// Whether an earlier approval for the session covers this call.
    pub(crate) fn granted(&self, tool: &str, arguments: &serde_json::Value, protected: bool) -> bool {
        self.grants.covers(tool, arguments, protected)
    }

    pub(crate) fn grant(&mut self, scope: GrantScope, tool: &str, arguments: &serde_json::Value) {
        self.grants.grant(scope, tool, arguments);
    }

    pub(crate) fn rules(&self) -> &[PermissionRule] {
        &self.rules
    }

    pub(crate) fn rules_mut(&mut self) -> &mut Vec<PermissionRule> {
        &mut self.rules
    }

    pub(crate) fn grants(&self) -> Vec<String> {
        self.grants.describe()
    }

    /// Shared, so a call's approval can be awaited while the session is
    /// borrowed for the rest of the batch.
    pub(crate) fn approver(&self) -> Arc<dyn ApprovalHandler> {
        Arc::clone(&self.approver)
    }
}
