//! Approvals asked over HTTP: a session's approver files each request
//! here and waits; an authenticated client lists them and answers one.
//! A request whose turn is cancelled leaves the list.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bosun_core::permission::ApprovalFuture;
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, GrantScope};
use serde::Serialize;
use tokio::sync::oneshot;
use utoipa::ToSchema;

/// A pending approval as the API shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PendingApproval {
    /// Its id, for `POST /v1/approvals/{id}`.
    pub id: String,
    /// The session that asks.
    pub session_id: String,
    /// The call's id, as its `approval_requested` event names it.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The exact arguments.
    #[schema(value_type = Object)]
    pub arguments: serde_json::Value,
    /// Why it asks.
    pub reason: String,
    /// Whether the call touches a protected path (then "for the session"
    /// covers this exact call only).
    pub protected: bool,
}

struct Waiting {
    shown: PendingApproval,
    answer: oneshot::Sender<ApprovalDecision>,
}

/// Every pending approval of the server, oldest first.
#[derive(Default)]
pub(crate) struct Approvals {
    waiting: Mutex<BTreeMap<String, Waiting>>,
}

impl Approvals {
    pub(crate) fn list(&self) -> Vec<PendingApproval> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.values().map(|w| w.shown.clone()).collect()
    }

    /// Answers approval `id`; `false` when there is no such approval.
    /// A grant for the session covers this exact call only when the call
    /// touches a protected path, as a terminal's prompt offers it.
    pub(crate) fn answer(&self, id: &str, decision: ApprovalDecision) -> bool {
        let taken = self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        taken.is_some_and(|w| {
            let decision = match decision {
                ApprovalDecision::ApproveForSession { .. } if w.shown.protected => {
                    ApprovalDecision::ApproveForSession { scope: GrantScope::SameCall }
                }
                other => other,
            };
            // A turn cancelled meanwhile dropped the receiver: answered all the same.
            let _ = w.answer.send(decision);
            true
        })
    }

    fn file(&self, shown: PendingApproval) -> oneshot::Receiver<ApprovalDecision> {
        let (answer, answered) = oneshot::channel();
        let id = shown.id.clone();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Waiting { shown, answer });
        answered
    }

    fn withdraw(&self, id: &str) {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Withdraws every approval of `session` (it is deleted or stopped).
    pub(crate) fn withdraw_session(&self, session: &str) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, w| w.shown.session_id != session);
    }
}

/// A session's approver: asks whoever answers over HTTP, and waits.
pub(crate) struct HttpApprover {
    /// The session's id, set once the session is built.
    pub(crate) session: Arc<OnceLock<String>>,
    pub(crate) approvals: Arc<Approvals>,
}

/// Takes a request off the list when its wait ends unanswered (the turn
/// was cancelled and dropped the future).
struct Filed<'a> {
    approvals: &'a Approvals,
    id: String,
}

impl Drop for Filed<'_> {
    fn drop(&mut self) {
        self.approvals.withdraw(&self.id);
    }
}

impl ApprovalHandler for HttpApprover {
    /// Files the request at once, not when the answer is first awaited: the
    /// session asks before it tells its `approval_requested` event, so a
    /// client that sees the event finds the approval listed.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let id = uuid::Uuid::now_v7().to_string();
        let shown = PendingApproval {
            id: id.clone(),
            session_id: self.session.get().cloned().unwrap_or_default(),
            call_id: request.call_id.to_string(),
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            reason: request.reason.clone(),
            protected: request.protected,
        };
        let answered = self.approvals.file(shown);
        let filed = Filed { approvals: &self.approvals, id };
        Box::pin(async move {
            let _filed = filed;
            match answered.await {
                Ok(decision) => decision,
                // The server dropped it (the session was deleted): never a yes.
                Err(_) => ApprovalDecision::Deny {
                    reason: bosun_core::Reason::lossy("the session was stopped", "stopped"),
                },
            }
        })
    }
}
