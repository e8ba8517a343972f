// The corpus fixture (a workspace beside an outside tree) and snapshots of
// the outside; included into `escape_corpus.rs`.

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
