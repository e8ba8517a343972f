//! The OS sandbox of a session (`bosun-sandbox`), from the settings: one per
//! workspace and policy, shared by the shell, `!cmd`, command hooks, stdio
//! MCP servers and sub-agents' tools, so every process bosun starts runs in
//! the same boundary.
//!
//! Built on first use and kept for the process, since the session is
//! assembled in several places (tools, hooks, MCP servers, children). Where
//! the kernel lacks Landlock or seccomp, this says so once; commands then
//! run unconfined, except in `autonomous` mode, which refuses to start
//! unless the person chose `--sandbox off` themselves.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Result, bail};
use bosun_core::Mode;
use bosun_core::permission::{PROTECTED_DIRS, PROTECTED_FILES};
use bosun_sandbox::{Sandbox, SandboxError, SandboxPolicy};

use crate::config::{Env, Settings};
use crate::notice::Notices;

/// Sandboxes built so far, by policy.
static BUILT: Mutex<Vec<(SandboxPolicy, Arc<Sandbox>)>> = Mutex::new(Vec::new());

/// The policy for `workspace` under `settings`.
pub fn policy(workspace: &Path, env: &Env, settings: &Settings) -> SandboxPolicy {
    let configured = &settings.sandbox;
    let mut policy = SandboxPolicy::new(configured.mode, workspace)
        .with_network(configured.network)
        .with_writable_roots(configured.writable_roots.iter().cloned())
        .with_protected_names(PROTECTED_DIRS.iter().chain(PROTECTED_FILES).copied())
        .with_deny_read(configured.deny_read.iter().cloned());
    if let (Some(home), config_home) = user_folders(env) {
        policy = policy.with_default_secrets(&home, config_home.as_deref());
    }
    policy
}

/// The user's home and config folders (`HOME`, `XDG_CONFIG_HOME`), when
/// set to absolute paths: where the secrets a sandbox hides are.
pub(crate) fn user_folders(env: &Env) -> (Option<PathBuf>, Option<PathBuf>) {
    let absolute = |name: &str| env.get(name).map(PathBuf::from).filter(|path| path.is_absolute());
    (absolute("HOME"), absolute("XDG_CONFIG_HOME"))
}

/// The sandbox for `workspace` under `settings`, built once per policy.
pub fn for_workspace(
    workspace: &Path,
    env: &Env,
    settings: &Settings,
    notices: &Notices,
) -> Result<Arc<Sandbox>> {
    let policy = policy(workspace, env, settings);
    let off = policy.workspace.clone();
    let (sandbox, new) = shared(policy, |missing| {
        notices.warn(without_sandbox(settings.mode, missing)?);
        Ok(Sandbox::off(off))
    })?;
    // The namespace probe runs beside start-up (`Sandbox::new`); its
    // verdict is told when it comes, not waited for here.
    if new && sandbox.confines() {
        let (probed, later) = (Arc::clone(&sandbox), notices.clone());
        let told = std::thread::Builder::new()
            .name("bosun-sandbox-notice".into())
            .spawn(move || tell_if_partial(&probed, &later));
        if told.is_err() {
            tell_if_partial(&sandbox, notices);
        }
    }
    Ok(sandbox)
}

/// Says so when the kernel lets the sandbox hold only partly (waiting for
/// the namespace probe).
fn tell_if_partial(sandbox: &Sandbox, notices: &Notices) {
    if let Some(partial) = sandbox.support().partial() {
        notices.warn(format!("the sandbox holds only partly: {partial}"));
    }
}

/// The sandbox for `policy`, built once per policy and process, and
/// whether this call built it. Where the kernel has none, `unsupported`
/// says what to run in instead (or fails).
pub(crate) fn shared(
    policy: SandboxPolicy,
    unsupported: impl FnOnce(&str) -> Result<Sandbox>,
) -> Result<(Arc<Sandbox>, bool)> {
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, sandbox)) = built.iter().find(|(known, _)| *known == policy) {
        return Ok((Arc::clone(sandbox), false));
    }
    let sandbox = match Sandbox::new(policy.clone()) {
        Ok(sandbox) => sandbox,
        Err(SandboxError::Unsupported(missing)) => unsupported(&missing)?,
        Err(error) => return Err(error.into()),
    };
    let sandbox = Arc::new(sandbox);
    built.push((policy, Arc::clone(&sandbox)));
    Ok((sandbox, true))
}

/// What happens where the kernel has no sandbox: the notice, or, in
/// `autonomous` mode (which runs commands without asking), a refusal to
/// start. A person who wants that passes `--sandbox off`, which never gets
/// here.
fn without_sandbox(mode: Mode, missing: &str) -> Result<String> {
    if mode == Mode::Autonomous {
        bail!(
            "the sandbox is not available ({missing}); autonomous mode runs commands without asking, so it needs \
             one. Pass `--sandbox off` to run unconfined anyway, or choose another mode"
        );
    }
    Ok(format!(
        "the sandbox is not available ({missing}); commands run unconfined, with approval as the only boundary"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_sandbox_autonomous_mode_refuses_and_the_others_say_so() {
        let refused = without_sandbox(Mode::Autonomous, "this kernel has no Landlock").unwrap_err();
        assert!(format!("{refused}").contains("--sandbox off"), "{refused}");
        for mode in [Mode::ReadOnly, Mode::Propose, Mode::Write] {
            let notice = without_sandbox(mode, "this kernel has no seccomp").unwrap();
            assert!(notice.contains("no seccomp") && notice.contains("unconfined"), "{notice}");
        }
    }

    #[test]
    fn the_policy_hides_the_users_secrets_and_protects_the_workspaces_config() {
        let env = Env::from_pairs(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/xdg")]);
        let work = tempfile::tempdir().unwrap();
        let settings = crate::config::resolve(work.path(), &env, None, &Default::default()).unwrap();
        let policy = policy(work.path(), &env, &settings);
        assert_eq!(policy.mode, bosun_sandbox::SandboxMode::WorkspaceWrite);
        assert!(!policy.network);
        for hidden in ["/home/u/.ssh", "/home/u/.config/bosun", "/xdg/bosun"] {
            assert!(policy.deny_read.contains(&PathBuf::from(hidden)), "{hidden}");
        }
        for name in [".git", ".bosun", ".claude", ".mcp.json", "AGENTS.md"] {
            assert!(policy.protected_names.iter().any(|n| n == name), "{name}");
        }
    }
}
