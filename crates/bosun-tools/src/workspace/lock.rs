//! Per-path locks of one [`Workspace`] (invariant 17 under concurrency).
//!
//! The check that a file is unchanged since it was read and the rename that
//! replaces it are two system calls; two calls of one response changing the
//! same file could both pass the check and the second rename would silently
//! drop the first change. So every tool that reads a file to change it holds
//! that path's lock from the read of the current content through the swap
//! and the ledger update, and the tools of one workspace (clones share it)
//! change one path one at a time.
//!
//! A call naming several paths (`apply_patch`) takes their locks one by one
//! in sorted order, so two such calls can never wait on each other in a
//! cycle. Locks are by normalised relative path: two names of one file (a
//! hard link, case folding) are not serialised, and a process outside
//! bosun is not held off; the content check still catches those up to the
//! swap.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex, PoisonError};

use super::{RelPath, Workspace};

/// The paths being changed, and a signal when one is released.
#[derive(Debug, Default)]
pub(crate) struct PathLocks {
    held: Mutex<HashSet<String>>,
    released: Condvar,
}

/// Holds the locks of some paths; dropping it releases them.
#[derive(Debug)]
#[must_use = "the paths are unlocked as soon as the guard is dropped"]
pub(crate) struct PathGuard<'w> {
    locks: &'w PathLocks,
    keys: Vec<String>,
}

impl Workspace {
    /// Waits until no other call holds any of `paths`, then holds them all
    /// until the guard is dropped. Blocking: call it from the blocking pool.
    pub(crate) fn lock_paths<'p>(&self, paths: impl IntoIterator<Item = &'p RelPath>) -> PathGuard<'_> {
        let mut keys: Vec<String> = paths.into_iter().map(RelPath::as_string).collect();
        keys.sort_unstable();
        keys.dedup();
        let locks = &self.inner.locks;
        let mut guard = PathGuard { locks, keys: Vec::with_capacity(keys.len()) };
        for key in keys {
            let held = locks.held.lock().unwrap_or_else(PoisonError::into_inner);
            let mut held = locks
                .released
                .wait_while(held, |held| held.contains(&key))
                .unwrap_or_else(PoisonError::into_inner);
            held.insert(key.clone());
            // Recorded as soon as taken, so a release never misses one.
            guard.keys.push(key);
        }
        guard
    }
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let mut held = self.locks.held.lock().unwrap_or_else(PoisonError::into_inner);
        for key in &self.keys {
            held.remove(key);
        }
        drop(held);
        self.locks.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_path_is_held_by_one_caller_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let (a, b) = (RelPath::parse("a").unwrap(), RelPath::parse("./b").unwrap());
        let inside = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for round in 0..8 {
                let (workspace, inside, a, b) = (&workspace, &inside, &a, &b);
                scope.spawn(move || {
                    for _ in 0..200 {
                        // Both orders and a duplicate: sorted inside, no deadlock.
                        let paths = if round % 2 == 0 { vec![a, b, a] } else { vec![b, a] };
                        let _guard = workspace.lock_paths(paths);
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(workspace.inner.locks.held.lock().unwrap().is_empty());
    }
}
