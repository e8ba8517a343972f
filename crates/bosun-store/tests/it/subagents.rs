//! Sub-agents' sessions in the store: a child journaled with `with_parent`
//! names its parent and the parent's tool call, is left out of the default
//! listing, is listed by `children`, reads its ancestors' artifacts (and
//! never its descendants'), outlives a deleted parent, and keeps its link
//! through export and import.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::artifacts::Artifacts;
use bosun_core::{Session, WorkspaceIdentity};
use bosun_store::{ListFilter, SessionSummary, Store, StoreJournal};
use bosun_testing::ScriptedModel;

/// Runs one turn on `journal` (so its session exists) and returns its id.
async fn run(journal: StoreJournal, prompt: &str) -> String {
    let id = journal.session_id().to_owned();
    let mut session = Session::builder(ScriptedModel::new().answer("Done."))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run(prompt, &mut Vec::new()).await.unwrap();
    drop(session);
    id
}

/// A new session that is a sub-agent of `parent`, started by `call`.
async fn child(store: &Store, parent: &str, call: &str) -> String {
    run(store.new_session().with_parent(parent, call), &format!("task of {call}")).await
}

fn ids(list: &[SessionSummary]) -> Vec<&str> {
    list.iter().map(|s| s.id.as_str()).collect()
}

fn link(summary: &SessionSummary) -> Option<(&str, &str)> {
    summary.parent.as_ref().map(|p| (p.session.as_str(), p.call.as_str()))
}

#[tokio::test]
async fn a_child_names_its_parent_in_show_and_in_a_listing_with_children() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let parent = run(store.new_session(), "delegate something").await;
    let kid = child(&store, &parent, "call_1").await;

    assert_eq!(link(&store.show(&kid).unwrap().summary), Some((parent.as_str(), "call_1")));
    assert_eq!(link(&store.show(&parent).unwrap().summary), None, "a top-level session has no parent");

    let all = store.list(&ListFilter::default().with_children()).unwrap();
    assert_eq!(ids(&all), [kid.as_str(), parent.as_str()], "newest first");
    assert_eq!(link(&all[0]), Some((parent.as_str(), "call_1")));
    assert_eq!(link(&all[1]), None);
    let in_workspace = store.list(&ListFilter::workspace("/work/project").with_children()).unwrap();
    assert_eq!(ids(&in_workspace), [kid.as_str(), parent.as_str()]);
}

#[tokio::test]
async fn the_default_listing_leaves_children_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let parent = run(store.new_session(), "delegate something").await;
    let kid = child(&store, &parent, "call_1").await;
    child(&store, &kid, "call_2").await;

    assert!(!ListFilter::default().children);
    assert_eq!(ids(&store.list(&ListFilter::default()).unwrap()), [parent.as_str()]);
    assert_eq!(ids(&store.list(&ListFilter::workspace("/work/project")).unwrap()), [parent.as_str()]);
    let mut newest = ListFilter::default();
    newest.limit = Some(1);
    assert_eq!(ids(&store.list(&newest).unwrap()), [parent.as_str()], "the newest top-level session");
    assert_eq!(store.list(&ListFilter::default().with_children()).unwrap().len(), 3);
}

#[tokio::test]
async fn children_lists_the_direct_children_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let parent = run(store.new_session(), "delegate three things").await;
    let first = child(&store, &parent, "call_a").await;
    let second = child(&store, &parent, "call_b").await;
    let grandchild = child(&store, &first, "call_c").await;
    let third = child(&store, &parent, "call_d").await;
    run(store.new_session(), "unrelated").await;

    let children = store.children(&parent).unwrap();
    assert_eq!(ids(&children), [first.as_str(), second.as_str(), third.as_str()], "direct children only");
    let calls: Vec<&str> = children.iter().map(|c| link(c).unwrap().1).collect();
    assert_eq!(calls, ["call_a", "call_b", "call_d"]);
    assert_eq!(ids(&store.children(&first).unwrap()), [grandchild.as_str()]);
    assert!(store.children(&grandchild).unwrap().is_empty());
    assert!(store.children("no-such-session").unwrap().is_empty());
}

#[tokio::test]
async fn with_parent_on_a_resumed_session_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let other = run(store.new_session(), "another").await;
    let top = run(store.new_session(), "top level").await;
    let journal = store.open_session(&top).unwrap().with_parent(&other, "call_1");
    let mut session = Session::builder(ScriptedModel::new().answer("Again."))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
        .resume(journal)
        .await
        .unwrap();
    session.run("more", &mut Vec::new()).await.unwrap();
    drop(session);
    assert_eq!(link(&store.show(&top).unwrap().summary), None, "only a new session records a parent");
    assert!(store.children(&other).unwrap().is_empty());
}

#[tokio::test]
async fn a_grandchild_reads_its_ancestors_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let grandparent = run(store.new_session(), "top").await;
    let parent = child(&store, &grandparent, "call_1").await;
    let grandchild = child(&store, &parent, "call_2").await;
    let old = store.artifacts(&grandparent).put("the grandparent's output").await.unwrap();
    let middle = store.artifacts(&parent).put("the parent's output").await.unwrap();
    let own = store.artifacts(&grandchild).put("the grandchild's output").await.unwrap();
    drop(store);

    let store = Store::open(&path).unwrap();
    let reader = store.artifacts(&grandchild);
    assert_eq!(reader.get(&old).await.unwrap().as_deref(), Some("the grandparent's output"));
    assert_eq!(reader.get(&middle).await.unwrap().as_deref(), Some("the parent's output"));
    assert_eq!(reader.get(&own).await.unwrap().as_deref(), Some("the grandchild's output"));
    assert_eq!(reader.get("no-such-artifact").await.unwrap(), None);
    assert_eq!(
        store.artifacts(&parent).get(&old).await.unwrap().as_deref(),
        Some("the grandparent's output"),
        "a child reads its parent's"
    );
}

#[tokio::test]
async fn a_parent_does_not_read_its_childs_artifacts_nor_does_an_unrelated_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let grandparent = run(store.new_session(), "top").await;
    let parent = child(&store, &grandparent, "call_1").await;
    let kid = child(&store, &parent, "call_2").await;
    let sibling = child(&store, &parent, "call_3").await;
    let stranger = run(store.new_session(), "unrelated").await;
    let kept = store.artifacts(&kid).put("the child's output").await.unwrap();
    let top = store.artifacts(&grandparent).put("the top's output").await.unwrap();

    assert_eq!(store.artifacts(&kid).get(&kept).await.unwrap().as_deref(), Some("the child's output"));
    assert_eq!(store.artifacts(&parent).get(&kept).await.unwrap(), None, "not the parent");
    assert_eq!(store.artifacts(&grandparent).get(&kept).await.unwrap(), None, "nor the grandparent");
    assert_eq!(store.artifacts(&sibling).get(&kept).await.unwrap(), None, "nor a sibling");
    assert_eq!(store.artifacts(&stranger).get(&kept).await.unwrap(), None, "nor an unrelated session");
    assert_eq!(store.artifacts(&stranger).get(&top).await.unwrap(), None, "nor another family's top");
    assert_eq!(store.artifacts("never-written").get(&top).await.unwrap(), None);
}

#[tokio::test]
async fn parent_links_that_form_a_cycle_end_the_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let a = run(store.new_session(), "a").await;
    let b = child(&store, &a, "call_1").await;
    let kept = store.artifacts(&a).put("a's output").await.unwrap();
    // Only a hand-edited (or hand-made import) database links back.
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.execute("UPDATE sessions SET parent_session = ?1 WHERE id = ?2", [&b, &a]).unwrap();
    drop(connection);

    assert_eq!(store.artifacts(&b).get(&kept).await.unwrap().as_deref(), Some("a's output"));
    assert_eq!(store.artifacts(&b).get("no-such-artifact").await.unwrap(), None);
    assert_eq!(store.artifacts(&a).get("no-such-artifact").await.unwrap(), None);
    assert_eq!(store.list(&ListFilter::default().with_children()).unwrap().len(), 2);
}

#[tokio::test]
async fn deleting_a_parent_keeps_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let parent = run(store.new_session(), "delegate something").await;
    let kid = child(&store, &parent, "call_1").await;
    let grandchild = child(&store, &kid, "call_2").await;
    let inherited = store.artifacts(&parent).put("the parent's output").await.unwrap();
    let own = store.artifacts(&kid).put("the child's output").await.unwrap();

    store.delete(&parent).unwrap();
    let shown = store.show(&kid).unwrap();
    assert_eq!(link(&shown.summary), Some((parent.as_str(), "call_1")), "the link names the deleted parent");
    assert_eq!(shown.history.len(), 2, "the child's own history stays");
    // Its parent gone, the child is listed like a top-level session; its own
    // child still has a parent in the store.
    assert_eq!(ids(&store.list(&ListFilter::default()).unwrap()), [kid.as_str()]);
    let all = store.list(&ListFilter::default().with_children()).unwrap();
    assert_eq!(ids(&all), [grandchild.as_str(), kid.as_str()]);
    assert_eq!(link(&all[1]), Some((parent.as_str(), "call_1")));
    assert_eq!(ids(&store.children(&parent).unwrap()), [kid.as_str()], "children still name it");
    assert_eq!(store.artifacts(&kid).get(&own).await.unwrap().as_deref(), Some("the child's output"));
    assert_eq!(store.artifacts(&kid).get(&inherited).await.unwrap(), None, "deleted with the parent");
    assert_eq!(store.artifacts(&grandchild).get(&own).await.unwrap().as_deref(), Some("the child's output"));

    // The child resumes and can be deleted in its turn.
    let mut session = Session::builder(ScriptedModel::new().answer("Still here."))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
        .resume(store.open_session(&kid).unwrap())
        .await
        .unwrap();
    session.run("again", &mut Vec::new()).await.unwrap();
    drop(session);
    assert_eq!(store.show(&kid).unwrap().history.len(), 4);
    store.delete(&kid).unwrap();
    assert_eq!(link(&store.show(&grandchild).unwrap().summary), Some((kid.as_str(), "call_2")));
    assert_eq!(ids(&store.list(&ListFilter::default()).unwrap()), [grandchild.as_str()]);
}

#[tokio::test]
async fn export_and_import_keep_the_parent_link() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.db")).unwrap();
    let parent = run(store.new_session(), "delegate something").await;
    let kid = child(&store, &parent, "call_1").await;

    let mut exported = Vec::new();
    store.export(&kid, &mut exported).unwrap();
    let header: serde_json::Value =
        serde_json::from_str(std::str::from_utf8(&exported).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["session"]["parent_session"], parent.as_str());
    assert_eq!(header["session"]["parent_call"], "call_1");
    let mut top = Vec::new();
    store.export(&parent, &mut top).unwrap();
    let header: serde_json::Value =
        serde_json::from_str(std::str::from_utf8(&top).unwrap().lines().next().unwrap()).unwrap();
    let fields = header["session"].as_object().unwrap();
    assert!(!fields.contains_key("parent_session") && !fields.contains_key("parent_call"), "{fields:?}");

    // Into a database without the parent: the link is kept as data, and the
    // child is listed like a top-level session there.
    let other = Store::open(dir.path().join("other.db")).unwrap();
    assert_eq!(other.import(&mut exported.as_slice()).unwrap(), kid);
    assert_eq!(link(&other.show(&kid).unwrap().summary), Some((parent.as_str(), "call_1")));
    assert_eq!(ids(&other.list(&ListFilter::default()).unwrap()), [kid.as_str()]);
    let mut again = Vec::new();
    other.export(&kid, &mut again).unwrap();
    assert_eq!(again, exported, "byte for byte");

    // With its parent imported too, it is a child again.
    other.import(&mut top.as_slice()).unwrap();
    assert_eq!(ids(&other.list(&ListFilter::default()).unwrap()), [parent.as_str()]);
    assert_eq!(ids(&other.children(&parent).unwrap()), [kid.as_str()]);
}
