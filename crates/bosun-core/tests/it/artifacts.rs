//! Artifacts: a tool output past the output bound is kept whole in the
//! session's store before its result is journaled; the model sees the head
//! and tail with the artifact's id and pages through the whole with
//! `read_artifact`. A store that fails loses nothing the bound would keep.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bosun_core::artifacts::{ARTIFACT_PAGE, ArtifactError, ArtifactFuture, Artifacts, InMemoryArtifacts};
use bosun_core::{InMemoryJournal, JournalRecord, Message, Session, ToolCategory};
use bosun_testing::{FnTool, ScriptedModel};
use common::TestResult;
use serde_json::json;

/// 100,000 bytes of numbered lines: the head and tail differ from the middle.
fn long_output() -> String {
    (0..10_000).map(|n| format!("line {n:04}\n")).collect::<String>()[..100_000].to_owned()
}

fn dump() -> FnTool {
    FnTool::text("dump", ToolCategory::Read, |_| long_output())
}

fn artifact_id(text: &str) -> String {
    let at = text.find("kept as artifact ").expect("an artifact note") + "kept as artifact ".len();
    text[at..].split(';').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_long_output_is_kept_whole_and_the_model_pages_through_it() -> TestResult {
    let store = InMemoryArtifacts::new();
    let journal = InMemoryJournal::new();
    // The model reads the dump, then the artifact from offset 50,000.
    let model = ScriptedModel::new().tool_call("dump", json!({}));
    let mut session = Session::builder(model.clone())
        .tool(dump())
        .artifacts(Arc::new(store.clone()))
        .tool_output_bytes(4_096)
        .journal(journal.clone())
        .build()
        .await?;
    // The id is only known once the first result exists: script the rest
    // from inside a first turn's results.
    let first = session.run("dump it", &mut Vec::new()).await;
    assert!(first.is_err(), "the script ran out after the call: {first:?}");
    let shown = common::tool_result(session.history(), 0).0;
    assert!(shown.len() <= 4_096, "{} bytes", shown.len());
    assert!(shown.starts_with("line 0000") && shown.contains("line 9999"), "head and tail kept");
    let id = artifact_id(&shown);
    assert_eq!(store.len(), 1);
    let recorded = journal.records().into_iter().find_map(|r| match r {
        JournalRecord::InvocationFinished { result, .. } => Some(result.text()),
        _ => None,
    });
    assert_eq!(recorded.as_deref(), Some(shown.as_str()), "the journal keeps what the model saw");

    model.push(bosun_testing::Reply::new().tool_call("read_artifact", json!({"id": id, "offset": 50_000})));
    model.push(bosun_testing::Reply::new().text("read it"));
    session.run("now read the middle", &mut Vec::new()).await?;
    let page = common::tool_result(session.history(), 1).0;
    let whole = long_output();
    assert!(page.starts_with(&whole[50_000..50_100]), "{}", &page[..100]);
    assert!(
        page.contains(&format!("next offset {}", 50_000 + ARTIFACT_PAGE)),
        "{}",
        &page[page.len() - 80..]
    );
    // An id the store does not hold is an error result, not a failure.
    model.push(bosun_testing::Reply::new().tool_call("read_artifact", json!({"id": "nope"})));
    model.push(bosun_testing::Reply::new().text("ok"));
    session.run("and a wrong one", &mut Vec::new()).await?;
    let (text, is_error) = common::tool_result(session.history(), 2);
    assert!(is_error && text.contains("no artifact nope"), "{text}");
    Ok(())
}

struct Broken;

impl Artifacts for Broken {
    fn put<'a>(&'a self, _: &'a str) -> ArtifactFuture<'a, String> {
        Box::pin(async { Err(ArtifactError("disk full".into())) })
    }

    fn get<'a>(&'a self, _: &'a str) -> ArtifactFuture<'a, Option<String>> {
        Box::pin(async { Ok(None) })
    }
}

#[tokio::test]
async fn a_store_that_fails_leaves_the_output_shortened_as_without_one() -> TestResult {
    let model = ScriptedModel::new().tool_call("dump", json!({})).answer("done");
    let mut session = Session::builder(model)
        .tool(dump())
        .artifacts(Arc::new(Broken))
        .tool_output_bytes(4_096)
        .build()
        .await?;
    session.run("dump it", &mut Vec::new()).await?;
    let shown = common::tool_result(session.history(), 0).0;
    assert!(shown.len() <= 4_096 + 100 && shown.contains("line 9999"));
    assert!(!shown.contains("artifact"), "{shown}");
    let short: Vec<&Message> = session.history().iter().collect();
    assert_eq!(short.len(), 4);
    Ok(())
}
