//! The events a served session emitted: numbered from 1, no gap, no
//! duplicate, read after a number, deleted with the session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::Session;
use bosun_store_pg::{PgError, PgEvent, PgStore};
use bosun_testing::ScriptedModel;

use crate::support;

#[tokio::test]
async fn events_are_numbered_without_gap_or_duplicate_and_go_with_the_session() {
    let Some(url) = support::database().await else { return };
    let store = PgStore::connect(&url).await.unwrap();
    assert!(matches!(
        store.append_events("nobody", &[PgEvent::new(1, "{}")]).await,
        Err(PgError::NotFound { .. })
    ));
    let journal = store.new_session().await.unwrap();
    let id = journal.session_id().to_owned();
    let mut session =
        Session::builder(ScriptedModel::new().answer("hi")).journal(journal).build().await.unwrap();
    session.run("hello", &mut Vec::new()).await.unwrap();
    drop(session);

    assert_eq!(store.last_event(&id).await.unwrap(), 0);
    store.append_events(&id, &[]).await.unwrap();
    let first: Vec<PgEvent> = (1..=3).map(|n| PgEvent::new(n, format!("{{\"n\":{n}}}"))).collect();
    store.append_events(&id, &first).await.unwrap();
    assert_eq!(store.last_event(&id).await.unwrap(), 3);
    // A gap, a duplicate, a retry of the last batch: refused, nothing kept.
    for wrong in [vec![PgEvent::new(5, "{}")], vec![PgEvent::new(3, "{}")], first.clone()] {
        let error = store.append_events(&id, &wrong).await.unwrap_err();
        assert!(matches!(error, PgError::OutOfOrder { .. }), "{error:?}");
    }
    // A batch whose second event is out of order keeps none of it.
    let error = store.append_events(&id, &[PgEvent::new(4, "{}"), PgEvent::new(6, "{}")]).await.unwrap_err();
    assert!(matches!(error, PgError::OutOfOrder { .. }), "{error:?}");
    assert_eq!(store.last_event(&id).await.unwrap(), 3);
    store.append_events(&id, &[PgEvent::new(4, "{\"n\":4}")]).await.unwrap();

    let after = store.events_after(&id, 1, 10).await.unwrap();
    assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3, 4]);
    assert_eq!(after[0].body, "{\"n\":2}");
    assert_eq!(store.events_after(&id, 0, 2).await.unwrap().len(), 2);
    assert!(store.events_after(&id, 4, 10).await.unwrap().is_empty());

    store.delete(&id).await.unwrap();
    assert!(store.events_after(&id, 0, 10).await.unwrap().is_empty());
    assert_eq!(store.last_event(&id).await.unwrap(), 0);
    assert!(store.records(&id).await.unwrap().is_empty());
    assert!(matches!(store.delete(&id).await, Err(PgError::NotFound { .. })));
}
