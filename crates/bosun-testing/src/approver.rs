//! An approval handler that answers from a script and records what it saw.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bosun_core::permission::ApprovalFuture;
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, Reason};

#[derive(Debug)]
enum Policy {
    Always(ApprovalDecision),
    Script(VecDeque<ApprovalDecision>),
    Never,
}

/// Answers approval requests from a script and records each request.
/// Clones share the script and the record.
#[derive(Clone, Debug)]
pub struct RecordingApprover {
    policy: Arc<Mutex<Policy>>,
    seen: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl RecordingApprover {
    fn with(policy: Policy) -> Self {
        Self { policy: Arc::new(Mutex::new(policy)), seen: Arc::default() }
    }

    /// Approves every call once.
    pub fn approve_all() -> Self {
        Self::with(Policy::Always(ApprovalDecision::ApproveOnce))
    }

    /// Denies every call with `reason`.
    pub fn deny_all(reason: &str) -> Self {
        Self::with(Policy::Always(ApprovalDecision::Deny { reason: Reason::lossy(reason, "denied") }))
    }

    /// Answers with `decisions` in order, then denies.
    pub fn scripted(decisions: impl IntoIterator<Item = ApprovalDecision>) -> Self {
        Self::with(Policy::Script(decisions.into_iter().collect()))
    }

    /// Never answers: the request waits until the turn is cancelled.
    pub fn never() -> Self {
        Self::with(Policy::Never)
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<ApprovalRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl ApprovalHandler for RecordingApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.clone());
        }
        let fallback =
            || ApprovalDecision::Deny { reason: Reason::lossy("the approval script ran out", "denied") };
        let answer = match self.policy.lock() {
            Ok(mut policy) => match &mut *policy {
                Policy::Always(decision) => Some(decision.clone()),
                Policy::Script(queue) => Some(queue.pop_front().unwrap_or_else(fallback)),
                Policy::Never => None,
            },
            Err(_) => Some(fallback()),
        };
        Box::pin(async move {
            match answer {
                Some(decision) => decision,
                None => std::future::pending().await,
            }
        })
    }
}
