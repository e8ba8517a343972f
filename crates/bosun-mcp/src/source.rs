//! The servers as a session's [`ToolSource`]: asked between rounds, they
//! withdraw the tools of a server that died, restart it once after a
//! backoff and offer its tools again when it is back, and apply changed
//! tool lists (`notifications/tools/list_changed`).
//!
//! A restart runs in a task of its own, so the session never waits for it:
//! the next question between rounds after it is done collects it. A new or
//! changed tool from a restarted server follows the same rule as a changed
//! list: offered only when the server's config allows new tools.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bosun_core::{Tool, ToolChanges, ToolChangesFuture, ToolSource};
use rmcp::model::Tool as McpToolInfo;
use tokio::task::JoinHandle;

use crate::catalog::{Taken, prepare};
use crate::connect::{self, Context};
use crate::error::ServerError;
use crate::events::ServerEvent;
use crate::server::Server;
use crate::servers::McpServers;
use crate::tool::McpTool;

/// How long after a server died its one restart is tried: long enough for
/// a crash loop not to spin, short enough to be back within a round or two.
pub const RESTART_BACKOFF: Duration = Duration::from_secs(1);

type Restart = JoinHandle<Result<(Arc<Server>, Vec<McpToolInfo>), ServerError>>;

/// Per server: what happened since it died.
#[derive(Default)]
pub(crate) struct Supervision {
    /// Servers whose death was reported, with the tools it withdrew.
    dead: BTreeMap<String, Vec<Arc<McpTool>>>,
    /// Restarts under way.
    restarting: BTreeMap<String, Restart>,
    /// Servers whose one restart was tried.
    restarted: Vec<String>,
}

impl Supervision {
    /// Stops the restarts under way; a restart that got its server up is
    /// shut down by the task's drop (the process dies with its handle).
    pub(crate) fn abort(&mut self) {
        for (_, restart) in std::mem::take(&mut self.restarting) {
            restart.abort();
        }
    }
}

impl ToolSource for McpServers {
    fn pending(&self) -> bool {
        if self.tools_changed() {
            return true;
        }
        let supervision = self.supervision.lock().unwrap_or_else(PoisonError::into_inner);
        supervision.restarting.values().any(JoinHandle::is_finished)
            || self.running().iter().any(|s| {
                s.gone().is_some() && !s.is_shutting_down() && !supervision.dead.contains_key(s.name())
            })
    }

    fn changes(&self) -> ToolChangesFuture<'_> {
        Box::pin(async move {
            let mut changes = self.collect_deaths();
            self.collect_restarts(&mut changes).await;
            let listed = self.refresh().await;
            changes.withdrawn.extend(listed.removed);
            changes.offered.extend(listed.added);
            for name in listed.withheld {
                changes.notices.push(format!(
                    "MCP tool `{name}` is new or changed and not offered: its server's config does not set \
                     allow_new_tools"
                ));
            }
            changes.notices.extend(listed.rejected.iter().map(ToString::to_string));
            changes.notices.extend(listed.errors.iter().map(ToString::to_string));
            changes
        })
    }
}

impl McpServers {
    /// Withdraws the tools of servers that died since last asked, and
    /// starts each one's restart unless it had one.
    fn collect_deaths(&self) -> ToolChanges {
        let mut changes = ToolChanges::default();
        let mut supervision = self.supervision.lock().unwrap_or_else(PoisonError::into_inner);
        for server in self.running() {
            let name = server.name().to_owned();
            let Some(why) = server.gone() else { continue };
            if server.is_shutting_down() || supervision.dead.contains_key(&name) {
                continue;
            }
            let withdrawn = self.take_tools_of(&server);
            changes.withdrawn.extend(withdrawn.iter().map(|t| t.definition().name.clone()));
            let again = !supervision.restarted.contains(&name);
            changes.notices.push(if again {
                format!("MCP server `{name}` {why}: its tools are withdrawn; restarting it once")
            } else {
                format!(
                    "MCP server `{name}` {why} again: its tools are withdrawn for the rest of the session"
                )
            });
            supervision.dead.insert(name.clone(), withdrawn);
            if again {
                supervision.restarted.push(name.clone());
                let (config, context) = (server.config.clone(), Arc::clone(&self.context));
                supervision.restarting.insert(name, tokio::spawn(restart(config, context)));
            }
        }
        changes
    }

    /// Takes in the restarts that finished: a server back up replaces the
    /// dead one and offers its tools again.
    async fn collect_restarts(&self, changes: &mut ToolChanges) {
        let finished: Vec<(String, Restart)> = {
            let mut supervision = self.supervision.lock().unwrap_or_else(PoisonError::into_inner);
            let names: Vec<String> = supervision
                .restarting
                .iter()
                .filter(|(_, r)| r.is_finished())
                .map(|(n, _)| n.clone())
                .collect();
            names.into_iter().filter_map(|n| supervision.restarting.remove(&n).map(|r| (n, r))).collect()
        };
        for (name, restart) in finished {
            let (server, listed) = match restart.await {
                Ok(Ok(started)) => started,
                Ok(Err(error)) => {
                    changes.notices.push(format!("MCP server `{name}` could not be restarted: {error}"));
                    continue;
                }
                Err(error) => {
                    changes.notices.push(format!("MCP server `{name}` could not be restarted: {error}"));
                    continue;
                }
            };
            let before = {
                let mut supervision = self.supervision.lock().unwrap_or_else(PoisonError::into_inner);
                supervision.dead.remove(&name).unwrap_or_default()
            };
            self.replace_server(&server);
            let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            let taken: Taken = tools
                .iter()
                .map(|(n, t)| (n.clone(), (t.server().name().to_owned(), t.original().to_owned())))
                .collect();
            let (prepared, refused) = prepare(&server.config, &listed, &taken);
            changes.notices.extend(refused.iter().map(ToString::to_string));
            let mut withheld = Vec::new();
            for tool in prepared {
                let known = before.iter().any(|old| old.same_as(&tool));
                if !known && !server.config.allow_new_tools {
                    withheld.push(tool.definition.name.clone());
                    continue;
                }
                let tool = McpTool::new(tool, Arc::clone(&server));
                tools.insert(tool.definition().name.clone(), Arc::clone(&tool));
                changes.offered.push(tool as Arc<dyn Tool>);
            }
            // Its list as of now; a list_changed from before the restart is moot.
            server.shared.tools_changed.store(false, Ordering::SeqCst);
            changes.notices.push(format!("MCP server `{name}` was restarted"));
            if !withheld.is_empty() {
                changes.notices.push(format!(
                    "MCP server `{name}` came back with new or changed tools, not offered (allow_new_tools is \
                     off): {}",
                    withheld.join(", ")
                ));
            }
        }
    }

    /// Removes `server`'s tools from the offered set; calls of them answer
    /// that they were withdrawn.
    fn take_tools_of(&self, server: &Arc<Server>) -> Vec<Arc<McpTool>> {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let names: Vec<String> =
            tools.iter().filter(|(_, t)| Arc::ptr_eq(t.server(), server)).map(|(n, _)| n.clone()).collect();
        names.into_iter().filter_map(|n| tools.remove(&n)).inspect(|t| t.withdraw()).collect()
    }
}

/// The one restart: wait out the backoff, then start the server as at
/// first, reporting progress as the first start did.
async fn restart(
    config: crate::config::ServerConfig,
    context: Arc<Context>,
) -> Result<(Arc<Server>, Vec<McpToolInfo>), ServerError> {
    tokio::time::sleep(RESTART_BACKOFF).await;
    context.events.emit(ServerEvent::Starting { server: config.name.clone() });
    let started = connect::start(config, &context).await;
    match &started {
        Ok((server, listed)) => {
            context.events.emit(ServerEvent::Ready { server: server.name().to_owned(), tools: listed.len() })
        }
        Err(error) => context
            .events
            .emit(ServerEvent::Failed { server: error.server().to_owned(), error: error.to_string() }),
    }
    started
}
