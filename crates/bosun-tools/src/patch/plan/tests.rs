//! Tests of hunk matching and application, and of all-or-nothing planning.

use std::collections::HashMap;

use super::*;
use crate::patch::parse;

/// Parse `hunks` as the body of an update of `f.rs` and apply it.
fn apply(original: &str, hunks: &str) -> Result<String, PatchError> {
    let patch = parse(&format!("*** Begin Patch\n*** Update File: f.rs\n{hunks}*** End Patch\n"))?;
    let Some(Operation::Update { hunks, .. }) = patch.operations.first() else { panic!("{patch:?}") };
    apply_hunks("f.rs", original, hunks)
}

/// Plan `body` against an in-memory set of files.
fn plan_with(files: &[(&str, &str)], body: &str) -> Result<Vec<FileChange>, PatchError> {
    let files: HashMap<String, String> =
        files.iter().map(|(path, content)| (path.to_string(), content.to_string())).collect();
    let patch = parse(&format!("*** Begin Patch\n{body}*** End Patch\n"))?;
    plan(&patch, &mut |path| Ok(files.get(path).cloned()))
}

#[test]
fn exact_match_replaces_removed_lines_and_keeps_context() {
    let out = apply("a\nb\nc\n", "@@\n a\n-b\n+B\n c\n").unwrap();
    assert_eq!(out, "a\nB\nc\n");
}

#[test]
fn matches_when_only_trailing_whitespace_differs() {
    let out = apply("a  \nb\t\nc\n", "@@\n a\n-b\n+B\n").unwrap();
    assert_eq!(out, "a  \nB\nc\n", "the context line keeps the file's trailing spaces");
}

#[test]
fn matches_when_indentation_differs_and_keeps_the_files_context_text() {
    let out = apply("fn f() {\n    let x = 1;\n    x\n}\n", "@@\n let x = 1;\n-x\n+    x + 1\n").unwrap();
    assert_eq!(out, "fn f() {\n    let x = 1;\n    x + 1\n}\n");
}

#[test]
fn exact_match_later_in_the_file_beats_an_earlier_fuzzy_match() {
    let out = apply("  x\ny\nx\ny\n", "@@\n-x\n y\n+z\n").unwrap();
    assert_eq!(out, "  x\ny\ny\nz\n");
}

#[test]
fn ambiguous_hunk_applies_to_the_first_occurrence_at_or_after_the_position() {
    let out = apply("x\nx\nx\n", "@@\n-x\n+y\n").unwrap();
    assert_eq!(out, "y\nx\nx\n");
}

#[test]
fn header_narrows_the_search_to_after_its_line() {
    let original = "fn a() {\n    ret\n}\nfn b() {\n    ret\n}\n";
    let out = apply(original, "@@ fn b() {\n-    ret\n+    done\n").unwrap();
    assert_eq!(out, "fn a() {\n    ret\n}\nfn b() {\n    done\n}\n");
    // The header is matched at the same three levels (here: ignoring indentation).
    let out = apply("impl S {\n    fn b() {\n        1\n", "@@ fn b() {\n-1\n+        2\n").unwrap();
    assert_eq!(out, "impl S {\n    fn b() {\n        2\n");
}

#[test]
fn header_line_may_also_be_the_first_context_line() {
    let out = apply("fn a() {\n    1\n}\n", "@@ fn a() {\n fn a() {\n-    1\n+    2\n").unwrap();
    assert_eq!(out, "fn a() {\n    2\n}\n");
}

#[test]
fn missing_header_is_an_error_naming_file_hunk_and_header() {
    let error = apply("a\nb\n", "@@\n-a\n+A\n@@ fn nowhere()\n-b\n+B\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "`f.rs`: hunk 2 (patch line 6): header line `fn nowhere()` not found at or after line 2 of the file"
    );
}

#[test]
fn end_of_file_hunk_matches_the_last_occurrence() {
    let out = apply("x\ny\nx\n", "@@\n-x\n+z\n*** End of File\n").unwrap();
    assert_eq!(out, "x\ny\nz\n");
}

#[test]
fn end_of_file_hunk_does_not_match_away_from_the_end() {
    let error = apply("x\ny\n", "@@\n-x\n+z\n*** End of File\n").unwrap_err();
    assert!(matches!(error, PatchError::HunkNotFound { at_end_of_file: true, hunk: 1, .. }), "{error:?}");
    assert!(error.to_string().contains("does not match the file at its end, after line 1"), "{error}");
}

#[test]
fn multiple_hunks_apply_in_order() {
    let out = apply("a\nb\nc\nd\ne\n", "@@\n-a\n+A\n@@\n c\n-d\n+D\n@@\n-e\n+E\n").unwrap();
    assert_eq!(out, "A\nb\nc\nD\nE\n");
}

#[test]
fn a_hunk_is_only_searched_for_after_the_previous_one() {
    let error = apply("a\nb\n", "@@\n-b\n+B\n@@\n-a\n+A\n").unwrap_err();
    assert!(matches!(error, PatchError::HunkNotFound { hunk: 2, from_line: 3, .. }), "{error:?}");
}

#[test]
fn insertion_only_hunks_insert_at_start_after_header_and_at_end() {
    assert_eq!(apply("a\nb\n", "@@\n+top\n").unwrap(), "top\na\nb\n");
    assert_eq!(apply("a\nb\nc\n", "@@ b\n+after b\n").unwrap(), "a\nb\nafter b\nc\n");
    assert_eq!(apply("a\nb\n", "@@\n+last\n*** End of File\n").unwrap(), "a\nb\nlast\n");
    assert_eq!(apply("", "@@\n+only\n").unwrap(), "only\n");
}

#[test]
fn crlf_files_stay_crlf_including_added_lines() {
    let out = apply("a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n").unwrap();
    assert_eq!(out, "a\r\nB\r\nB2\r\nc\r\n");
}

#[test]
fn missing_final_newline_is_preserved() {
    assert_eq!(apply("a\nb", "@@\n a\n-b\n+c\n").unwrap(), "a\nc");
    assert_eq!(apply("a\nb", "@@\n b\n+c\n*** End of File\n").unwrap(), "a\nb\nc");
    assert_eq!(apply("a\nb", "@@\n-b\n").unwrap(), "a");
    assert_eq!(apply("a\r\nb", "@@\n-a\n+A\n").unwrap(), "A\r\nb");
}

#[test]
fn absent_match_error_names_file_hunk_and_first_expected_lines() {
    let error = apply("a\nb\n", "@@\n one\n two\n-three\n four\n five\n six\n+x\n").unwrap_err();
    let expected = "`f.rs`: hunk 1 (patch line 3) does not match the file at or after line 1; it looked for:\n     \
                    one\n     two\n    -three\n     four\n     five\n    … and 1 more";
    assert_eq!(error.to_string(), expected);
}

#[test]
fn trailing_empty_context_lines_are_dropped_when_they_do_not_match() {
    let out = apply("a\nb\n", "@@\n-b\n+B\n\n\n").unwrap();
    assert_eq!(out, "a\nB\n");
    // When they do match, they count.
    assert_eq!(apply("x\ny\nx\n\n", "@@\n-x\n+z\n\n").unwrap(), "x\ny\nz\n\n");
}

#[test]
fn plan_returns_every_change_in_patch_order() {
    let files = [("old.txt", "bye\n"), ("src.rs", "fn main() {\n    1\n}\n"), ("m.rs", "m\n")];
    let changes = plan_with(
        &files,
        "*** Add File: new.txt\n+hi\n*** Delete File: old.txt\n*** Update File: src.rs\n@@ fn main() {\n-    1\n\
         +    2\n*** Update File: m.rs\n*** Move to: n.rs\n",
    )
    .unwrap();
    assert_eq!(
        changes,
        [
            FileChange::Write { path: "new.txt".into(), content: "hi\n".into(), create: true },
            FileChange::Delete { path: "old.txt".into() },
            FileChange::Write {
                path: "src.rs".into(),
                content: "fn main() {\n    2\n}\n".into(),
                create: false
            },
            FileChange::Move { from: "m.rs".into(), to: "n.rs".into(), content: "m\n".into() },
        ]
    );
}

#[test]
fn plan_fails_as_a_whole_when_the_second_file_does_not_apply() {
    let files = [("a", "1\n"), ("b", "2\n")];
    let error =
        plan_with(&files, "*** Update File: a\n-1\n+one\n*** Update File: b\n-3\n+three\n").unwrap_err();
    assert!(matches!(&error, PatchError::HunkNotFound { path, hunk: 1, .. } if path == "b"), "{error:?}");
}

#[test]
fn plan_refuses_to_add_an_existing_file() {
    let error = plan_with(&[("a", "x\n")], "*** Add File: a\n+y\n").unwrap_err();
    assert_eq!(error, PatchError::AddExisting { path: "a".into() });
}

#[test]
fn plan_refuses_to_delete_or_update_a_missing_file() {
    let error = plan_with(&[], "*** Delete File: gone\n").unwrap_err();
    assert_eq!(error.to_string(), "cannot delete `gone`: no such file");
    let error = plan_with(&[], "*** Update File: gone\n-x\n+y\n").unwrap_err();
    assert_eq!(error, PatchError::Missing { path: "gone".into(), operation: "update" });
}

#[test]
fn plan_refuses_to_move_onto_an_existing_file() {
    let error = plan_with(&[("a", "x\n"), ("b", "y\n")], "*** Update File: a\n*** Move to: b\n-x\n+z\n");
    assert_eq!(error.unwrap_err().to_string(), "cannot move `a` to `b`: `b` already exists");
}

#[test]
fn plan_refuses_a_path_named_twice_in_a_hand_built_patch() {
    let patch = Patch {
        operations: vec![
            Operation::Delete { path: "a".into() },
            Operation::Update { path: "b".into(), move_to: Some("./a".into()), hunks: vec![] },
        ],
    };
    let mut calls = 0;
    let error = plan(&patch, &mut |_| {
        calls += 1;
        Ok(Some(String::new()))
    })
    .unwrap_err();
    assert_eq!(error, PatchError::DuplicatePath { path: "./a".into(), line: None });
    assert_eq!(error.to_string(), "file `./a` appears twice in the patch");
    assert_eq!(calls, 0, "the check comes before any read");
}

#[test]
fn plan_wraps_a_read_refusal_with_the_path() {
    let patch = parse("*** Begin Patch\n*** Delete File: ../etc/passwd\n*** End Patch").unwrap();
    let error = plan(&patch, &mut |_| Err("leaves the workspace".to_owned())).unwrap_err();
    assert_eq!(error.to_string(), "cannot read `../etc/passwd`: leaves the workspace");
}
