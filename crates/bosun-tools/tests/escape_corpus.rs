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

// ---------------------------------------------------------------------------
// The fixture
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolution {
    Openat2,
    ComponentWalk,
}

const RESOLUTIONS: [Resolution; 2] = [Resolution::Openat2, Resolution::ComponentWalk];

struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    tools: Vec<Arc<dyn Tool>>,
}

/// One call's answer.
#[derive(Debug)]
struct Out {
    tool: &'static str,
    text: String,
    is_error: bool,
}

impl Fixture {
    fn new(resolution: Resolution) -> Self {
        Self::with_limits(resolution, ToolLimits::default())
    }

    fn with_limits(resolution: Resolution, limits: ToolLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let outside = base.join("outside");
        let root = base.join("root");
        fs::create_dir_all(outside.join("outside_dir")).unwrap();
        fs::write(outside.join("secret.txt"), SECRET).unwrap();
        fs::write(outside.join("outside_dir/deep.txt"), DEEP).unwrap();

        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(root.join("inner")).unwrap();
        fs::write(root.join("normal.txt"), "normal inside\n").unwrap();
        fs::write(root.join("sub/file.txt"), "sub inside\n").unwrap();
        symlink("../outside/secret.txt", root.join("link_file")).unwrap();
        symlink(outside.join("secret.txt"), root.join("abs_link")).unwrap();
        symlink("../outside", root.join("link_dir")).unwrap();
        symlink(&outside, root.join("abs_link_dir")).unwrap();
        symlink("../outside/not_yet.txt", root.join("dangling")).unwrap();
        symlink("..", root.join("up")).unwrap();
        symlink("/dev/zero", root.join("zero_link")).unwrap();
        symlink("self_loop", root.join("self_loop")).unwrap();
        symlink("loop2", root.join("inner/loop1")).unwrap();
        symlink("loop1", root.join("inner/loop2")).unwrap();
        symlink("../../outside", root.join("inner/out")).unwrap();
        let root_fd = open_dir_noatime(&root);
        rustix::fs::mkfifoat(&root_fd, "fifo", Mode::from_raw_mode(0o644)).unwrap();
        if device_nodes_allowed() {
            make_zero_device(&root_fd, "zero_dev").unwrap();
        }
        age_outside(&base);

        let workspace = Workspace::open(&root).unwrap();
        if resolution == Resolution::ComponentWalk {
            workspace.force_component_walk();
        }
        let tools = WorkspaceTools::new(workspace).limits(limits).without_shell().build();
        Self { _dir: dir, base, root, outside, tools }
    }

    async fn call(&self, name: &'static str, arguments: Value) -> Out {
        let tool = self.tools.iter().find(|t| t.definition().name == name).unwrap();
        let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        let output = tool.execute(arguments, context).await;
        Out { tool: name, text: concat_text(&output.content), is_error: output.is_error }
    }

    /// Everything outside the root, plus `/etc/passwd`.
    fn snapshot(&self) -> Snapshot {
        let mut nodes = BTreeMap::new();
        walk_outside(&self.base, &self.root, &mut nodes);
        if let Ok(meta) = fs::symlink_metadata("/etc/passwd") {
            use std::os::unix::fs::MetadataExt;
            nodes.insert(
                PathBuf::from("/etc/passwd"),
                Node {
                    kind: "file",
                    mode: meta.mode(),
                    ino: meta.ino(),
                    nlink: meta.nlink(),
                    size: meta.size(),
                    atime: None,
                    mtime: (meta.mtime(), meta.mtime_nsec()),
                    ctime: (meta.ctime(), meta.ctime_nsec()),
                    content: None,
                },
            );
        }
        Snapshot(nodes)
    }

    /// Temporary files anywhere under the base (inside or outside the root).
    fn temp_files(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        find_temp_files(&self.base, &mut found);
        found
    }
}

/// Whether this process may make device nodes (root, outside a user
/// namespace); decided once.
fn device_nodes_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir_noatime(dir.path());
        make_zero_device(&fd, "probe").is_ok()
    })
}

fn make_zero_device(dir: &OwnedFd, name: &str) -> rustix::io::Result<()> {
    rustix::fs::mknodat(
        dir,
        name,
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    )
}

fn open_dir_noatime(path: &Path) -> OwnedFd {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOATIME,
        Mode::empty(),
    )
    .unwrap()
}

/// Sets the access and modification times of the base directory and of
/// everything under `outside/` to [`PAST`].
fn age_outside(base: &Path) {
    let past = Timespec { tv_sec: PAST, tv_nsec: 0 };
    let times = Timestamps { last_access: past, last_modification: past };
    fn age(path: &Path, times: &Timestamps) {
        rustix::fs::utimensat(rustix::fs::CWD, path, times, AtFlags::SYMLINK_NOFOLLOW).unwrap();
        if fs::symlink_metadata(path).unwrap().is_dir() {
            for name in dir_names(path) {
                age(&path.join(name), times);
            }
        }
    }
    age(&base.join("outside"), &times);
    rustix::fs::utimensat(rustix::fs::CWD, base, &times, AtFlags::SYMLINK_NOFOLLOW).unwrap();
}

/// Directory entries, read with `O_NOATIME` so the listing leaves no trace.
fn dir_names(path: &Path) -> Vec<String> {
    let dir = rustix::fs::Dir::new(open_dir_noatime(path)).unwrap();
    let mut names: Vec<String> = dir
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "." && name != "..")
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    kind: &'static str,
    mode: u32,
    ino: u64,
    nlink: u64,
    size: u64,
    /// Not kept for symlinks (reading a link's target would move it).
    atime: Option<(i64, i64)>,
    mtime: (i64, i64),
    ctime: (i64, i64),
    content: Option<Vec<u8>>,
}

#[derive(Debug, PartialEq, Eq)]
struct Snapshot(BTreeMap<PathBuf, Node>);

impl Snapshot {
    /// What differs, one line per path; empty when nothing does.
    fn diff(&self, after: &Snapshot) -> String {
        let mut out = String::new();
        for (path, before) in &self.0 {
            match after.0.get(path) {
                None => writeln!(out, "  removed: {}", path.display()).unwrap(),
                Some(now) if now != before => {
                    let mut what = Vec::new();
                    if now.content != before.content || now.size != before.size {
                        what.push("content");
                    }
                    if now.atime != before.atime {
                        what.push("atime (it was read or listed)");
                    }
                    if now.mtime != before.mtime {
                        what.push("mtime");
                    }
                    if now.ctime != before.ctime {
                        what.push("ctime");
                    }
                    if now.ino != before.ino || now.kind != before.kind {
                        what.push("identity");
                    }
                    if now.mode != before.mode || now.nlink != before.nlink {
                        what.push("mode or links");
                    }
                    writeln!(out, "  changed: {} ({})", path.display(), what.join(", ")).unwrap();
                }
                Some(_) => {}
            }
        }
        for path in after.0.keys().filter(|p| !self.0.contains_key(*p)) {
            writeln!(out, "  appeared: {}", path.display()).unwrap();
        }
        out
    }
}

fn walk_outside(path: &Path, skip: &Path, nodes: &mut BTreeMap<PathBuf, Node>) {
    if path == skip {
        return;
    }
    let stat = rustix::fs::lstat(path).unwrap();
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => "dir",
        FileType::RegularFile => "file",
        FileType::Symlink => "symlink",
        _ => "special",
    };
    let content = (kind == "file").then(|| {
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NOATIME, Mode::empty())
            .unwrap();
        let mut bytes = Vec::new();
        fs::File::from(fd).read_to_end(&mut bytes).unwrap();
        bytes
    });
    nodes.insert(
        path.to_path_buf(),
        Node {
            kind,
            mode: stat.st_mode,
            ino: stat.st_ino,
            nlink: stat.st_nlink,
            size: u64::try_from(stat.st_size).unwrap(),
            atime: (kind != "symlink").then_some((stat.st_atime, i64::try_from(stat.st_atime_nsec).unwrap())),
            mtime: (stat.st_mtime, i64::try_from(stat.st_mtime_nsec).unwrap()),
            ctime: (stat.st_ctime, i64::try_from(stat.st_ctime_nsec).unwrap()),
            content,
        },
    );
    if kind == "dir" {
        for name in dir_names(path) {
            walk_outside(&path.join(name), skip, nodes);
        }
    }
}

fn find_temp_files(path: &Path, found: &mut Vec<PathBuf>) {
    for name in dir_names(path) {
        let child = path.join(&name);
        if name.ends_with(".tmp") || name.contains(".bosun-") {
            found.push(child.clone());
        }
        if fs::symlink_metadata(&child).unwrap().is_dir() {
            find_temp_files(&child, found);
        }
    }
}

// ---------------------------------------------------------------------------
// The hostile paths
// ---------------------------------------------------------------------------

/// What must happen to a hostile path.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Refused, with one of these words in the message.
    Refused(&'static [&'static str]),
    /// An ordinary name on Linux: may be refused, or read or created inside
    /// the root, but must not reach outside.
    StaysInside,
}

const LEAVES: &[&str] = &["leaves the workspace"];
const ABSOLUTE: &[&str] = &["absolute"];
const SYMLINK: &[&str] = &["symlink"];
const SPECIAL: &[&str] = &["FIFO", "device", "not a regular file", "not a directory", "special file"];
const NUL: &[&str] = &["NUL"];
const TOO_LONG: &[&str] = &["longer than"];
const BACKSLASH: &[&str] = &["`\\`"];

#[derive(Clone, Debug)]
struct Hostile {
    name: &'static str,
    path: String,
    expect: Expect,
}

/// Stands for the fixture's base directory in a hostile path; each case
/// puts in its own fixture's.
const BASE: &str = "{BASE}";

/// The hostile paths.
fn hostile_paths() -> Vec<Hostile> {
    let h = |name, path: &str, expect| Hostile { name, path: path.to_owned(), expect };
    let r = Expect::Refused;
    let mut paths = vec![
        // Parent traversal, resolved lexically before any system call.
        h("dotdot", "..", r(LEAVES)),
        h("dotdot file", "../x", r(LEAVES)),
        h("down then two up", "a/../../x", r(LEAVES)),
        h("dots in between", "./a/./../../b", r(LEAVES)),
        h("dotdot to the secret", "../outside/secret.txt", r(LEAVES)),
        h("real dir then two up", "sub/../../outside/secret.txt", r(LEAVES)),
        h("symlink then two up", "link_dir/../../outside/secret.txt", r(LEAVES)),
        h("far up", "../../../../../../../../../etc/passwd", r(LEAVES)),
        h("out and back in", "../root/normal.txt", r(LEAVES)),
        h("dotdot with trailing slash", "../outside/", r(LEAVES)),
        // Absolute paths, even ones that point inside the root.
        h("etc passwd", "/etc/passwd", r(ABSOLUTE)),
        h("double slash", "//etc/passwd", r(ABSOLUTE)),
        h("absolute outside secret", &format!("{BASE}/outside/secret.txt"), r(ABSOLUTE)),
        h("absolute into the root", &format!("{BASE}/root/normal.txt"), r(ABSOLUTE)),
        h("dev zero", "/dev/zero", r(ABSOLUTE)),
        h("proc self root", "/proc/self/root/etc/passwd", r(ABSOLUTE)),
        // Symlinks, relative and absolute, to files and directories.
        h("relative symlink to outside file", "link_file", r(SYMLINK)),
        h("absolute symlink to outside file", "abs_link", r(SYMLINK)),
        h("relative symlink to outside dir", "link_dir/secret.txt", r(SYMLINK)),
        h("absolute symlink to outside dir", "abs_link_dir/secret.txt", r(SYMLINK)),
        h("symlinked dir, deeper", "link_dir/outside_dir/deep.txt", r(SYMLINK)),
        h("symlinked dir, new file", "link_dir/new_file.txt", r(SYMLINK)),
        h("symlinked dir itself", "link_dir", r(SYMLINK)),
        h("absolute symlinked dir itself", "abs_link_dir", r(SYMLINK)),
        h("inner symlink pointing out", "inner/out/secret.txt", r(SYMLINK)),
        h("inner symlink pointing out, new file", "inner/out/new_file.txt", r(SYMLINK)),
        h("symlink to the parent of the root", "up/outside/secret.txt", r(SYMLINK)),
        h("dangling symlink to outside", "dangling", r(SYMLINK)),
        h("symlink to dev zero", "zero_link", r(SYMLINK)),
        h("symlink loop", "inner/loop1", r(SYMLINK)),
        h("through a symlink loop", "inner/loop1/x", r(SYMLINK)),
        h("self loop", "self_loop", r(SYMLINK)),
        h("through a self loop", "self_loop/x", r(SYMLINK)),
        // Special files.
        h("fifo", "fifo", r(SPECIAL)),
        // Malformed paths.
        h("NUL in the middle", "normal.txt\0../../outside/secret.txt", r(NUL)),
        h("NUL at the end", "link_file\0", r(NUL)),
        h("over-long path", &format!("{}x", "a/".repeat(2100)), r(TOO_LONG)),
        h("over-long component", &"x".repeat(256), r(TOO_LONG)),
        h("over-long dotdot chain", &"../".repeat(1400), r(TOO_LONG)),
        h("backslash dotdot", "..\\outside\\secret.txt", r(BACKSLASH)),
        h("backslash inside", "sub\\..\\..\\x", r(BACKSLASH)),
        // Look-alikes: ordinary names on Linux that must stay inside.
        h("one dot leaders", "\u{2024}\u{2024}/outside/secret.txt", Expect::StaysInside),
        h("fullwidth full stops", "\u{ff0e}\u{ff0e}/outside/secret.txt", Expect::StaysInside),
        h("two dot leader", "\u{2025}/outside/secret.txt", Expect::StaysInside),
        h("ellipsis", "\u{2026}/x", Expect::StaysInside),
        h("zero-width space between dots", ".\u{200b}./outside/secret.txt", Expect::StaysInside),
        h("division slash", "\u{2215}..\u{2215}outside", Expect::StaysInside),
        h("url-encoded dots", "%2e%2e/outside/secret.txt", Expect::StaysInside),
        h("url-encoded slash", "..%2foutside%2fsecret.txt", Expect::StaysInside),
        h("three dots", ".../x", Expect::StaysInside),
        h("dotdot space", ".. /x", Expect::StaysInside),
        h("tilde", "~/x", Expect::StaysInside),
    ];
    if device_nodes_allowed() {
        paths.push(h("character device", "zero_dev", r(SPECIAL)));
    }
    paths
}

// ---------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    ReadFile,
    ListFiles,
    SearchPath,
    WriteFile,
    EditFile,
    PatchAdd,
    PatchUpdate,
    PatchDelete,
    PatchMoveTo,
    PatchMoveFrom,
}

const READ_OPS: [Op; 3] = [Op::ReadFile, Op::ListFiles, Op::SearchPath];
const WRITE_OPS: [Op; 7] = [
    Op::WriteFile,
    Op::EditFile,
    Op::PatchAdd,
    Op::PatchUpdate,
    Op::PatchDelete,
    Op::PatchMoveTo,
    Op::PatchMoveFrom,
];

impl Op {
    /// Runs the operation on `path`; the last answer is the one judged, the
    /// others (a preparatory read) are only checked for leaks.
    async fn run(self, fx: &Fixture, path: &str) -> Vec<Out> {
        let patch = |body: String| json!({"patch": format!("*** Begin Patch\n{body}*** End Patch\n")});
        match self {
            Op::ReadFile => vec![fx.call("read_file", json!({"path": path})).await],
            Op::ListFiles => vec![fx.call("list_files", json!({"path": path, "depth": 32})).await],
            Op::SearchPath => {
                vec![fx.call("search", json!({"pattern": "SECRET\\s42|deep\\s+outside", "path": path})).await]
            }
            Op::WriteFile => {
                // Read first, so that a read which escaped would also let
                // the replace through.
                let read = fx.call("read_file", json!({"path": path})).await;
                let write = fx.call("write_file", json!({"path": path, "content": PAYLOAD})).await;
                vec![read, write]
            }
            Op::EditFile => {
                let read = fx.call("read_file", json!({"path": path})).await;
                let edit = fx
                    .call(
                        "edit_file",
                        json!({"path": path, "old_text": "TOP SECRET 42", "new_text": "PWNED"}),
                    )
                    .await;
                vec![read, edit]
            }
            Op::PatchAdd => {
                vec![fx.call("apply_patch", patch(format!("*** Add File: {path}\n+PWNED\n"))).await]
            }
            Op::PatchUpdate => vec![
                fx.call(
                    "apply_patch",
                    patch(format!("*** Update File: {path}\n@@\n-TOP SECRET 42\n+PWNED\n")),
                )
                .await,
            ],
            Op::PatchDelete => {
                vec![fx.call("apply_patch", patch(format!("*** Delete File: {path}\n"))).await]
            }
            Op::PatchMoveTo => vec![
                fx.call("apply_patch", patch(format!("*** Update File: normal.txt\n*** Move to: {path}\n")))
                    .await,
            ],
            Op::PatchMoveFrom => vec![
                fx.call(
                    "apply_patch",
                    patch(format!("*** Update File: {path}\n*** Move to: moved_here.txt\n")),
                )
                .await,
            ],
        }
    }

    /// Whether a success of this operation creates `path` inside the root.
    fn creates(self) -> bool {
        matches!(self, Op::WriteFile | Op::PatchAdd | Op::PatchMoveTo)
    }
}

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

fn shown(path: &str) -> String {
    let visible = path.replace('\0', "\\0");
    if visible.chars().count() > 60 {
        format!("{}… ({} bytes)", visible.chars().take(60).collect::<String>(), path.len())
    } else {
        visible
    }
}

/// Unblocks anything stuck on the fixture's FIFO (only used after a timeout,
/// to let the stuck blocking thread finish).
fn unblock_fifo(root: &Path) {
    if let Ok(fd) = rustix::fs::open(root.join("fifo"), OFlags::RDWR | OFlags::NONBLOCK, Mode::empty()) {
        let _ = rustix::io::write(&fd, b"unblock\n");
    }
}

/// Runs one case on a fresh fixture; `Err` describes every problem found.
async fn run_case(resolution: Resolution, hostile: &Hostile, op: Op) -> Result<(), String> {
    let fx = Fixture::new(resolution);
    let before = fx.snapshot();
    let normal_before = fs::read(fx.root.join("normal.txt")).unwrap();
    let started = Instant::now();
    let path = hostile.path.replace(BASE, &fx.base.display().to_string());
    let outs = match tokio::time::timeout(CASE_TIMEOUT, op.run(&fx, &path)).await {
        Ok(outs) => outs,
        Err(_) => {
            unblock_fifo(&fx.root);
            return Err(format!("did not finish within {CASE_TIMEOUT:?} (blocked?)"));
        }
    };
    let mut problems = Vec::new();
    for out in &outs {
        if LEAK_MARKERS.iter().any(|m| out.text.contains(m)) {
            problems.push(format!("{} output holds outside content: {}", out.tool, out.text));
        }
    }
    let last = outs.last().unwrap();
    match hostile.expect {
        Expect::Refused(words) => {
            if !last.is_error {
                problems.push(format!("{} succeeded: {}", last.tool, last.text));
            } else if !words.iter().any(|w| last.text.contains(w)) {
                problems.push(format!("{} refused without naming {words:?}: {}", last.tool, last.text));
            }
        }
        Expect::StaysInside => {
            if !last.is_error && op.creates() {
                let created = fx.root.join(&path);
                let inside = fs::read_to_string(&created).ok();
                let expected = if op == Op::PatchMoveTo { "normal inside\n" } else { PAYLOAD };
                if inside.as_deref() != Some(expected) {
                    problems.push(format!(
                        "{} succeeded but `{}` inside the root holds {inside:?}: {}",
                        last.tool,
                        created.display(),
                        last.text
                    ));
                }
            }
        }
    }
    if last.is_error && fs::read(fx.root.join("normal.txt")).ok().as_ref() != Some(&normal_before) {
        problems.push("a refused patch still changed normal.txt".to_owned());
    }
    if last.is_error && fx.root.join("moved_here.txt").exists() {
        problems.push("a refused move still created moved_here.txt".to_owned());
    }
    let diff = before.diff(&fx.snapshot());
    if !diff.is_empty() {
        problems.push(format!("outside the root changed:\n{diff}"));
    }
    let temps = fx.temp_files();
    if !temps.is_empty() {
        problems.push(format!("temporary files left: {temps:?}"));
    }
    if started.elapsed() > CASE_TIMEOUT {
        problems.push(format!("took {:?}", started.elapsed()));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n    ")) }
}

/// Runs every hostile path through every operation in `ops`, under both
/// resolutions, and fails listing every case that went wrong.
async fn run_table(ops: &[Op]) -> usize {
    let mut cases = 0;
    let mut failures = Vec::new();
    for resolution in RESOLUTIONS {
        for hostile in hostile_paths() {
            for &op in ops {
                cases += 1;
                if let Err(problem) = run_case(resolution, &hostile, op).await {
                    failures.push(format!(
                        "[{resolution:?}] {op:?} `{}` ({}):\n    {problem}",
                        hostile.name,
                        shown(&hostile.path)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
    cases
}

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
