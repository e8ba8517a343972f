//! Before and around the conversation: the first-run trust question, the
//! session to open, what the UI starts with (history file, paths to
//! complete, commands), and a message's attachments (`@path`, images:
//! `bosun_agent::attach`).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use bosun_agent::attach;
use bosun_core::{ApprovalHandler, Session, Support, UserInput};
use bosun_tools::Workspace;
use bosun_tools::workspace::RelPath;
use bosun_tui::{NoticeKind, ToUi};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedSender;

use super::Conversation;
use crate::config::{self, Env, TrustLevel};
use crate::exec::Stored;
use crate::sanitize;
use bosun_agent::Agent;

/// At most this many workspace paths are offered after `@`.
const MAX_PATHS: usize = 5_000;

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

/// Who wrote a message's text, which decides what of it may be read.
#[derive(Clone, Copy)]
pub(super) enum Writer {
    /// The person: image paths written out in it attach too, from outside
    /// the workspace as well (their own files).
    Person,
    /// A file (a custom command): `@path` inside the workspace only.
    File,
}

/// What a message's attachments are read with, apart from the
/// conversation (a turn holds the session while steering comes in).
#[derive(Clone)]
pub(super) struct Attaching {
    workspace: Workspace,
    home: Option<PathBuf>,
    /// Whether the session's model takes images, and its name.
    images: Support,
    model: String,
}

impl Attaching {
    /// The message `text` with its attachments (`bosun_agent::attach`):
    /// each image shown as a line, warnings said; `None` when it must not
    /// go (an image refused, or images for a model that takes none), with
    /// the reason said and nothing sent.
    pub(super) fn message(
        &self,
        text: &str,
        writer: Writer,
        to_ui: &UnboundedSender<ToUi>,
    ) -> Option<UserInput> {
        let notice = |kind, text: String| {
            let _ = to_ui.send(ToUi::Notice { text, kind });
        };
        let typed = match writer {
            Writer::Person => Some(attach::Typed { home: self.home.clone() }),
            Writer::File => None,
        };
        let reading = attach::Reading { text_files: true, typed };
        let attached = attach::attach(&self.workspace, text, &reading)
            .and_then(|attached| attached.check_model(self.images, &self.model).map(|()| attached));
        let attached = match attached {
            Ok(attached) => attached,
            Err(error) => {
                notice(NoticeKind::Error, format!("not sent: {error}"));
                return None;
            }
        };
        for warning in &attached.warnings {
            notice(NoticeKind::Warning, warning.clone());
        }
        for image in &attached.images {
            notice(NoticeKind::Info, format!("  {}", image.line()));
        }
        Some(attached.into_content().into())
    }
}

impl Conversation<'_> {
    /// How this conversation's messages are read now (the session's model
    /// may change with `/model`).
    pub(super) fn attaching(&self) -> Attaching {
        Attaching {
            workspace: self.agent.workspace().clone(),
            home: self.env.get("HOME").map(PathBuf::from),
            images: self.session.capabilities().images,
            model: bosun_agent::model::model_label(&self.settings),
        }
    }

    /// [`Attaching::message`] for this conversation.
    pub(super) fn message(&self, text: &str, writer: Writer) -> Option<UserInput> {
        self.attaching().message(text, writer, &self.to_ui)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_completion_lists_the_workspaces_files_through_its_handles() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "remember the milk\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        assert_eq!(workspace_paths(&workspace), ["notes.md"]);
    }
}
