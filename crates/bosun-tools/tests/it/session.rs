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

/// The `tool_output` events of a session's shell call.
async fn shell_events(command: &str) -> (Vec<bosun_core::Event>, std::time::Duration) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let model = ScriptedModel::new().tool_call("shell", json!({"command": command})).answer("done");
    let mut session = Session::builder(model)
        .tools(WorkspaceTools::new(workspace).build())
        .mode(Mode::Write)
        .approver(RecordingApprover::approve_all())
        .build()
        .await
        .unwrap();
    let mut events = Vec::new();
    let started = std::time::Instant::now();
    session.run("run it", &mut events).await.unwrap();
    (events, started.elapsed())
}

fn outputs(events: &[bosun_core::Event]) -> Vec<(Vec<String>, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            bosun_core::Event::ToolOutput { tail, lines, .. } => Some((tail.clone(), *lines)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_running_shell_call_reports_its_newest_lines() {
    let (events, _) = shell_events("for i in 1 2 3; do echo step $i; sleep 0.4; done").await;
    let outputs = outputs(&events);
    assert!(!outputs.is_empty(), "no tool_output while it ran: {events:?}");
    for (tail, lines) in &outputs {
        assert_eq!(tail.len() as u64, *lines, "{outputs:?}");
        assert!(tail.iter().enumerate().all(|(i, line)| *line == format!("step {}", i + 1)), "{outputs:?}");
    }
    let end = events.iter().position(|e| matches!(e, bosun_core::Event::ToolEnd { .. })).unwrap();
    let last = events.iter().rposition(|e| matches!(e, bosun_core::Event::ToolOutput { .. })).unwrap();
    assert!(last < end, "reports come before the end");
}

#[tokio::test]
async fn a_flood_of_output_makes_a_bounded_number_of_events() {
    let (events, took) = shell_events("seq 1 500000").await;
    let outputs = outputs(&events);
    // One report per interval at most, and one the interval after the last.
    let bound = took.as_millis() as usize / bosun_core::event::OUTPUT_INTERVAL_MS as usize + 2;
    assert!(outputs.len() <= bound, "{} reports in {took:?}", outputs.len());
    assert!(events.len() < 50 + bound, "{} events", events.len());
    for (tail, _) in &outputs {
        assert!(tail.len() <= bosun_core::event::OUTPUT_TAIL_LINES);
    }
    let end = events
        .iter()
        .find_map(|e| match e {
            bosun_core::Event::ToolEnd { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(end.contains("bytes cut") && end.ends_with("500000\n"), "{}", &end[end.len() - 200..]);
}
