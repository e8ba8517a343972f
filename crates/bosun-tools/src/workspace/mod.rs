//! [`Workspace`]: the root directory held open as a handle, and every path
//! resolved beneath it (invariant 16).
//!
//! Resolution uses `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`
//! where the kernel has it, and otherwise walks the path one component at a
//! time with `openat(…, O_NOFOLLOW)` from the root handle. Either way no
//! symlink is followed anywhere in the path, and a directory swapped for a
//! symlink between a check and a use makes the open fail instead of
//! escaping. Files must be regular files; FIFOs, devices and sockets are
//! refused without being opened for I/O.
//!
//! Everything here is blocking; tools call it from `spawn_blocking`.

mod atomic;
mod lock;
pub mod path;
mod walk;

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bosun_core::WorkspaceIdentity;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

pub use atomic::{Precondition, WriteReport};
pub use path::RelPath;
pub use walk::{DirEntries, EntryKind, EntryStat, Flow, WalkEntry};

/// Why a workspace operation was refused or failed. Every variant names the
/// path as the tool received it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The path is malformed.
    #[error("`{path}` is not a usable path: {reason}")]
    InvalidPath {
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The path is absolute.
    #[error("`{path}` is absolute; paths are relative to the workspace root")]
    Absolute {
        /// The path.
        path: String,
    },
    /// A `..` would leave the root.
    #[error("`{path}` leaves the workspace")]
    Escapes {
        /// The path.
        path: String,
    },
    /// A symlink in the path.
    #[error("`{path}`: `{at}` is a symlink, and symlinks are not followed")]
    Symlink {
        /// The path.
        path: String,
        /// The component that is a symlink.
        at: String,
    },
    /// Nothing there.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path.
        path: String,
    },
    /// Something other than a regular file where a file was expected.
    #[error("`{path}` is a {kind}, not a regular file")]
    NotAFile {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Something other than a directory where one was expected.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The path.
        path: String,
    },
    /// A file over the size cap.
    #[error("`{path}` is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file changed since it was read.
    #[error("`{path}` changed since it was read; read it again before changing it")]
    Changed {
        /// The path.
        path: String,
    },
    /// Replacing a file that was never read.
    #[error("`{path}` exists and has not been read in this session; read it before replacing it")]
    NotRead {
        /// The path.
        path: String,
    },
    /// The file exists where a new one was to be created.
    #[error("`{path}` already exists")]
    Exists {
        /// The path.
        path: String,
    },
    /// A [`crate::FileAccess`] (an editor) could not read or write the file.
    #[error("`{path}`: the editor could not {op} it: {reason}")]
    Access {
        /// The path.
        path: String,
        /// `read` or `write`.
        op: &'static str,
        /// What it said.
        reason: String,
    },
    /// The workspace root itself is unusable.
    #[error("workspace root `{path}`: {source}")]
    Root {
        /// The root path.
        path: String,
        /// The cause.
        source: io::Error,
    },
    /// A system call failed.
    #[error("`{path}`: {op} failed: {source}")]
    Io {
        /// The path.
        path: String,
        /// What was being done.
        op: &'static str,
        /// The cause.
        source: io::Error,
    },
}

impl WorkspaceError {
    pub(crate) fn io(path: &RelPath, op: &'static str, errno: Errno) -> Self {
        Self::Io { path: path.to_string(), op, source: io::Error::from(errno) }
    }
}

/// Who a file is: device, inode and a SHA-256 of its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    /// Device id.
    pub device: u64,
    /// Inode.
    pub inode: u64,
    /// Hex SHA-256 of the content.
    pub hash: String,
}

/// A file read through the workspace.
#[derive(Debug)]
pub struct ReadFile {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Its identity at the time of reading.
    pub identity: FileIdentity,
    /// Permission bits, kept when the file is replaced.
    pub mode: u32,
}

struct Inner {
    root: OwnedFd,
    path: PathBuf,
    identity: WorkspaceIdentity,
    /// Cleared the first time the kernel says it has no `openat2`.
    openat2: AtomicBool,
    /// Paths being changed, shared by every clone (see `lock.rs`).
    locks: lock::PathLocks,
}

/// An open workspace root. Cheap to clone; clones share the handle and the
/// per-path locks the writing tools hold.
#[derive(Clone)]
pub struct Workspace {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace").field("path", &self.inner.path).finish()
    }
}

const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY)
    .union(OFlags::NONBLOCK);
const BENEATH: ResolveFlags =
    ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS).union(ResolveFlags::NO_MAGICLINKS);

impl Workspace {
    /// Opens `root` (following symlinks in the root's own path, which the
    /// person chose) and records its canonical path and identity.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let given = root.as_ref();
        let root_error = |source| WorkspaceError::Root { path: given.display().to_string(), source };
        let path = std::fs::canonicalize(given).map_err(root_error)?;
        let fd = rustix::fs::open(&path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| root_error(e.into()))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| root_error(e.into()))?;
        let identity = WorkspaceIdentity::new(path.display().to_string(), stat.st_dev, stat.st_ino);
        let inner =
            Inner { root: fd, path, identity, openat2: AtomicBool::new(true), locks: Default::default() };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The directory at `path` beneath this root as a root of its own (a
    /// skill's folder): opened through this root's handle with no symlink
    /// followed anywhere in `path`, so everything resolved beneath it obeys
    /// the same rules and stays inside that directory. It shares no locks.
    pub fn subdir(&self, path: &RelPath) -> Result<Self, WorkspaceError> {
        let fd = self.open_dir(path, false)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io(path, "stat", e))?;
        let full = self.inner.path.join(path.as_string());
        let identity = WorkspaceIdentity::new(full.display().to_string(), stat.st_dev, stat.st_ino);
        let openat2 = AtomicBool::new(self.inner.openat2.load(Ordering::Relaxed));
        let inner = Inner { root: fd, path: full, identity, openat2, locks: Default::default() };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Canonical path and device/inode of the root, for the authority snapshot.
    pub fn identity(&self) -> &WorkspaceIdentity {
        &self.inner.identity
    }

    /// The canonical root path.
    pub fn root_path(&self) -> &Path {
        &self.inner.path
    }

    /// Makes later resolutions use the component walk, as on kernels without
    /// `openat2` (for tests of that path).
    pub fn force_component_walk(&self) {
        self.inner.openat2.store(false, Ordering::Relaxed);
    }

    /// Opens the directory at `path`; with `create`, makes missing ones.
    pub fn open_dir(&self, path: &RelPath, create: bool) -> Result<OwnedFd, WorkspaceError> {
        if !create
            && self.inner.openat2.load(Ordering::Relaxed)
            && let Some(result) = self.openat2(path, DIR_FLAGS)
        {
            return result;
        }
        let mut current =
            rustix::io::dup(&self.inner.root).map_err(|e| WorkspaceError::io(path, "dup", e))?;
        for (index, name) in path.components().iter().enumerate() {
            let opened = match rustix::fs::openat(&current, name.as_str(), DIR_FLAGS, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&current, name.as_str(), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(WorkspaceError::io(path, "mkdir", e)),
                    }
                    rustix::fs::openat(&current, name.as_str(), DIR_FLAGS, Mode::empty())
                }
                other => other,
            };
            current = opened.map_err(|e| self.explain(&current, path, index, e))?;
        }
        Ok(current)
    }

    /// How many leading components of `path` are directories that exist,
    /// each opened from its parent's handle without following a symlink:
    /// `path.components()[..n]` is the deepest existing ancestor.
    pub fn existing_depth(&self, path: &RelPath) -> usize {
        let Ok(mut current) = rustix::io::dup(&self.inner.root) else { return 0 };
        let mut depth = 0;
        for name in path.components() {
            match rustix::fs::openat(&current, name.as_str(), DIR_FLAGS, Mode::empty()) {
                Ok(next) => current = next,
                Err(_) => break,
            }
            depth += 1;
        }
        depth
    }

    /// `openat2` beneath the root; `None` when the kernel lacks it.
    fn openat2(&self, path: &RelPath, flags: OFlags) -> Option<Result<OwnedFd, WorkspaceError>> {
        let target = if path.is_root() { ".".to_owned() } else { path.as_string() };
        match rustix::fs::openat2(&self.inner.root, target.as_str(), flags, Mode::empty(), BENEATH) {
            Ok(fd) => Some(Ok(fd)),
            Err(Errno::NOSYS | Errno::PERM) => {
                // Not available (old kernel, or a seccomp filter): walk instead.
                self.inner.openat2.store(false, Ordering::Relaxed);
                None
            }
            // The walk gives the precise reason (which component, what kind).
            Err(_) => None,
        }
    }

    /// Turns a failed open of component `index` into a clear error.
    fn explain(&self, parent: &OwnedFd, path: &RelPath, index: usize, errno: Errno) -> WorkspaceError {
        let at = path.components()[..=index].join("/");
        let name = path.components()[index].as_str();
        match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => WorkspaceError::NotFound { path: path.to_string() },
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                WorkspaceError::Symlink { path: path.to_string(), at }
            }
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::Directory => {
                if index + 1 == path.components().len() {
                    WorkspaceError::NotADirectory { path: path.to_string() }
                } else {
                    WorkspaceError::NotADirectory { path: at }
                }
            }
            _ => WorkspaceError::io(path, "open", errno),
        }
    }

    /// The parent directory handle and the last name of `path`.
    pub(crate) fn parent<'p>(
        &self,
        path: &'p RelPath,
        create: bool,
    ) -> Result<(OwnedFd, &'p str), WorkspaceError> {
        let (parent, name) = path
            .split_last()
            .ok_or_else(|| WorkspaceError::NotAFile { path: ".".into(), kind: "directory" })?;
        let parent_path = RelPath::parse(&parent.join("/"))?;
        Ok((self.open_dir(&parent_path, create)?, name))
    }

    /// Opens the regular file at `path` for reading.
    pub fn open_file(&self, path: &RelPath) -> Result<(File, Stat), WorkspaceError> {
        let (parent, name) = self.parent(path, false)?;
        // Look before opening: opening a device or FIFO can have effects.
        check_regular(path, stat_nofollow(&parent, name, path)?)?;
        let fd = rustix::fs::openat(&parent, name, FILE_FLAGS, Mode::empty())
            .map_err(|e| self.explain(&parent, path, path.components().len() - 1, e))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io(path, "stat", e))?;
        check_regular(path, stat)?;
        // Opened non-blocking so a FIFO could not hang the open; a regular
        // file reads the same either way, but clear it for plain semantics.
        let flags = rustix::fs::fcntl_getfl(&fd).map_err(|e| WorkspaceError::io(path, "fcntl", e))?;
        rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)
            .map_err(|e| WorkspaceError::io(path, "fcntl", e))?;
        Ok((File::from(fd), stat))
    }

    /// Reads a whole regular file of at most `limit` bytes.
    pub fn read(&self, path: &RelPath, limit: u64) -> Result<ReadFile, WorkspaceError> {
        let (file, stat) = self.open_file(path)?;
        let size = u64::try_from(stat.st_size).unwrap_or_default();
        if size > limit {
            return Err(WorkspaceError::TooLarge { path: path.to_string(), size, limit });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or_default());
        // `take` bounds a file that grows while it is read.
        file.take(limit + 1).read_to_end(&mut bytes).map_err(|source| WorkspaceError::Io {
            path: path.to_string(),
            op: "read",
            source,
        })?;
        let read = bytes.len() as u64;
        if read > limit {
            return Err(WorkspaceError::TooLarge { path: path.to_string(), size: read, limit });
        }
        let identity = FileIdentity { device: stat.st_dev, inode: stat.st_ino, hash: hash(&bytes) };
        Ok(ReadFile { bytes, identity, mode: stat.st_mode & 0o7777 })
    }

    /// The identity of the regular file at `path` and its permission bits,
    /// its content hashed as it is read (never held whole), if it is at
    /// most `limit` bytes.
    pub fn identify(&self, path: &RelPath, limit: u64) -> Result<(FileIdentity, u32), WorkspaceError> {
        let (mut file, stat) = self.open_file(path)?;
        let size = u64::try_from(stat.st_size).unwrap_or_default();
        if size > limit {
            return Err(WorkspaceError::TooLarge { path: path.to_string(), size, limit });
        }
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut read = 0u64;
        loop {
            let n = file.read(&mut buffer).map_err(|source| WorkspaceError::Io {
                path: path.to_string(),
                op: "read",
                source,
            })?;
            if n == 0 {
                break;
            }
            read += n as u64;
            // A file that grows while it is read is bounded too.
            if read > limit {
                return Err(WorkspaceError::TooLarge { path: path.to_string(), size: read, limit });
            }
            hasher.update(&buffer[..n]);
        }
        let hash = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let identity = FileIdentity { device: stat.st_dev, inode: stat.st_ino, hash };
        Ok((identity, stat.st_mode & 0o7777))
    }

    /// What is at `path` without following a symlink: `None` if nothing.
    pub fn kind(&self, path: &RelPath) -> Result<Option<FileType>, WorkspaceError> {
        let Some((_, _)) = path.split_last() else { return Ok(Some(FileType::Directory)) };
        let (parent, name) = match self.parent(path, false) {
            Ok(found) => found,
            Err(WorkspaceError::NotFound { .. }) => return Ok(None),
            Err(other) => return Err(other),
        };
        match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(WorkspaceError::io(path, "stat", e)),
        }
    }
}

fn stat_nofollow(parent: &impl AsFd, name: &str, path: &RelPath) -> Result<Stat, WorkspaceError> {
    rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| match e {
        Errno::NOENT => WorkspaceError::NotFound { path: path.to_string() },
        e => WorkspaceError::io(path, "stat", e),
    })
}

fn check_regular(path: &RelPath, stat: Stat) -> Result<(), WorkspaceError> {
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => return Ok(()),
        FileType::Directory => "directory",
        FileType::Symlink => {
            let at = path.to_string();
            return Err(WorkspaceError::Symlink { path: at.clone(), at });
        }
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        FileType::Unknown => "special file",
    };
    Err(WorkspaceError::NotAFile { path: path.to_string(), kind })
}

/// Hex SHA-256.
pub fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Largest file whose content is compared before a replace or delete: the
/// hard maximum of what a tool may have read.
const MAX_COMPARE_BYTES: u64 = crate::ToolLimits::HARD_MAX_FILE_BYTES;
