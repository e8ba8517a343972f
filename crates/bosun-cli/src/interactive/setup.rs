//! Before and around the conversation: the first-run trust question, the
//! session to open, what the UI starts with (history file, paths to
//! complete, commands), and `@path` attachments read through the
//! workspace's handles.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use bosun_core::{ApprovalHandler, Session};
use bosun_tools::Workspace;
use bosun_tools::workspace::RelPath;
use sha2::{Digest, Sha256};

use super::Conversation;
use crate::config::{self, Env, TrustLevel};
use crate::exec::Stored;
use crate::sanitize;
use bosun_agent::Agent;

/// At most this many workspace paths are offered after `@`.
const MAX_PATHS: usize = 5_000;
/// An attached file larger than this is refused.
const MAX_ATTACHED_BYTES: u64 = 256 * 1024;

/// Asks once about a project that holds configuration its trust would
/// enable, and records the answer as `bosun trust` / `bosun untrust` do.
pub(super) fn ask_trust(dir: &Path, env: &Env) -> Result<()> {
    let Some(root) = config::unasked_trust(dir, env)? else { return Ok(()) };
    let Some(file) = config::user_file(env) else { return Ok(()) };
    let root_shown = sanitize::line(&root.display().to_string()).into_owned();
    eprintln!(
        "{root_shown} has project configuration (.bosun/, .mcp.json or .claude/).\n\
         Trusting it applies that configuration in full: its MCP servers start, its hooks run, its agents \
         may choose models, and its permission rules may let more run without asking.\n\
         Untrusted, it may only narrow what runs. Protected paths (.git/, .bosun/, AGENTS.md) ask either way."
    );
    eprint!("Trust this project? [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).context("cannot read the answer")?;
    let level =
        if matches!(answer.trim(), "y" | "Y" | "yes") { TrustLevel::Trusted } else { TrustLevel::Untrusted };
    config::record_trust(&file, &root, Some(level))?;
    eprintln!(
        "{root_shown} is now {} (recorded in {}; `bosun trust` or `bosun untrust` changes it)",
        level.as_str(),
        file.display()
    );
    Ok(())
}

/// The session to converse on: a new one, or the stored one `resume` names
/// (on its own model unless `settings` name one with `--model`), with the
/// settings it runs under.
pub(super) async fn session(
    agent: &Agent,
    settings: &config::Settings,
    approver: &Arc<dyn ApprovalHandler>,
    resume: Option<Stored>,
) -> Result<(Session, String, config::Settings)> {
    match resume {
        None => {
            let (session, id) = agent.new_session_as(settings, Arc::clone(approver)).await?;
            Ok((session, id, settings.clone()))
        }
        Some(which) => {
            let (session, id, _, settings) =
                crate::exec::open_stored(agent, settings, which, Arc::clone(approver)).await?;
            Ok((session, id, settings))
        }
    }
}

/// What the UI starts with.
pub(super) fn ui_options(conversation: &Conversation<'_>, env: &Env) -> bosun_tui::Options {
    let mut options = bosun_tui::Options::new(conversation.status());
    options.color = env.get("NO_COLOR").is_none();
    options.history_file = history_file(&conversation.settings, env, conversation.agent.workspace());
    options.paths = workspace_paths(conversation.agent.workspace());
    options.notify =
        conversation.settings.notifications.as_deref().and_then(bosun_tui::Notify::parse).unwrap_or_default();
    options.commands = super::slash::list();
    options.commands.extend(super::custom::listed(&conversation.custom));
    options
}

/// Up/Down history, per workspace, beside the sessions database.
fn history_file(settings: &config::Settings, env: &Env, workspace: &Workspace) -> Option<PathBuf> {
    let store = bosun_agent::parts::store_path(settings, env).ok()?;
    let digest = Sha256::digest(workspace.root_path().as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    Some(store.parent()?.join("history").join(format!("{name}.jsonl")))
}

/// The workspace's files, for `@` completion: walked through its handles,
/// `.gitignore` honoured, bounded.
pub(super) fn workspace_paths(workspace: &Workspace) -> Vec<String> {
    let mut paths = Vec::new();
    let Ok(root) = RelPath::parse(".") else { return paths };
    let _ = workspace.walk(&root, 12, &mut |entry| {
        if entry.kind == bosun_tools::workspace::EntryKind::File {
            paths.push(entry.path.to_string());
        }
        if paths.len() >= MAX_PATHS {
            bosun_tools::workspace::Flow::Stop
        } else {
            bosun_tools::workspace::Flow::Continue
        }
    });
    paths
}

/// `text` with each `@path` naming a workspace file followed by the file
/// (read through the workspace's handles: nothing outside it, no symlink).
/// A word that names no readable file stays as it is, with a warning.
pub(super) fn attach(workspace: &Workspace, text: &str, warn: &mut dyn FnMut(String)) -> String {
    let mut attached = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else { continue };
        let name = name.trim_end_matches([',', '.', ';', ':', ')', '?', '!']);
        if name.is_empty() || attached.iter().any(|(n, _): &(String, String)| n == name) {
            continue;
        }
        let read = RelPath::parse(name)
            .map_err(|e| e.to_string())
            .and_then(|path| workspace.read(&path, MAX_ATTACHED_BYTES).map_err(|e| e.to_string()));
        match read.map(|file| String::from_utf8(file.bytes)) {
            Ok(Ok(content)) => attached.push((name.to_owned(), content)),
            Ok(Err(_)) => warn(format!("@{name} is not text; not attached")),
            Err(error) => warn(format!("@{name} not attached: {error}")),
        }
    }
    let mut prompt = text.to_owned();
    for (name, content) in attached {
        prompt.push_str(&format!("\n\n<file path=\"{name}\">\n{}\n</file>", content.trim_end_matches('\n')));
    }
    prompt
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_at_path_attaches_the_file_and_nothing_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "remember the milk\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "hunter2").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let mut warnings = Vec::new();
        let prompt = attach(&workspace, "summarise @notes.md, not @link or @../x", &mut |w| warnings.push(w));
        assert!(prompt.contains("<file path=\"notes.md\">\nremember the milk\n</file>"), "{prompt}");
        assert!(!prompt.contains("hunter2"));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert_eq!(workspace_paths(&workspace), ["notes.md"]);
    }
}
