//! Capture and restore together, on the real workspace tools (file tools
//! and the shell) and a real store: what each call changed is kept and put
//! back, a file changed since is left alone unless forced, and a restore
//! never writes through a symlink.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Arc;

use bosun_core::{CallId, Tool, ToolContext};
use bosun_store::{Before, Store};
use bosun_tools::{ShellConfig, Workspace, WorkspaceTools};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::restore::restore;
use super::{FileOutcome, capturing};
use crate::config::RewindSettings;
use crate::notice::Notices;

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
    tools: Vec<Arc<dyn Tool>>,
}

impl Fixture {
    fn new(settings: RewindSettings) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws/a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join("ws/old.txt"), "old\n").unwrap();
        let workspace = Workspace::open(dir.path().join("ws")).unwrap();
        let store = Store::open(dir.path().join("sessions.db")).unwrap();
        let shell = ShellConfig::new(workspace.root_path().to_path_buf()).with_path("/usr/bin:/bin");
        let tools = WorkspaceTools::new(workspace.clone()).shell(shell).build();
        let tools = capturing(tools, (&workspace, &store, "s"), &settings, &Notices::ignored());
        Self { dir, store, tools }
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(self.dir.path().join("ws")).unwrap()
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("ws").join(name)).ok()
    }

    /// Runs `tool` as turn `turn` would; the call's id.
    async fn call(&self, turn: u64, tool: &str, arguments: Value) -> String {
        let tool = self.tools.iter().find(|t| t.definition().name == tool).unwrap();
        let mut context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        context.turn = turn;
        let id = context.call_id.to_string();
        let output = tool.execute(arguments, context).await;
        assert!(!output.is_error, "{output:?}");
        id
    }

    fn restore(&self, calls: &[&String], force: bool) -> Vec<(String, FileOutcome)> {
        let calls: HashSet<&str> = calls.iter().map(|c| c.as_str()).collect();
        let reports = restore(&self.store, &self.workspace(), "s", &calls, force).unwrap();
        reports.into_iter().map(|r| (r.path, r.outcome)).collect()
    }
}

#[tokio::test]
async fn what_file_tools_and_the_shell_changed_is_put_back_as_it_was_when_the_turn_began() {
    let fixture = Fixture::new(RewindSettings::default());
    let edit =
        fixture.call(1, "edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})).await;
    let second =
        fixture.call(1, "edit_file", json!({"path": "a.txt", "old_text": "two", "new_text": "2"})).await;
    let write = fixture.call(1, "write_file", json!({"path": "dir/new.txt", "content": "new\n"})).await;
    let shell = "echo three >> a.txt; rm old.txt; echo made > made.txt";
    let run = fixture.call(2, "shell", json!({"command": shell})).await;
    assert_eq!(fixture.file("a.txt").as_deref(), Some("2\nthree\n"));

    let changes = fixture.store.file_changes("s").unwrap();
    let shown: Vec<(&str, Option<u64>)> = changes.iter().map(|c| (c.path.as_str(), c.turn)).collect();
    assert_eq!(
        shown,
        [
            ("a.txt", Some(1)),
            ("a.txt", Some(1)),
            ("dir/new.txt", Some(1)),
            ("a.txt", Some(2)),
            ("made.txt", Some(2)),
            ("old.txt", Some(2)),
        ]
    );
    // The second edit of the turn did not keep its content again.
    assert!(
        matches!(&changes[1].before, Before::NotKept { reason, .. } if reason.contains("earlier change"))
    );

    // Back to the start of turn 2: the shell's changes undone.
    let restored = fixture.restore(&[&run], false);
    assert_eq!(
        restored,
        [
            ("a.txt".to_owned(), FileOutcome::Restored),
            ("made.txt".to_owned(), FileOutcome::Deleted),
            ("old.txt".to_owned(), FileOutcome::Restored),
        ]
    );
    assert_eq!((fixture.file("a.txt").as_deref(), fixture.file("made.txt")), (Some("2\n"), None));
    assert_eq!(fixture.file("old.txt").as_deref(), Some("old\n"));

    // Back to the start of turn 1: a.txt as it was before the first edit.
    let restored = fixture.restore(&[&edit, &second, &write, &run], false);
    assert_eq!(restored[0], ("a.txt".to_owned(), FileOutcome::Restored));
    assert_eq!(restored[1], ("dir/new.txt".to_owned(), FileOutcome::Deleted));
    assert_eq!(restored[2], ("made.txt".to_owned(), FileOutcome::Unchanged));
    assert_eq!(fixture.file("a.txt").as_deref(), Some("one\n"));
    assert_eq!(fixture.file("dir/new.txt"), None);
}

#[tokio::test]
async fn a_file_changed_since_is_left_alone_unless_forced_and_symlinks_are_never_written_through() {
    let fixture = Fixture::new(RewindSettings::default());
    let edit =
        fixture.call(1, "edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})).await;
    let write = fixture.call(1, "write_file", json!({"path": "b.txt", "content": "b\n"})).await;
    // Someone else changes a.txt; b.txt becomes a symlink out of the workspace.
    std::fs::write(fixture.dir.path().join("ws/a.txt"), "mine\n").unwrap();
    let outside = fixture.dir.path().join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::fs::remove_file(fixture.dir.path().join("ws/b.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, fixture.dir.path().join("ws/b.txt")).unwrap();

    let restored = fixture.restore(&[&edit, &write], false);
    assert_eq!(restored[0], ("a.txt".to_owned(), FileOutcome::ChangedSince("changed".to_owned())));
    assert!(matches!(&restored[1].1, FileOutcome::Skipped(why) if why.contains("symlink")), "{restored:?}");
    assert_eq!(fixture.file("a.txt").as_deref(), Some("mine\n"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");

    let forced = fixture.restore(&[&edit, &write], true);
    assert_eq!(forced[0], ("a.txt".to_owned(), FileOutcome::Restored));
    assert!(matches!(&forced[1].1, FileOutcome::Skipped(_)), "a symlink is never replaced: {forced:?}");
    assert_eq!(fixture.file("a.txt").as_deref(), Some("one\n"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    // The restore is what bosun left there now: no conflict with itself.
    assert_eq!(fixture.restore(&[&edit], false)[0].1, FileOutcome::Unchanged);
}

#[tokio::test]
async fn large_and_binary_files_are_named_as_not_restorable() {
    let settings = RewindSettings { max_file_bytes: 8, ..RewindSettings::default() };
    let fixture = Fixture::new(settings);
    std::fs::write(fixture.dir.path().join("ws/big.txt"), "0123456789\n").unwrap();
    std::fs::write(fixture.dir.path().join("ws/logo.bin"), b"\x89PNG\0\0").unwrap();
    let run = fixture.call(1, "shell", json!({"command": "echo x > big.txt; echo y > logo.bin"})).await;
    let restored = fixture.restore(&[&run], false);
    assert_eq!(restored.len(), 2, "{restored:?}");
    assert!(matches!(&restored[0].1, FileOutcome::Skipped(why) if why.contains("over the 8-byte limit")));
    assert!(matches!(&restored[1].1, FileOutcome::Skipped(why) if why.contains("binary")), "{restored:?}");
    assert_eq!(fixture.file("big.txt").as_deref(), Some("x\n"));
}

#[tokio::test]
async fn a_rewind_restores_what_the_turns_sub_agents_changed_with_its_tools() {
    use bosun_core::{Session, ToolCategory, WorkspaceIdentity};
    use bosun_store::{After, KeepBounds, Offered, TurnBudget, blob_hash};
    use bosun_testing::{FnTool, Reply, ScriptedModel};

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/a.txt"), "one\n").unwrap();
    let workspace = Workspace::open(dir.path().join("ws")).unwrap();
    let store = Store::open(dir.path().join("sessions.db")).unwrap();
    let identity = WorkspaceIdentity::new("/ws", 1, 2);
    let session = |model: ScriptedModel, tool: &str| {
        Session::builder(model)
            .tool(FnTool::text(tool, ToolCategory::Write, |_| "done".into()))
            .workspace(identity.clone())
    };
    // The parent's turn delegates; the child, started by that call, edits.
    let journal = store.new_session();
    let parent = journal.session_id().to_owned();
    let model =
        ScriptedModel::new().reply(Reply::new().tool_call("delegate", json!({}))).answer("Delegated.");
    let mut running = session(model, "delegate").journal(journal).build().await.unwrap();
    running.run("go", &mut Vec::new()).await.unwrap();
    let delegate = running.history()[1].tool_calls().next().unwrap().id.to_string();
    drop(running);
    let journal = store.new_session().with_parent(&parent, &delegate);
    let child = journal.session_id().to_owned();
    let model = ScriptedModel::new().reply(Reply::new().tool_call("edit", json!({}))).answer("Edited.");
    let mut running = session(model, "edit").journal(journal).build().await.unwrap();
    running.run("sub", &mut Vec::new()).await.unwrap();
    let edit = running.history()[1].tool_calls().next().unwrap().id.to_string();
    drop(running);
    // The child's edit, recorded as its tools (the parent's) record it.
    let offered = Offered::Content { bytes: b"one\n".to_vec(), mode: 0o644 };
    let mut budget = TurnBudget::default();
    let (row, _) = store
        .begin_change(&parent, (1, &edit), "a.txt", 1, offered, KeepBounds::default(), &mut budget)
        .unwrap();
    std::fs::write(dir.path().join("ws/a.txt"), "two\n").unwrap();
    store.end_change(row, &After::File { hash: blob_hash(b"two\n") }, 2).unwrap();

    let request = super::RewindRequest::new(1).restoring(super::Restore::Files);
    let report = super::rewind(&store, &workspace, &parent, &request).unwrap();
    let files = report.files.unwrap();
    assert_eq!(files.len(), 1, "{files:?} (child {child})");
    assert_eq!(files[0].outcome, FileOutcome::Restored);
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(), "one\n");
}
