//! The files a prompt names: words of it that are the paths of regular
//! files in the workspace ("Fix the typo in `run.sh`", "the VERSION file").
//! For reading them before a small model's first round (bosun-core's
//! opening calls), so it changes what it has seen.
//!
//! Checked through the workspace's own handle (no symlink is followed, no
//! path leaves the root); only what exists as a regular file counts, so a
//! word that happens to match nothing costs one `statat`.

use rustix::fs::FileType;

use crate::workspace::{RelPath, Workspace};

/// Longest word taken for a path, in bytes.
const MAX_WORD: usize = 200;
/// Most words of a prompt looked at.
const MAX_WORDS: usize = 400;

/// Up to `max` distinct regular files the text names, in the order named.
pub fn named_files(workspace: &Workspace, text: &str, max: usize) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace().take(MAX_WORDS) {
        if found.len() >= max {
            break;
        }
        let Some(candidate) = path_like(word) else { continue };
        let Ok(path) = RelPath::parse(candidate) else { continue };
        if path.is_root() {
            continue;
        }
        let shown = path.as_string();
        if found.contains(&shown) {
            continue;
        }
        if matches!(workspace.kind(&path), Ok(Some(FileType::RegularFile))) {
            found.push(shown);
        }
    }
    found
}

/// The word without the quotes and punctuation around it, if what is left
/// could be a relative path.
fn path_like(word: &str) -> Option<&str> {
    let trimmed = word
        .trim_start_matches(['`', '\'', '"', '(', '[', '<', '*'])
        .trim_end_matches(['`', '\'', '"', ')', ']', '>', '*', ',', ';', ':', '?', '!', '.']);
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    let plausible = !trimmed.is_empty()
        && trimmed.len() <= MAX_WORD
        && !trimmed.starts_with('/')
        && trimmed.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+' | '@'));
    plausible.then_some(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_name_regular_files_are_found_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("VERSION"), "1.4.2\n").unwrap();
        std::fs::write(dir.path().join("run.sh"), "echo hi\n").unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/guide.md"), "# Guide\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let text = "Fix `./run.sh`, then bump the VERSION file (see docs/guide.md and docs). \
                    Also run.sh again, the passwd link, ../VERSION, /etc/hostname and missing.txt.";
        assert_eq!(named_files(&workspace, text, 5), ["run.sh", "VERSION", "docs/guide.md"]);
        assert_eq!(named_files(&workspace, text, 1), ["run.sh"]);
        assert!(named_files(&workspace, "What is 17 times 23?", 3).is_empty());
    }
}
