//! The configured MCP servers, started for a session: their configs with
//! credentials read from the environment, stdio servers in the session's
//! sandbox, their tools added to the session's, and what answers their
//! requests of the person (elicitation) and of the model (sampling).

use std::path::Path;
use std::sync::Arc;

use bosun_core::{Model, Tool, ToolSource};
use bosun_mcp::{
    DeclineAll, Elicitor, McpServers, ParentEnv, RefuseSampling, Sampler, ServerConfig, ServerError,
    ServerEvent, ServerSandbox, StartOptions, Started,
};

use crate::config::mcp::McpSandbox;
use crate::config::{self, Env, Settings};
use crate::notice::Notices;

/// A [`Sampler`] that answers with the session's own model, told it once
/// the model is built (servers start before it).
pub trait SessionSampler: Sampler {
    /// The session's model is built: requests from now on go to it, named
    /// `name` to the servers.
    fn model_ready(&self, model: &Arc<dyn Model>, name: &str);
}

impl SessionSampler for RefuseSampling {
    fn model_ready(&self, _model: &Arc<dyn Model>, _name: &str) {}
}

/// What answers servers' requests in a session.
#[derive(Clone)]
pub struct ServerRequests {
    /// Questions for the person.
    pub elicitor: Arc<dyn Elicitor>,
    /// Completions asked of the model.
    pub sampler: Arc<dyn SessionSampler>,
}

impl ServerRequests {
    /// Answers from `elicitor` and `sampler`.
    pub fn new(elicitor: Arc<dyn Elicitor>, sampler: Arc<dyn SessionSampler>) -> Self {
        Self { elicitor, sampler }
    }

    /// Every question declined, every completion refused: for programs with
    /// no person to ask.
    pub fn refused() -> Self {
        Self::new(Arc::new(DeclineAll), Arc::new(RefuseSampling))
    }
}

impl std::fmt::Debug for ServerRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerRequests").finish_non_exhaustive()
    }
}

/// The enabled servers as bosun-mcp takes them. Credentials named by
/// variable are read from `env` here; a server whose variable is unset is
/// left out, named in the returned notices.
pub fn server_configs(settings: &Settings, env: &Env) -> (Vec<ServerConfig>, Vec<String>) {
    let mut configs = Vec::new();
    let mut notices = Vec::new();
    let user = config::user_file(env);
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

/// Starts the configured servers in parallel, telling `notices` how each
/// fares; a server that fails is named with why and the session goes on
/// without it. None when no server is configured.
pub async fn start(
    settings: &Settings,
    env: &Env,
    root: &Path,
    requests: &ServerRequests,
    notices: &Notices,
) -> Option<Started> {
    for notice in &settings.mcp_notices {
        notices.info(notice.clone());
    }
    let (configs, refused) = server_configs(settings, env);
    for notice in refused {
        notices.warn(notice);
    }
    if configs.is_empty() {
        return None;
    }
    // Stdio servers run in the session's sandbox; one that cannot be built
    // starts none (the session's tools already failed on it).
    let sandbox = match crate::sandboxing::for_workspace(root, env, settings, notices) {
        Ok(sandbox) => sandbox,
        Err(error) => {
            notices.warn(format!("MCP servers not started: {error:#}"));
            return None;
        }
    };
    let events = notices.clone();
    let options = StartOptions::new(root, ParentEnv::from_vars(env.vars()))
        .with_sandbox(sandbox)
        .with_elicitor(Arc::clone(&requests.elicitor))
        .with_sampler(Arc::clone(&requests.sampler) as Arc<dyn Sampler>)
        .with_events(move |event| {
            let line = match event {
                ServerEvent::Starting { server } => format!("mcp: starting {server}"),
                ServerEvent::Ready { server, tools } => format!("mcp: {server} ready ({tools} tools)"),
                ServerEvent::Exited { server, reason } => format!("mcp: {server} {reason}"),
                _ => return,
            };
            events.info(line);
        });
    let started = McpServers::start(configs, options).await;
    for failure in &started.failures {
        let hint = match failure {
            ServerError::Unauthorized { server, .. } => format!(" (run `bosun mcp login {server}`)"),
            _ => String::new(),
        };
        notices.warn(format!("mcp: {failure}{hint}"));
    }
    for rejected in &started.rejected {
        notices.info(format!("mcp: {rejected}"));
    }
    Some(started)
}

/// [`start`], with the servers' tools added to `tools`. The servers come
/// back shared: the session asks them between rounds for tools withdrawn,
/// back or new (their `ToolSource`), and [`stop`] shuts them down.
pub async fn start_into(
    settings: &Settings,
    env: &Env,
    root: &Path,
    tools: &mut Vec<Arc<dyn Tool>>,
    requests: &ServerRequests,
    notices: &Notices,
) -> Option<Arc<McpServers>> {
    let started = start(settings, env, root, requests, notices).await?;
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
}
