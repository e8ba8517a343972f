//! A full disk on the server (SQLSTATE 53100): the journal says `Full`,
//! names the server, and keeps nothing of the failed write. The records
//! live in a tablespace on a 2 MiB tmpfs, mounted for a server of the
//! test's own in a private mount namespace (`support::server_with_small_disk`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{JournalErrorKind, Session, TurnErrorKind};
use bosun_store_pg::{PgError, PgStore};
use bosun_testing::ScriptedModel;

use crate::support;

/// `len` characters that do not compress (Postgres compresses large
/// values before storing them).
fn incompressible(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(ALPHABET[(state % 64) as usize])
        })
        .collect()
}

#[tokio::test]
async fn a_full_disk_is_full_and_keeps_nothing_of_the_failed_write() {
    let Some(server) = support::server_with_small_disk() else { return };
    let url = server.create_database().await;
    let store = PgStore::connect(&url).await.unwrap();
    let client = support::sql(&url).await;
    let small = server.dir().join("small");
    client.batch_execute(&format!("CREATE TABLESPACE small LOCATION '{}'", small.display())).await.unwrap();
    client.batch_execute("ALTER TABLE records SET TABLESPACE small").await.unwrap();

    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let model = ScriptedModel::new().answer("short").answer("never sent");
    let mut session = Session::builder(model).journal(journal).build().await.unwrap();
    session.run("a short prompt", &mut Vec::new()).await.unwrap();
    let before = store.records(&id).await.unwrap();
    let row_before = store.session(&id).await.unwrap();

    // A prompt larger than the disk: its record cannot be written.
    let error = session.run(incompressible(4 << 20), &mut Vec::new()).await.unwrap_err();
    let TurnErrorKind::Journal(journal_error) = &error.kind else { panic!("{error:?}") };
    assert_eq!(journal_error.kind(), JournalErrorKind::Full, "{journal_error:?}");
    let cause = journal_error.cause().downcast_ref::<PgError>().unwrap();
    assert!(matches!(cause, PgError::DiskFull { .. }), "{cause:?}");
    assert!(cause.is_storage_fault());
    let message = cause.to_string();
    assert!(message.contains("is full") && message.contains("127.0.0.1"), "{message}");

    // Nothing of the failed write: no record, the row as it was.
    assert_eq!(store.records(&id).await.unwrap(), before);
    let row_after = store.session(&id).await.unwrap();
    assert_eq!(
        (row_after.record_count, row_after.message_count),
        (row_before.record_count, row_before.message_count)
    );
    drop(session);

    // Space again: the session resumes and goes on.
    client.batch_execute("ALTER TABLE records SET TABLESPACE pg_default").await.unwrap();
    let journal = store.open_session(&id).await.unwrap();
    let mut resumed = Session::builder(ScriptedModel::new().answer("back")).resume(journal).await.unwrap();
    resumed.run("again", &mut Vec::new()).await.unwrap();
    assert_eq!(resumed.history().last().unwrap().text(), "back");
    drop(resumed);
    drop(server);
}
