//! [`FileAccess`]: where the file tools read and write a file's text when
//! not only on disk: an editor's buffers (`bosun acp`, whose client reads
//! and writes files for its agent). The tools keep every check of their own
//! (the path parsed and resolved beneath the root handle with no symlink
//! followed, a regular file, the size cap, the read-before-change ledger,
//! the per-path locks); only the text itself comes from, or goes to, the
//! access. Binary files and images stay on disk: an editor holds text.
//!
//! A change through the access cannot be atomic the way a disk change is
//! (invariant 17): the text is checked against what the model read right
//! before it is handed over, and what the editor does with it (its buffer,
//! its save) is the editor's.

use std::path::Path;
use std::sync::Arc;

use crate::common::Shared;
use crate::workspace::{FileIdentity, Precondition, ReadFile, RelPath, WorkspaceError, WriteReport, hash};

/// Bytes inspected for NUL when telling text from binary.
const BINARY_SNIFF: usize = 8 * 1024;

/// Reads and writes whole text files somewhere other than bosun's own view
/// of the disk. Called from the blocking pool, with paths the tools have
/// already checked: absolute, beneath the workspace root.
pub trait FileAccess: Send + Sync + std::fmt::Debug {
    /// Whether `read_file` (and the edits, when [`FileAccess::writes`] too)
    /// read through this access.
    fn reads(&self) -> bool;

    /// Whether `write_file` (and the edits, when [`FileAccess::reads`] too)
    /// write through this access.
    fn writes(&self) -> bool;

    /// The whole text of the file at `path`.
    ///
    /// # Errors
    /// Why it could not be read, as the model should read it.
    fn read_text(&self, path: &Path) -> Result<String, String>;

    /// Makes `text` the whole content of the file at `path` (created when
    /// missing; its parent directories already exist).
    ///
    /// # Errors
    /// Why it could not be written, as the model should read it.
    fn write_text(&self, path: &Path, text: &str) -> Result<(), String>;
}

/// Through what one call reads or writes a file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// bosun's own atomic, descriptor-anchored access.
    Disk,
    /// The [`FileAccess`].
    Access,
}

impl Shared {
    /// Where `read_file` reads.
    pub(crate) fn read_via(&self) -> Via {
        self.via(|access| access.reads())
    }

    /// Where `write_file` writes.
    pub(crate) fn write_via(&self) -> Via {
        self.via(|access| access.writes())
    }

    /// Where `edit_file` and `apply_patch` read and write: through the
    /// access only when it does both, so an edit is always made to the text
    /// it was checked against.
    pub(crate) fn edit_via(&self) -> Via {
        self.via(|access| access.reads() && access.writes())
    }

    /// Where a change written `via` is checked against: the text the model
    /// was shown, read where `read_file` reads.
    pub(crate) fn check_via(&self, via: Via) -> Via {
        match via {
            Via::Disk => Via::Disk,
            Via::Access => self.read_via(),
        }
    }

    fn via(&self, offered: impl Fn(&dyn FileAccess) -> bool) -> Via {
        match &self.access {
            Some(access) if offered(access.as_ref()) => Via::Access,
            _ => Via::Disk,
        }
    }

    fn access(&self) -> Option<&Arc<dyn FileAccess>> {
        self.access.as_ref()
    }

    /// The file at `path` as the tools see it. Through the access, the disk
    /// is still read first, for every check (beneath the root, a regular
    /// file, no symlink, the size cap) and to leave a binary file or an
    /// image to the disk; a text file's content is then the access's, and
    /// its identity's hash that content's.
    pub(crate) fn load(&self, path: &RelPath, via: Via) -> Result<ReadFile, WorkspaceError> {
        let limit = self.limits.max_file_bytes;
        let disk = self.workspace.read(path, limit)?;
        let Some(access) = self.access().filter(|_| via == Via::Access) else { return Ok(disk) };
        if crate::image::ImageFormat::sniff(&disk.bytes).is_some()
            || disk.bytes[..disk.bytes.len().min(BINARY_SNIFF)].contains(&0)
        {
            return Ok(disk);
        }
        let absolute = self.workspace.root_path().join(path.as_string());
        let text = access.read_text(&absolute).map_err(|reason| WorkspaceError::Access {
            path: path.to_string(),
            op: "read",
            reason,
        })?;
        let size = text.len() as u64;
        if size > limit {
            return Err(WorkspaceError::TooLarge { path: path.to_string(), size, limit });
        }
        let identity = FileIdentity { hash: hash(text.as_bytes()), ..disk.identity };
        Ok(ReadFile { bytes: text.into_bytes(), identity, mode: disk.mode })
    }

    /// Makes `text` the content of `path` if `precondition` holds: on disk
    /// atomically, or through the access after checking the precondition
    /// against the text read where the model read it (by content: an
    /// editor's buffer has no inode of its own).
    pub(crate) fn store(
        &self,
        path: &RelPath,
        text: &str,
        precondition: &Precondition,
        via: Via,
    ) -> Result<WriteReport, WorkspaceError> {
        let Some(access) = self.access().filter(|_| via == Via::Access) else {
            return self.workspace.write_atomic(path, text.as_bytes(), precondition);
        };
        let before = match precondition {
            Precondition::Absent => {
                if let Some(kind) = self.workspace.kind(path)? {
                    return Err(match kind {
                        rustix::fs::FileType::RegularFile => {
                            WorkspaceError::Exists { path: path.to_string() }
                        }
                        rustix::fs::FileType::Symlink => {
                            WorkspaceError::Symlink { path: path.to_string(), at: path.to_string() }
                        }
                        rustix::fs::FileType::Directory => {
                            WorkspaceError::NotAFile { path: path.to_string(), kind: "directory" }
                        }
                        _ => WorkspaceError::NotAFile { path: path.to_string(), kind: "special file" },
                    });
                }
                // Made through the root handle, so no symlink leads the
                // editor's new file out of the workspace.
                if let Some((parent, _)) = path.split_last() {
                    self.workspace.open_dir(&RelPath::parse(&parent.join("/"))?, true)?;
                }
                None
            }
            Precondition::Unchanged(expected) => {
                let now = self.load(path, self.check_via(via))?;
                if now.identity.hash != expected.hash {
                    return Err(WorkspaceError::Changed { path: path.to_string() });
                }
                Some(now.identity)
            }
        };
        let absolute = self.workspace.root_path().join(path.as_string());
        access.write_text(&absolute, text).map_err(|reason| WorkspaceError::Access {
            path: path.to_string(),
            op: "write",
            reason,
        })?;
        let (device, inode) = before.map(|b| (b.device, b.inode)).unwrap_or_default();
        Ok(WriteReport {
            created: matches!(precondition, Precondition::Absent),
            identity: FileIdentity { device, inode, hash: hash(text.as_bytes()) },
        })
    }
}
