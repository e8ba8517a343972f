//! An embedder's program: the user's bosun configuration for a workspace (its model, MCP servers and
//! skills), a tool of its own and its own approval policy; one task run with the events printed as
//! JSON lines, then the stored session resumed. `embed DIR TASK FOLLOW-UP`
use std::sync::Arc;

use bosun_agent::{Agent, StoredSession, config::Env};
use bosun_core::permission::{ApprovalDecision, ApprovalRequest, Reason};
use bosun_core::{FnApprover, FnTool, ToolCategory, ToolDefinition, ToolOutput, event::FnSink};

/// Reads run; anything else is refused with a reason the model sees.
fn reads_only(request: &ApprovalRequest) -> ApprovalDecision {
    match request.category {
        ToolCategory::Read => ApprovalDecision::ApproveOnce,
        _ => ApprovalDecision::Deny { reason: Reason::lossy("this program allows reads only", "") },
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let [_, dir, task, follow_up] =
        std::env::args().collect::<Vec<_>>().try_into().map_err(|_| "usage: embed DIR TASK FOLLOW-UP")?;
    let schema = serde_json::json!({"type": "object", "properties": {}});
    let definition = ToolDefinition::new("last_build", "The result of the last CI build.", schema);
    let tool =
        FnTool::new(definition, ToolCategory::Read, |_| async { ToolOutput::text("build 4711 passed") });
    let agent = Agent::builder(dir).env(Env::capture()).tool(Arc::new(tool)).build().await?;
    let mut print = FnSink(|event| {
        println!("{}", serde_json::to_string(&event).unwrap_or_default());
        Ok(())
    });
    let (mut session, id) = agent.new_session(Arc::new(FnApprover(reads_only))).await?;
    println!("answer: {}", session.run(task, &mut print).await?.answer);
    drop(session);
    let (mut session, _) = agent.open(StoredSession::Id(id), Arc::new(FnApprover(reads_only))).await?;
    println!("answer: {}", session.run(follow_up, &mut print).await?.answer);
    agent.shutdown().await;
    Ok(())
}
