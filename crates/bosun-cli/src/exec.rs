//! Running turns: `bosun exec` and `bosun resume` build a session, drive one
//! turn with the chosen output, and map the result to an exit code.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_core::{ApprovalHandler, EventSink, Session, StopReason, TurnOptions, UserInput};
use tokio_util::sync::CancellationToken;

use crate::approve::{ApproveAll, NoTerminal, TerminalPrompt};
use crate::cli::{ExecArgs, ResumeArgs, RunOptions};
use crate::config::{self, Env};
use crate::output::{HumanSink, JsonSink, Palette, Palettes};
use crate::{sanitize, wire};

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// The turn failed (model error, limit reached, …).
    TurnFailed,
    /// Ctrl-C.
    Interrupted,
}

impl Outcome {
    /// The process exit code: 0, 1 or 130.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::TurnFailed => 1,
            Self::Interrupted => 130,
        }
    }
}

/// The working directory: `-C DIR` or the current one.
pub fn workdir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir).with_context(|| format!("cannot use {} as the workspace", dir.display()))
}

fn approver(run: &RunOptions, tty: Palette) -> Arc<dyn ApprovalHandler> {
    if run.dangerously_approve_all {
        Arc::new(ApproveAll)
    } else if crate::approve::has_terminal() {
        Arc::new(TerminalPrompt::new(tty))
    } else {
        Arc::new(NoTerminal)
    }
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

/// One line on stderr naming what the project's config set and bosun left out.
fn notice_ignored(settings: &config::Settings, stderr: Palette) {
    if let Some(notice) = settings.project.as_ref().and_then(config::ProjectConfig::notice) {
        eprintln!("{}", stderr.dim(&sanitize::line(&format!("bosun: {notice}"))));
    }
}

/// What starting the MCP servers gives a session: the tools (theirs
/// added), the servers as its tool source, and what answers their requests.
type McpParts<'a> =
    (Vec<Arc<dyn bosun_core::Tool>>, Option<Arc<dyn bosun_core::ToolSource>>, &'a crate::mcp::Answers);

/// `bosun exec`.
pub async fn exec(
    dir: Option<&Path>,
    profile: Option<&str>,
    args: ExecArgs,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let dir = workdir(dir)?;
    let settings = config::resolve(&dir, env, profile, &args.run)?;
    notice_ignored(&settings, palettes.stderr);
    let prompt = read_prompt(args.prompt)?;
    let (workspace, mut tools) = wire::tools(&dir, env, &settings)?;
    let answers = crate::mcp::Answers::for_run(&args.run, &settings, palettes);
    let root = workspace.root_path();
    let mcp = crate::mcp::start_into(&settings, env, root, &mut tools, palettes.stderr, &answers).await;
    let source = crate::mcp::source(&mcp);
    let mcp_parts = (tools, source, &answers);
    let outcome = exec_with(&settings, env, &args.run, prompt, workspace, mcp_parts, palettes).await;
    // Every server is stopped on every way out, the failing ones included.
    crate::mcp::stop(mcp).await;
    outcome
}

async fn exec_with(
    settings: &config::Settings,
    env: &Env,
    run: &RunOptions,
    prompt: String,
    workspace: bosun_tools::Workspace,
    (tools, source, answers): McpParts<'_>,
    palettes: Palettes,
) -> Result<Outcome> {
    let (model, window) = wire::model(settings, env, &workspace).await?;
    answers.sampler.model_ready(&model, settings.model.as_deref().unwrap_or("local"));
    let store = wire::store(settings, env)?;
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    let (system, warning) = wire::system_prompt(&workspace, settings);
    if let Some(warning) = warning {
        eprintln!("{}", palettes.stderr.red(&sanitize::line(&format!("warning: {warning}"))));
    }
    let mut session = wire::builder(model, window, &workspace, tools, source, settings)?
        .system_prompt(system)
        .journal(journal)
        .shared_approver(approver(run, palettes.tty))
        .build()
        .await?;
    let costing = config::models::session_model(settings)?.costing;
    drive(&mut session, prompt.into(), run, &id, palettes.stderr, costing).await
}

/// `bosun resume`.
pub async fn resume(
    dir: Option<&Path>,
    profile: Option<&str>,
    args: ResumeArgs,
    env: &Env,
    palettes: Palettes,
) -> Result<Outcome> {
    let dir = workdir(dir)?;
    let settings = config::resolve(&dir, env, profile, &args.run)?;
    notice_ignored(&settings, palettes.stderr);
    let (workspace, mut tools) = wire::tools(&dir, env, &settings)?;
    let answers = crate::mcp::Answers::for_run(&args.run, &settings, palettes);
    let root = workspace.root_path();
    let mcp = crate::mcp::start_into(&settings, env, root, &mut tools, palettes.stderr, &answers).await;
    let source = crate::mcp::source(&mcp);
    let outcome = resume_with(&settings, env, args, workspace, (tools, source, &answers), palettes).await;
    crate::mcp::stop(mcp).await;
    outcome
}

async fn resume_with(
    settings: &config::Settings,
    env: &Env,
    args: ResumeArgs,
    workspace: bosun_tools::Workspace,
    (tools, source, answers): McpParts<'_>,
    palettes: Palettes,
) -> Result<Outcome> {
    let (model, window) = wire::model(settings, env, &workspace).await?;
    answers.sampler.model_ready(&model, settings.model.as_deref().unwrap_or("local"));
    let store = wire::store(settings, env)?;
    let mut words = args.prompt;
    let id = match (args.id, args.last) {
        (Some(id), false) => id,
        (first, true) => {
            // `resume --last PROMPT…`: no id, so the first word is the prompt's.
            words.splice(0..0, first);
            let filter = bosun_store::ListFilter::workspace(workspace.identity().path.clone());
            let latest = store.list(&filter)?.into_iter().next();
            latest.map(|s| s.id).context("no session of this workspace to resume")?
        }
        (None, false) => bail!("name the session to resume (`bosun sessions list`), or use --last"),
    };
    let journal = store.open_session(&id)?;
    let mut session = wire::builder(model, window, &workspace, tools, source, settings)?
        .shared_approver(approver(&args.run, palettes.tty))
        .resume(journal)
        .await
        .with_context(|| format!("cannot resume session {id}"))?;
    let prompt: UserInput = if !words.is_empty() {
        words.join(" ").into()
    } else if let Some(interrupted) = session.interrupted_prompt().cloned() {
        interrupted.into()
    } else {
        "Continue where you left off.".into()
    };
    if !args.run.json {
        let resumed = format!("resumed session {id} ({} messages)", session.history().len());
        eprintln!("{}", palettes.stderr.dim(&resumed));
    }
    let costing = config::models::session_model(settings)?.costing;
    drive(&mut session, prompt, &args.run, &id, palettes.stderr, costing).await
}

/// Runs one turn with Ctrl-C wired to cancellation; human output goes to
/// stderr coloured with `stderr`, its tokens line priced by `costing`.
async fn drive(
    session: &mut Session,
    prompt: UserInput,
    run: &RunOptions,
    id: &str,
    stderr: Palette,
    costing: config::models::Costing,
) -> Result<Outcome> {
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let mut human;
    let mut json;
    let sink: &mut dyn EventSink = if run.json {
        json = JsonSink::new(id);
        &mut json
    } else {
        human = HumanSink::new(stderr).with_costing(costing);
        &mut human
    };
    let result = session.run_with(prompt, TurnOptions::cancel_on(cancel), sink).await;
    watcher.abort();
    match result {
        Ok(outcome) => {
            if let Some(path) = &run.output {
                std::fs::write(path, &outcome.answer)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            if !run.json {
                if outcome.stop_reason == StopReason::Length {
                    let cut = "the answer was cut: the model reached its output token limit";
                    eprintln!("{}", stderr.red(&format!("warning: {cut}")));
                }
                eprintln!("{}", stderr.dim(&format!("session {id}")));
            }
            Ok(Outcome::Success)
        }
        Err(error) if error.is_cancelled() => {
            if !run.json {
                eprintln!("\ninterrupted; continue with `bosun resume {id}` (or `bosun resume --last`)");
            }
            Ok(Outcome::Interrupted)
        }
        Err(_) => {
            // The error itself was shown by its `error` event; this says
            // where the session is, without printing the error a second time.
            if !run.json {
                eprintln!("{}", stderr.dim(&format!("the turn failed; session {id}")));
            }
            Ok(Outcome::TurnFailed)
        }
    }
}
