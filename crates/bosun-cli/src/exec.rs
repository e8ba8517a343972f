//! Running turns: `bosun exec` and `bosun resume` build a session, drive one
//! turn with the chosen output, and map the result to an exit code.
//!
//! From the moment the MCP servers start until the command returns, Ctrl-C,
//! SIGTERM and SIGHUP are bosun's to handle ([`Signals`]), so that no child
//! outlives it: the first one cancels what runs (the turn is wound down to
//! its checkpoint and the shell's process group killed, or the servers'
//! start-up is abandoned, which kills their groups), the servers are
//! stopped, and bosun exits with 128 + the signal (130, 143, 129).

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use bosun_core::{ApprovalHandler, EventSink, Session, StopReason, TurnOptions, UserInput};
use tokio_util::sync::CancellationToken;

use crate::approve::{ApproveAll, AuthorityAnswer, NoTerminal, TerminalPrompt, WithAuthority};
use crate::cli::{CompactArgs, ExecArgs, ResumeArgs, RunOptions};
use crate::config::{self, Env};
use crate::output::{HumanSink, Palette, Palettes};
use crate::sanitize;
use bosun_agent::json_events::{RunResult, init_json};
use bosun_agent::mcp::ServerRequests;
use bosun_agent::output_schema::AnswerSchema;
use bosun_agent::{Agent, StoredSession};

/// How a command ended. Its exit code is the table in docs/cli.md ("Exit
/// codes"); an error returned instead exits 2, or 3 when the session store
/// is what failed (`main::fatal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// The turn failed (model error, limit reached, …).
    TurnFailed,
    /// The session store could not be written: the disk is full or the
    /// file is damaged (the error names it and what to do).
    StoreFailed,
    /// The person cancelled a choice bosun asked for (Esc in the session
    /// picker); nothing ran.
    Cancelled,
    /// Stopped by a signal: the turn cancelled (resumable), every child
    /// stopped.
    Interrupted(Stop),
}

impl Outcome {
    /// The process exit code: 0, 1, 3, or 128 + the signal (130 for Ctrl-C,
    /// 143 for SIGTERM, 129 for SIGHUP), as a shell reports a process the
    /// signal killed; a cancelled choice is 130 too, as Ctrl-C would be.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::TurnFailed => 1,
            Self::StoreFailed => 3,
            Self::Cancelled => 128 + Stop::Interrupt.number(),
            Self::Interrupted(stop) => 128 + stop.number(),
        }
    }

    /// The outcome of a turn (or compaction) that failed with `error`: the
    /// store's when its journal could not be written for want of space or
    /// a sound file, the turn's otherwise.
    pub(crate) fn of_failed(error: &bosun_core::TurnError) -> Self {
        use bosun_core::{JournalErrorKind, TurnErrorKind};
        match &error.kind {
            TurnErrorKind::Journal(journal) | TurnErrorKind::JournalLost(journal)
                if matches!(journal.kind(), JournalErrorKind::Full | JournalErrorKind::Corrupt) =>
            {
                Self::StoreFailed
            }
            _ => Self::TurnFailed,
        }
    }
}

/// The signal that stopped a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: a supervisor, `kill`, a shutdown.
    Terminate,
    /// SIGHUP: the terminal went away.
    HangUp,
}

impl Stop {
    fn number(self) -> u8 {
        match self {
            Self::Interrupt => 2,
            Self::Terminate => 15,
            Self::HangUp => 1,
        }
    }

    /// What happened, for the line saying so.
    fn said(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupted",
            Self::Terminate => "interrupted by SIGTERM",
            Self::HangUp => "interrupted by SIGHUP",
        }
    }
}

/// Ctrl-C, SIGTERM and SIGHUP, watched for the rest of a command. Once
/// watched, none of them kills bosun (which would leave a running tool's
/// process group behind): the first cancels [`Signals::token`] and is kept
/// for the exit code; later ones are ignored while bosun winds down.
pub(crate) struct Signals {
    cancel: CancellationToken,
    received: Arc<OnceLock<Stop>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Signals {
    pub(crate) fn watch() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| signal(kind).context("cannot watch for signals");
        let mut interrupt = listen(SignalKind::interrupt())?;
        let mut terminate = listen(SignalKind::terminate())?;
        let mut hangup = listen(SignalKind::hangup())?;
        let cancel = CancellationToken::new();
        let received = Arc::new(OnceLock::new());
        let (on_signal, first) = (cancel.clone(), Arc::clone(&received));
        let watcher = tokio::spawn(async move {
            let stop = tokio::select! {
                _ = interrupt.recv() => Stop::Interrupt,
                _ = terminate.recv() => Stop::Terminate,
                _ = hangup.recv() => Stop::HangUp,
            };
            let _ = first.set(stop);
            on_signal.cancel();
        });
        Ok(Self { cancel, received, watcher })
    }

    /// Cancelled by the first signal: a turn's cancellation.
    pub(crate) fn token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// `work`, unless a signal comes first: then `None`, and `work` is
    /// dropped with what it started (a starting MCP server's process group
    /// is killed by its drop).
    pub(crate) async fn unless_stopped<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            done = work => Some(done),
        }
    }

    /// The outcome of a command a signal stopped.
    pub(crate) fn stopped(&self) -> Outcome {
        Outcome::Interrupted(self.stop())
    }

    fn stop(&self) -> Stop {
        self.received.get().copied().unwrap_or(Stop::Interrupt)
    }

    /// The outcome of a command a signal stopped before any turn ran,
    /// saying so unless the output is JSON.
    fn stopped_before_a_turn(&self, json: bool) -> Outcome {
        if !json {
            eprintln!("\n{}; no turn ran", self.stop().said());
        }
        self.stopped()
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

fn approver(run: &RunOptions, tty: Palette) -> Arc<dyn ApprovalHandler> {
    let calls: Arc<dyn ApprovalHandler> = if run.dangerously_approve_all {
        Arc::new(ApproveAll)
    } else if crate::approve::has_terminal() {
        Arc::new(TerminalPrompt::new(tty))
    } else {
        Arc::new(NoTerminal)
    };
    // Approving every call is not accepting more authority: that has its
    // own flag.
    let authority = AuthorityAnswer::for_run(run.accept_authority, tty);
    Arc::new(WithAuthority::new(calls, authority))
}

/// The prompt: the argument, stdin (`-` or no argument), or the argument
/// with piped stdin as extra context.
fn read_prompt(arg: Option<String>) -> Result<String> {
    let stdin_piped = !std::io::stdin().is_terminal();
    let read_stdin = || -> Result<String> {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read stdin")?;
        Ok(text)
    };
    let prompt = match arg.as_deref() {
        Some("-") => read_stdin()?,
        Some(text) if stdin_piped => {
            let context = read_stdin()?;
            if context.trim().is_empty() {
                text.to_owned()
            } else {
                format!("{text}\n\n<stdin>\n{}\n</stdin>", context.trim_end())
            }
        }
        Some(text) => text.to_owned(),
        None if stdin_piped => read_stdin()?,
        None => bail!("no task given: `bosun exec \"TASK\"`, or pipe it on stdin with `bosun exec -`"),
    };
    if prompt.trim().is_empty() {
        bail!("the task is empty");
    }
    Ok(prompt)
}

/// Lines on stderr naming what the project's config set and bosun left
/// out, and (unless `--json` keeps stderr quiet) a context window bosun had
/// to assume.
pub(crate) fn notice_ignored(settings: &config::Settings, run: &RunOptions, stderr: Palette) {
    if let Some(notice) = settings.project.as_ref().and_then(config::ProjectConfig::notice) {
        eprintln!("{}", stderr.dim(&sanitize::line(&format!("bosun: {notice}"))));
    }
    for notice in &settings.hook_notices {
        eprintln!("{}", stderr.dim(&sanitize::line(&format!("bosun: {notice}"))));
    }
    if let Some(notice) = bosun_agent::model::window_notice(settings).ok().flatten().filter(|_| !run.json) {
        eprintln!("{}", stderr.dim(&sanitize::line(&notice)));
    }
}

/// The agent of a command: the workspace and its tools, the configured MCP
/// servers started and their tools added, notices on stderr (advice left
/// out when `json` keeps stderr quiet). Shut it down on every way out.
pub(crate) async fn start_agent(
    dir: &Path,
    env: &Env,
    settings: &config::Settings,
    requests: ServerRequests,
    (palettes, json): (Palettes, bool),
) -> Result<Agent> {
    let notices = crate::mcp::stderr_notices(palettes.stderr);
    start_agent_telling(dir, env, settings, requests, if json { notices.without_advice() } else { notices })
        .await
}

/// [`start_agent`] with the agent's notices going to `notices`.
pub(crate) async fn start_agent_telling(
    dir: &Path,
    env: &Env,
    settings: &config::Settings,
    requests: ServerRequests,
    notices: bosun_agent::Notices,
) -> Result<Agent> {
    let agent = Agent::builder(dir)
        .env(env.clone())
        .settings(settings.clone())
        .server_requests(requests)
        .notices(notices)
        .build()
        .await?;
    Ok(agent)
}

/// `bosun exec`.
pub async fn exec(
    dir: Option<&Path>,
    profile: Option<&str>,
    args: ExecArgs,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let dir = config::workdir(dir)?;
    let settings = config::resolve(&dir, env, profile, &(&args.run).into())?;
    // Before anything runs: a schema that cannot be used stops the command
    // before any model is asked.
    let schema = args.output_schema.as_deref().map(AnswerSchema::load).transpose()?;
    notice_ignored(&settings, &args.run, palettes.stderr);
    let prompt = read_prompt(args.prompt)?;
    let stderr = (!args.run.json).then_some(palettes.stderr);
    let prompt = with_images(&dir, &settings, prompt, &args.images, stderr)?;
    let answers = crate::mcp::requests_for_run(&args.run, &settings, palettes);
    // Not before: reading the prompt from stdin should still die by Ctrl-C.
    let signals = Signals::watch()?;
    let starting = start_agent(&dir, env, &settings, answers, (palettes, args.run.json));
    let Some(agent) = signals.unless_stopped(starting).await else {
        return Ok(signals.stopped_before_a_turn(args.run.json));
    };
    let agent = agent?;
    let outcome = exec_with(&agent, &args.run, prompt, schema.as_ref(), palettes, &signals).await;
    // Every server is stopped on every way out, the failing ones included.
    agent.shutdown().await;
    outcome
}

async fn exec_with(
    agent: &Agent,
    run: &RunOptions,
    prompt: UserInput,
    schema: Option<&AnswerSchema>,
    palettes: Palettes,
    signals: &Signals,
) -> Result<Outcome> {
    let approver = approver(run, palettes.tty);
    let building = agent.new_session(approver);
    let Some(built) = signals.unless_stopped(building).await else {
        return Ok(signals.stopped_before_a_turn(run.json));
    };
    let (mut session, id) = built?;
    let settings = agent.settings();
    let costing = config::models::session_model(settings)?.costing;
    let init = run.json.then(|| init_json(&id, settings, session.mode(), &workspace_path(&session)));
    let judged = Judged { costing, strict: strict(settings), schema, init };
    drive(&mut session, prompt, run, &id, (palettes.stderr, judged), signals).await
}

/// The task with its images (`--image FILE`, from the current directory,
/// and `@path`s of workspace images in it), each shown on `stderr` as a
/// line; refused before anything starts when one cannot go as asked or the
/// model takes none (`bosun_agent::attach`).
fn with_images(
    dir: &Path,
    settings: &config::Settings,
    prompt: String,
    images: &[std::path::PathBuf],
    stderr: Option<Palette>,
) -> Result<UserInput> {
    use bosun_agent::attach;
    if images.is_empty() && !prompt.contains('@') {
        return Ok(prompt.into());
    }
    let workspace = bosun_tools::Workspace::open(dir)?;
    let reading = attach::Reading { text_files: false, typed: None };
    let mut attached = attach::attach(&workspace, &prompt, &reading)?;
    let here = std::env::current_dir().context("cannot tell the current directory")?;
    for image in images {
        attached.push_image(attach::image_file(&workspace, image, &here)?)?;
    }
    let model = config::models::session_model(settings)?.images;
    attached.check_model(model, &bosun_agent::model::model_label(settings))?;
    if let Some(stderr) = stderr {
        for line in attached.warnings.iter().cloned().chain(attached.images.iter().map(attach::Image::line)) {
            eprintln!("{}", stderr.dim(&sanitize::line(&line)));
        }
    }
    Ok(attached.into_content().into())
}

/// `bosun resume`.
pub async fn resume(
    dir: Option<&Path>,
    profile: Option<&str>,
    args: ResumeArgs,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let which = Stored { id: args.id, last: args.last, words: args.prompt, branch: args.branch };
    on_stored(dir, profile, which, Then::Turn, &args.run, env, palettes).await
}

/// `bosun compact`.
pub async fn compact(
    dir: Option<&Path>,
    profile: Option<&str>,
    args: CompactArgs,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let which = Stored { id: args.id, last: args.last, words: Vec::new(), branch: args.branch };
    on_stored(dir, profile, which, Then::Compact, &args.run, env, palettes).await
}

/// The outcome of a picker the person cancelled, saying so.
pub(crate) fn cancelled() -> Outcome {
    eprintln!("no session chosen; nothing was done");
    Outcome::Cancelled
}

/// What a command does with the stored session it resumes.
#[derive(Clone, Copy)]
enum Then {
    /// Run a turn: the prompt given, the interrupted one, or "continue".
    Turn,
    /// Compact it now.
    Compact,
}

/// Resumes a stored session, with the MCP servers its authority holds
/// (a compaction offers them no call, but the session resumes under the
/// authority it ran with), and does `then` with it.
async fn on_stored(
    dir: Option<&Path>,
    profile: Option<&str>,
    which: Stored,
    then: Then,
    run: &RunOptions,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let dir = config::workdir(dir)?;
    let settings = config::resolve(&dir, env, profile, &run.into())?;
    let verb = match then {
        Then::Turn => "resume",
        Then::Compact => "compact",
    };
    let Some(which) = which.or_pick(&dir, env, &settings, (verb, run.json)).await? else {
        return Ok(cancelled());
    };
    let (which, settings) = which.resolved(&dir, env, &settings)?;
    notice_ignored(&settings, run, palettes.stderr);
    let answers = crate::mcp::requests_for_run(run, &settings, palettes);
    let signals = Signals::watch()?;
    let starting = start_agent(&dir, env, &settings, answers, (palettes, run.json));
    let Some(agent) = signals.unless_stopped(starting).await else {
        return Ok(signals.stopped_before_a_turn(run.json));
    };
    let agent = agent?;
    let approver = approver(run, palettes.tty);
    let opening = open_stored(&agent, &settings, which, approver);
    let outcome = match signals.unless_stopped(opening).await {
        None => Ok(signals.stopped_before_a_turn(run.json)),
        Some(Ok((mut session, id, words, settings))) => match then {
            Then::Turn => continue_turn(&mut session, &id, words, &settings, run, palettes, &signals).await,
            Then::Compact => compact_session(&mut session, &id, &settings, run, palettes, &signals).await,
        },
        // The difference, then the way to accept it.
        Some(Err(error)) if widened(&error) => Err(anyhow::anyhow!(
            "{error:#}\nto accept the difference, run the command again with --accept-authority \
             (on a terminal, bosun asks instead)"
        )),
        Some(Err(error)) => Err(error),
    };
    agent.shutdown().await;
    outcome
}

async fn continue_turn(
    session: &mut Session,
    id: &str,
    words: Vec<String>,
    settings: &config::Settings,
    run: &RunOptions,
    palettes: Palettes,
    signals: &Signals,
) -> Result<Outcome> {
    // A prompt that never reached an answer is not dropped for new words
    // (invariant 21): both are sent, and the person is told.
    let prompt: UserInput = match (words.is_empty(), session.interrupted_prompt().cloned()) {
        (false, Some(bosun_core::Message::User { mut content, .. })) => {
            let again = bosun_core::Message::User { content: content.clone() }.text();
            let told = format!(
                "the last turn's prompt never reached an answer; it is sent again before yours: {}",
                crate::sanitize::line(again.lines().next().unwrap_or_default())
            );
            eprintln!("{}", palettes.stderr.dim(&told));
            content.push(bosun_core::ContentPart::text(words.join(" ")));
            content.into()
        }
        (false, _) => words.join(" ").into(),
        (true, Some(interrupted)) => interrupted.into(),
        (true, None) => "Continue where you left off.".into(),
    };
    if !run.json {
        let resumed = format!("resumed session {id} ({} messages)", session.history().len());
        eprintln!("{}", palettes.stderr.dim(&resumed));
    }
    let costing = config::models::session_model(settings)?.costing;
    let init = run.json.then(|| init_json(id, settings, session.mode(), &workspace_path(session)));
    let judged = Judged { costing, strict: strict(settings), schema: None, init };
    drive(session, prompt, run, id, (palettes.stderr, judged), signals).await
}

/// Which stored session a command names: an id, or `--last` (then the
/// first of `words`, which clap took for the id, belongs to the prompt),
/// and the branch to continue when not its head.
pub(crate) struct Stored {
    pub(crate) id: Option<String>,
    pub(crate) last: bool,
    pub(crate) words: Vec<String>,
    pub(crate) branch: Option<String>,
}

/// The stored session `which` names (a whole id or a unique prefix),
/// resumed under `settings` with the model and base URL it recorded unless
/// they name their own (`--model`): the session, its id, the words left
/// for a prompt, and the settings it runs under.
pub(crate) async fn open_stored(
    agent: &Agent,
    settings: &config::Settings,
    which: Stored,
    approver: Arc<dyn ApprovalHandler>,
) -> Result<(Session, String, Vec<String>, config::Settings)> {
    let (stored, words) = which.named()?;
    let (id, settings) = agent.stored_settings(settings, &stored)?;
    let (session, id) = agent.open_as(&settings, StoredSession::Id(id), approver).await?;
    Ok((session, id, words, settings))
}

/// Whether `error` is a resume refused because the authority widened and
/// nobody accepted it.
fn widened(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let build = cause.downcast_ref::<bosun_agent::Error>().and_then(bosun_agent::Error::build);
        matches!(build, Some(bosun_core::BuildError::AuthorityMismatch { .. }))
    })
}

impl Stored {
    /// The session named, and the words left for a prompt.
    fn named(self) -> Result<(StoredSession, Vec<String>)> {
        let mut words = self.words;
        let stored = match (self.id, self.last) {
            (Some(id), false) => StoredSession::Id(id),
            (first, true) => {
                // `resume --last PROMPT…`: no id, so the first word is the prompt's.
                words.splice(0..0, first);
                StoredSession::Latest
            }
            (None, false) => bail!(
                "name the session: an id `bosun sessions list` shows (its first 8 characters do), or --last \
                 for the newest; on a terminal, naming neither opens a picker"
            ),
        };
        Ok((stored, words))
    }

    /// When no session is named (no id, no `--last`), the one the person
    /// picks on the terminal from the workspace's recent ones, unless the
    /// output is JSON or there is no terminal to pick on (then naming none
    /// is the error [`Stored::named`] gives). `None`: the person cancelled.
    pub(crate) async fn or_pick(
        self,
        dir: &Path,
        env: &Env,
        settings: &config::Settings,
        (verb, json): (&str, bool),
    ) -> Result<Option<Self>> {
        if self.id.is_some() || self.last || json || !crate::picker::has_terminal() {
            return Ok(Some(self));
        }
        let chosen = crate::picker::pick_session(dir, env, settings, verb).await?;
        Ok(chosen.map(|id| Self { id: Some(id), ..self }))
    }

    /// Before the agent is built (its tools depend on the model): the
    /// session this names, by its whole id, and the settings it resumes
    /// under (`bosun_agent::stored::resolve`).
    pub(crate) fn resolved(
        self,
        dir: &Path,
        env: &Env,
        settings: &config::Settings,
    ) -> Result<(Self, config::Settings)> {
        let branch = self.branch.clone();
        let (stored, words) = self.named()?;
        let (id, settings) = bosun_agent::stored::resolve(dir, env, settings, &stored)?;
        if let Some(branch) = branch {
            // The head moves to the branch named; every branch stays.
            let store = bosun_agent::parts::store(&settings, env)?;
            let branch = store.resolve_branch(&id, &branch)?;
            store.switch_branch(&id, &branch)?;
        }
        Ok((Self { id: Some(id), last: false, words, branch: None }, settings))
    }
}

/// Compacts `session` now and says what it did.
async fn compact_session(
    session: &mut Session,
    id: &str,
    settings: &config::Settings,
    run: &RunOptions,
    palettes: Palettes,
    signals: &Signals,
) -> Result<Outcome> {
    let costing = config::models::session_model(settings)?.costing;
    let mut human;
    let mut json;
    let sink: &mut dyn EventSink = if run.json {
        json = crate::output::json_sink(id);
        &mut json
    } else {
        human = HumanSink::new(palettes.stderr);
        &mut human
    };
    let result = session.compact_now(TurnOptions::cancel_on(signals.token()), sink).await;
    match result {
        Ok(Some(outcome)) => {
            if !run.json {
                let mut spend = bosun_core::Spend::default();
                spend.compaction = outcome.spent;
                let usage = outcome.spent.usage;
                let line = format!(
                    "the summary took {}, {} out, {}; the next request is sent the summary in place of the \
                     older turns (history keeps them)",
                    crate::output::prompt_tokens(&usage),
                    usage.output,
                    costing.describe_spend(&spend)
                );
                eprintln!("{}", palettes.stderr.dim(&line));
                eprintln!("{}", palettes.stderr.dim(&format!("session {id}")));
            }
            Ok(Outcome::Success)
        }
        Ok(None) => {
            eprintln!("nothing to compact: session {id} has no turns between its task and its newest one");
            Ok(Outcome::Success)
        }
        Err(error) if error.is_cancelled() => {
            eprintln!("\n{}; session {id} is unchanged", signals.stop().said());
            Ok(signals.stopped())
        }
        // A model that fails to summarise is a failed run, not a usage
        // error: the code is the turn's (1), or the store's (3).
        Err(error) => {
            let outcome = Outcome::of_failed(&error);
            let said = format!("cannot compact session {id} (it is unchanged): {error:#}");
            eprintln!("{} {}", palettes.stderr.red("bosun:"), sanitize::block(&said));
            Ok(outcome)
        }
    }
}

/// How a turn's result is shown and judged.
struct Judged<'a> {
    /// Prices for the tokens line.
    costing: config::models::Costing,
    /// A change the prompt asked for and the turn never made fails the
    /// command (local models, whose claims of a change are not to be taken
    /// at their word: `local_persistence`).
    strict: bool,
    /// The schema the final answer must match (`--output-schema`): asked of
    /// the model, and checked here whatever it did.
    schema: Option<&'a AnswerSchema>,
    /// `--json`'s first line (`bosun_agent::json_events::init_json`).
    init: Option<serde_json::Value>,
}

fn strict(settings: &config::Settings) -> bool {
    settings.local_persistence && crate::config::models::uses_local_model(settings)
}

/// Runs one turn, cancelled by the first of `signals`; human output goes
/// to stderr coloured with `stderr`, its tokens line priced by the costing.
async fn drive(
    session: &mut Session,
    prompt: UserInput,
    run: &RunOptions,
    id: &str,
    (stderr, judged): (Palette, Judged<'_>),
    signals: &Signals,
) -> Result<Outcome> {
    let costing = judged.costing;
    let started = std::time::Instant::now();
    let mut json = run.json.then(|| crate::output::json_sink(id));
    if let (Some(json), Some(init)) = (json.as_mut(), &judged.init) {
        json.line(init).context("cannot write the output")?;
    }
    let mut human;
    let sink: &mut dyn EventSink = match json.as_mut() {
        Some(json) => json,
        None => {
            human = HumanSink::new(stderr).with_costing(costing);
            &mut human
        }
    };
    let mut options = TurnOptions::cancel_on(signals.token());
    if let Some(schema) = judged.schema {
        options = options.with_generation(schema.generation());
    }
    let result = session.run_with(prompt, options, sink).await;
    let (exit, ended) = match &result {
        Ok(outcome) => {
            if let Some(Err(mismatch)) = judged.schema.map(|schema| schema.check(&outcome.answer)) {
                // Said as the turn's errors are, so `--json` readers see it
                // as an `error` event; the answer stays in the session.
                let said = format!("{mismatch}; session {id}");
                sink.emit(bosun_core::Event::Error {
                    kind: "output_schema".into(),
                    class: None,
                    message: said.clone(),
                })
                .context("cannot write the output")?;
                (Ok(Outcome::TurnFailed), RunResult::Failed(said))
            } else {
                (finished(outcome, run, id, stderr, judged.strict), RunResult::Completed(outcome))
            }
        }
        Err(error) if error.is_cancelled() => {
            if !run.json {
                let said = signals.stop().said();
                eprintln!("\n{said}; continue with `bosun resume {id}` (or `bosun resume --last`)");
            }
            (Ok(signals.stopped()), RunResult::Cancelled)
        }
        Err(error) => {
            // The error itself was shown by its `error` event; this says
            // where the session is, without printing the error a second time.
            if !run.json {
                eprintln!("{}", stderr.dim(&format!("the turn failed; session {id}")));
            }
            (Ok(Outcome::of_failed(error)), RunResult::Failed(error.to_string()))
        }
    };
    if let Some(json) = json.as_mut() {
        let last = bosun_agent::json_events::result_json(id, &ended, started.elapsed());
        json.line(&last).context("cannot write the output")?;
    }
    exit
}

/// The session's workspace as its authority records it (empty when none).
fn workspace_path(session: &Session) -> String {
    session.authority().workspace.as_ref().map(|w| w.path.clone()).unwrap_or_default()
}

/// A completed turn's answer where it goes, and its exit.
fn finished(
    outcome: &bosun_core::TurnOutcome,
    run: &RunOptions,
    id: &str,
    stderr: Palette,
    strict: bool,
) -> Result<Outcome> {
    if let Some(path) = &run.output {
        std::fs::write(path, &outcome.answer).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !run.json {
        if outcome.stop_reason == StopReason::Length {
            let cut = "the answer was cut: the model reached its output token limit";
            eprintln!("{}", stderr.red(&format!("warning: {cut}")));
        }
        eprintln!("{}", stderr.dim(&format!("session {id}")));
    }
    if strict && outcome.unfinished_change {
        let unmade = "the task asked for a change, but no call that writes or runs a program \
                      succeeded: nothing was changed, whatever the answer says";
        eprintln!("{}", stderr.red(&format!("error: {unmade}; session {id}")));
        return Ok(Outcome::TurnFailed);
    }
    Ok(Outcome::Success)
}
