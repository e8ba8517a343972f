//! Invariant 17 from the good side: writes create, replace only what was
//! read, refuse a file changed since, leave no temporary sibling, go through
//! a rename (a new inode), and keep permission bits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::Fixture;
use serde_json::json;

/// What these tests check beyond the shared fixture.
trait Listing {
    fn names(&self) -> Vec<String>;
    fn assert_no_temp_files(&self);
}

impl Listing for Fixture {
    /// Every name in the workspace, recursively, sorted.
    fn names(&self) -> Vec<String> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
                if entry.file_type().unwrap().is_dir() {
                    walk(&entry.path(), &format!("{name}/"), out);
                }
                out.push(name);
            }
        }
        let mut out = Vec::new();
        walk(self.root(), "", &mut out);
        out.sort();
        out
    }

    fn assert_no_temp_files(&self) {
        let names = self.names();
        assert!(
            !names.iter().any(|n| n.ends_with(".tmp") || n.contains(".bosun-")),
            "a temporary sibling was left: {names:?}"
        );
    }
}

#[tokio::test]
async fn invariant_17_write_file_creates_a_file_and_its_parents_with_no_temp_sibling() {
    let fx = Fixture::new();
    let text = fx.ok("write_file", json!({"path": "a/b/new.txt", "content": "one\ntwo\n"})).await;
    assert!(text.contains("created"), "{text}");
    assert_eq!(fs::read_to_string(fx.root().join("a/b/new.txt")).unwrap(), "one\ntwo\n");
    assert_eq!(fx.names(), ["a", "a/b", "a/b/new.txt"]);
    fx.assert_no_temp_files();
}

#[tokio::test]
async fn invariant_17_replacing_needs_a_prior_read_of_the_file() {
    let fx = Fixture::new();
    fs::write(fx.root().join("f.txt"), "original\n").unwrap();
    let refused = fx.err("write_file", json!({"path": "f.txt", "content": "new\n"})).await;
    assert!(refused.contains("has not been read"), "{refused}");
    assert_eq!(fs::read_to_string(fx.root().join("f.txt")).unwrap(), "original\n");

    fx.ok("read_file", json!({"path": "f.txt"})).await;
    let text = fx.ok("write_file", json!({"path": "f.txt", "content": "new\n"})).await;
    assert!(text.contains("replaced"), "{text}");
    assert_eq!(fs::read_to_string(fx.root().join("f.txt")).unwrap(), "new\n");
    // The tool's own write counts as a read: a second replace needs no re-read.
    fx.ok("write_file", json!({"path": "f.txt", "content": "newer\n"})).await;
    assert_eq!(fs::read_to_string(fx.root().join("f.txt")).unwrap(), "newer\n");
    assert_eq!(fx.names(), ["f.txt"]);
}

#[tokio::test]
async fn invariant_17_a_file_changed_in_place_after_the_read_is_not_replaced() {
    let fx = Fixture::new();
    let path = fx.root().join("f.txt");
    fs::write(&path, "original\n").unwrap();
    for (name, arguments) in [
        ("write_file", json!({"path": "f.txt", "content": "mine\n"})),
        ("edit_file", json!({"path": "f.txt", "old_text": "someone", "new_text": "me"})),
    ] {
        fx.ok("read_file", json!({"path": "f.txt"})).await;
        // Someone else edits the file in place (same inode, new content).
        let theirs = format!("changed by someone else before {name}\n");
        fs::write(&path, &theirs).unwrap();
        let refused = fx.err(name, arguments).await;
        assert!(refused.contains("changed since it was read"), "{name}: {refused}");
        // The refusal shows the file's new state, so the model can redo it.
        assert!(refused.contains(&format!("     1\t{}", theirs.trim_end())), "{name}: {refused}");
        assert_eq!(fs::read_to_string(&path).unwrap(), theirs, "{name}");
    }
    fx.assert_no_temp_files();
    // The refusal showed the current content, so a retry against it goes through.
    fx.ok("edit_file", json!({"path": "f.txt", "old_text": "someone else", "new_text": "me"})).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "changed by me before edit_file\n");
}

#[tokio::test]
async fn invariant_17_a_file_swapped_for_another_with_the_same_content_is_not_replaced() {
    let fx = Fixture::new();
    let path = fx.root().join("f.txt");
    fs::write(&path, "same\n").unwrap();
    fx.ok("read_file", json!({"path": "f.txt"})).await;
    // Replaced by a different file with identical bytes: it is not the file
    // that was read.
    fs::write(fx.root().join("other"), "same\n").unwrap();
    fs::rename(fx.root().join("other"), &path).unwrap();
    let refused = fx.err("write_file", json!({"path": "f.txt", "content": "mine\n"})).await;
    assert!(refused.contains("changed since it was read"), "{refused}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "same\n");
    fx.assert_no_temp_files();
}

#[tokio::test]
async fn invariant_17_a_file_deleted_after_the_read_is_not_recreated_by_a_replace() {
    let fx = Fixture::new();
    let path = fx.root().join("f.txt");
    fs::write(&path, "original\n").unwrap();
    fx.ok("read_file", json!({"path": "f.txt"})).await;
    fs::remove_file(&path).unwrap();
    let edit = fx.err("edit_file", json!({"path": "f.txt", "old_text": "original", "new_text": "x"})).await;
    assert!(edit.contains("does not exist"), "{edit}");
    assert!(!path.exists());
    fx.assert_no_temp_files();
}

#[tokio::test]
async fn invariant_17_a_replace_renames_a_new_file_into_place() {
    let fx = Fixture::new();
    let path = fx.root().join("f.txt");
    fs::write(&path, "old\n").unwrap();
    // A hard link keeps the old inode reachable: an in-place write would
    // change it too; a rename leaves it alone.
    fs::hard_link(&path, fx.root().join("hard_link")).unwrap();
    let inode_before = fs::metadata(&path).unwrap().ino();
    fx.ok("read_file", json!({"path": "f.txt"})).await;
    fx.ok("write_file", json!({"path": "f.txt", "content": "new\n"})).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
    assert_ne!(fs::metadata(&path).unwrap().ino(), inode_before, "the file was written in place");
    assert_eq!(fs::read_to_string(fx.root().join("hard_link")).unwrap(), "old\n");
    assert_eq!(fx.names(), ["f.txt", "hard_link"]);
}

#[tokio::test]
async fn invariant_17_every_write_tool_leaves_no_temp_sibling() {
    let fx = Fixture::new();
    fx.ok("write_file", json!({"path": "src/a.txt", "content": "alpha\nbeta\n"})).await;
    fx.ok("edit_file", json!({"path": "src/a.txt", "old_text": "beta", "new_text": "gamma"})).await;
    let patch = "*** Begin Patch\n*** Add File: src/b.txt\n+bee\n*** Update File: src/a.txt\n*** Move to: \
                 src/c.txt\n@@\n alpha\n-gamma\n+delta\n*** End Patch";
    fx.ok("apply_patch", json!({"patch": patch})).await;
    assert_eq!(fx.names(), ["src", "src/b.txt", "src/c.txt"]);
    assert_eq!(fs::read_to_string(fx.root().join("src/c.txt")).unwrap(), "alpha\ndelta\n");
    // A refused write leaves nothing behind either.
    fs::write(fx.root().join("src/b.txt"), "changed behind our back\n").unwrap();
    fx.err("write_file", json!({"path": "src/b.txt", "content": "x"})).await;
    let patch = "*** Begin Patch\n*** Update File: src/b.txt\n@@\n-bee\n+bumble\n*** End Patch";
    fx.err("apply_patch", json!({"patch": patch})).await;
    assert_eq!(fx.names(), ["src", "src/b.txt", "src/c.txt"]);
}

#[tokio::test]
async fn invariant_17_permission_bits_are_kept_when_a_file_is_replaced() {
    let fx = Fixture::new();
    let script = fx.root().join("run.sh");
    fs::write(&script, "#!/bin/sh\necho one\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let mode = || format!("{:o}", fs::metadata(&script).unwrap().permissions().mode() & 0o7777);

    fx.ok("edit_file", json!({"path": "run.sh", "old_text": "echo one", "new_text": "echo two"})).await;
    assert_eq!(mode(), "755", "edit_file");
    assert_eq!(fs::read_to_string(&script).unwrap(), "#!/bin/sh\necho two\n");

    fx.ok("write_file", json!({"path": "run.sh", "content": "#!/bin/sh\necho three\n"})).await;
    assert_eq!(mode(), "755", "write_file");

    let patch = "*** Begin Patch\n*** Update File: run.sh\n@@\n-echo three\n+echo four\n*** End Patch";
    fx.ok("apply_patch", json!({"patch": patch})).await;
    assert_eq!(mode(), "755", "apply_patch");

    fs::set_permissions(&script, fs::Permissions::from_mode(0o600)).unwrap();
    fx.ok("edit_file", json!({"path": "run.sh", "old_text": "echo four", "new_text": "echo five"})).await;
    assert_eq!(mode(), "600", "edit_file of a private file");
    assert_eq!(fs::read_to_string(&script).unwrap(), "#!/bin/sh\necho five\n");
    fx.assert_no_temp_files();
}

/// A move (`*** Move to:`) writes the new path as a new file, and a new file
/// gets 0o644: an executable script loses its execute bits when renamed.
#[tokio::test]
async fn invariant_17_a_moved_file_keeps_its_permission_bits() {
    let fx = Fixture::new();
    let script = fx.root().join("run.sh");
    fs::write(&script, "#!/bin/sh\necho one\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let patch = "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo one\n+echo two\n*** End Patch";
    fx.ok("apply_patch", json!({"patch": patch})).await;
    let moved = fx.root().join("bin/run.sh");
    assert_eq!(fs::read_to_string(&moved).unwrap(), "#!/bin/sh\necho two\n");
    assert_eq!(format!("{:o}", fs::metadata(&moved).unwrap().permissions().mode() & 0o7777), "755");
}
