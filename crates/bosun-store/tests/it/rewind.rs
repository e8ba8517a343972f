//! What rewind keeps in the store, through a real SQLite file: content by
//! hash (one copy however often it is kept), the bounds (file size, binary,
//! a turn's total), a call's change begun before it runs and ended after,
//! the workspace manifest, and the collection of content nothing names any
//! more; then branches: a fork keeps every branch reachable, the head moves
//! to any of them, and turns are found where they began.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{Session, ToolCategory, WorkspaceIdentity};
use bosun_store::{
    After, Before, KeepBounds, ManifestEntry, NewChange, NotKept, Offered, Store, StoreError, TurnBudget,
    blob_hash,
};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    (dir, store)
}

#[test]
fn content_is_kept_once_by_its_hash_and_within_the_bounds() {
    let (_dir, store) = store();
    let bounds = KeepBounds::new(16, 24);
    let mut budget = TurnBudget::default();
    let hash = store.keep(b"hello world\n", bounds, &mut budget).unwrap().unwrap();
    assert_eq!(hash, blob_hash(b"hello world\n"));
    assert_eq!(budget.used, 12);
    // The same content again: the same blob, and nothing more counted.
    let again = store.keep(b"hello world\n", bounds, &mut budget).unwrap().unwrap();
    assert_eq!(again, hash);
    assert_eq!(budget.used, 12);
    assert_eq!(store.blob_totals().unwrap(), (1, 12));
    assert_eq!(store.blob(&hash).unwrap().as_deref(), Some(&b"hello world\n"[..]));

    // Over the file bound, binary, and past the turn's bound: named, not kept.
    let large = store.keep(&[b'x'; 17], bounds, &mut budget).unwrap();
    assert_eq!(large, Err(NotKept::TooLarge { size: 17, limit: 16 }));
    assert_eq!(store.keep(b"a\0b", bounds, &mut budget).unwrap(), Err(NotKept::Binary));
    let full = store.keep(b"sixteen bytes!!\n", bounds, &mut budget).unwrap();
    assert_eq!(full, Err(NotKept::TurnFull { limit: 24 }));
    // Content kept already costs nothing, even over the turn's bound.
    assert!(store.keep(b"hello world\n", bounds, &mut budget).unwrap().is_ok());
    // A new turn has its own bound.
    let mut next = TurnBudget::default();
    assert!(store.keep(b"sixteen bytes!!\n", bounds, &mut next).unwrap().is_ok());
    assert_eq!(store.blob_totals().unwrap(), (2, 28));
    assert!(full.unwrap_err().to_string().contains("24 bytes"), "the reason is shown in words");
}

#[test]
fn a_change_begun_before_a_call_is_kept_only_if_the_call_changed_the_file() {
    let (_dir, store) = store();
    let (bounds, mut budget) = (KeepBounds::default(), TurnBudget::default());
    let offered = Offered::Content { bytes: b"v1\n".to_vec(), mode: 0o640 };
    let (changed, before) =
        store.begin_change("s", (1, "call-1"), "a.txt", 10, offered.clone(), bounds, &mut budget).unwrap();
    assert_eq!(before, Before::Kept { hash: blob_hash(b"v1\n"), mode: 0o640 });
    // Until it ends, what the call left is unknown (a crash leaves it so).
    assert_eq!(store.file_changes("s").unwrap()[0].after, After::Unknown);
    assert!(store.end_change(changed, &After::File { hash: blob_hash(b"v2\n") }, 11).unwrap());

    // A call that failed changed nothing: no row.
    let (same, _) = store
        .begin_change(
            "s",
            (1, "call-2"),
            "b.txt",
            12,
            Offered::Content { bytes: b"b\n".to_vec(), mode: 0o644 },
            bounds,
            &mut budget,
        )
        .unwrap();
    assert!(!store.end_change(same, &After::File { hash: blob_hash(b"b\n") }, 13).unwrap());
    let (created, before) =
        store.begin_change("s", (2, "call-3"), "new.txt", 14, Offered::Absent, bounds, &mut budget).unwrap();
    assert_eq!(before, Before::Absent);
    store.end_change(created, &After::File { hash: blob_hash(b"new\n") }, 15).unwrap();

    let changes = store.file_changes("s").unwrap();
    let paths: Vec<(&str, Option<u64>, Option<&str>)> =
        changes.iter().map(|c| (c.path.as_str(), c.turn, c.call_id.as_deref())).collect();
    assert_eq!(paths, [("a.txt", Some(1), Some("call-1")), ("new.txt", Some(2), Some("call-3"))]);
    assert_eq!((changes[0].started, changes[0].ended), (10, Some(11)));
    // The unchanged file's content went with its row; the changed one's stays.
    assert_eq!(store.blob(&blob_hash(b"b\n")).unwrap(), None);
    assert!(store.blob(&blob_hash(b"v1\n")).unwrap().is_some());
    // Other sessions see none of it.
    assert!(store.file_changes("t").unwrap().is_empty());
}

#[test]
fn a_recorded_change_naming_content_that_is_gone_is_not_restorable() {
    let (_dir, store) = store();
    let hash = blob_hash(b"gone\n");
    let change = NewChange::new("a", Before::Kept { hash: hash.clone(), mode: 0o644 }, After::Absent, (1, 2))
        .by_call(3, "call");
    store.record_change("s", &change).unwrap().unwrap();
    let recorded = &store.file_changes("s").unwrap()[0];
    assert!(matches!(&recorded.before, Before::NotKept { hash: Some(h), .. } if *h == hash), "{recorded:?}");
    // A change that changed nothing is not recorded; many go in one call.
    let same = NewChange::new("b", Before::Absent, After::Absent, (1, 2));
    let made = NewChange::new("c", Before::Absent, After::Unknown, (1, 2));
    let rows = store.record_changes("s", &[same, made]).unwrap();
    assert!(rows[0].is_none() && rows[1].is_some(), "{rows:?}");
}

/// One file into the manifest of `/ws`, with the default bounds.
fn keep_one(
    store: &Store,
    entry: &ManifestEntry,
    bytes: Result<Vec<u8>, String>,
    budget: &mut TurnBudget,
) -> Result<ManifestEntry, StoreError> {
    let files = [(entry.clone(), bytes)];
    Ok(store.keep_workspace_files("/ws", &files, KeepBounds::default(), budget)?.remove(0))
}

#[test]
fn the_manifest_keeps_content_and_what_it_replaces_goes_unless_a_change_names_it() {
    let (_dir, store) = store();
    let mut budget = TurnBudget::default();
    let entry = ManifestEntry::new("src/a.rs", 3, (1, 1), 7, 0o644);
    let kept = keep_one(&store, &entry, Ok(b"v1\n".to_vec()), &mut budget).unwrap();
    assert_eq!(kept.hash.as_deref(), Some(blob_hash(b"v1\n").as_str()));
    // A change names v1: it outlives the manifest row that named it.
    let change = NewChange::new(
        "src/a.rs",
        Before::Kept { hash: blob_hash(b"v1\n"), mode: 0o644 },
        After::Unknown,
        (1, 2),
    );
    store.record_change("s", &change).unwrap().unwrap();
    let entry = ManifestEntry::new("src/a.rs", 3, (2, 2), 7, 0o644);
    keep_one(&store, &entry, Ok(b"v2\n".to_vec()), &mut budget).unwrap();
    let entry = ManifestEntry::new("src/a.rs", 3, (3, 3), 7, 0o644);
    keep_one(&store, &entry, Ok(b"v3\n".to_vec()), &mut budget).unwrap();
    assert!(store.blob(&blob_hash(b"v1\n")).unwrap().is_some(), "a change names it");
    assert!(store.blob(&blob_hash(b"v2\n")).unwrap().is_none(), "nothing names it");
    let binary = ManifestEntry::new("logo.png", 3, (1, 1), 8, 0o644);
    let row = keep_one(&store, &binary, Ok(b"\0\0\0".to_vec()), &mut budget).unwrap();
    assert_eq!((row.hash, row.note.as_deref()), (None, Some("a binary file")));
    let unread = ManifestEntry::new("locked", 3, (1, 1), 9, 0o000);
    let row = keep_one(&store, &unread, Err("permission denied".into()), &mut budget);
    assert_eq!(row.unwrap().note.as_deref(), Some("permission denied"));

    let listed: Vec<String> = store.workspace_files("/ws").unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(listed, ["locked", "logo.png", "src/a.rs"]);
    assert!(store.workspace_files("/other").unwrap().is_empty());
    store.forget_workspace_files("/ws", &["src/a.rs".to_owned()]).unwrap();
    assert!(store.blob(&blob_hash(b"v3\n")).unwrap().is_none());
    assert_eq!(store.workspace_files("/ws").unwrap().len(), 2);
}

fn builder(model: ScriptedModel) -> bosun_core::SessionBuilder {
    Session::builder(model)
        .tool(FnTool::text("edit", ToolCategory::Write, |_| "edited".into()))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
}

/// A session of three turns (the second with a call), as the store keeps it.
async fn three_turns(store: &Store) -> String {
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let model = ScriptedModel::new()
        .answer("One.")
        .reply(Reply::new().tool_call("edit", json!({})))
        .answer("Two.")
        .answer("Three.");
    let mut session = builder(model).journal(journal).build().await.unwrap();
    for prompt in ["first", "second", "third"] {
        session.run(prompt, &mut Vec::new()).await.unwrap();
    }
    id
}

#[tokio::test]
async fn deleting_a_session_deletes_its_changes_and_the_content_only_they_named() {
    let (_dir, store) = store();
    let id = three_turns(&store).await;
    let (bounds, mut budget) = (KeepBounds::default(), TurnBudget::default());
    let offered = Offered::Content { bytes: b"mine\n".to_vec(), mode: 0o644 };
    let (row, _) = store.begin_change(&id, (2, "c"), "a", 1, offered, bounds, &mut budget).unwrap();
    store.end_change(row, &After::Absent, 2).unwrap();
    let shared = Offered::Content { bytes: b"shared\n".to_vec(), mode: 0o644 };
    let (row, _) = store.begin_change(&id, (2, "d"), "b", 1, shared.clone(), bounds, &mut budget).unwrap();
    store.end_change(row, &After::Absent, 2).unwrap();
    let (row, _) = store.begin_change("other", (1, "e"), "b", 1, shared, bounds, &mut budget).unwrap();
    store.end_change(row, &After::Absent, 2).unwrap();
    store.delete(&id).unwrap();
    assert!(store.file_changes(&id).unwrap().is_empty());
    assert!(store.blob(&blob_hash(b"mine\n")).unwrap().is_none());
    assert!(store.blob(&blob_hash(b"shared\n")).unwrap().is_some(), "another session names it");
}

#[tokio::test]
async fn turns_are_found_where_they_began_with_the_calls_they_made() {
    let (_dir, store) = store();
    let id = three_turns(&store).await;
    let turns = store.turns(&id).unwrap();
    let history = store.show(&id).unwrap().history;
    assert_eq!(turns.iter().map(|t| t.turn).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(turns[0].after, None);
    assert_eq!(turns[1].after, Some(history[1].0), "turn 2 began after the first answer");
    assert_eq!(turns[2].after, Some(history[5].0));
    assert_eq!(turns[1].prompt.text(), "second");
    let call = history[3].1.tool_calls().next().unwrap().id.to_string();
    assert_eq!((turns[0].calls.len(), turns[1].calls.clone(), turns[2].calls.len()), (0, vec![call], 0));
}

#[tokio::test]
async fn a_fork_keeps_every_branch_and_the_head_moves_to_any_of_them() {
    let (_dir, store) = store();
    let id = three_turns(&store).await;
    let first = store.show(&id).unwrap();
    let old = first.head_branch.clone();
    // Before turn 2, as a rewind of the conversation does: a new branch.
    let at = store.turns(&id).unwrap()[1].after;
    let new = store.fork_at(&id, at).unwrap();
    let forked = store.show(&id).unwrap();
    assert_eq!(forked.head_branch, new);
    assert_eq!(forked.history.len(), 2);
    let counts: Vec<(String, i64)> =
        forked.branches.iter().map(|b| (b.id.clone(), b.message_count)).collect();
    assert_eq!(counts, [(old.clone(), 8), (new.clone(), 2)]);
    assert_eq!(forked.branches[1].fork_message, at);

    // Back to the old branch by a part of its id, history whole.
    let part = &old[old.len() - 8..];
    assert_eq!(store.resolve_branch(&id, part).unwrap(), old);
    store.switch_branch(&id, &old).unwrap();
    assert_eq!(store.show(&id).unwrap().history, first.history);
    // Before the first turn: a branch with no message.
    let empty = store.fork_at(&id, None).unwrap();
    assert!(store.show(&id).unwrap().history.is_empty());
    assert_eq!(store.show(&id).unwrap().branches.len(), 3);
    let resumed = builder(ScriptedModel::new()).resume(store.open_session(&id).unwrap()).await.unwrap();
    assert!(resumed.history().is_empty());
    drop(resumed);

    let short = store.resolve_branch(&id, &empty[..7]).unwrap_err();
    assert!(short.to_string().contains("at least 8"), "{short}");
    let none = store.resolve_branch(&id, "ffffffffffff").unwrap_err();
    assert!(matches!(none, StoreError::NotFound { .. }), "{none}");
    assert!(store.switch_branch(&id, "not-a-branch").is_err());
    // Refused while another holder runs the session.
    let holder = store.open_session(&id).unwrap();
    let held = store.switch_branch(&id, &old).unwrap_err();
    assert!(matches!(held, StoreError::Leased { .. }), "{held}");
    drop(holder);
}
