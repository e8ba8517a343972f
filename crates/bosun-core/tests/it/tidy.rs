//! Repository rules that code review forgets: every invariant has a test
//! named after it, every source file says what it is, files stay small.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_core_invariant_has_a_test_named_after_it() {
    let mut files = Vec::new();
    rust_files(&workspace().join("crates/bosun-core/tests"), &mut files);
    let text: String = files.iter().filter_map(|f| fs::read_to_string(f).ok()).collect();
    let missing: Vec<u32> = (1..=15).filter(|n| !text.contains(&format!("fn invariant_{n:02}_"))).collect();
    assert!(missing.is_empty(), "invariants without a test: {missing:?}");
}

/// Invariants held outside the core (workspace safety, the shell, the
/// clock, trust) are tested in the crate that holds them.
#[test]
fn every_workspace_invariant_has_a_test_named_after_it_somewhere() {
    let mut files = Vec::new();
    for entry in fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        rust_files(&entry.path().join("tests"), &mut files);
        rust_files(&entry.path().join("src"), &mut files);
    }
    let text: String = files.iter().filter_map(|f| fs::read_to_string(f).ok()).collect();
    let missing: Vec<u32> = (16..=21).filter(|n| !text.contains(&format!("fn invariant_{n:02}_"))).collect();
    assert!(missing.is_empty(), "invariants without a test: {missing:?}");
}

#[test]
fn source_files_open_with_a_doc_comment_and_stay_small() {
    let mut files = Vec::new();
    for entry in fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        rust_files(&entry.path().join("src"), &mut files);
    }
    assert!(!files.is_empty());
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("//!"), "{} must open with a `//!` comment", file.display());
        let lines = text.lines().count();
        assert!(lines <= 800, "{} has {lines} lines; split it by responsibility", file.display());
    }
}
