//! The file tools' behaviour on a real temporary workspace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs;

use bosun_core::{CallId, ContentPart, ToolContext};
use bosun_tools::ToolLimits;
use common::Fixture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn tools_are_built_with_names_categories_and_valid_schemas() {
    let fixture = Fixture::new();
    let names: Vec<_> = fixture.tools.iter().map(|t| t.definition().name.clone()).collect();
    assert_eq!(names, ["read_file", "write_file", "edit_file", "apply_patch", "list_files", "search"]);
    for tool in &fixture.tools {
        bosun_core::schema::CompiledSchema::compile(&tool.definition().parameters)
            .unwrap_or_else(|e| panic!("{}: {e}", tool.definition().name));
        assert!(tool.definition().description.len() > 40);
    }
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    let fixture = Fixture::new();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    fixture.put("a.txt", &body);
    let all = fixture.ok("read_file", json!({"path": "a.txt"})).await;
    assert!(all.starts_with("     1\tline 1\n"), "{all}");
    assert!(all.ends_with("    10\tline 10\n"), "a whole file has no footer: {all}");
    let page = fixture.ok("read_file", json!({"path": "a.txt", "offset": 4, "limit": 2})).await;
    assert!(page.starts_with("     4\tline 4\n     5\tline 5\n["), "{page}");
    assert!(page.contains("5 more lines, continue with offset 6"), "{page}");
    fixture.put("bin.dat", "abc\0def");
    let binary = fixture.ok("read_file", json!({"path": "bin.dat"})).await;
    assert!(binary.contains("binary file"), "{binary}");
    let missing = fixture.err("read_file", json!({"path": "nope.txt"})).await;
    assert!(missing.contains("does not exist"), "{missing}");
    fixture.put("empty.txt", "");
    assert!(fixture.ok("read_file", json!({"path": "empty.txt"})).await.contains("(empty file)"));
}

#[tokio::test]
async fn read_file_returns_an_image_file_as_the_image_whole_and_one_over_the_limit_as_a_line() {
    let fixture = Fixture::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";
    std::fs::write(fixture.root().join("shot.png"), png).unwrap();
    let tool = fixture.tools.iter().find(|t| t.definition().name == "read_file").unwrap();
    let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
    let output = tool.execute(json!({"path": "shot.png"}), context).await;
    assert!(!output.is_error);
    assert_eq!(
        output.content,
        [
            ContentPart::text("`shot.png` is a PNG image of 20 B:"),
            ContentPart::image("image/png", png.to_vec())
        ]
    );
    let mut big = png.to_vec();
    big.resize(bosun_tools::image::MAX_IMAGE_BYTES as usize + 1, 0);
    std::fs::write(fixture.root().join("big.png"), &big).unwrap();
    let line = fixture.ok("read_file", json!({"path": "big.png"})).await;
    assert_eq!(line, "`big.png` is a PNG image of 3.75 MiB, over the 3.75 MiB an image may have; not shown");
    // Named like an image, read as what its bytes are.
    fixture.put("notes.png", "just words\n");
    assert_eq!(fixture.ok("read_file", json!({"path": "notes.png"})).await, "     1\tjust words\n");
}

#[tokio::test]
async fn read_file_refuses_files_over_the_size_cap() {
    let fixture = Fixture::with_limits(ToolLimits::default().with_max_file_bytes(100));
    fixture.put("big.txt", &"x".repeat(101));
    let text = fixture.err("read_file", json!({"path": "big.txt"})).await;
    assert!(text.contains("101 bytes, over the 100-byte limit"), "{text}");
}

#[tokio::test]
async fn write_file_creates_and_replaces_only_what_was_read() {
    let fixture = Fixture::new();
    let created = fixture.ok("write_file", json!({"path": "new/dir/a.txt", "content": "one\n"})).await;
    assert!(created.starts_with("created `new/dir/a.txt`"), "{created}");
    assert_eq!(fixture.get("new/dir/a.txt"), "one\n");
    fixture.put("b.txt", "original");
    let refused = fixture.err("write_file", json!({"path": "b.txt", "content": "x"})).await;
    assert!(refused.contains("has not been read"), "{refused}");
    fixture.ok("read_file", json!({"path": "b.txt"})).await;
    fixture.put("b.txt", "changed behind our back");
    let changed = fixture.err("write_file", json!({"path": "b.txt", "content": "x"})).await;
    assert!(changed.contains("changed since it was read"), "{changed}");
    assert_eq!(fixture.get("b.txt"), "changed behind our back");
    fixture.ok("read_file", json!({"path": "b.txt"})).await;
    let replaced = fixture.ok("write_file", json!({"path": "b.txt", "content": "new"})).await;
    assert!(replaced.starts_with("replaced"), "{replaced}");
    assert_eq!(fixture.get("b.txt"), "new");
    // Our own write updates what we know: a second replace needs no re-read.
    fixture.ok("write_file", json!({"path": "b.txt", "content": "newer"})).await;
    let leftovers: Vec<_> = fs::read_dir(fixture.root())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary siblings remain");
}

#[tokio::test]
async fn edit_file_replaces_a_unique_match_and_shows_a_diff() {
    let fixture = Fixture::new();
    fixture.put("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let text = fixture
        .ok("edit_file", json!({"path": "src/lib.rs", "old_text": "fn b() {}", "new_text": "fn bee() {}"}))
        .await;
    assert!(text.starts_with("edited `src/lib.rs`: 1 replacement"), "{text}");
    assert!(
        text.contains("--- a/src/lib.rs") && text.contains("-fn b() {}") && text.contains("+fn bee() {}"),
        "{text}"
    );
    assert_eq!(fixture.get("src/lib.rs"), "fn a() {}\nfn bee() {}\nfn c() {}\n");
}

#[tokio::test]
async fn edit_file_reports_counts_and_nearest_lines() {
    let fixture = Fixture::new();
    fixture.put("a.py", "x = 1\ny = 2\nx = 1\n    def handler(event):\n        pass\n");
    let many =
        fixture.err("edit_file", json!({"path": "a.py", "old_text": "x = 1", "new_text": "x = 3"})).await;
    assert!(many.contains("occurs 2 times") && many.contains("lines 1, 3"), "{many}");
    let all = fixture
        .ok(
            "edit_file",
            json!({"path": "a.py", "old_text": "x = 1", "new_text": "x = 3", "replace_all": true}),
        )
        .await;
    assert!(all.contains("2 replacements"), "{all}");
    let none = fixture
        .err("edit_file", json!({"path": "a.py", "old_text": "def handlr(event):", "new_text": "z"}))
        .await;
    assert!(
        none.contains("not found") && none.contains("Nearest lines") && none.contains("def handler(event)"),
        "{none}"
    );
    let indent = fixture
        .err(
            "edit_file",
            json!({"path": "a.py", "old_text": "def handler(event):\n    pass", "new_text": "z"}),
        )
        .await;
    assert!(indent.contains("check the indentation"), "{indent}");
    let same =
        fixture.err("edit_file", json!({"path": "a.py", "old_text": "y = 2", "new_text": "y = 2"})).await;
    assert!(same.contains("the same"), "{same}");
    assert_eq!(fixture.get("a.py"), "x = 3\ny = 2\nx = 3\n    def handler(event):\n        pass\n");
}

#[tokio::test]
async fn edit_file_refuses_a_file_changed_since_it_was_read() {
    let fixture = Fixture::new();
    fixture.put("a.txt", "alpha\n");
    fixture.ok("read_file", json!({"path": "a.txt"})).await;
    fixture.put("a.txt", "alpha\nbeta\n");
    let text =
        fixture.err("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "gamma"})).await;
    assert!(text.contains("changed since it was read"), "{text}");
    assert_eq!(fixture.get("a.txt"), "alpha\nbeta\n");
}

#[tokio::test]
async fn list_files_is_sorted_gitignore_aware_and_bounded() {
    let fixture = Fixture::new();
    fixture.put(".gitignore", "target/\n*.log\n");
    fixture.put("b.txt", "");
    fixture.put("a/z.txt", "");
    fixture.put("a/deep/er/file.txt", "");
    fixture.put("target/out.bin", "");
    fixture.put("debug.log", "");
    fixture.put(".git/HEAD", "");
    let text = fixture.ok("list_files", json!({})).await;
    assert_eq!(text, ".gitignore\na/\na/deep/\na/deep/er/\na/z.txt\nb.txt");
    let shallow = fixture.ok("list_files", json!({"path": "a", "depth": 1})).await;
    assert_eq!(shallow, "a/deep/\na/z.txt");
    let limited = Fixture::with_limits(ToolLimits::default().with_max_entries(2));
    for name in ["1", "2", "3"] {
        limited.put(name, "");
    }
    let cut = limited.ok("list_files", json!({})).await;
    assert!(cut.starts_with("1\n2\n[listing stopped at 2 entries"), "{cut}");
}

#[tokio::test]
async fn search_finds_regex_and_literal_matches_with_context_and_globs() {
    let fixture = Fixture::new();
    fixture.put(".gitignore", "ignored/\n");
    fixture.put("src/a.rs", "fn main() {\n    let x = foo(1);\n}\n");
    fixture.put("src/b.ts", "const y = foo(2);\n");
    fixture.put("ignored/c.rs", "foo(3)\n");
    let regex = fixture.ok("search", json!({"pattern": "foo\\(\\d\\)"})).await;
    assert_eq!(regex, "src/a.rs:2:    let x = foo(1);\nsrc/b.ts:1:const y = foo(2);\n[2 matches in 2 files]");
    let literal = fixture.ok("search", json!({"pattern": "foo(1)", "literal": true})).await;
    assert!(literal.starts_with("src/a.rs:2:"), "{literal}");
    let glob = fixture.ok("search", json!({"pattern": "foo", "glob": "*.ts"})).await;
    assert!(glob.starts_with("src/b.ts:1:") && !glob.contains("a.rs"), "{glob}");
    let context = fixture.ok("search", json!({"pattern": "let x", "context": 1})).await;
    assert_eq!(
        context,
        "src/a.rs-1-fn main() {\nsrc/a.rs:2:    let x = foo(1);\nsrc/a.rs-3-}\n[1 matches in 1 files]"
    );
    let one_file = fixture.ok("search", json!({"pattern": "foo", "path": "src/b.ts"})).await;
    assert!(one_file.starts_with("src/b.ts:1:"), "{one_file}");
    assert_eq!(fixture.ok("search", json!({"pattern": "nothing here"})).await, "no matches");
    let bad = fixture.err("search", json!({"pattern": "("})).await;
    assert!(bad.contains("invalid pattern"), "{bad}");
}

#[tokio::test]
async fn search_stops_at_max_results_with_a_note() {
    let fixture = Fixture::with_limits(ToolLimits::default().with_max_results(3));
    fixture.put("a.txt", &"hit\n".repeat(10));
    let text = fixture.ok("search", json!({"pattern": "hit"})).await;
    assert_eq!(text.lines().filter(|l| l.starts_with("a.txt:")).count(), 3);
    assert!(text.contains("results stopped at 3"), "{text}");
}

#[tokio::test]
async fn apply_patch_changes_several_files_or_none() {
    let fixture = Fixture::new();
    fixture.put("keep.txt", "a\nb\nc\n");
    fixture.put("gone.txt", "bye\n");
    fixture.put("old/name.txt", "x\ny\n");
    let patch = "*** Begin Patch\n*** Add File: added.txt\n+hello\n*** Update File: keep.txt\n@@\n a\n-b\n+B\n c\n\
                 *** Delete File: gone.txt\n*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n x\n-y\n+z\n\
                 *** End Patch";
    let text = fixture.ok("apply_patch", json!({"patch": patch})).await;
    assert!(
        text.contains("A added.txt") && text.contains("M keep.txt") && text.contains("D gone.txt"),
        "{text}"
    );
    assert!(text.contains("R old/name.txt -> new/name.txt"), "{text}");
    assert_eq!(fixture.get("added.txt"), "hello\n");
    assert_eq!(fixture.get("keep.txt"), "a\nB\nc\n");
    assert_eq!(fixture.get("new/name.txt"), "x\nz\n");
    assert!(!fixture.root().join("gone.txt").exists() && !fixture.root().join("old/name.txt").exists());

    // The second file's hunk does not apply: the first file is untouched.
    let broken = "*** Begin Patch\n*** Update File: keep.txt\n@@\n a\n-B\n+b\n*** Update File: added.txt\n@@\n-nothere\n+x\n\
                  *** End Patch";
    let text = fixture.err("apply_patch", json!({"patch": broken})).await;
    assert!(text.contains("nothing was changed"), "{text}");
    assert_eq!(fixture.get("keep.txt"), "a\nB\nc\n");
    let malformed = fixture
        .err("apply_patch", json!({"patch": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"}))
        .await;
    assert!(malformed.contains("malformed"), "{malformed}");
}
