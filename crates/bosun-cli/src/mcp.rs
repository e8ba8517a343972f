//! `bosun mcp`: the configured MCP servers, adding and removing them in the
//! user's own config file, and the tools they offer.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, bail};
use bosun_agent::mcp::ServerRequests;
use bosun_agent::{Notice, Notices};

use crate::cli::McpCommand;
use crate::config::mcp::{McpServerEntry, check_name};
use crate::config::{self, Env};
use crate::output::{Palette, Palettes};
use crate::sanitize;

pub async fn run(dir: Option<&Path>, profile: Option<&str>, command: McpCommand, env: &Env) -> Result<()> {
    match command {
        McpCommand::List => {
            let settings = config::resolve(&config::workdir(dir)?, env, profile, &Default::default())?;
            crate::output::out(format_args!("{}", sanitize::block(&list(&settings))))?;
            for notice in &settings.mcp_notices {
                eprintln!("bosun: {}", sanitize::line(notice));
            }
            Ok(())
        }
        McpCommand::Add { name, url, bearer_token_env_var, env: vars, env_vars, command, replace } => {
            let entry = entry_from_args(url, bearer_token_env_var, &vars, env_vars, command)?;
            entry.check(&name)?;
            let file = user_file(env)?;
            add(&file, &name, &entry, replace)?;
            crate::output::outln(format_args!(
                "{} MCP server `{name}` ({}) {}",
                if replace { "set" } else { "added" },
                entry.summary(),
                if replace { format!("in {}", file.display()) } else { format!("to {}", file.display()) }
            ))?;
            Ok(())
        }
        McpCommand::Remove { name } => {
            let file = user_file(env)?;
            if remove(&file, &name)? {
                crate::output::outln(format_args!("removed MCP server `{name}` from {}", file.display()))?;
                // Its tokens go with it: a later server of the same name
                // must log in again, not inherit them.
                let tokens = bosun_agent::mcp_login::logout(&name, env)?;
                if tokens.change == bosun_agent::mcp_login::Change::LoggedOut {
                    crate::output::outln(format_args!(
                        "removed its OAuth tokens ({})",
                        tokens.file.display()
                    ))?;
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
        McpCommand::Logout { name } => crate::mcp_login::logout(&name, env),
        McpCommand::Conformance { url } => crate::mcp_conformance::run(&url, env).await,
    }
}

/// What answers servers' requests in a run with these options (the
/// approval flag) and settings (the mode): the terminal, or a decline and a
/// refusal without one.
pub fn requests_for_run(
    run: &crate::cli::RunOptions,
    settings: &config::Settings,
    palettes: Palettes,
) -> ServerRequests {
    let notices = stderr_notices(palettes.stderr);
    let sampler = crate::sampling::sampler(settings.mode, run.dangerously_approve_all, palettes.tty, notices);
    ServerRequests::new(crate::elicit::elicitor(palettes.tty), Arc::new(sampler))
}

/// For commands that run no session: decline and refuse.
pub fn no_requests() -> ServerRequests {
    ServerRequests::new(Arc::new(crate::elicit::NoTerminal), Arc::new(crate::sampling::refusing()))
}

/// Notices on stderr: warnings red, the rest dim; sanitised (what servers
/// and files say is shown, never obeyed).
pub fn stderr_notices(stderr: Palette) -> Notices {
    Notices::new(move |notice| match notice {
        Notice::Warning(text) => eprintln!("{}", stderr.red(&sanitize::block(&format!("warning: {text}")))),
        Notice::Advice(text) => eprintln!("{}", stderr.dim(&sanitize::line(&format!("bosun: {text}")))),
        other => eprintln!("{}", stderr.dim(&sanitize::line(other.text()))),
    })
}

async fn tools(dir: Option<&Path>, profile: Option<&str>, name: Option<&str>, env: &Env) -> Result<()> {
    let root = config::workdir(dir)?;
    let mut settings = config::resolve(&root, env, profile, &Default::default())?;
    if let Some(name) = name {
        let Some(server) = settings.mcp_servers.remove(name) else {
            bail!("no MCP server `{name}` is configured (see `bosun mcp list`)");
        };
        settings.mcp_servers = [(name.to_owned(), server)].into();
    }
    let notices = stderr_notices(Palette::default());
    let Some(started) = bosun_agent::mcp::start(&settings, env, &root, &no_requests(), &notices).await else {
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
    crate::output::out(format_args!("{}", sanitize::block(&out)))?;
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
fn add(file: &Path, name: &str, entry: &McpServerEntry, replace: bool) -> Result<()> {
    Ok(config::edit_user_file(file, |doc| {
        let servers = config::top_table(doc, "mcp_servers", file)?;
        // Claude Code refuses too: a typo'd name must not lose a server's
        // settings.
        if servers.contains_key(name) && !replace {
            return Err(bosun_agent::Error::invalid(format!(
                "an MCP server named `{name}` is already in {}; pass --replace to replace it, or choose another name",
                file.display()
            )));
        }
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
        add(&file, "github", &entry, false).unwrap();
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
        let error = add(&file, "gh", &entry, false).unwrap_err();
        assert!(format!("{error:#}").contains("env_vars"), "{error:#}");
        assert!(!file.exists(), "nothing is written when the result does not read back");
        assert!(entry_from_args(None, None, &[], vec![], vec![]).is_err());
        assert!(entry_from_args(None, None, &["NOEQUALS".to_owned()], vec![], vec!["s".into()]).is_err());
    }
}
