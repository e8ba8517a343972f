//! Artifacts in the store: whole outputs kept in the database by session,
//! read back after the store is reopened, never across sessions, and
//! deleted with their session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bosun_core::artifacts::Artifacts;
use bosun_core::{Session, ToolCategory};
use bosun_store::Store;
use bosun_testing::{FnTool, ScriptedModel};
use serde_json::json;

#[tokio::test]
async fn a_long_output_is_kept_in_the_database_and_read_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let whole = "0123456789".repeat(20_000);
    let answer = whole.clone();
    let model = ScriptedModel::new().tool_call("dump", json!({})).answer("done");
    let mut session = Session::builder(model)
        .tool(FnTool::text("dump", ToolCategory::Read, move |_| answer.clone()))
        .artifacts(Arc::new(store.artifacts(&id)))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run("dump", &mut Vec::new()).await.unwrap();
    let shown = session.history()[2].text();
    let at = shown.find("kept as artifact ").unwrap() + "kept as artifact ".len();
    let artifact = shown[at..].split(';').next().unwrap().to_owned();
    drop(session);
    drop(store);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.artifacts(&id).get(&artifact).await.unwrap().as_deref(), Some(whole.as_str()));
    assert_eq!(store.artifacts("another-session").get(&artifact).await.unwrap(), None, "by session only");
    store.delete(&id).unwrap();
    assert_eq!(store.artifacts(&id).get(&artifact).await.unwrap(), None, "deleted with the session");
}
