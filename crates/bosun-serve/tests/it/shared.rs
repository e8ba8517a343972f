//! `bosun serve` on a Postgres store several servers share (`store_url`):
//! a session one server started is listed, resumed and streamed by
//! another, never run by two at once, its events numbered once across
//! both. Postgres is a real server from Debian's package, started by the
//! tests (`bosun_testing::postgres`); each host has a home and a local file
//! of its own, as two machines would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_store_pg::PgStore;
use bosun_testing::Aimock;
use serde_json::{Value, json};

use crate::support::process::{Dirs, Serve};
use crate::support::{Home, Served, is};

fn mock() -> Option<Aimock> {
    Aimock::start(&json!({ "fixtures": [
        {"match": {"userMessage": "hello"}, "response": {"content": "Hi."}},
        {"match": {"userMessage": "again"}, "response": {"content": "Hi again, from the other host."}},
    ]}))
}

fn answers(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .filter(|(_, e)| is(e, "result"))
        .map(|(_, e)| e["answer"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_share_a_session_and_never_run_it_at_once() {
    let Some(url) = bosun_testing::postgres::database().await else { return };
    let Some(mock) = mock() else { return };
    let (one, two) = (Home::new(&mock), Home::new(&mock));
    let workspace = one.workspace("a");
    let (shared_one, shared_two) =
        (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let first = Served::start_with(&one, |options| options.shared = Some(shared_one)).await;
    let second = Served::start_with(&two, |options| options.shared = Some(shared_two)).await;

    let id = first.create(&workspace, "propose").await;
    first.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "hello"})).await;
    let before = first.events_until(&id, None, |e| is(e, "result")).await;
    assert_eq!(answers(&before), ["Hi."]);

    // The other host lists it from the database; its own file has none.
    let (_, listed) = second.get("/v1/sessions?stored=true").await;
    let stored = listed["sessions"].as_array().unwrap();
    assert!(stored.iter().any(|s| s["id"] == id.as_str() && s["state"] == "stored"), "{listed}");
    assert!(
        two.store().list(&Default::default()).unwrap().is_empty(),
        "the journal is not in the local file"
    );

    let (status, body) = second.post(&format!("/v1/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 409, "the first server holds the session's lease: {body}");
    first.stop().await;
    let (status, body) = second.post(&format!("/v1/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 200, "once the first let go: {body}");

    second.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "again"})).await;
    let all = second.events_until(&id, None, |e| is(e, "result") && e["answer"] != "Hi.").await;
    let numbers: Vec<u64> = all.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>(), "one numbering across the hosts");
    assert_eq!(all[..before.len()], before[..], "the first host's events, from the database");
    assert_eq!(answers(&all), ["Hi.", "Hi again, from the other host."]);
    // The second turn's request carried the first turn's history.
    let journal = PgStore::connect(&url).await.unwrap().records(&id).await.unwrap();
    let text = serde_json::to_string(&journal).unwrap();
    assert!(text.contains("Hi.") && text.contains("Hi again, from the other host."));
    second.stop().await;
}

/// The real binary: `BOSUN_STORE_URL` is read, the shared store opened,
/// and a session created over HTTP is written to the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bosun_serve_keeps_sessions_in_the_database_its_store_url_names() {
    let Some(url) = bosun_testing::postgres::database().await else { return };
    let Some(mock) = mock() else { return };
    let dirs = Dirs::new(&mock);
    let serve = Serve::start_with_env(&dirs, &[("BOSUN_STORE_URL", &url)]);
    bosun_providers::tls::install_default_provider();
    let base = serve.url.split('#').next().unwrap().trim_end_matches('/').to_owned();
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(crate::support::process::TOKEN)
        .json(&json!({"workspace": dirs.ws().display().to_string(), "mode": "propose"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap_or_else(|| panic!("{created}"));
    let listed = PgStore::connect(&url).await.unwrap().list(None, 10).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [id]);
}
