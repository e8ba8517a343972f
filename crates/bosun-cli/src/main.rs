//! `bosun`: parse, resolve configuration, build, drive, exit code. The agent
//! logic lives in the library crates; this binary only wires them together.

mod approve;
mod cli;
use bosun_agent::config;
mod elicit;
mod exec;
mod interactive;
mod logging;
mod mcp;
mod mcp_conformance;
mod mcp_login;
mod models;
mod output;
mod picker;
mod rewind;
mod sampling;
mod sanitize;
mod serve;
mod sessions;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command, ConfigCommand};
use crate::config::{Env, TrustLevel};
use crate::exec::Outcome;
use crate::output::Palettes;

fn main() -> ExitCode {
    // First, while single-threaded: copy the environment, then take the keys
    // out of the process and its /proc view (bosun_sandbox::harden).
    let env = Env::capture();
    let unhardened = bosun_sandbox::harden_process();
    for warning in &unhardened {
        eprintln!("bosun: warning: hardening: {warning}");
    }
    logging::init(&env);
    let palettes = Palettes::decide(&env);
    // Options written before the subcommand reach it, or are an error.
    let cli = match Cli::parse().settle() {
        Ok(cli) => cli,
        Err(error) => return fatal(&error, palettes),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fatal(&error.into(), palettes),
    };
    match runtime.block_on(run(cli, &env, palettes)) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        // `bosun sessions list | head`: the reader had what it wanted.
        Err(error) if output::broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => fatal(&error, palettes),
    }
}

/// An error that ended the command: the cause chain on stderr; exit 3
/// when the session store could not be used (a full disk, a damaged file),
/// 1 when a turn failed, 2 (usage and configuration) otherwise.
fn fatal(error: &anyhow::Error, palettes: Palettes) -> ExitCode {
    // Errors quote what servers, files and tools said: shown, not obeyed.
    eprintln!("{} {}", palettes.stderr.red("bosun:"), sanitize::block(&format!("{error:#}")));
    ExitCode::from(exit_code_of(error))
}

/// The exit code of an error, by what failed (docs/cli.md, "Exit codes"):
/// the first cause in its chain that tells.
fn exit_code_of(error: &anyhow::Error) -> u8 {
    error.chain().find_map(code_of_cause).unwrap_or(2)
}

fn code_of_cause(cause: &(dyn std::error::Error + 'static)) -> Option<u8> {
    use bosun_agent::Error as AgentError;
    use bosun_core::{BuildError, JournalErrorKind};
    let agent = cause.downcast_ref::<AgentError>();
    let store = cause.downcast_ref::<bosun_store::StoreError>().or(match agent {
        Some(AgentError::Store(store)) => Some(store),
        _ => None,
    });
    if let Some(store) = store {
        return store.is_storage_fault().then(|| Outcome::StoreFailed.code());
    }
    let journal = cause.downcast_ref::<bosun_core::JournalError>().or(match (agent, cause.downcast_ref()) {
        (Some(AgentError::Build(BuildError::Journal(journal))), _)
        | (_, Some(BuildError::Journal(journal))) => Some(journal),
        _ => None,
    });
    if let Some(journal) = journal {
        let full_or_damaged = matches!(journal.kind(), JournalErrorKind::Full | JournalErrorKind::Corrupt);
        return full_or_damaged.then(|| Outcome::StoreFailed.code());
    }
    let turn = cause.downcast_ref::<bosun_core::TurnError>().or(match agent {
        Some(AgentError::Turn(turn)) => Some(turn),
        _ => None,
    });
    turn.map(|turn| Outcome::of_failed(turn).code())
}

async fn run(cli: Cli, env: &Env, palettes: Palettes) -> anyhow::Result<Outcome> {
    let dir = cli.dir.as_deref();
    let profile = cli.profile.as_deref();
    let Some(command) = cli.command else {
        let first = (!cli.prompt.is_empty()).then(|| cli.prompt.join(" "));
        return interactive::run(dir, profile, cli.run, (None, first), env, palettes).await;
    };
    match command {
        Command::Exec(args) => exec::exec(dir, profile, args, env, palettes).await,
        // No prompt, in a terminal: the conversation goes on there.
        Command::Resume(args) if args.prompt.is_empty() && !args.run.json && interactive::has_terminal() => {
            let which = exec::Stored { id: args.id, last: args.last, words: Vec::new(), branch: args.branch };
            interactive::run(dir, profile, args.run, (Some(which), None), env, palettes).await
        }
        Command::Resume(args) => exec::resume(dir, profile, args, env, palettes).await,
        Command::Compact(args) => exec::compact(dir, profile, args, env, palettes).await,
        Command::Rewind(args) => rewind::run(dir, profile, args, env),
        Command::Fork { id, at } => sessions::fork(dir, profile, &id, at, env).map(|()| Outcome::Success),
        Command::Sessions(command) => {
            sessions::run(dir, profile, command, env, palettes.stdout).map(|()| Outcome::Success)
        }
        Command::Config(ConfigCommand::Show) => {
            let workdir = config::workdir(dir)?;
            // The options before `config show` (`settle` kept only those
            // that change settings) show the settings they make.
            let settings = config::resolve(&workdir, env, profile, &(&cli.run).into())?;
            // Values and key names come from files the repository wrote.
            crate::output::out(format_args!("{}", sanitize::block(&config::show(&settings))))?;
            Ok(Outcome::Success)
        }
        Command::Trust { dir: target, force } => trust(dir, target, env, TrustLevel::Trusted, force),
        Command::Untrust { dir: target } => trust(dir, target, env, TrustLevel::Untrusted, true),
        Command::Models(command) => {
            // Only a pull with no name needs the configuration (its
            // `local_model`); the other subcommands work wherever they run.
            let local_model = match &command {
                cli::ModelsCommand::Pull { name: None, .. } | cli::ModelsCommand::Warm { name: None } => {
                    config::resolve(&config::workdir(dir)?, env, profile, &Default::default())?.local_model
                }
                _ => None,
            };
            if let cli::ModelsCommand::Warm { name } = &command {
                let path = bosun_models::resolve_local(env, name.as_deref().or(local_model.as_deref()))?;
                models::warm(&path, env, profile, palettes).await?;
                return Ok(Outcome::Success);
            }
            let warm = matches!(command, cli::ModelsCommand::Pull { no_warm: false, .. });
            let pulled = models::run(command, env, local_model.as_deref(), palettes.stderr).await?;
            if let Some(path) = pulled.filter(|_| warm) {
                models::after_pull(&path, env, profile, palettes).await;
            }
            Ok(Outcome::Success)
        }
        Command::Mcp(command) => mcp::run(dir, profile, command, env).await.map(|()| Outcome::Success),
        Command::Serve(args) => serve::run(dir, profile, args, env, palettes.stderr).await,
        Command::McpServer { allow_roots } => {
            let mut options = bosun_mcp_server::McpServerOptions::new(env.clone(), &allow_roots)?;
            // stdout carries the protocol: notices go to stderr.
            options.notices = crate::mcp::stderr_notices(palettes.stderr);
            bosun_mcp_server::BosunServer::new(options).serve_stdio().await?;
            Ok(Outcome::Success)
        }
        Command::Acp => {
            let mut options = bosun_acp::AcpOptions::new(env.clone());
            // stdout carries the protocol: notices go to stderr.
            options.notices = crate::mcp::stderr_notices(palettes.stderr);
            bosun_acp::serve_stdio(options).await?;
            Ok(Outcome::Success)
        }
        Command::SandboxedShell { call, result } => {
            let (text, is_error) = bosun_acp::run_sandboxed_shell(&call, result.as_deref()).await?;
            if let Some(text) = text {
                crate::output::outln(format_args!("{text}"))?;
            }
            Ok(if is_error { Outcome::TurnFailed } else { Outcome::Success })
        }
        Command::Completions { shell } => {
            // Into a buffer: `generate` panics when stdout's reader is gone.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "bosun", &mut script);
            crate::output::out(format_args!("{}", String::from_utf8_lossy(&script)))?;
            Ok(Outcome::Success)
        }
    }
}

/// `bosun trust` / `bosun untrust`: the project root (the nearest directory
/// holding `.git`, else the directory itself), recorded in the user's config.
/// Trusting `/` or the home directory takes `force` (untrusting narrows,
/// so it always may).
fn trust(
    dir: Option<&std::path::Path>,
    target: Option<std::path::PathBuf>,
    env: &Env,
    level: TrustLevel,
    force: bool,
) -> anyhow::Result<Outcome> {
    let start = config::workdir(target.as_deref().or(dir))?;
    let home = env.get("HOME").map(std::path::Path::new);
    let root = config::trust_target(&start, target.is_some(), home, force)?;
    let file = config::user_file(env)
        .ok_or_else(|| anyhow::anyhow!("cannot tell where your config is: set HOME"))?;
    config::record_trust(&file, &root, Some(level))?;
    crate::output::outln(format_args!(
        "{} is now {} (recorded in {})",
        root.display(),
        level.as_str(),
        file.display()
    ))?;
    Ok(Outcome::Success)
}
