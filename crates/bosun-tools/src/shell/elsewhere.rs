//! A shell call run by another process than bosun's own (an editor's
//! terminal, `bosun acp`), still inside bosun's sandbox (invariant 18).
//!
//! A [`ShellRunner`] receives the whole call as a [`ShellCall`]: the
//! arguments the person approved and everything the tool would run them
//! with (root, PATH, HOME, limits, the sandbox's policy). The runner starts a
//! process that hands it to [`ShellCall::run`] (the CLI's hidden
//! `bosun sandboxed-shell`), which builds the same sandbox from the policy
//! and runs the call through the same [`ShellTool`], so the rules, the
//! cleared environment, the group kill, the caps and the result's shape are
//! one code path. A call that would not be confined (no sandbox on this
//! kernel, or one asking to run outside it) never goes to a runner.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bosun_core::{Tool, ToolContext, ToolFuture, ToolOutput};
use bosun_sandbox::{Sandbox, SandboxPolicy};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ShellConfig, ShellTool};
use crate::limits::ToolLimits;

/// Where a command's output also goes as it arrives.
pub type OutputEcho = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// One approved shell call and what it runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellCall {
    /// The call's arguments, as the tool's schema has them.
    pub arguments: Value,
    /// The directory it runs in (the workspace root).
    pub root: PathBuf,
    /// PATH.
    pub path: String,
    /// HOME, if any.
    pub home: Option<String>,
    /// Most bytes of output returned.
    pub max_output_bytes: usize,
    /// The timeout when the call gives none, in milliseconds.
    pub timeout_ms: u64,
    /// The sandbox it must run in.
    pub policy: SandboxPolicy,
}

/// Why a [`ShellCall`] was not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellCallError {
    /// The sandbox could not be built here.
    #[error("the sandbox cannot be built: {0}")]
    Sandbox(#[from] bosun_sandbox::SandboxError),
    /// The policy confines nothing: such a call is never handed over.
    #[error("refused: a shell call run elsewhere must run inside the sandbox")]
    Unconfined,
}

impl ShellCall {
    /// Runs the call here, inside a sandbox built from its policy, as
    /// [`ShellTool`] runs it.
    ///
    /// # Errors
    /// When the sandbox cannot be built or would confine nothing: nothing
    /// is run then.
    pub async fn run(self, context: ToolContext) -> Result<ToolOutput, ShellCallError> {
        self.run_echoing(context, None).await
    }

    /// [`ShellCall::run`], the command's output also handed to `echo` as it
    /// arrives (the terminal it runs in shows it live).
    ///
    /// # Errors
    /// As [`ShellCall::run`].
    pub async fn run_echoing(
        self,
        context: ToolContext,
        echo: Option<OutputEcho>,
    ) -> Result<ToolOutput, ShellCallError> {
        if self.arguments.get("sandbox").and_then(Value::as_str) == Some("off") {
            return Err(ShellCallError::Unconfined);
        }
        let sandbox = Sandbox::new(self.policy)?;
        if !sandbox.confines() {
            return Err(ShellCallError::Unconfined);
        }
        let limits = ToolLimits::default()
            .with_max_output_bytes(self.max_output_bytes)
            .with_shell_timeout(Duration::from_millis(self.timeout_ms));
        let config = ShellConfig::new(self.root)
            .with_path(&self.path)
            .with_home(self.home.as_deref())
            .with_limits(limits)
            .with_sandbox(Arc::new(sandbox));
        // Without a runner: this process is the "elsewhere".
        let config = ShellConfig { echo: echo.map(super::Echo), ..config };
        Ok(ShellTool::new(config).execute(self.arguments, context).await)
    }
}

/// Runs a [`ShellCall`] in another process and answers with what
/// [`ShellCall::run`] returned there.
pub trait ShellRunner: Send + Sync + std::fmt::Debug {
    /// Runs `call`; `context.cancel` firing must stop it.
    fn run<'a>(&'a self, call: ShellCall, context: ToolContext) -> ToolFuture<'a>;
}

/// A runner shared by clones of a configuration; equal when it is the same
/// one.
#[derive(Clone, Debug)]
pub(super) struct SharedRunner(pub(super) Arc<dyn ShellRunner>);

impl PartialEq for SharedRunner {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedRunner {}

impl ShellConfig {
    /// The call as a runner elsewhere receives it, when it may go there:
    /// the sandbox confines and the call does not ask to leave it.
    pub(super) fn elsewhere(
        &self,
        arguments: &Value,
        unconfined: bool,
    ) -> Option<(&Arc<dyn ShellRunner>, ShellCall)> {
        let runner = &self.runner.as_ref()?.0;
        let sandbox = self.confining()?;
        if unconfined {
            return None;
        }
        let call = ShellCall {
            arguments: arguments.clone(),
            root: self.root.clone(),
            path: self.path.clone(),
            home: self.home.clone(),
            max_output_bytes: self.max_output(),
            timeout_ms: u64::try_from(self.default_timeout().as_millis()).unwrap_or(u64::MAX),
            policy: sandbox.policy().clone(),
        };
        Some((runner, call))
    }
}
