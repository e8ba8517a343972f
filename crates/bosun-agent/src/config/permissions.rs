//! Permission rules as written (docs/trust.md): bosun's tool and capability
//! names, and Claude Code's tool names and rule forms (`Bash`, `Bash(rm:*)`,
//! `Edit`, `mcp__server__tool`), in a `[permissions]` table or in the
//! `permissions` of a project's `.claude/settings.json`.
//!
//! A rule on a name no tool has would be accepted and match nothing, so a
//! deny the user believes in would stop nothing: every Claude Code form is
//! either mapped onto bosun's tools and matchers or refused naming the entry
//! (an error in a TOML file, a notice for Claude's own settings). Where
//! Claude Code's meaning is wider than one bosun tool, a deny or ask covers
//! the widest reading and an allow the narrowest.

use std::fmt;
use std::path::Path;

use crate::error::{Context, Result, bail};
use bosun_core::permission::Capability;
use bosun_core::{ArgumentPattern, Permission, PermissionRule};
use serde::Deserialize;
use serde_json::Value;

use super::hooks::{CLAUDE_DIR, CLAUDE_SETTINGS, read_claude_file};
use super::{Settings, Source};
use bosun_core::sanitize;

/// Claude Code's names bosun reads, for messages.
const CLAUDE_NAMES: &str =
    "Bash, Read, Edit, MultiEdit, Write, NotebookEdit, Glob, Grep, LS, Task, Skill, mcp__SERVER__TOOL";

/// The core rules one `[permissions]` entry stands for: `name = rule`.
pub fn toml_rules(name: &str, rule: &ToolRule) -> Result<Vec<PermissionRule>> {
    let at = format!("`permissions.{}`", sanitize::line(name));
    if let Some(capability) = Capability::from_name(name) {
        return match rule {
            ToolRule::Always(answer) => Ok(vec![PermissionRule::capability(capability, answer.permission())]),
            ToolRule::Prefixes(_) => {
                bail!("{at} is a capability and takes one answer: \"allow\", \"ask\" or \"deny\"")
            }
        };
    }
    if name.starts_with("mcp__") {
        mcp_tool(name).map_err(|why| crate::error::invalid!("{at}: {why}"))?;
    } else if is_claude_form(name) {
        return match rule {
            ToolRule::Always(answer) => {
                claude_rules(name, *answer).map_err(|why| crate::error::invalid!("{at}: {why}"))
            }
            // Claude Code's `Bash` is bosun's shell, which takes command lists.
            ToolRule::Prefixes(prefixes) if name == "Bash" => Ok(command_rules("shell", prefixes.entries())),
            ToolRule::Prefixes(_) => bail!(
                "{at} takes one answer: \"allow\", \"ask\" or \"deny\" (only `Bash` and bosun's `shell` take \
                 command lists)"
            ),
        };
    } else if name.contains(['(', ')', '*']) {
        bail!(
            "{at}: a rule names one tool; argument forms are Claude Code's (`\"Bash(rm:*)\" = \"deny\"`), and \
             bosun's own is `shell = {{ deny = [\"rm\"] }}`"
        );
    }
    Ok(match rule {
        ToolRule::Always(answer) => vec![PermissionRule::tool(name, answer.permission())],
        ToolRule::Prefixes(prefixes) => command_rules(name, prefixes.entries()),
    })
}

/// Rules on argv words of the command `tool` runs (its `command` argument).
fn command_rules<'a>(tool: &str, entries: impl Iterator<Item = (Answer, &'a str)>) -> Vec<PermissionRule> {
    entries
        .map(|(answer, prefix)| {
            PermissionRule::matching(tool, ArgumentPattern::command("/command", prefix), answer.permission())
        })
        .collect()
}

/// Whether a name is written in Claude Code's form: its tool names are
/// capitalised (`Bash`), bosun's are not.
fn is_claude_form(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// `mcp__SERVER__TOOL`, the one MCP form a rule on one tool can hold.
fn mcp_tool(name: &str) -> Result<(), String> {
    let parts = name.strip_prefix("mcp__").map(|rest| rest.splitn(2, "__").collect::<Vec<_>>());
    match parts.as_deref() {
        Some([server, tool]) if !server.is_empty() && !tool.is_empty() && !name.contains(['*', '(', ')']) => {
            Ok(())
        }
        _ => Err("names a whole MCP server or a pattern; bosun's rules name one tool, `mcp__SERVER__TOOL`, \
                  each written out"
            .to_owned()),
    }
}

/// The rules a Claude Code permission entry (`Bash(npm run test)`) stands
/// for with `answer`, or why bosun cannot apply it.
pub fn claude_rules(entry: &str, answer: Answer) -> Result<Vec<PermissionRule>, String> {
    let (tool, argument) = match entry.split_once('(') {
        Some((tool, rest)) => match rest.strip_suffix(')') {
            Some(argument) => (tool, Some(argument)),
            None => return Err("is not `Tool` or `Tool(argument)`".to_owned()),
        },
        None => (entry, None),
    };
    let permission = answer.permission();
    let tool_rule = |name: &str| PermissionRule::tool(name, permission);
    let narrowing = answer != Answer::Allow;
    if tool.starts_with("mcp__") {
        if argument.is_some() {
            return Err("an MCP tool's rule takes no argument".to_owned());
        }
        mcp_tool(tool)?;
        return Ok(vec![tool_rule(tool)]);
    }
    match (tool, argument) {
        ("Bash", None) => Ok(vec![tool_rule("shell")]),
        ("Bash", Some(argument)) => bash_rule(argument, answer).map(|rule| vec![rule]),
        ("WebFetch" | "WebSearch", _) => {
            Err(format!("bosun has no `{tool}` tool (no web tool is built in); leave the entry out"))
        }
        ("Read" | "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "Glob" | "Grep" | "LS", Some(_)) => {
            Err(format!(
                "bosun's rules cannot match paths, so `{tool}(…)` cannot be applied as Claude Code means it; \
             write `{tool} = \"{}\"` for the whole tool, or leave the entry out",
                answer.as_str()
            ))
        }
        // Claude Code's Read covers every tool that reads files.
        ("Read", None) if narrowing => Ok(["read_file", "list_files", "search"].map(tool_rule).to_vec()),
        // Its Edit covers every tool that edits files: bosun's `edit` capability.
        ("Edit" | "MultiEdit" | "Write" | "NotebookEdit", None) if narrowing => {
            Ok(vec![PermissionRule::capability(Capability::Edit, permission)])
        }
        (name, None) => match bosun_tools::compat::bosun_tool_name(name) {
            Some(bosun) => Ok(vec![tool_rule(bosun)]),
            None => Err(format!("is not a tool bosun has (Claude Code's names it reads: {CLAUDE_NAMES})")),
        },
        (_, Some(_)) => Err(format!("bosun cannot match the argument of a `{tool}` rule")),
    }
}

/// `Bash(…)`: `rm:*` or `npm run *` (a prefix of argv words), `npm run
/// test` (that command exactly), `*` (every command).
fn bash_rule(argument: &str, answer: Answer) -> Result<PermissionRule, String> {
    let argument = argument.trim();
    let permission = answer.permission();
    if argument == "*" {
        return Ok(PermissionRule::tool("shell", permission));
    }
    let (words, prefix) = match argument.strip_suffix(":*").or_else(|| argument.strip_suffix(" *")) {
        Some(words) => (words.trim(), true),
        None => (argument, false),
    };
    if words.is_empty() {
        return Err("names no command".to_owned());
    }
    if words.contains(|c: char| "*?[]'\"`$;|&<>(){}\\".contains(c) || c.is_control()) {
        return Err(
            "holds a wildcard or shell syntax; bosun matches a command's words (`Bash(git push:*)`), so it \
             cannot apply this one as Claude Code means it"
                .to_owned(),
        );
    }
    Ok(match (prefix, answer) {
        // An allow covers exactly what was written; a deny or ask every
        // command that begins with it (wider, so stricter).
        (false, Answer::Allow) => {
            PermissionRule::matching("shell", ArgumentPattern::exact("/command", words), permission)
        }
        _ => PermissionRule::matching("shell", ArgumentPattern::command("/command", words), permission),
    })
}

/// What a Claude Code settings file holds of permissions.
#[derive(Debug, Default)]
struct ClaudePermissions {
    /// Each entry of `allow`, `deny` and `ask`, with its answer.
    entries: Vec<(Answer, String)>,
    /// The other keys of `permissions` (`defaultMode`, …), not read.
    other_keys: Vec<String>,
}

fn parse_claude_permissions(text: &str, file: &Path) -> Result<ClaudePermissions> {
    let shown = file.display();
    let root: Value = serde_json::from_str(text).with_context(|| format!("{shown} is not valid JSON"))?;
    let Some(root) = root.as_object() else { bail!("{shown} is not a JSON object") };
    let mut found = ClaudePermissions::default();
    let permissions = match root.get("permissions") {
        None | Some(Value::Null) => return Ok(found),
        Some(Value::Object(permissions)) => permissions,
        Some(_) => bail!("{shown}: `permissions` is not an object"),
    };
    for (key, value) in permissions {
        let answer = match key.as_str() {
            "allow" => Answer::Allow,
            "deny" => Answer::Deny,
            "ask" => Answer::Ask,
            _ => {
                found.other_keys.push(key.clone());
                continue;
            }
        };
        let Some(items) = value.as_array() else { bail!("{shown}: `permissions.{key}` is not an array") };
        for (at, item) in items.iter().enumerate() {
            let Some(entry) = item.as_str() else {
                bail!("{shown}: `permissions.{key}[{at}]` is not a string")
            };
            found.entries.push((answer, entry.to_owned()));
        }
    }
    // Deny first, then ask, then allow: the order they are decided in.
    found.entries.sort_by_key(|(answer, _)| match answer {
        Answer::Deny => 0,
        Answer::Ask => 1,
        Answer::Allow => 2,
    });
    Ok(found)
}

/// The `permissions` of the workspace's `.claude/settings.json` and
/// `.claude/settings.local.json`, as the project's rules (they never allow a
/// protected path): all of a trusted project's, only the deny and ask
/// entries of an untrusted one's (they only narrow). Whatever is not
/// applied is named in a notice.
pub(super) fn project_claude_permissions(settings: &mut Settings, dir: &Path, trusted: bool) -> Result<()> {
    for name in CLAUDE_SETTINGS {
        let path = dir.join(CLAUDE_DIR).join(name);
        let shown = path.display().to_string();
        let read = read_claude_file(dir, name)
            .and_then(|text| text.map(|t| parse_claude_permissions(&t, &path)).transpose());
        let found = match read {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err(error) if trusted => return Err(error),
            // An untrusted project's unreadable file cannot stop the run;
            // what it may have denied is said not to apply.
            Err(error) => {
                settings.hook_notices.push(format!("{error:#}; its permissions are not applied"));
                continue;
            }
        };
        let mut untrusted_allows = Vec::new();
        for (answer, entry) in &found.entries {
            let entry_shown = sanitize::line(entry);
            if !trusted && *answer == Answer::Allow {
                untrusted_allows.push(format!("`{entry_shown}`"));
                continue;
            }
            match claude_rules(entry, *answer) {
                Ok(rules) => {
                    settings.rules.extend(rules.into_iter().map(PermissionRule::from_project));
                    let key = format!("permissions.{entry}");
                    settings.note(&key, answer.as_str(), Source::File(path.clone()));
                }
                Err(why) => settings.hook_notices.push(format!(
                    "{shown}: `permissions.{}` entry `{entry_shown}` is not applied: it {why}",
                    answer.as_str()
                )),
            }
        }
        if !untrusted_allows.is_empty() {
            settings.hook_notices.push(format!(
                "{shown}: an untrusted project's allow rules are not applied: {} (`bosun trust` applies them)",
                untrusted_allows.join(", ")
            ));
        }
        for key in &found.other_keys {
            settings.hook_notices.push(format!(
                "{shown}: `permissions.{}` is not read by bosun; ignored",
                sanitize::line(key)
            ));
        }
    }
    Ok(())
}

/// A tool's rule: one answer for every call, or answers by command prefix.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum ToolRule {
    /// `shell = "ask"`.
    Always(Answer),
    /// `shell = { allow = ["git status"], deny = ["rm"] }`.
    Prefixes(Prefixes),
}

// By hand rather than `untagged`: serde's untagged error ("data did not
// match any variant of untagged enum ToolRule") says nothing a person can act on.
impl TryFrom<toml::Value> for ToolRule {
    type Error = String;

    fn try_from(value: toml::Value) -> std::result::Result<Self, String> {
        const EXPECTED: &str = "a rule is \"allow\", \"ask\" or \"deny\", or a table of command prefixes \
                                such as { allow = [\"git status\"], deny = [\"rm\"] }";
        match value {
            toml::Value::String(text) => match text.as_str() {
                "allow" => Ok(Self::Always(Answer::Allow)),
                "ask" => Ok(Self::Always(Answer::Ask)),
                "deny" => Ok(Self::Always(Answer::Deny)),
                other => Err(format!("`{}` is not a rule: {EXPECTED}", sanitize::line(other))),
            },
            table @ toml::Value::Table(_) => Prefixes::deserialize(table)
                .map(Self::Prefixes)
                .map_err(|e| format!("{}: {EXPECTED}", e.message())),
            other => Err(format!("a value of type {} is not a rule: {EXPECTED}", other.type_str())),
        }
    }
}

/// allow / ask / deny.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// Run it.
    Allow,
    /// Ask.
    Ask,
    /// Refuse.
    Deny,
}

/// Answers by command prefix (for the shell tool: the `command` argument).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prefixes {
    /// Commands that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Commands that ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Commands that are refused.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl ToolRule {
    /// The core rules this stands for, under `name`: a tool, a capability
    /// (`edit`) that covers every tool with it, or one of Claude Code's
    /// names and forms (`Bash`, `Bash(rm:*)`), mapped or refused in
    /// `permissions.rs`. Prefixes are argv words of the command the tool
    /// runs (its `command` argument), matched on the parsed command line
    /// (see `bosun_core::Matcher::Command`).
    pub fn rules(&self, name: &str) -> Result<Vec<PermissionRule>> {
        toml_rules(name, self)
    }
}

impl Answer {
    /// The core's answer.
    pub fn permission(self) -> Permission {
        match self {
            Self::Allow => Permission::Allow,
            Self::Ask => Permission::Ask,
            Self::Deny => Permission::Deny,
        }
    }

    /// As written in config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl Prefixes {
    /// Every entry with its answer.
    pub fn entries(&self) -> impl Iterator<Item = (Answer, &str)> {
        [(Answer::Allow, &self.allow), (Answer::Ask, &self.ask), (Answer::Deny, &self.deny)]
            .into_iter()
            .flat_map(|(answer, list)| list.iter().map(move |p| (answer, p.as_str())))
    }
}

impl fmt::Display for ToolRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Always(answer) => write!(f, "\"{}\"", answer.as_str()),
            Self::Prefixes(p) => {
                write!(f, "{{ allow = {:?}, ask = {:?}, deny = {:?} }}", p.allow, p.ask, p.deny)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bosun_core::Permission;

    use super::*;

    fn rules(entry: &str, answer: Answer) -> Vec<PermissionRule> {
        claude_rules(entry, answer).unwrap_or_else(|why| panic!("{entry}: {why}"))
    }

    fn shell(words: &str, permission: Permission) -> PermissionRule {
        PermissionRule::matching("shell", ArgumentPattern::command("/command", words), permission)
    }

    #[test]
    fn claude_codes_forms_map_onto_bosuns_tools_and_matchers() {
        use Answer::{Allow, Ask, Deny};
        assert_eq!(rules("Bash", Deny), [PermissionRule::tool("shell", Permission::Deny)]);
        assert_eq!(rules("Bash(rm:*)", Deny), [shell("rm", Permission::Deny)]);
        assert_eq!(rules("Bash(npm run *)", Ask), [shell("npm run", Permission::Ask)]);
        assert_eq!(rules("Bash(npm run test)", Deny), [shell("npm run test", Permission::Deny)]);
        assert_eq!(
            rules("Bash(npm run test)", Allow),
            [PermissionRule::matching(
                "shell",
                ArgumentPattern::exact("/command", "npm run test"),
                Permission::Allow
            )],
            "an allow covers exactly the command written"
        );
        assert_eq!(rules("Bash(*)", Ask), [PermissionRule::tool("shell", Permission::Ask)]);
        let edit = PermissionRule::capability(Capability::Edit, Permission::Deny);
        for name in ["Edit", "MultiEdit", "Write", "NotebookEdit"] {
            assert_eq!(rules(name, Deny), std::slice::from_ref(&edit), "{name}: every tool that edits files");
        }
        assert_eq!(rules("Edit", Allow), [PermissionRule::tool("edit_file", Permission::Allow)]);
        assert_eq!(rules("Write", Allow), [PermissionRule::tool("write_file", Permission::Allow)]);
        assert_eq!(rules("Read", Deny).len(), 3, "read_file, list_files and search");
        assert_eq!(rules("Read", Allow), [PermissionRule::tool("read_file", Permission::Allow)]);
        for (claude, bosun) in
            [("Glob", "list_files"), ("LS", "list_files"), ("Grep", "search"), ("Task", "delegate_tasks")]
        {
            assert_eq!(rules(claude, Ask), [PermissionRule::tool(bosun, Permission::Ask)], "{claude}");
        }
        assert_eq!(
            rules("mcp__github__create_issue", Deny),
            [PermissionRule::tool("mcp__github__create_issue", Permission::Deny)]
        );
    }

    #[test]
    fn a_malformed_rule_says_what_a_rule_is_not_serdes_words() {
        #[derive(Debug, Deserialize)]
        struct Rules {
            #[allow(dead_code)]
            shell: ToolRule,
        }
        for (text, said) in [
            ("shell = 3", "a value of type integer is not a rule"),
            ("shell = \"maybe\"", "`maybe` is not a rule"),
            ("shell = { allw = [\"ls\"] }", "unknown field `allw`"),
        ] {
            let error = toml::from_str::<Rules>(text).map(|_| ()).unwrap_err().to_string();
            assert!(error.contains(said) && error.contains("a rule is \"allow\""), "{text}: {error}");
            assert!(!error.contains("untagged"), "{text}: {error}");
        }
        let ok: Rules = toml::from_str("shell = { allow = [\"git status\"] }").unwrap();
        assert!(matches!(ok.shell, ToolRule::Prefixes(p) if p.allow == ["git status"]));
        let ok: Rules = toml::from_str("shell = \"ask\"").unwrap();
        assert!(matches!(ok.shell, ToolRule::Always(Answer::Ask)));
    }

    #[test]
    fn forms_bosun_cannot_match_are_refused_with_the_reason() {
        for (entry, answer, why) in [
            ("Edit(src/**)", Answer::Deny, "cannot match paths"),
            ("Read(./.env)", Answer::Deny, "cannot match paths"),
            ("WebFetch", Answer::Deny, "no `WebFetch` tool"),
            ("WebFetch(domain:example.com)", Answer::Allow, "no `WebFetch` tool"),
            ("WebSearch", Answer::Ask, "no `WebSearch` tool"),
            ("NotebookEdit", Answer::Allow, "not a tool bosun has"),
            ("TodoWrite", Answer::Deny, "not a tool bosun has"),
            ("Bash(git push * --force)", Answer::Deny, "wildcard or shell syntax"),
            ("Bash(echo \"x\")", Answer::Deny, "wildcard or shell syntax"),
            ("Bash(:*)", Answer::Deny, "names no command"),
            ("Bash(rm", Answer::Deny, "`Tool(argument)`"),
            ("Task(reviewer)", Answer::Deny, "cannot match the argument"),
            ("mcp__github", Answer::Deny, "whole MCP server"),
            ("mcp__github__*", Answer::Deny, "whole MCP server"),
        ] {
            let error = claude_rules(entry, answer).unwrap_err();
            assert!(error.contains(why), "{entry}: {error}");
        }
    }
}

/// A rule as a person types it (`/permissions deny shell rm -rf`,
/// `/permissions allow Bash(git status:*)`, `/permissions ask edit`):
/// `answer` (`allow`, `ask`, `deny`), a tool, capability or Claude Code
/// name, and for `shell` (or `Bash`) optionally the command's first words.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TypedRule {
    /// The `[permissions]` key.
    pub name: String,
    /// The rule as the config writes it.
    pub rule: toml::Value,
    /// The core rules it stands for.
    pub rules: Vec<PermissionRule>,
}

impl TypedRule {
    /// Parses `answer NAME [WORDS…]`, checked as a config entry would be.
    pub fn parse(text: &str) -> Result<Self> {
        const FORM: &str = "a rule is `allow|ask|deny NAME [COMMAND WORDS]`, e.g. `deny shell rm -rf`";
        let text = text.trim();
        let (answer, rest) = text.split_once(char::is_whitespace).context(FORM)?;
        if !["allow", "ask", "deny"].contains(&answer) {
            bail!("`{}` is not an answer: use allow, ask or deny", sanitize::line(answer));
        }
        let rest = rest.trim_start();
        // Claude Code's `Bash(git status:*)` holds spaces: the name runs to
        // its closing parenthesis.
        let name_end = match rest.find(['(', ' ']) {
            Some(at) if rest[at..].starts_with('(') => rest.find(')').map_or(rest.len(), |close| close + 1),
            Some(at) => at,
            None => rest.len(),
        };
        let (name, words) = rest.split_at(name_end);
        if name.is_empty() {
            bail!("{FORM}");
        }
        let words: Vec<&str> = words.split_whitespace().collect();
        let rule = if words.is_empty() {
            toml::Value::String(answer.to_owned())
        } else {
            let mut table = toml::Table::new();
            table.insert(answer.to_owned(), toml::Value::Array(vec![toml::Value::String(words.join(" "))]));
            toml::Value::Table(table)
        };
        let parsed = ToolRule::try_from(rule.clone()).map_err(|why| crate::error::invalid!("{why}"))?;
        let rules = toml_rules(name, &parsed)?;
        Ok(Self { name: name.to_owned(), rule, rules })
    }

    /// Adds the rule to the `[permissions]` table of the user's config file
    /// (a command list joins the lists already there; a single answer
    /// replaces the one there).
    pub fn save(&self, user_file: &Path) -> Result<()> {
        super::trust::edit_user_file(user_file, |doc| {
            let table = super::trust::top_table(doc, "permissions", user_file)?;
            let merged = match (&self.rule, table.get(&self.name).and_then(|item| item.as_value())) {
                (toml::Value::Table(new), Some(toml_edit::Value::InlineTable(old))) => {
                    let mut merged = old.clone();
                    for (answer, words) in new {
                        let mut list = merged
                            .get(answer)
                            .and_then(toml_edit::Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        for word in words.as_array().into_iter().flatten().filter_map(toml::Value::as_str) {
                            if !list.iter().any(|v| v.as_str() == Some(word)) {
                                list.push(word);
                            }
                        }
                        merged.insert(answer, toml_edit::Value::Array(list));
                    }
                    toml_edit::Value::InlineTable(merged)
                }
                _ => toml_value(&self.rule),
            };
            table.insert(&self.name, toml_edit::Item::Value(merged));
            Ok(())
        })
    }
}

/// A rule's TOML value in `toml_edit`'s form.
fn toml_value(rule: &toml::Value) -> toml_edit::Value {
    match rule {
        toml::Value::Table(table) => {
            let mut inline = toml_edit::InlineTable::new();
            for (key, value) in table {
                inline.insert(key, toml_value(value));
            }
            toml_edit::Value::InlineTable(inline)
        }
        toml::Value::Array(items) => toml_edit::Value::Array(items.iter().map(toml_value).collect()),
        other => {
            other.as_str().map_or_else(|| toml_edit::Value::from(other.to_string()), toml_edit::Value::from)
        }
    }
}

#[cfg(test)]
mod typed_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_typed_rule_reads_as_the_config_would_and_saves_into_the_users_file() {
        let deny = TypedRule::parse("deny shell rm -rf").unwrap();
        assert_eq!(deny.rules.len(), 1);
        assert!(deny.rules[0].describe().contains("deny `rm -rf`"), "{}", deny.rules[0].describe());
        let claude = TypedRule::parse("allow Bash(git status:*)").unwrap();
        assert!(!claude.rules.is_empty());
        assert!(TypedRule::parse("maybe shell").is_err());
        assert!(TypedRule::parse("deny").is_err());
        assert!(TypedRule::parse("deny nosuch(x)").is_err());

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "# mine\nmode = \"write\"\n[permissions]\nshell = { deny = [\"curl\"] }\n")
            .unwrap();
        deny.save(&file).unwrap();
        TypedRule::parse("ask edit").unwrap().save(&file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains(r#"shell = { deny = ["curl", "rm -rf"] }"#), "{text}");
        assert!(text.contains(r#"edit = "ask""#), "{text}");
    }
}
