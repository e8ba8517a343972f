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

/// Every test ARCHITECTURE.md's invariant table names exists: a backticked
/// `snake_case` name is a test function somewhere in the workspace (`name_*`
/// a prefix of at least one, and of exactly N when the table says "(N
/// tests"), and a backticked `crates/…` path is a file. So the table cannot
/// claim a test that was renamed or deleted.
#[test]
fn the_invariant_table_names_only_tests_that_exist() {
    let architecture = fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let table: Vec<&str> = architecture
        .lines()
        .skip_while(|line| !line.starts_with("## Invariants and the tests that hold them"))
        .take_while(|line| !line.starts_with("## Stable forms"))
        .filter(|line| line.starts_with("| ") && !line.starts_with("| #"))
        .collect();
    assert!(table.len() >= 21, "the invariant table has {} rows", table.len());
    let mut files = Vec::new();
    for entry in fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        rust_files(&entry.path(), &mut files);
    }
    let functions: Vec<String> = files
        .iter()
        .filter_map(|f| fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.split("fn ")
                .skip(1)
                .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
                .collect::<Vec<String>>()
        })
        .collect();
    let mut wrong = Vec::new();
    for row in table {
        let cells: Vec<&str> = row.split('|').collect();
        let tests = cells.get(3).copied().unwrap_or_default();
        for name in tests.split('`').skip(1).step_by(2) {
            if name.starts_with("crates/") {
                if !workspace().join(name).exists() {
                    wrong.push(format!("no file {name}"));
                }
                continue;
            }
            let is_name =
                name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '*')
                    && name.matches('_').count() >= 2;
            if !is_name {
                continue;
            }
            match name.strip_suffix('*') {
                Some(prefix) => {
                    let found = functions.iter().filter(|f| f.starts_with(prefix)).count();
                    let after = tests.split(&format!("`{name}`")).nth(1).unwrap_or_default().trim_start();
                    let claimed = after
                        .strip_prefix('(')
                        .and_then(|rest| rest.split_once(" test"))
                        .and_then(|(n, _)| n.parse::<usize>().ok());
                    match claimed {
                        Some(n) if n != found => {
                            wrong.push(format!("`{name}`: the table says {n}, there are {found}"))
                        }
                        None if found == 0 => wrong.push(format!("`{name}`: no such test")),
                        _ => {}
                    }
                }
                None if !functions.iter().any(|f| f == name) => wrong.push(format!("`{name}`: no such test")),
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md's invariant table is wrong:\n{}", wrong.join("\n"));
}

/// The `type`s of a Markdown table's rows (`| \`type\` | … |`), headers left out.
fn table_types(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.trim_start_matches("//! "))
        .filter_map(|line| line.strip_prefix("| `")?.split_once('`').map(|(name, _)| name.to_owned()))
        .filter(|name| name != "type")
        .collect()
}

#[test]
fn docs_events_lists_every_event_type() {
    let code = table_types(&fs::read_to_string(workspace().join("crates/bosun-core/src/event.rs")).unwrap());
    let docs = table_types(&fs::read_to_string(workspace().join("docs/events.md")).unwrap());
    assert!(code.len() > 20, "the code's table: {code:?}");
    // The run's own lines (bosun-agent's json_events) and a served session's
    // (bosun-serve's hosted.rs), then the core's events.
    let mut expected = vec!["init".to_owned(), "result".to_owned(), "user_message".to_owned()];
    expected.extend(code);
    assert_eq!(docs, expected, "docs/events.md and the event table in bosun-core's event.rs disagree");
}
