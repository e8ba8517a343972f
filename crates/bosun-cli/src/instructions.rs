//! Project instructions: AGENTS.md files from the project root (the nearest
//! directory holding `.git`) down to the working directory, nearest last,
//! with CLAUDE.md as the fallback name in each directory; capped in total.

use std::path::{Path, PathBuf};

/// Most bytes of instructions added to the system prompt.
pub const MAX_BYTES: usize = 32 * 1024;

/// Instructions found, and a warning when they were cut.
#[derive(Debug, Default)]
pub struct Instructions {
    /// The files used, root first.
    pub files: Vec<PathBuf>,
    /// The text, with a heading per file.
    pub text: String,
    /// Set when the total exceeded [`MAX_BYTES`].
    pub warning: Option<String>,
}

/// Collects the instructions for work in `dir`.
pub fn collect(dir: &Path) -> Instructions {
    let root = dir.ancestors().find(|a| a.join(".git").exists()).unwrap_or(dir);
    let mut chain: Vec<&Path> = dir.ancestors().take_while(|a| a.starts_with(root)).collect();
    chain.reverse();
    let mut found = Instructions::default();
    for directory in chain {
        let file = ["AGENTS.md", "CLAUDE.md"].iter().map(|n| directory.join(n)).find(|p| p.is_file());
        let Some(file) = file else { continue };
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        found.text.push_str(&format!("\n## {shown}\n\n{}\n", text.trim_end()));
        found.files.push(file);
    }
    if found.text.len() > MAX_BYTES {
        let total = found.text.len();
        let mut end = MAX_BYTES;
        while !found.text.is_char_boundary(end) {
            end -= 1;
        }
        found.text.truncate(end);
        found.text.push_str("\n[… project instructions cut at 32 KiB]\n");
        found.warning =
            Some(format!("project instructions are {total} bytes; only the first 32 KiB were used"));
    }
    found
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
    fn nearest_last_with_claude_md_fallback_and_a_cap() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.path().join("a/CLAUDE.md"), "a rules").unwrap();
        std::fs::write(root.path().join("a/b/AGENTS.md"), "b rules").unwrap();
        std::fs::write(root.path().join("a/b/CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
        let found = collect(&root.path().join("a/b"));
        assert_eq!(found.files.len(), 3);
        let (r, a, b) =
            (found.text.find("root rules"), found.text.find("a rules"), found.text.find("b rules"));
        assert!(r < a && a < b, "{}", found.text);
        assert!(!found.text.contains("ignored"));
        std::fs::write(root.path().join("AGENTS.md"), "x".repeat(40_000)).unwrap();
        let big = collect(root.path());
        assert!(big.warning.is_some() && big.text.len() < MAX_BYTES + 100);
    }
}
