//! The file tools over a [`FileAccess`] standing in for an editor: its
//! buffers are what `read_file` shows and what `edit_file` and
//! `apply_patch` change, its writes receive the result, and every check
//! (beneath the root, no symlink, read before change, unchanged since)
//! stays the tools' own, made before the access is asked anything.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bosun_tools::{FileAccess, Workspace, WorkspaceTools};
use serde_json::json;

use crate::common::Fixture;

/// An editor: open buffers by absolute path (the disk where none is open),
/// every request it was sent, and every write it received.
#[derive(Debug)]
struct Buffers {
    reads: bool,
    writes: bool,
    open: Mutex<HashMap<PathBuf, String>>,
    asked: Mutex<Vec<PathBuf>>,
    written: Mutex<Vec<(PathBuf, String)>>,
}

impl Buffers {
    fn new(reads: bool, writes: bool) -> Arc<Self> {
        Arc::new(Self {
            reads,
            writes,
            open: Mutex::default(),
            asked: Mutex::default(),
            written: Mutex::default(),
        })
    }

    fn open(&self, path: &Path, text: &str) {
        self.open.lock().unwrap().insert(path.to_owned(), text.to_owned());
    }

    fn written(&self) -> Vec<(PathBuf, String)> {
        self.written.lock().unwrap().clone()
    }
}

impl FileAccess for Buffers {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text(&self, path: &Path) -> Result<String, String> {
        self.asked.lock().unwrap().push(path.to_owned());
        match self.open.lock().unwrap().get(path) {
            Some(text) => Ok(text.clone()),
            None => std::fs::read_to_string(path).map_err(|e| e.to_string()),
        }
    }

    fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        self.asked.lock().unwrap().push(path.to_owned());
        // Into the buffer only: what reaches the disk is the editor's call.
        self.open.lock().unwrap().insert(path.to_owned(), text.to_owned());
        self.written.lock().unwrap().push((path.to_owned(), text.to_owned()));
        Ok(())
    }
}

fn with(buffers: &Arc<Buffers>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let access: Arc<dyn FileAccess> = buffers.clone();
    let tools = WorkspaceTools::new(workspace).without_shell().file_access(access).build();
    Fixture { dir, tools }
}

fn root(fx: &Fixture) -> PathBuf {
    fx.root().canonicalize().unwrap()
}

#[tokio::test]
async fn read_file_shows_the_editors_unsaved_buffer() {
    let buffers = Buffers::new(true, true);
    let fx = with(&buffers);
    fx.put("a.txt", "on disk\n");
    buffers.open(&root(&fx).join("a.txt"), "unsaved\nsecond\n");
    let shown = fx.ok("read_file", json!({"path": "a.txt", "offset": 2})).await;
    assert!(shown.contains("2\tsecond"), "{shown}");
    assert!(!shown.contains("on disk"), "{shown}");
    assert!(shown.contains("lines 2-2 of 2"), "{shown}");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused_before_the_editor_is_asked() {
    let buffers = Buffers::new(true, true);
    let fx = with(&buffers);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.root().join("link")).unwrap();
    for path in ["../secret.txt", "/etc/passwd", "link/secret.txt"] {
        let refused = fx.err("read_file", json!({"path": path})).await;
        assert!(!refused.contains("secret\n"), "{refused}");
    }
    fx.err("write_file", json!({"path": "link/new.txt", "content": "x"})).await;
    assert!(buffers.asked.lock().unwrap().is_empty(), "the editor was asked about a path outside");
}

#[tokio::test]
async fn edit_file_edits_the_buffer_and_leaves_the_disk_to_the_editor() {
    let buffers = Buffers::new(true, true);
    let fx = with(&buffers);
    fx.put("a.txt", "one\ntwo\n");
    let path = root(&fx).join("a.txt");
    buffers.open(&path, "one\ntwo\nthree (unsaved)\n");
    fx.ok("read_file", json!({"path": "a.txt"})).await;
    let diff = fx.ok("edit_file", json!({"path": "a.txt", "old_text": "three", "new_text": "3"})).await;
    assert!(diff.contains("+3 (unsaved)"), "{diff}");
    assert_eq!(buffers.written(), vec![(path, "one\ntwo\n3 (unsaved)\n".to_owned())]);
    assert_eq!(fx.get("a.txt"), "one\ntwo\n", "bosun wrote the disk behind the editor");
}

#[tokio::test]
async fn an_edit_of_a_buffer_changed_since_it_was_read_writes_nothing() {
    let buffers = Buffers::new(true, true);
    let fx = with(&buffers);
    fx.put("a.txt", "one\n");
    let path = root(&fx).join("a.txt");
    fx.ok("read_file", json!({"path": "a.txt"})).await;
    buffers.open(&path, "one\ntyped since\n");
    let refused = fx.err("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "1"})).await;
    assert!(refused.contains("changed since it was read"), "{refused}");
    assert!(refused.contains("typed since"), "the current buffer is shown: {refused}");
    assert!(buffers.written().is_empty());
    // Replacing a file never read is refused too, as on disk.
    fx.put("b.txt", "b\n");
    let refused = fx.err("write_file", json!({"path": "b.txt", "content": "new"})).await;
    assert!(refused.contains("has not been read"), "{refused}");
    assert!(buffers.written().is_empty());
}

#[tokio::test]
async fn apply_patch_goes_through_the_editor_unless_it_deletes_or_moves() {
    let buffers = Buffers::new(true, true);
    let fx = with(&buffers);
    fx.put("a.txt", "alpha\nbeta\n");
    let path = root(&fx).join("a.txt");
    buffers.open(&path, "alpha\nbeta (unsaved)\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n alpha\n-beta (unsaved)\n+gamma\n*** Add File: new/b.txt\n+bee\n*** End Patch";
    fx.ok("apply_patch", json!({"patch": patch})).await;
    let written = buffers.written();
    assert_eq!(written.len(), 2, "{written:?}");
    assert_eq!(written[0], (path, "alpha\ngamma\n".to_owned()));
    assert_eq!(written[1], (root(&fx).join("new/b.txt"), "bee\n".to_owned()));
    assert_eq!(fx.get("a.txt"), "alpha\nbeta\n");
    assert!(fx.root().join("new").is_dir(), "the new file's folder is made through the root handle");

    // A deletion is made on disk, against the disk.
    fx.put("c.txt", "sea\n");
    fx.ok("apply_patch", json!({"patch": "*** Begin Patch\n*** Delete File: c.txt\n*** End Patch"})).await;
    assert!(!fx.root().join("c.txt").exists());
    assert_eq!(buffers.written().len(), 2);
}

#[tokio::test]
async fn an_editor_that_only_writes_leaves_reads_and_edits_on_disk() {
    let buffers = Buffers::new(false, true);
    let fx = with(&buffers);
    fx.put("a.txt", "disk\n");
    buffers.open(&root(&fx).join("a.txt"), "buffer\n");
    let shown = fx.ok("read_file", json!({"path": "a.txt"})).await;
    assert!(shown.contains("disk"), "{shown}");
    fx.ok("edit_file", json!({"path": "a.txt", "old_text": "disk", "new_text": "edited"})).await;
    assert_eq!(fx.get("a.txt"), "edited\n");
    assert!(buffers.written().is_empty());
    fx.ok("write_file", json!({"path": "a.txt", "content": "whole\n"})).await;
    assert_eq!(buffers.written().len(), 1, "write_file goes through the editor");
}
