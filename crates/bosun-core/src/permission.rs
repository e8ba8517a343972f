//! The permission pipeline's decisions (invariants 8–10): mode and rules give
//! allow / ask / deny; an [`ApprovalHandler`] answers an ask.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::message::CallId;
use crate::tool::ToolCategory;

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
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadOnly => "read-only",
            Self::Propose => "propose",
            Self::Write => "write",
            Self::Autonomous => "autonomous",
        })
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

/// A rule for one tool, optionally only for calls whose argument matches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PermissionRule {
    /// The tool's name.
    pub tool: String,
    /// Only calls whose argument matches this pattern; `None` matches all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<ArgumentPattern>,
    /// The answer for matching calls.
    pub permission: Permission,
}

impl PermissionRule {
    /// A rule for every call of `tool`.
    pub fn tool(tool: impl Into<String>, permission: Permission) -> Self {
        Self { tool: tool.into(), pattern: None, permission }
    }

    /// A rule for calls of `tool` whose argument at `pointer` matches `pattern`.
    pub fn matching(tool: impl Into<String>, pattern: ArgumentPattern, permission: Permission) -> Self {
        Self { tool: tool.into(), pattern: Some(pattern), permission }
    }

    fn matches(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        self.tool == tool && self.pattern.as_ref().is_none_or(|p| p.matches(arguments))
    }
}

/// Matches a string argument, found by JSON pointer (`/command`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ArgumentPattern {
    /// JSON pointer to the argument, e.g. `/command`.
    pub pointer: String,
    /// How the argument must match.
    pub matcher: Matcher,
}

impl ArgumentPattern {
    /// The argument at `pointer` equals `value`.
    pub fn exact(pointer: impl Into<String>, value: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), matcher: Matcher::Exact(value.into()) }
    }

    /// The argument at `pointer` is `words` or starts with `words` and a space.
    pub fn prefix(pointer: impl Into<String>, words: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), matcher: Matcher::Prefix(words.into()) }
    }

    /// A shell command at `pointer` that starts with `words` and chains
    /// nothing else (see [`Matcher::CommandPrefix`]).
    pub fn command_prefix(pointer: impl Into<String>, words: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), matcher: Matcher::CommandPrefix(words.into()) }
    }

    fn matches(&self, arguments: &serde_json::Value) -> bool {
        match arguments.pointer(&self.pointer).and_then(|v| v.as_str()) {
            Some(value) => self.matcher.matches(value),
            None => false,
        }
    }
}

/// How an argument string must match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Matcher {
    /// Equal.
    Exact(String),
    /// Equal, or the prefix followed by a space. Word-bounded so that
    /// `git status` does not match `git statusx`.
    Prefix(String),
    /// Like `Prefix`, for shell commands: also refuses any command holding a
    /// shell control character (`;` `&` `|` `<` `>` `` ` `` `$` `(` `)`, a
    /// newline), so `git status && rm -rf ~` is not `git status`.
    CommandPrefix(String),
}

/// Characters that let one shell command run another.
const SHELL_CONTROL: &[char] = &[';', '&', '|', '<', '>', '`', '$', '(', ')', '\n', '\r'];

impl Matcher {
    fn matches(&self, value: &str) -> bool {
        match self {
            Self::Exact(exact) => value == exact,
            Self::Prefix(prefix) => word_prefix(value, prefix),
            Self::CommandPrefix(prefix) => {
                !value.contains(SHELL_CONTROL) && word_prefix(value.trim(), prefix)
            }
        }
    }
}

fn word_prefix(value: &str, prefix: &str) -> bool {
    value == prefix || value.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(' '))
}

/// The mode's answer for a category before rules apply.
pub fn mode_default(mode: Mode, category: ToolCategory) -> Permission {
    use Permission::{Allow, Ask, Deny};
    use ToolCategory::{Execute, Network, Read, Write};
    match (mode, category) {
        (_, Read) => Allow,
        (Mode::ReadOnly, _) => Deny,
        (_, Network) => Ask,
        (Mode::Propose, Write | Execute) => Ask,
        (Mode::Write, Write) => Allow,
        (Mode::Write, Execute) => Ask,
        (Mode::Autonomous, Write | Execute) => Allow,
    }
}

/// Mode plus rules: the permission for one call, and why.
///
/// Among matching rules, the strictest wins (deny over ask over allow). Two
/// ceilings no rule lifts: `read-only` denies every non-read tool, and a
/// network tool at best asks (invariant 19).
pub fn decide(
    mode: Mode,
    rules: &[PermissionRule],
    tool: &str,
    category: ToolCategory,
    arguments: &serde_json::Value,
) -> (Permission, String) {
    let by_rule = rules.iter().filter(|rule| rule.matches(tool, arguments)).map(|rule| rule.permission).max();
    if mode == Mode::ReadOnly && category != ToolCategory::Read {
        return (Permission::Deny, format!("`{tool}` is not a read tool and the session is read-only"));
    }
    match by_rule {
        Some(Permission::Allow) if category == ToolCategory::Network => {
            (Permission::Ask, format!("`{tool}` reaches the network, which always asks"))
        }
        Some(permission) => (permission, format!("a rule for `{tool}` says {permission:?}").to_lowercase()),
        None => {
            let permission = mode_default(mode, category);
            (permission, format!("{category:?} tools in {mode} mode: {permission:?}").to_lowercase())
        }
    }
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

/// Answers approval requests (a terminal prompt, a web page, a policy).
pub trait ApprovalHandler: Send + Sync {
    /// Decides one request. Dropped without an answer if the turn is cancelled.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a>;
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
    pub(crate) fn covers(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        self.tools.contains(tool) || self.calls.contains(&(tool.to_owned(), arguments.to_string()))
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
    use serde_json::json;

    use super::*;

    #[test]
    fn modes_answer_by_category() {
        use Permission::*;
        use ToolCategory::*;
        let table = [
            (Mode::ReadOnly, [Allow, Deny, Deny, Deny]),
            (Mode::Propose, [Allow, Ask, Ask, Ask]),
            (Mode::Write, [Allow, Allow, Ask, Ask]),
            (Mode::Autonomous, [Allow, Allow, Allow, Ask]),
        ];
        for (mode, answers) in table {
            for (category, answer) in [Read, Write, Execute, Network].into_iter().zip(answers) {
                assert_eq!(mode_default(mode, category), answer, "{mode} {category:?}");
            }
        }
    }

    #[test]
    fn strictest_matching_rule_wins_and_read_only_is_a_ceiling() {
        let rules = vec![
            PermissionRule::tool("shell", Permission::Allow),
            PermissionRule::matching("shell", ArgumentPattern::prefix("/command", "rm"), Permission::Deny),
        ];
        let args = |c: &str| json!({ "command": c });
        let d = |mode, a| decide(mode, &rules, "shell", ToolCategory::Execute, &a).0;
        assert_eq!(d(Mode::Propose, args("ls")), Permission::Allow);
        assert_eq!(d(Mode::Propose, args("rm -rf x")), Permission::Deny);
        assert_eq!(d(Mode::Propose, args("rmdir x")), Permission::Allow, "prefix is word-bounded");
        assert_eq!(d(Mode::ReadOnly, args("ls")), Permission::Deny);
    }

    #[test]
    fn command_prefix_refuses_chained_commands() {
        let pattern = ArgumentPattern::command_prefix("/command", "git status");
        let matches = |c: &str| pattern.matches(&json!({ "command": c }));
        assert!(matches("git status"));
        assert!(matches("git status --short"));
        for chained in [
            "git status && rm -rf ~",
            "git status; rm x",
            "git status | sh",
            "git status $(rm x)",
            "git status\nrm x",
            "git status > /etc/x",
        ] {
            assert!(!matches(chained), "{chained}");
        }
        assert!(!matches("git statusx"));
    }

    #[test]
    fn network_allow_rule_still_asks() {
        let rules = vec![PermissionRule::tool("fetch", Permission::Allow)];
        let (p, _) = decide(Mode::Autonomous, &rules, "fetch", ToolCategory::Network, &json!({}));
        assert_eq!(p, Permission::Ask);
    }

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
