//! Putting files back as they were when a turn started.
//!
//! For each path a call of the chosen turn or a later one changed, the
//! state to restore is the one the earliest such change found (its content
//! kept by hash, or its absence). Before anything is written, the file as
//! it is now is compared with what bosun last left there (the newest change
//! of that path by this session, a rewind's own included): a file someone
//! else changed since is reported and left alone unless forced. Every read
//! and write goes through the workspace's handles, beneath its root, never
//! through a symlink; a write replaces only the very file that was checked
//! (its inode and content, up to the rename).

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use bosun_store::{After, Before, FileChange, NewChange, Store};
use bosun_tools::Workspace;
use bosun_tools::workspace::{FileIdentity, Precondition, RelPath};
use rustix::fs::FileType;

use super::capture::tick;

/// What became of one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileOutcome {
    /// Its content was written back.
    Restored,
    /// It did not exist when the turn started, and was deleted.
    Deleted,
    /// It already was as it was then.
    Unchanged,
    /// Changed since bosun last left it (by a person, another program or
    /// another session): left alone.
    ChangedSince(String),
    /// Not restored, for this reason (not kept, not a regular file now).
    Skipped(String),
    /// The write or delete failed.
    Failed(String),
}

/// One file of a rewind.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct FileReport {
    /// Workspace-relative.
    pub path: String,
    /// What became of it.
    pub outcome: FileOutcome,
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.outcome {
            FileOutcome::Restored => write!(f, "restored {path}"),
            FileOutcome::Deleted => write!(f, "deleted {path} (it did not exist then)"),
            FileOutcome::Unchanged => write!(f, "unchanged {path} (already as it was)"),
            FileOutcome::ChangedSince(why) => {
                write!(f, "skipped {path}: {why} since bosun left it, not overwritten (--force overwrites)")
            }
            FileOutcome::Skipped(why) => write!(f, "skipped {path}: {why}"),
            FileOutcome::Failed(why) => write!(f, "failed {path}: {why}"),
        }
    }
}

/// What a file is now.
enum Now {
    Absent,
    File(FileIdentity),
}

impl Now {
    fn is(&self, after: &After) -> bool {
        match (self, after) {
            (Self::Absent, After::Absent) => true,
            (Self::File(identity), After::File { hash }) => identity.hash == *hash,
            _ => false,
        }
    }

    fn describe_change(&self, left: &After) -> String {
        match (self, left) {
            (Self::Absent, _) => "deleted".to_owned(),
            (Self::File(_), After::Absent) => "created".to_owned(),
            (Self::File(_), After::File { .. }) => "changed".to_owned(),
            (Self::File(_), _) => "possibly changed (what bosun left there is not known)".to_owned(),
        }
    }
}

/// For each path changed by one of `calls`, the earliest such change (the
/// state to restore) and the newest change of it by anyone of the session
/// (what bosun last left there).
fn plan<'a>(
    changes: &'a [FileChange],
    calls: &HashSet<&str>,
) -> BTreeMap<&'a str, (&'a FileChange, &'a FileChange)> {
    let mut earliest: BTreeMap<&str, &FileChange> = BTreeMap::new();
    for change in changes.iter().filter(|c| c.call_id.as_deref().is_some_and(|id| calls.contains(id))) {
        let entry = earliest.entry(change.path.as_str()).or_insert(change);
        if (change.started, change.id) < (entry.started, entry.id) {
            *entry = change;
        }
    }
    earliest
        .into_iter()
        .filter_map(|(path, source)| {
            let last = changes
                .iter()
                .filter(|c| c.path == path)
                .max_by_key(|c| (c.ended.unwrap_or(c.started), c.id))?;
            Some((path, (source, last)))
        })
        .collect()
}

/// Restores every file the calls `calls` changed to the state the earliest
/// of those changes found, recording each write as the session's own
/// change. `force` overwrites files changed since.
pub(crate) fn restore(
    store: &Store,
    workspace: &Workspace,
    session: &str,
    calls: &HashSet<&str>,
    force: bool,
) -> crate::Result<Vec<FileReport>> {
    let changes = store.file_changes(session)?;
    let mut reports = Vec::new();
    for (path, (source, last)) in plan(&changes, calls) {
        let outcome = restore_one(store, workspace, session, path, (source, last), force);
        reports.push(FileReport { path: path.to_owned(), outcome });
    }
    Ok(reports)
}

fn restore_one(
    store: &Store,
    workspace: &Workspace,
    session: &str,
    path: &str,
    (source, last): (&FileChange, &FileChange),
    force: bool,
) -> FileOutcome {
    let rel = match RelPath::parse(path) {
        Ok(rel) if !rel.is_root() => rel,
        Ok(_) => return FileOutcome::Skipped("not a file of the workspace".into()),
        Err(error) => return FileOutcome::Skipped(error.to_string()),
    };
    let now = match workspace.kind(&rel) {
        Ok(None) => Now::Absent,
        Ok(Some(FileType::RegularFile)) => match workspace.identify(&rel, super::capture_limit()) {
            Ok((identity, _)) => Now::File(identity),
            Err(error) => return FileOutcome::Skipped(error.to_string()),
        },
        Ok(Some(FileType::Symlink)) => {
            return FileOutcome::Skipped("it is a symlink now; bosun never writes through one".into());
        }
        Ok(Some(FileType::Directory)) => return FileOutcome::Skipped("it is a directory now".into()),
        Ok(Some(_)) => return FileOutcome::Skipped("it is not a regular file now".into()),
        Err(error) => return FileOutcome::Skipped(error.to_string()),
    };
    let target = match &source.before {
        Before::Absent => After::Absent,
        Before::Kept { hash, .. } => After::File { hash: hash.clone() },
        Before::NotKept { reason, .. } => return FileOutcome::Skipped(format!("not restorable: {reason}")),
        _ => return FileOutcome::Skipped("not restorable".into()),
    };
    if now.is(&target) {
        return FileOutcome::Unchanged;
    }
    if !force && !now.is(&last.after) {
        return FileOutcome::ChangedSince(now.describe_change(&last.after));
    }
    let done = match (&source.before, &now) {
        (Before::Absent, Now::File(identity)) => {
            workspace.delete(&rel, identity).map(|()| FileOutcome::Deleted)
        }
        (Before::Kept { hash, mode }, now) => {
            let bytes = match store.blob(hash) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return FileOutcome::Skipped("its kept copy is gone".into()),
                Err(error) => return FileOutcome::Failed(error.to_string()),
            };
            let written = match now {
                Now::Absent => workspace.create_with_mode(&rel, &bytes, *mode),
                Now::File(identity) => {
                    workspace.write_atomic(&rel, &bytes, &Precondition::Unchanged(identity.clone()))
                }
            };
            written.map(|_| FileOutcome::Restored)
        }
        _ => return FileOutcome::Unchanged,
    };
    match done {
        Ok(outcome) => {
            // What bosun left there now: the next rewind compares with it.
            let was = match &now {
                Now::Absent => Before::Absent,
                Now::File(identity) => Before::NotKept {
                    reason: "replaced by a rewind".into(),
                    hash: Some(identity.hash.clone()),
                },
            };
            let at = tick();
            if let Err(error) = store.record_change(session, &NewChange::new(path, was, target, (at, at))) {
                tracing::warn!(%error, path, "rewind: the restore was not recorded");
            }
            outcome
        }
        Err(error) => FileOutcome::Failed(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn change(
        id: i64,
        call: Option<&str>,
        path: &str,
        (started, ended): (i64, i64),
        after: After,
    ) -> FileChange {
        let store = tempfile::tempdir().unwrap();
        let opened = Store::open(store.path().join("s.db")).unwrap();
        let mut new = NewChange::new(
            path,
            Before::NotKept { reason: format!("#{id}"), hash: None },
            after,
            (started, ended),
        );
        if let Some(call) = call {
            new = new.by_call(1, call);
        }
        opened.record_change("s", &new).unwrap();
        let mut row = opened.file_changes("s").unwrap().remove(0);
        row.id = id;
        row
    }

    #[test]
    fn the_earliest_change_of_the_turns_calls_is_restored_and_the_newest_of_all_is_compared() {
        let hash = |h: &str| After::File { hash: h.to_owned() };
        let changes = vec![
            change(1, Some("old"), "a", (1, 2), hash("a1")),
            change(2, Some("late"), "a", (5, 9), hash("a3")),
            change(3, Some("early"), "a", (3, 4), hash("a2")),
            change(4, None, "a", (10, 10), hash("a4")),
            change(5, Some("late"), "b", (5, 9), After::Absent),
            change(6, Some("old"), "c", (1, 2), hash("c1")),
        ];
        let calls: HashSet<&str> = ["early", "late"].into_iter().collect();
        let planned = plan(&changes, &calls);
        let shown: Vec<(&str, i64, i64)> = planned.iter().map(|(p, (s, l))| (*p, s.id, l.id)).collect();
        assert_eq!(shown, [("a", 3, 4), ("b", 5, 5)], "c was changed by an earlier turn only");
    }
}
