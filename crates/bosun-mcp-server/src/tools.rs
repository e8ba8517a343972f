//! The two tools and what a call of each does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bosun_agent::json_events::{RunResult, result_json};
use bosun_agent::{Agent, StoredSession};
use bosun_core::{Session, TurnOptions};
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use crate::McpServerOptions;
use crate::approve::ClientApprover;
use crate::progress::Progress;

/// Starts a session on a task.
pub const TASK_TOOL: &str = "bosun_task";
/// Sends a stored session a follow-up.
pub const CONTINUE_TOOL: &str = "bosun_continue";

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

pub(crate) fn definitions() -> Vec<Tool> {
    let task = schema(json!({
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "What to do, as a person would ask it."},
            "workspace": {"type": "string", "description": "The absolute path of the folder to work in; it must be under a folder the user allowed."},
            "model": {"type": "string", "description": "PROVIDER/MODEL or local/NAME (default: the user's configuration)."},
            "mode": {"type": "string", "enum": ["read-only", "plan", "propose", "write", "autonomous"],
                     "description": "How freely bosun acts; at most as loose as the user's own mode for the workspace (default: that mode)."},
            "max_rounds": {"type": "integer", "minimum": 1, "description": "Most model rounds."},
            "max_cost": {"type": "number", "exclusiveMinimum": 0, "description": "Most dollars."}
        },
        "required": ["task", "workspace"],
        "additionalProperties": false
    }));
    let follow_up = schema(json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "The session, as bosun_task answered it."},
            "task": {"type": "string", "description": "The follow-up."}
        },
        "required": ["session_id", "task"],
        "additionalProperties": false
    }));
    vec![
        Tool::new(
            TASK_TOOL,
            "Run a coding task with bosun in a workspace on the user's machine and answer with the result. \
             Calls that need approval are asked of you (elicitation), else denied.",
            task,
        ),
        Tool::new(
            CONTINUE_TOOL,
            "Send a bosun session a follow-up task and answer with the result.",
            follow_up,
        ),
    ]
}

fn text<'a>(arguments: &'a JsonObject, name: &str) -> Result<&'a str, String> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("`{name}` is required and must be a non-empty string"))
}

/// The workspace, when it is a folder under an allowed root.
fn allowed_workspace(options: &McpServerOptions, given: &str) -> Result<PathBuf, String> {
    bosun_agent::workspace_guard::inside_roots(given, &options.allowed_roots)
}

/// `bosun_task`.
pub(crate) async fn task(
    options: &McpServerOptions,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let task = text(arguments, "task")?.to_owned();
    let workspace = allowed_workspace(options, text(arguments, "workspace")?)?;
    let mut overrides = bosun_agent::config::Overrides::default();
    overrides.model = arguments.get("model").and_then(Value::as_str).map(str::to_owned);
    overrides.max_rounds =
        arguments.get("max_rounds").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    overrides.max_cost = arguments.get("max_cost").and_then(Value::as_f64);
    let asked = arguments.get("mode").and_then(Value::as_str);
    let asked = asked.map(bosun_agent::config::parse_mode).transpose().map_err(|e| format!("{e:#}"))?;
    if let Some(mode) = asked {
        let name = mode.as_str();
        // The user's own mode for this workspace bounds the caller's.
        let settings = bosun_agent::config::resolve(&workspace, &options.env, None, &Default::default())
            .map_err(|e| format!("{e:#}"))?;
        if bosun_agent::config::looseness(mode) > bosun_agent::config::looseness(settings.mode) {
            return Err(format!(
                "mode `{name}` is looser than the user's own for this workspace (`{}`)",
                settings.mode
            ));
        }
        overrides.mode = Some(name);
    }
    let agent = build(options, &workspace, overrides).await?;
    let approver = Arc::new(ClientApprover::for_call(context));
    let outcome = match agent.new_session(approver).await {
        Ok((session, id)) => run(session, &id, task, context).await,
        Err(error) => Err(format!("{error:#}")),
    };
    agent.shutdown().await;
    outcome
}

/// `bosun_continue`.
pub(crate) async fn follow_up(
    options: &McpServerOptions,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let session = text(arguments, "session_id")?;
    let task = text(arguments, "task")?.to_owned();
    let path = bosun_store::default_path(|name| options.env.get(name).map(str::to_owned))
        .ok_or("cannot tell where sessions are kept: set BOSUN_HOME or HOME")?;
    let store = bosun_store::Store::open_read_only(&path).map_err(|e| e.to_string())?;
    let id = store.resolve_id(session).map_err(|e| e.to_string())?;
    let workspace = store.show(&id).map_err(|e| e.to_string())?.summary.workspace.unwrap_or_default();
    // The same check as a new task's: the stored path must still be allowed.
    let workspace = allowed_workspace(options, &workspace)?;
    let agent = build(options, &workspace, Default::default()).await?;
    let approver = Arc::new(ClientApprover::for_call(context));
    let outcome = match agent.open(StoredSession::Id(id), approver).await {
        Ok((session, id)) => run(session, &id, task, context).await,
        Err(error) => Err(format!("{error:#}")),
    };
    agent.shutdown().await;
    outcome
}

async fn build(
    options: &McpServerOptions,
    workspace: &Path,
    overrides: bosun_agent::config::Overrides,
) -> Result<Agent, String> {
    Agent::builder(workspace)
        .env(options.env.clone())
        .overrides(overrides)
        .notices(options.notices.clone())
        .build()
        .await
        .map_err(|e| format!("{e:#}"))
}

/// Runs one turn (and what it queues) under the call's cancellation; the
/// answer as text, the `result` line as structured content.
async fn run(
    mut session: Session,
    id: &str,
    task: String,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let started = Instant::now();
    let mut progress = Progress::for_call(context);
    let result = session.run_with(task, TurnOptions::cancel_on(context.ct.clone()), &mut progress).await;
    let line = result_json(id, &RunResult::of(&result), started.elapsed());
    let mut answer = match &result {
        Ok(outcome) => CallToolResult::success(vec![ContentBlock::text(outcome.answer.clone())]),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(format!("bosun session {id}: {error}"))]),
    };
    answer.structured_content = Some(line);
    Ok(answer)
}
