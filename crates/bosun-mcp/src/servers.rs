//! The set of servers a session uses: started together, their tools offered
//! under one namespace, refreshed between rounds when a server says its list
//! changed, and shut down together. Dropping the set kills what is left.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use bosun_core::{Tool, ToolContext, ToolOutput};

use crate::catalog::{Taken, prepare};
use crate::config::ServerConfig;
use crate::connect::{self, Context};
use crate::elicit::{DeclineAll, Elicitor};
use crate::env::ParentEnv;
use crate::error::{ServerError, ToolRejection};
use crate::events::{EventHook, Events, ServerEvent};
use crate::sampling::{RefuseSampling, Sampler};
use crate::server::Server;
use crate::source::Supervision;
use crate::tool::McpTool;

/// How to start servers.
#[non_exhaustive]
pub struct StartOptions {
    /// The workspace: stdio servers run there (unless their config says
    /// otherwise) and it is the one root offered to every server.
    pub workspace_root: PathBuf,
    /// bosun's environment, which stdio servers' environments draw from.
    pub parent_env: ParentEnv,
    /// Sees start-up progress and everything after.
    pub on_event: Option<EventHook>,
    /// Answers servers' requests for input; declines by default.
    pub elicitor: Arc<dyn Elicitor>,
    /// Answers the sampling requests of servers whose config enables
    /// sampling; refuses by default.
    pub sampler: Arc<dyn Sampler>,
    /// The OS sandbox stdio servers run in (`bosun-sandbox`); unconfined
    /// (dying with bosun all the same) when `None`.
    pub sandbox: Option<Arc<bosun_sandbox::Sandbox>>,
}

impl StartOptions {
    /// Options with no event hook and elicitation declined.
    pub fn new(workspace_root: impl Into<PathBuf>, parent_env: ParentEnv) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            parent_env,
            on_event: None,
            elicitor: Arc::new(DeclineAll),
            sampler: Arc::new(RefuseSampling),
            sandbox: None,
        }
    }

    /// Runs stdio servers inside `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Arc<bosun_sandbox::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Sends every [`ServerEvent`] to `hook`.
    pub fn with_events(mut self, hook: impl Fn(&ServerEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Answers elicitation with `elicitor`.
    pub fn with_elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = elicitor;
        self
    }

    /// Answers sampling requests with `sampler`.
    pub fn with_sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.sampler = sampler;
        self
    }
}

impl fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StartOptions")
            .field("workspace_root", &self.workspace_root)
            .field("parent_env", &self.parent_env)
            .field("on_event", &self.on_event.is_some())
            .finish_non_exhaustive()
    }
}

/// What [`McpServers::start`] gives back.
#[derive(Debug)]
#[non_exhaustive]
pub struct Started {
    /// The servers that started.
    pub servers: McpServers,
    /// The servers that did not, each saying why.
    pub failures: Vec<ServerError>,
    /// Tools of running servers that are not offered, each saying why.
    pub rejected: Vec<ToolRejection>,
}

/// What [`McpServers::refresh`] found.
#[derive(Default)]
#[non_exhaustive]
pub struct ToolListChange {
    /// Session names of tools no longer offered (gone from the server's list
    /// or changed); calls of them now answer that they were withdrawn.
    pub removed: Vec<String>,
    /// New or changed tools of servers that allow new tools.
    pub added: Vec<Arc<dyn Tool>>,
    /// Session names of new or changed tools not offered, because their
    /// server's config does not allow new tools.
    pub withheld: Vec<String>,
    /// Tools of the new lists that cannot be offered.
    pub rejected: Vec<ToolRejection>,
    /// Servers whose list could not be read (asked again next time).
    pub errors: Vec<ServerError>,
}

impl ToolListChange {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty() && self.withheld.is_empty()
    }
}

impl fmt::Debug for ToolListChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let added: Vec<&str> = self.added.iter().map(|t| t.definition().name.as_str()).collect();
        f.debug_struct("ToolListChange")
            .field("removed", &self.removed)
            .field("added", &added)
            .field("withheld", &self.withheld)
            .field("rejected", &self.rejected)
            .field("errors", &self.errors)
            .finish()
    }
}

/// Running MCP servers and the tools they offer.
pub struct McpServers {
    /// The servers, in start order; a restarted one takes its old place.
    servers: RwLock<Vec<Arc<Server>>>,
    /// Offered tools by session name, in the order they were offered.
    pub(crate) tools: Mutex<BTreeMap<String, Arc<McpTool>>>,
    /// What a restart starts from.
    pub(crate) context: Arc<Context>,
    /// Deaths seen and restarts under way.
    pub(crate) supervision: Mutex<Supervision>,
}

impl fmt::Debug for McpServers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServers")
            .field("servers", &self.running().iter().map(|s| s.name().to_owned()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl McpServers {
    /// Starts every server in parallel, each within its start-up timeout.
    /// Servers that fail are reported in [`Started::failures`] and leave no
    /// process behind; the others run. A server name used twice fails the
    /// second.
    pub async fn start(configs: Vec<ServerConfig>, options: StartOptions) -> Started {
        let events = Events::new(options.on_event.clone());
        let context = Arc::new(Context {
            workspace_root: options.workspace_root,
            parent_env: options.parent_env,
            elicitor: options.elicitor,
            sampler: options.sampler,
            events: events.clone(),
            sandbox: options.sandbox,
        });
        let mut failures = Vec::new();
        let mut unique = Vec::new();
        for config in configs {
            let refused = if config.name.trim().is_empty() {
                Some("a server needs a name")
            } else if unique.iter().any(|c: &ServerConfig| c.name == config.name) {
                Some("another server has the same name")
            } else {
                None
            };
            match refused {
                Some(reason) => failures
                    .push(ServerError::InvalidConfig { server: config.name, reason: reason.to_owned() }),
                None => unique.push(config),
            }
        }
        // Each server's progress is reported as it happens, not once all are done.
        let starts = unique.into_iter().map(|config| {
            let (context, events) = (&context, &events);
            async move {
                events.emit(ServerEvent::Starting { server: config.name.clone() });
                let result = connect::start(config, context).await;
                match &result {
                    Ok((server, listed)) => events
                        .emit(ServerEvent::Ready { server: server.name().to_owned(), tools: listed.len() }),
                    Err(error) => events.emit(ServerEvent::Failed {
                        server: error.server().to_owned(),
                        error: error.to_string(),
                    }),
                }
                result
            }
        });
        let results = futures_util::future::join_all(starts).await;
        let mut servers = Vec::new();
        let mut tools = BTreeMap::new();
        let mut taken = Taken::new();
        let mut rejected = Vec::new();
        for result in results {
            let (server, listed) = match result {
                Ok(started) => started,
                Err(error) => {
                    failures.push(error);
                    continue;
                }
            };
            let (prepared, refused) = prepare(&server.config, &listed, &taken);
            rejected.extend(refused);
            for tool in prepared {
                let name = tool.definition.name.clone();
                taken.insert(name.clone(), (server.name().to_owned(), tool.original.clone()));
                tools.insert(name, McpTool::new(tool, Arc::clone(&server)));
            }
            servers.push(server);
        }
        let servers = Self {
            servers: RwLock::new(servers),
            tools: Mutex::new(tools),
            context,
            supervision: Mutex::new(Supervision::default()),
        };
        Started { servers, failures, rejected }
    }

    /// The tools offered now, sorted by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools.values().map(|t| Arc::clone(t) as Arc<dyn Tool>).collect()
    }

    /// `list_mcp_resources` and `read_mcp_resource`, over the running servers
    /// that said they have resources; none when no server has them. Apart
    /// from [`tools`](Self::tools) because they belong to no one server
    /// (not `mcp__SERVER__TOOL`, not subject to its tool filters or its
    /// `tools/list_changed`), so an embedder opts in to them. They reach the
    /// servers through `self` (not kept alive by them), so a restarted
    /// server is the one they reach.
    pub fn resource_tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        crate::resources::tools(self)
    }

    /// The names of the running servers, in start order.
    pub fn server_names(&self) -> Vec<String> {
        self.running().iter().map(|s| s.name().to_owned()).collect()
    }

    /// Why a server cannot take calls, if it cannot (it exited, closed the
    /// connection, was shut down); `None` while it runs or is unknown.
    pub fn unavailable(&self, server: &str) -> Option<ServerError> {
        let server = self.running().into_iter().find(|s| s.name() == server)?;
        let reason = server.gone()?;
        Some(ServerError::Unavailable { server: server.name().to_owned(), reason })
    }

    /// The pid of a stdio server's process, which leads its process group
    /// (`None` for HTTP or an unknown name).
    pub fn process_id(&self, server: &str) -> Option<u32> {
        self.running().iter().find(|s| s.name() == server).and_then(|s| s.pid())
    }

    /// The tail of a stdio server's stderr so far (empty for HTTP).
    pub fn stderr_tail(&self, server: &str) -> Option<String> {
        self.running().iter().find(|s| s.name() == server).map(|s| s.stderr_tail())
    }

    /// Calls MCP tool `tool` of `server` by its MCP name, offered or not
    /// (for diagnostics such as a `bosun mcp call` command; a session calls
    /// the [`Tool`]s). Every failure is an error output.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
        context: ToolContext,
    ) -> ToolOutput {
        match self.running().iter().find(|s| s.name() == server) {
            Some(found) => found.call(tool, arguments, context).await,
            None => ToolOutput::error(format!("there is no running MCP server `{server}`")),
        }
    }

    /// Whether a server said its tool list changed since it was last read.
    pub fn tools_changed(&self) -> bool {
        self.running().iter().any(|s| s.gone().is_none() && s.shared.tools_changed.load(Ordering::SeqCst))
    }

    /// Reads the tool lists that servers said changed, and applies the
    /// difference: removed and changed tools are withdrawn; new and changed
    /// ones are offered when their server's config allows new tools. The
    /// runtime calls this between rounds.
    pub async fn refresh(&self) -> ToolListChange {
        let mut change = ToolListChange::default();
        for server in &self.running() {
            // A dead server's list is moot: its tools are withdrawn with it.
            if !server.shared.tools_changed.swap(false, Ordering::SeqCst) || server.gone().is_some() {
                continue;
            }
            let listed = match server.list_tools().await {
                Ok(listed) => listed,
                Err(reason) => {
                    // Asked again next time.
                    server.shared.tools_changed.store(true, Ordering::SeqCst);
                    change.errors.push(ServerError::ListTools { server: server.name().to_owned(), reason });
                    continue;
                }
            };
            let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            let taken: Taken = tools
                .iter()
                .filter(|(_, t)| !Arc::ptr_eq(t.server(), server))
                .map(|(name, t)| (name.clone(), (t.server().name().to_owned(), t.original().to_owned())))
                .collect();
            let (prepared, refused) = prepare(&server.config, &listed, &taken);
            change.rejected.extend(refused);
            let mine: Vec<String> = tools
                .iter()
                .filter(|(_, t)| Arc::ptr_eq(t.server(), server))
                .map(|(n, _)| n.clone())
                .collect();
            for name in mine {
                let kept = prepared.iter().any(|p| p.definition.name == name && tools[&name].same_as(p));
                if !kept && let Some(tool) = tools.remove(&name) {
                    tool.withdraw();
                    change.removed.push(name);
                }
            }
            for tool in prepared {
                let name = tool.definition.name.clone();
                if tools.contains_key(&name) {
                    continue;
                }
                if server.config.allow_new_tools {
                    let tool = McpTool::new(tool, Arc::clone(server));
                    tools.insert(name, Arc::clone(&tool));
                    change.added.push(tool);
                } else {
                    change.withheld.push(name);
                }
            }
        }
        change
    }

    /// Shuts every server down in parallel: a stdio server's stdin is
    /// closed, then after its grace `SIGTERM`, then `SIGKILL`, to its whole
    /// process group; an HTTP connection is closed.
    pub async fn shutdown(&self) {
        self.supervision.lock().unwrap_or_else(PoisonError::into_inner).abort();
        futures_util::future::join_all(self.running().iter().map(|s| s.shutdown())).await;
    }

    /// The servers now, in start order.
    pub(crate) fn running(&self) -> Vec<Arc<Server>> {
        self.servers.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Puts a restarted server in the place of the one of the same name.
    pub(crate) fn replace_server(&self, server: &Arc<Server>) {
        let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = servers.iter_mut().find(|s| s.name() == server.name()) {
            *slot = Arc::clone(server);
        }
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.supervision.lock().unwrap_or_else(PoisonError::into_inner).abort();
        for server in &self.running() {
            server.abort();
        }
    }
}
