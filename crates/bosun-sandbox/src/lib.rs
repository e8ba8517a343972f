//! The OS boundary for every process bosun starts (MISSION.md invariant 18):
//! the `shell` tool, `!cmd`, command hooks, stdio MCP servers, and what they
//! start in turn.
//!
//! In process, with no helper binary: between `fork` and `exec` the child
//! enters new user, mount and PID namespaces (and a network namespace with
//! the network off), binds the workspace's protected paths read-only and
//! hides the user's secret folders, then restricts itself with Landlock
//! (writes only where the policy says, no TCP with the network off,
//! signals scoped) and seccomp (no `ptrace`, mounts, namespaces, kernel
//! modules, `io_uring` or terminal injection). Every later child inherits
//! all of it, and the PID namespace ends with the call: a process that
//! `setsid`s away dies with it, and everything dies with bosun.
//!
//! [`Sandbox::new`] builds a [`SandboxPolicy`] into kernel objects once;
//! [`Sandbox::prepare`] readies one `tokio::process::Command`. What the
//! sandbox guarantees and what it does not is in `docs/trust.md`.

mod child;
mod explain;
pub mod harden;
mod landlock_rules;
mod policy;
mod sandbox;
mod seccomp;

pub use harden::harden_process;
pub use policy::{DEFAULT_DENY_READ_IN_HOME, SandboxMode, SandboxPolicy};
pub use sandbox::{CallAccess, Sandbox, SandboxedCall, Support, unconfined};

/// Why a sandbox could not be built or a command not readied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel lacks what the sandbox needs.
    #[error("the sandbox is not available: {0}")]
    Unsupported(String),
    /// Building the Landlock ruleset failed.
    #[error("the sandbox's Landlock rules could not be built: {0}")]
    Landlock(String),
    /// Building the seccomp filter failed.
    #[error("the sandbox's seccomp filter could not be built: {0}")]
    Seccomp(String),
    /// A path the policy names cannot be used.
    #[error("the sandbox cannot use a path: {0}")]
    Path(String),
    /// A file-system operation for the sandbox failed.
    #[error("the sandbox's temporary folder: {0}")]
    Io(#[source] std::io::Error),
}
