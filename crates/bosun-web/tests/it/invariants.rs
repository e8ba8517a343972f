//! Invariant 19: network tools are opt-in and ask for approval; no hidden
//! vendors. Opting in is the configuration's part (bosun-agent's tests);
//! here, a session holding the web tools: every call asks, in every mode
//! that allows it at all, whatever the rules and grants say, and nothing is
//! sent before the person said yes.

use bosun_core::{
    ApprovalDecision, GrantScope, Message, Mode, Permission, PermissionRule, Session, Tool, WorkspaceIdentity,
};
use bosun_testing::http::{Route, Server};
use bosun_testing::{RecordingApprover, ScriptedModel};
use bosun_web::{SearchKind, SearchProvider, WebFetch, WebLimits, WebSearch};
use serde_json::json;

use crate::TestResult;

/// A session whose model calls `tool` twice with `arguments`, then answers.
fn session_calling(
    tool: impl Tool + 'static,
    arguments: serde_json::Value,
    mode: Mode,
    approver: &RecordingApprover,
) -> bosun_core::SessionBuilder {
    let name = tool.definition().name.clone();
    let model =
        ScriptedModel::new().tool_call(&name, arguments.clone()).tool_call(&name, arguments).answer("done");
    Session::builder(model)
        .workspace(WorkspaceIdentity::new("/work/project", 1, 42))
        .tool(tool)
        .mode(mode)
        // The widest a user's rules could say: allow this tool, and every
        // call of it for the session.
        .rule(PermissionRule::tool(name, Permission::Allow))
        .approver(approver.clone())
}

fn results(session: &Session) -> Vec<(bool, String)> {
    session
        .history()
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult { content, is_error, .. } => {
                Some((*is_error, bosun_core::message::concat_text(content)))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn invariant_19_web_fetch_asks_every_call_in_every_mode_despite_allow_rules_and_grants() -> TestResult {
    let server = Server::start().await?;
    server.route("/page", Route::typed("text/plain", b"fetched"));
    let url = server.url("/page");
    for mode in [Mode::Propose, Mode::Write, Mode::Autonomous] {
        let before = server.requests().len();
        // The first answer grants the whole tool for the session; the
        // second call must ask all the same.
        let approver = RecordingApprover::scripted([
            ApprovalDecision::ApproveForSession { scope: GrantScope::Tool },
            ApprovalDecision::ApproveOnce,
        ]);
        let mut session =
            session_calling(WebFetch::new(WebLimits::default())?, json!({ "url": url }), mode, &approver)
                .build()
                .await?;
        session.run("read the page twice", &mut Vec::new()).await?;
        let asked = approver.seen();
        assert_eq!(asked.len(), 2, "{mode}: every call asks: {asked:?}");
        for request in &asked {
            assert!(request.protected, "{mode}: a grant must not cover the next call");
            assert!(request.reason.contains(&format!("`web_fetch` reads {url}")), "{}", request.reason);
            assert!(request.reason.contains("always asks"), "{}", request.reason);
        }
        assert_eq!(server.requests().len() - before, 2, "{mode}");
        assert!(results(&session).iter().all(|(error, text)| !error && text.ends_with("fetched")));
    }
    Ok(())
}

#[tokio::test]
async fn invariant_19_a_web_call_sends_nothing_until_approved_and_nothing_in_read_only() -> TestResult {
    let server = Server::start().await?;
    server.route("/page", Route::typed("text/plain", b"fetched"));
    let arguments = json!({ "url": server.url("/page") });

    let denying = RecordingApprover::deny_all("not today");
    let tool = WebFetch::new(WebLimits::default())?;
    let mut session = session_calling(tool, arguments.clone(), Mode::Autonomous, &denying).build().await?;
    session.run("read the page", &mut Vec::new()).await?;
    assert_eq!(denying.seen().len(), 2);
    assert!(server.requests().is_empty(), "a denied call reached the network");
    assert!(results(&session).iter().all(|(error, text)| *error && text.contains("not today")));

    // Read-only refuses before anyone is asked, whatever the rules say.
    let approving = RecordingApprover::approve_all();
    let tool = WebFetch::new(WebLimits::default())?;
    let mut session = session_calling(tool, arguments, Mode::ReadOnly, &approving).build().await?;
    session.run("read the page", &mut Vec::new()).await?;
    assert!(approving.seen().is_empty());
    assert!(server.requests().is_empty());
    assert!(results(&session).iter().all(|(error, text)| *error && text.contains("read-only")));
    Ok(())
}

#[tokio::test]
async fn invariant_19_web_search_asks_naming_the_users_provider_and_sends_the_query_only_there() -> TestResult
{
    let provider_server = Server::start().await?;
    let answer = json!({"results": [{"url": "https://a.example/", "title": "A", "content": "a"}]});
    provider_server.route(
        "/search?q=bosun&format=json",
        Route::typed("application/json", answer.to_string().as_bytes()),
    );
    let provider = SearchProvider::new(SearchKind::Searxng, &provider_server.url("/"), None)?;
    let approver = RecordingApprover::approve_all();
    let tool = WebSearch::new(provider, WebLimits::default())?;
    let mut session =
        session_calling(tool, json!({ "query": "bosun" }), Mode::Autonomous, &approver).build().await?;
    session.run("search twice", &mut Vec::new()).await?;
    let asked = approver.seen();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().all(|r| r.reason.contains("`web_search` sends \"bosun\" to 127.0.0.1")),
        "{asked:?}"
    );
    assert_eq!(provider_server.requests().len(), 2);
    Ok(())
}
