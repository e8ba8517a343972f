//! Approvals asked of the calling client: through elicitation when it said
//! at `initialize` that it supports it, else denied. Either way the caller
//! only ever narrows: what the user's rules deny stays denied, and a call
//! the rules allow is never asked.

use bosun_core::permission::ApprovalFuture;
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, GrantScope, Reason};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RequestContext};
use serde_json::json;

pub(crate) struct ClientApprover {
    /// The caller, when it can be asked.
    peer: Option<Peer<RoleServer>>,
}

impl ClientApprover {
    pub(crate) fn for_call(context: &RequestContext<RoleServer>) -> Self {
        let asks = context.peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some());
        Self { peer: asks.then(|| context.peer.clone()) }
    }
}

fn deny(text: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") }
}

fn decision_schema() -> Option<ElicitationSchema> {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["once", "session", "deny"],
                "description": "once: run this call; session: run it and calls of this tool for the rest of the session; deny: do not run it"
            }
        },
        "required": ["decision"]
    }))
    .ok()
}

impl ApprovalHandler for ClientApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let Some(peer) = &self.peer else {
                return deny(
                    "the calling MCP client cannot be asked (no elicitation), so the call is denied",
                );
            };
            let Some(schema) = decision_schema() else { return deny("the approval form could not be made") };
            let message = format!(
                "bosun asks to run `{}` ({}) with {}",
                request.tool, request.reason, request.arguments
            );
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            let answer = match peer.create_elicitation(params).await {
                Ok(answer) => answer,
                Err(error) => return deny(&format!("the calling client did not answer: {error}")),
            };
            let chosen = answer.content.as_ref().and_then(|c| c.get("decision")).and_then(|d| d.as_str());
            match (answer.action, chosen) {
                (ElicitationAction::Accept, Some("once")) => ApprovalDecision::ApproveOnce,
                (ElicitationAction::Accept, Some("session")) => ApprovalDecision::ApproveForSession {
                    scope: if request.protected { GrantScope::SameCall } else { GrantScope::Tool },
                },
                _ => deny("the calling client denied it"),
            }
        })
    }
}
