//! The prompt cache filled when a local model is pulled.
//!
//! Every session's prompt opens with the same system prompt, tool list and
//! examples (about 1,100 tokens for the default model); on two cores a
//! 1.5B model takes tens of seconds to process them the first time, and the
//! prompt cache on disk (bosun-local's `prompt_cache`) spares that only from
//! the second command on. So `models pull` runs one short turn, built as
//! `exec` builds it, in an empty workspace: the cache then holds that
//! opening, and the first real command in any workspace reuses it up to
//! where its prompt differs (project instructions, MCP tools, the task).
//!
//! The turn is a real session's (same prompt, tools and engine options),
//! so the cached tokens are the ones a command sends; it runs with no
//! approvals, no MCP servers and a session store of its own, deleted after.

use std::path::Path;
use std::sync::Arc;

use bosun_core::{DenyAll, NullSink};

use crate::agent::Agent;
use crate::config::{self, Env, Overrides};
use crate::error::{Context, Result};
use crate::notice::Notices;

/// The task of the warming turn: answered in a word, about nothing in the
/// workspace, so no call is asked for.
const TASK: &str = "Reply with the single word: ready.";

/// Whether `model` (a local GGUF) has a prompt cache in the data directory.
pub fn is_warm(model: &Path, env: &Env) -> bool {
    bosun_models::prompt_cache_dir(env).is_ok_and(|dir| !bosun_local::prompt_caches(&dir, model).is_empty())
}

/// Fills the prompt cache of the local model at `model` with what every
/// session's prompt opens with; returns the prompt tokens processed.
///
/// # Errors
/// When the model cannot be loaded or the turn fails.
pub async fn warm(model: &Path, env: &Env, profile: Option<&str>, notices: &Notices) -> Result<u64> {
    let scratch = tempfile::tempdir().context("cannot make a scratch workspace")?;
    let workspace_dir = scratch.path().join("workspace");
    std::fs::create_dir(&workspace_dir).context("cannot make a scratch workspace")?;
    let overrides = Overrides {
        model: Some(format!("local:{}", model.display())),
        max_rounds: Some(1),
        ..Default::default()
    };
    let mut settings = config::resolve(&workspace_dir, env, profile, &overrides)?;
    settings.sessions_db = Some(scratch.path().join("sessions.db"));
    // The cache holds what every session opens with; servers are the user's
    // own choice per workspace, and none is started to warm.
    settings.mcp_servers.clear();
    let agent = Agent::builder(&workspace_dir)
        .env(env.clone())
        .settings(settings)
        // The scratch workspace is nobody's to keep under version control.
        .notices(notices.without_advice())
        .build()
        .await?;
    let built = agent.new_session(Arc::new(DenyAll)).await;
    agent.shutdown().await;
    let (mut session, _id) = built?;
    let outcome = session.run(TASK, &mut NullSink).await.context("the warming turn failed")?;
    Ok(outcome.usage.input)
}
