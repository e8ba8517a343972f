//! Atomic changes (invariant 17): a new version is written to a temporary
//! sibling, synced, renamed over the target, and the directory is synced.
//! Replacing or deleting a file first checks it is still the file that was
//! read (same inode, same content), right up to the swap.
//!
//! The check and the rename are separate system calls. The tools close that
//! window against each other by holding the path's lock (`lock.rs`) from
//! their read through the swap; a process outside bosun that writes between
//! the last check and the rename is not held off (only an OS lock every
//! writer honours could), but any change before the last check is refused.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{FileIdentity, RelPath, Workspace, WorkspaceError, check_regular, hash, stat_nofollow};

/// What must be true of the target before it changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Nothing may be there (creating).
    Absent,
    /// The file that was read must still be there, unchanged.
    Unchanged(FileIdentity),
}

/// What a write did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteReport {
    /// Whether the file was created (else replaced).
    pub created: bool,
    /// The new file's identity.
    pub identity: FileIdentity,
}

const TEMP_FLAGS: OFlags =
    OFlags::WRONLY.union(OFlags::CREATE).union(OFlags::EXCL).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

impl Workspace {
    /// Writes `bytes` to `path` atomically, creating missing parent
    /// directories, if `precondition` holds.
    pub fn write_atomic(
        &self,
        path: &RelPath,
        bytes: &[u8],
        precondition: &Precondition,
    ) -> Result<WriteReport, WorkspaceError> {
        self.write_with_mode(path, bytes, precondition, None)
    }

    /// Creates `path` (which must not exist) with the given permission bits,
    /// as a moved or restored file keeps its mode.
    pub fn create_with_mode(
        &self,
        path: &RelPath,
        bytes: &[u8],
        mode: u32,
    ) -> Result<WriteReport, WorkspaceError> {
        self.write_with_mode(path, bytes, &Precondition::Absent, Some(mode))
    }

    fn write_with_mode(
        &self,
        path: &RelPath,
        bytes: &[u8],
        precondition: &Precondition,
        new_mode: Option<u32>,
    ) -> Result<WriteReport, WorkspaceError> {
        let (parent, name) = self.parent(path, matches!(precondition, Precondition::Absent))?;
        let mode = self.check(&parent, name, path, precondition)?;
        let mode = match precondition {
            Precondition::Absent => new_mode.unwrap_or(mode) & 0o7777,
            Precondition::Unchanged(_) => mode,
        };
        let temp =
            format!(".{}.bosun-{}.tmp", name.chars().take(100).collect::<String>(), uuid::Uuid::now_v7());
        let fd = rustix::fs::openat(&parent, temp.as_str(), TEMP_FLAGS, Mode::from_raw_mode(mode))
            .map_err(|e| WorkspaceError::io(path, "create a temporary file", e))?;
        let written = write_and_sync(fd, bytes, mode, path).and_then(|stat| {
            // Re-check just before the swap: the target may have changed
            // while the new version was written.
            if let Precondition::Unchanged(expected) = precondition {
                let now = stat_nofollow(&parent, name, path)?;
                if now.st_dev != expected.device || now.st_ino != expected.inode {
                    return Err(WorkspaceError::Changed { path: path.to_string() });
                }
            }
            swap_in(&parent, &temp, name, path, precondition)?;
            Ok(stat)
        });
        let stat = match written {
            Ok(stat) => stat,
            Err(error) => {
                let _ = rustix::fs::unlinkat(&parent, temp.as_str(), AtFlags::empty());
                return Err(error);
            }
        };
        rustix::fs::fsync(&parent).map_err(|e| WorkspaceError::io(path, "sync the directory", e))?;
        Ok(WriteReport {
            created: matches!(precondition, Precondition::Absent),
            identity: FileIdentity { device: stat.st_dev, inode: stat.st_ino, hash: hash(bytes) },
        })
    }

    /// Deletes the file at `path` if it is still the one that was read.
    pub fn delete(&self, path: &RelPath, expected: &FileIdentity) -> Result<(), WorkspaceError> {
        let (parent, name) = self.parent(path, false)?;
        self.check(&parent, name, path, &Precondition::Unchanged(expected.clone()))?;
        rustix::fs::unlinkat(&parent, name, AtFlags::empty())
            .map_err(|e| WorkspaceError::io(path, "delete", e))?;
        rustix::fs::fsync(&parent).map_err(|e| WorkspaceError::io(path, "sync the directory", e))
    }

    /// Checks the precondition; returns the permission bits for the new file.
    fn check(
        &self,
        parent: &OwnedFd,
        name: &str,
        path: &RelPath,
        precondition: &Precondition,
    ) -> Result<u32, WorkspaceError> {
        let current = match stat_nofollow(parent, name, path) {
            Ok(stat) => Some(stat),
            Err(WorkspaceError::NotFound { .. }) => None,
            Err(other) => return Err(other),
        };
        match (precondition, current) {
            (Precondition::Absent, None) => Ok(0o644),
            (Precondition::Absent, Some(stat)) => {
                check_regular(path, stat)?;
                Err(WorkspaceError::Exists { path: path.to_string() })
            }
            (Precondition::Unchanged(_), None) => Err(WorkspaceError::Changed { path: path.to_string() }),
            (Precondition::Unchanged(expected), Some(stat)) => {
                check_regular(path, stat)?;
                let now = self.read(path, super::MAX_COMPARE_BYTES)?;
                if now.identity != *expected {
                    return Err(WorkspaceError::Changed { path: path.to_string() });
                }
                Ok(stat.st_mode & 0o7777)
            }
        }
    }
}

fn write_and_sync(
    fd: OwnedFd,
    bytes: &[u8],
    mode: u32,
    path: &RelPath,
) -> Result<rustix::fs::Stat, WorkspaceError> {
    let stat = rustix::fs::fstat(&fd).map_err(|e| WorkspaceError::io(path, "stat", e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(WorkspaceError::NotAFile { path: path.to_string(), kind: "special file" });
    }
    // The umask trimmed the bits at creation; a replaced or moved file keeps
    // exactly the bits it had.
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).map_err(|e| WorkspaceError::io(path, "chmod", e))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes).map_err(|source| WorkspaceError::Io {
        path: path.to_string(),
        op: "write",
        source,
    })?;
    file.sync_all().map_err(|source| WorkspaceError::Io { path: path.to_string(), op: "sync", source })?;
    Ok(stat)
}

/// Renames the temporary file over the target; when creating, never
/// replaces a file that appeared in the meantime.
fn swap_in(
    parent: &impl AsFd,
    temp: &str,
    name: &str,
    path: &RelPath,
    precondition: &Precondition,
) -> Result<(), WorkspaceError> {
    let renamed = match precondition {
        Precondition::Absent => {
            match rustix::fs::renameat_with(parent, temp, parent, name, RenameFlags::NOREPLACE) {
                // Filesystems without RENAME_NOREPLACE: a hard link also refuses
                // to replace, and the temporary name is removed by the caller.
                Err(Errno::INVAL | Errno::NOSYS) => {
                    rustix::fs::linkat(parent, temp, parent, name, AtFlags::empty())
                        .and_then(|()| rustix::fs::unlinkat(parent, temp, AtFlags::empty()))
                }
                other => other,
            }
        }
        Precondition::Unchanged(_) => rustix::fs::renameat(parent, temp, parent, name),
    };
    renamed.map_err(|e| match e {
        Errno::EXIST => WorkspaceError::Exists { path: path.to_string() },
        e => WorkspaceError::io(path, "rename into place", e),
    })
}
