//! Invariant 17 under concurrency: edits of one file run in parallel (as the
//! session runs one response's calls) are never lost while reported as done.
//! Each call either lands in the file or fails with an error that says the
//! file changed and shows its current content.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::sync::Arc;

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext};
use bosun_tools::{Workspace, WorkspaceTools};
use serde_json::json;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

const EDITS: usize = 100;
const ROUNDS: usize = 50;

fn marker(i: usize) -> String {
    format!("<marker {i:03}>")
}

fn edited(i: usize) -> String {
    format!("<edited {i:03}>")
}

fn tool(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools.iter().find(|t| t.definition().name == name).unwrap().clone()
}

/// One round: a fresh file of marker lines, `EDITS` concurrent edits through
/// the real tools. Returns how many succeeded.
async fn round() -> usize {
    let dir = tempfile::tempdir().unwrap();
    let original: String = (0..EDITS).map(|i| format!("{}\n", marker(i))).collect();
    fs::write(dir.path().join("f.txt"), &original).unwrap();
    let tools = WorkspaceTools::new(Workspace::open(dir.path()).unwrap()).without_shell().build();
    let edit = tool(&tools, "edit_file");
    let mut calls = JoinSet::new();
    for i in 0..EDITS {
        let edit = edit.clone();
        calls.spawn(async move {
            let arguments = json!({"path": "f.txt", "old_text": marker(i), "new_text": edited(i)});
            let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
            let output = edit.execute(arguments, context).await;
            (i, output.is_error, concat_text(&output.content))
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = calls.join_next().await {
        results.push(joined.unwrap());
    }
    assert_eq!(results.len(), EDITS);
    let now = fs::read_to_string(dir.path().join("f.txt")).unwrap();
    let mut succeeded = 0;
    for (i, is_error, text) in &results {
        if *is_error {
            assert!(
                text.contains("changed since it was read") && text.contains("current content"),
                "edit {i} failed without a clear error: {text}"
            );
            assert!(now.contains(&marker(*i)), "edit {i} failed but its change is in the file");
        } else {
            succeeded += 1;
            assert!(text.starts_with("edited `f.txt`"), "edit {i}: {text}");
            assert!(
                now.contains(&edited(*i)) && !now.contains(&marker(*i)),
                "edit {i} was reported done but is not in the file:\n{now}"
            );
        }
    }
    assert_eq!(now.lines().count(), EDITS, "lines were lost or duplicated:\n{now}");
    let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "temporary siblings were left: {leftovers:?}");
    succeeded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn invariant_17_concurrent_edits_of_one_file_are_never_lost() {
    let mut succeeded = 0;
    for _ in 0..ROUNDS {
        succeeded += round().await;
    }
    // Edits of distinct lines serialised on the path all apply.
    assert_eq!(succeeded, EDITS * ROUNDS, "some edits of distinct lines failed");
}

/// Changes `marker(i)` to `edited(i)` in each file, in the order given.
fn patch(i: usize, files: [&str; 2]) -> String {
    let mut text = String::from("*** Begin Patch\n");
    for file in files {
        text.push_str(&format!("*** Update File: {file}\n@@\n-{}\n+{}\n", marker(i), edited(i)));
    }
    text.push_str("*** End Patch\n");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn invariant_17_concurrent_patches_and_edits_of_two_files_are_never_lost() {
    const LINES: usize = 60;
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let original: String = (0..LINES).map(|i| format!("{}\n", marker(i))).collect();
        for file in ["a.txt", "b.txt"] {
            fs::write(dir.path().join(file), &original).unwrap();
        }
        let tools = WorkspaceTools::new(Workspace::open(dir.path()).unwrap()).without_shell().build();
        let (edit, apply) = (tool(&tools, "edit_file"), tool(&tools, "apply_patch"));
        let mut calls = JoinSet::new();
        for i in 0..LINES {
            // Lines 0..20: patches of both files, in crossing orders; 20..40
            // edits of a.txt; 40..60 edits of b.txt.
            let (tool, arguments) = match i {
                0..20 if i % 2 == 0 => (apply.clone(), json!({"patch": patch(i, ["a.txt", "b.txt"])})),
                0..20 => (apply.clone(), json!({"patch": patch(i, ["b.txt", "a.txt"])})),
                20..40 => {
                    (edit.clone(), json!({"path": "a.txt", "old_text": marker(i), "new_text": edited(i)}))
                }
                _ => (edit.clone(), json!({"path": "b.txt", "old_text": marker(i), "new_text": edited(i)})),
            };
            calls.spawn(async move {
                let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
                let output = tool.execute(arguments, context).await;
                (i, output.is_error, concat_text(&output.content))
            });
        }
        while let Some(joined) = calls.join_next().await {
            let (i, is_error, text) = joined.unwrap();
            assert!(!is_error, "call {i} failed: {text}");
        }
        let (a, b) = (
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        );
        for i in 0..LINES {
            let in_a = i < 40;
            let in_b = !(20..40).contains(&i);
            assert_eq!(a.contains(&edited(i)), in_a, "a.txt, line {i}:\n{a}");
            assert_eq!(b.contains(&edited(i)), in_b, "b.txt, line {i}:\n{b}");
        }
    }
}
