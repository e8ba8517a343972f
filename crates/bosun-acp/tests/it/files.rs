//! Files through the editor: an editor that reads and writes text files
//! holds an unsaved buffer; bosun's `read_file` shows the model that
//! buffer, `edit_file` edits it and hands the result back to the editor,
//! and the checks (inside the workspace, the person's approval) come first.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, NewSessionRequest,
    PromptRequest, SessionUpdate, StopReason, TextContent, ToolCallContent,
};
use bosun_testing::Aimock;
use serde_json::{Value, json};

use crate::support::{Answer, Home, Seen, mock};

/// Runs one prompt, `word`, from an editor that reads and writes files.
async fn prompt(home: &Home, answer: Answer, seen: &Arc<Seen>, word: &str) -> StopReason {
    let ws = home.workspace();
    home.editor(answer, seen.clone(), async |cx| {
        let fs = FileSystemCapabilities::new().read_text_file(true).write_text_file(true);
        let init =
            InitializeRequest::new(ProtocolVersion::V1).client_capabilities(ClientCapabilities::new().fs(fs));
        cx.send_request(init).block_task().await?;
        let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
        let text = vec![ContentBlock::Text(TextContent::new(word))];
        Ok(cx.send_request(PromptRequest::new(made.session_id, text)).block_task().await?.stop_reason)
    })
    .await
}

/// The model calls each of `calls` in its own response, then answers.
fn script(word: &str, calls: &[Value]) -> Option<Aimock> {
    let mut list: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(turn, call)| {
            json!({"match": {"userMessage": word, "turnIndex": turn}, "response": {"toolCalls": [call]}})
        })
        .collect();
    list.push(
        json!({"match": {"userMessage": word, "turnIndex": calls.len()}, "response": {"content": "done"}}),
    );
    mock(list)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_shows_the_model_the_editors_unsaved_buffer() {
    let read = json!({"name": "read_file", "arguments": {"path": "notes.txt"}});
    let Some(mock) = script("read", &[read]) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    std::fs::write(ws.join("notes.txt"), "saved on disk\n").unwrap();
    let seen = Arc::new(Seen::default());
    seen.buffers.lock().unwrap().insert(ws.join("notes.txt"), "typed but not saved\n".to_owned());
    assert_eq!(prompt(&home, Answer::Reject, &seen, "read").await, StopReason::EndTurn);
    let asked = seen.read.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, ws.join("notes.txt"));
    let last = mock.last_request();
    assert!(last.contains("typed but not saved"), "the model read the buffer: {last}");
    assert!(!last.contains("saved on disk"), "the model read the disk: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_outside_the_workspace_is_refused_without_asking_the_editor() {
    let calls = [
        json!({"name": "read_file", "arguments": {"path": "../secret.txt"}}),
        json!({"name": "read_file", "arguments": {"path": "out/secret.txt"}}),
    ];
    let Some(mock) = script("read", &calls) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let secret = ws.parent().unwrap().join("secret.txt");
    std::fs::write(&secret, "the secret\n").unwrap();
    std::os::unix::fs::symlink(ws.parent().unwrap(), ws.join("out")).unwrap();
    let seen = Arc::new(Seen::default());
    seen.buffers.lock().unwrap().insert(secret, "the secret\n".to_owned());
    assert_eq!(prompt(&home, Answer::Reject, &seen, "read").await, StopReason::EndTurn);
    assert!(seen.read.lock().unwrap().is_empty(), "the editor was asked for a file outside");
    let last = mock.last_request();
    assert!(last.contains("leaves the workspace"), "{last}");
    assert!(last.contains("symlink"), "{last}");
    assert!(!last.contains("the secret"), "{last}");
}

fn edit_calls() -> [Value; 2] {
    [
        json!({"name": "read_file", "arguments": {"path": "lib.txt"}}),
        json!({"name": "edit_file", "arguments": {"path": "lib.txt", "old_text": "two (unsaved)", "new_text": "2"}}),
    ]
}

/// A workspace whose `lib.txt` the editor holds changed and unsaved.
fn with_unsaved_buffer(home: &Home) -> Arc<Seen> {
    let ws = home.workspace();
    std::fs::write(ws.join("lib.txt"), "one\ntwo\n").unwrap();
    let seen = Arc::new(Seen::default());
    seen.buffers.lock().unwrap().insert(ws.join("lib.txt"), "one\ntwo (unsaved)\n".to_owned());
    seen.unsaved.store(true, Ordering::SeqCst);
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_edits_the_editors_buffer_and_bosun_leaves_the_disk_alone() {
    let Some(mock) = script("edit", &edit_calls()) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = with_unsaved_buffer(&home);
    assert_eq!(prompt(&home, Answer::Allow, &seen, "edit").await, StopReason::EndTurn);
    assert_eq!(seen.asked.lock().unwrap().len(), 1, "the edit was asked, as bosun's own is");
    let written = seen.written.lock().unwrap().clone();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].path, ws.join("lib.txt"));
    assert_eq!(written[0].content, "one\n2\n");
    assert_eq!(std::fs::read_to_string(ws.join("lib.txt")).unwrap(), "one\ntwo\n");
    // The tool call carries its diff, as for an edit on disk.
    let diff = seen.updates().iter().find_map(|u| match u {
        SessionUpdate::ToolCall(call) => call.content.iter().find_map(|c| match c {
            ToolCallContent::Diff(d) => Some((d.old_text.clone(), d.new_text.clone())),
            _ => None,
        }),
        _ => None,
    });
    assert_eq!(diff, Some((Some("two (unsaved)".to_owned()), "2".to_owned())));
    assert!(mock.last_request().contains("edited `lib.txt`"), "{}", mock.last_request());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_the_person_rejects_sends_the_editor_no_write() {
    let Some(mock) = script("edit", &edit_calls()) else { return };
    let home = Home::new(&mock, "propose");
    let seen = with_unsaved_buffer(&home);
    assert_eq!(prompt(&home, Answer::Reject, &seen, "edit").await, StopReason::EndTurn);
    assert_eq!(seen.asked.lock().unwrap().len(), 1);
    assert!(seen.written.lock().unwrap().is_empty(), "a rejected edit reached the editor");
    let buffer = seen.buffers.lock().unwrap().get(&home.workspace().join("lib.txt")).cloned();
    assert_eq!(buffer.as_deref(), Some("one\ntwo (unsaved)\n"));
    assert!(mock.last_request().contains("denied"), "the model read the denial");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patch_patches_the_editors_buffer() {
    let patch =
        "*** Begin Patch\n*** Update File: lib.txt\n one\n-two (unsaved)\n+two, patched\n*** End Patch";
    let Some(mock) = script("patch", &[json!({"name": "apply_patch", "arguments": {"patch": patch}})]) else {
        return;
    };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = with_unsaved_buffer(&home);
    assert_eq!(prompt(&home, Answer::Allow, &seen, "patch").await, StopReason::EndTurn);
    let written = seen.written.lock().unwrap().clone();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].content, "one\ntwo, patched\n");
    assert_eq!(std::fs::read_to_string(ws.join("lib.txt")).unwrap(), "one\ntwo\n");
    assert!(mock.last_request().contains("applied the patch"), "{}", mock.last_request());
}
