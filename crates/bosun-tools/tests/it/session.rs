//! The workspace tools inside a real session: the pipeline, the journal and
//! the authority snapshot see the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{BuildError, InMemoryJournal, Message, Mode, Session};
use bosun_testing::{RecordingApprover, Reply, ScriptedModel};
use bosun_tools::{Workspace, WorkspaceTools};
use serde_json::json;

fn results(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .map(|m| (m.text(), m.is_error()))
        .collect()
}

#[tokio::test]
async fn a_session_creates_searches_patches_and_runs_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let model = ScriptedModel::new()
        .reply(Reply::new().tool_call("write_file", json!({"path": "src/main.py", "content": "print('hi')\n"})))
        .reply(Reply::new().tool_call("search", json!({"pattern": "print", "glob": "*.py"})))
        .reply(Reply::new().tool_call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: src/main.py\n@@\n-print('hi')\n+print('hello')\n*** End Patch"}),
        ))
        .reply(Reply::new().tool_call("shell", json!({"command": "python3 src/main.py"})))
        .answer("done");
    let journal = InMemoryJournal::new();
    let tools = WorkspaceTools::new(workspace.clone()).build();
    let mut session = Session::builder(model)
        .workspace(workspace.identity().clone())
        .tools(tools.clone())
        .mode(Mode::Write)
        .approver(RecordingApprover::approve_all())
        .journal(journal.clone())
        .build()
        .await
        .unwrap();
    session.run("make it say hello", &mut Vec::new()).await.unwrap();
    let results = results(session.history());
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    assert!(results[1].0.starts_with("src/main.py:1:print('hi')"), "{results:?}");
    assert!(results[3].0.contains("hello"), "{results:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("src/main.py")).unwrap(), "print('hello')\n");
    assert_eq!(session.authority().workspace.as_ref(), Some(workspace.identity()));

    // The same tools over another directory are another authority.
    let other = tempfile::tempdir().unwrap();
    let elsewhere = Workspace::open(other.path()).unwrap();
    let err = Session::builder(ScriptedModel::new())
        .workspace(elsewhere.identity().clone())
        .tools(WorkspaceTools::new(elsewhere).build())
        .resume(journal)
        .await
        .unwrap_err();
    assert!(matches!(err, BuildError::AuthorityMismatch { .. }));
    assert!(err.to_string().contains("workspace was"), "{err}");
}

#[tokio::test]
async fn read_only_mode_runs_reads_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .tool_call("read_file", json!({"path": "a.txt"}))
                .tool_call("write_file", json!({"path": "b.txt", "content": "x"}))
                .tool_call("shell", json!({"command": "touch c.txt"})),
        )
        .answer("ok");
    let mut session = Session::builder(model)
        .tools(WorkspaceTools::new(workspace).build())
        .mode(Mode::ReadOnly)
        .approver(RecordingApprover::approve_all())
        .build()
        .await
        .unwrap();
    session.run("look", &mut Vec::new()).await.unwrap();
    let results = results(session.history());
    assert!(!results[0].1 && results[0].0.contains("alpha"));
    assert!(results[1].1 && results[2].1);
    assert!(!dir.path().join("b.txt").exists() && !dir.path().join("c.txt").exists());
}
