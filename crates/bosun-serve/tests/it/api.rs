//! The API end to end: sessions created, driven and watched over HTTP, an
//! approval answered by a client, a reconnect mid-turn, a restart mid-turn
//! and a resume, and every request without the token refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use bosun_testing::Aimock;
use serde_json::{Value, json};

use crate::support::{Home, Served, is};

/// For tasks saying `word`: the model writes `file` (which asks in
/// `propose` mode), then answers `answer`.
fn write_then_answer(word: &str, file: &str, answer: &str) -> Vec<Value> {
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": file, "content": "written\n"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"content": answer}}),
    ]
}

fn mock(list: Vec<Value>) -> Option<Aimock> {
    Aimock::start(&json!({ "fixtures": list }))
}

fn answer_of(events: &[(u64, Value)]) -> String {
    events.iter().filter(|(_, e)| is(e, "text_delta")).map(|(_, e)| e["text"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_run_at_once_and_an_approval_is_answered_over_http() {
    let mut list = write_then_answer("write", "note.txt", "Wrote the note.");
    list.push(json!({"match": {"userMessage": "hello"}, "response": {"content": "Hello from B."}}));
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let (ws_a, ws_b) = (home.workspace("a"), home.workspace("b"));
    let a = served.create(&ws_a, "propose").await;
    let b = served.create(&ws_b, "propose").await;
    assert_ne!(a, b);

    // A's turn waits for its approval while B's runs to the end.
    assert_eq!(
        served.post(&format!("/v1/sessions/{a}/messages"), json!({"text": "write"})).await.1["queued"],
        false
    );
    let asked = served.events_until(&a, None, |e| is(e, "approval_requested")).await;
    assert_eq!(asked.last().unwrap().1["name"], "write_file");
    let (_, view) = served.get(&format!("/v1/sessions/{a}")).await;
    assert_eq!(view["state"], "running");
    served.post(&format!("/v1/sessions/{b}/messages"), json!({"text": "hello"})).await;
    let b_events = served.events_until(&b, None, |e| is(e, "result")).await;
    assert_eq!(answer_of(&b_events), "Hello from B.");
    assert!(!ws_a.join("note.txt").exists(), "nothing written before the approval");

    let (_, list) = served.get("/v1/sessions").await;
    let ids: BTreeSet<&str> =
        list["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from([a.as_str(), b.as_str()]));

    let pending = served.approvals().await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(
        (pending[0]["session_id"].as_str(), pending[0]["tool"].as_str()),
        (Some(a.as_str()), Some("write_file"))
    );
    let approval = pending[0]["id"].as_str().unwrap();
    let (status, body) = served.post(&format!("/v1/approvals/{approval}"), json!({"decision": "once"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = served.post(&format!("/v1/approvals/{approval}"), json!({"decision": "once"})).await;
    assert_eq!(status, 404, "an approval is answered once");

    let a_events = served.events_until(&a, None, |e| is(e, "result")).await;
    assert_eq!(answer_of(&a_events), "Wrote the note.");
    assert_eq!(std::fs::read_to_string(ws_a.join("note.txt")).unwrap(), "written\n");
    assert!(served.approvals().await.is_empty());
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_with_last_event_id_mid_turn_gets_exactly_what_it_missed() {
    let Some(mock) = mock(write_then_answer("write", "note.txt", "Done writing.")) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let id = served.create(&home.workspace("a"), "propose").await;
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "write"})).await;
    // Watch until the tool starts, and go away mid-turn.
    let first = served.events_until(&id, None, |e| is(e, "approval_requested")).await;
    let last_seen = first.last().unwrap().0;
    // Meanwhile the turn goes on.
    let approval = served.approvals().await[0]["id"].as_str().unwrap().to_owned();
    served.post(&format!("/v1/approvals/{approval}"), json!({"decision": "once"})).await;
    let rest = served.events_until(&id, Some(last_seen), |e| is(e, "result")).await;

    let mut seen: Vec<u64> = first.iter().chain(&rest).map(|(n, _)| *n).collect();
    let expected: Vec<u64> = (1..=seen.len() as u64).collect();
    assert_eq!(seen, expected, "numbered from 1, no gap, no duplicate");
    assert!(rest.iter().any(|(_, e)| is(e, "approval_decided")), "what happened while away is there");
    // A fresh reader from the start sees the very same events.
    let whole = served.events_until(&id, None, |e| is(e, "result")).await;
    seen.dedup();
    assert_eq!(whole.iter().map(|(n, _)| *n).collect::<Vec<_>>(), seen);
    let joined: Vec<&Value> = first.iter().chain(&rest).map(|(_, e)| e).collect();
    assert_eq!(whole.iter().map(|(_, e)| e).collect::<Vec<_>>(), joined);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_turn_cancels_it_and_the_session_resumes_with_its_events() {
    let mut list = write_then_answer("write", "note.txt", "unreachable");
    // The cancelled turn left nothing to answer: the next request holds no
    // assistant message.
    list.push(json!({"match": {"userMessage": "again", "turnIndex": 0}, "response": {"content": "Back after the restart."}}));
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let workspace = home.workspace("a");
    let served = Served::start(&home).await;
    let id = served.create(&workspace, "propose").await;
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "write"})).await;
    let before = served.events_until(&id, None, |e| is(e, "approval_requested")).await;
    served.stop().await;
    assert!(!workspace.join("note.txt").exists(), "the waiting call never ran");

    let served = Served::start(&home).await;
    let (status, _) = served.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 404, "a new server holds no session until asked");
    let (_, listed) = served.get("/v1/sessions?stored=true").await;
    let stored = &listed["sessions"][0];
    assert_eq!(
        (stored["id"].as_str(), stored["state"].as_str()),
        (Some(id.as_str()), Some("stored")),
        "{listed}"
    );
    let (status, view) = served.post(&format!("/v1/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!((view["id"].as_str(), view["state"].as_str()), (Some(id.as_str()), Some("idle")));
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "again"})).await;
    let all = served.events_until(&id, None, |e| is(e, "result") && e["outcome"] != "cancelled").await;
    let numbers: Vec<u64> = all.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>(), "one numbering across the restart");
    assert_eq!(all[..before.len()], before[..], "the events before the restart are kept");
    let cancelled = all.iter().find(|(_, e)| is(e, "result")).unwrap();
    assert_eq!(cancelled.1["outcome"], "cancelled", "the shutdown cancelled the waiting turn");
    let last = &all.last().unwrap().1;
    assert_eq!(
        (&last["outcome"], &last["answer"]),
        (&json!("completed"), &json!("Back after the restart.")),
        "{last}"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_request_without_the_token_is_refused_and_the_page_is_open_under_a_strict_policy() {
    let Some(mock) = mock(Vec::new()) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let client = served.anonymous();
    let routes = [
        ("GET", "/v1/sessions"),
        ("POST", "/v1/sessions"),
        ("GET", "/v1/sessions/x"),
        ("POST", "/v1/sessions/x/messages"),
        ("POST", "/v1/sessions/x/steer"),
        ("POST", "/v1/sessions/x/cancel"),
        ("GET", "/v1/sessions/x/events"),
        ("GET", "/v1/approvals"),
        ("POST", "/v1/approvals/x"),
        ("GET", "/openapi.json"),
    ];
    for (method, path) in routes {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let url = format!("{}{path}", served.url);
        let none = client.request(method.clone(), &url).json(&json!({"text": "x"})).send().await.unwrap();
        assert_eq!(none.status(), 401, "{path} without a token");
        let wrong = client.request(method, &url).bearer_auth("not-the-token-at-all").send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{path} with a wrong token");
    }
    let page = client.get(format!("{}/", served.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-security-policy"], bosun_serve::CSP);
    assert!(page.headers().get("access-control-allow-origin").is_none(), "no CORS unless configured");
    // Bodies are bounded.
    let (status, _) =
        served.post("/v1/sessions", json!({"workspace": "x".repeat(2 * bosun_serve::MAX_BODY_BYTES)})).await;
    assert_eq!(status, 413);
    served.stop().await;
}

#[tokio::test]
async fn the_openapi_document_names_every_route() {
    let Some(mock) = mock(Vec::new()) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let (status, doc) = served.get("/openapi.json").await;
    assert_eq!(status, 200);
    let paths: BTreeSet<&str> = doc["paths"].as_object().unwrap().keys().map(String::as_str).collect();
    for path in [
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/sessions/{id}/messages",
        "/v1/sessions/{id}/steer",
        "/v1/sessions/{id}/cancel",
        "/v1/sessions/{id}/resume",
        "/v1/sessions/{id}/fork",
        "/v1/sessions/{id}/events",
        "/v1/approvals",
        "/v1/approvals/{id}",
    ] {
        assert!(paths.contains(path), "{path} missing from {paths:?}");
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object(), "{}", doc["components"]);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_reaches_the_running_turn_and_a_message_sent_meanwhile_waits_as_a_follow_up() {
    let list = vec![
        json!({"match": {"userMessage": "write", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "written\n"}}]}}),
        // The steering message is the newest user message of the next request.
        json!({"match": {"userMessage": "also say hi", "turnIndex": 1}, "response": {"content": "Written, and hi."}}),
        json!({"match": {"userMessage": "then stop", "turnIndex": 2}, "response": {"content": "Stopped."}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let id = served.create(&home.workspace("a"), "propose").await;
    let (status, _) = served.post(&format!("/v1/sessions/{id}/steer"), json!({"text": "x"})).await;
    assert_eq!(status, 409, "no turn to steer");
    let (status, _) = served.post(&format!("/v1/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 409, "no turn to cancel");

    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "write"})).await;
    served.events_until(&id, None, |e| is(e, "approval_requested")).await;
    let (status, _) = served.post(&format!("/v1/sessions/{id}/steer"), json!({"text": "also say hi"})).await;
    assert_eq!(status, 202);
    let (status, sent) =
        served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "then stop"})).await;
    assert_eq!((status, &sent["queued"]), (202, &json!(true)));
    let approval = served.approvals().await[0]["id"].as_str().unwrap().to_owned();
    served.post(&format!("/v1/approvals/{approval}"), json!({"decision": "once"})).await;

    // The follow-up runs as its own turn right after, in the same run.
    let events = served.events_until(&id, None, |e| is(e, "result")).await;
    let texts: Vec<&Value> =
        events.iter().filter(|(_, e)| is(e, "text_delta")).map(|(_, e)| &e["text"]).collect();
    assert_eq!(texts, [&json!("Written, and hi."), &json!("Stopped.")]);
    let turns = events.iter().filter(|(_, e)| is(e, "turn_end") && e["outcome"] == "completed").count();
    assert_eq!(turns, 2);
    assert_eq!(events.last().unwrap().1["answer"], "Stopped.");
    let asked: Vec<(&Value, &Value)> =
        events.iter().filter(|(_, e)| is(e, "user_message")).map(|(_, e)| (&e["kind"], &e["text"])).collect();
    assert_eq!(
        asked,
        [
            (&json!("task"), &json!("write")),
            (&json!("steer"), &json!("also say hi")),
            (&json!("follow_up"), &json!("then stop"))
        ]
    );
    let (_, view) = served.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(view["state"], "idle");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_turn_and_withdraws_its_approval() {
    let Some(mock) = mock(write_then_answer("write", "note.txt", "unreachable")) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let workspace = home.workspace("a");
    let id = served.create(&workspace, "propose").await;
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "write"})).await;
    served.events_until(&id, None, |e| is(e, "approval_requested")).await;
    assert_eq!(served.approvals().await.len(), 1);
    let (status, _) = served.post(&format!("/v1/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 202);
    let events = served.events_until(&id, None, |e| is(e, "result")).await;
    assert_eq!(events.last().unwrap().1["outcome"], "cancelled");
    assert!(served.approvals().await.is_empty(), "the cancelled turn's approval is gone");
    assert!(!workspace.join("note.txt").exists());
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_the_session_and_its_events() {
    let list = vec![json!({"match": {"userMessage": "hello"}, "response": {"content": "Hi."}})];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let id = served.create(&home.workspace("a"), "propose").await;
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "hello"})).await;
    served.events_until(&id, None, |e| is(e, "result")).await;
    // A watcher of the session sees its stream end when it is deleted.
    let watching = {
        let url = format!("{}/v1/sessions/{id}/events", served.url);
        let response = served.anonymous().get(url).bearer_auth(crate::support::TOKEN).send().await.unwrap();
        tokio::spawn(async move { response.text().await.unwrap() })
    };
    assert_eq!(served.delete(&format!("/v1/sessions/{id}")).await, 204);
    let seen =
        tokio::time::timeout(crate::support::DEADLINE, watching).await.expect("the stream ends").unwrap();
    assert!(seen.contains("\"type\":\"result\""), "it got everything first: {seen}");
    assert_eq!(served.get(&format!("/v1/sessions/{id}")).await.0, 404);
    assert_eq!(served.delete(&format!("/v1/sessions/{id}")).await, 404);
    let store = home.store();
    assert!(store.show(&id).is_err(), "gone from the store");
    assert!(store.events_after(&id, 0, 10).unwrap().is_empty());
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_store_never_run_the_same_session_at_once() {
    let list = vec![json!({"match": {"userMessage": "hello"}, "response": {"content": "Hi."}})];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let first = Served::start(&home).await;
    let second = Served::start(&home).await;
    let id = first.create(&home.workspace("a"), "propose").await;
    let (status, body) = second.post(&format!("/v1/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 409, "{body}");
    first.stop().await;
    let (status, body) = second.post(&format!("/v1/sessions/{id}/resume"), json!({})).await;
    assert_eq!(status, 200, "once the first let go: {body}");
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_goes_on_from_an_earlier_answer_and_keeps_the_old_branch() {
    let list = vec![
        json!({"match": {"userMessage": "first", "turnIndex": 0}, "response": {"content": "One."}}),
        json!({"match": {"userMessage": "second", "turnIndex": 1}, "response": {"content": "Two."}}),
        // After the fork at "One.", the request holds one assistant message.
        json!({"match": {"userMessage": "branch", "turnIndex": 1}, "response": {"content": "From the fork."}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock);
    let served = Served::start(&home).await;
    let id = served.create(&home.workspace("a"), "propose").await;
    for (n, text) in ["first", "second"].iter().enumerate() {
        served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": text})).await;
        let mut seen = 0;
        served
            .events_until(&id, None, |e| {
                seen += usize::from(is(e, "result"));
                seen == n + 1
            })
            .await;
    }
    let detail = home.store().show(&id).unwrap();
    let first_answer = detail.history.iter().find(|(_, m)| m.text() == "One.").unwrap().0;
    let (status, forked) = served.post(&format!("/v1/sessions/{id}/fork"), json!({"at": first_answer})).await;
    assert_eq!(status, 200, "{forked}");
    assert_eq!(forked["session"]["id"], id.as_str());
    served.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "branch"})).await;
    let events = served.events_until(&id, None, |e| is(e, "result") && e["answer"] == "From the fork.").await;
    assert_eq!(events.last().unwrap().1["outcome"], "completed");
    let branches = home.store().show(&id).unwrap().branches;
    assert_eq!(branches.len(), 2, "the old branch stays");
    served.stop().await;
}

#[tokio::test]
async fn with_allowed_roots_a_workspace_elsewhere_is_refused() {
    let Some(mock) = mock(Vec::new()) else { return };
    let home = Home::new(&mock);
    let (inside, outside) = (home.workspace("in"), home.workspace("out"));
    let root = inside.canonicalize().unwrap();
    let served = Served::start_with(&home, |options| options.allowed_roots = Some(vec![root])).await;
    let (status, body) =
        served.post("/v1/sessions", json!({"workspace": outside.display().to_string()})).await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("not under a folder the user allowed"), "{body}");
    let sneaky = format!("{}/../out", inside.display());
    let (status, _) = served.post("/v1/sessions", json!({"workspace": sneaky})).await;
    assert_eq!(status, 400, "`..` does not lead out");
    served.create(&inside, "propose").await;
    served.stop().await;
}
