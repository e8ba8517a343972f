//! Migrations: applied once when several hosts start at once, and a
//! database newer than this build refused untouched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_store_pg::{PgError, PgStore, schema_version};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_starting_at_once_apply_each_step_once() {
    let Some(url) = support::database().await else { return };
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await })
        })
        .collect();
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let client = support::sql(&url).await;
    let versions = client.query("SELECT version FROM schema_version", &[]).await.unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].get::<_, i64>(0), schema_version());
}

#[tokio::test]
async fn a_newer_database_is_refused_untouched() {
    let Some(url) = support::database().await else { return };
    PgStore::connect(&url).await.unwrap();
    let client = support::sql(&url).await;
    let newer = schema_version() + 1;
    client.execute("UPDATE schema_version SET version = $1", &[&newer]).await.unwrap();
    let tables = || async {
        let rows = client
            .query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename", &[])
            .await
            .unwrap();
        rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>()
    };
    let before = tables().await;
    let error = PgStore::connect(&url).await.unwrap_err();
    match &error {
        PgError::NewerSchema { found, supported, .. } => {
            assert_eq!((*found, *supported), (newer, schema_version()));
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("upgrade bosun"), "{error}");
    assert_eq!(tables().await, before);
    let version: i64 = client.query_one("SELECT version FROM schema_version", &[]).await.unwrap().get(0);
    assert_eq!(version, newer);
}

/// A database shared with other programs: bosun's tables in a schema of
/// their own, named by the URL's `options`.
#[tokio::test]
async fn a_schema_of_its_own_is_named_in_the_url() {
    let Some(url) = support::database().await else { return };
    let client = support::sql(&url).await;
    // Not `bosun`: the tests' user is `bosun`, and `$user` comes first
    // in the default search path.
    client.batch_execute("CREATE SCHEMA agents").await.unwrap();
    let in_schema = format!("{url}?options=-c%20search_path%3Dagents");
    let store = PgStore::connect(&in_schema).await.unwrap();
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let mut session = bosun_core::Session::builder(bosun_testing::ScriptedModel::new().answer("hi"))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run("hello", &mut Vec::new()).await.unwrap();
    drop(session);
    let schemas = client
        .query("SELECT DISTINCT schemaname FROM pg_tables WHERE tablename = 'records'", &[])
        .await
        .unwrap();
    assert_eq!(schemas.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(), ["agents"]);
    assert_eq!(store.session(&id).await.unwrap().title.as_deref(), Some("hello"));
    // The same database without the schema is another, empty store.
    let public = PgStore::connect(&url).await.unwrap();
    assert!(public.session_ids().await.unwrap().is_empty());
}

#[tokio::test]
async fn tls_is_refused_rather_than_skipped() {
    let Some(url) = support::database().await else { return };
    let error = PgStore::connect(&format!("{url}?sslmode=require")).await.unwrap_err();
    assert!(matches!(error, PgError::Unavailable { .. }), "{error:?}");
}
