//! `shell` in the editor's terminal: when the client runs terminals, an
//! approved command runs in one (bosun's own binary on the far side), still
//! inside bosun's sandbox, and a cancel kills it.

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, InitializeRequest, NewSessionRequest,
    PromptRequest, SessionUpdate, StopReason, TextContent, ToolCallContent,
};
use serde_json::json;

use crate::support::{Answer, Home, Seen, bosun_bin, mock};

fn shell_fixtures(word: &str, command: &str) -> Vec<serde_json::Value> {
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"content": "done"}}),
    ]
}

fn init() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(ClientCapabilities::new().terminal(true))
}

fn text(word: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(word))]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_18_a_command_in_the_editors_terminal_stays_in_bosuns_sandbox() {
    // The write outside the workspace goes through a word the rules cannot
    // read, so only the sandbox can stop it.
    let command = "echo from the terminal; touch inside.txt; printf x > \"$(dirname \"$PWD\")/outside.txt\"";
    let Some(mock) = mock(shell_fixtures("run", command)) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            cx.send_request(init()).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            Ok(cx
                .send_request(PromptRequest::new(made.session_id, text("run")))
                .block_task()
                .await?
                .stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    let created = seen.terminals.created.lock().unwrap().clone();
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0].command, bosun_bin().display().to_string());
    assert_eq!(created[0].args[0], "sandboxed-shell");
    assert_eq!(created[0].cwd.as_deref(), Some(ws.as_path()));
    assert_eq!(*seen.terminals.released.lock().unwrap(), vec!["term-0".to_owned()]);
    let shown = seen.updates().iter().any(|u| {
        matches!(u, SessionUpdate::ToolCallUpdate(up)
            if up.fields.content.as_ref().is_some_and(|c| matches!(c.first(), Some(ToolCallContent::Terminal(_)))))
    });
    assert!(shown, "the terminal was not shown in the tool call");
    // The terminal showed the command's own output; the model read the
    // tool's result, with its exit line.
    let shown = seen.terminals.get("term-0").output().output;
    assert!(shown.starts_with("from the terminal\n"), "{shown}");
    assert!(!shown.contains("exit code"), "{shown}");
    let last = mock.last_request();
    // The write outside failed, last, and the tool's note on the sandbox
    // says why.
    assert!(last.contains("exit code: 1\\nfrom the terminal"), "the model read the tool's result: {last}");
    assert!(last.contains("Permission denied") && last.contains("[sandbox (workspace-write)"), "{last}");
    assert!(ws.join("inside.txt").exists(), "the command ran in the workspace");
    let outside = ws.parent().unwrap().join("outside.txt");
    assert!(!outside.exists(), "a command in the editor's terminal wrote outside the workspace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_kills_the_command_in_the_editors_terminal() {
    let Some(mock) = mock(shell_fixtures("run", "touch started.txt; sleep 3; touch late.txt")) else {
        return;
    };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let started = ws.join("started.txt");
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            cx.send_request(init()).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let turn = cx.send_request(PromptRequest::new(made.session_id.clone(), text("run")));
            seen.terminals.started.notified().await;
            // The command itself has begun (the far side has built the
            // sandbox and started it) when its first file appears.
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(20));
            while !started.exists() {
                tick.tick().await;
            }
            cx.send_notification(CancelNotification::new(made.session_id))?;
            Ok(turn.block_task().await?.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::Cancelled);
    assert_eq!(*seen.terminals.killed.lock().unwrap(), vec!["term-0".to_owned()]);
    let term = seen.terminals.get("term-0");
    term.wait().await;
    // The far side is gone; the command it ran must not finish after it.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(!ws.join("late.txt").exists(), "the cancelled command kept running");
}
