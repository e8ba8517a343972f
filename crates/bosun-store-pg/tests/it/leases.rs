//! Leases across hosts: two `PgStore`s stand for two hosts (each its own
//! connections and host name). One runs a session at a time; the other is
//! refused naming the holder, takes the session over once the holder's
//! lease expired, and the old holder then writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use bosun_core::{Journal, JournalErrorKind, JournalRecord, Session, TurnRecordOutcome};
use bosun_store_pg::{LeaseSettings, PgError, PgStore};
use bosun_testing::ScriptedModel;

use crate::support;

/// A host whose heartbeat never comes in a test's time: its lease only
/// ends when the test expires it.
fn host(name: &str) -> LeaseSettings {
    LeaseSettings::default().with_host(name).with_timing(Duration::from_secs(15), Duration::from_secs(3600))
}

async fn started(store: &PgStore) -> (String, Session) {
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let mut session = Session::builder(ScriptedModel::new().answer("one").answer("two"))
        .journal(journal)
        .build()
        .await
        .unwrap();
    session.run("first", &mut Vec::new()).await.unwrap();
    (id, session)
}

/// Expires `session`'s lease now, by the database's clock.
async fn expire(url: &str, session: &str) {
    let client = support::sql(url).await;
    let expired = client
        .execute(
            "UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE session_id = $1",
            &[&session],
        )
        .await
        .unwrap();
    assert_eq!(expired, 1);
}

#[tokio::test]
async fn two_hosts_never_run_the_same_session_at_once() {
    let Some(url) = support::database().await else { return };
    let a = PgStore::connect_with(&url, host("host-a")).await.unwrap();
    let b = PgStore::connect_with(&url, host("host-b")).await.unwrap();
    let (id, mut on_a) = started(&a).await;

    // B is refused while A holds it, naming A.
    let refused = b.open_session(&id).await.unwrap_err();
    match &refused {
        PgError::Leased { session, host, pid, expires_in_ms } => {
            assert_eq!(session, &id);
            assert_eq!(host, "host-a");
            assert_eq!(*pid, i64::from(std::process::id()));
            assert!(*expires_in_ms > 0 && *expires_in_ms <= 15_000, "{expires_in_ms}");
        }
        other => panic!("{other:?}"),
    }
    assert!(refused.to_string().contains("host-a"), "{refused}");
    // So is deleting it.
    assert!(matches!(b.delete(&id).await, Err(PgError::Leased { .. })));

    // A stops renewing (paused, cut off); its lease runs out.
    expire(&url, &id).await;
    let records_before = a.records(&id).await.unwrap();
    let taken = b.open_session(&id).await.unwrap();
    let mut on_b = Session::builder(ScriptedModel::new().answer("from b")).resume(taken).await.unwrap();

    // A's next append fails as Unavailable, and A writes nothing.
    let error = on_a.run("second", &mut Vec::new()).await.unwrap_err();
    let text = format!("{error:?}");
    assert!(text.contains("Unavailable") && text.contains("LeaseLost"), "{text}");
    assert_eq!(a.records(&id).await.unwrap(), records_before, "the old holder wrote after losing the lease");

    // B goes on; A's session refuses further turns.
    on_b.run("from b?", &mut Vec::new()).await.unwrap();
    assert!(on_a.run("third", &mut Vec::new()).await.is_err());
    let after = b.records(&id).await.unwrap();
    assert!(after.len() > records_before.len());
    assert!(after.starts_with(&records_before));

    // Dropping A's journal does not release B's lease.
    drop(on_a);
    let refused = a.open_session(&id).await.unwrap_err();
    assert!(matches!(&refused, PgError::Leased { host, .. } if host == "host-b"), "{refused:?}");
    // Dropping B's does: A opens it at once.
    drop(on_b);
    let journal = a.open_session(&id).await.unwrap();
    drop(journal);
}

/// A raw journal that lost its lease refuses the append, whatever it is.
#[tokio::test]
async fn an_append_after_a_takeover_writes_nothing() {
    let Some(url) = support::database().await else { return };
    let a = PgStore::connect_with(&url, host("host-a")).await.unwrap();
    let b = PgStore::connect_with(&url, host("host-b")).await.unwrap();
    let (id, session) = started(&a).await;
    drop(session);
    let mut on_a = a.open_session(&id).await.unwrap();
    let count = on_a.load().await.unwrap().len();
    expire(&url, &id).await;
    // Expired but not yet taken over: refused all the same.
    let ended = JournalRecord::TurnEnded {
        turn: 2,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    let error = on_a.append(&ended).await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::Unavailable);
    assert!(matches!(error.cause().downcast_ref::<PgError>(), Some(PgError::LeaseLost { .. })), "{error:?}");
    let _on_b = b.open_session(&id).await.unwrap();
    let error = on_a.append(&ended).await.unwrap_err();
    assert_eq!(error.kind(), JournalErrorKind::Unavailable);
    assert_eq!(a.records(&id).await.unwrap().len(), count);
}

/// The heartbeat keeps a short lease alive well past its lifetime; the
/// expiry is the database's clock's.
#[tokio::test]
async fn the_heartbeat_renews_the_lease() {
    let Some(url) = support::database().await else { return };
    let short = LeaseSettings::default()
        .with_host("host-a")
        .with_timing(Duration::from_secs(3), Duration::from_millis(100));
    let a = PgStore::connect_with(&url, short).await.unwrap();
    let b = PgStore::connect_with(&url, host("host-b")).await.unwrap();
    let (id, session) = started(&a).await;
    let client = support::sql(&url).await;
    let expires = || async {
        let row =
            client.query_one("SELECT expires_at FROM leases WHERE session_id = $1", &[&id]).await.unwrap();
        row.get::<_, SystemTime>(0)
    };
    let first = expires().await;
    // Renewed again and again: the expiry moves forward past the first one
    // by more than a lifetime.
    support::eventually(Duration::from_secs(20), "the lease renewed past its first lifetime", || async {
        expires().await > first + Duration::from_millis(3100)
    })
    .await;
    assert!(matches!(b.open_session(&id).await, Err(PgError::Leased { .. })));
    drop(session);
    // Released on drop: the row is gone.
    let rows = client.query("SELECT 1 FROM leases WHERE session_id = $1", &[&id]).await.unwrap();
    assert!(rows.is_empty());
    b.open_session(&id).await.unwrap();
}

/// A lease left by a process of this machine that died is taken over at
/// once, without waiting for it to expire (the crash harness relies on it).
#[tokio::test]
async fn a_dead_holder_on_this_machine_is_taken_over_at_once() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    let (id, session) = started(&store).await;
    drop(session);
    // A process that ran and ended: its pid is free.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = i64::from(child.id());
    child.wait().unwrap();
    let client = support::sql(&url).await;
    // This machine as leases name it: its boot and this pid namespace.
    let boot = format!(
        "{} {}",
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim(),
        std::fs::read_link("/proc/self/ns/pid").unwrap().display()
    );
    client
        .execute(
            "INSERT INTO leases (session_id, host, boot_id, pid, token, acquired_at, expires_at)
             VALUES ($1, $2, $3, $4, 'gone', clock_timestamp(), clock_timestamp() + interval '1 hour')",
            &[&id, &store.lease_settings().host, &boot, &dead],
        )
        .await
        .unwrap();
    let journal = store.open_session(&id).await.unwrap();
    drop(journal);
    // The same row naming another machine waits for its expiry.
    client
        .execute(
            "INSERT INTO leases (session_id, host, boot_id, pid, token, acquired_at, expires_at)
             VALUES ($1, 'elsewhere', $2, $3, 'gone', clock_timestamp(), clock_timestamp() + interval '1 hour')",
            &[&id, &boot, &dead],
        )
        .await
        .unwrap();
    assert!(matches!(store.open_session(&id).await, Err(PgError::Leased { .. })));
}

/// Two hosts taking over the same expired lease at once: one wins, the
/// other is refused naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_taking_over_at_once_one_wins() {
    let Some(url) = support::database().await else { return };
    let a = PgStore::connect_with(&url, host("host-a")).await.unwrap();
    let b = PgStore::connect_with(&url, host("host-b")).await.unwrap();
    let c = PgStore::connect_with(&url, host("host-c")).await.unwrap();
    let (id, session) = started(&a).await;
    expire(&url, &id).await;
    let (on_b, on_c) = tokio::join!(b.open_session(&id), c.open_session(&id));
    match (&on_b, &on_c) {
        (Ok(_), Err(PgError::Leased { host, .. })) => assert_eq!(host, "host-b"),
        (Err(PgError::Leased { host, .. }), Ok(_)) => assert_eq!(host, "host-c"),
        other => panic!("{other:?}"),
    }
    drop(session);
}

/// Set (to `1`) only in the environment of [`paused_host_driver`].
const PAUSED_DRIVER: &str = "BOSUN_PG_PAUSED_DRIVER";

/// The child of [`a_paused_host_writes_nothing_after_another_took_over`]:
/// host A in a process of its own. It opens the session with a 1 s lease
/// renewed every 100 ms, says it is ready, waits for a line on stdin (it is
/// stopped with SIGSTOP meanwhile), then tries one append and prints how it
/// ended.
#[tokio::test(flavor = "current_thread")]
#[ignore = "a child process of a lease test; inert without BOSUN_PG_PAUSED_DRIVER=1"]
async fn paused_host_driver() {
    use std::io::BufRead;
    if std::env::var_os(PAUSED_DRIVER).is_none() {
        return;
    }
    let url = std::env::var("BOSUN_PG_URL").unwrap();
    let id = std::env::var("BOSUN_PG_SESSION").unwrap();
    let settings = LeaseSettings::default()
        .with_host("host-a")
        .with_timing(Duration::from_secs(1), Duration::from_millis(100));
    let store = PgStore::connect_with(&url, settings).await.unwrap();
    let mut journal = store.open_session(&id).await.unwrap();
    journal.load().await.unwrap();
    println!("ready");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let ended = JournalRecord::TurnEnded {
        turn: 99,
        outcome: TurnRecordOutcome::Completed,
        spend: Default::default(),
    };
    match journal.append(&ended).await {
        Ok(()) => println!("appended"),
        Err(error) => println!("refused {:?}", error.kind()),
    }
}

/// A host paused (SIGSTOP: its heartbeat stops too) past its lease, while
/// another takes the session over and writes, writes nothing once it runs
/// again: its append is refused as Unavailable.
#[tokio::test]
async fn a_paused_host_writes_nothing_after_another_took_over() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let Some(url) = support::database().await else { return };
    let b = PgStore::connect_with(&url, host("host-b")).await.unwrap();
    let (id, session) = started(&b).await;
    drop(session);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            bosun_testing::test_path!("paused_host_driver").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(PAUSED_DRIVER, "1")
        .env("BOSUN_PG_URL", &url)
        .env("BOSUN_PG_SESSION", &id)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "ready" {
        line.clear();
        assert!(output.read_line(&mut line).unwrap() > 0, "the child ended before it was ready");
    }
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();

    // The lease runs out by the database's clock while A is stopped.
    let client = support::sql(&url).await;
    support::eventually(Duration::from_secs(30), "A's lease expired", || async {
        client
            .query_opt(
                "SELECT 1 FROM leases WHERE session_id = $1 AND expires_at < clock_timestamp()",
                &[&id],
            )
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let records_before = b.records(&id).await.unwrap();
    let taken = b.open_session(&id).await.unwrap();
    let mut on_b = Session::builder(ScriptedModel::new().answer("from b")).resume(taken).await.unwrap();
    on_b.run("B runs it now", &mut Vec::new()).await.unwrap();
    let written_by_b = b.records(&id).await.unwrap();
    assert!(written_by_b.len() > records_before.len());

    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut output, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    assert!(rest.contains("refused Unavailable"), "{rest}");
    assert_eq!(b.records(&id).await.unwrap(), written_by_b, "the paused host wrote after the takeover");
    drop(on_b);
}
