//! What the workspace holds, as a shell call's capture compares it: the
//! stat of every regular file a walk meets (through the workspace's
//! handles, `.gitignore` honoured, `.git` skipped, symlinks never
//! followed), at most a bound of them, and the difference between two such
//! scans.
//!
//! A stat (size, modification and status-change times, inode, mode) stands
//! for the content: a write changes the status-change time, which nothing
//! but the clock sets back, so a file whose stat is the same is taken to be
//! unchanged without reading it. Two writes of the same size within one
//! tick of the file system's clock can look the same; that is the price of
//! not reading every file before and after every command.

use std::collections::BTreeMap;

use bosun_tools::Workspace;
use bosun_tools::workspace::{EntryKind, EntryStat, Flow, RelPath};

/// The regular files a walk met, by workspace-relative path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    pub(crate) files: BTreeMap<String, EntryStat>,
    /// Whether the walk met every file (it stopped at the bound otherwise,
    /// and a file it did not meet may exist).
    pub(crate) complete: bool,
}

/// How a file differs between two scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Difference {
    /// Only in the later scan.
    Created,
    /// In both, with another stat.
    Changed,
    /// Only in the earlier scan.
    Deleted,
}

/// Walks the workspace for at most `max_files` regular files, leaving out
/// the paths `excluded` starts with (the session store, when it lives in
/// the workspace: it changes with every record).
pub(crate) fn scan(workspace: &Workspace, max_files: usize, excluded: &[String]) -> Scan {
    let mut files = BTreeMap::new();
    let mut complete = true;
    let walked = workspace.walk(&RelPath::root(), usize::MAX, &mut |entry| {
        if entry.kind != EntryKind::File
            || excluded.iter().any(|prefix| entry.path.starts_with(prefix.as_str()))
        {
            return Flow::Continue;
        }
        if files.len() >= max_files {
            complete = false;
            return Flow::Stop;
        }
        // A file gone between the listing and the stat is not there.
        if let Ok(stat) = entry.stat() {
            files.insert(entry.path.to_owned(), stat);
        }
        Flow::Continue
    });
    if walked.is_err() {
        // The root itself could not be read: nothing is known.
        complete = false;
    }
    Scan { files, complete }
}

/// What differs from `before` to `after`, by path. A file only one scan met
/// counts as created or deleted only when the other scan was complete: past
/// the bound, a file one walk stopped short of is not known to be gone.
pub(crate) fn diff(before: &Scan, after: &Scan) -> Vec<(String, Difference)> {
    let mut found = Vec::new();
    for (path, stat) in &after.files {
        match before.files.get(path) {
            Some(was) if was != stat => found.push((path.clone(), Difference::Changed)),
            Some(_) => {}
            None if before.complete => found.push((path.clone(), Difference::Created)),
            None => {}
        }
    }
    if after.complete {
        for path in before.files.keys().filter(|path| !after.files.contains_key(*path)) {
            found.push((path.clone(), Difference::Deleted));
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn stat(size: u64, ctime_ns: i64) -> EntryStat {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("f"), vec![b'x'; size as usize]).unwrap();
        let opened = Workspace::open(workspace.path()).unwrap();
        let mut found = None;
        opened
            .walk(&RelPath::root(), 1, &mut |entry| {
                found = Some(entry.stat().unwrap());
                Flow::Stop
            })
            .unwrap();
        let mut stat = found.unwrap();
        stat.ctime_ns = ctime_ns;
        stat
    }

    fn scan_of(files: &[(&str, EntryStat)], complete: bool) -> Scan {
        Scan { files: files.iter().map(|(p, s)| ((*p).to_owned(), *s)).collect(), complete }
    }

    #[test]
    fn the_difference_names_created_changed_and_deleted_files() {
        let (a, b) = (stat(1, 1), stat(1, 2));
        let before = scan_of(&[("kept", a), ("edited", a), ("removed", a)], true);
        let after = scan_of(&[("kept", a), ("edited", b), ("made", a)], true);
        let found = diff(&before, &after);
        assert_eq!(
            found,
            [
                ("edited".to_owned(), Difference::Changed),
                ("made".to_owned(), Difference::Created),
                ("removed".to_owned(), Difference::Deleted),
            ]
        );
        assert!(diff(&after, &after).is_empty());
    }

    #[test]
    fn past_the_bound_a_file_one_scan_did_not_meet_is_not_taken_as_created_or_deleted() {
        let (a, b) = (stat(1, 1), stat(2, 2));
        let before = scan_of(&[("a", a), ("b", a)], false);
        let after = scan_of(&[("a", b), ("c", a)], false);
        assert_eq!(diff(&before, &after), [("a".to_owned(), Difference::Changed)]);
        let after_whole = scan_of(&[("a", a)], true);
        assert_eq!(diff(&before, &after_whole), [("b".to_owned(), Difference::Deleted)]);
    }

    #[test]
    fn a_scan_walks_the_files_through_the_handles_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for file in ["a.txt", "src/b.rs", "src/deep/c.rs", "target/out", ".git/HEAD", "store/s.db"] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, file).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let workspace = Workspace::open(root).unwrap();
        let seen = scan(&workspace, 100, &["store/".to_owned()]);
        let paths: Vec<&str> = seen.files.keys().map(String::as_str).collect();
        assert_eq!(paths, [".gitignore", "a.txt", "src/b.rs", "src/deep/c.rs"]);
        assert!(seen.complete);
        assert_eq!(seen.files["a.txt"].size, 5);
        let bounded = scan(&workspace, 2, &[]);
        assert_eq!((bounded.files.len(), bounded.complete), (2, false));

        // A write shows in the stat.
        std::fs::write(root.join("a.txt"), "a.txt, written again").unwrap();
        let again = scan(&workspace, 100, &["store/".to_owned()]);
        assert_eq!(diff(&seen, &again), [("a.txt".to_owned(), Difference::Changed)]);
    }
}
