//! `bosun`: parse, resolve configuration, build, drive, exit code. The agent
//! logic lives in the library crates; this binary only wires them together.

mod approve;
mod cli;
mod config;
mod exec;
mod instructions;
mod models;
mod output;
mod sessions;
mod wire;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command, ConfigCommand};
use crate::config::Env;
use crate::exec::Outcome;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = Env::capture();
    output::style::init(env.get("NO_COLOR").is_none() && std::io::stderr().is_terminal());
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fatal(&error.into()),
    };
    match runtime.block_on(run(cli, &env)) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(error) => fatal(&error),
    }
}

/// Usage and configuration errors: the cause chain on stderr, exit 2.
fn fatal(error: &anyhow::Error) -> ExitCode {
    eprintln!("{} {error:#}", output::style::red("bosun:"));
    ExitCode::from(2)
}

async fn run(cli: Cli, env: &Env) -> anyhow::Result<Outcome> {
    let dir = cli.dir.as_deref();
    let profile = cli.profile.as_deref();
    match cli.command {
        Command::Exec(args) => exec::exec(dir, profile, args, env).await,
        Command::Resume(args) => exec::resume(dir, profile, args, env).await,
        Command::Fork { id, at } => sessions::fork(dir, profile, &id, at, env).map(|()| Outcome::Success),
        Command::Sessions(command) => sessions::run(dir, profile, command, env).map(|()| Outcome::Success),
        Command::Config(ConfigCommand::Show) => {
            let workdir = exec::workdir(dir)?;
            let settings = config::resolve(&workdir, env, profile, &Default::default())?;
            print!("{}", config::show(&settings));
            Ok(Outcome::Success)
        }
        Command::Models(command) => models::run(command, env).await.map(|()| Outcome::Success),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "bosun", &mut std::io::stdout());
            Ok(Outcome::Success)
        }
    }
}
