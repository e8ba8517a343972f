//! Project instructions: AGENTS.md files from the project root (the nearest
//! directory holding `.git`) down to the workspace root, nearest last,
//! with CLAUDE.md as the fallback name in each directory; capped in total.
//!
//! Each file is read as a file tool reads one (invariants 16 and 20): through
//! a directory handle, with no symlink followed (a symlinked AGENTS.md is
//! skipped with a warning, so a link to a file outside cannot put that file
//! in the system prompt), only if it is a regular file (a FIFO or device is
//! refused before it is opened for reading, so nothing blocks), and never
//! more bytes than the cap has left (a huge file costs at most the cap).
//!
//! Which directories: the workspace root's own files go through the
//! workspace's handle, which reaches only files at or below the root. When
//! the workspace is a subdirectory of a repository, the directories between
//! the git root and the workspace are above what that handle reaches; their
//! instructions are still read (a repository's top-level AGENTS.md applies to
//! work in its subdirectories), each through a handle on that directory with
//! the same rules: no symlinked file, regular files only, bounded. Their
//! paths are ancestors of the workspace's canonical path, so no symlink leads
//! there either. Nothing above the git root is read.

use std::io::Read;
use std::path::{Path, PathBuf};

use bosun_tools::workspace::RelPath;
use bosun_tools::{Workspace, WorkspaceError};

/// Most bytes of instructions added to the system prompt.
pub const MAX_BYTES: usize = 32 * 1024;

/// The names looked for in each directory, first found wins.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Instructions found, and a warning when some were cut or skipped.
#[derive(Debug, Default)]
pub struct Instructions {
    /// The files used, root first.
    pub files: Vec<PathBuf>,
    /// The text, with a heading per file.
    pub text: String,
    /// Set when the total exceeded [`MAX_BYTES`] or a file was not read
    /// (a symlink, not a regular file, unreadable); reasons joined by `; `.
    pub warning: Option<String>,
}

impl Instructions {
    fn warn(&mut self, message: String) {
        match &mut self.warning {
            Some(warning) => {
                warning.push_str("; ");
                warning.push_str(&message);
            }
            None => self.warning = Some(message),
        }
    }
}

/// Collects the instructions for work in `workspace`.
pub fn collect(workspace: &Workspace) -> Instructions {
    let dir = workspace.root_path();
    // `symlink_metadata`: a `.git` that is a symlink still marks the root, but is not followed.
    let root = dir.ancestors().find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok()).unwrap_or(dir);
    let mut chain: Vec<&Path> = dir.ancestors().take_while(|a| a.starts_with(root)).collect();
    chain.reverse();
    let mut found = Instructions::default();
    for directory in chain {
        let shown = |name: &str| {
            let file = directory.join(name);
            file.strip_prefix(root).unwrap_or(&file).display().to_string()
        };
        let above;
        let handle = if directory == dir {
            workspace
        } else {
            match Workspace::open(directory) {
                Ok(opened) => {
                    above = opened;
                    &above
                }
                Err(error) => {
                    found.warn(format!("{} not read: {error}", shown(NAMES[0])));
                    continue;
                }
            }
        };
        if !read_directory(handle, directory, &shown, &mut found) {
            break;
        }
    }
    found
}

/// Adds the first instruction file of `directory` (opened as `handle`) to
/// `found`. False once the cap is reached: nothing more is read.
fn read_directory(
    handle: &Workspace,
    directory: &Path,
    shown: &dyn Fn(&str) -> String,
    found: &mut Instructions,
) -> bool {
    for name in NAMES {
        let Ok(path) = RelPath::parse(name) else { continue };
        let (file, stat) = match handle.open_file(&path) {
            Ok(opened) => opened,
            Err(WorkspaceError::NotFound { .. }) => continue,
            Err(WorkspaceError::Symlink { .. }) => {
                found.warn(format!("{} is a symlink and symlinks are not followed; not read", shown(name)));
                continue;
            }
            Err(error) => {
                found.warn(format!("{} not read: {error}", shown(name)));
                continue;
            }
        };
        let heading = format!("\n## {}\n\n", shown(name));
        // Room for the heading, the text and its closing newline.
        let budget = MAX_BYTES.saturating_sub(found.text.len() + heading.len() + 1);
        let (bytes, longer) = match read_capped(file, budget) {
            Ok(read) => read,
            Err(error) => {
                found.warn(format!("{} not read: {error}", shown(name)));
                return true;
            }
        };
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text,
            // Cut in the middle of a character: keep the whole ones.
            Err(error) if longer && error.error_len().is_none() => {
                std::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or_default()
            }
            Err(_) => {
                found.warn(format!("{} is not UTF-8 text; not read", shown(name)));
                return true;
            }
        };
        found.text.push_str(&heading);
        found.text.push_str(text.trim_end());
        found.text.push('\n');
        found.files.push(directory.join(name));
        if longer {
            found.text.push_str("\n[… project instructions cut at 32 KiB]\n");
            found.warn(format!(
                "project instructions are over 32 KiB ({} is {} bytes); only the first 32 KiB were used",
                shown(name),
                stat.st_size
            ));
            return false;
        }
        return true;
    }
    true
}

/// At most `limit` bytes of `file`, and whether it held more: reads
/// `limit + 1` bytes at most, whatever its size says or becomes.
fn read_capped(file: impl Read, limit: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    let longer = bytes.len() > limit;
    bytes.truncate(limit);
    Ok((bytes, longer))
}

/// The person's own instructions, for work in any project: `AGENTS.md`
/// beside the user's config file, else Claude Code's `~/.claude/CLAUDE.md`
/// (the first found). Their own file, so a symlink to it is followed (dot
/// files often are); still only a regular file, and at most [`MAX_BYTES`].
pub fn personal(env: &crate::config::Env) -> Instructions {
    let bosun = crate::config::user_file(env).and_then(|file| file.parent().map(|dir| dir.join("AGENTS.md")));
    let claude = env.get("HOME").map(|home| PathBuf::from(home).join(".claude/CLAUDE.md"));
    let mut found = Instructions::default();
    for path in bosun.into_iter().chain(claude) {
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if !meta.is_file() {
            found.warn(format!("{}: not a regular file; not read", path.display()));
            continue;
        }
        let read = std::fs::File::open(&path).and_then(|file| {
            let mut bytes = Vec::new();
            file.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes).map(|_| bytes)
        });
        match read {
            Ok(mut bytes) => {
                if bytes.len() > MAX_BYTES {
                    bytes.truncate(MAX_BYTES);
                    found.warn(format!("{} was cut to {} KiB", path.display(), MAX_BYTES / 1024));
                }
                found.text = String::from_utf8_lossy(&bytes).into_owned();
                found.files.push(path);
                break;
            }
            Err(error) => found.warn(format!("{}: {error}; not read", path.display())),
        }
    }
    found
}

/// The marked section of the person's own instructions.
pub fn personal_section(instructions: &Instructions) -> Option<String> {
    if instructions.text.trim().is_empty() {
        return None;
    }
    Some(format!(
        "\n\n<personal_instructions>\nThe person's own instructions, for every project (the project's, below, \
         win where they are more specific):\n{}\n</personal_instructions>",
        instructions.text.trim_end()
    ))
}

/// The marked section appended to the system prompt.
pub fn section(instructions: &Instructions) -> Option<String> {
    if instructions.text.trim().is_empty() {
        return None;
    }
    Some(format!(
        "\n\n<project_instructions>\nInstructions from the project's AGENTS.md files (nearest last; the nearer \
         ones win where they disagree):\n{}\n</project_instructions>",
        instructions.text
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_instructions_are_bosuns_file_else_claude_codes() {
        let home = tempfile::tempdir().unwrap();
        let env = crate::config::Env::from_pairs(&[("HOME", home.path().to_str().unwrap())]);
        assert!(personal_section(&personal(&env)).is_none(), "none yet");
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/CLAUDE.md"), "Use British spelling.\n").unwrap();
        let section = personal_section(&personal(&env)).unwrap();
        assert!(section.contains("<personal_instructions>") && section.contains("Use British spelling."));
        std::fs::create_dir_all(home.path().join(".config/bosun")).unwrap();
        std::fs::write(home.path().join(".config/bosun/AGENTS.md"), "Prefer small commits.\n").unwrap();
        let found = personal(&env);
        assert!(found.text.contains("Prefer small commits.") && !found.text.contains("British"));
        std::fs::write(home.path().join(".config/bosun/AGENTS.md"), "x".repeat(MAX_BYTES + 10)).unwrap();
        let big = personal(&env);
        assert_eq!(big.text.len(), MAX_BYTES);
        assert!(big.warning.is_some());
    }

    fn collect_in(dir: &Path) -> Instructions {
        collect(&Workspace::open(dir).unwrap())
    }

    #[test]
    fn nearest_last_with_claude_md_fallback_and_a_cap() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.path().join("a/CLAUDE.md"), "a rules").unwrap();
        std::fs::write(root.path().join("a/b/AGENTS.md"), "b rules").unwrap();
        std::fs::write(root.path().join("a/b/CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
        let found = collect_in(&root.path().join("a/b"));
        assert_eq!(found.files.len(), 3);
        let (r, a, b) =
            (found.text.find("root rules"), found.text.find("a rules"), found.text.find("b rules"));
        assert!(r < a && a < b, "{}", found.text);
        assert!(!found.text.contains("ignored"));
        std::fs::write(root.path().join("AGENTS.md"), "x".repeat(40_000)).unwrap();
        let big = collect_in(root.path());
        assert!(big.warning.is_some() && big.text.len() < MAX_BYTES + 100);
    }

    #[test]
    fn a_symlinked_agents_md_is_not_followed_and_a_warning_says_why() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "OUTSIDE SECRET").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let target = outside.path().join("secret.txt");
        std::os::unix::fs::symlink(&target, root.path().join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("sub/AGENTS.md")).unwrap();
        std::fs::write(root.path().join("sub/CLAUDE.md"), "sub rules").unwrap();
        for dir in [root.path().to_path_buf(), root.path().join("sub")] {
            let found = collect_in(&dir);
            assert!(!found.text.contains("OUTSIDE SECRET"), "{}", found.text);
            let warning = found.warning.unwrap_or_default();
            assert!(warning.contains("AGENTS.md") && warning.contains("symlink"), "{warning}");
        }
        // The fallback name in the same directory is still read.
        assert!(collect_in(&root.path().join("sub")).text.contains("sub rules"));
    }

    #[test]
    fn a_fifo_named_agents_md_does_not_block() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, root.path().join("AGENTS.md"), rustix::fs::Mode::from(0o644))
            .unwrap();
        let dir = root.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(collect_in(&dir));
        });
        let found = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("collect returns");
        assert!(found.files.is_empty() && found.text.is_empty());
        let warning = found.warning.unwrap_or_default();
        assert!(warning.contains("FIFO"), "{warning}");
    }

    /// Bytes this thread has read through system calls so far.
    fn thread_rchar() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap().trim().parse().unwrap()
    }

    #[test]
    fn a_huge_agents_md_is_read_only_up_to_the_cap() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        let file = std::fs::File::create(root.path().join("AGENTS.md")).unwrap();
        file.set_len(64 << 20).unwrap(); // sparse: reads as 64 MiB of NULs
        drop(file);
        let before = thread_rchar();
        let found = collect_in(root.path());
        let read = thread_rchar() - before;
        // The cap, plus the few small reads of looking around (and of /proc).
        assert!(read < 2 * MAX_BYTES as u64, "read {read} bytes of a 64 MiB file");
        assert!(found.text.len() <= MAX_BYTES + 100);
        assert!(found.warning.unwrap_or_default().contains("32 KiB"));
    }
}
