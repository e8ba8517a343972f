//! What a sandboxed process may do: the mode, the workspace, extra writable
//! roots, the paths hidden from it and whether it reaches the network. Plain
//! data; [`crate::Sandbox::new`] turns it into kernel objects.

use std::path::{Path, PathBuf};

/// How much of the file system a sandboxed process may change. Written
/// `read-only`, `workspace-write`, `off` (in config files too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SandboxMode {
    /// Reads only (the call's own temporary folder aside, which dies with
    /// the call).
    ReadOnly,
    /// Writes to the workspace (its protected paths excepted), the call's
    /// temporary folder and the configured writable roots.
    #[default]
    WorkspaceWrite,
    /// No sandbox: the process runs with the user's full rights.
    Off,
}

impl SandboxMode {
    /// The name used by `--sandbox` and `[sandbox] mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Off => "off",
        }
    }

    /// How strict the mode is: `off` < `workspace-write` < `read-only`.
    pub fn strictness(self) -> u8 {
        match self {
            Self::Off => 0,
            Self::WorkspaceWrite => 1,
            Self::ReadOnly => 2,
        }
    }

    /// Whether `self` allows more than `other`.
    pub fn looser_than(self, other: Self) -> bool {
        self.strictness() < other.strictness()
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "off" => Ok(Self::Off),
            other => {
                Err(format!("unknown sandbox mode `{other}`: expected read-only, workspace-write or off"))
            }
        }
    }
}

/// Secrets under the home folder that no sandboxed process reads: keys,
/// cloud and registry credentials, agents' own credentials, browser
/// profiles, password stores. Missing ones are skipped when the sandbox is
/// built.
pub const DEFAULT_DENY_READ_IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/bosun",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".mozilla",
    ".password-store",
    ".local/share/keyrings",
    ".codex",
    ".claude",
    ".claude.json",
    ".vault-token",
    ".terraform.d",
];

/// What sandboxed processes may do. Serialisable, so a process bosun
/// starts elsewhere (in an editor's terminal) can build the same sandbox.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// The workspace root (canonical).
    pub workspace: PathBuf,
    /// Extra writable folders (absolute), in `workspace-write` mode.
    pub writable_roots: Vec<PathBuf>,
    /// Names under the workspace root that sandboxed processes may not
    /// change (bosun-core's protected names).
    pub protected_names: Vec<String>,
    /// Paths no sandboxed process reads (absolute).
    pub deny_read: Vec<PathBuf>,
    /// Whether sandboxed processes reach the network.
    pub network: bool,
}

impl SandboxPolicy {
    /// `mode` over `workspace`, network off, nothing protected or hidden.
    pub fn new(mode: SandboxMode, workspace: impl Into<PathBuf>) -> Self {
        Self {
            mode,
            workspace: workspace.into(),
            writable_roots: Vec::new(),
            protected_names: Vec::new(),
            deny_read: Vec::new(),
            network: false,
        }
    }

    /// Sets whether processes reach the network.
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Adds writable folders.
    pub fn with_writable_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.writable_roots.extend(roots);
        self
    }

    /// Adds protected names (at the workspace root).
    pub fn with_protected_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.protected_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds hidden paths.
    pub fn with_deny_read(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.deny_read.extend(paths);
        self
    }

    /// Adds [`DEFAULT_DENY_READ_IN_HOME`] under `home`, and bosun's own
    /// config folder under `config_home` when that is elsewhere
    /// (`XDG_CONFIG_HOME`).
    pub fn with_default_secrets(self, home: &Path, config_home: Option<&Path>) -> Self {
        let mut paths: Vec<PathBuf> = DEFAULT_DENY_READ_IN_HOME.iter().map(|name| home.join(name)).collect();
        if let Some(config_home) = config_home {
            paths.push(config_home.join("bosun"));
            paths.push(config_home.join("gcloud"));
            paths.push(config_home.join("gh"));
        }
        self.with_deny_read(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_print_and_order_by_strictness() {
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite, SandboxMode::Off] {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
        }
        assert!("none".parse::<SandboxMode>().is_err());
        assert!(SandboxMode::Off.strictness() < SandboxMode::WorkspaceWrite.strictness());
        assert!(SandboxMode::WorkspaceWrite.strictness() < SandboxMode::ReadOnly.strictness());
        assert_eq!(SandboxMode::default(), SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn default_secrets_cover_keys_and_a_moved_config_home() {
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w")
            .with_default_secrets(Path::new("/home/u"), Some(Path::new("/xdg")));
        for hidden in
            ["/home/u/.ssh", "/home/u/.aws", "/home/u/.gnupg", "/home/u/.config/bosun", "/xdg/bosun"]
        {
            assert!(policy.deny_read.contains(&PathBuf::from(hidden)), "{hidden}");
        }
    }
}
