//! A session the server holds: its agent (workspace, configuration, tools,
//! MCP servers), the session itself, its event stream, and the turn that
//! runs, if any. A task sent while a turn runs waits as a follow-up; steering
//! reaches the running turn through the session's inbox.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bosun_agent::Agent;
use bosun_agent::json_events::{RunResult, event_json, result_json};
use bosun_core::{Event, EventSink, Inbox, Session, SinkError, TurnOptions};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::hub::EventHub;

/// A session as the API shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The session id.
    pub id: String,
    /// The workspace's path.
    pub workspace: String,
    /// The model, as `PROVIDER/MODEL` or `local/NAME`.
    pub model: String,
    /// The permission mode (empty for a stored session).
    pub mode: String,
    /// `idle` or `running`; `stored` for one this server does not hold.
    pub state: String,
    /// The first task, shortened.
    pub title: Option<String>,
}

/// Longest title kept, in characters.
const TITLE_CHARS: usize = 80;

pub(crate) struct Hosted {
    pub(crate) id: String,
    workspace: String,
    model: String,
    agent: tokio::sync::Mutex<Option<Agent>>,
    session: tokio::sync::Mutex<Session>,
    inbox: Inbox,
    pub(crate) hub: Arc<EventHub>,
    /// The running turn's cancellation, while one runs.
    running: Mutex<Option<CancellationToken>>,
    /// Serialises starting a turn or queueing a follow-up with a turn's end.
    gate: tokio::sync::Mutex<()>,
    title: Mutex<Option<String>>,
}

/// How a task was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// A turn started on it.
    Started,
    /// A turn was running: it waits as a follow-up.
    Queued,
}

impl Hosted {
    pub(crate) fn new(agent: Agent, session: Session, id: String, hub: Arc<EventHub>) -> Arc<Self> {
        let workspace = session.authority().workspace.as_ref().map(|w| w.path.clone()).unwrap_or_default();
        let model = bosun_agent::model::model_label(agent.settings());
        let title = session.history().iter().find_map(|m| match m {
            bosun_core::Message::User { .. } => Some(shorten(&m.text())),
            _ => None,
        });
        Arc::new(Self {
            id,
            workspace,
            model,
            inbox: session.inbox(),
            agent: tokio::sync::Mutex::new(Some(agent)),
            session: tokio::sync::Mutex::new(session),
            hub,
            running: Mutex::new(None),
            gate: tokio::sync::Mutex::new(()),
            title: Mutex::new(title),
        })
    }

    pub(crate) fn is_running(&self) -> bool {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    pub(crate) async fn view(&self) -> SessionView {
        let mode = self.session.try_lock().map_or_else(|_| None, |s| Some(s.mode().to_string()));
        let mode = match mode {
            Some(mode) => mode,
            None => self.agent_mode().await,
        };
        SessionView {
            id: self.id.clone(),
            workspace: self.workspace.clone(),
            model: self.model.clone(),
            mode,
            state: if self.is_running() { "running" } else { "idle" }.to_owned(),
            title: self.title.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }

    async fn agent_mode(&self) -> String {
        match self.agent.lock().await.as_ref() {
            Some(agent) => agent.settings().mode.to_string(),
            None => String::new(),
        }
    }

    /// Starts a turn on `text`, or queues it when one runs.
    pub(crate) async fn send(self: &Arc<Self>, text: String) -> Result<Taken, String> {
        // Held while deciding and queueing, so the turn that ends meanwhile
        // sees the follow-up (`run` looks at the queue under it too).
        let _gate = self.gate.lock().await;
        if !self.is_running() {
            let cancel = CancellationToken::new();
            *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
            self.title.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(|| shorten(&text));
            tokio::spawn(Arc::clone(self).run(text, cancel));
            return Ok(Taken::Started);
        }
        self.inbox.follow_up(text.clone()).await.map_err(|e| e.to_string())?;
        self.hub.publish(&user_message(&self.id, &text, "follow_up"));
        Ok(Taken::Queued)
    }

    /// Steers the running turn.
    pub(crate) async fn steer(&self, text: String) -> Result<(), String> {
        if !self.is_running() {
            return Err("no turn is running: send the text as a message".into());
        }
        self.inbox.steer(text.clone()).await.map_err(|e| e.to_string())?;
        self.hub.publish(&user_message(&self.id, &text, "steer"));
        Ok(())
    }

    /// Cancels the running turn; `false` when none runs.
    pub(crate) fn cancel(&self) -> bool {
        match self.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Waits until no turn runs.
    pub(crate) async fn idle(&self) {
        let _ = self.session.lock().await;
    }

    /// Stops the session's MCP servers; the session is not used after.
    pub(crate) async fn shut_down(&self) {
        self.cancel();
        self.idle().await;
        if let Some(agent) = self.agent.lock().await.take() {
            agent.shutdown().await;
        }
        self.hub.close().await;
    }

    /// The turn on `text`, then the follow-ups queued meanwhile.
    async fn run(self: Arc<Self>, text: String, cancel: CancellationToken) {
        let mut session = self.session.lock().await;
        let mut sink = HubSink { hub: Arc::clone(&self.hub), session: self.id.clone() };
        self.hub.publish(&user_message(&self.id, &text, "task"));
        let mut started = Instant::now();
        let mut result =
            Some(session.run_with(text, TurnOptions::cancel_on(cancel.clone()), &mut sink).await);
        loop {
            if let Some(result) = result.take() {
                self.hub.publish(&result_json(&self.id, &RunResult::of(&result), started.elapsed()));
            }
            if !cancel.is_cancelled() {
                started = Instant::now();
                result = session.run_queued(TurnOptions::cancel_on(cancel.clone()), &mut sink).await;
                if result.is_some() {
                    continue;
                }
            }
            let _gate = self.gate.lock().await;
            if cancel.is_cancelled() || self.inbox.pending().await.is_empty() {
                *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
                return;
            }
        }
    }
}

/// A served session's own line for a person's text (`task`, `follow_up`,
/// `steer`), so a watcher sees what was asked, not only what was answered.
fn user_message(session: &str, text: &str, kind: &str) -> serde_json::Value {
    serde_json::json!({"type": "user_message", "session_id": session, "kind": kind, "text": text})
}

fn shorten(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(TITLE_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// The turn's events onto the session's stream. Never fails: nobody
/// watching is no reason to stop a turn.
struct HubSink {
    hub: Arc<EventHub>,
    session: String,
}

impl EventSink for HubSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        match event_json(&event, &self.session) {
            Ok(json) => self.hub.publish(&json),
            Err(error) => tracing::error!(%error, "serve: an event could not be serialised"),
        }
        Ok(())
    }
}
