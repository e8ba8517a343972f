//! Approvals asked of the editor: each call bosun's permission pipeline
//! leaves to a person becomes an ACP `session/request_permission` with three
//! options (allow once, allow for the session, reject). The editor only
//! ever narrows: a call the user's rules deny is never asked, one they allow
//! is never asked either.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
};
use bosun_core::permission::{AcceptFuture, ApprovalFuture};
use bosun_core::{ApprovalDecision, ApprovalHandler, ApprovalRequest, GrantScope, Reason};

use crate::updates::tool_call_fields;

/// The option ids bosun offers.
const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject-once";

pub(crate) struct EditorApprover {
    connection: ConnectionTo<Client>,
    /// The session's id, known once the session is built.
    session: Arc<OnceLock<String>>,
    workspace: PathBuf,
}

impl EditorApprover {
    pub(crate) fn new(
        connection: ConnectionTo<Client>,
        session: Arc<OnceLock<String>>,
        workspace: PathBuf,
    ) -> Self {
        Self { connection, session, workspace }
    }
}

fn deny(text: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") }
}

/// The editor's answer as bosun's decision: a cancelled request, an unknown
/// option or a failed request is a denial.
pub(crate) fn decision(outcome: &RequestPermissionOutcome, protected: bool) -> ApprovalDecision {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => ApprovalDecision::ApproveOnce,
            // A protected path's grant covers this call only.
            ALLOW_ALWAYS => ApprovalDecision::ApproveForSession {
                scope: if protected { GrantScope::SameCall } else { GrantScope::Tool },
            },
            _ => deny("the person rejected it in the editor"),
        },
        _ => deny("the editor cancelled the request"),
    }
}

impl ApprovalHandler for EditorApprover {
    /// A stored session whose authority widened since it was recorded (a
    /// new MCP server, a looser mode or rule) opens only when the person
    /// allows it in the editor; a rejection or no answer keeps it closed.
    fn accept_authority<'a>(&'a self, change: &'a bosun_core::AuthorityChange) -> AcceptFuture<'a> {
        Box::pin(async move {
            let Some(session) = self.session.get() else { return false };
            let fields = agent_client_protocol::v1::schema::ToolCallUpdateFields::new()
                .title(format!("Resume this session with more authority than it had: {change}"))
                .kind(agent_client_protocol::v1::schema::ToolKind::Other);
            let call = agent_client_protocol::v1::schema::ToolCallUpdate::new(
                format!("authority-{session}"),
                fields,
            );
            let options = vec![
                PermissionOption::new(ALLOW_ONCE, "Resume with it", PermissionOptionKind::AllowOnce),
                PermissionOption::new(REJECT, "Do not resume", PermissionOptionKind::RejectOnce),
            ];
            let asked = RequestPermissionRequest::new(session.clone(), call, options);
            match self.connection.send_request(asked).block_task().await {
                Ok(answer) => matches!(
                    &answer.outcome,
                    RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == ALLOW_ONCE
                ),
                Err(_) => false,
            }
        })
    }

    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let Some(session) = self.session.get() else {
                return deny("the session is not ready to ask");
            };
            let fields = tool_call_fields(&request.tool, &request.arguments, &self.workspace);
            let call =
                agent_client_protocol::v1::schema::ToolCallUpdate::new(request.call_id.to_string(), fields);
            let always = if request.protected {
                "Allow (this call: the path is protected)"
            } else {
                "Always allow this tool in this session"
            };
            let options = vec![
                PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(ALLOW_ALWAYS, always, PermissionOptionKind::AllowAlways),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ];
            let asked = RequestPermissionRequest::new(session.clone(), call, options);
            match self.connection.send_request(asked).block_task().await {
                Ok(answer) => decision(&answer.outcome, request.protected),
                Err(error) => deny(&format!("the editor did not answer: {error}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    fn chosen(id: &'static str) -> RequestPermissionOutcome {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
    }

    #[test]
    fn the_editors_answers_map_to_bosuns_decisions() {
        assert_eq!(decision(&chosen(ALLOW_ONCE), false), ApprovalDecision::ApproveOnce);
        assert_eq!(
            decision(&chosen(ALLOW_ALWAYS), false),
            ApprovalDecision::ApproveForSession { scope: GrantScope::Tool }
        );
        // A protected path's "always" covers this one call.
        assert_eq!(
            decision(&chosen(ALLOW_ALWAYS), true),
            ApprovalDecision::ApproveForSession { scope: GrantScope::SameCall }
        );
        assert!(matches!(decision(&chosen(REJECT), false), ApprovalDecision::Deny { .. }));
        assert!(matches!(decision(&chosen("made-up"), false), ApprovalDecision::Deny { .. }));
        assert!(matches!(
            decision(&RequestPermissionOutcome::Cancelled, false),
            ApprovalDecision::Deny { .. }
        ));
    }
}
