//! Tests of the envelope parser: every header kind, the tolerated wrappers,
//! and every error with the line it names.

use super::*;

fn wrap(body: &str) -> String {
    format!("*** Begin Patch\n{body}*** End Patch\n")
}

fn syntax_line(text: &str) -> (usize, String) {
    match parse(text) {
        Err(PatchError::Syntax { line, message }) => (line, message),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

fn context(text: &str) -> HunkLine {
    HunkLine::Context(text.to_owned())
}

#[test]
fn parses_each_header_kind_with_move_hunk_header_and_end_of_file() {
    let text = wrap(
        "*** Add File: new.txt\n+one\n+two\n*** Delete File: old.txt\n*** Update File: src.rs\n\
         *** Move to: renamed.rs\n@@ fn main() {\n keep\n-old\n+new\n@@\n-another\n+change\n*** End of File\n",
    );
    let patch = parse(&text).unwrap();
    let [add, delete, update] = patch.operations.as_slice() else { panic!("{patch:?}") };
    assert_eq!(add, &Operation::Add { path: "new.txt".into(), content: "one\ntwo\n".into() });
    assert_eq!(delete, &Operation::Delete { path: "old.txt".into() });
    let Operation::Update { path, move_to, hunks } = update else { panic!("{update:?}") };
    assert_eq!((path.as_str(), move_to.as_deref()), ("src.rs", Some("renamed.rs")));
    assert_eq!(hunks[0].header.as_deref(), Some("fn main() {"));
    assert_eq!(
        hunks[0].lines,
        [context("keep"), HunkLine::Remove("old".into()), HunkLine::Add("new".into())]
    );
    assert_eq!((hunks[0].patch_line, hunks[0].at_end_of_file), (8, false));
    assert_eq!((hunks[1].header.as_deref(), hunks[1].patch_line, hunks[1].at_end_of_file), (None, 12, true));
}

#[test]
fn first_hunk_may_omit_its_at_at_line_and_empty_lines_are_empty_context() {
    let patch = parse(&wrap("*** Update File: a\n x\n\n-y\n+z\n")).unwrap();
    let Operation::Update { hunks, .. } = &patch.operations[0] else { panic!() };
    assert_eq!(hunks.len(), 1);
    assert_eq!(hunks[0].patch_line, 3);
    assert_eq!(
        hunks[0].lines,
        [context("x"), context(""), HunkLine::Remove("y".into()), HunkLine::Add("z".into())]
    );
}

#[test]
fn unwraps_heredoc_wrappers_in_each_quoting_style() {
    for opener in ["apply_patch <<'EOF'", "<<\"EOF\"", "apply_patch <<EOF", "cat <<-EOF"] {
        let text = format!("{opener}\n{}EOF\n", wrap("*** Delete File: a\n"));
        let patch = parse(&text).unwrap_or_else(|error| panic!("{opener}: {error}"));
        assert_eq!(patch.operations, [Operation::Delete { path: "a".into() }]);
    }
}

#[test]
fn tolerates_crlf_and_whitespace_around_the_patch() {
    let text = "\r\n  *** Begin Patch\r\n*** Add File: a.txt\r\n+hi\r\n*** End Patch  \r\n\r\n";
    let patch = parse(text).unwrap();
    assert_eq!(patch.operations, [Operation::Add { path: "a.txt".into(), content: "hi\n".into() }]);
}

#[test]
fn add_file_keeps_inner_blank_lines_and_drops_trailing_separators() {
    let patch = parse(&wrap("*** Add File: a\n+one\n\n+three\n\n\n*** Delete File: b\n")).unwrap();
    assert_eq!(patch.operations[0], Operation::Add { path: "a".into(), content: "one\n\nthree\n".into() });
    let empty = parse(&wrap("*** Add File: empty\n")).unwrap();
    assert_eq!(empty.operations[0], Operation::Add { path: "empty".into(), content: String::new() });
}

#[test]
fn unified_diff_range_in_hunk_header_is_dropped() {
    let patch =
        parse(&wrap("*** Update File: a\n@@ -1,3 +1,4 @@ fn f()\n-x\n+y\n@@ -7 +8 @@\n-p\n+q\n")).unwrap();
    let Operation::Update { hunks, .. } = &patch.operations[0] else { panic!() };
    assert_eq!(hunks[0].header.as_deref(), Some("fn f()"));
    assert_eq!(hunks[1].header, None);
}

#[test]
fn update_with_move_and_no_hunks_is_a_rename() {
    let patch = parse(&wrap("*** Update File: a\n*** Move to: b\n")).unwrap();
    let expected = Operation::Update { path: "a".into(), move_to: Some("b".into()), hunks: vec![] };
    assert_eq!(patch.operations, [expected]);
}

#[test]
fn error_for_a_bad_hunk_line_names_its_line() {
    let (line, message) = syntax_line(&wrap("*** Update File: a\n@@\n x\n-y\nfoo\n"));
    assert_eq!(line, 6);
    assert_eq!(message, "expected a hunk line starting with ' ', '-' or '+', found `foo`");
}

#[test]
fn error_line_numbers_count_heredoc_and_leading_blank_lines() {
    let text = format!("\n\napply_patch <<'EOF'\n{}EOF", wrap("*** Update File: a\nbad\n"));
    assert_eq!(syntax_line(&text).0, 6);
}

#[test]
fn error_for_missing_end_patch() {
    let error = parse("*** Begin Patch\n*** Delete File: a\n").unwrap_err();
    assert_eq!(error, PatchError::MissingEndPatch { last_line: 2 });
    assert_eq!(error.to_string(), "missing `*** End Patch` (the patch ends at line 2)");
}

#[test]
fn error_for_missing_begin_patch_and_empty_patch() {
    assert_eq!(syntax_line("*** Delete File: a\n*** End Patch").0, 1);
    let (line, message) = syntax_line("\n\nhello\n");
    assert_eq!((line, message.as_str()), (3, "expected `*** Begin Patch`, found `hello`"));
    assert!(syntax_line("  \n").1.contains("empty"));
}

#[test]
fn error_for_each_header_with_an_empty_path() {
    for (body, header) in [
        ("*** Add File: \n+x\n", ADD_FILE),
        ("*** Delete File:\n", DELETE_FILE),
        ("*** Update File:  \n-x\n", UPDATE_FILE),
        ("*** Update File: a\n*** Move to:\n-x\n", MOVE_TO),
    ] {
        let error = parse(&wrap(body)).unwrap_err();
        let line = if header == MOVE_TO { 3 } else { 2 };
        assert_eq!(error, PatchError::EmptyPath { line, header });
        assert_eq!(error.to_string(), format!("line {line}: `{header}` with an empty path"));
    }
}

#[test]
fn error_for_a_path_named_twice_including_move_targets_and_dot_slash() {
    let error = parse(&wrap("*** Delete File: a.txt\n*** Add File: ./a.txt\n+x\n")).unwrap_err();
    assert_eq!(error.to_string(), "line 3: file `./a.txt` appears twice in the patch");
    let error = parse(&wrap("*** Delete File: b\n*** Update File: a\n*** Move to: b\n")).unwrap_err();
    assert_eq!(error, PatchError::DuplicatePath { path: "b".into(), line: Some(4) });
}

#[test]
fn error_for_update_without_hunks_or_move() {
    let error = parse(&wrap("*** Update File: a\n*** Delete File: b\n")).unwrap_err();
    assert_eq!(error.to_string(), "line 2: `*** Update File: a` has no hunks");
}

#[test]
fn error_for_an_empty_hunk() {
    let (line, message) = syntax_line(&wrap("*** Update File: a\n@@\n-x\n@@ fn f\n\n@@\n+y\n"));
    assert_eq!(line, 5);
    assert!(message.starts_with("empty hunk"), "{message}");
}

#[test]
fn error_for_misplaced_markers() {
    let (line, message) = syntax_line(&wrap("*** Update File: a\n-x\n*** Move to: b\n"));
    assert_eq!((line, message.as_str()), (4, "`*** Move to:` must come directly after `*** Update File:`"));
    let (line, message) = syntax_line(&wrap("*** Update File: a\n@@\n*** End of File\n"));
    assert_eq!(line, 3);
    assert!(message.starts_with("empty hunk"), "{message}");
    assert_eq!(syntax_line(&wrap("*** Delete File: a\n*** End of File\n")).0, 3);
    let (line, message) = syntax_line(&wrap("*** Update File: a\n-x\n*** End of File\n-y\n"));
    assert_eq!(line, 5);
    assert!(message.starts_with("expected `@@`"), "{message}");
    let (line, message) = syntax_line(&wrap("*** Delete File: a\n*** Rename File: b\n"));
    assert_eq!(line, 3);
    assert!(message.starts_with("unknown marker `*** Rename File: b`"), "{message}");
}

#[test]
fn error_for_add_content_without_plus_and_stray_text() {
    let (line, message) = syntax_line(&wrap("*** Add File: a\n+x\ny\n"));
    assert_eq!(
        (line, message.as_str()),
        (4, "expected a content line starting with '+' for `*** Add File: a`, found `y`")
    );
    let (line, message) = syntax_line(&wrap("*** Delete File: a\nsomething\n"));
    assert_eq!(line, 3);
    assert!(message.ends_with("found `something`"), "{message}");
}

#[test]
fn error_for_text_after_end_patch_unclosed_heredoc_and_no_operations() {
    assert_eq!(syntax_line(&format!("{}trailing\n", wrap("*** Delete File: a\n"))).0, 4);
    let (line, message) = syntax_line(&format!("apply_patch <<'EOF'\n{}", wrap("*** Delete File: a\n")));
    assert_eq!((line, message.as_str()), (4, "the heredoc opened at line 1 is not closed by `EOF`"));
    let (line, message) = syntax_line("*** Begin Patch\n\n*** End Patch");
    assert_eq!(
        (line, message.as_str()),
        (3, "no file operations between `*** Begin Patch` and `*** End Patch`")
    );
}
