//! Keeping what tools change, as they change it: each tool of a session is
//! wrapped, and a call that may change the workspace is recorded around its
//! run, by one of two means.
//!
//! - A file tool names the paths it writes (`CallEffects::writes`: edit,
//!   write, apply_patch). Before it runs, each path's content (or its
//!   absence) is kept and a change row started; after, the row gets what
//!   the call left there, or goes if nothing changed. A row started is
//!   durable before the tool runs, so a process killed mid-call leaves a
//!   change whose outcome is unknown, which is what it is.
//! - Any other call that is not a read (the shell, an MCP server's tool)
//!   may change any file, and nothing says which beforehand. So
//!   the workspace's manifest (`manifest.rs`) is brought up to date before
//!   it runs: each file whose stat changed since the last look has its
//!   content kept (by hash, so unchanged content costs nothing) and the
//!   store's manifest row names it. After the call a second scan is
//!   compared with the first, and each file created, changed or deleted is
//!   recorded with the kept content as its state before. Only files the
//!   walk meets count: ignored ones (`.gitignore`), `.git` and those past
//!   `max_files` are not seen.
//!
//! A sub-agent runs with its parent's tools (`SessionScope::tools`), so its
//! calls are recorded here too, under its own call ids (a rewind finds them
//! through the session that started it).
//!
//! The wrapping lives here, where tools are assembled, rather than in
//! `bosun-core`: the session knows nothing of files, and each tool says what
//! it writes through its effects already. Recording never fails a call: a
//! failure to keep is told once as a notice, and the change is then not
//! restorable.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bosun_core::{
    CallEffects, CancellationPolicy, RetryPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture,
};
use bosun_store::{After, Before, ManifestEntry, NewChange, NotKept, Offered, Store, TurnBudget};
use bosun_tools::workspace::{EntryStat, RelPath};
use bosun_tools::{Workspace, WorkspaceError};
use rustix::fs::FileType;

use super::manifest::{self, Difference, Scan};
use crate::config::RewindSettings;
use crate::notice::Notices;

/// The largest file whose content is hashed to tell what a change left.
const MAX_HASHED_BYTES: u64 = RewindSettings::HARD_MAX_FILE_BYTES;

/// A batch of the manifest's keeps ends at this many files or bytes.
const BATCH_FILES: usize = 256;
const BATCH_BYTES: u64 = 16 << 20;

fn manifest_entry(name: &str, stat: &EntryStat) -> ManifestEntry {
    ManifestEntry::new(name, stat.size, (stat.mtime_ns, stat.ctime_ns), stat.inode, stat.mode)
}

/// A clock in microseconds that never repeats or goes back within the
/// process, so changes of calls that overlap are ordered by when each
/// started and ended.
pub(crate) fn tick() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// What a session's capture shares across its tools.
pub(crate) struct Recorder {
    store: Store,
    session: String,
    workspace: Workspace,
    settings: RewindSettings,
    /// Paths left out of scans (the session store inside the workspace).
    excluded: Vec<String>,
    notices: Notices,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The turn the budget counts for.
    turn: u64,
    budget: TurnBudget,
    /// Paths whose content a call of `turn` kept already: a later change
    /// in the same turn is restored to the first one's.
    kept: HashSet<String>,
    /// The store's manifest of the workspace, loaded at the first scan.
    manifest: Option<BTreeMap<String, ManifestEntry>>,
    warned: bool,
}

impl State {
    fn at_turn(&mut self, turn: u64) {
        if turn != self.turn {
            self.turn = turn;
            self.budget = TurnBudget::default();
            self.kept.clear();
        }
    }
}

impl Recorder {
    pub(crate) fn new(
        store: Store,
        session: &str,
        workspace: Workspace,
        settings: RewindSettings,
        notices: Notices,
    ) -> Self {
        // The store's file (and its -wal, -shm) when it lives in the
        // workspace: it changes with every record.
        let excluded = store
            .path()
            .strip_prefix(workspace.root_path())
            .ok()
            .and_then(|rel| rel.to_str())
            .map(|rel| vec![rel.to_owned()])
            .unwrap_or_default();
        Self {
            store,
            session: session.to_owned(),
            workspace,
            settings,
            excluded,
            notices,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the person once that something could not be kept.
    fn failed(&self, state: &mut State, error: impl std::fmt::Display) {
        tracing::warn!(%error, session = %self.session, "rewind: a change was not recorded");
        if !state.warned {
            state.warned = true;
            self.notices.warn(format!(
                "rewind: a file change could not be recorded ({error}); a rewind may not restore it"
            ));
        }
    }

    /// What `path` holds now, to keep before a change.
    fn offered(&self, path: &RelPath, kept_already: bool) -> Option<Offered> {
        match self.workspace.kind(path) {
            Ok(None) => Some(Offered::Absent),
            Ok(Some(FileType::RegularFile)) => {
                Some(match self.workspace.read(path, self.settings.max_file_bytes) {
                    Ok(read) if kept_already => Offered::NotKept {
                        reason: "kept by an earlier change in the same turn".into(),
                        hash: Some(read.identity.hash),
                    },
                    Ok(read) => Offered::Content { bytes: read.bytes, mode: read.mode },
                    Err(WorkspaceError::TooLarge { size, limit, .. }) => Offered::NotKept {
                        reason: NotKept::TooLarge { size, limit }.to_string(),
                        hash: self.workspace.identify(path, MAX_HASHED_BYTES).ok().map(|(id, _)| id.hash),
                    },
                    Err(error) => Offered::NotKept { reason: error.to_string(), hash: None },
                })
            }
            // A directory, a symlink, a path through one: the tool refuses it.
            Ok(Some(_)) | Err(_) => None,
        }
    }

    /// What a call left at `path`.
    fn left(&self, path: &RelPath) -> After {
        match self.workspace.kind(path) {
            Ok(None) => After::Absent,
            Ok(Some(FileType::RegularFile)) => match self.workspace.identify(path, MAX_HASHED_BYTES) {
                Ok((identity, _)) => After::File { hash: identity.hash },
                Err(_) => After::Unknown,
            },
            _ => After::Unknown,
        }
    }

    /// Before a file tool's call: each path's state kept, a row started.
    fn begin(&self, (turn, call): (u64, &str), paths: &[String], started: i64) -> Vec<(i64, RelPath)> {
        let mut state = self.lock();
        state.at_turn(turn);
        let mut begun: Vec<(i64, RelPath)> = Vec::new();
        for given in paths {
            let Ok(path) = RelPath::parse(given) else { continue };
            if path.is_root() || begun.iter().any(|(_, seen)| *seen == path) {
                continue;
            }
            let name = path.as_string();
            let Some(offered) = self.offered(&path, state.kept.contains(&name)) else { continue };
            let bounds = self.settings.bounds();
            let started_row = self.store.begin_change(
                &self.session,
                (turn, call),
                &name,
                started,
                offered,
                bounds,
                &mut state.budget,
            );
            match started_row {
                Ok((row, before)) => {
                    if matches!(before, Before::Kept { .. }) {
                        state.kept.insert(name);
                    }
                    begun.push((row, path));
                }
                Err(error) => self.failed(&mut state, error),
            }
        }
        begun
    }

    /// After a file tool's call: what it left at each path.
    fn end(&self, begun: Vec<(i64, RelPath)>) {
        let ended = tick();
        for (row, path) in begun {
            let after = self.left(&path);
            if let Err(error) = self.store.end_change(row, &after, ended) {
                self.failed(&mut self.lock(), error);
            }
        }
    }

    /// Before any other call that may write: the manifest brought up to
    /// date (content kept for every file whose stat changed), and the scan.
    fn before_scan(&self, turn: u64) -> Scan {
        let mut state = self.lock();
        state.at_turn(turn);
        let workspace = self.workspace.identity().path.clone();
        if state.manifest.is_none() {
            let loaded = match self.store.workspace_files(&workspace) {
                Ok(rows) => rows.into_iter().map(|row| (row.path.clone(), row)).collect(),
                Err(error) => {
                    self.failed(&mut state, &error);
                    BTreeMap::new()
                }
            };
            state.manifest = Some(loaded);
        }
        let scan = manifest::scan(&self.workspace, self.settings.max_files, &self.excluded);
        let mut manifest = state.manifest.take().unwrap_or_default();
        // Kept in batches: one synced transaction for many files, and
        // never more than a bounded amount read into memory at once.
        let mut batch: Vec<(ManifestEntry, Result<Vec<u8>, String>)> = Vec::new();
        let mut batched = 0u64;
        let stale = scan.files.iter().filter(|(name, stat)| {
            let entry = manifest_entry(name, stat);
            !manifest.get(*name).is_some_and(|known| known.same_stat(&entry) && !known.worth_retrying())
        });
        let stale: Vec<(&String, &EntryStat)> = stale.collect();
        for (index, (name, stat)) in stale.iter().enumerate() {
            let content = match RelPath::parse(name)
                .map(|path| self.workspace.read(&path, self.settings.max_file_bytes))
            {
                Ok(Ok(read)) => Ok(read.bytes),
                Ok(Err(WorkspaceError::TooLarge { size, limit, .. })) => {
                    Err(NotKept::TooLarge { size, limit }.to_string())
                }
                Ok(Err(error)) | Err(error) => Err(error.to_string()),
            };
            batched += content.as_ref().map_or(0, |bytes| bytes.len() as u64);
            batch.push((manifest_entry(name, stat), content));
            if batch.len() >= BATCH_FILES || batched >= BATCH_BYTES || index + 1 == stale.len() {
                let bounds = self.settings.bounds();
                match self.store.keep_workspace_files(&workspace, &batch, bounds, &mut state.budget) {
                    Ok(rows) => manifest.extend(rows.into_iter().map(|row| (row.path.clone(), row))),
                    Err(error) => self.failed(&mut state, error),
                }
                batch.clear();
                batched = 0;
            }
        }
        if scan.complete {
            let gone: Vec<String> =
                manifest.keys().filter(|name| !scan.files.contains_key(*name)).cloned().collect();
            match self.store.forget_workspace_files(&workspace, &gone) {
                Ok(()) => manifest.retain(|name, _| scan.files.contains_key(name)),
                Err(error) => self.failed(&mut state, error),
            }
        }
        state.manifest = Some(manifest);
        scan
    }

    /// After such a call: each file it created, changed or deleted, with
    /// the content kept before as its state before.
    fn after_scan(&self, (turn, call): (u64, &str), started: i64, before: &Scan) {
        let after = manifest::scan(&self.workspace, self.settings.max_files, &self.excluded);
        let ended = tick();
        let mut state = self.lock();
        let mut changes = Vec::new();
        for (name, difference) in manifest::diff(before, &after) {
            let was = match difference {
                Difference::Created => Before::Absent,
                Difference::Changed | Difference::Deleted => {
                    let seen = before.files.get(&name);
                    let known = state.manifest.as_ref().and_then(|manifest| manifest.get(&name));
                    match (known, seen) {
                        (Some(entry), Some(stat)) if entry.same_stat(&manifest_entry(&name, stat)) => {
                            match &entry.hash {
                                Some(hash) => Before::Kept { hash: hash.clone(), mode: entry.mode },
                                None => Before::NotKept {
                                    reason: entry.note.clone().unwrap_or_else(|| "not kept".into()),
                                    hash: None,
                                },
                            }
                        }
                        _ => Before::NotKept {
                            reason: "its content before the call was not kept".into(),
                            hash: None,
                        },
                    }
                }
            };
            let left = match (difference, RelPath::parse(&name)) {
                (Difference::Deleted, _) => After::Absent,
                (_, Ok(path)) => self.left(&path),
                (_, Err(_)) => After::Unknown,
            };
            changes.push(NewChange::new(name, was, left, (started, ended)).by_call(turn, call));
        }
        if !changes.is_empty()
            && let Err(error) = self.store.record_changes(&self.session, &changes)
        {
            self.failed(&mut state, error);
        }
    }
}

/// How a call is recorded.
enum How {
    /// It reads only.
    Not,
    /// It writes the paths it names.
    Paths(Vec<String>),
    /// It may write anything.
    Scan,
}

fn how(category: ToolCategory, effects: &CallEffects) -> How {
    match category {
        ToolCategory::Read | ToolCategory::Network => How::Not,
        ToolCategory::Write if effects.command.is_none() && !effects.writes.is_empty() => {
            How::Paths(effects.writes.clone())
        }
        _ => How::Scan,
    }
}

/// A tool whose calls are recorded by a [`Recorder`].
pub(crate) struct Captured {
    inner: Arc<dyn Tool>,
    recorder: Arc<Recorder>,
}

impl Captured {
    pub(crate) fn new(inner: Arc<dyn Tool>, recorder: Arc<Recorder>) -> Self {
        Self { inner, recorder }
    }
}

impl std::fmt::Debug for Captured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Captured").field("tool", &self.inner.definition().name).finish_non_exhaustive()
    }
}

/// `work` on the blocking pool; `None` if it could not finish there.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

impl Tool for Captured {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    fn category(&self) -> ToolCategory {
        self.inner.category()
    }

    fn cancellation(&self) -> CancellationPolicy {
        self.inner.cancellation()
    }

    fn retry(&self) -> RetryPolicy {
        self.inner.retry()
    }

    fn effects(&self, arguments: &serde_json::Value) -> CallEffects {
        self.inner.effects(arguments)
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let how = how(self.inner.category(), &self.inner.effects(&arguments));
            let (turn, call) = (context.turn, context.call_id.to_string());
            let started = tick();
            match how {
                How::Not => self.inner.execute(arguments, context).await,
                How::Paths(paths) => {
                    let (recorder, id) = (Arc::clone(&self.recorder), call.clone());
                    let begun = blocking(move || recorder.begin((turn, &id), &paths, started)).await;
                    let output = self.inner.execute(arguments, context).await;
                    if let Some(begun) = begun {
                        let recorder = Arc::clone(&self.recorder);
                        blocking(move || recorder.end(begun)).await;
                    }
                    output
                }
                How::Scan => {
                    let recorder = Arc::clone(&self.recorder);
                    let before = blocking(move || recorder.before_scan(turn)).await;
                    let output = self.inner.execute(arguments, context).await;
                    if let Some(before) = before {
                        let recorder = Arc::clone(&self.recorder);
                        blocking(move || recorder.after_scan((turn, &call), started, &before)).await;
                    }
                    output
                }
            }
        })
    }
}
