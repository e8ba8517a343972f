//! `bosun mcp`: the configured MCP servers, adding and removing them in the
//! user's own config file, and the tools they offer.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_core::ToolSource;
use bosun_mcp::{
    McpServers, ParentEnv, ServerConfig, ServerError, ServerEvent, ServerSandbox, StartOptions, Started,
};

use crate::cli::McpCommand;
use crate::config::mcp::{McpSandbox, McpServerEntry, check_name};
use crate::config::{self, Env};
use crate::output::{Palette, Palettes};
use crate::sanitize;

pub async fn run(dir: Option<&Path>, profile: Option<&str>, command: McpCommand, env: &Env) -> Result<()> {
    match command {
        McpCommand::List => {
            let settings = config::resolve(&config::workdir(dir)?, env, profile, &Default::default())?;
            print!("{}", sanitize::block(&list(&settings)));
            for notice in &settings.mcp_notices {
                eprintln!("bosun: {}", sanitize::line(notice));
            }
            Ok(())
        }
        McpCommand::Add { name, url, bearer_token_env_var, env: vars, env_vars, command } => {
            let entry = entry_from_args(url, bearer_token_env_var, &vars, env_vars, command)?;
            entry.check(&name)?;
            let file = user_file(env)?;
            add(&file, &name, &entry)?;
            println!("added MCP server `{name}` ({}) to {}", entry.summary(), file.display());
            Ok(())
        }
        McpCommand::Remove { name } => {
            let file = user_file(env)?;
            if remove(&file, &name)? {
                println!("removed MCP server `{name}` from {}", file.display());
                // Its tokens go with it: a later server of the same name
                // must log in again, not inherit them.
                if let Some(tokens) = config::mcp::token_file(env, &name)
                    && bosun_mcp::remove_token_file(&tokens)
                        .with_context(|| format!("cannot remove {}", tokens.display()))?
                {
                    println!("removed its OAuth tokens ({})", tokens.display());
                }
                return Ok(());
            }
            let settings = config::resolve(&config::workdir(dir)?, env, profile, &Default::default())?;
            match settings.mcp_servers.get(&name) {
                Some(server) => bail!(
                    "MCP server `{name}` is not in {}: it comes from {}, edit it there",
                    file.display(),
                    server.source
                ),
                None => bail!("no MCP server `{name}` is configured (see `bosun mcp list`)"),
            }
        }
        McpCommand::Tools { name } => tools(dir, profile, name.as_deref(), env).await,
        McpCommand::Login { name } => crate::mcp_login::login(dir, profile, &name, env).await,
        McpCommand::Logout { name } => {
            println!("{}", crate::mcp_login::logout(&name, env)?);
            Ok(())
        }
        McpCommand::Conformance { url } => crate::mcp_conformance::run(&url, env).await,
    }
}

/// The enabled servers as bosun-mcp takes them. Credentials named by
/// variable are read from `env` here; a server whose variable is unset is
/// left out, named in the returned notices.
pub fn server_configs(settings: &config::Settings, env: &Env) -> (Vec<ServerConfig>, Vec<String>) {
    let mut configs = Vec::new();
    let mut notices = Vec::new();
    let user = user_file(env).ok();
    for (name, server) in settings.mcp_servers.iter().filter(|(_, s)| s.entry.enabled()) {
        match config::mcp::server_config(name, &server.entry, env) {
            Ok(mut config) => {
                if let Some(loosened) = server.entry.sandbox {
                    if from_file(&server.source, user.as_deref()) {
                        config.sandbox = match loosened {
                            McpSandbox::Network => ServerSandbox::Network,
                            McpSandbox::Off => ServerSandbox::Off,
                        };
                    } else {
                        notices.push(format!(
                            "MCP server `{name}`: its `sandbox` setting is ignored: only your own config ({}) may \
                             loosen a server's sandbox",
                            user.as_deref().map_or_else(|| "~/.config/bosun/config.toml".into(), |p| p.display().to_string())
                        ));
                    }
                }
                configs.push(config);
            }
            Err(error) => notices.push(format!("MCP server `{name}` not started: {error:#}")),
        }
    }
    (configs, notices)
}

/// Whether `source` is `file` (the user's config), in a profile or not.
fn from_file(source: &config::Source, file: Option<&Path>) -> bool {
    match source {
        config::Source::File(path) | config::Source::Profile(_, path) => Some(path.as_path()) == file,
        _ => false,
    }
}

/// What answers servers' requests of the person (elicitation) and of the
/// model (sampling) in a run.
pub struct Answers {
    /// The terminal prompt, or a decline without a terminal.
    pub elicitor: Arc<dyn bosun_mcp::Elicitor>,
    /// The session's model, once [`ModelSampler::model_ready`] is told it.
    pub sampler: Arc<crate::sampling::ModelSampler>,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers").field("sampler", &self.sampler).finish_non_exhaustive()
    }
}

impl Answers {
    /// For a run with these options (the approval flag) and settings (the mode).
    pub fn for_run(run: &crate::cli::RunOptions, settings: &config::Settings, palettes: Palettes) -> Self {
        let sampler = crate::sampling::ModelSampler::new(
            settings.mode,
            run.dangerously_approve_all,
            palettes.tty,
            palettes.stderr,
        );
        Self { elicitor: crate::elicit::elicitor(palettes.tty), sampler: Arc::new(sampler) }
    }

    /// For commands that run no session: decline and refuse.
    pub fn none() -> Self {
        Self {
            elicitor: Arc::new(crate::elicit::NoTerminal),
            sampler: Arc::new(crate::sampling::ModelSampler::refusing()),
        }
    }
}

/// Starts the configured servers in parallel, saying on stderr how each
/// fares; a server that fails is named with why and the session goes on
/// without it. None when no server is configured.
pub async fn start(settings: &config::Settings, env: &Env, root: &Path, stderr: Palette) -> Option<Started> {
    start_with(settings, env, root, stderr, &Answers::none()).await
}

/// [`start`], with servers' requests going to `answers`.
pub async fn start_with(
    settings: &config::Settings,
    env: &Env,
    root: &Path,
    stderr: Palette,
    answers: &Answers,
) -> Option<Started> {
    for notice in &settings.mcp_notices {
        eprintln!("{}", stderr.dim(&sanitize::line(&format!("bosun: {notice}"))));
    }
    let (configs, notices) = server_configs(settings, env);
    for notice in &notices {
        eprintln!("{}", stderr.red(&sanitize::line(&format!("bosun: {notice}"))));
    }
    if configs.is_empty() {
        return None;
    }
    // Stdio servers run in the session's sandbox; one that cannot be built
    // starts none (the session's tools already failed on it).
    let sandbox = match crate::sandboxing::for_workspace(root, env, settings) {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!(
                "{}",
                stderr.red(&sanitize::line(&format!("bosun: MCP servers not started: {error:#}")))
            );
            return None;
        }
    };
    let options = StartOptions::new(root, ParentEnv::from_vars(env.vars()))
        .with_sandbox(sandbox)
        .with_elicitor(Arc::clone(&answers.elicitor))
        .with_sampler(Arc::clone(&answers.sampler) as Arc<dyn bosun_mcp::Sampler>)
        .with_events(move |event| {
            // What servers say is shown, never obeyed: one sanitised line each.
            let line = match event {
                ServerEvent::Starting { server } => format!("mcp: starting {server}"),
                ServerEvent::Ready { server, tools } => format!("mcp: {server} ready ({tools} tools)"),
                ServerEvent::Exited { server, reason } => format!("mcp: {server} {reason}"),
                _ => return,
            };
            eprintln!("{}", stderr.dim(&sanitize::line(&line)));
        });
    let started = McpServers::start(configs, options).await;
    for failure in &started.failures {
        let hint = match failure {
            ServerError::Unauthorized { server, .. } => format!(" (run `bosun mcp login {server}`)"),
            _ => String::new(),
        };
        eprintln!("{}", stderr.red(&sanitize::block(&format!("mcp: {failure}{hint}"))));
    }
    for rejected in &started.rejected {
        eprintln!("{}", stderr.dim(&sanitize::line(&format!("mcp: {rejected}"))));
    }
    Some(started)
}

/// [`start`], with the servers' tools added to `tools`. The servers come
/// back shared: the session asks them between rounds for tools withdrawn,
/// back or new (their `ToolSource`), and [`stop`] shuts them down.
pub async fn start_into(
    settings: &config::Settings,
    env: &Env,
    root: &Path,
    tools: &mut Vec<Arc<dyn bosun_core::Tool>>,
    stderr: Palette,
    answers: &Answers,
) -> Option<Arc<McpServers>> {
    let started = start_with(settings, env, root, stderr, answers).await?;
    let servers = Arc::new(started.servers);
    tools.extend(servers.tools());
    tools.extend(servers.resource_tools());
    Some(servers)
}

/// The servers as the session's tool source.
pub fn source(servers: &Option<Arc<McpServers>>) -> Option<Arc<dyn ToolSource>> {
    servers.as_ref().map(|s| Arc::clone(s) as Arc<dyn ToolSource>)
}

/// Shuts down what [`start_into`] started, if anything.
pub async fn stop(servers: Option<Arc<McpServers>>) {
    if let Some(servers) = servers {
        servers.shutdown().await;
    }
}

/// `bosun mcp tools [NAME]`: starts the servers and prints each tool as
/// bosun offers it, with its lowered parameter schema.
async fn tools(dir: Option<&Path>, profile: Option<&str>, name: Option<&str>, env: &Env) -> Result<()> {
    let root = config::workdir(dir)?;
    let mut settings = config::resolve(&root, env, profile, &Default::default())?;
    if let Some(name) = name {
        let Some(server) = settings.mcp_servers.remove(name) else {
            bail!("no MCP server `{name}` is configured (see `bosun mcp list`)");
        };
        settings.mcp_servers = [(name.to_owned(), server)].into();
    }
    let Some(started) = start(&settings, env, &root, Palette::default()).await else {
        bail!("no MCP server is configured and enabled (see `bosun mcp list`)");
    };
    let failed = !started.failures.is_empty();
    let servers = Arc::new(started.servers);
    let mut out = String::new();
    for tool in servers.tools().into_iter().chain(servers.resource_tools()) {
        let definition = tool.definition();
        let schema = serde_json::to_string_pretty(&definition.parameters).unwrap_or_default();
        let category = serde_json::to_value(tool.category()).ok();
        let category = category.as_ref().and_then(|c| c.as_str()).unwrap_or("?");
        out.push_str(&format!("{}  [{category}]\n", definition.name));
        if !definition.description.is_empty() {
            out.push_str(&format!("  {}\n", definition.description.replace('\n', "\n  ")));
        }
        out.push_str(&format!("  parameters: {}\n\n", schema.replace('\n', "\n  ")));
    }
    servers.shutdown().await;
    print!("{}", sanitize::block(&out));
    if failed {
        bail!("not every server started (see above)");
    }
    Ok(())
}

fn user_file(env: &Env) -> Result<std::path::PathBuf> {
    config::user_file(env).ok_or_else(|| anyhow::anyhow!("cannot tell where your config is: set HOME"))
}

fn entry_from_args(
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    vars: &[String],
    env_vars: Vec<String>,
    command: Vec<String>,
) -> Result<McpServerEntry> {
    let mut entry = McpServerEntry { url, bearer_token_env_var, env_vars, ..Default::default() };
    let mut words = command.into_iter();
    entry.command = words.next();
    entry.args = words.collect();
    for pair in vars {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("--env {pair}: write it as KEY=VALUE");
        };
        entry.env.insert(key.to_owned(), value.to_owned());
    }
    if entry.command.is_none() && entry.url.is_none() {
        bail!("give the server's program after `--` (bosun mcp add NAME -- CMD ARGS…) or --url URL");
    }
    Ok(entry)
}

/// Writes `[mcp_servers.NAME]` into the user's file, replacing a server of
/// that name.
fn add(file: &Path, name: &str, entry: &McpServerEntry) -> Result<()> {
    Ok(config::edit_user_file(file, |doc| {
        let servers = config::top_table(doc, "mcp_servers", file)?;
        let mut table = toml_edit::Table::new();
        if let Some(command) = &entry.command {
            table.insert("command", toml_edit::value(command.as_str()));
        }
        if !entry.args.is_empty() {
            table.insert("args", toml_edit::value(entry.args.iter().collect::<toml_edit::Array>()));
        }
        if !entry.env.is_empty() {
            let mut env = toml_edit::InlineTable::new();
            for (key, value) in &entry.env {
                env.insert(key, value.as_str().into());
            }
            table.insert("env", toml_edit::value(env));
        }
        if !entry.env_vars.is_empty() {
            table.insert("env_vars", toml_edit::value(entry.env_vars.iter().collect::<toml_edit::Array>()));
        }
        if let Some(url) = &entry.url {
            table.insert("url", toml_edit::value(url.as_str()));
        }
        if let Some(var) = &entry.bearer_token_env_var {
            table.insert("bearer_token_env_var", toml_edit::value(var.as_str()));
        }
        servers.insert(name, toml_edit::Item::Table(table));
        Ok(())
    })?)
}

/// Removes `[mcp_servers.NAME]` from the user's file; false when it was not there.
fn remove(file: &Path, name: &str) -> Result<bool> {
    check_name(name)?;
    if !file.is_file() {
        return Ok(false);
    }
    let mut found = false;
    config::edit_user_file(file, |doc| {
        if let Some(servers) = doc.get_mut("mcp_servers").and_then(|item| item.as_table_mut()) {
            found = servers.remove(name).is_some();
        }
        Ok(())
    })?;
    Ok(found)
}

/// `bosun mcp list`.
fn list(settings: &config::Settings) -> String {
    if settings.mcp_servers.is_empty() {
        return "no MCP servers configured (bosun mcp add NAME -- CMD ARGS…, or a trusted project's .mcp.json)\n"
            .to_owned();
    }
    let mut out = String::new();
    for (name, server) in &settings.mcp_servers {
        let state = if server.entry.enabled() { "enabled" } else { "disabled" };
        out.push_str(&format!("{name}  {state}  {}  ({})\n", server.entry.summary(), server.source));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_users_own_config_loosens_a_servers_sandbox() {
        let home = tempfile::tempdir().unwrap();
        let home_var = home.path().display().to_string();
        let env = Env::from_pairs(&[("HOME", &home_var)]);
        let file = config::user_file(&env).unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "[mcp_servers.api]\ncommand = \"true\"\nsandbox = \"network\"\n[mcp_servers.plain]\ncommand = \"true\"\n",
        )
        .unwrap();
        let work = tempfile::tempdir().unwrap();
        let settings = config::resolve(work.path(), &env, None, &Default::default()).unwrap();
        let (configs, notices) = server_configs(&settings, &env);
        let sandbox_of = |name: &str| configs.iter().find(|c| c.name == name).map(|c| c.sandbox);
        assert_eq!(sandbox_of("api"), Some(ServerSandbox::Network));
        assert_eq!(sandbox_of("plain"), Some(ServerSandbox::Policy));
        assert!(notices.is_empty(), "{notices:?}");
        // The same setting from any other file (a trusted project's) is not
        // the user's word.
        let project = config::Source::File(work.path().join(".bosun/config.toml"));
        assert!(!from_file(&project, Some(&file)));
        assert!(from_file(&config::Source::Profile("p".into(), file.clone()), Some(&file)));
    }

    #[test]
    fn add_then_remove_round_trips_through_the_user_file_keeping_the_rest() {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("config.toml");
        std::fs::write(&file, "# mine\nmode = \"write\"\n").unwrap();
        let entry = entry_from_args(
            None,
            None,
            &["LOG=debug".to_owned()],
            vec!["GITHUB_TOKEN".to_owned()],
            vec!["npx".into(), "-y".into(), "server-github".into()],
        )
        .unwrap();
        add(&file, "github", &entry).unwrap();
        let layer = config::Layer::load(&file).unwrap();
        let written = &layer.mcp_servers["github"];
        assert_eq!(written.command.as_deref(), Some("npx"));
        assert_eq!(written.args, ["-y", "server-github"]);
        assert_eq!(written.env["LOG"], "debug");
        assert_eq!(written.env_vars, ["GITHUB_TOKEN"]);
        assert!(std::fs::read_to_string(&file).unwrap().starts_with("# mine\nmode = \"write\"\n"));

        assert!(remove(&file, "github").unwrap());
        assert!(!remove(&file, "github").unwrap());
        assert!(config::Layer::load(&file).unwrap().mcp_servers.is_empty());
    }

    #[test]
    fn add_refuses_a_secret_in_env_and_a_server_with_no_transport() {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("config.toml");
        let entry =
            entry_from_args(None, None, &["GITHUB_TOKEN=ghp_x".to_owned()], vec![], vec!["srv".into()])
                .unwrap();
        let error = add(&file, "gh", &entry).unwrap_err();
        assert!(format!("{error:#}").contains("env_vars"), "{error:#}");
        assert!(!file.exists(), "nothing is written when the result does not read back");
        assert!(entry_from_args(None, None, &[], vec![], vec![]).is_err());
        assert!(entry_from_args(None, None, &["NOEQUALS".to_owned()], vec![], vec!["s".into()]).is_err());
    }
}
