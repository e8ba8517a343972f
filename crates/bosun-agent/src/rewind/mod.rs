//! Rewind (docs/sessions.md): what tools change in the workspace is kept
//! as they change it ([`capturing`], `capture.rs`), and a session goes back
//! to the start of one of its turns ([`rewind`]): its files (`restore.rs`),
//! its conversation (a new branch from before the turn's prompt; the branch
//! it leaves stays, [`bosun_store::Store::switch_branch`] goes back), or
//! both. Every front end rewinds through here: `bosun rewind` and the
//! conversation's `/rewind` and Esc Esc.

mod capture;
mod manifest;
mod restore;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::Arc;

use bosun_core::Tool;
use bosun_store::Store;
use bosun_tools::Workspace;

pub use restore::{FileOutcome, FileReport};

use crate::config::RewindSettings;
use crate::error::{Result, bail};
use crate::notice::Notices;

/// The largest file a restore reads to compare with what bosun left.
fn capture_limit() -> u64 {
    RewindSettings::HARD_MAX_FILE_BYTES
}

/// `tools` for the stored session `session`, each call that may change the
/// workspace recorded in `store` under `settings` (`capture.rs` says how);
/// `tools` as they are when rewind is off. A failure to record is told to
/// `notices` once, and never fails a call.
pub fn capturing(
    tools: Vec<Arc<dyn Tool>>,
    (workspace, store, session): (&Workspace, &Store, &str),
    settings: &RewindSettings,
    notices: &Notices,
) -> Vec<Arc<dyn Tool>> {
    if !settings.enabled {
        return tools;
    }
    let recorder = Arc::new(capture::Recorder::new(
        store.clone(),
        session,
        workspace.clone(),
        *settings,
        notices.clone(),
    ));
    tools
        .into_iter()
        .map(|tool| Arc::new(capture::Captured::new(tool, Arc::clone(&recorder))) as Arc<dyn Tool>)
        .collect()
}

/// What a rewind restores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Restore {
    /// The files and the conversation.
    #[default]
    Both,
    /// The files only; the conversation goes on as it is.
    Files,
    /// The conversation only; the files stay as they are.
    Conversation,
}

impl Restore {
    fn files(self) -> bool {
        matches!(self, Self::Both | Self::Files)
    }

    fn conversation(self) -> bool {
        matches!(self, Self::Both | Self::Conversation)
    }
}

/// A rewind to the start of `turn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RewindRequest {
    /// The turn, as the session's head branch numbers them.
    pub turn: u64,
    /// What to restore.
    pub restore: Restore,
    /// Overwrite files changed since bosun last left them.
    pub force: bool,
}

impl RewindRequest {
    /// Both, to the start of `turn`, never overwriting a file changed since.
    pub fn new(turn: u64) -> Self {
        Self { turn, restore: Restore::Both, force: false }
    }

    /// The same, restoring `restore`.
    pub fn restoring(self, restore: Restore) -> Self {
        Self { restore, ..self }
    }

    /// The same, overwriting files changed since when `force`.
    pub fn forced(self, force: bool) -> Self {
        Self { force, ..self }
    }
}

/// The conversation's move: the branch it left and the one it goes on in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct BranchMove {
    /// The branch left (still whole: `bosun resume ID --branch` goes back).
    pub from: String,
    /// The new head: the history before the turn's prompt.
    pub to: String,
}

/// What a rewind did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RewindReport {
    /// The session.
    pub session: String,
    /// The turn whose start it went back to.
    pub turn: u64,
    /// The turn's prompt (to send again, or edit).
    pub prompt: String,
    /// What became of each file, when files were restored.
    pub files: Option<Vec<FileReport>>,
    /// The conversation's move, when it was restored.
    pub branch: Option<BranchMove>,
}

impl RewindReport {
    /// Whether some file was left as it is for a reason the person should
    /// look at (changed since, failed).
    pub fn held_back(&self) -> bool {
        self.files
            .iter()
            .flatten()
            .any(|file| matches!(file.outcome, FileOutcome::ChangedSince(_) | FileOutcome::Failed(_)))
    }
}

/// How deep sub-agents' sub-agents are followed: far past the library's
/// own depth limit, and a bound should links ever form a cycle.
const SUBAGENT_DEPTH: usize = 16;

/// Adds to `calls` the calls of the sub-agents one of them started (and
/// theirs): a sub-agent runs with its parent's tools, so its changes are
/// recorded with the parent's, under its own call ids.
fn with_subagents(store: &Store, session: &str, calls: &mut HashSet<String>) -> Result<()> {
    let mut parents = vec![session.to_owned()];
    for _ in 0..SUBAGENT_DEPTH {
        let mut next = Vec::new();
        for parent in &parents {
            for child in store.children(parent)? {
                if child.parent.as_ref().is_some_and(|link| calls.contains(&link.call)) {
                    calls.extend(store.turns(&child.id)?.into_iter().flat_map(|t| t.calls));
                    next.push(child.id);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        parents = next;
    }
    Ok(())
}

/// Takes `session` back to the start of `request.turn`: restores the files
/// its calls of that turn and later changed (in `workspace`, through its
/// handles) and starts a new branch of the conversation from before the
/// turn's prompt, as `request.restore` says. A file changed since bosun
/// last left it is reported and left alone unless `request.force`.
///
/// # Errors
/// When the session has no such turn (the message names the turns it
/// has), or the store cannot be read or written. A file that cannot be
/// restored is not an error: the report says why.
pub fn rewind(
    store: &Store,
    workspace: &Workspace,
    session: &str,
    request: &RewindRequest,
) -> Result<RewindReport> {
    let turns = store.turns(session)?;
    let Some(at) = turns.iter().position(|t| t.turn == request.turn) else {
        match (turns.first(), turns.last()) {
            (Some(first), Some(last)) => bail!(
                "session {session} has no turn {}: its turns are {} to {} (`bosun sessions show {session}` \
                 lists them)",
                request.turn,
                first.turn,
                last.turn
            ),
            _ => bail!("session {session} has no turn {}: it has no turns yet", request.turn),
        }
    };
    let start = &turns[at];
    let files = if request.restore.files() {
        let mut calls: HashSet<String> = turns[at..].iter().flat_map(|t| t.calls.iter().cloned()).collect();
        with_subagents(store, session, &mut calls)?;
        let calls: HashSet<&str> = calls.iter().map(String::as_str).collect();
        Some(restore::restore(store, workspace, session, &calls, request.force)?)
    } else {
        None
    };
    let branch = if request.restore.conversation() {
        let from = store.show(session)?.head_branch;
        let to = store.fork_at(session, start.after)?;
        Some(BranchMove { from, to })
    } else {
        None
    };
    Ok(RewindReport {
        session: session.to_owned(),
        turn: request.turn,
        prompt: start.prompt.text(),
        files,
        branch,
    })
}
