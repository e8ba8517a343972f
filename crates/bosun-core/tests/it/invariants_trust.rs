//! Invariant 20 in the core: protected paths always ask, in every mode; a
//! grant for a whole tool does not cover them; a project's rules only
//! narrow; rules by capability cover every tool that changes files.

use crate::common;

use bosun_core::{
    ApprovalDecision, CallEffects, Capability, GrantScope, Mode, Permission, PermissionRule, Session,
    ToolCategory,
};
use bosun_testing::{FnTool, RecordingApprover, Reply, ScriptedModel};
use common::{TestResult, tool_result};
use serde_json::{Value, json};

/// A write tool that reports the path it writes, as the workspace tools do.
fn path_writer(name: &str) -> FnTool {
    FnTool::text(name, ToolCategory::Write, |_| "wrote".into()).effects(|args: &Value| {
        CallEffects::writes(args.get("path").and_then(Value::as_str).map(str::to_owned))
    })
}

fn writes(paths: &[&str]) -> ScriptedModel {
    let reply =
        paths.iter().fold(Reply::new(), |reply, path| reply.tool_call("write_file", json!({ "path": path })));
    ScriptedModel::new().reply(reply).answer("done")
}

#[tokio::test]
async fn invariant_20_protected_paths_ask_in_every_mode_even_autonomous() -> TestResult {
    for mode in [Mode::Propose, Mode::Write, Mode::Autonomous] {
        let tool = path_writer("write_file");
        let approver = RecordingApprover::deny_all("no");
        let mut session =
            Session::builder(writes(&["src/lib.rs", ".git/hooks/pre-commit", ".bosun/config.toml"]))
                .tool(tool.clone())
                .mode(mode)
                .approver(approver.clone())
                .build()
                .await?;
        session.run("go", &mut Vec::new()).await?;
        let asked: Vec<Value> = approver.seen().into_iter().map(|r| r.arguments["path"].clone()).collect();
        let protected: Vec<bool> = approver.seen().into_iter().map(|r| r.protected).collect();
        let expected_asks = if mode == Mode::Propose { 3 } else { 2 };
        assert_eq!(asked.len(), expected_asks, "{mode}: {asked:?}");
        assert!(
            asked.contains(&json!(".git/hooks/pre-commit")) && asked.contains(&json!(".bosun/config.toml"))
        );
        assert_eq!(protected.iter().filter(|p| **p).count(), 2, "{mode}");
        let ran: Vec<Value> = tool.calls().into_iter().map(|a| a["path"].clone()).collect();
        let expected_ran = if mode == Mode::Propose { vec![] } else { vec![json!("src/lib.rs")] };
        assert_eq!(ran, expected_ran, "{mode}: only the unprotected write ran");
    }
    Ok(())
}

#[tokio::test]
async fn invariant_20_a_grant_for_the_tool_does_not_cover_protected_paths() -> TestResult {
    let tool = path_writer("write_file");
    // The first answer grants the whole tool; later unprotected writes run
    // without asking, but each protected one asks again.
    let approver = RecordingApprover::scripted([
        ApprovalDecision::ApproveForSession { scope: GrantScope::Tool },
        ApprovalDecision::ApproveOnce,
    ]);
    let mut session = Session::builder(writes(&["a.txt", "b.txt", ".git/config", "c.txt"]))
        .tool(tool.clone())
        .mode(Mode::Propose)
        .approver(approver.clone())
        .build()
        .await?;
    session.run("go", &mut Vec::new()).await?;
    let asked: Vec<Value> = approver.seen().into_iter().map(|r| r.arguments["path"].clone()).collect();
    assert_eq!(asked, vec![json!("a.txt"), json!(".git/config")]);
    assert_eq!(tool.calls().len(), 4);
    Ok(())
}

#[tokio::test]
async fn invariant_20_project_rules_cannot_allow_protected_paths_but_user_rules_can() -> TestResult {
    for (rule, expect_asked) in [
        (PermissionRule::tool("write_file", Permission::Allow).from_project(), true),
        (PermissionRule::tool("write_file", Permission::Allow), false),
    ] {
        let tool = path_writer("write_file");
        let approver = RecordingApprover::deny_all("no");
        let mut session = Session::builder(writes(&[".mcp.json"]))
            .tool(tool.clone())
            .mode(Mode::Propose)
            .rule(rule)
            .approver(approver.clone())
            .build()
            .await?;
        session.run("go", &mut Vec::new()).await?;
        assert_eq!(!approver.seen().is_empty(), expect_asked);
        assert_eq!(tool.calls().is_empty(), expect_asked);
    }
    Ok(())
}

#[tokio::test]
async fn invariant_20_edit_capability_rule_covers_every_tool_that_changes_files() -> TestResult {
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("write_file", json!({ "path": "a" }))
                .tool_call("edit_file", json!({ "path": "b" }))
                .tool_call("apply_patch", json!({ "path": "c" })),
        )
        .answer("done");
    let tools = ["write_file", "edit_file", "apply_patch"].map(path_writer);
    let mut builder = Session::builder(model)
        .mode(Mode::Autonomous)
        .rule(PermissionRule::capability(Capability::Edit, Permission::Deny));
    for tool in &tools {
        builder = builder.tool(tool.clone());
    }
    let mut session = builder.build().await?;
    session.run("go", &mut Vec::new()).await?;
    for (index, tool) in tools.iter().enumerate() {
        assert!(tool.calls().is_empty());
        let (text, is_error) = tool_result(session.history(), index);
        assert!(is_error && text.contains("`edit`"), "{text}");
    }
    Ok(())
}
