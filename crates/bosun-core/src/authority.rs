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
    /// The digest of the canonical form. serde_json's default map is sorted,
    /// so equal snapshots always give equal bytes.
    pub fn digest(&self) -> AuthorityDigest {
        let canonical = serde_json::to_value(self).map(|v| v.to_string()).unwrap_or_default();
        let hash = Sha256::digest(canonical.as_bytes());
        AuthorityDigest(hash.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Each difference between `self` (stored) and `current`, for people.
    pub fn differences(&self, current: &AuthoritySnapshot) -> Vec<String> {
        let mut out = Vec::new();
        if self.version != current.version {
            out.push(format!("snapshot version {} vs {}", self.version, current.version));
        }
        match (&self.workspace, &current.workspace) {
            (Some(a), Some(b)) if a != b => out.push(format!(
                "workspace was {} (dev {}, inode {}), now {} (dev {}, inode {})",
                a.path, a.device, a.inode, b.path, b.device, b.inode
            )),
            (Some(a), None) => out.push(format!("workspace was {}, now none", a.path)),
            (None, Some(b)) => out.push(format!("workspace was none, now {}", b.path)),
            _ => {}
        }
        for stored in &self.tools {
            match current.tools.iter().find(|t| t.definition.name == stored.definition.name) {
                None => out.push(format!("tool `{}` is gone", stored.definition.name)),
                Some(now) if now != stored => {
                    out.push(format!("tool `{}` changed its definition", stored.definition.name));
                }
                Some(_) => {}
            }
        }
        for now in &current.tools {
            if !self.tools.iter().any(|t| t.definition.name == now.definition.name) {
                out.push(format!("tool `{}` is new", now.definition.name));
            }
        }
        if self.enabled != current.enabled {
            out.push(format!(
                "enabled tools were [{}], now [{}]",
                self.enabled.join(", "),
                current.enabled.join(", ")
            ));
        }
        if self.limits != current.limits {
            out.push(format!("limits were {:?}, now {:?}", self.limits, current.limits));
        }
        if self.clock != current.clock {
            out.push(format!("the clock was {}, now {}", on_off(self.clock), on_off(current.clock)));
        }
        out
    }
}
