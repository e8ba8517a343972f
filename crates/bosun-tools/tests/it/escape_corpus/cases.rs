// The hostile paths, the operations tried with each, and running one case;
// included into `escape_corpus.rs`.

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
