//! Invariant 19: the clock is opt-in, and whether a session may see it is
//! part of its authority snapshot, so resuming with it changed fails closed.

use bosun_core::{AuthoritySnapshot, BuildError, InMemoryJournal, Session, WorkspaceIdentity};
use bosun_testing::{FnTool, ScriptedModel};

use crate::common::TestResult;

fn builder() -> bosun_core::SessionBuilder {
    Session::builder(ScriptedModel::new().answer("ok").answer("ok"))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 42))
        .tool(FnTool::echo("alpha"))
}

#[tokio::test]
async fn invariant_19_clock_is_opt_in_and_part_of_the_authority() -> TestResult {
    // Off by default, and off serialises exactly as before the field existed:
    // no `clock` key, so stored snapshots and their digests are unchanged.
    let off = builder().authority_snapshot()?;
    assert!(!off.clock, "the clock is off unless asked for");
    assert_eq!(off, builder().clock(false).authority_snapshot()?);
    let json = serde_json::to_value(&off)?;
    let mut keys: Vec<&str> = json.as_object().ok_or("an object")?.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["enabled", "limits", "tools", "version", "workspace"], "{json}");
    // A snapshot stored before the field existed reads as clock off, same digest.
    let stored: AuthoritySnapshot = serde_json::from_value(json.clone())?;
    assert_eq!((stored.digest(), stored.clock), (off.digest(), false));

    let on = builder().clock(true).authority_snapshot()?;
    assert!(on.clock);
    assert_eq!(serde_json::to_value(&on)?["clock"], serde_json::json!(true));
    assert_ne!(on.digest(), off.digest(), "the clock is part of the authority");
    assert_eq!(off.differences(&on), ["the clock was off, now on"]);
    assert_eq!(on.differences(&off), ["the clock was on, now off"]);

    // Resuming with the clock turned on widens: it fails closed and says
    // why. Turned off, it narrows: the session resumes and says so.
    let journal = InMemoryJournal::new();
    let mut session = builder().clock(false).journal(journal.clone()).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    drop(session);
    let Err(error) = builder().clock(true).resume(journal.clone()).await else {
        return Err("resumed with the clock turned on".into());
    };
    assert!(matches!(error, BuildError::AuthorityMismatch { .. }), "{error}");
    assert!(error.to_string().contains("+ the clock was off, now on"), "{error}");
    let again = builder().clock(false).resume(journal).await?;
    assert!(!again.authority().clock);

    let journal = InMemoryJournal::new();
    let mut session = builder().clock(true).journal(journal.clone()).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    drop(session);
    let off = builder().clock(false).resume(journal).await?;
    assert!(!off.authority().clock);
    assert_eq!(off.resumed_change().map(ToString::to_string).as_deref(), Some("- the clock was on, now off"));
    Ok(())
}
