//! Invariant 7 on resume: narrowing needs no acceptance, widening needs the
//! person's, and the accepted authority is journaled.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use bosun_core::{
    ApprovalHandler, AuthorityChange, BuildError, InMemoryJournal, JournalRecord, Session, WorkspaceIdentity,
};
use bosun_testing::{FnTool, ScriptedModel};

use crate::common::TestResult;

fn builder_with(tools: &[&str]) -> bosun_core::SessionBuilder {
    let mut builder = Session::builder(ScriptedModel::new().answer("ok").answer("ok"))
        .workspace(WorkspaceIdentity::new("/work/project", 1, 42));
    for name in tools {
        builder = builder.tool(FnTool::echo(name));
    }
    builder
}

fn records_named(journal: &InMemoryJournal, tag: &str) -> usize {
    journal.records().iter().filter(|r| serde_json::to_value(r).unwrap()["record"] == tag).count()
}

/// Answers every authority question with `accept`, and keeps what it was asked.
#[derive(Debug, Default)]
struct AuthorityAnswers {
    accept: bool,
    asked: std::sync::Mutex<Vec<String>>,
}

impl ApprovalHandler for AuthorityAnswers {
    fn decide<'a>(
        &'a self,
        _request: &'a bosun_core::ApprovalRequest,
    ) -> bosun_core::permission::ApprovalFuture<'a> {
        Box::pin(async { bosun_core::ApprovalDecision::ApproveOnce })
    }

    fn accept_authority<'a>(
        &'a self,
        change: &'a AuthorityChange,
    ) -> bosun_core::permission::AcceptFuture<'a> {
        self.asked.lock().unwrap().push(change.to_string());
        Box::pin(async move { self.accept })
    }
}

#[tokio::test]
async fn invariant_07_a_wider_authority_resumes_only_when_the_person_accepts_and_is_journaled() -> TestResult
{
    let journal = InMemoryJournal::new();
    let mut session = builder_with(&["alpha"]).journal(journal.clone()).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    drop(session);

    let refusing = Arc::new(AuthorityAnswers::default());
    let err =
        builder_with(&["alpha", "beta"]).shared_approver(refusing.clone()).resume(journal.clone()).await;
    assert!(matches!(err, Err(BuildError::AuthorityMismatch { .. })));
    assert_eq!(refusing.asked.lock().unwrap().as_slice(), ["+ new tools: beta"]);
    assert_eq!(records_named(&journal, "authority_changed"), 0);

    let accepting = Arc::new(AuthorityAnswers { accept: true, ..Default::default() });
    let resumed =
        builder_with(&["alpha", "beta"]).shared_approver(accepting.clone()).resume(journal.clone()).await?;
    let change = resumed.resumed_change().ok_or("the change is told")?;
    assert_eq!(change.to_string(), "+ new tools: beta");
    assert_eq!(resumed.authority().digest(), builder_with(&["alpha", "beta"]).authority_snapshot()?.digest());
    drop(resumed);
    // The accepted authority is a record: replay stays strict, and the next
    // resume compares with it, so nothing is asked again.
    let records = journal.records();
    let Some(JournalRecord::AuthorityChanged { resumed: words, .. }) = records.last() else {
        panic!("the last record is the acceptance: {records:?}")
    };
    assert_eq!(words, &["+ new tools: beta"]);
    let again = Arc::new(AuthorityAnswers::default());
    let same =
        builder_with(&["alpha", "beta"]).shared_approver(again.clone()).resume(journal.clone()).await?;
    assert!(same.resumed_change().is_none());
    assert!(again.asked.lock().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn invariant_07_narrowing_resumes_without_asking_and_says_so() -> TestResult {
    let journal = InMemoryJournal::new();
    let mut session =
        builder_with(&["alpha", "beta"]).max_rounds(20).journal(journal.clone()).build().await?;
    session.run("hi", &mut Vec::new()).await?;
    drop(session);
    // A tool gone and a tighter limit: asked of nobody.
    let asked = Arc::new(AuthorityAnswers::default());
    let narrower = builder_with(&["alpha"]).max_rounds(5).shared_approver(asked.clone());
    let resumed = narrower.resume(journal.clone()).await?;
    assert!(asked.asked.lock().unwrap().is_empty());
    let change = resumed.resumed_change().ok_or("the change is told")?;
    assert!(!change.widens());
    assert_eq!(change.to_string(), "- tools gone: beta\n- max rounds was 20, now 5");
    assert_eq!(resumed.authority().limits.max_rounds, 5, "the resumed session runs under today's limits");
    drop(resumed);
    // A narrowing is not journaled: the recorded authority stays what was
    // accepted, so going back to it asks nothing, and past it widens.
    assert_eq!(records_named(&journal, "authority_changed"), 0);
    let back = builder_with(&["alpha", "beta"]).max_rounds(20).resume(journal.clone()).await?;
    assert!(back.resumed_change().is_none());
    drop(back);
    let looser = builder_with(&["alpha", "beta"]).max_rounds(50).resume(journal).await.unwrap_err();
    assert!(looser.to_string().contains("+ max rounds was 20, now 50"), "{looser}");
    Ok(())
}

#[test]
fn invariant_07_a_moved_workspace_is_the_same_directory_and_another_one_widens() -> TestResult {
    let snapshot = |path: &str, inode: u64| {
        Session::builder(ScriptedModel::new())
            .workspace(WorkspaceIdentity::new(path, 1, inode))
            .authority_snapshot()
    };
    let moved = snapshot("/a", 7)?.compare(&snapshot("/b", 7)?);
    assert!(!moved.widens(), "{moved}");
    assert!(moved.to_string().contains("the same directory, moved"), "{moved}");
    let copied = snapshot("/a", 7)?.compare(&snapshot("/b", 8)?);
    assert!(copied.widens(), "{copied}");
    Ok(())
}

/// A stored session's digest must read the same in every build: one whose
/// JSON maps keep insertion order (a dependency may turn serde_json's
/// `preserve_order` on for the whole build) and one whose maps are sorted.
/// The digest is pinned to the value builds have always stored.
#[test]
fn invariant_07_an_authority_digest_is_the_same_whatever_order_json_maps_keep() -> TestResult {
    let snapshot = builder_with(&["alpha", "beta"]).authority_snapshot()?;
    assert_eq!(snapshot.digest().as_str(), PINNED_DIGEST);
    Ok(())
}

const PINNED_DIGEST: &str = "0d1f971954b93121c5f61d3b5158727d269fb9f3ec11627d2b0724888a233103";
