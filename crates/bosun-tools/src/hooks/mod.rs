//! Command hooks: a [`SessionHooks`] that runs a shell command at one
//! point of a session's life, in the protocol Claude Code's hooks are
//! written in (docs/hooks.md), so the scripts people already have run
//! unchanged.
//!
//! The command runs as `bash -c COMMAND` in the workspace root, in its own
//! process group, with the shell tool's cleared environment (PATH, HOME, a
//! UTF-8 locale) plus `CLAUDE_PROJECT_DIR` and `BOSUN_PROJECT_DIR`, both the
//! workspace root. It reads one JSON object on stdin (`input.rs`); its exit
//! code and output decide (`decide.rs`). Its stdout and stderr are bounded
//! and the group is killed when the run ends or is dropped (`process.rs`).
//!
//! A hook only narrows: it may block, ask, replace a call's arguments (the
//! session checks them again) or add a note; an `allow` or `approve` it
//! prints is ignored.
//!
//! The matcher (`matcher.rs`) is checked inside [`SessionHooks::run`]: a
//! call the matcher does not take returns [`HookDecision::Continue`] at
//! once, without starting anything (`wants` sees only the point).

mod decide;
mod input;
mod matcher;
mod process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_core::hooks::{
    DEFAULT_HOOK_TIMEOUT, HookDecision, HookError, HookFuture, HookInput, HookPoint, SessionHooks,
};
use tokio::process::Command;

pub use matcher::{MAX_MATCHER_BYTES, Matcher};
pub use process::{MAX_STDERR_BYTES, MAX_STDOUT_BYTES};

use crate::shell::{LOCALE, ShellConfig};

/// Longest timeout a command hook may have: 10 minutes.
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest command accepted, in bytes.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Characters of the command shown in a hook's name.
const NAME_COMMAND_CHARS: usize = 60;
/// Characters of the matcher shown in a hook's name.
const NAME_MATCHER_CHARS: usize = 40;

/// A command hook's configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HookConfigError {
    /// The command is empty or only blanks.
    #[error("the hook's command is empty")]
    EmptyCommand,
    /// The command is longer than [`MAX_COMMAND_BYTES`].
    #[error("the hook's command is longer than {MAX_COMMAND_BYTES} bytes")]
    LongCommand,
    /// A point only library hooks are asked at.
    #[error("`{0}` is for library hooks only; a command hook cannot be configured there")]
    LibraryOnly(HookPoint),
    /// The matcher is not a regex bosun can use.
    #[error("the matcher `{pattern}` is not usable: {reason}")]
    Matcher {
        /// The pattern as written (cut when long).
        pattern: String,
        /// Why.
        reason: String,
    },
    /// The timeout is zero or over [`MAX_HOOK_TIMEOUT`].
    #[error("a hook's timeout must be from 1 ms to {} s, not {} ms", MAX_HOOK_TIMEOUT.as_secs(), .0.as_millis())]
    Timeout(Duration),
}

/// What a command hook runs, and when: everything but the session it runs
/// for. Checked as it is built, so a configuration error is found when the
/// configuration is read.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandHookSpec {
    point: HookPoint,
    matcher: Option<Matcher>,
    command: String,
    timeout: Duration,
    required: bool,
    number: Option<usize>,
}

impl CommandHookSpec {
    /// Runs `command` at `point`, for every call (no matcher), advisory,
    /// with [`DEFAULT_HOOK_TIMEOUT`].
    pub fn new(point: HookPoint, command: impl Into<String>) -> Result<Self, HookConfigError> {
        let command = command.into();
        if command.trim().is_empty() {
            return Err(HookConfigError::EmptyCommand);
        }
        if command.len() > MAX_COMMAND_BYTES {
            return Err(HookConfigError::LongCommand);
        }
        if matches!(point, HookPoint::BeforeModel | HookPoint::AfterModel) {
            return Err(HookConfigError::LibraryOnly(point));
        }
        Ok(Self {
            point,
            matcher: None,
            command,
            timeout: DEFAULT_HOOK_TIMEOUT,
            required: false,
            number: None,
        })
    }

    /// Runs only for what `pattern` matches (see [`Matcher`]): the tool at
    /// `PreToolUse` and `PostToolUse`, `startup` or `resume` at
    /// `SessionStart`, `auto` or `manual` at `PreCompact`. Other points take
    /// no matcher, and one given there is ignored ([`Self::takes_matcher`]).
    pub fn with_matcher(mut self, pattern: &str) -> Result<Self, HookConfigError> {
        let matcher = Matcher::new(pattern)?;
        self.matcher = (!matcher.matches_all()).then_some(matcher);
        Ok(self)
    }

    /// Sets how long one run may take, from 1 ms to [`MAX_HOOK_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, HookConfigError> {
        if timeout.is_zero() || timeout > MAX_HOOK_TIMEOUT {
            return Err(HookConfigError::Timeout(timeout));
        }
        self.timeout = timeout;
        Ok(self)
    }

    /// Makes the hook required: its timing out fails the turn, where an
    /// advisory one is switched off with a warning.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Numbers the hook in its name (`PreToolUse:shell#2 (…)`), so that two
    /// hooks of one point are told apart.
    pub fn numbered(mut self, number: usize) -> Self {
        self.number = Some(number);
        self
    }

    /// Whether `point` takes a matcher.
    pub fn takes_matcher(point: HookPoint) -> bool {
        matches!(
            point,
            HookPoint::PreToolUse | HookPoint::PostToolUse | HookPoint::SessionStart | HookPoint::PreCompact
        )
    }

    /// The point.
    pub fn point(&self) -> HookPoint {
        self.point
    }

    /// The matcher, unless it matches everything.
    pub fn matcher(&self) -> Option<&Matcher> {
        self.matcher.as_ref()
    }

    /// The command.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// How long one run may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the hook is required.
    pub fn required(&self) -> bool {
        self.required
    }

    /// The name shown to the user: `POINT[:MATCHER][#N] (COMMAND)`, the
    /// matcher and the command's first line cut short, control characters
    /// replaced.
    pub fn name(&self) -> String {
        let mut name = self.point.name().to_owned();
        if let Some(matcher) = self.matcher.as_ref().filter(|_| Self::takes_matcher(self.point)) {
            name.push(':');
            name.push_str(&matcher::cut(matcher.pattern(), NAME_MATCHER_CHARS));
        }
        if let Some(number) = self.number {
            name.push_str(&format!("#{number}"));
        }
        let first_line = self.command.trim().lines().next().unwrap_or_default();
        let mut shown = matcher::cut(first_line, NAME_COMMAND_CHARS);
        if self.command.trim().lines().nth(1).is_some() && !shown.ends_with('…') {
            shown.push('…');
        }
        name.push_str(&format!(" ({shown})"));
        name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
    }

    /// Whether a run for `input` goes ahead: its point, and its matcher.
    fn takes(&self, input: &HookInput) -> bool {
        if input.point() != self.point {
            return false;
        }
        match (&self.matcher, input::matched_name(input)) {
            (Some(matcher), Some(name)) => matcher.is_match(name),
            _ => true,
        }
    }
}

/// A command hook of one session: a [`CommandHookSpec`] with the session
/// id, the workspace root and the PATH and HOME it runs with.
#[derive(Debug)]
pub struct CommandHook {
    spec: CommandHookSpec,
    name: String,
    session_id: String,
    root: PathBuf,
    path: String,
    home: Option<String>,
    /// The shell's sandbox: a hook's command is confined like a call's.
    sandbox: Option<std::sync::Arc<bosun_sandbox::Sandbox>>,
}

impl CommandHook {
    /// `spec` for the session `session_id`, run in `root` (the canonical
    /// workspace root) with `shell`'s PATH and HOME.
    pub fn new(
        spec: CommandHookSpec,
        session_id: impl Into<String>,
        root: &Path,
        shell: &ShellConfig,
    ) -> Self {
        Self {
            name: spec.name(),
            spec,
            session_id: session_id.into(),
            root: root.to_path_buf(),
            path: shell.path().to_owned(),
            home: shell.home().map(str::to_owned),
            sandbox: shell.sandbox().cloned(),
        }
    }

    /// What it runs, and when.
    pub fn spec(&self) -> &CommandHookSpec {
        &self.spec
    }

    fn command(&self) -> Command {
        let mut command = Command::new("bash");
        command.arg("-c").arg(&self.spec.command).current_dir(&self.root).env_clear();
        command.env("PATH", &self.path);
        if let Some(home) = &self.home {
            command.env("HOME", home);
        }
        command
            .env("LANG", LOCALE)
            .env("LC_ALL", LOCALE)
            .env("CLAUDE_PROJECT_DIR", &self.root)
            .env("BOSUN_PROJECT_DIR", &self.root);
        command
    }
}

impl SessionHooks for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn wants(&self, point: HookPoint) -> bool {
        point == self.spec.point
    }

    fn wants_input(&self, input: &HookInput) -> bool {
        self.spec.takes(input)
    }

    fn required(&self) -> bool {
        self.spec.required
    }

    fn timeout(&self) -> Duration {
        self.spec.timeout
    }

    fn run<'a>(&'a self, input: &'a HookInput) -> HookFuture<'a> {
        Box::pin(async move {
            if !self.spec.takes(input) {
                return Ok(HookDecision::Continue);
            }
            let json = input::stdin_json(input, &self.session_id, &self.root);
            let mut stdin = serde_json::to_vec(&json)
                .map_err(|error| HookError::new(format!("hook {}: its input: {error}", self.name)))?;
            stdin.push(b'\n');
            let mut command = self.command();
            // Dropped after the run: the call's temporary folder goes with it.
            let sandboxed = match &self.sandbox {
                Some(sandbox) => {
                    sandbox.prepare(&mut command, bosun_sandbox::CallAccess::Policy).map_err(|error| {
                        HookError::new(format!("hook {} could not be started: {error}", self.name))
                    })?
                }
                None => bosun_sandbox::unconfined(&mut command),
            };
            let ran = process::run(command, stdin).await;
            for note in sandboxed.finish() {
                tracing::warn!(hook = %self.name, "{note}");
            }
            let ran = ran.map_err(|error| {
                HookError::new(format!("hook {} could not be started: {error}", self.name))
            })?;
            decide::decide(&self.name, self.spec.point, &ran)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_name_says_point_matcher_number_and_command_in_short() {
        let spec = CommandHookSpec::new(HookPoint::PreToolUse, "./check.sh --all")
            .unwrap()
            .with_matcher("Bash")
            .unwrap()
            .numbered(1);
        assert_eq!(spec.name(), "PreToolUse:Bash#1 (./check.sh --all)");
        let long =
            CommandHookSpec::new(HookPoint::Stop, format!("echo {}\nexit 0", "x".repeat(200))).unwrap();
        let name = long.name();
        assert!(
            name.starts_with("Stop (echo xxx") && name.ends_with("…)") && name.chars().count() < 80,
            "{name}"
        );
        let star = CommandHookSpec::new(HookPoint::PostToolUse, "true").unwrap().with_matcher("*").unwrap();
        assert_eq!((star.name().as_str(), star.matcher()), ("PostToolUse (true)", None));
    }

    #[test]
    fn what_cannot_run_is_refused_when_configured() {
        assert_eq!(CommandHookSpec::new(HookPoint::Stop, "  "), Err(HookConfigError::EmptyCommand));
        assert_eq!(
            CommandHookSpec::new(HookPoint::BeforeModel, "true"),
            Err(HookConfigError::LibraryOnly(HookPoint::BeforeModel))
        );
        let spec = CommandHookSpec::new(HookPoint::Stop, "true").unwrap();
        assert!(spec.clone().with_timeout(Duration::ZERO).is_err());
        assert!(spec.clone().with_timeout(MAX_HOOK_TIMEOUT + Duration::from_secs(1)).is_err());
        assert_eq!(spec.with_timeout(Duration::from_secs(5)).unwrap().timeout(), Duration::from_secs(5));
    }
}
