//! What a session remembers of how it ran (its model and the base URL the
//! user gave), and session ids named by a unique prefix
//! (`Store::resolve_id`), through a real SQLite file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{Session, WorkspaceIdentity};
use bosun_store::{MIN_ID_PREFIX, Store, StoreError};
use bosun_testing::ScriptedModel;

async fn one_turn(journal: bosun_store::StoreJournal) -> String {
    let id = journal.session_id().to_owned();
    let mut session = Session::builder(ScriptedModel::new().answer("Hello."))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run("hi", &mut Vec::new()).await.unwrap();
    drop(session);
    id
}

#[tokio::test]
async fn the_model_and_base_url_a_session_ran_with_are_stored_and_exported_never_imported() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("a.db")).unwrap();
    let journal =
        store.new_session().with_model_at("openai/gpt-test", Some("http://127.0.0.1:9/v1".to_owned()));
    let id = one_turn(journal).await;
    let summary = store.show(&id).unwrap().summary;
    assert_eq!(summary.model.as_deref(), Some("openai/gpt-test"));
    assert_eq!(summary.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));

    let mut export = Vec::new();
    store.export(&id, &mut export).unwrap();
    let other = Store::open(dir.path().join("b.db")).unwrap();
    assert!(String::from_utf8_lossy(&export).contains("\"base_url\":\"http://127.0.0.1:9/v1\""));
    // A file's base URL would be where the key goes: an import drops it.
    other.import(&mut export.as_slice()).unwrap();
    let imported = other.show(&id).unwrap().summary;
    assert_eq!((imported.model.as_deref(), imported.base_url), (Some("openai/gpt-test"), None));

    // Resumed on a model reached at its provider's own URL: both follow.
    let journal = store.open_session(&id).unwrap().with_model("anthropic/claude-test");
    let resumed = Session::builder(ScriptedModel::new().answer("Again."))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
        .resume(journal)
        .await;
    let mut resumed = resumed.unwrap();
    resumed.run("again", &mut Vec::new()).await.unwrap();
    drop(resumed);
    let summary = store.show(&id).unwrap().summary;
    assert_eq!(summary.model.as_deref(), Some("anthropic/claude-test"));
    assert_eq!(summary.base_url, None);
}

/// Adds a bare session row with `id` (enough for naming it).
fn row(store_path: &std::path::Path, id: &str) {
    let connection = rusqlite::Connection::open(store_path).unwrap();
    connection
        .execute(
            "INSERT INTO sessions (id, created_at, updated_at, authority, authority_digest, head_branch)
             VALUES (?1, 0, 0, '{}', '', 'b')",
            [id],
        )
        .unwrap();
}

#[test]
fn a_session_is_named_by_its_id_or_a_unique_prefix_of_at_least_8_characters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let one = "0190aaaa-1111-7000-8000-000000000001";
    let two = "0190aaaa-2222-7000-8000-000000000002";
    let three = "0190bbbb-3333-7000-8000-000000000003";
    for id in [one, two, three] {
        row(&path, id);
    }
    assert_eq!(MIN_ID_PREFIX, 8);
    assert_eq!(store.resolve_id(one).unwrap(), one);
    assert_eq!(store.resolve_id("0190aaaa-1").unwrap(), one);
    assert_eq!(store.resolve_id("0190bbbb").unwrap(), three);

    let ambiguous = store.resolve_id("0190aaaa").unwrap_err();
    assert!(matches!(&ambiguous, StoreError::Ambiguous { candidates, .. } if candidates == &[one, two]));
    let said = ambiguous.to_string();
    assert!(said.contains("ambiguous") && said.contains(one) && said.contains(two), "{said}");

    let short = store.resolve_id("0190bbb").unwrap_err();
    assert!(matches!(short, StoreError::ShortId { .. }), "{short}");
    assert!(short.to_string().contains("at least 8 characters"), "{short}");

    let none = store.resolve_id("0190cccc").unwrap_err();
    assert!(matches!(none, StoreError::NotFound { .. }), "{none}");
    // A prefix is not a pattern.
    assert!(matches!(store.resolve_id("0190%%%%").unwrap_err(), StoreError::NotFound { .. }));
}

#[test]
fn the_short_id_the_status_line_shows_names_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    // Made in the same minute: the same first 8 characters, told apart by
    // their last 8 (what the status line shows).
    let one = "0190aaaa-1111-7000-8000-00000000a001";
    let two = "0190aaaa-2222-7000-8000-00000000b002";
    for id in [one, two] {
        row(&path, id);
    }
    assert_eq!(store.resolve_id("0000a001").unwrap(), one);
    assert_eq!(store.resolve_id("0000b002").unwrap(), two);
    assert!(matches!(store.resolve_id("0190aaaa").unwrap_err(), StoreError::Ambiguous { .. }));
    // An ending shared by two is as ambiguous as a shared beginning.
    let three = "0190cccc-3333-7000-8000-00000000a001";
    row(&path, three);
    let both = store.resolve_id("0000a001").unwrap_err();
    assert!(
        matches!(&both, StoreError::Ambiguous { candidates, .. } if candidates == &[one, three]),
        "{both}"
    );
}
