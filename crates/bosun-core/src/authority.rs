//! The authority snapshot (invariant 7): what a session may do, computed once
//! at build time and stored with the session. Resuming under a different
//! authority fails closed and names the difference.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::limits::Limits;
use crate::tool::definition::{CancellationPolicy, ToolCategory, ToolDefinition};

/// Version of the snapshot format.
pub const AUTHORITY_VERSION: u32 = 1;

/// The workspace a session's tools act on, as the tools crate identifies it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkspaceIdentity {
    /// Canonical absolute path of the root.
    pub path: String,
    /// Device id of the root directory.
    pub device: u64,
    /// Inode of the root directory.
    pub inode: u64,
}

impl WorkspaceIdentity {
    /// An identity.
    pub fn new(path: impl Into<String>, device: u64, inode: u64) -> Self {
        Self { path: path.into(), device, inode }
    }
}

/// One tool as the authority records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolAuthority {
    /// Name, description and schema.
    pub definition: ToolDefinition,
    /// Effect category.
    pub category: ToolCategory,
    /// What cancellation may do to it.
    pub cancellation: CancellationPolicy,
}

/// What a session may do: the authority ceiling and its bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthoritySnapshot {
    /// Format version ([`AUTHORITY_VERSION`]).
    pub version: u32,
    /// The workspace, when the tools act on one.
    pub workspace: Option<WorkspaceIdentity>,
    /// Every tool, sorted by name.
    pub tools: Vec<ToolAuthority>,
    /// Names enabled at build time, sorted.
    pub enabled: Vec<String>,
    /// Effective limits.
    pub limits: Limits,
    /// Whether the session may see the clock (invariant 19: opt-in). Left
    /// out of the serialised form while off, so snapshots recorded before
    /// this field existed, and their digests, are unchanged.
    #[serde(default, skip_serializing_if = "is_false")]
    pub clock: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn on_off(value: bool) -> &'static str {
    if value { "on" } else { "off" }
}

/// SHA-256 of a snapshot's canonical JSON, in hex.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AuthorityDigest(String);

impl AuthorityDigest {
    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AuthorityDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0[..self.0.len().min(16)])
    }
}

impl fmt::Debug for AuthorityDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuthorityDigest({})", self.0)
    }
}

impl AuthoritySnapshot {
    /// The digest of the canonical form: every object's keys sorted, so equal
    /// snapshots give equal bytes whether or not some dependency turns on
    /// serde_json's `preserve_order` (digests stored by earlier builds stay valid).
    pub fn digest(&self) -> AuthorityDigest {
        let canonical = serde_json::to_value(self)
            .map(|mut v| {
                v.sort_all_objects();
                v.to_string()
            })
            .unwrap_or_default();
        let hash = Sha256::digest(canonical.as_bytes());
        AuthorityDigest(hash.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Each difference between `self` (stored) and `current`, in words.
    pub fn differences(&self, current: &AuthoritySnapshot) -> Vec<String> {
        self.compare(current).differences.into_iter().map(|d| d.words).collect()
    }

    /// How `current` differs from `self` (stored), each difference in words
    /// and whether it widens what the session may do.
    pub fn compare(&self, current: &AuthoritySnapshot) -> AuthorityChange {
        let mut out = Vec::new();
        let mut push = |widens: bool, words: String| out.push(AuthorityDifference { words, widens });
        if self.version != current.version {
            // An unknown format may mean anything: the person decides.
            push(true, format!("snapshot version {} vs {}", self.version, current.version));
        }
        match (&self.workspace, &current.workspace) {
            (Some(a), Some(b)) if a != b => {
                // The same directory under another name (a `mv` keeps its
                // device and inode): the tools act on what they acted on.
                let moved = (a.device, a.inode) == (b.device, b.inode);
                let words = if moved {
                    format!(
                        "workspace was {}, now {} (the same directory, moved: device and inode unchanged)",
                        a.path, b.path
                    )
                } else {
                    format!(
                        "workspace was {} (dev {}, inode {}), now {} (dev {}, inode {}): another directory",
                        a.path, a.device, a.inode, b.path, b.device, b.inode
                    )
                };
                push(!moved, words);
            }
            (Some(a), None) => push(true, format!("workspace was {}, now none", a.path)),
            (None, Some(b)) => push(true, format!("workspace was none, now {}", b.path)),
            _ => {}
        }
        // One line per kind, naming each tool: an MCP server brings tens.
        let named = |t: &ToolAuthority| t.definition.name.clone();
        let has = |tools: &[ToolAuthority], name: &str| tools.iter().any(|t| t.definition.name == name);
        let gone: Vec<String> =
            self.tools.iter().filter(|t| !has(&current.tools, &t.definition.name)).map(named).collect();
        let changed: Vec<String> = self
            .tools
            .iter()
            .filter(|t| current.tools.iter().any(|now| now.definition.name == t.definition.name && now != *t))
            .map(named)
            .collect();
        let new: Vec<String> =
            current.tools.iter().filter(|t| !has(&self.tools, &t.definition.name)).map(named).collect();
        for (names, widens, what) in
            [(new, true, "new tools"), (changed, true, "tools changed"), (gone, false, "tools gone")]
        {
            if !names.is_empty() {
                push(widens, format!("{what}: {}", names.join(", ")));
            }
        }
        // Enabling or disabling a tool both snapshots hold; a new or gone
        // tool was said above.
        let held = |name: &String| {
            self.tools.iter().any(|t| &t.definition.name == name)
                && current.tools.iter().any(|t| &t.definition.name == name)
        };
        let enabled: Vec<&str> = current
            .enabled
            .iter()
            .filter(|n| !self.enabled.contains(n) && held(n))
            .map(String::as_str)
            .collect();
        if !enabled.is_empty() {
            push(true, format!("enabled now: {}", enabled.join(", ")));
        }
        let disabled: Vec<&str> = self
            .enabled
            .iter()
            .filter(|n| !current.enabled.contains(n) && held(n))
            .map(String::as_str)
            .collect();
        if !disabled.is_empty() {
            push(false, format!("no longer enabled: {}", disabled.join(", ")));
        }
        for (name, was, now, widens) in self.limits.differences(&current.limits) {
            push(widens, format!("{name} was {was}, now {now}"));
        }
        if self.clock != current.clock {
            push(
                current.clock,
                format!("the clock was {}, now {}", on_off(self.clock), on_off(current.clock)),
            );
        }
        AuthorityChange { stored: self.digest(), current: current.digest(), differences: out }
    }
}

/// One way a session's authority differs from the one it was recorded with.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorityDifference {
    /// The difference, for people.
    pub words: String,
    /// Whether it lets the session do more than before (a new or changed
    /// tool, a looser limit, another workspace); the rest only narrow.
    pub widens: bool,
}

/// How the authority a session resumes under differs from its recorded
/// one. Narrowing needs no acceptance; widening needs the person's
/// ([`crate::ApprovalHandler::accept_authority`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorityChange {
    /// Digest of the recorded snapshot.
    pub stored: AuthorityDigest,
    /// Digest of the one resumed under.
    pub current: AuthorityDigest,
    /// Each difference.
    pub differences: Vec<AuthorityDifference>,
}

impl AuthorityChange {
    /// Whether any difference widens the authority.
    pub fn widens(&self) -> bool {
        self.differences.iter().any(|d| d.widens)
    }
}

impl fmt::Display for AuthorityChange {
    /// One line per difference: `+` widens, `-` narrows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, difference) in self.differences.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{} {}", if difference.widens { '+' } else { '-' }, difference.words)?;
        }
        Ok(())
    }
}
