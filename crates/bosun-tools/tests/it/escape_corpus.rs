//! The escape corpus (MISSION.md invariants 16 and 17): hostile paths given
//! to every file tool, each of which must be refused with nothing read or
//! written outside the workspace root.
//!
//! Each case runs on a fresh fixture:
//!
//! ```text
//! base/                       (the temporary directory; outside the root)
//!   outside/secret.txt        known content
//!   outside/outside_dir/deep.txt
//!   root/                     the workspace
//!     normal.txt, sub/file.txt
//!     link_file -> ../outside/secret.txt       abs_link -> /…/outside/secret.txt
//!     link_dir -> ../outside                   abs_link_dir -> /…/outside
//!     dangling -> ../outside/not_yet.txt       up -> ..
//!     zero_link -> /dev/zero                   self_loop -> self_loop
//!     inner/loop1 -> loop2, inner/loop2 -> loop1, inner/out -> ../../outside
//!     fifo                                     (a FIFO)
//!     zero_dev                                 (a character device, when mknod is allowed)
//! ```
//!
//! Every timestamp outside the root is set to 2001 before the case runs, so
//! on a `relatime` (or `strictatime`) mount any read of an outside file or
//! listing of an outside directory moves its access time, and any write moves
//! its modification and change times. The snapshot is taken with `O_NOATIME`
//! so that taking it does not disturb it. After each case the tool must have
//! answered `is_error` with a message naming the reason, no output may hold
//! outside content, the snapshot of everything outside the root must be
//! unchanged, and no temporary file may be left in the workspace.
//!
//! Every table runs twice: through `openat2` and through the `O_NOFOLLOW`
//! component walk (`Workspace::force_component_walk`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext};
use bosun_tools::{ToolLimits, Workspace, WorkspaceTools};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Timespec, Timestamps};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The outside secret. No tool output may ever contain its text.
const SECRET: &str = "TOP SECRET 42: the outside file\n";
/// The file inside `outside/outside_dir/`.
const DEEP: &str = "deep outside content\n";
/// Markers that prove outside content reached a tool's output.
const LEAK_MARKERS: [&str; 2] = ["the outside file", "deep outside content"];
/// What a hostile write tries to put somewhere.
const PAYLOAD: &str = "PWNED\n";
/// The time every outside entry is set to before a case.
const PAST: i64 = 1_000_000_000;
/// How long any single case may take: a FIFO must never block a tool.
const CASE_TIMEOUT: Duration = Duration::from_secs(5);

include!("escape_corpus/fixture.rs");
include!("escape_corpus/cases.rs");

// ---------------------------------------------------------------------------
// The tables
// ---------------------------------------------------------------------------

#[test]
fn invariant_16_the_corpus_has_at_least_40_hostile_paths_and_hundreds_of_cases() {
    let paths = hostile_paths();
    let refused = paths.iter().filter(|h| matches!(h.expect, Expect::Refused(_))).count();
    assert!(refused >= 40, "only {refused} hostile paths that must be refused");
    let cases = paths.len() * (READ_OPS.len() + WRITE_OPS.len()) * RESOLUTIONS.len();
    assert!(cases >= 40 * 10 * 2, "only {cases} cases");
    let mut names: Vec<_> = paths.iter().map(|h| h.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), paths.len(), "case names must be unique");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_hostile_paths_are_refused_by_read_file_list_files_and_search() {
    let cases = run_table(&READ_OPS).await;
    assert!(cases >= 40 * READ_OPS.len() * 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_17_hostile_paths_are_refused_by_every_write_tool_and_leave_no_temp_file() {
    let cases = run_table(&WRITE_OPS).await;
    assert!(cases >= 40 * WRITE_OPS.len() * 2);
}

// ---------------------------------------------------------------------------
// Whole-tree walks never follow a symlink out
// ---------------------------------------------------------------------------

#[tokio::test]
async fn invariant_16_search_and_list_files_never_follow_a_symlink_out() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        let before = fx.snapshot();
        let calls: Vec<(&'static str, Value)> = vec![
            ("list_files", json!({})),
            ("list_files", json!({"depth": 32})),
            ("list_files", json!({"path": "inner", "depth": 32})),
            ("list_files", json!({"path": "sub", "depth": 32})),
            ("search", json!({"pattern": "SECRET"})),
            ("search", json!({"pattern": "deep outside", "literal": true})),
            ("search", json!({"pattern": "TOP", "glob": "**/secret.txt"})),
            ("search", json!({"pattern": ".", "glob": "**/deep.txt"})),
            ("search", json!({"pattern": ".", "path": "inner"})),
            ("search", json!({"pattern": "e", "context": 10})),
        ];
        for (name, arguments) in calls {
            let label = format!("[{resolution:?}] {name} {arguments}");
            let out = tokio::time::timeout(CASE_TIMEOUT, fx.call(name, arguments)).await.expect(&label);
            assert!(!out.is_error, "{label}: {}", out.text);
            for leaked in ["secret.txt", "outside_dir", "deep.txt", "TOP SECRET", "deep outside content"] {
                assert!(!out.text.contains(leaked), "{label} shows `{leaked}`: {}", out.text);
            }
            let diff = before.diff(&fx.snapshot());
            assert!(diff.is_empty(), "{label} touched the outside:\n{diff}");
        }
        let listing = fx.call("list_files", json!({"depth": 32})).await.text;
        for shown_as_link in ["link_dir", "abs_link_dir", "up", "inner/out", "inner/loop1", "link_file"] {
            assert!(
                listing.lines().any(|l| l == format!("{shown_as_link} (symlink, not followed)")),
                "[{resolution:?}] `{shown_as_link}` is not shown as an unfollowed symlink:\n{listing}"
            );
        }
        assert!(listing.lines().any(|l| l == "sub/file.txt"), "{listing}");
        let found = fx.call("search", json!({"pattern": "inside"})).await.text;
        assert!(found.contains("normal.txt:1:normal inside"), "{found}");
        assert!(found.contains("sub/file.txt:1:sub inside"), "{found}");
    }
}

// ---------------------------------------------------------------------------
// FIFOs and devices
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_a_fifo_never_blocks_any_tool() {
    for resolution in RESOLUTIONS {
        for op in READ_OPS.into_iter().chain(WRITE_OPS) {
            let fifo = Hostile { name: "fifo", path: "fifo".to_owned(), expect: Expect::Refused(SPECIAL) };
            if let Err(problem) = run_case(resolution, &fifo, op).await {
                panic!("[{resolution:?}] {op:?} on a FIFO: {problem}");
            }
        }
        // The whole-tree walks pass the FIFO by too.
        let fx = Fixture::new(resolution);
        for arguments in [json!({"pattern": "x"}), json!({"pattern": "x", "glob": "fifo"})] {
            let out = tokio::time::timeout(CASE_TIMEOUT, fx.call("search", arguments.clone())).await;
            unblock_fifo(&fx.root);
            let out =
                out.unwrap_or_else(|_| panic!("[{resolution:?}] search {arguments} blocked on the FIFO"));
            assert!(!out.is_error, "{}", out.text);
        }
    }
}

// ---------------------------------------------------------------------------
// Writes through symlinked parents
// ---------------------------------------------------------------------------

#[tokio::test]
async fn invariant_17_a_write_through_a_symlinked_parent_is_refused_and_leaves_no_temp_file_anywhere() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        let before = fx.snapshot();
        let targets = [
            "link_dir/new.txt",
            "abs_link_dir/new.txt",
            "link_dir/outside_dir/new.txt",
            "inner/out/new.txt",
            "up/outside/new.txt",
            "up/new.txt",
            "link_dir/created_dir/new.txt",
            "dangling",
        ];
        for target in targets {
            for (name, arguments) in [
                ("write_file", json!({"path": target, "content": PAYLOAD})),
                (
                    "apply_patch",
                    json!({"patch": format!("*** Begin Patch\n*** Add File: {target}\n+PWNED\n*** End Patch")}),
                ),
            ] {
                let out = fx.call(name, arguments).await;
                assert!(
                    out.is_error && out.text.contains("symlink"),
                    "[{resolution:?}] {name} {target}: {}",
                    out.text
                );
                let temps = fx.temp_files();
                assert!(temps.is_empty(), "[{resolution:?}] {name} {target} left {temps:?}");
                let diff = before.diff(&fx.snapshot());
                assert!(diff.is_empty(), "[{resolution:?}] {name} {target} changed the outside:\n{diff}");
            }
        }
        assert!(!fx.outside.join("not_yet.txt").exists());
        assert!(!fx.outside.join("created_dir").exists());
    }
}

// ---------------------------------------------------------------------------
// A directory swapped for a symlink between check and use
// ---------------------------------------------------------------------------

/// `root/swap` and `root/.swap_alt` are exchanged atomically
/// (`renameat2(RENAME_EXCHANGE)`) as fast as a thread can, so `swap` flips
/// between a real directory (holding `f.txt`) and a symlink to `../outside`.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(root: &Path) -> Self {
        fs::create_dir(root.join("swap")).unwrap();
        fs::write(root.join("swap/f.txt"), "inside f\n").unwrap();
        symlink("../outside", root.join(".swap_alt")).unwrap();
        let (stop, swaps) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let dir = open_dir_noatime(root);
        let thread = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(&dir, "swap", &dir, ".swap_alt", RenameFlags::EXCHANGE)
                        .unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let swapper = Self { stop, swaps, thread: Some(thread) };
        swapper.wait_for_swaps(10);
        swapper
    }

    /// Polls until `n` more swaps happened (deadline 10 s).
    fn wait_for_swaps(&self, n: usize) {
        let target = self.swaps.load(Ordering::Relaxed) + n;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.swaps.load(Ordering::Relaxed) < target {
            assert!(Instant::now() < deadline, "the swapping thread made no progress");
            std::thread::yield_now();
        }
    }

    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

const RACE_ROUNDS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_a_directory_swapped_for_a_symlink_never_lets_a_read_out() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        let swapper = Swapper::start(&fx.root);
        let before = fx.snapshot();
        let (mut inside_reads, mut refused) = (0, 0);
        for round in 0..RACE_ROUNDS {
            for (name, arguments) in [
                ("read_file", json!({"path": "swap/f.txt"})),
                ("read_file", json!({"path": "swap/secret.txt"})),
                ("read_file", json!({"path": "swap/outside_dir/deep.txt"})),
                ("edit_file", json!({"path": "swap/secret.txt", "old_text": "TOP", "new_text": "PWNED"})),
                ("search", json!({"pattern": "SECRET|deep", "path": "swap/secret.txt"})),
                ("search", json!({"pattern": "inside|SECRET", "path": "swap/f.txt"})),
            ] {
                let label = format!("[{resolution:?}] round {round}: {name} {arguments}");
                let out = fx.call(name, arguments).await;
                assert!(!LEAK_MARKERS.iter().any(|m| out.text.contains(m)), "{label} leaked: {}", out.text);
                if name == "read_file" && !out.is_error {
                    assert!(out.text.contains("inside f"), "{label}: {}", out.text);
                    inside_reads += 1;
                }
                refused += usize::from(out.is_error);
            }
        }
        let swaps = swapper.stop();
        let diff = before.diff(&fx.snapshot());
        assert!(diff.is_empty(), "[{resolution:?}] the race touched the outside:\n{diff}");
        assert!(swaps > RACE_ROUNDS, "[{resolution:?}] only {swaps} swaps");
        eprintln!("[{resolution:?}] {swaps} swaps; {inside_reads} reads inside, {refused} calls refused");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_17_a_directory_swapped_for_a_symlink_never_lets_a_write_out() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        let swapper = Swapper::start(&fx.root);
        let before = fx.snapshot();
        let (mut written, mut refused) = (0, 0);
        for round in 0..RACE_ROUNDS {
            let read = fx.call("read_file", json!({"path": "swap/f.txt"})).await;
            assert!(!LEAK_MARKERS.iter().any(|m| read.text.contains(m)), "{}", read.text);
            let patch = format!("*** Begin Patch\n*** Add File: swap/p{round}.txt\n+PWNED\n*** End Patch");
            for (name, arguments) in [
                ("write_file", json!({"path": format!("swap/new{round}.txt"), "content": PAYLOAD})),
                (
                    "write_file",
                    json!({"path": "swap/f.txt", "content": format!("inside f\nround {round}\n")}),
                ),
                ("write_file", json!({"path": "swap/secret.txt", "content": PAYLOAD})),
                ("edit_file", json!({"path": "swap/f.txt", "old_text": "inside f", "new_text": "inside F"})),
                ("apply_patch", json!({"patch": patch})),
                (
                    "apply_patch",
                    json!({"patch": "*** Begin Patch\n*** Delete File: swap/secret.txt\n*** End Patch"}),
                ),
            ] {
                let label = format!("[{resolution:?}] round {round}: {name} {arguments}");
                let out = fx.call(name, arguments).await;
                assert!(!LEAK_MARKERS.iter().any(|m| out.text.contains(m)), "{label} leaked: {}", out.text);
                if out.is_error {
                    refused += 1;
                } else {
                    written += 1;
                }
            }
        }
        let swaps = swapper.stop();
        let diff = before.diff(&fx.snapshot());
        assert!(diff.is_empty(), "[{resolution:?}] the race changed the outside:\n{diff}");
        let temps = fx.temp_files();
        assert!(temps.is_empty(), "[{resolution:?}] temporary files left: {temps:?}");
        assert!(swaps > RACE_ROUNDS, "[{resolution:?}] only {swaps} swaps");
        // Whatever was written landed in the real directory, wherever it is now.
        let real =
            if fs::symlink_metadata(fx.root.join("swap")).unwrap().is_dir() { "swap" } else { ".swap_alt" };
        for name in dir_names(&fx.root.join(real)) {
            let known = ["f.txt", "secret.txt"].contains(&name.as_str())
                || name.starts_with("new")
                || name.starts_with('p');
            assert!(known, "[{resolution:?}] unexpected `{name}` in the real directory");
        }
        if let Ok(text) = fs::read_to_string(fx.root.join(real).join("secret.txt")) {
            assert_eq!(
                text, PAYLOAD,
                "[{resolution:?}] the inside `secret.txt` is not what write_file wrote"
            );
        }
        eprintln!("[{resolution:?}] {swaps} swaps; {written} writes inside, {refused} refused");
    }
}

/// `list_files` and `search` check their scope through handles, but the walk
/// itself goes by path (the `ignore` crate's `read_dir(path)`), and the
/// walk's root entry is followed if it is a symlink. A directory swapped for
/// a symlink between the check and the walk (or between reading its parent
/// and descending into it) is then listed from outside: `list_files` shows
/// the outside names, and `search` reads the outside directories (file
/// contents stay out: each file is opened through the workspace handle).
/// This test races both against the swap and asserts that no outside name
/// is shown and no outside directory is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_16_a_walk_racing_a_swap_never_lists_outside() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        let swapper = Swapper::start(&fx.root);
        let before = fx.snapshot();
        let mut leaks = Vec::new();
        let mut by_call: BTreeMap<String, usize> = BTreeMap::new();
        let mut calls = 0;
        for round in 0..RACE_ROUNDS {
            for (name, arguments) in [
                ("list_files", json!({"path": "swap", "depth": 2})),
                ("list_files", json!({"depth": 3})),
                ("search", json!({"pattern": "SECRET|deep", "path": "swap"})),
                ("search", json!({"pattern": "SECRET|deep"})),
            ] {
                calls += 1;
                let out = fx.call(name, arguments.clone()).await;
                if ["secret.txt", "outside_dir", "deep.txt"].iter().any(|n| out.text.contains(n)) {
                    *by_call.entry(format!("{name} {arguments}")).or_insert(0) += 1;
                    leaks.push(format!("round {round}: {name} {arguments}:\n{}", out.text));
                }
            }
        }
        let swaps = swapper.stop();
        let diff = before.diff(&fx.snapshot());
        assert!(
            leaks.is_empty() && diff.is_empty(),
            "[{resolution:?}] {} of {calls} walks showed outside names ({swaps} swaps; by call: {by_call:?}); \
             outside changes:\n{diff}\nfirst leak: {}",
            leaks.len(),
            leaks.first().map_or("none", String::as_str)
        );
    }
}

/// The deterministic form of the race above: the workspace root itself is
/// moved away and replaced by a symlink to `outside/` after the workspace
/// was opened. Reads, listings and searches all go through the root handle
/// and still see the real root.
#[tokio::test]
async fn invariant_16_a_walk_stays_in_the_root_that_was_opened_even_if_its_path_is_replaced() {
    for resolution in RESOLUTIONS {
        let fx = Fixture::new(resolution);
        fs::rename(&fx.root, fx.base.join("root_moved")).unwrap();
        symlink("outside", &fx.root).unwrap();
        let before = fx.snapshot();
        let read = fx.call("read_file", json!({"path": "normal.txt"})).await;
        assert!(!read.is_error && read.text.contains("normal inside"), "[{resolution:?}] {}", read.text);
        let listing = fx.call("list_files", json!({"depth": 32})).await;
        let found = fx.call("search", json!({"pattern": "inside"})).await;
        // The real root now lives at `root_moved`; reading it there is right.
        let diff: String = before
            .diff(&fx.snapshot())
            .lines()
            .filter(|l| !l.contains("root_moved"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            !listing.text.contains("secret.txt") && listing.text.contains("normal.txt") && diff.is_empty(),
            "[{resolution:?}] list_files listed another tree:\n{}\noutside changes:\n{diff}",
            listing.text
        );
        assert!(found.text.contains("normal.txt:1:normal inside"), "[{resolution:?}] search: {}", found.text);
    }
}

// ---------------------------------------------------------------------------
// The checker itself
// ---------------------------------------------------------------------------

/// The snapshot must see a plain read, a listing and a write outside, or the
/// corpus proves nothing.
#[test]
fn the_outside_snapshot_detects_a_read_a_listing_and_a_write() {
    let fx = Fixture::new(Resolution::Openat2);
    let before = fx.snapshot();
    assert!(before.diff(&fx.snapshot()).is_empty(), "taking a snapshot must not disturb it");
    let atime_moves = {
        let _ = fs::read(fx.outside.join("secret.txt")).unwrap();
        !before.diff(&fx.snapshot()).is_empty()
    };
    if atime_moves {
        let fx = Fixture::new(Resolution::Openat2);
        let before = fx.snapshot();
        let _ = fs::read_dir(fx.outside.join("outside_dir")).unwrap().count();
        assert!(before.diff(&fx.snapshot()).contains("atime"), "a listing went unseen");
    } else {
        eprintln!(
            "this mount does not update access times (noatime): reads outside are checked by content only"
        );
    }
    let fx = Fixture::new(Resolution::Openat2);
    let before = fx.snapshot();
    fs::write(fx.outside.join("outside_dir/x.tmp"), "x").unwrap();
    fs::remove_file(fx.outside.join("outside_dir/x.tmp")).unwrap();
    assert!(before.diff(&fx.snapshot()).contains("outside_dir (mtime"), "a create and delete went unseen");
    fs::write(fx.base.join("new"), "x").unwrap();
    assert!(before.diff(&fx.snapshot()).contains("appeared"), "a new file went unseen");
}
