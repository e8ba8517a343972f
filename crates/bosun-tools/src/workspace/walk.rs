//! Directory walks through handles (invariant 16): each directory is opened
//! from its parent's handle with `O_NOFOLLOW`, its entries read with
//! `getdents`, and files opened from the directory's handle. No path is ever
//! resolved by name from the root again, so swapping a directory for a
//! symlink mid-walk cannot lead the walk outside.
//!
//! Written here rather than using the `ignore` crate's walker, which reads
//! directories by path: `.gitignore` rules are still parsed by `ignore`'s own
//! matcher, from files read through the same handles. Only ignore files inside
//! the workspace apply (`.gitignore` and `.ignore` in each directory); `.git`
//! directories are skipped.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, Dir, FileType, Mode};

use super::{DIR_FLAGS, FILE_FLAGS, RelPath, Workspace, WorkspaceError, check_regular};

/// Largest ignore file read.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// What an entry is, without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (never followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One entry met by a walk.
#[derive(Debug)]
pub struct WalkEntry<'a> {
    /// Path relative to the workspace root.
    pub path: &'a str,
    /// What it is.
    pub kind: EntryKind,
    /// 1 for an entry of the starting directory.
    pub depth: usize,
    dir: BorrowedFd<'a>,
    name: &'a CStr,
}

impl WalkEntry<'_> {
    /// Opens this entry, which must still be a regular file, from its
    /// directory's handle.
    pub fn open_file(&self) -> Result<File, WorkspaceError> {
        let path = RelPath::parse(self.path)?;
        let fd = rustix::fs::openat(self.dir, self.name, FILE_FLAGS, Mode::empty())
            .map_err(|e| WorkspaceError::io(&path, "open", e))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io(&path, "stat", e))?;
        check_regular(&path, stat)?;
        Ok(File::from(fd))
    }
}

/// An entry's stat, taken without following it: what a manifest of the
/// workspace compares to tell a file changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Inode.
    pub inode: u64,
    /// Permission bits.
    pub mode: u32,
}

impl WalkEntry<'_> {
    /// This entry's stat, from its directory's handle, not following a
    /// symlink.
    pub fn stat(&self) -> Result<EntryStat, WorkspaceError> {
        let stat = rustix::fs::statat(self.dir, self.name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| WorkspaceError::Io { path: self.path.to_owned(), op: "stat", source: e.into() })?;
        let nanos = |secs: i64, nsecs: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsecs);
        Ok(EntryStat {
            size: u64::try_from(stat.st_size).unwrap_or_default(),
            mtime_ns: nanos(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime_ns: nanos(stat.st_ctime as i64, stat.st_ctime_nsec as i64),
            inode: stat.st_ino,
            mode: stat.st_mode & 0o7777,
        })
    }
}

/// What the visitor wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// End the whole walk.
    Stop,
}

/// The ignore rules in force in a directory: its ancestors' and its own.
#[derive(Clone, Default)]
struct Rules(Vec<Arc<Gitignore>>);

impl Rules {
    fn ignores(&self, absolute: &std::path::Path, is_dir: bool) -> bool {
        for rules in self.0.iter().rev() {
            let found = rules.matched(absolute, is_dir);
            if found.is_ignore() {
                return true;
            }
            if found.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// A directory read: its handle and sorted entries.
struct Listing {
    dir: OwnedFd,
    entries: Vec<(std::ffi::CString, EntryKind)>,
    /// Whether the directory holds entries beyond `entries` (a bounded
    /// read, or none at all), so its ignore files may be among them.
    partial: bool,
}

/// Some entries of one directory, read by [`Workspace::read_dir`].
#[derive(Debug, Default)]
pub struct DirEntries {
    /// The names that are not ignored, with their kinds, in name order.
    pub entries: Vec<(String, EntryKind)>,
    /// Whether the directory holds entries that were not read.
    pub more: bool,
}

impl Workspace {
    fn read_listing(&self, dir: OwnedFd, path: &RelPath) -> Result<Listing, WorkspaceError> {
        self.read_listing_at_most(dir, path, usize::MAX)
    }

    /// Reads at most `max` entries, in the order the file system gives them.
    fn read_listing_at_most(
        &self,
        dir: OwnedFd,
        path: &RelPath,
        max: usize,
    ) -> Result<Listing, WorkspaceError> {
        let mut reader =
            Dir::read_from(&dir).map_err(|e| WorkspaceError::io(path, "read the directory", e))?;
        let mut entries = Vec::new();
        let mut partial = false;
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(|e| WorkspaceError::io(path, "read the directory", e))?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            if entries.len() >= max {
                partial = true;
                break;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|s| FileType::from_raw_mode(s.st_mode))
                    .unwrap_or(FileType::Unknown),
                known => known,
            };
            let kind = match kind {
                FileType::RegularFile => EntryKind::File,
                FileType::Directory => EntryKind::Dir,
                FileType::Symlink => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            entries.push((name.to_owned(), kind));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Listing { dir, entries, partial })
    }

    /// Reads at most `max` entries of the directory at `dir` (in the order
    /// the file system gives them, so a large directory is never read
    /// whole), drops what a walk would skip (ignored entries, `.git`, names
    /// that are not UTF-8) and returns the rest in name order. Only `dir`
    /// is read, and of its ancestors only their ignore files.
    pub fn read_dir(&self, dir: &RelPath, max: usize) -> Result<DirEntries, WorkspaceError> {
        let rules = self.ancestor_rules(dir)?;
        let listing = self.read_listing_at_most(self.open_dir(dir, false)?, dir, max)?;
        let rules = self.rules_for(&listing, dir, &rules);
        let mut entries = Vec::new();
        for (name, kind) in &listing.entries {
            if self.child(dir, name, *kind, &rules).is_some()
                && let Ok(name) = name.to_str()
            {
                entries.push((name.to_owned(), *kind));
            }
        }
        Ok(DirEntries { entries, more: listing.partial })
    }

    /// This directory's ignore rules on top of its parent's.
    fn rules_for(&self, listing: &Listing, path: &RelPath, parent: &Rules) -> Rules {
        let mut rules = parent.clone();
        let base = self.root_path().join(path.as_string());
        let mut builder = GitignoreBuilder::new(&base);
        let mut any = false;
        for file in [c".gitignore", c".ignore"] {
            // A partial listing may lack it; `read_small` checks the kind.
            if !listing.partial
                && !listing
                    .entries
                    .iter()
                    .any(|(name, kind)| name.as_c_str() == file && *kind == EntryKind::File)
            {
                continue;
            }
            let Some(text) = read_small(&listing.dir, file) else { continue };
            for line in text.lines() {
                // A malformed line is skipped, as git does.
                let _ = builder.add_line(None, line);
            }
            any = true;
        }
        if any && let Ok(built) = builder.build() {
            rules.0.push(Arc::new(built));
        }
        rules
    }

    /// Walks `start` depth first in name order, at most `max_depth` levels
    /// down, calling `visit` for each entry that is not ignored.
    pub fn walk(
        &self,
        start: &RelPath,
        max_depth: usize,
        visit: &mut dyn FnMut(&WalkEntry<'_>) -> Flow,
    ) -> Result<(), WorkspaceError> {
        let dir = self.open_dir(start, false)?;
        let rules = self.ancestor_rules(start)?;
        self.walk_dir(dir, start, 1, max_depth, &rules, visit).map(|_| ())
    }

    fn walk_dir(
        &self,
        dir: OwnedFd,
        path: &RelPath,
        depth: usize,
        max_depth: usize,
        parent_rules: &Rules,
        visit: &mut dyn FnMut(&WalkEntry<'_>) -> Flow,
    ) -> Result<Flow, WorkspaceError> {
        let listing = self.read_listing(dir, path)?;
        let rules = self.rules_for(&listing, path, parent_rules);
        for (name, kind) in &listing.entries {
            let Some(child) = self.child(path, name, *kind, &rules) else { continue };
            let entry = WalkEntry { path: &child, kind: *kind, depth, dir: listing.dir.as_fd(), name };
            if visit(&entry) == Flow::Stop {
                return Ok(Flow::Stop);
            }
            if *kind == EntryKind::Dir && depth < max_depth {
                let child_path = RelPath::parse(&child)?;
                // A directory that cannot be opened now (swapped for a
                // symlink, removed) is skipped, never followed.
                let Ok(fd) = rustix::fs::openat(&listing.dir, name.as_c_str(), DIR_FLAGS, Mode::empty())
                else {
                    continue;
                };
                if self.walk_dir(fd, &child_path, depth + 1, max_depth, &rules, visit)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// The child's relative path, or `None` when it is skipped.
    fn child(&self, parent: &RelPath, name: &CStr, kind: EntryKind, rules: &Rules) -> Option<String> {
        let name = name.to_str().ok()?;
        if name == ".git" && kind == EntryKind::Dir {
            return None;
        }
        let path = parent.join(name);
        if !rules.0.is_empty() {
            let absolute: PathBuf = self.root_path().join(&path);
            if rules.ignores(&absolute, kind == EntryKind::Dir) {
                return None;
            }
        }
        Some(path)
    }

    /// Rules from the root down to `start`'s parent, so a walk that starts
    /// in a subdirectory honours the `.gitignore` files above it.
    fn ancestor_rules(&self, start: &RelPath) -> Result<Rules, WorkspaceError> {
        let mut rules = Rules::default();
        let mut path = RelPath::root();
        for name in start.components() {
            // Only the ignore files are needed, not the entries: a large
            // ancestor is not read.
            let listing = Listing { dir: self.open_dir(&path, false)?, entries: Vec::new(), partial: true };
            rules = self.rules_for(&listing, &path, &rules);
            path = RelPath::parse(&path.join(name))?;
        }
        Ok(rules)
    }

    /// Walks `start` with `threads` workers, each with its own visitor made
    /// by `make_visitor`; order is unspecified. Each worker opens the
    /// directory it takes by handle (`openat2` beneath the root, or the
    /// component walk), so a swap mid-walk cannot lead it outside.
    pub fn walk_parallel<'v>(
        &self,
        start: &RelPath,
        threads: usize,
        make_visitor: &(dyn Fn() -> Box<dyn FnMut(&WalkEntry<'_>) -> Flow + Send + 'v> + Sync),
    ) -> Result<(), WorkspaceError> {
        let first = self.ancestor_rules(start)?;
        self.open_dir(start, false)?;
        let queue = WorkQueue::new((start.clone(), first));
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                let (queue, stop) = (&queue, &stop);
                scope.spawn(move || {
                    let mut visit = make_visitor();
                    while let Some((path, rules)) = queue.take(stop) {
                        if let Ok(dir) = self.open_dir(&path, false)
                            && let Ok(listing) = self.read_listing(dir, &path)
                        {
                            let rules = self.rules_for(&listing, &path, &rules);
                            for (name, kind) in &listing.entries {
                                if stop.load(Ordering::Relaxed) {
                                    break;
                                }
                                let Some(child) = self.child(&path, name, *kind, &rules) else { continue };
                                let entry = WalkEntry {
                                    path: &child,
                                    kind: *kind,
                                    depth: 0,
                                    dir: listing.dir.as_fd(),
                                    name,
                                };
                                if visit(&entry) == Flow::Stop {
                                    stop.store(true, Ordering::Relaxed);
                                }
                                if *kind == EntryKind::Dir
                                    && let Ok(child_path) = RelPath::parse(&child)
                                {
                                    queue.push((child_path, rules.clone()));
                                }
                            }
                        }
                        queue.done();
                    }
                });
            }
        });
        Ok(())
    }
}

/// Directories waiting to be read, and how many are being read.
struct WorkQueue {
    state: Mutex<(VecDeque<(RelPath, Rules)>, usize)>,
    ready: Condvar,
}

impl WorkQueue {
    fn new(first: (RelPath, Rules)) -> Self {
        Self { state: Mutex::new((VecDeque::from([first]), 0)), ready: Condvar::new() }
    }

    fn push(&self, item: (RelPath, Rules)) {
        if let Ok(mut state) = self.state.lock() {
            state.0.push_back(item);
            self.ready.notify_one();
        }
    }

    /// The next directory, or `None` when the walk is over: nothing queued
    /// and nobody reading a directory that could queue more.
    fn take(&self, stop: &AtomicBool) -> Option<(RelPath, Rules)> {
        let mut state = self.state.lock().ok()?;
        loop {
            if stop.load(Ordering::Relaxed) {
                self.ready.notify_all();
                return None;
            }
            if let Some(item) = state.0.pop_front() {
                state.1 += 1;
                return Some(item);
            }
            if state.1 == 0 {
                self.ready.notify_all();
                return None;
            }
            state = self.ready.wait(state).ok()?;
        }
    }

    fn done(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.1 -= 1;
            self.ready.notify_all();
        }
    }
}

/// Reads a small regular file from a directory handle.
fn read_small(dir: &OwnedFd, name: &CStr) -> Option<String> {
    let fd = rustix::fs::openat(dir, name, FILE_FLAGS, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut text = String::new();
    File::from(fd).take(MAX_IGNORE_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}
