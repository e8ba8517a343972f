//! Refusals of a wrong path name what exists near it, so a model that
//! guessed a path can make its next call succeed; the hints stay bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use bosun_tools::Workspace;
use bosun_tools::workspace::{EntryKind, RelPath};
use common::Fixture;
use serde_json::json;

/// The entries a hint names, in order.
fn named(text: &str) -> Vec<&str> {
    let list = ["near it: ", "It holds: "]
        .iter()
        .find_map(|head| text.split_once(head).map(|(_, list)| list))
        .unwrap_or_default();
    let list = list.split(" (more: ").next().unwrap_or_default();
    list.split(", ").filter(|s| !s.is_empty()).collect()
}

#[tokio::test]
async fn a_missing_file_in_the_root_lists_the_few_entries_there_without_ignored_ones() {
    let fx = Fixture::new();
    fx.put(".gitignore", "target/\n");
    fx.put("Cargo.toml", "");
    fx.put("README.md", "");
    fx.put("src/lib.rs", "");
    fx.put("target/debug/main", "");
    fx.put(".git/HEAD", "");
    let text = fx.err("read_file", json!({"path": "main.rs"})).await;
    assert_eq!(
        text,
        "`main.rs` does not exist. Existing paths near it: .gitignore, Cargo.toml, README.md, src/"
    );
    let search = fx.err("search", json!({"pattern": "x", "path": "tests"})).await;
    assert_eq!(
        search,
        "`tests` does not exist. Existing paths near it: .gitignore, Cargo.toml, README.md, src/"
    );
    let empty = Fixture::new();
    let text = empty.err("read_file", json!({"path": "main.rs"})).await;
    assert_eq!(text, "`main.rs` does not exist. The workspace is empty.");
}

#[tokio::test]
async fn a_missing_file_in_a_subdirectory_names_its_siblings_then_the_parent() {
    let fx = Fixture::new();
    fx.put("Cargo.toml", "");
    fx.put("src/lib.rs", "fn a() {}\n");
    fx.put("src/app.rs", "");
    let text = fx.err("edit_file", json!({"path": "src/main.rs", "old_text": "a", "new_text": "b"})).await;
    assert_eq!(
        text,
        "`src/main.rs` does not exist. Existing paths near it: src/app.rs, src/lib.rs, Cargo.toml"
    );

    // More entries than are shown: the nearest first, and a pointer to the rest.
    for name in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"] {
        fx.put(&format!("src/{name}.rs"), "");
    }
    fx.put("src/utils/mod.rs", "");
    let text = fx.err("read_file", json!({"path": "src/utlis.rs"})).await;
    let shown = named(&text);
    assert!(
        text.starts_with("`src/utlis.rs` does not exist. Existing paths near it: src/utils/, "),
        "{text}"
    );
    assert_eq!(shown.len(), 8, "{text}");
    assert!(shown.iter().all(|p| p.starts_with("src/")), "the directory fills the hint: {text}");
    assert!(text.ends_with(" (more: list_files `src`)"), "{text}");
}

#[tokio::test]
async fn a_missing_directory_chain_names_the_deepest_existing_directory() {
    let fx = Fixture::new();
    fx.put("README.md", "");
    fx.put("src/util/strings.rs", "");
    fx.put("src/main.rs", "");
    let text = fx.err("read_file", json!({"path": "src/utils/helpers/mod.rs"})).await;
    assert_eq!(
        text,
        "`src/utils/helpers/mod.rs` does not exist: there is no `src/utils`. Existing paths near it: \
         src/main.rs, src/util/, README.md"
    );
    let list = fx.err("list_files", json!({"path": "lib/deeper"})).await;
    assert_eq!(
        list,
        "`lib/deeper` does not exist: there is no `lib`. Existing paths near it: README.md, src/"
    );
    let search = fx.err("search", json!({"pattern": "x", "path": "src/utils/helpers"})).await;
    assert!(
        search.starts_with(
            "`src/utils/helpers` does not exist: there is no `src/utils`. Existing paths near it: "
        ),
        "{search}"
    );
}

#[tokio::test]
async fn list_files_on_a_file_says_it_is_a_file_to_read() {
    let fx = Fixture::new();
    fx.put("src/lib.rs", "");
    let text = fx.err("list_files", json!({"path": "src/lib.rs"})).await;
    assert_eq!(text, "`src/lib.rs` is not a directory: it is a file. Read it with read_file.");
    let below = fx.err("list_files", json!({"path": "src/lib.rs/inner"})).await;
    assert_eq!(below, "`src/lib.rs` is not a directory: it is a file. Read it with read_file.");
}

#[tokio::test]
async fn read_file_on_a_directory_lists_its_first_entries() {
    let fx = Fixture::new();
    fx.put("src/b.rs", "");
    fx.put("src/a.rs", "");
    fx.put("src/nested/c.rs", "");
    let text = fx.err("read_file", json!({"path": "src"})).await;
    assert_eq!(text, "`src` is a directory, not a regular file. It holds: src/a.rs, src/b.rs, src/nested/");
    let root = fx.err("read_file", json!({"path": "."})).await;
    assert_eq!(root, "`.` is a directory, not a regular file. It holds: src/");
    for i in 0..12 {
        fx.put(&format!("many/f{i:02}.txt"), "");
    }
    let many = fx.err("read_file", json!({"path": "many"})).await;
    assert_eq!(
        many,
        "`many` is a directory, not a regular file. It holds: many/f00.txt, many/f01.txt, many/f02.txt, \
         many/f03.txt, many/f04.txt, many/f05.txt, many/f06.txt, many/f07.txt (more: list_files `many`)"
    );
    std::fs::create_dir(fx.root().join("empty")).unwrap();
    let empty = fx.err("read_file", json!({"path": "empty"})).await;
    assert_eq!(empty, "`empty` is a directory, not a regular file. It is empty.");
}

#[tokio::test]
async fn hints_are_bounded_in_entries_read_shown_and_name_length() {
    let fx = Fixture::new();
    for i in 0..300 {
        fx.put(&format!("big/file{i:03}.txt"), "");
    }
    let long = format!("{}.txt", "n".repeat(246)); // 250 bytes, under NAME_MAX
    fx.put(&format!("big/{long}"), "");

    // One directory read stops at 200 entries and says there are more.
    let workspace = Workspace::open(fx.root()).unwrap();
    let big = RelPath::parse("big").unwrap();
    let read = workspace.read_dir(&big, 200).unwrap();
    assert_eq!(read.entries.len(), 200);
    assert!(read.more);
    assert!(read.entries.iter().all(|(_, kind)| *kind == EntryKind::File));
    let all = workspace.read_dir(&big, 1_000).unwrap();
    assert_eq!((all.entries.len(), all.more), (301, false));

    // A hint names at most 8, each at most 200 bytes of name, and is short.
    for (tool, path) in [("read_file", "big/nope.txt"), ("read_file", "big"), ("list_files", "big/x/y")] {
        let text = fx.err(tool, json!({"path": path})).await;
        let shown = named(&text);
        assert_eq!(shown.len(), 8, "{tool} {path}: {text}");
        assert!(shown.iter().all(|p| p.starts_with("big/") && p.len() <= 4 + 200 + 3), "{text}");
        assert!(text.ends_with("(more: list_files `big`)"), "{text}");
        assert!(text.len() < 2_048, "{} bytes", text.len());
    }

    // A long name is cut when it is shown.
    let fx = Fixture::new();
    fx.put(&long, "");
    let text = fx.err("read_file", json!({"path": "nnnn.txt"})).await;
    let shown = named(&text);
    assert_eq!(shown.len(), 1, "{text}");
    assert!(shown[0].len() <= 200 + 3 && shown[0].ends_with('…'), "{text}");
    assert!(long.starts_with(shown[0].trim_end_matches('…')));
}
