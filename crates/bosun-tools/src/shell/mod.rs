//! The `shell` tool: runs `bash -c COMMAND`, or an argv without a shell, in
//! the workspace root (MISSION.md invariant 18).
//!
//! The child leads its own process group, with stdin null and an environment
//! cleared down to a fixed UTF-8 locale and the PATH and HOME captured when
//! the tool was built (absolute, non-traversing entries only), so no API key
//! of the host process reaches it. A timeout (default 120 s, at most 20
//! minutes) and cancellation kill the whole group, as does dropping the call;
//! when the command exits on its own the group is killed too, so nothing it
//! backgrounded outlives the call. Combined output is capped, keeping head and
//! tail, and returned in every case with the exit code on the first line.
//!
//! With a [`Sandbox`] (`ShellConfig::with_sandbox`), every command runs
//! inside it (`bosun-sandbox`): writes confined, secrets hidden, network off,
//! and nothing it starts outlives the call, even a process that left the
//! group. A call may ask to run with the network on or outside the sandbox
//! (`"sandbox": "network"` or `"off"`); such a call always asks the person
//! ([`CallEffects::escalation`]). Without a sandbox, approval is the only
//! boundary: a process that leaves the group (`setsid`) escapes the kill,
//! and the command sees the whole file system.

mod analyze;
mod capture;
mod elsewhere;
pub(crate) mod group;
mod live;
mod run;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bosun_sandbox::{CallAccess, Sandbox};

use bosun_core::{
    CallEffects, CancellationPolicy, CommandLine, Tool, ToolCategory, ToolContext, ToolDefinition,
    ToolFuture, ToolOutput,
};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::limits::ToolLimits;

pub use elsewhere::{OutputEcho, ShellCall, ShellCallError, ShellRunner};

/// Searched after the captured PATH, when missing from it.
const FALLBACK_PATH: [&str; 3] = ["/usr/local/bin", "/usr/bin", "/bin"];
/// The child's locale, as `LANG` and `LC_ALL`.
pub(crate) const LOCALE: &str = "C.UTF-8";
/// Largest `timeout_ms` a call may ask for: 20 minutes.
const MAX_TIMEOUT_MS: u64 = 20 * 60 * 1000;

/// Where the shell runs and the little it inherits.
///
/// `Debug` shows the root, PATH, HOME and limits: nothing else of the host
/// environment is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    root: PathBuf,
    path: String,
    home: Option<String>,
    limits: ToolLimits,
    sandbox: Option<SharedSandbox>,
    runner: Option<elsewhere::SharedRunner>,
    echo: Option<Echo>,
}

/// Where a command's output also goes, as it arrives (the far side of a
/// call run in an editor's terminal: the terminal itself).
#[derive(Clone)]
pub(crate) struct Echo(pub(crate) OutputEcho);

impl std::fmt::Debug for Echo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Echo")
    }
}

impl PartialEq for Echo {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Echo {}

/// A sandbox shared by the shell and the hooks; equal when it is the same
/// one.
#[derive(Clone, Debug)]
struct SharedSandbox(Arc<Sandbox>);

impl PartialEq for SharedSandbox {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedSandbox {}

impl ShellConfig {
    /// A configuration running in `root`, with PATH set to
    /// `/usr/local/bin:/usr/bin:/bin`, no HOME and default limits. `root` is
    /// used as given: pass the canonical workspace root (the one the
    /// workspace tools resolve against); a root that does not exist makes
    /// every call fail to start.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            path: sanitize_path(""),
            home: None,
            limits: ToolLimits::default(),
            sandbox: None,
            runner: None,
            echo: None,
        }
    }

    /// Like [`ShellConfig::new`], with PATH and HOME captured from this
    /// process's environment, once, now. A PATH or HOME that is not UTF-8 is
    /// ignored.
    pub fn from_process_env(root: impl Into<PathBuf>) -> Self {
        let config = Self::new(root).with_home(std::env::var("HOME").ok().as_deref());
        match std::env::var("PATH") {
            Ok(path) => config.with_path(&path),
            Err(_) => config,
        }
    }

    /// Sets PATH: entries that are not absolute or contain `..` are dropped,
    /// then `/usr/local/bin`, `/usr/bin` and `/bin` are appended if missing.
    pub fn with_path(mut self, path: &str) -> Self {
        self.path = sanitize_path(path);
        self
    }

    /// Sets HOME, kept only if absolute and free of `..`.
    pub fn with_home(mut self, home: Option<&str>) -> Self {
        self.home = home.filter(|home| is_clean_absolute(home)).map(str::to_owned);
        self
    }

    /// Sets the limits (`max_output_bytes` and `shell_timeout` are used).
    pub fn with_limits(mut self, limits: ToolLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs every command (and every command hook built from this
    /// configuration) inside `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        self.sandbox = Some(SharedSandbox(sandbox));
        self
    }

    /// Hands every call the sandbox confines to `runner` (an editor's
    /// terminal), which runs it in the same sandbox elsewhere; a call
    /// asking to leave the sandbox, or any call where it confines nothing,
    /// still runs here. Command hooks always run here.
    pub fn with_runner(mut self, runner: Arc<dyn ShellRunner>) -> Self {
        self.runner = Some(elsewhere::SharedRunner(runner));
        self
    }

    /// The sandbox commands run in, if any.
    pub fn sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.sandbox.as_ref().map(|shared| &shared.0)
    }

    /// The sandbox, when it confines (not `off`).
    fn confining(&self) -> Option<&Arc<Sandbox>> {
        self.sandbox().filter(|sandbox| sandbox.confines())
    }

    /// The directory commands run in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The PATH commands get.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The HOME commands get, if any.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// The limits.
    pub fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    fn max_output(&self) -> usize {
        self.limits.max_output_bytes.clamp(1024, ToolLimits::HARD_MAX_OUTPUT_BYTES)
    }

    fn default_timeout(&self) -> Duration {
        self.limits.shell_timeout.clamp(Duration::from_millis(1), ToolLimits::HARD_MAX_SHELL_TIMEOUT)
    }
}

/// What the tool's description says of the sandbox, as `policy` has it.
fn sandbox_sentence(policy: &bosun_sandbox::SandboxPolicy) -> String {
    let writes = if policy.mode == bosun_sandbox::SandboxMode::ReadOnly {
        "cannot change files (only the call's own /tmp)"
    } else {
        "write only inside the workspace (not .git, .bosun and other protected paths) and the call's own /tmp"
    };
    let (network, escape) = if policy.network {
        ("", "Set `sandbox` to \"off\" (no sandbox)")
    } else {
        (", and have no network", "Set `sandbox` to \"network\" (network on) or \"off\" (no sandbox)")
    };
    format!(
        " Commands run in a sandbox: they {writes}, cannot read the user's secrets{network}. {escape} only \
         when the sandbox refused something the call needs; that asks the person first."
    )
}

/// Absolute, without `..`, without NUL, and usable in a `:`-separated list.
fn is_clean_absolute(path: &str) -> bool {
    !path.contains(['\0', ':'])
        && Path::new(path).is_absolute()
        && !Path::new(path).components().any(|component| component == Component::ParentDir)
}

fn sanitize_path(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for entry in path.split(':').chain(FALLBACK_PATH) {
        if is_clean_absolute(entry) && !kept.contains(&entry) {
            kept.push(entry);
        }
    }
    kept.join(":")
}

/// The `shell` tool.
#[derive(Debug)]
pub struct ShellTool {
    config: ShellConfig,
    definition: ToolDefinition,
}

impl ShellTool {
    /// The tool, running commands as `config` says.
    pub fn new(config: ShellConfig) -> Self {
        let description = format!(
            "Runs a command in the workspace root and returns its exit code (first line) and its combined \
             stdout and stderr. `command` as a string runs with `bash -c`; as an array of strings it runs \
             that program with those arguments, without a shell. Non-interactive: stdin is empty and the \
             environment holds only PATH, HOME and a UTF-8 locale. Output over {} bytes is cut in the \
             middle, keeping the start and the end. Times out after {} unless `timeout_ms` is given (at \
             most 20 minutes); on timeout the command and everything it started are killed and the output \
             so far is returned.{}",
            config.max_output(),
            run::seconds(config.default_timeout()),
            config.confining().map(|sandbox| sandbox_sentence(sandbox.policy())).unwrap_or_default(),
        );
        let parameters = json!({
            "type": "object",
            "properties": {
                "command": {
                    "description": "A bash command line, or a program and its arguments.",
                    "anyOf": [
                        { "type": "string", "minLength": 1 },
                        { "type": "array", "items": { "type": "string" }, "minItems": 1 }
                    ]
                },
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "Milliseconds before the command is killed."
                },
                "sandbox": {
                    "type": "string",
                    "enum": ["network", "off"],
                    "description": "Only when the sandbox refused something this call needs: \"network\" runs it \
                                    with the network on, \"off\" outside the sandbox. Always asks the person."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        });
        Self { definition: ToolDefinition::new("shell", description, parameters), config }
    }

    /// The configuration.
    pub fn config(&self) -> &ShellConfig {
        &self.config
    }

    fn command(&self, invocation: Invocation) -> Command {
        let mut command = match invocation {
            Invocation::Script(script) => {
                let mut command = Command::new("bash");
                command.arg("-c").arg(script);
                command
            }
            Invocation::Argv(program, arguments) => {
                let mut command = Command::new(program);
                command.args(arguments);
                command
            }
        };
        command.current_dir(&self.config.root).env_clear().env("PATH", &self.config.path);
        if let Some(home) = &self.config.home {
            command.env("HOME", home);
        }
        command.env("LANG", LOCALE).env("LC_ALL", LOCALE);
        command
    }
}

impl Tool for ShellTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Execute
    }

    /// `FinishOnceStarted`, although dropping the call would be safe (the
    /// group guard kills everything): the tool watches the cancellation token
    /// itself, kills the group at once and returns the output so far marked
    /// `killed: cancelled`, which tells the model more than a dropped call.
    /// The session's wait is short: the kill plus at most a two-second drain.
    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::FinishOnceStarted
    }

    /// The command line the call runs: a string parsed as bash, an argv run
    /// directly (wrappers in either are seen through); arguments that are
    /// not valid are an opaque line, never "no command".
    fn effects(&self, arguments: &Value) -> CallEffects {
        let parsed = Arguments::parse(arguments);
        let effects = CallEffects::command(match &parsed {
            Ok(Arguments { invocation: Invocation::Script(script), .. }) => analyze::script(script),
            Ok(Arguments { invocation: Invocation::Argv(program, rest), .. }) => {
                analyze::argv(&[vec![program.clone()], rest.clone()].concat())
            }
            Err(error) => CommandLine::opaque(format!("invalid arguments: {error}")),
        });
        match (&parsed, self.config.confining()) {
            (Ok(Arguments { escape: Some(escape), .. }), Some(_)) => effects.with_escalation(escape.why()),
            _ => effects,
        }
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let Arguments { invocation, timeout, escape } = match Arguments::parse(&arguments) {
                Ok(arguments) => arguments,
                Err(error) => return ToolOutput::error(error.to_string()),
            };
            if context.cancel.is_cancelled() {
                return ToolOutput::error("not started: cancelled");
            }
            if let Some((runner, call)) = self.config.elsewhere(&arguments, escape == Some(Escape::Off)) {
                return runner.run(call, context).await;
            }
            let timeout = timeout.unwrap_or_else(|| self.config.default_timeout());
            let mut command = self.command(invocation);
            let sandboxed = match (self.config.sandbox(), escape) {
                (Some(_), Some(Escape::Off)) => Ok(bosun_sandbox::unconfined(&mut command)),
                (Some(sandbox), Some(Escape::Network)) => sandbox.prepare(&mut command, CallAccess::Network),
                (Some(sandbox), None) => sandbox.prepare(&mut command, CallAccess::Policy),
                (None, _) => Ok(bosun_sandbox::SandboxedCall::default()),
            };
            let sandboxed = match sandboxed {
                Ok(sandboxed) => sandboxed,
                Err(error) => return ToolOutput::error(format!("failed to start: {error}")),
            };
            let echo = self.config.echo.clone();
            run::run(command, timeout, self.config.max_output(), &context, sandboxed, echo).await
        })
    }
}

/// What to run.
#[derive(Debug, PartialEq, Eq)]
enum Invocation {
    /// Run with `bash -c`.
    Script(String),
    /// A program and its arguments, run without a shell.
    Argv(String, Vec<String>),
}

/// A call's request to leave the sandbox's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escape {
    /// The sandbox with the network on.
    Network,
    /// No sandbox.
    Off,
}

impl Escape {
    fn why(self) -> String {
        match self {
            Self::Network => "the call asks to run with the network on".to_owned(),
            Self::Off => "the call asks to run outside the sandbox".to_owned(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Arguments {
    invocation: Invocation,
    timeout: Option<Duration>,
    escape: Option<Escape>,
}

/// Arguments the schema should have refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum ArgumentsError {
    #[error("`command` must be a non-empty string or a non-empty array of strings")]
    Command,
    #[error("`timeout_ms` must be an integer from 1 to {MAX_TIMEOUT_MS}")]
    Timeout,
    #[error("`sandbox` must be \"network\" or \"off\"")]
    Sandbox,
    #[error("unknown argument `{0}`; expected `command` and optionally `timeout_ms` and `sandbox`")]
    Unknown(String),
}

impl Arguments {
    fn parse(arguments: &Value) -> Result<Self, ArgumentsError> {
        let object = arguments.as_object().ok_or(ArgumentsError::Command)?;
        if let Some(unknown) =
            object.keys().find(|key| !matches!(key.as_str(), "command" | "timeout_ms" | "sandbox"))
        {
            return Err(ArgumentsError::Unknown(unknown.clone()));
        }
        let invocation = match object.get("command") {
            Some(Value::String(script)) if !script.is_empty() => Invocation::Script(script.clone()),
            Some(Value::Array(items)) => {
                let mut argv = items.iter().map(|item| item.as_str().map(str::to_owned));
                let program = argv.next().flatten().ok_or(ArgumentsError::Command)?;
                let rest = argv.collect::<Option<Vec<_>>>().ok_or(ArgumentsError::Command)?;
                Invocation::Argv(program, rest)
            }
            _ => return Err(ArgumentsError::Command),
        };
        let timeout = match object.get("timeout_ms") {
            None | Some(Value::Null) => None,
            Some(value) => {
                // The schema's `integer` admits `1000.0`.
                let whole = value.as_f64().filter(|ms| ms.fract() == 0.0 && *ms >= 0.0).map(|ms| ms as u64);
                let millis = value.as_u64().or(whole).filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms));
                Some(Duration::from_millis(millis.ok_or(ArgumentsError::Timeout)?))
            }
        };
        let escape = match object.get("sandbox") {
            None | Some(Value::Null) => None,
            Some(Value::String(value)) if value == "network" => Some(Escape::Network),
            Some(Value::String(value)) if value == "off" => Some(Escape::Off),
            Some(_) => return Err(ArgumentsError::Sandbox),
        };
        Ok(Self { invocation, timeout, escape })
    }
}

#[cfg(test)]
mod tests;
