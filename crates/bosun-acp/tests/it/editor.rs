use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest,
    LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest, PromptRequest, SessionConfigValueId,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason, TextContent,
    ToolCallStatus, ToolKind,
};
use serde_json::json;

use crate::support::{Answer, Home, Seen, mock};

fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(prompt))]
}

fn write_fixtures(word: &str, answer: &str) -> Vec<serde_json::Value> {
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "from the editor\n"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"content": answer}}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_its_answer_and_a_stored_session_loads_with_its_history() {
    let list = vec![
        json!({"match": {"userMessage": "hello", "turnIndex": 0}, "response": {"content": "Hi from bosun."}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let (stop, id, init, modes) = home
        .editor(Answer::Reject, seen.clone(), async |cx| {
            let init = cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let done = cx
                .send_request(PromptRequest::new(made.session_id.clone(), text("hello")))
                .block_task()
                .await?;
            Ok((done.stop_reason, made.session_id, init, made.modes))
        })
        .await;
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    assert!(init.agent_capabilities.load_session);
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.message_text(), "Hi from bosun.");
    let modes = modes.unwrap();
    assert_eq!(modes.current_mode_id.0.as_ref(), "propose");

    // A new connection loads the stored session: its history comes first.
    let loaded = Arc::new(Seen::default());
    home.editor(Answer::Reject, loaded.clone(), async |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), ws.clone())).block_task().await?;
        Ok(())
    })
    .await;
    let updates = loaded.updates();
    assert!(
        matches!(&updates[0], SessionUpdate::UserMessageChunk(c) if matches!(&c.content, ContentBlock::Text(t) if t.text == "hello")),
        "{updates:?}"
    );
    assert_eq!(loaded.message_text(), "Hi from bosun.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_write_runs_and_shows_as_an_edit_with_its_diff() {
    let Some(mock) = mock(write_fixtures("write", "Wrote it.")) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let done =
                cx.send_request(PromptRequest::new(made.session_id, text("write"))).block_task().await?;
            Ok(done.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.asked.lock().unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(ws.join("note.txt")).unwrap(), "from the editor\n");
    assert_eq!(seen.message_text(), "Wrote it.");
    let updates = seen.updates();
    let call = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.kind, ToolKind::Edit);
    assert_eq!(call.locations[0].path, ws.join("note.txt"));
    assert!(
        matches!(&call.content[0], agent_client_protocol::v1::schema::ToolCallContent::Diff(d) if d.new_text == "from the editor\n")
    );
    let completed = updates.iter().any(|u| {
        matches!(u, SessionUpdate::ToolCallUpdate(up) if up.tool_call_id == call.tool_call_id && up.fields.status == Some(ToolCallStatus::Completed))
    });
    assert!(completed, "{updates:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_permission_leaves_no_effect_and_the_model_reads_the_denial() {
    let Some(mock) = mock(write_fixtures("write", "Could not write.")) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let stop = home
        .editor(Answer::Reject, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let done =
                cx.send_request(PromptRequest::new(made.session_id, text("write"))).block_task().await?;
            Ok(done.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.asked.lock().unwrap().len(), 1);
    assert!(!ws.join("note.txt").exists(), "a rejected call has no effect");
    assert_eq!(seen.message_text(), "Could not write.");
    assert!(mock.last_request().contains("denied"), "the model read the denial");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_a_permission_is_pending_stops_the_turn_with_no_effect() {
    let Some(mock) = mock(write_fixtures("write", "never")) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let waiting = seen.clone();
    let stop = home
        .editor(Answer::Hold, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let turn = cx.send_request(PromptRequest::new(made.session_id.clone(), text("write")));
            waiting.asked_signal.notified().await;
            cx.send_notification(CancelNotification::new(made.session_id))?;
            Ok(turn.block_task().await?.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::Cancelled);
    assert!(!ws.join("note.txt").exists(), "a cancelled call has no effect");
    // No call is left running in the editor's view.
    let updates = seen.updates();
    let last_status = updates.iter().rev().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(up) => up.fields.status,
        _ => None,
    });
    assert_eq!(last_status, Some(ToolCallStatus::Failed), "{updates:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_cannot_widen_the_editors_modes() {
    let Some(mock) = mock(Vec::new()) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    // The repository asks for autonomy; it is not trusted, so it cannot.
    std::fs::create_dir_all(ws.join(".bosun")).unwrap();
    std::fs::write(ws.join(".bosun/config.toml"), "mode = \"autonomous\"\n").unwrap();
    let seen = Arc::new(Seen::default());
    let (modes, looser, stricter) = home
        .editor(Answer::Reject, seen, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let id = made.session_id.clone();
            let looser =
                cx.send_request(SetSessionModeRequest::new(id.clone(), "autonomous")).block_task().await;
            let stricter = cx.send_request(SetSessionModeRequest::new(id, "read-only")).block_task().await;
            Ok((made.modes, looser.is_err(), stricter.is_ok()))
        })
        .await;
    let modes = modes.unwrap();
    assert_eq!(modes.current_mode_id.0.as_ref(), "propose");
    let offered: Vec<_> = modes.available_modes.iter().map(|m| m.id.0.to_string()).collect();
    assert_eq!(offered, ["read-only", "plan", "propose"]);
    assert!(looser, "a mode looser than the user's own is refused");
    assert!(stricter, "a stricter one is taken");
    assert!(mock.journal().is_empty(), "no model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_goes_through_the_editors_file_system_when_it_offers_one() {
    let Some(mock) = mock(write_fixtures("write", "Wrote it.")) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            let fs = FileSystemCapabilities::new().read_text_file(true).write_text_file(true);
            let init = InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(ClientCapabilities::new().fs(fs));
            cx.send_request(init).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let done =
                cx.send_request(PromptRequest::new(made.session_id, text("write"))).block_task().await?;
            Ok(done.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    // Asked first, as bosun's own write_file is: the same pipeline judges it.
    assert_eq!(seen.asked.lock().unwrap().len(), 1);
    let written = seen.written.lock().unwrap().clone();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].path, ws.join("note.txt"));
    assert_eq!(written[0].content, "from the editor\n");
    assert_eq!(std::fs::read_to_string(ws.join("note.txt")).unwrap(), "from the editor\n");
    assert!(mock.last_request().contains("created `note.txt`"), "the model read the editor's result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_mid_tool_stops_the_running_command_and_leaves_no_call_running() {
    let list = vec![
        json!({"match": {"userMessage": "run", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": "echo started && sleep 3 && touch late.txt"}}]}}),
        json!({"match": {"userMessage": "run", "turnIndex": 1}, "response": {"content": "never"}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let running = seen.clone();
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let turn = cx.send_request(PromptRequest::new(made.session_id.clone(), text("run")));
            // Its output shows while it runs; then the person cancels.
            running.output_signal.notified().await;
            cx.send_notification(CancelNotification::new(made.session_id))?;
            Ok(turn.block_task().await?.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::Cancelled);
    let updates = seen.updates();
    let call = updates.iter().find_map(|u| match u {
        SessionUpdate::ToolCall(call) => Some(call.clone()),
        _ => None,
    });
    assert_eq!(call.unwrap().kind, ToolKind::Execute);
    let shown = format!("{updates:?}");
    assert!(shown.contains("started"), "the command's output was shown: {shown}");
    let last_status = updates.iter().rev().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(up) => up.fields.status,
        _ => None,
    });
    assert_eq!(last_status, Some(ToolCallStatus::Failed), "{updates:?}");
    // The command was stopped, not left to finish.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(!ws.join("late.txt").exists(), "the cancelled command kept running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_the_editor_passes_is_started_and_its_tool_called() {
    let Some(everything) = bosun_testing::mcp::everything_server() else { return };
    let list = vec![
        json!({"match": {"userMessage": "echo", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "mcp__everything__echo", "arguments": {"message": "ahoy-42"}}]}}),
        json!({"match": {"userMessage": "echo", "turnIndex": 1}, "response": {"content": "done"}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let server = McpServer::Stdio(
        McpServerStdio::new("everything", "node")
            .args(vec![everything.display().to_string(), "stdio".into()]),
    );
    let stop = home
        .editor(Answer::Allow, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx
                .send_request(NewSessionRequest::new(ws.clone()).mcp_servers(vec![server]))
                .block_task()
                .await?;
            let done =
                cx.send_request(PromptRequest::new(made.session_id, text("echo"))).block_task().await?;
            Ok(done.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    // An external tool: asked, as a configured server's would be.
    assert_eq!(seen.asked.lock().unwrap().len(), 1);
    assert_eq!(seen.message_text(), "done");
    assert!(mock.last_request().contains("Echo: ahoy-42"), "the model read the server's answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_a_session_option_and_choosing_another_reopens_the_session_on_it() {
    let list =
        vec![json!({"match": {"userMessage": "hello", "turnIndex": 0}, "response": {"content": "Hi."}})];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let config = home.dir.path().join("xdg/bosun/config.toml");
    let mut text_of = std::fs::read_to_string(&config).unwrap();
    text_of.push_str("\n[models.\"openai/gpt-other\"]\ncontext_window = 100000\n");
    std::fs::write(&config, text_of).unwrap();
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let (offered, stop) = home
        .editor(Answer::Reject, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let id = made.session_id.clone();
            let chosen = SetSessionConfigOptionRequest::new(
                id.clone(),
                "model",
                SessionConfigValueId::new("openai/gpt-other"),
            );
            cx.send_request(chosen).block_task().await?;
            let done = cx.send_request(PromptRequest::new(id, text("hello"))).block_task().await?;
            Ok((made.config_options, done.stop_reason))
        })
        .await;
    let offered = serde_json::to_value(offered.unwrap()).unwrap();
    assert_eq!(offered[0]["id"], "model");
    assert_eq!(offered[0]["currentValue"], "openai/gpt-test");
    let values: Vec<_> =
        offered[0]["options"].as_array().unwrap().iter().map(|o| o["value"].clone()).collect();
    assert_eq!(values, [json!("openai/gpt-test"), json!("openai/gpt-other")]);
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.message_text(), "Hi.");
    let asked: serde_json::Value = serde_json::from_str(&mock.last_request()).unwrap_or_default();
    assert!(mock.last_request().contains("gpt-other"), "the turn ran on the chosen model: {asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_opens_with_more_authority_only_when_the_person_allows_it() {
    let Some(everything) = bosun_testing::mcp::everything_server() else { return };
    let list =
        vec![json!({"match": {"userMessage": "hello", "turnIndex": 0}, "response": {"content": "Hi."}})];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let id = home
        .editor(Answer::Reject, Arc::new(Seen::default()), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            cx.send_request(PromptRequest::new(made.session_id.clone(), text("hello"))).block_task().await?;
            Ok(made.session_id)
        })
        .await;
    // Loaded again with a server it did not have: its tools widen what it may do.
    let server = McpServer::Stdio(
        McpServerStdio::new("everything", "node")
            .args(vec![everything.display().to_string(), "stdio".into()]),
    );
    let load = |answer| {
        let (home, id, ws, server) = (&home, id.clone(), ws.clone(), server.clone());
        async move {
            let seen = Arc::new(Seen::default());
            let loaded = home
                .editor(answer, seen.clone(), async |cx| {
                    cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
                    let load = LoadSessionRequest::new(id, ws).mcp_servers(vec![server]);
                    Ok(cx.send_request(load).block_task().await.is_ok())
                })
                .await;
            let asked = seen.asked.lock().unwrap().len();
            (loaded, asked)
        }
    };
    assert_eq!(load(Answer::Reject).await, (false, 1), "refused: the session stays closed");
    assert_eq!(load(Answer::Allow).await, (true, 1), "allowed: it opens");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_streams_as_thought_chunks_and_a_plan_as_plan_entries() {
    let plan = json!({"plan": [
        {"step": "read the code", "status": "completed"},
        {"step": "fix the bug", "status": "in_progress"}
    ]});
    let list = vec![
        json!({"match": {"userMessage": "plan it", "turnIndex": 0}, "response": {
            "reasoning": "First a plan.", "toolCalls": [{"name": "update_plan", "arguments": plan}]}}),
        json!({"match": {"userMessage": "plan it", "turnIndex": 1}, "response": {"content": "Planned."}}),
    ];
    let Some(mock) = mock(list) else { return };
    let home = Home::new(&mock, "propose");
    let ws = home.workspace();
    let seen = Arc::new(Seen::default());
    let stop = home
        .editor(Answer::Reject, seen.clone(), async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let made = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
            let done =
                cx.send_request(PromptRequest::new(made.session_id, text("plan it"))).block_task().await?;
            Ok(done.stop_reason)
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    let updates = seen.updates();
    let thought: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentThoughtChunk(chunk) => match &chunk.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(thought, "First a plan.");
    let entries = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::Plan(plan) => Some(plan.entries.clone()),
            _ => None,
        })
        .expect("a plan update");
    let shown: Vec<_> = entries.iter().map(|e| (e.content.as_str(), e.status.clone())).collect();
    use agent_client_protocol::v1::schema::PlanEntryStatus;
    assert_eq!(
        shown,
        [("read the code", PlanEntryStatus::Completed), ("fix the bug", PlanEntryStatus::InProgress)]
    );
    assert_eq!(seen.message_text(), "Planned.");
}
