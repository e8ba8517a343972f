//! The Postgres store as a journal: a session written through
//! `bosun_core::Session`, resumed in a new connection, and the journal's
//! rules on order, retries and damage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{
    Journal, JournalErrorKind, JournalRecord, Message, Session, ToolCategory, TurnRecordOutcome,
    WorkspaceIdentity,
};
use bosun_store_pg::{PgError, PgStore};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

use crate::support;

fn model() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})))
        .answer("It says hello.")
        .answer("You're welcome.")
}

fn builder(model: ScriptedModel) -> bosun_core::SessionBuilder {
    Session::builder(model)
        .tool(FnTool::text("read", ToolCategory::Read, |_| "hello".into()))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 2))
}

#[tokio::test]
async fn invariant_15_a_session_resumes_from_postgres_in_a_new_connection() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let journal = store
        .new_session()
        .await
        .unwrap()
        .with_model_at("openai/gpt-4o", Some("http://127.0.0.1:9/v1".into()))
        .with_effort(Some("high".into()))
        .with_parent("parent-session", "call-1");
    let id = journal.session_id().to_owned();
    let mut session = builder(model()).system_prompt("be brief").journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut Vec::new()).await.unwrap();
    session.run("thanks", &mut Vec::new()).await.unwrap();
    let history = session.history().to_vec();
    assert_eq!(history.len(), 6);
    drop(session);
    drop(store);

    let store = PgStore::connect(&url).await.unwrap();
    let journal = store.open_session(&id).await.unwrap();
    let mut resumed = builder(ScriptedModel::new().answer("Still here.")).resume(journal).await.unwrap();
    assert_eq!(resumed.history(), history.as_slice());
    assert_eq!(resumed.system_prompt(), Some("be brief"));
    resumed.run("still there?", &mut Vec::new()).await.unwrap();
    assert_eq!(resumed.history().last().unwrap().text(), "Still here.");
    let history = resumed.history().to_vec();
    drop(resumed);

    let shown = store.session(&id).await.unwrap();
    assert_eq!(shown.title.as_deref(), Some("What does a say?"));
    assert_eq!(shown.workspace.as_deref(), Some("/work/project"));
    assert_eq!(shown.model.as_deref(), Some("openai/gpt-4o"));
    assert_eq!(shown.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(shown.effort.as_deref(), Some("high"));
    assert_eq!(shown.parent, Some(("parent-session".to_owned(), "call-1".to_owned())));
    let records = store.records(&id).await.unwrap();
    assert_eq!(shown.record_count, records.len() as i64);
    assert_eq!(shown.message_count, history.len() as i64);
    assert!(matches!(records[0], JournalRecord::SessionStarted { .. }));
    let ended = records.iter().filter(|r| matches!(r, JournalRecord::TurnEnded { .. })).count();
    assert_eq!(ended, 3);
    assert_eq!(store.session_ids().await.unwrap(), std::slice::from_ref(&id));
    assert_eq!(store.list(None, 10).await.unwrap(), std::slice::from_ref(&shown));
    assert_eq!(store.list(Some("/work/project"), 10).await.unwrap().len(), 1);
    assert!(store.list(Some("/elsewhere"), 10).await.unwrap().is_empty());
    // A third connection reads what the second wrote.
    let third = PgStore::connect(&url).await.unwrap();
    let again = builder(ScriptedModel::new()).resume(third.open_session(&id).await.unwrap()).await.unwrap();
    assert_eq!(again.history(), history.as_slice());
}

/// The first record of a session is `session_started`; a record the
/// stored log already holds at that number is written once if it is the
/// same (a retry) and refused if it differs; nothing is written then.
#[tokio::test]
async fn out_of_order_records_are_refused_and_a_retry_is_written_once() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let mut journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let turn = JournalRecord::TurnStarted { turn: 1, message: Message::user("hi"), queued: vec![] };
    let error = journal.append(&turn).await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::OutOfOrder, "{error}");
    assert!(error.to_string().contains("session_started"), "{error}");
    assert!(matches!(store.session(&id).await, Err(PgError::NotFound { .. })));

    // A real session's records, then one replayed as a retry.
    let mut session = builder(model()).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut Vec::new()).await.unwrap();
    drop(session);
    let records = store.records(&id).await.unwrap();
    let count = records.len();
    let mut journal = store.open_session(&id).await.unwrap();
    // Opened at the stored end: the next number is `count`.
    let ended = JournalRecord::TurnEnded {
        turn: 2,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    journal.append(&ended).await.unwrap();
    assert_eq!(store.records(&id).await.unwrap().len(), count + 1);
    // `load` sets the next number to the end again; a journal that thinks
    // it is behind finds the stored record: same contents, written once.
    let client = support::sql(&url).await;
    client
        .execute("DELETE FROM records WHERE session_id = $1 AND seq = $2", &[&id, &(count as i64)])
        .await
        .unwrap();
    client
        .execute("UPDATE sessions SET record_count = record_count - 1 WHERE id = $1", &[&id])
        .await
        .unwrap();
    let loaded = journal.load().await.unwrap();
    assert_eq!(loaded.len(), count);
    journal.append(&ended).await.unwrap();
    // Another journal of the same holder would find it stored: simulate a
    // retry whose first commit landed by writing the row behind its back.
    let retry = JournalRecord::TurnEnded {
        turn: 3,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    let body = serde_json::to_string(&retry).unwrap();
    client
        .execute(
            "INSERT INTO records (session_id, seq, kind, body) VALUES ($1, $2, 'turn_ended', $3)",
            &[&id, &(count as i64 + 1), &body],
        )
        .await
        .unwrap();
    client
        .execute("UPDATE sessions SET record_count = record_count + 1 WHERE id = $1", &[&id])
        .await
        .unwrap();
    journal.append(&retry).await.unwrap();
    assert_eq!(store.records(&id).await.unwrap().len(), count + 2, "the retry was written once");
    // The same number with other contents: refused, nothing written.
    let other = JournalRecord::TurnEnded {
        turn: 9,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    let body = serde_json::to_string(&other).unwrap();
    client
        .execute(
            "INSERT INTO records (session_id, seq, kind, body) VALUES ($1, $2, 'turn_ended', $3)",
            &[&id, &(count as i64 + 2), &body],
        )
        .await
        .unwrap();
    client
        .execute("UPDATE sessions SET record_count = record_count + 1 WHERE id = $1", &[&id])
        .await
        .unwrap();
    let error = journal.append(&retry).await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::OutOfOrder, "{error}");
    let stored = store.records(&id).await.unwrap();
    assert_eq!(stored.len(), count + 3);
    assert_eq!(stored.last(), Some(&other));
    // A second session_started is out of order too.
    journal.load().await.unwrap();
    let started = records[0].clone();
    let error = journal.append(&started).await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::OutOfOrder, "{error}");
}

#[tokio::test]
async fn a_stored_record_that_does_not_parse_is_corrupt() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let mut session = builder(model()).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut Vec::new()).await.unwrap();
    drop(session);
    let client = support::sql(&url).await;
    client
        .execute(
            "UPDATE records SET body = '{\"record\":\"no_such_record\"}' WHERE session_id = $1 AND seq = 2",
            &[&id],
        )
        .await
        .unwrap();
    let error =
        builder(ScriptedModel::new()).resume(store.open_session(&id).await.unwrap()).await.unwrap_err();
    let text = format!("{error:?}");
    assert!(text.contains("Corrupt") && text.contains("record 2"), "{text}");
    let mut journal = store.open_session(&id).await.unwrap();
    let error = journal.load().await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::Corrupt, "{error}");
    assert!(matches!(error.cause().downcast_ref::<PgError>(), Some(PgError::Corrupt { .. })), "{error:?}");
}

#[tokio::test]
async fn a_lost_server_is_unavailable_and_the_journal_connects_again() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let mut session = builder(model()).journal(journal).build().await.unwrap();
    session.run("What does a say?", &mut Vec::new()).await.unwrap();
    drop(session);
    let mut journal = store.open_session(&id).await.unwrap();
    journal.load().await.unwrap();
    // Every connection but this one is ended, as a server restart would.
    let client = support::sql(&url).await;
    client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    // pg_terminate_backend only signals: wait until the backends are gone,
    // so the append below meets a connection that is surely dead.
    support::eventually(std::time::Duration::from_secs(30), "the other backends end", || async {
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, i64>(0) == 0
    })
    .await;
    let ended = JournalRecord::TurnEnded {
        turn: 2,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    let mut kinds = Vec::new();
    // The first append finds the connection gone; the next reconnects.
    for _ in 0..2 {
        match journal.append(&ended).await {
            Ok(()) => break,
            Err(error) => {
                eprintln!("{error:?}");
                kinds.push(error.kind())
            }
        }
    }
    assert!(kinds.iter().all(|k| *k == JournalErrorKind::Unavailable), "{kinds:?}");
    assert!(kinds.len() <= 1, "{kinds:?}");
    assert_eq!(store.records(&id).await.unwrap().last(), Some(&ended));
}

#[tokio::test]
async fn a_missing_server_is_unavailable_and_the_password_is_never_shown() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://bosun:s3cret@127.0.0.1:{port}/bosun?connect_timeout=5");
    let error = PgStore::connect(&url).await.unwrap_err();
    assert!(matches!(error, PgError::Unavailable { .. }), "{error:?}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("bosun:***@127.0.0.1"), "{shown}");
    let Some(url) = support::database().await else { return };
    let with_password = url.replace("bosun@", "bosun:s3cret@");
    let store = PgStore::connect(&with_password).await.unwrap();
    let shown = format!("{store:?} {}", store.url());
    assert!(!shown.contains("s3cret"), "{shown}");
    let journal = store.new_session().await.unwrap();
    assert!(!format!("{journal:?}").contains("s3cret"));
}

#[tokio::test]
async fn a_session_id_resolves_from_a_part_of_it() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let journal = store.new_session().await.unwrap();
        ids.push(journal.session_id().to_owned());
        let mut session =
            Session::builder(ScriptedModel::new().answer("hi")).journal(journal).build().await.unwrap();
        session.run("hello", &mut Vec::new()).await.unwrap();
    }
    let id = &ids[0];
    assert_eq!(&store.resolve_id(id).await.unwrap(), id);
    assert_eq!(&store.resolve_id(&id[id.len() - 8..]).await.unwrap(), id);
    assert!(matches!(store.resolve_id(&id[..4]).await, Err(PgError::ShortId { .. })));
    // UUIDv7 ids made a moment apart share their first 8 characters.
    assert!(matches!(store.resolve_id(&id[..8]).await, Err(PgError::Ambiguous { .. })));
    assert!(matches!(store.resolve_id("ffffffff-none").await, Err(PgError::NotFound { .. })));
}

/// The session row counts messages and usage as the SQLite store does: a
/// rolled-back turn's prompt names the session but is not counted, what
/// every round used is.
#[tokio::test]
async fn invariant_21_the_row_counts_history_and_usage_and_a_failed_prompt_names_the_session() {
    use bosun_core::{ModelError, Usage};
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let model = ScriptedModel::new()
        .reply(Reply::new().error(ModelError::Server("boom".into())))
        .reply(Reply::new().text("Looking.").tool_call("read", json!({"path": "a"})).usage(Usage::new(10, 2)))
        .reply(Reply::new().text("It says hello.").usage(Usage::new(20, 3)))
        .reply(Reply::new().error(ModelError::Server("boom again".into())));
    let mut session = builder(model).journal(journal).build().await.unwrap();
    session.run("first prompt", &mut Vec::new()).await.unwrap_err();
    let row = store.session(&id).await.unwrap();
    assert_eq!(row.title.as_deref(), Some("first prompt"), "the first prompt, though its turn failed");
    assert_eq!(row.message_count, 0);

    session.run("second prompt", &mut Vec::new()).await.unwrap();
    session.run("third prompt", &mut Vec::new()).await.unwrap_err();
    let history = session.history().to_vec();
    drop(session);
    let row = store.session(&id).await.unwrap();
    assert_eq!(row.message_count, history.len() as i64);
    assert_eq!(row.message_count, 4);
    assert_eq!(row.usage, Usage::new(30, 5));
    assert_eq!(row.spend.total().usage, Usage::new(30, 5));
    assert_eq!(row.title.as_deref(), Some("first prompt"));

    let resumed = builder(ScriptedModel::new()).resume(store.open_session(&id).await.unwrap()).await.unwrap();
    assert_eq!(resumed.history(), history.as_slice());
    assert_eq!(resumed.interrupted_prompt(), Some(&Message::user("third prompt")));
}
