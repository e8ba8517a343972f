//! `bosun` with no subcommand, in a terminal: a conversation in the
//! workspace. The terminal UI (`bosun-tui`) draws and reads keys; this
//! module is its client of the session, as `exec` is: it builds or resumes
//! the session, runs turns with the UI as their event sink and approver,
//! passes steering and follow-ups to the session's inbox while a turn runs,
//! and answers slash commands. No agent logic lives here or in the UI.

mod commands;
mod custom;
mod inspect;
mod model;
mod plan;
mod rewind;
mod setup;
mod slash;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Result, bail};
use bosun_core::permission::{AcceptFuture, ApprovalFuture};
use bosun_core::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, Event, EventSink, Inbox, Reason, Session, SinkError,
    TurnOptions, UserInput,
};
use bosun_tui::{FromUi, NoticeKind, QueuedKind, Status, ToUi};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::approve::AuthorityAnswer;
use crate::cli::RunOptions;
use crate::config::{self, Env};
use crate::exec::{Outcome, Stored};
use crate::output::Palettes;
use bosun_agent::Agent;

/// The line printed when there is no terminal to converse on.
const NO_TERMINAL: &str =
    "no terminal to converse on: run one task with `bosun exec \"TASK\"` (or pipe it: `bosun exec -`)";

/// Whether stdin and stdout are both a terminal.
pub fn has_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `bosun` (and `bosun resume` with no prompt) in a terminal: a new
/// conversation, or the stored session `resume` names.
pub async fn run(
    dir: Option<&Path>,
    profile: Option<&str>,
    run: RunOptions,
    (resume, first): (Option<Stored>, Option<String>),
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    if !has_terminal() {
        match first {
            // The task is there: say the command that runs it.
            Some(task) => bail!(
                "no terminal to converse on: run this task with `bosun exec {}`",
                bosun_tui::wording::quote_argv(&[serde_json::Value::String(
                    crate::sanitize::line(&task).into_owned()
                )])
            ),
            None => bail!(NO_TERMINAL),
        }
    }
    let dir = crate::config::workdir(dir)?;
    setup::ask_trust(&dir, env)?;
    let settings = config::resolve(&dir, env, profile, &(&run).into())?;
    // A stored session's own model, before the agent's tools are chosen by it.
    let (resume, settings) = match resume {
        Some(which) => {
            let Some(which) = which.or_pick(&dir, env, &settings, ("resume", false)).await? else {
                return Ok(crate::exec::cancelled());
            };
            let (which, settings) = which.resolved(&dir, env, &settings)?;
            (Some(which), settings)
        }
        None => (None, settings),
    };
    crate::exec::notice_ignored(&settings, &run, palettes.stderr);
    let answers = crate::mcp::no_requests();
    let route = NoticeRoute::default();
    let notices = route.notices(palettes);
    let agent = crate::exec::start_agent_telling(&dir, env, &settings, answers, notices).await?;
    let outcome = converse(&agent, settings, run, (resume, first), env, (profile, palettes), &route).await;
    agent.shutdown().await;
    outcome
}

async fn converse(
    agent: &Agent,
    settings: config::Settings,
    run: RunOptions,
    (resume, first): (Option<Stored>, Option<String>),
    env: &Env,
    (profile, palettes): (Option<&str>, Palettes),
    route: &NoticeRoute,
) -> Result<Outcome> {
    let (to_ui, to_ui_rx) = unbounded_channel();
    let (from_ui_tx, from_ui) = unbounded_channel();
    let ui_running = Arc::new(AtomicBool::new(false));
    let approver: Arc<dyn ApprovalHandler> = Arc::new(UiApprover {
        to_ui: to_ui.clone(),
        workspace: agent.workspace().clone(),
        authority: AuthorityAnswer::for_run(run.accept_authority, palettes.tty),
        ui_running: Arc::clone(&ui_running),
    });
    let mut conversation =
        Conversation::open(agent, settings, run, env, profile, to_ui.clone(), approver, resume).await?;
    let mut options = setup::ui_options(&conversation, env);
    options.first_message = first;
    let signals = exit_on_signals(from_ui_tx.clone());
    let ui = tokio::spawn(bosun_tui::run(options, to_ui_rx, from_ui_tx));
    ui_running.store(true, Ordering::SeqCst);
    route.to(Some(to_ui.clone()));
    conversation.show_opening();
    let result = conversation.serve(from_ui).await;
    let _ = to_ui.send(ToUi::Exit);
    route.to(None);
    let ui_result = ui.await;
    signals.abort();
    // The UI has restored the terminal: plain lines from here on.
    let id = conversation.id.clone();
    eprintln!("session {id}; continue it with `bosun resume {id}`");
    result?;
    match ui_result {
        Ok(Ok(())) => Ok(Outcome::Success),
        Ok(Err(error)) => Err(anyhow::Error::new(error).context("the terminal failed")),
        Err(error) => Err(anyhow::anyhow!("the terminal UI stopped: {error}")),
    }
}

/// Where the agent's notices go: stderr until the UI runs, then its
/// scrollback (a line printed under the raw-mode UI would tear its screen),
/// and stderr again once it has restored the terminal.
#[derive(Clone, Default)]
struct NoticeRoute(Arc<Mutex<Option<UnboundedSender<ToUi>>>>);

impl NoticeRoute {
    fn to(&self, ui: Option<UnboundedSender<ToUi>>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = ui;
    }

    fn notices(&self, palettes: Palettes) -> bosun_agent::Notices {
        let (route, stderr) = (self.clone(), crate::mcp::stderr_notices(palettes.stderr));
        bosun_agent::Notices::new(move |notice| {
            let ui = route.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let Some(ui) = ui else { return stderr.tell(notice) };
            let kind = match notice {
                bosun_agent::Notice::Warning(_) => NoticeKind::Warning,
                _ => NoticeKind::Info,
            };
            if let Err(unsent) = ui.send(ToUi::Notice { text: notice.text().to_owned(), kind })
                && let ToUi::Notice { text, .. } = unsent.0
            {
                stderr.info(text);
            }
        })
    }
}

/// SIGTERM and SIGHUP end the conversation as Ctrl+D does: the running
/// turn is cancelled to a checkpoint and the terminal is restored, rather
/// than the process dying in raw mode.
fn exit_on_signals(from_ui: UnboundedSender<FromUi>) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut hangup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup()))
        else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = hangup.recv() => {}
        }
        let _ = from_ui.send(FromUi::Exit);
    })
}

/// The model of a parked conversation, between letting go of a session and
/// opening the next: it answers every request with an error.
#[derive(Debug)]
struct Parked;

impl bosun_core::Model for Parked {
    fn capabilities(&self) -> bosun_core::Capabilities {
        bosun_core::Capabilities::all()
    }

    fn stream<'a>(
        &'a self,
        _: bosun_core::ModelRequest<'a>,
        _: CancellationToken,
    ) -> bosun_core::ModelStream<'a> {
        let error = bosun_core::ModelError::InvalidRequest("no session is open: use /resume or /new".into());
        Box::pin(futures_util::stream::once(async move { Err(error) }))
    }
}

/// What the session spent as the status line shows it.
#[derive(Clone, Copy, Debug, Default)]
struct Spent {
    tokens: u64,
    cost_micros: Option<u64>,
    /// Any turn ran with no known cost: the total is unknown then.
    unpriced: bool,
    context: Option<u64>,
}

/// The session a conversation is on, and what it needs to rebuild one.
struct Conversation<'a> {
    agent: &'a Agent,
    settings: config::Settings,
    run: RunOptions,
    env: &'a Env,
    profile: Option<&'a str>,
    to_ui: UnboundedSender<ToUi>,
    approver: Arc<dyn ApprovalHandler>,
    session: Session,
    id: String,
    spent: Arc<Mutex<Spent>>,
    /// Forwards the inbox's queue to the UI; replaced with the session.
    queue_watch: tokio::task::JoinHandle<()>,
    /// The custom slash commands, found when the conversation opened.
    custom: bosun_tools::commands::Commands,
    /// What was wrong with them, said once the UI runs.
    custom_warnings: Vec<String>,
}

impl Drop for Conversation<'_> {
    fn drop(&mut self) {
        self.queue_watch.abort();
    }
}

/// What serving one message from the UI leads to.
enum Flow {
    Continue,
    Exit,
}

impl<'a> Conversation<'a> {
    #[allow(clippy::too_many_arguments)]
    async fn open(
        agent: &'a Agent,
        settings: config::Settings,
        run: RunOptions,
        env: &'a Env,
        profile: Option<&'a str>,
        to_ui: UnboundedSender<ToUi>,
        approver: Arc<dyn ApprovalHandler>,
        resume: Option<Stored>,
    ) -> Result<Self> {
        let (session, id, settings) = setup::session(agent, &settings, &approver, resume).await?;
        let queue_watch = watch_queue(session.inbox(), to_ui.clone());
        let builtins = slash::list();
        let reserved: Vec<&str> = builtins.iter().map(|c| c.name.as_str()).collect();
        let found = bosun_agent::parts::commands(agent.workspace(), &settings, env, &reserved);
        Ok(Self {
            agent,
            settings,
            run,
            env,
            profile,
            to_ui,
            approver,
            session,
            id,
            spent: Arc::default(),
            queue_watch,
            custom: found.commands,
            custom_warnings: found.warnings,
        }
        .with_stored_spend())
    }

    fn with_stored_spend(self) -> Self {
        self.load_stored_spend();
        self
    }

    /// Starts the status line's counts from what the store holds of the
    /// session (a resumed one has spent already).
    fn load_stored_spend(&self) {
        let stored =
            bosun_agent::parts::store(&self.settings, self.env).and_then(|s| Ok(s.show(&self.id)?.summary));
        if let Ok(summary) = stored {
            let total = summary.spend.total();
            let tokens = bosun_core::turn_tokens(&summary.usage);
            let unpriced = total.cost_micros.is_none() && tokens > 0;
            let spent = Spent { tokens, cost_micros: total.cost_micros, unpriced, context: None };
            *self.spent.lock().unwrap_or_else(PoisonError::into_inner) = spent;
        }
    }

    /// Lets go of the session (its journal and lease): a session on a model
    /// that answers nothing stands in until [`Conversation::switch`].
    async fn park(&mut self) -> Result<()> {
        self.queue_watch.abort();
        // The watcher holds an inbox, and so the journal: wait until it is
        // gone.
        let _ = (&mut self.queue_watch).await;
        let parked = Session::builder(Parked).build().await?;
        drop(std::mem::replace(&mut self.session, parked));
        Ok(())
    }

    /// Puts the conversation on `session` (a new one, another stored one,
    /// or this one on another model), which runs under `settings`: the
    /// status line shows what they and the session say, nothing else.
    fn switch(&mut self, session: Session, id: String, settings: config::Settings) {
        self.queue_watch.abort();
        self.queue_watch = watch_queue(session.inbox(), self.to_ui.clone());
        self.session = session;
        self.id = id;
        self.settings = settings;
        self.load_stored_spend();
        self.send_status();
    }

    /// The files `@` offers, walked again after a turn: it may have made or
    /// removed some.
    async fn send_paths(&self) {
        let workspace = self.agent.workspace().clone();
        if let Ok(paths) = tokio::task::spawn_blocking(move || setup::workspace_paths(&workspace)).await {
            let _ = self.to_ui.send(ToUi::Paths(paths));
        }
    }

    fn notice(&self, kind: NoticeKind, text: impl Into<String>) {
        let _ = self.to_ui.send(ToUi::Notice { text: text.into(), kind });
    }

    /// The status line, derived from the session's state: its mode, the
    /// model of the settings it runs under, its id and what it spent.
    fn status(&self) -> Status {
        let spent = *self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let mut status = Status::new(model::shown(&self.settings), self.session.mode().to_string(), &self.id);
        status.tokens = spent.tokens;
        status.cost_micros = if spent.unpriced { None } else { spent.cost_micros };
        status.context_used = spent.context.zip(self.session.context_window());
        status
    }

    fn send_status(&self) {
        let _ = self.to_ui.send(ToUi::Status(self.status()));
    }

    /// What a resumed session shows first: its messages so far, in short.
    fn show_opening(&self) {
        for warning in &self.custom_warnings {
            self.notice(NoticeKind::Warning, format!("custom commands: {warning}"));
        }
        let history = self.session.history();
        if history.is_empty() {
            return;
        }
        self.notice(NoticeKind::Info, format!("resumed session {} ({} messages)", self.id, history.len()));
        for message in history.iter().rev().take(6).rev() {
            let line = match message {
                bosun_core::Message::User { content } => {
                    let mut line = format!("› {}", first_line(&message.text()));
                    // The file's name is not kept, only the image.
                    for part in content {
                        if let bosun_core::ContentPart::Image { media_type, data } = part {
                            let size = bosun_core::message::byte_size(data.len());
                            line.push_str(&format!("\n  [image: {media_type}, {size}]"));
                        }
                    }
                    line
                }
                bosun_core::Message::Assistant { .. } if !message.text().is_empty() => {
                    first_line(&message.text())
                }
                _ => continue,
            };
            self.notice(NoticeKind::Info, line);
        }
        if let Some(prompt) = self.session.interrupted_prompt() {
            self.notice(
                NoticeKind::Warning,
                format!(
                    "the last turn was interrupted before it changed anything: {}",
                    first_line(&prompt.text())
                ),
            );
        }
    }

    /// Serves the UI until it asks to exit or goes away.
    async fn serve(&mut self, mut from_ui: UnboundedReceiver<FromUi>) -> Result<()> {
        self.send_status();
        while let Some(message) = from_ui.recv().await {
            let flow = match message {
                FromUi::Submit(text) | FromUi::Steer(text) | FromUi::FollowUp(text) => {
                    if text.trim().is_empty() {
                        self.run_queued(&mut from_ui).await
                    } else if let Some(prompt) = self.message(&text, setup::Writer::Person) {
                        self.turn(Some(prompt), &mut from_ui).await
                    } else {
                        // Not sent: the words go back to be edited.
                        let _ = self.to_ui.send(ToUi::Unsent(text));
                        Flow::Continue
                    }
                }
                FromUi::Unqueue(id) => {
                    spawn_withdraw(self.session.inbox(), id, self.to_ui.clone());
                    Flow::Continue
                }
                FromUi::Cancel => Flow::Continue,
                FromUi::Shell(command) => self.shell(&command, &mut from_ui).await,
                FromUi::Command { name, args } => self.command(&name, &args, &mut from_ui).await,
                FromUi::EditPrevious => {
                    if let Err(error) = self.edit_previous() {
                        self.notice(NoticeKind::Error, format!("{error:#}"));
                    }
                    Flow::Continue
                }
                FromUi::Resend { turn, text } => self.resend(turn, text, &mut from_ui).await,
                FromUi::CycleMode => {
                    self.cycle_mode();
                    Flow::Continue
                }
                FromUi::Exit => Flow::Exit,
                _ => Flow::Continue,
            };
            if matches!(flow, Flow::Exit) {
                break;
            }
        }
        Ok(())
    }

    /// Delivers what the queue holds (Enter on an empty editor).
    async fn run_queued(&mut self, from_ui: &mut UnboundedReceiver<FromUi>) -> Flow {
        if self.session.queued().await.is_empty() {
            return Flow::Continue;
        }
        self.turn(None, from_ui).await
    }

    /// Runs a turn (`prompt`, or the queue's next message when `None`),
    /// serving the UI meanwhile: steering and follow-ups go to the inbox,
    /// Esc and Ctrl+C cancel, an exit cancels and then exits.
    async fn turn(&mut self, prompt: Option<UserInput>, from_ui: &mut UnboundedReceiver<FromUi>) -> Flow {
        let cancel = CancellationToken::new();
        let _ = self.to_ui.send(ToUi::Busy(true));
        let mut sink = UiSink::new(self.to_ui.clone(), Arc::clone(&self.spent));
        let options = TurnOptions::cancel_on(cancel.clone());
        let inbox = self.session.inbox();
        let to_ui = self.to_ui.clone();
        let attaching = self.attaching();
        // Queued words get their attachments as a sent message does; one
        // refused goes back to the editor.
        let queue =
            |kind: QueuedKind, text: String| match attaching.message(&text, setup::Writer::Person, &to_ui) {
                Some(input) => spawn_queue(inbox.clone(), kind, input, to_ui.clone()),
                None => {
                    let _ = to_ui.send(ToUi::Unsent(text));
                }
            };
        let session = &mut self.session;
        let result = {
            let turn = async {
                match prompt {
                    Some(prompt) => Some(session.run_with(prompt, options, &mut sink).await),
                    None => session.run_queued(options, &mut sink).await,
                }
            };
            tokio::pin!(turn);
            let mut exit = false;
            loop {
                tokio::select! {
                    result = &mut turn => break (result, exit),
                    message = from_ui.recv() => match message {
                        // The inbox waits on the journal's lock, which the
                        // turn may hold: never await it here, or the turn
                        // would not be polled to let go of it.
                        Some(FromUi::Steer(text)) => queue(QueuedKind::Steer, text),
                        Some(FromUi::FollowUp(text) | FromUi::Submit(text)) => queue(QueuedKind::FollowUp, text),
                        Some(FromUi::Unqueue(id)) => spawn_withdraw(inbox.clone(), id, to_ui.clone()),
                        Some(FromUi::Cancel) => cancel.cancel(),
                        Some(FromUi::Exit) | None => {
                            cancel.cancel();
                            exit = true;
                        }
                        Some(FromUi::Shell(_) | FromUi::Command { .. }) => {
                            let busy = "a turn is running: wait for it, or Esc to stop it";
                            let _ = to_ui.send(ToUi::Notice { text: busy.into(), kind: NoticeKind::Warning });
                        }
                        Some(_) => {}
                    },
                }
            }
        };
        let _ = self.to_ui.send(ToUi::Busy(false));
        self.send_status();
        self.send_paths().await;
        let (result, exit) = result;
        match result {
            Some(Err(error)) if error.is_cancelled() => {
                let said = if self.session.interrupted_prompt().is_some() {
                    "cancelled before anything was done: the turn left no trace (Up brings your message back)"
                } else {
                    "cancelled: the session keeps what was done; type to go on"
                };
                self.notice(NoticeKind::Warning, said);
            }
            Some(Err(error)) if !error.to_string().is_empty() && sink_missed(&error) => {
                self.notice(NoticeKind::Error, format!("the turn failed: {error}"));
            }
            Some(Ok(_)) if !exit && sink.planned && self.session.mode() == bosun_core::Mode::Plan => {
                return Box::pin(self.offer_plan(from_ui)).await;
            }
            _ => {}
        }
        if exit { Flow::Exit } else { Flow::Continue }
    }
}

/// Whether a failed turn's error was not already shown by an `error` event
/// (the UI shows those; a journal or sink failure may have none).
fn sink_missed(error: &bosun_core::TurnError) -> bool {
    matches!(error.kind, bosun_core::TurnErrorKind::Sink(_) | bosun_core::TurnErrorKind::JournalLost(_))
}

/// The first line of `text` that is not blank, at most 100 characters,
/// with `…` when more was left out.
pub(crate) fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let mut shown: String = line.chars().take(100).collect();
    if line.chars().count() > 100 || text.lines().filter(|l| !l.trim().is_empty()).count() > 1 {
        shown.push('…');
    }
    shown
}

/// Sends the inbox's queue to the UI whenever it changes.
fn watch_queue(inbox: Inbox, to_ui: UnboundedSender<ToUi>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = inbox.changes();
        loop {
            let queued = inbox
                .pending()
                .await
                .into_iter()
                .map(|q| {
                    let kind = match q.delivery {
                        bosun_core::Delivery::Steer => QueuedKind::Steer,
                        bosun_core::Delivery::FollowUp => QueuedKind::FollowUp,
                    };
                    bosun_tui::Queued::new(q.id, kind, q.message.text())
                })
                .collect();
            if to_ui.send(ToUi::Queue(queued)).is_err() || changes.changed().await.is_err() {
                return;
            }
        }
    })
}

fn spawn_queue(inbox: Inbox, kind: QueuedKind, input: UserInput, to_ui: UnboundedSender<ToUi>) {
    tokio::spawn(async move {
        let queued = match kind {
            QueuedKind::Steer => inbox.steer(input).await,
            _ => inbox.follow_up(input).await,
        };
        if let Err(error) = queued {
            let _ =
                to_ui.send(ToUi::Notice { text: format!("not queued: {error}"), kind: NoticeKind::Error });
        }
    });
}

fn spawn_withdraw(inbox: Inbox, id: u64, to_ui: UnboundedSender<ToUi>) {
    tokio::spawn(async move {
        match inbox.withdraw(id).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                let late = "too late to take it back: it was already delivered";
                let _ = to_ui.send(ToUi::Notice { text: late.into(), kind: NoticeKind::Warning });
            }
            Err(error) => {
                let _ = to_ui
                    .send(ToUi::Notice { text: format!("not taken back: {error}"), kind: NoticeKind::Error });
            }
        }
    });
}

/// The UI as a turn's event sink; counts what the session spends.
struct UiSink {
    to_ui: UnboundedSender<ToUi>,
    spent: Arc<Mutex<Spent>>,
    /// The model set its plan during the turn.
    planned: bool,
}

impl UiSink {
    fn new(to_ui: UnboundedSender<ToUi>, spent: Arc<Mutex<Spent>>) -> Self {
        Self { to_ui, spent, planned: false }
    }
}

impl EventSink for UiSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        {
            let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
            match &event {
                Event::ModelRoundEnd { usage, .. } => {
                    spent.context = Some(usage.input + usage.cache_read + usage.cache_write + usage.output);
                }
                Event::TurnEnd { usage, cost_micros, .. } => {
                    spent.tokens += bosun_core::turn_tokens(usage);
                    match cost_micros {
                        Some(cost) => spent.cost_micros = Some(spent.cost_micros.unwrap_or(0) + cost),
                        None => spent.unpriced |= !bosun_core::Usage::is_zero(usage),
                    }
                }
                Event::PlanUpdated { .. } => self.planned = true,
                _ => {}
            }
        }
        // A UI gone is a person gone: the turn stops (invariant 14).
        self.to_ui.send(ToUi::Event(event)).map_err(|_| SinkError::new("the terminal UI is gone"))
    }
}

/// Asks in the UI's approval modal, with a diff of a file change when the
/// workspace can tell it.
struct UiApprover {
    to_ui: UnboundedSender<ToUi>,
    workspace: bosun_tools::Workspace,
    /// How a wider authority is answered before the UI runs (the session
    /// the conversation opens with), and whether `--accept-authority` was given.
    authority: AuthorityAnswer,
    /// Once it runs, the UI asks (a `/resume`).
    ui_running: Arc<AtomicBool>,
}

impl std::fmt::Debug for UiApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiApprover").finish_non_exhaustive()
    }
}

impl ApprovalHandler for UiApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let workspace = self.workspace.clone();
            let (tool, arguments) = (request.tool.clone(), request.arguments.clone());
            let diff =
                tokio::task::spawn_blocking(move || bosun_tools::preview(&workspace, &tool, &arguments))
                    .await
                    .ok()
                    .flatten();
            let (reply, answer) = oneshot::channel();
            let denied = |text: &str| ApprovalDecision::Deny { reason: Reason::lossy(text, "denied") };
            if self.to_ui.send(ToUi::Approval { request: request.clone(), diff, reply }).is_err() {
                return denied("the terminal UI is gone, so nobody could approve this call");
            }
            answer.await.unwrap_or_else(|_| denied("the approval was not answered"))
        })
    }

    fn accept_authority<'a>(&'a self, change: &'a bosun_core::AuthorityChange) -> AcceptFuture<'a> {
        Box::pin(async move {
            if matches!(self.authority, AuthorityAnswer::Accept) || !self.ui_running.load(Ordering::SeqCst) {
                return self.authority.answer(change).await;
            }
            let (reply, answer) = oneshot::channel();
            let title = crate::approve::AUTHORITY_QUESTION.to_owned();
            if self.to_ui.send(ToUi::Confirm { title, body: change.to_string(), reply }).is_err() {
                return false;
            }
            answer.await.unwrap_or(false)
        })
    }
}
