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
//! `.git/config`). Protected are the directories of [`PROTECTED_DIRS`] at any
//! depth, the file names of [`PROTECTED_FILES`] in any directory, anything
//! under a `.config/bosun` or `.config/git` pair of components, and a path
//! ending in `bosun/config.toml` or `git/config` whatever comes before it
//! (`$XDG_CONFIG_HOME` may point anywhere; `~` is a component like another).
//! Shell words are checked the same way, and a word with glob characters is
//! protected when its pattern could match a protected name.
//!
//! A shell line also touches a protected path, as far as this check can
//! tell, when where it writes is not a fixed path: a redirect target with an
//! expansion, substitution, glob or brace (`> ${d}t/hooks/x`), a `cd`,
//! `pushd`, `env -C` or `sudo -D` to such a directory (or to `-`, or with
//! `HOME`, `OLDPWD`, `CDPATH` or `DIRSTACK` set by the line), a fixed
//! directory joined with a word of the line that is protected (`cd
//! /tmp/xdg/bosun && echo … >> config.toml`), or any redirect after changing
//! to a folder named `bosun`.

use crate::tool::effects::{CallEffects, CommandLine};

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

/// Variables that change what a later command runs or loads (the prompt
/// strings and bash's command and alias tables run code in the shell itself;
/// `CDPATH` moves a `cd` into another directory).
const SENSITIVE_VARIABLE_PREFIXES: &[&str] = &["GIT_", "LD_", "DYLD_", "BASH_FUNC_"];
const SENSITIVE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "BASH_CMDS",
    "BASH_ALIASES",
    "CDPATH",
    "PAGER",
    "EDITOR",
    "VISUAL",
];

/// Pairs of components whose contents are protected: the user's
/// configuration folders under `~/.config`.
const CONFIG_DIRS: &[[&str; 2]] = &[[".config", "bosun"], [".config", "git"]];

/// Configuration files found by their folder's name, wherever
/// `$XDG_CONFIG_HOME` points: a path ending in these two components.
const CONFIG_FILES: &[[&str; 2]] = &[["bosun", "config.toml"], ["git", "config"]];

/// A folder of this name may be `$XDG_CONFIG_HOME/bosun`: a redirect after
/// changing to it may write bosun's configuration under any file name the
/// check cannot foresee (`config.toml` joined later, a rename).
const CONFIG_FOLDERS: &[&str] = &["bosun"];

/// Variables that decide where `cd`, `pushd` and `popd` go.
const DIRECTORY_VARIABLES: &[&str] = &["HOME", "OLDPWD", "CDPATH", "DIRSTACK"];

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
    if let Some(name) = line.assignments.iter().find(|name| sensitive(name)) {
        return Some(format!("setting `{name}` changes what later commands run"));
    }
    if let Some(target) = line.redirects.iter().find(|target| is_unfixed(target)) {
        return Some(format!(
            "`{target}` is not a fixed path, so it may name a file that configures bosun or its tools"
        ));
    }
    directory_touches(line)
}

/// Whether a shell word, as the analysis reports it, may stand for another
/// path when bash runs it: an expansion or substitution (`$`, a backtick), a
/// glob, or a brace expansion. `~` is not: it is read as a component.
fn is_unfixed(word: &str) -> bool {
    word.contains(['$', '`', '*', '?', '[']) || has_brace_expansion(word)
}

/// Where a line writes when it changes directory first: a directory that is
/// not a fixed path may be `.git/hooks`; a fixed one is joined with every
/// word of the line (`cd /tmp/xdg/bosun` then `config.toml`).
fn directory_touches(line: &CommandLine) -> Option<String> {
    let directories = directories(line);
    if directories.is_empty() {
        return None;
    }
    if let Some(name) = line.assignments.iter().find(|name| DIRECTORY_VARIABLES.contains(&name.as_str())) {
        return Some(format!(
            "the line sets `{name}` and changes directory, so where it writes is not known"
        ));
    }
    let mut fixed = Vec::new();
    for directory in &directories {
        match directory {
            Ok(directory) => fixed.push(directory.as_str()),
            Err(word) => {
                return Some(format!(
                    "the line changes to `{word}`, which is not a fixed directory, so where it writes is not known"
                ));
            }
        }
    }
    // Each directory alone and as reached through the ones before it.
    let mut candidates = Vec::new();
    let mut current = String::new();
    for directory in fixed {
        candidates.push(directory.to_owned());
        current = if directory.starts_with(['/', '~']) {
            directory.to_owned()
        } else {
            format!("{current}/{directory}")
        };
        candidates.push(current.clone());
    }
    for directory in &candidates {
        let folder = normalise(directory).last().copied().unwrap_or("");
        if !line.redirects.is_empty() && CONFIG_FOLDERS.iter().any(|name| folder.eq_ignore_ascii_case(name)) {
            return Some(format!(
                "the line writes in `{directory}`, which may be bosun's configuration folder"
            ));
        }
        for word in line.words().filter(|word| !word.starts_with(['/', '~'])) {
            let value = word.rsplit('=').next().unwrap_or(word);
            if [word, value].into_iter().any(|part| word_is_protected(&format!("{directory}/{part}"))) {
                return Some(format!("`{directory}/{word}` configures bosun or the tools it runs"));
            }
        }
    }
    None
}

/// The directories a line changes to, in order: `Ok` a fixed path, `Err`
/// the word when it is not one (an expansion, `-`, a stack rotation).
fn directories(line: &CommandLine) -> Vec<Result<String, String>> {
    let mut found = Vec::new();
    for argv in &line.commands {
        let Some((program, args)) = argv.split_first() else { continue };
        let target = match base_name(program) {
            "cd" => Some(operand(args, &["-L", "-P", "-e", "-@"]).unwrap_or("~")),
            "pushd" => operand(args, &["-n"]),
            "popd" if line.assignments.iter().any(|name| name == "DIRSTACK") => Some("-"),
            "env" => option_value(args, 'C', "--chdir"),
            "sudo" => option_value(args, 'D', "--chdir"),
            _ => None,
        };
        let Some(target) = target else { continue };
        let rotation = target.len() > 1
            && target.starts_with(['+', '-'])
            && target.get(1..).is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if target == "-" || rotation || is_unfixed(target) {
            found.push(Err(target.to_owned()));
        } else {
            found.push(Ok(target.to_owned()));
        }
    }
    found
}

/// The first operand after the options of `cd` or `pushd`.
fn operand<'a>(args: &'a [String], options: &[&str]) -> Option<&'a str> {
    let mut words = args.iter().map(String::as_str).skip_while(|word| options.contains(word));
    match words.next() {
        Some("--") => words.next(),
        other => other,
    }
}

/// The value of `-C DIR` / `-CDIR` / `--chdir DIR` / `--chdir=DIR` among a
/// wrapper's leading options (a short option may end a cluster: `-iC DIR`).
fn option_value<'a>(args: &'a [String], short: char, long: &str) -> Option<&'a str> {
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        if word == "--" || !word.starts_with('-') {
            return None;
        }
        if word == long {
            return words.next();
        }
        if let Some(value) = word.strip_prefix(long).and_then(|rest| rest.strip_prefix('=')) {
            return Some(value);
        }
        if word.starts_with("--") {
            continue;
        }
        if let Some((_, attached)) = word.split_once(short) {
            return if attached.is_empty() { words.next() } else { Some(attached) };
        }
    }
    None
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
/// components, a protected file name last, a protected configuration
/// folder pair, or ends in a configuration file's two components, each
/// compared with `matches`.
fn names_protected(path: &str, matches: impl Fn(&str, &str) -> bool) -> bool {
    let components = normalise(path);
    let Some(last) = components.last() else { return false };
    let pair = |w: &[&str], [first, second]: &[&str; 2]| matches(w[0], first) && matches(w[1], second);
    components.iter().any(|c| PROTECTED_DIRS.iter().any(|d| matches(c, d)))
        || PROTECTED_FILES.iter().any(|f| matches(last, f))
        || components.windows(2).any(|w| CONFIG_DIRS.iter().any(|names| pair(w, names)))
        || components.len() >= 2
            && CONFIG_FILES.iter().any(|names| pair(&components[components.len() - 2..], names))
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
    if !component.contains(['*', '?', '[']) && !has_brace_expansion(component) {
        return false;
    }
    let pattern: Vec<char> = component.to_ascii_lowercase().chars().collect();
    let text: Vec<char> = name.to_ascii_lowercase().chars().collect();
    glob(&pattern, &text)
}

/// Where the brace group `pattern` starts with ends, if it is one bash
/// expands: `{a,b}` or `{1..3}`; `{}` and `{print $1}` are literal.
fn brace_group(pattern: &[char]) -> Option<usize> {
    let end = pattern.iter().position(|c| *c == '}')?;
    let inside = pattern.get(1..end)?;
    let range = inside.windows(2).any(|pair| pair == ['.', '.']);
    (inside.contains(&',') || range).then_some(end)
}

/// Whether a word holds a brace group bash expands.
fn has_brace_expansion(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    (0..chars.len()).any(|at| chars.get(at) == Some(&'{') && chars.get(at..).and_then(brace_group).is_some())
}

/// A small glob matcher for one component; bash's leading-dot rule is
/// ignored on purpose (`dotglob` may be set), so `*` may match `.git`.
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.first() {
        None => text.is_empty(),
        Some('*') => (0..=text.len()).any(|skip| glob(&pattern[1..], &text[skip..])),
        Some('{') if brace_group(pattern).is_some() => {
            // Whatever a brace group expands to: treat it as `*`.
            let rest = brace_group(pattern).map_or(&pattern[1..], |end| &pattern[end + 1..]);
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
            "src/git/config.rs",
            "git/configs",
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

    fn with(commands: &[&[&str]], redirects: &[&str], assignments: &[&str]) -> CallEffects {
        let mut line = CommandLine::plain(
            commands.iter().map(|c| c.iter().map(|w| (*w).to_owned()).collect()).collect(),
        );
        line.redirects = redirects.iter().map(|r| (*r).to_owned()).collect();
        line.assignments = assignments.iter().map(|a| (*a).to_owned()).collect();
        CallEffects::command(line)
    }

    #[test]
    fn user_configuration_of_git_and_bosun_is_protected_under_any_prefix() {
        for path in [
            ".config/git/config",
            "/home/u/.config/git/ignore",
            "/home/u/.CONFIG/Git/attributes",
            "git/config",
            "/tmp/xdg/git/config",
            "/tmp/xdg/GIT/Config",
            "/tmp/xdg/bosun/config.toml",
            "bosun/config.toml",
            "~/.gitconfig",
            "~/.config/bosun/config.toml",
            "~/.config/git/config",
        ] {
            assert!(is_protected(path), "{path}");
        }
        for path in ["bosun/config.toml.bak", "config.toml", "git", "bosun", "tools/git/configure"] {
            assert!(!is_protected(path), "{path}");
        }
        assert!(touched(&line(&[&["cp", "x", "/tmp/xdg/b?sun/config.toml"]])).is_some());
        assert!(touched(&line(&[&["tee", "--output=~/.config/git/config"]])).is_some());
    }

    #[test]
    fn redirects_and_directories_that_are_not_fixed_paths_are_protected() {
        let echo: &[&str] = &["echo", "x"];
        for target in
            ["\"$f\"", "out_${i}.txt", "`printf .git`/config", "$(x)", ".g*", "a?", "[.]git", "{a,b}"]
        {
            assert!(touched(&with(&[echo], &[target], &[])).is_some(), "{target}");
        }
        assert!(touched(&with(&[echo], &["out.txt", "~/notes.txt", "/tmp/x"], &[])).is_none());

        let touches = |commands: &[&[&str]], redirects: &[&str], assignments: &[&str]| {
            touched(&with(commands, redirects, assignments)).is_some()
        };
        // A directory that is not a fixed path: whatever follows may write there.
        assert!(touches(&[&["cd", "\"$(printf .gi)t/hooks\""], echo], &["pre-commit"], &[]));
        assert!(touches(&[&["cd", "$d"]], &[], &[]));
        assert!(touches(&[&["pushd", "-n", "${d}"]], &[], &[]));
        assert!(touches(&[&["cd", "-"], echo], &["x"], &[]));
        assert!(touches(&[&["cd", ".g*"]], &[], &[]));
        assert!(touches(&[&["env", "-C", "$d", "tee", "x"]], &["x"], &[]));
        assert!(touches(&[&["env", "--chdir=$d", "ls"]], &[], &[]));
        assert!(touches(&[&["sudo", "-D", "$d", "ls"]], &[], &[]));
        // The directory's variables chosen by the line.
        assert!(touches(&[&["cd"], echo], &["pre-commit"], &["HOME"]));
        assert!(touches(&[&["cd", "-"]], &[], &["OLDPWD"]));
        assert!(touches(&[&["cd", "hooks"]], &[], &["CDPATH"]));
        assert!(touches(&[&["popd"]], &[], &["DIRSTACK"]));
        // A fixed directory joined to what the line writes there.
        assert!(touches(&[&["cd", "/tmp/xdg/bosun"], echo], &["config.toml"], &[]));
        assert!(touches(&[&["cd", "/tmp/xdg/bosun"], echo], &["other.toml"], &[]));
        assert!(touches(&[&["cd", "/tmp/xdg"], &["cd", "bosun"], echo], &["config.toml"], &[]));
        assert!(touches(&[&["cd", "/tmp/xdg/bosun"], &["cp", "/tmp/x", "config.toml"]], &[], &[]));
        assert!(touches(&[&["cd", "/tmp/xdg/git"], echo], &["config"], &[]));
        assert!(touches(&[&["cd", "~/.config"], echo], &["git/ignore"], &[]));
        assert!(touches(&[&["cd", "sub"], echo], &["../.git/config"], &[]));
        assert!(!touches(&[&["cd", "src"], echo], &["out.txt"], &[]));
        assert!(!touches(&[&["cd", "/tmp/xdg/bosun"], &["ls"]], &[], &[]));
        assert!(!touches(&[&["cd", "crates/bosun-core"], echo], &["t.log"], &[]));
        assert!(!touches(&[&["cd"], echo], &["out.txt"], &[]));
    }

    #[test]
    fn braces_without_a_comma_or_a_range_are_literal() {
        let touches =
            |commands: &[&[&str]], redirects: &[&str]| touched(&with(commands, redirects, &[])).is_some();
        assert!(!touches(&[&["awk", "{print $1}", "f"]], &[]));
        assert!(!touches(&[&["find", ".", "-exec", "grep", "-l", "x", "{}", "+"]], &[]));
        assert!(!touches(&[&["echo", "x"]], &["out{}.txt"]));
        assert!(touches(&[&["cat", ".{g,x}it/config"]], &[]));
        assert!(touches(&[&["cat", "AGENTS.m{a..z}"]], &[]));
        assert!(touches(&[&["echo", "x"]], &["out{1,2}.txt"]));
    }
}
