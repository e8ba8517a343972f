//! Rules and the decision for one call (invariants 8–10 and 20): mode, rules
//! by tool or by capability, command rules matched on parsed argv, and
//! protected paths.

use serde::{Deserialize, Serialize};

use super::Mode;
use super::Permission;
use super::protected::{self, base_name};
use crate::tool::definition::ToolCategory;
use crate::tool::effects::{CallEffects, CommandLine};

/// A rule: which calls it covers, optionally only those whose argument
/// matches, and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PermissionRule {
    /// The calls the rule is about.
    pub target: RuleTarget,
    /// Only calls whose argument matches this pattern; `None` matches all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<ArgumentPattern>,
    /// The answer for matching calls.
    pub permission: Permission,
    /// Who wrote the rule.
    #[serde(default)]
    pub origin: RuleOrigin,
}

/// What a rule is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleTarget {
    /// Every call of the tool with this name.
    Tool(String),
    /// Every call with this capability, whichever tool makes it.
    Capability(Capability),
}

/// A kind of effect that several tools share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Capability {
    /// Changing files: every `Write` tool, any call that names paths it
    /// writes, and shell commands that redirect output to a file.
    Edit,
}

impl Capability {
    /// Every capability, with the name configuration files use for it.
    pub const ALL: &'static [(&'static str, Capability)] = &[("edit", Capability::Edit)];

    /// The capability a configuration name stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// Its configuration name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, c)| *c == self).map_or("edit", |(n, _)| n)
    }
}

/// Who wrote a rule. A project's files may only narrow what the user allows
/// (invariant 20): their allow rules never cover a protected path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleOrigin {
    /// The person's own configuration, or the program embedding bosun.
    #[default]
    User,
    /// A file in the workspace.
    Project,
}

impl PermissionRule {
    /// A rule for every call of `tool`.
    pub fn tool(tool: impl Into<String>, permission: Permission) -> Self {
        Self { target: RuleTarget::Tool(tool.into()), pattern: None, permission, origin: RuleOrigin::User }
    }

    /// A rule for calls of `tool` whose argument matches `pattern`.
    pub fn matching(tool: impl Into<String>, pattern: ArgumentPattern, permission: Permission) -> Self {
        Self { pattern: Some(pattern), ..Self::tool(tool, permission) }
    }

    /// A rule for every call with `capability`.
    pub fn capability(capability: Capability, permission: Permission) -> Self {
        Self {
            target: RuleTarget::Capability(capability),
            pattern: None,
            permission,
            origin: RuleOrigin::User,
        }
    }

    /// The same rule, written by a file in the workspace.
    pub fn from_project(mut self) -> Self {
        self.origin = RuleOrigin::Project;
        self
    }

    fn covers(&self, call: &ProposedCall<'_>) -> bool {
        match &self.target {
            RuleTarget::Tool(name) => name == call.tool,
            RuleTarget::Capability(Capability::Edit) => call.edits(),
        }
    }

    /// The rule in words, for messages and listings.
    pub fn describe(&self) -> String {
        let target = match &self.target {
            RuleTarget::Tool(name) => format!("`{name}`"),
            RuleTarget::Capability(capability) => {
                format!("`{}` (every tool that changes files)", capability.name())
            }
        };
        let answer = format!("{:?}", self.permission).to_lowercase();
        let from = match self.origin {
            RuleOrigin::User => "",
            RuleOrigin::Project => " from the project's config",
        };
        match self.pattern.as_ref().map(|p| &p.matcher) {
            Some(Matcher::Command(words)) => {
                format!("the rule {answer} `{}` for {target}{from}", words.join(" "))
            }
            Some(Matcher::Exact(v) | Matcher::Prefix(v)) => {
                format!("the rule {answer} `{v}` for {target}{from}")
            }
            None => format!("the rule {target} = {answer}{from}"),
        }
    }
}

/// Matches an argument, found by JSON pointer (`/command`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ArgumentPattern {
    /// JSON pointer to the argument, e.g. `/command`.
    pub pointer: String,
    /// How the argument must match.
    pub matcher: Matcher,
}

impl ArgumentPattern {
    /// The string argument at `pointer` equals `value`.
    pub fn exact(pointer: impl Into<String>, value: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), matcher: Matcher::Exact(value.into()) }
    }

    /// The string argument at `pointer`, leading spaces ignored, is `words`
    /// or starts with `words` and a space.
    pub fn prefix(pointer: impl Into<String>, words: impl Into<String>) -> Self {
        Self { pointer: pointer.into(), matcher: Matcher::Prefix(words.into()) }
    }

    /// A command whose argv starts with `words` (split on whitespace), for
    /// tools that report the command line they run
    /// ([`CallEffects::command`]); see [`Matcher::Command`].
    pub fn command(pointer: impl Into<String>, words: &str) -> Self {
        let words = words.split_whitespace().map(str::to_owned).collect();
        Self { pointer: pointer.into(), matcher: Matcher::Command(words) }
    }

    fn matches_string(&self, arguments: &serde_json::Value) -> bool {
        let value = arguments.pointer(&self.pointer).and_then(|v| v.as_str());
        match (&self.matcher, value) {
            (Matcher::Exact(exact), Some(value)) => value == exact,
            (Matcher::Prefix(prefix), Some(value)) => word_prefix(value.trim_start(), prefix),
            _ => false,
        }
    }
}

/// How an argument must match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Matcher {
    /// The string equals this.
    Exact(String),
    /// The string is this, or this followed by a space (word-bounded:
    /// `git status` does not match `git statusx`).
    Prefix(String),
    /// A simple command of the call's command line has these argv words
    /// first. Deny and ask rules match when any simple command matches, its
    /// first word compared after path stripping (`/bin/rm` is `rm`); an
    /// opaque line, which may run anything, asks. An allow rule covers a
    /// line only when every simple command is allowed by some rule, the
    /// first word exactly as written (`./git` is not `git`), and the line
    /// is plain words with no redirection to a file.
    Command(Vec<String>),
}

fn word_prefix(value: &str, prefix: &str) -> bool {
    value == prefix || value.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(' '))
}

/// One call, as the pipeline decides on it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ProposedCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Its category.
    pub category: ToolCategory,
    /// The validated arguments.
    pub arguments: &'a serde_json::Value,
    /// What the tool says the call would do.
    pub effects: &'a CallEffects,
}

impl<'a> ProposedCall<'a> {
    /// A call.
    pub fn new(
        tool: &'a str,
        category: ToolCategory,
        arguments: &'a serde_json::Value,
        effects: &'a CallEffects,
    ) -> Self {
        Self { tool, category, arguments, effects }
    }

    fn edits(&self) -> bool {
        self.category == ToolCategory::Write || self.effects.edits()
    }
}

/// The pipeline's answer for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decided {
    /// Allow, ask or deny.
    pub permission: Permission,
    /// Why, for the person and the model.
    pub reason: String,
    /// The call touches a protected path: it asks in every mode, and a grant
    /// for the whole tool does not cover it.
    pub protected: bool,
}

/// The mode's answer for a category before rules apply.
pub fn mode_default(mode: Mode, category: ToolCategory) -> Permission {
    use Permission::{Allow, Ask, Deny};
    use ToolCategory::{Execute, External, Network, Read, Write};
    match (mode, category) {
        (_, Read) => Allow,
        (Mode::ReadOnly | Mode::Plan, _) => Deny,
        (_, Network) => Ask,
        (Mode::Propose, Write | Execute | External) => Ask,
        (Mode::Write, Write) => Allow,
        (Mode::Write, Execute | External) => Ask,
        (Mode::Autonomous, Write | Execute | External) => Allow,
    }
}

/// Mode plus rules: the permission for one call, and why.
///
/// Deny rules win over ask rules, which win over allow rules; a command
/// rule that cannot be checked against an opaque command line asks. Three
/// ceilings no rule lifts: `read-only` denies every call that is not a plain
/// read, a network tool at best asks (invariant 19), and a call touching a
/// protected path at best asks unless every rule allowing it is the user's
/// own (invariant 20).
pub fn decide(mode: Mode, rules: &[PermissionRule], call: &ProposedCall<'_>) -> Decided {
    let touched = protected::touched(call.effects);
    let protected = touched.is_some();
    let decided = |permission, reason: String| Decided { permission, reason, protected };
    if matches!(mode, Mode::ReadOnly | Mode::Plan) && (call.category != ToolCategory::Read || call.edits()) {
        let why = if mode == Mode::Plan {
            "the session is in plan mode: read, then present the plan (update_plan) and end the turn; \
             the person approves it before anything changes"
        } else {
            "the session is read-only"
        };
        return decided(Permission::Deny, format!("`{}` is not a read tool and {why}", call.tool));
    }
    let covering: Vec<&PermissionRule> = rules.iter().filter(|r| r.covers(call)).collect();
    let fallback;
    let line = match &call.effects.command {
        Some(line) => line,
        None => {
            fallback = fallback_line(call.arguments, &covering);
            &fallback
        }
    };

    // Deny, then ask: any matching rule. An opaque line may run what a deny
    // rule names, so it asks unless another deny rule matches outright.
    let mut unsure = None;
    for rule in covering.iter().filter(|r| r.permission == Permission::Deny) {
        match rule_hits(rule, call, line) {
            Hit::Yes => return decided(Permission::Deny, format!("{} matches", rule.describe())),
            Hit::Unsure(why) => {
                unsure.get_or_insert(format!("{why}, so {} cannot be checked", rule.describe()));
            }
            Hit::No => {}
        }
    }
    if let Some(why) = unsure {
        return decided(Permission::Ask, why);
    }
    // Leaving the OS sandbox is the person's call, every time: no mode, rule
    // or grant answers for them (`protected` keeps grants from covering it).
    if let Some(why) = &call.effects.escalation {
        return Decided {
            permission: Permission::Ask,
            reason: format!("{why}, which always asks"),
            protected: true,
        };
    }
    for rule in covering.iter().filter(|r| r.permission == Permission::Ask) {
        match rule_hits(rule, call, line) {
            Hit::Yes => return decided(Permission::Ask, format!("{} matches", rule.describe())),
            Hit::Unsure(why) => {
                return decided(Permission::Ask, format!("{why}, so {} cannot be checked", rule.describe()));
            }
            Hit::No => {}
        }
    }

    if let Some(allowing) = allowed_by(&covering, call, line) {
        if call.category == ToolCategory::Network {
            return decided(
                Permission::Ask,
                format!("`{}` reaches the network, which always asks", call.tool),
            );
        }
        if let Some(why) = &touched
            && allowing.iter().any(|r| r.origin == RuleOrigin::Project)
        {
            return decided(
                Permission::Ask,
                format!("{why}; a project's rule cannot allow that, so it asks"),
            );
        }
        let names: Vec<String> = allowing.iter().map(|r| r.describe()).collect();
        return decided(Permission::Allow, format!("allowed by {}", names.join(" and ")));
    }

    let by_mode = mode_default(mode, call.category);
    match &touched {
        Some(why) if by_mode == Permission::Allow => {
            decided(Permission::Ask, format!("{why}; such calls always ask"))
        }
        _ => {
            let reason = format!("{:?} tools in {mode} mode: {by_mode:?}", call.category).to_lowercase();
            decided(by_mode, reason)
        }
    }
}

enum Hit {
    Yes,
    No,
    Unsure(String),
}

/// Whether a deny or ask rule matches.
fn rule_hits(rule: &PermissionRule, call: &ProposedCall<'_>, line: &CommandLine) -> Hit {
    let Some(pattern) = &rule.pattern else { return Hit::Yes };
    match &pattern.matcher {
        Matcher::Command(words) => {
            if line.commands.iter().any(|argv| command_starts_with(argv, words, true)) {
                Hit::Yes
            } else if let Some(why) = &line.opaque {
                Hit::Unsure(format!("the command line is not plain words ({why})"))
            } else {
                Hit::No
            }
        }
        _ if pattern.matches_string(call.arguments) => Hit::Yes,
        _ => Hit::No,
    }
}

/// The allow rules that together allow the call, if they do.
fn allowed_by<'r>(
    covering: &[&'r PermissionRule],
    call: &ProposedCall<'_>,
    line: &CommandLine,
) -> Option<Vec<&'r PermissionRule>> {
    let allows = covering.iter().copied().filter(|r| r.permission == Permission::Allow);
    let mut command_rules = Vec::new();
    for rule in allows {
        match rule.pattern.as_ref().map(|p| &p.matcher) {
            None => return Some(vec![rule]),
            Some(Matcher::Command(words)) => command_rules.push((rule, words)),
            Some(_) if rule.pattern.as_ref().is_some_and(|p| p.matches_string(call.arguments)) => {
                return Some(vec![rule]);
            }
            Some(_) => {}
        }
    }
    let plain = line.opaque.is_none() && line.redirects.is_empty() && !line.commands.is_empty();
    if command_rules.is_empty() || !plain {
        return None;
    }
    let mut used: Vec<&PermissionRule> = Vec::new();
    for argv in &line.commands {
        let (rule, _) = command_rules.iter().find(|(_, words)| command_starts_with(argv, words, false))?;
        if !used.iter().any(|r| std::ptr::eq(*r, *rule)) {
            used.push(rule);
        }
    }
    Some(used)
}

/// Whether `argv` begins with `words`; `strip` compares the first word
/// without its directories (for deny and ask rules).
fn command_starts_with(argv: &[String], words: &[String], strip: bool) -> bool {
    if words.is_empty() || argv.len() < words.len() {
        return false;
    }
    let first_matches = if strip { base_name(&argv[0]) == base_name(&words[0]) } else { argv[0] == words[0] };
    first_matches && argv[1..words.len()].iter().zip(&words[1..]).all(|(a, w)| a == w)
}

/// A command line for a tool that reports none, built only when a command
/// rule needs one: an argv array is taken as is; a string is split on
/// whitespace when it is plain words, and is opaque otherwise.
fn fallback_line(arguments: &serde_json::Value, rules: &[&PermissionRule]) -> CommandLine {
    let pointer = rules.iter().find_map(|r| match &r.pattern {
        Some(ArgumentPattern { pointer, matcher: Matcher::Command(_) }) => Some(pointer.as_str()),
        _ => None,
    });
    let Some(pointer) = pointer else { return CommandLine::default() };
    match arguments.pointer(pointer) {
        Some(serde_json::Value::String(text)) => {
            let plain =
                text.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || "-_./=,:+@%".contains(c));
            if plain {
                CommandLine::plain(vec![text.split_whitespace().map(str::to_owned).collect()])
            } else {
                CommandLine::opaque("the tool reports no parsed command and this one is not plain words")
            }
        }
        Some(serde_json::Value::Array(items)) => {
            match items.iter().map(|i| i.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>() {
                Some(argv) => CommandLine::plain(vec![argv]),
                None => CommandLine::opaque("the command is not a list of strings"),
            }
        }
        _ => CommandLine::default(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shell(commands: &[&[&str]]) -> CallEffects {
        CallEffects::command(CommandLine::plain(
            commands.iter().map(|c| c.iter().map(|w| (*w).to_owned()).collect()).collect(),
        ))
    }

    fn decide_shell(mode: Mode, rules: &[PermissionRule], effects: &CallEffects) -> Decided {
        let args = json!({ "command": "unused: effects carry the parsed line" });
        decide(mode, rules, &ProposedCall::new("shell", ToolCategory::Execute, &args, effects))
    }

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
    fn external_tools_ask_until_autonomous_and_are_denied_read_only() {
        use Permission::*;
        let table =
            [(Mode::ReadOnly, Deny), (Mode::Propose, Ask), (Mode::Write, Ask), (Mode::Autonomous, Allow)];
        for (mode, answer) in table {
            assert_eq!(mode_default(mode, ToolCategory::External), answer, "{mode}");
        }
        let none = CallEffects::none();
        let args = json!({});
        let call = ProposedCall::new("mcp__srv__tool", ToolCategory::External, &args, &none);
        let allow = vec![PermissionRule::tool("mcp__srv__tool", Permission::Allow)];
        assert_eq!(decide(Mode::ReadOnly, &allow, &call).permission, Deny, "read-only is a ceiling");
        assert_eq!(decide(Mode::Propose, &allow, &call).permission, Allow, "a user rule may allow it");
        assert_eq!(
            serde_json::to_value(ToolCategory::External).unwrap(),
            json!("external"),
            "the category's serde name"
        );
    }

    #[test]
    fn command_rules_match_argv_words_and_deny_wins() {
        let rules = vec![
            PermissionRule::matching(
                "shell",
                ArgumentPattern::command("/command", "git status"),
                Permission::Allow,
            ),
            PermissionRule::matching("shell", ArgumentPattern::command("/command", "rm"), Permission::Deny),
        ];
        let d = |commands: &[&[&str]]| decide_shell(Mode::Propose, &rules, &shell(commands)).permission;
        assert_eq!(d(&[&["git", "status", "--short"]]), Permission::Allow);
        assert_eq!(d(&[&["git", "statusx"]]), Permission::Ask, "word-bounded");
        assert_eq!(d(&[&["./git", "status"]]), Permission::Ask, "allow compares the first word as written");
        assert_eq!(d(&[&["/bin/rm", "x"]]), Permission::Deny, "deny strips the path");
        assert_eq!(d(&[&["git", "status"], &["rm", "x"]]), Permission::Deny);
        assert_eq!(d(&[&["git", "status"], &["ls"]]), Permission::Ask, "every command must be allowed");
        assert_eq!(d(&[&["rmdir", "x"]]), Permission::Ask);
        let mut opaque = CommandLine::opaque("command substitution");
        opaque.commands.push(vec!["git".into(), "status".into()]);
        assert_eq!(
            decide_shell(Mode::Autonomous, &rules, &CallEffects::command(opaque)).permission,
            Permission::Ask,
            "an opaque line cannot be proved not to run rm"
        );
        let mut redirected = CommandLine::plain(vec![vec!["git".into(), "status".into()]]);
        redirected.redirects.push("out.txt".into());
        assert_eq!(
            decide_shell(Mode::Propose, &rules, &CallEffects::command(redirected)).permission,
            Permission::Ask
        );
    }

    #[test]
    fn read_only_network_and_protected_are_ceilings() {
        let allow_all = vec![PermissionRule::tool("shell", Permission::Allow)];
        assert_eq!(decide_shell(Mode::ReadOnly, &allow_all, &shell(&[&["ls"]])).permission, Permission::Deny);
        let fetch = vec![PermissionRule::tool("fetch", Permission::Allow)];
        let none = CallEffects::none();
        let empty = json!({});
        let call = ProposedCall::new("fetch", ToolCategory::Network, &empty, &none);
        assert_eq!(decide(Mode::Autonomous, &fetch, &call).permission, Permission::Ask);

        let hook = CallEffects::writes([".git/hooks/pre-commit"]);
        let args = json!({});
        let write = ProposedCall::new("write_file", ToolCategory::Write, &args, &hook);
        let autonomous = decide(Mode::Autonomous, &[], &write);
        assert_eq!((autonomous.permission, autonomous.protected), (Permission::Ask, true));
        let project = vec![PermissionRule::tool("write_file", Permission::Allow).from_project()];
        assert_eq!(decide(Mode::Autonomous, &project, &write).permission, Permission::Ask);
        let user = vec![PermissionRule::tool("write_file", Permission::Allow)];
        assert_eq!(decide(Mode::Autonomous, &user, &write).permission, Permission::Allow);
    }

    #[test]
    fn edit_capability_covers_every_tool_that_changes_files() {
        let rules = vec![PermissionRule::capability(Capability::Edit, Permission::Deny)];
        let args = json!({});
        let none = CallEffects::none();
        for tool in ["write_file", "edit_file", "apply_patch"] {
            let call = ProposedCall::new(tool, ToolCategory::Write, &args, &none);
            assert_eq!(decide(Mode::Autonomous, &rules, &call).permission, Permission::Deny, "{tool}");
        }
        let mut redirect = CommandLine::plain(vec![vec!["echo".into(), "x".into()]]);
        redirect.redirects.push("f".into());
        assert_eq!(
            decide_shell(Mode::Autonomous, &rules, &CallEffects::command(redirect)).permission,
            Permission::Deny
        );
        assert_eq!(decide_shell(Mode::Autonomous, &rules, &shell(&[&["ls"]])).permission, Permission::Allow);
    }

    #[test]
    fn string_patterns_ignore_leading_spaces_and_tools_without_a_parsed_line_fail_closed() {
        let rules =
            vec![PermissionRule::matching("run", ArgumentPattern::command("/cmd", "rm"), Permission::Deny)];
        let none = CallEffects::none();
        let d = |args: serde_json::Value| {
            decide(Mode::Autonomous, &rules, &ProposedCall::new("run", ToolCategory::Execute, &args, &none))
                .permission
        };
        assert_eq!(d(json!({ "cmd": "  rm -rf x" })), Permission::Deny);
        assert_eq!(d(json!({ "cmd": ["rm", "-rf", "."] })), Permission::Deny);
        assert_eq!(d(json!({ "cmd": "true; rm x" })), Permission::Ask);
        assert_eq!(d(json!({ "cmd": "ls -la" })), Permission::Allow);
        let prefix =
            vec![PermissionRule::matching("t", ArgumentPattern::prefix("/a", "rm"), Permission::Deny)];
        let args = json!({ "a": "   rm x" });
        let call = ProposedCall::new("t", ToolCategory::Execute, &args, &none);
        assert_eq!(decide(Mode::Autonomous, &prefix, &call).permission, Permission::Deny);
    }
}
