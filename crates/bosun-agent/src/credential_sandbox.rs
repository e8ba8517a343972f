//! The sandbox credential commands run in: Azure's `token_command` and an
//! AWS profile's `credential_process` (MISSION.md invariant 18: every
//! process bosun starts is confined).
//!
//! These are the user's own programs, named only in the user's own files
//! (a project's `providers` table cannot name one, trusted or not), and
//! their job is to read the user's cloud credentials and reach the
//! cloud's sign-in service. So, unlike the shell's sandbox, they have the
//! network and read their clouds' folders; what they cannot do is write
//! anywhere but those folders (token caches) and their own temporary
//! folder, read the user's other secrets (SSH keys, other agents'
//! credentials, browser profiles), or outlive bosun. The sandbox is built
//! when the first command runs: most sessions run none. They run in a
//! folder of bosun's, never in the project, so no file of the repository is
//! in their way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_providers::CommandConfiner;
use bosun_sandbox::{CallAccess, Sandbox, SandboxMode, SandboxPolicy};

use crate::config::{Env, Settings};
use crate::error::Result;

/// Where under the home folder the credential tools keep what a credential
/// command reads and caches: left readable, and writable when present.
pub const CREDENTIAL_FOLDERS: &[&str] = &[
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/op",
    ".gnupg",
    ".password-store",
    ".vault-token",
    ".local/share/keyrings",
];

/// Runs each credential command confined by one sandbox, built at the
/// first, in bosun's own folder.
#[derive(Debug)]
struct Confiner {
    /// Where the user's folders are, and what else they hide; `None` when
    /// the user turned the sandbox off.
    user: Option<UserFolders>,
    /// `None` where bosun keeps no files (no home): a private temporary
    /// folder is made instead.
    folder: Option<PathBuf>,
    built: std::sync::OnceLock<Built>,
}

/// What the policy is made of, once the folder the commands run in exists.
#[derive(Debug)]
struct UserFolders {
    home: Option<PathBuf>,
    config_home: Option<PathBuf>,
    deny_read: Vec<PathBuf>,
}

#[derive(Debug)]
struct Built {
    sandbox: Arc<Sandbox>,
    folder: PathBuf,
    /// Removed with the confiner.
    _temporary: Option<tempfile::TempDir>,
}

impl Confiner {
    fn built(&self) -> Result<&Built, String> {
        if let Some(built) = self.built.get() {
            return Ok(built);
        }
        let (folder, temporary) = match &self.folder {
            Some(folder) => {
                std::fs::create_dir_all(folder)
                    .map_err(|e| format!("cannot make the folder it runs in ({}): {e}", folder.display()))?;
                (folder.canonicalize().unwrap_or_else(|_| folder.clone()), None)
            }
            None => {
                let temporary = tempfile::Builder::new()
                    .prefix("bosun-credential-commands-")
                    .tempdir()
                    .map_err(|e| format!("cannot make a folder for it to run in: {e}"))?;
                (temporary.path().to_path_buf(), Some(temporary))
            }
        };
        let sandbox = match &self.user {
            None => Arc::new(Sandbox::off(&folder)),
            Some(user) => {
                let policy =
                    policy(user.home.as_deref(), user.config_home.as_deref(), &folder, &user.deny_read);
                // Where the kernel has none, the session's own sandbox has said so.
                let off = folder.clone();
                crate::sandboxing::shared(policy, |_| Ok(Sandbox::off(off))).map_err(|e| e.to_string())?.0
            }
        };
        Ok(self.built.get_or_init(|| Built { sandbox, folder, _temporary: temporary }))
    }
}

impl CommandConfiner for Confiner {
    fn confine(&self, command: &mut tokio::process::Command) -> Result<Box<dyn Send>, String> {
        let built = self.built()?;
        command.current_dir(&built.folder);
        let call = built.sandbox.prepare(command, CallAccess::Network).map_err(|e| e.to_string())?;
        Ok(Box::new(call))
    }
}

/// The policy credential commands run under, for the user whose home is
/// `home`: writes only in `folder` and the credential folders that exist,
/// the network on, the secrets no credential tool needs hidden (the
/// shell's list, less the credential folders), and `deny_read`.
pub fn policy(
    home: Option<&Path>,
    config_home: Option<&Path>,
    folder: &Path,
    deny_read: &[PathBuf],
) -> SandboxPolicy {
    let mut policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, folder).with_network(true);
    if let Some(home) = home {
        let credential_folders: Vec<PathBuf> = CREDENTIAL_FOLDERS
            .iter()
            .map(|name| home.join(name))
            .chain(config_home.map(|dir| dir.join("gcloud")))
            .collect();
        policy = policy.with_default_secrets(home, config_home);
        policy.deny_read.retain(|path| !credential_folders.contains(path));
        policy = policy.with_writable_roots(credential_folders.into_iter().filter(|path| path.is_dir()));
    }
    policy.with_deny_read(deny_read.iter().cloned())
}

/// The confiner for the credential commands of a session under `settings`:
/// the sandbox above, or none at all when the user turned the sandbox off.
/// Nothing is made, and no folder looked at, until the first command runs.
pub fn confiner(settings: &Settings, env: &Env) -> Arc<dyn CommandConfiner> {
    let folder = crate::parts::store_path(settings, env)
        .ok()
        .and_then(|store| Some(store.parent()?.join("credential-commands")));
    let user = (settings.sandbox.mode != SandboxMode::Off).then(|| {
        let (home, config_home) = crate::sandboxing::user_folders(env);
        UserFolders { home, config_home, deny_read: settings.sandbox.deny_read.clone() }
    });
    Arc::new(Confiner { user, folder, built: std::sync::OnceLock::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_commands_read_their_clouds_folders_and_no_other_secret() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        let folder = home.path().join("state");
        let policy = policy(Some(home.path()), Some(Path::new("/xdg")), &folder, &[]);
        assert!(policy.network, "a credential command reaches its cloud's sign-in service");
        assert_eq!(policy.workspace, folder);
        // Writable: the cloud folder that exists, not the missing ones.
        assert_eq!(policy.writable_roots, [home.path().join(".aws")]);
        for hidden in [".ssh", ".docker", ".config/bosun", ".codex", ".config/gh"] {
            assert!(policy.deny_read.contains(&home.path().join(hidden)), "{hidden} is hidden");
        }
        assert!(policy.deny_read.contains(&PathBuf::from("/xdg/bosun")));
        for readable in [".aws", ".azure", ".config/gcloud"] {
            assert!(!policy.deny_read.contains(&home.path().join(readable)), "{readable} is readable");
        }
        assert!(!policy.deny_read.contains(&PathBuf::from("/xdg/gcloud")));
    }
}
