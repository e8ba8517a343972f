//! A temporary home whose user config names aimock, the `bosun` binary,
//! and an editor (the SDK's client half) that records every update and
//! answers permission requests as told.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, KillTerminalResponse, PermissionOptionKind,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate, TerminalOutputRequest, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use bosun_testing::Aimock;
use serde_json::{Value, json};

/// The `bosun` binary: `BOSUN_TEST_BIN`, else the one built beside this test.
pub fn bosun_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("BOSUN_TEST_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    let profile = exe.ancestors().find(|d| d.file_name().is_some_and(|n| n == "deps")).and_then(Path::parent);
    profile.map(|d| d.join("bosun")).filter(|b| b.is_file()).unwrap_or_else(|| {
        panic!("no bosun binary beside {}: build it (cargo build -p bosun-cli)", exe.display())
    })
}

pub fn mock(list: Vec<Value>) -> Option<Aimock> {
    Aimock::start(&json!({ "fixtures": list }))
}

/// How the editor's person answers a permission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Allow,
    Reject,
    /// Never answers (until the test ends): the request stays pending.
    Hold,
}

/// What the editor saw.
#[derive(Default)]
pub struct Seen {
    pub updates: Mutex<Vec<SessionUpdate>>,
    pub asked: Mutex<Vec<RequestPermissionRequest>>,
    pub held: Mutex<Vec<Responder<RequestPermissionResponse>>>,
    pub asked_signal: tokio::sync::Notify,
    /// Told when a running call's output is shown.
    pub output_signal: tokio::sync::Notify,
    /// The files the agent wrote through the editor.
    pub written: Mutex<Vec<WriteTextFileRequest>>,
    /// The files the agent read through the editor.
    pub read: Mutex<Vec<ReadTextFileRequest>>,
    /// The editor's open buffers, by absolute path: what it answers a read
    /// with (the disk where none is open).
    pub buffers: Mutex<HashMap<PathBuf, String>>,
    /// Set: a write lands in the buffer and is not saved to disk.
    pub unsaved: AtomicBool,
    /// The terminals it ran.
    pub terminals: crate::terminals::Terminals,
}

impl Seen {
    pub fn updates(&self) -> Vec<SessionUpdate> {
        self.updates.lock().unwrap().clone()
    }

    /// The agent's message chunks' text, joined.
    pub fn message_text(&self) -> String {
        self.updates()
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    agent_client_protocol::v1::schema::ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    /// A home whose user config names `mock`, in `mode`, with a workspace
    /// `ws` (a git repository).
    pub fn new(mock: &Aimock, mode: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/bosun")).unwrap();
        std::fs::write(
            dir.path().join("xdg/bosun/config.toml"),
            format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\nmode = \"{mode}\"\n", mock.url()),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Self { dir }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn agent(&self) -> AcpAgent {
        let root = self.dir.path().display().to_string();
        AcpAgent::new(
            AcpAgentConfig::new(bosun_bin())
                .arg("acp")
                .env("HOME", format!("{root}/home"))
                .env("XDG_CONFIG_HOME", format!("{root}/xdg"))
                .env("BOSUN_HOME", format!("{root}/bosun"))
                .env("OPENAI_API_KEY", "test"),
        )
    }

    /// Runs `script` as an editor connected to `bosun acp`, answering
    /// permission requests with `answer`.
    pub async fn editor<R>(
        &self,
        answer: Answer,
        seen: Arc<Seen>,
        script: impl AsyncFnOnce(ConnectionTo<Agent>) -> agent_client_protocol::Result<R>,
    ) -> R {
        let (updates, asked, written, read) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
        let (create, output, wait, kill, release) =
            (seen.clone(), seen.clone(), seen.clone(), seen.clone(), seen.clone());
        let run = Client
            .v1()
            .name("test-editor")
            .on_receive_notification(
                async move |notification: SessionNotification, _cx| {
                    if let SessionUpdate::ToolCallUpdate(update) = &notification.update
                        && update.fields.status.is_none()
                        && update.fields.content.as_ref().is_some_and(|c| !c.is_empty())
                    {
                        updates.output_signal.notify_one();
                    }
                    updates.updates.lock().unwrap().push(notification.update);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, _cx| {
                    let kind = match answer {
                        Answer::Allow => Some(PermissionOptionKind::AllowOnce),
                        Answer::Reject => Some(PermissionOptionKind::RejectOnce),
                        Answer::Hold => None,
                    };
                    let option = kind
                        .and_then(|kind| request.options.iter().find(|o| o.kind == kind))
                        .map(|o| o.option_id.clone());
                    asked.asked.lock().unwrap().push(request);
                    asked.asked_signal.notify_one();
                    match option {
                        Some(id) => responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                        )),
                        None => {
                            asked.held.lock().unwrap().push(responder);
                            Ok(())
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: WriteTextFileRequest, responder, _cx| {
                    if written.unsaved.load(Ordering::SeqCst) {
                        let mut buffers = written.buffers.lock().unwrap();
                        buffers.insert(request.path.clone(), request.content.clone());
                    } else {
                        // The editor writes the file, as its buffer would be saved.
                        if let Some(parent) = request.path.parent() {
                            std::fs::create_dir_all(parent).unwrap();
                        }
                        std::fs::write(&request.path, &request.content).unwrap();
                    }
                    written.written.lock().unwrap().push(request);
                    responder.respond(WriteTextFileResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ReadTextFileRequest, responder, _cx| {
                    let open = read.buffers.lock().unwrap().get(&request.path).cloned();
                    let text = open.or_else(|| std::fs::read_to_string(&request.path).ok());
                    read.read.lock().unwrap().push(request);
                    match text {
                        Some(text) => responder.respond(ReadTextFileResponse::new(text)),
                        None => responder.respond_with_error(
                            agent_client_protocol::Error::internal_error().data(json!("no such file")),
                        ),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: CreateTerminalRequest, responder, _cx| {
                    responder.respond(create.terminals.create(request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: TerminalOutputRequest, responder, _cx| {
                    responder.respond(output.terminals.get(&request.terminal_id.0).output())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: WaitForTerminalExitRequest, responder, cx| {
                    // In a task of its own: the loop stays free meanwhile.
                    let term = wait.terminals.get(&request.terminal_id.0);
                    cx.spawn(
                        async move { responder.respond(WaitForTerminalExitResponse::new(term.wait().await)) },
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: KillTerminalRequest, responder, _cx| {
                    kill.terminals.get(&request.terminal_id.0).kill();
                    kill.terminals.killed.lock().unwrap().push(request.terminal_id.0.to_string());
                    responder.respond(KillTerminalResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ReleaseTerminalRequest, responder, _cx| {
                    release.terminals.get(&request.terminal_id.0).kill();
                    release.terminals.released.lock().unwrap().push(request.terminal_id.0.to_string());
                    responder.respond(ReleaseTerminalResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(self.agent(), script);
        tokio::time::timeout(std::time::Duration::from_secs(60), run)
            .await
            .expect("the editor's script timed out")
            .unwrap()
    }
}
