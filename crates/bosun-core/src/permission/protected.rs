//! Protected paths (invariant 20): files that configure bosun or the tools it
//! runs. A write to one is how a model (or a hostile repository) plants what
//! the next run trusts: `.git/config` with `core.fsmonitor` runs a command on
//! the next `git status`, `.git/hooks/pre-commit` on the next commit,
//! `.bosun/config.toml` raises the next session's permissions. Such a call
//! always asks, in every mode, and only a rule from the user's own
//! configuration may allow it.
//!
//! The check is lexical (the core does no I/O): a path is normalised (`.`,
//! `..` and repeated slashes) and compared by component, ASCII
//! case-insensitively (a case-insensitive file system opens `.GIT/config` as
//! `.git/config`). Shell words are checked the same way, and a word with glob
//! characters is protected when its pattern could match a protected name.

use super::effects::{CallEffects, CommandLine};

/// Directories whose whole contents are protected, at any depth.
pub const PROTECTED_DIRS: &[&str] = &[
    ".git",          // config (fsmonitor, pager, hooksPath), hooks, info/attributes
    ".bosun",        // bosun's project config
    ".claude",       // agent settings, hooks, commands, skills
    ".agents",       // agent and skill folders
    ".codex",        // another agent's project config and hooks
    ".gemini",       // another agent's project config
    ".cursor",       // editor-agent rules and MCP servers
    ".vscode",       // tasks that run on folder open, tool paths
    ".devcontainer", // commands run when the container is built
    ".husky",        // git hooks installed by the project
    ".ssh",          // keys and the commands `ssh` runs
];

/// File names that are protected in any directory.
pub const PROTECTED_FILES: &[&str] = &[
    ".mcp.json",
    "AGENTS.md",
    "AGENTS.override.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "GEMINI.md",
    ".gitmodules",
    ".gitconfig",
    ".envrc", // direnv runs it on `cd`
    ".pre-commit-config.yaml",
    ".bashrc",
    ".bash_profile",
    ".profile",
    ".zshrc",
    ".zshenv",
];

/// Variables that change what a later command runs or loads.
const SENSITIVE_VARIABLE_PREFIXES: &[&str] = &["GIT_", "LD_", "DYLD_"];
const SENSITIVE_VARIABLES: &[&str] = &["BASH_ENV", "ENV", "PROMPT_COMMAND", "PAGER", "EDITOR", "VISUAL"];

/// Why a call touches what configures bosun or its tools, if it does.
pub fn touched(effects: &CallEffects) -> Option<String> {
    if let Some(path) = effects.writes.iter().find(|p| is_protected(p)) {
        return Some(format!("`{path}` configures bosun or the tools it runs"));
    }
    effects.command.as_ref().and_then(command_touches)
}

fn command_touches(line: &CommandLine) -> Option<String> {
    for argv in &line.commands {
        if is_git_config_change(argv) {
            return Some("the command changes git's configuration".to_owned());
        }
    }
    if let Some(word) = line.words().find(|w| word_is_protected(w)) {
        return Some(format!("`{word}` configures bosun or the tools it runs"));
    }
    let sensitive = |name: &str| {
        SENSITIVE_VARIABLES.contains(&name) || SENSITIVE_VARIABLE_PREFIXES.iter().any(|p| name.starts_with(p))
    };
    line.assignments
        .iter()
        .find(|name| sensitive(name))
        .map(|name| format!("setting `{name}` changes what later commands run"))
}

/// `git config …`, `git -c key=value …` and `git --config-env …`: each can
/// set `core.fsmonitor`, `core.pager` or `core.hooksPath`, which run commands.
fn is_git_config_change(argv: &[String]) -> bool {
    let Some(program) = argv.first() else { return false };
    if base_name(program) != "git" {
        return false;
    }
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "-c" | "--config-env" => return true,
            w if w.starts_with("--config-env=") || (w.starts_with("-c") && w.len() > 2) => return true,
            // Global options that take a value.
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            subcommand => return subcommand == "config",
        }
    }
    false
}

/// The last path component of a command word: `/bin/rm` is `rm`.
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether a workspace path (as a call names it) is protected.
pub fn is_protected(path: &str) -> bool {
    names_protected(path, |component, name| component.eq_ignore_ascii_case(name))
}

/// Whether `path`, normalised, has a protected directory among its
/// components or a protected file name last, each compared with `matches`.
fn names_protected(path: &str, matches: impl Fn(&str, &str) -> bool) -> bool {
    let components = normalise(path);
    let Some(last) = components.last() else { return false };
    components.iter().any(|c| PROTECTED_DIRS.iter().any(|d| matches(c, d)))
        || PROTECTED_FILES.iter().any(|f| matches(last, f))
        || components.windows(2).any(|w| w[0] == ".config" && w[1] == "bosun")
}

/// A shell word: itself, and what follows `=` (`--output=.git/x`), with
/// glob patterns matched against the protected names.
fn word_is_protected(word: &str) -> bool {
    let value = word.rsplit('=').next().unwrap_or(word);
    [word, value].into_iter().any(|candidate| names_protected(candidate, component_matches))
}

/// Splits on `/`, drops empty and `.` components and applies `..`
/// lexically.
fn normalise(path: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A component against a protected name: equal ignoring ASCII case, or a
/// glob (`*`, `?`, `[…]`; a brace group counts as `*`) that could match it.
fn component_matches(component: &str, name: &str) -> bool {
    if component.eq_ignore_ascii_case(name) {
        return true;
    }
    if !component.contains(['*', '?', '[', '{']) {
        return false;
    }
    let pattern: Vec<char> = component.to_ascii_lowercase().chars().collect();
    let text: Vec<char> = name.to_ascii_lowercase().chars().collect();
    glob(&pattern, &text)
}

/// A small glob matcher for one component; bash's leading-dot rule is
/// ignored on purpose (`dotglob` may be set), so `*` may match `.git`.
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.first() {
        None => text.is_empty(),
        Some('*') => (0..=text.len()).any(|skip| glob(&pattern[1..], &text[skip..])),
        Some('{') => {
            // Whatever a brace group expands to: treat it as `*`.
            let rest =
                pattern.iter().position(|c| *c == '}').map_or(&pattern[1..], |end| &pattern[end + 1..]);
            (0..=text.len()).any(|skip| glob(rest, &text[skip..]))
        }
        Some('?') => !text.is_empty() && glob(&pattern[1..], &text[1..]),
        Some('[') => match pattern.iter().position(|c| *c == ']') {
            // A class matches any one character: over-matching only asks more.
            Some(end) if end > 1 => !text.is_empty() && glob(&pattern[end + 1..], &text[1..]),
            _ => text.first() == Some(&'[') && glob(&pattern[1..], &text[1..]),
        },
        Some(c) => text.first() == Some(c) && glob(&pattern[1..], &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(commands: &[&[&str]]) -> CallEffects {
        CallEffects::command(CommandLine::plain(
            commands.iter().map(|c| c.iter().map(|w| (*w).to_owned()).collect()).collect(),
        ))
    }

    #[test]
    fn paths_that_configure_bosun_or_its_tools_are_protected() {
        for path in [
            ".git/config",
            ".git",
            "./.git/hooks/pre-commit",
            "a/../.git/config",
            "sub/.git/config",
            ".GIT/config",
            ".bosun/config.toml",
            ".claude/settings.json",
            ".agents/skills/x/SKILL.md",
            ".mcp.json",
            "AGENTS.md",
            "docs/CLAUDE.md",
            ".envrc",
            "/home/u/.config/bosun/config.toml",
            ".vscode/tasks.json",
        ] {
            assert!(is_protected(path), "{path}");
        }
        for path in [
            "src/main.rs",
            "git/config",
            ".gitignore",
            "AGENTS.md.bak",
            ".github/workflows/ci.yml",
            ".git-blame",
        ] {
            assert!(!is_protected(path), "{path}");
        }
    }

    #[test]
    fn shell_words_globs_and_git_config_changes_are_seen() {
        let touches = |commands: &[&[&str]]| touched(&line(commands)).is_some();
        assert!(touches(&[&["cp", "x", ".git/hooks/pre-commit"]]));
        assert!(touches(&[&["cat", ".g?t/config"]]));
        assert!(touches(&[&["echo", ".{g,}it"]]));
        assert!(touches(&[&["rm", "-rf", "*"]]), "`*` could be AGENTS.md");
        assert!(touches(&[&["tool", "--out=.bosun/config.toml"]]));
        assert!(touches(&[&["git", "config", "core.fsmonitor", "x"]]));
        assert!(touches(&[&["/usr/bin/git", "-c", "core.pager=sh", "log"]]));
        assert!(touches(&[&["git", "-C", "sub", "config", "a", "b"]]));
        assert!(!touches(&[&["git", "status"]]));
        assert!(!touches(&[&["cat", "*.py"]]));
        assert!(!touches(&[&["git", "commit", "-m", "update AGENTS.md docs"]]));
        let mut assigns = CommandLine::plain(vec![vec!["git".into(), "status".into()]]);
        assigns.assignments.push("GIT_CONFIG_COUNT".into());
        assert!(touched(&CallEffects::command(assigns)).is_some());
        let mut redirect = CommandLine::plain(vec![vec!["echo".into()]]);
        redirect.redirects.push(".git/config".into());
        assert!(touched(&CallEffects::command(redirect)).is_some());
        assert!(touched(&CallEffects::writes(["src/.bosun/x"])).is_some());
        assert!(touched(&CallEffects::writes(["src/lib.rs"])).is_none());
    }
}
