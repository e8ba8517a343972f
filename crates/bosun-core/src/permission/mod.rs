//! The permission pipeline's decisions (invariants 8–10): mode and rules give
//! allow / ask / deny; an [`ApprovalHandler`] answers an ask.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::message::CallId;
use crate::tool::definition::ToolCategory;

mod protected;
mod rules;

pub use crate::tool::effects::{CallEffects, CommandLine};
pub use protected::{PROTECTED_DIRS, PROTECTED_FILES, is_protected};
pub use rules::{
    ArgumentPattern, Capability, Decided, Matcher, PermissionRule, ProposedCall, RuleOrigin, RuleTarget,
    decide, mode_default,
};

/// How much the agent may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read and search only; everything else is denied, whatever the rules say.
    ReadOnly,
    /// Reads run; writes, commands and network calls are proposed for approval.
    #[default]
    Propose,
    /// Reads and workspace edits run; commands and network calls ask.
    Write,
    /// Everything runs unless a rule denies it; network calls still ask.
    Autonomous,
    /// Read-only while the model works out a plan; the person approves the
    /// plan, and the session goes on in the mode they choose.
    Plan,
}

impl Mode {
    /// Its name, as the config, the flags and the events write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Propose => "propose",
            Self::Write => "write",
            Self::Autonomous => "autonomous",
            Self::Plan => "plan",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the pipeline answers for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Run it.
    Allow,
    /// Ask the approval handler.
    Ask,
    /// Refuse it.
    Deny,
}

/// A non-empty, single-line reason of at most [`Reason::MAX_CHARS`] characters.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Reason(String);

impl Reason {
    /// Longest reason, in characters.
    pub const MAX_CHARS: usize = 500;

    /// Checks and wraps a reason.
    pub fn new(text: impl Into<String>) -> Result<Self, ReasonError> {
        let text = text.into();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(ReasonError::Empty);
        }
        if trimmed.contains(['\n', '\r']) {
            return Err(ReasonError::MultiLine);
        }
        let count = trimmed.chars().count();
        if count > Self::MAX_CHARS {
            return Err(ReasonError::TooLong { chars: count });
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// Makes a reason from any text: blank becomes `fallback`, line breaks
    /// become spaces, and the text is cut to the limit. For reasons that come
    /// from places that cannot be refused (a tool's error text).
    pub fn lossy(text: &str, fallback: &str) -> Self {
        let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let chosen = if one_line.is_empty() { fallback.to_owned() } else { one_line };
        Self(chosen.chars().take(Self::MAX_CHARS).collect())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Reason {
    type Error = ReasonError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Reason> for String {
    fn from(value: Reason) -> Self {
        value.0
    }
}

/// Why a reason was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReasonError {
    /// Blank.
    #[error("a reason must not be empty")]
    Empty,
    /// Contains a line break.
    #[error("a reason must be a single line")]
    MultiLine,
    /// Too long.
    #[error("a reason must be at most {} characters, this one has {chars}", Reason::MAX_CHARS)]
    TooLong {
        /// Its length.
        chars: usize,
    },
}

/// The exact call a person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call's session-minted id.
    pub call_id: CallId,
    /// The tool.
    pub tool: String,
    /// Its category.
    pub category: ToolCategory,
    /// The exact, validated arguments.
    pub arguments: serde_json::Value,
    /// Why the pipeline asks.
    pub reason: String,
    /// The call touches a protected path (`.git/`, `.bosun/`, …): a grant
    /// for the whole tool would not cover later such calls, so offer this
    /// exact call only.
    pub protected: bool,
}

/// How far an approval reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// The same tool with the same arguments, for the rest of the session.
    SameCall,
    /// Every call of this tool, for the rest of the session.
    Tool,
}

/// A person's answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run this call, this once.
    ApproveOnce,
    /// Run this call, and do not ask again within `scope` for this session.
    /// Grants live in memory only; they are never persisted.
    ApproveForSession {
        /// What later calls the grant covers.
        scope: GrantScope,
    },
    /// Do not run it; the model sees the reason.
    Deny {
        /// Why, for the model.
        reason: Reason,
    },
}

/// The future an approval handler returns.
pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>>;

/// The future [`ApprovalHandler::accept_authority`] returns: `true` accepts.
pub type AcceptFuture<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// Answers approval requests (a terminal prompt, a web page, a policy).
pub trait ApprovalHandler: Send + Sync {
    /// Decides one request. Dropped without an answer if the turn is cancelled.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a>;

    /// Whether to resume a stored session under an authority wider than the
    /// one it was recorded with (invariant 7): the person reads `change` in
    /// words and decides. Asked only when something widens; narrowing needs
    /// no acceptance. The default refuses, so a handler that cannot ask
    /// fails closed.
    fn accept_authority<'a>(&'a self, change: &'a crate::AuthorityChange) -> AcceptFuture<'a> {
        let _ = change;
        Box::pin(async { false })
    }
}

/// The default handler: denies everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct DenyAll;

impl ApprovalHandler for DenyAll {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let reason = Reason::lossy(
            &format!("`{}` needs approval and no approver is configured", request.tool),
            "approval needed",
        );
        Box::pin(async move { ApprovalDecision::Deny { reason } })
    }
}

/// Grants given for the rest of a session (in memory only).
#[derive(Debug, Default)]
pub(crate) struct Grants {
    tools: HashSet<String>,
    calls: HashSet<(String, String)>,
}

impl Grants {
    /// A grant for the whole tool never covers a call touching a protected
    /// path; only a grant for that exact call does.
    pub(crate) fn covers(&self, tool: &str, arguments: &serde_json::Value, protected: bool) -> bool {
        (!protected && self.tools.contains(tool))
            || self.calls.contains(&(tool.to_owned(), arguments.to_string()))
    }

    /// The grants in words, tools first, each in name order.
    pub(crate) fn describe(&self) -> Vec<String> {
        let mut tools: Vec<String> = self
            .tools
            .iter()
            .map(|tool| format!("every later `{tool}` call (not on protected paths)"))
            .collect();
        tools.sort();
        let mut calls: Vec<String> =
            self.calls.iter().map(|(tool, arguments)| format!("`{tool}` with {arguments}")).collect();
        calls.sort();
        tools.extend(calls);
        tools
    }

    pub(crate) fn grant(&mut self, scope: GrantScope, tool: &str, arguments: &serde_json::Value) {
        match scope {
            GrantScope::Tool => {
                self.tools.insert(tool.to_owned());
            }
            GrantScope::SameCall => {
                self.calls.insert((tool.to_owned(), arguments.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_bounded_single_line_and_non_empty() {
        assert_eq!(Reason::new("  "), Err(ReasonError::Empty));
        assert_eq!(Reason::new("a\nb"), Err(ReasonError::MultiLine));
        assert!(matches!(Reason::new("x".repeat(501)), Err(ReasonError::TooLong { chars: 501 })));
        assert_eq!(Reason::new(" ok ").unwrap().as_str(), "ok");
        assert_eq!(Reason::lossy("a\nb", "f").as_str(), "a b");
        assert_eq!(Reason::lossy("\n", "f").as_str(), "f");
        assert!(serde_json::from_str::<Reason>("\"\"").is_err());
    }
}
