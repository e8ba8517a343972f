//! MCP servers the client passes with `session/new` or `session/load`,
//! added to the session's configuration beside the user's own: a stdio
//! server or a Streamable HTTP one, started in the session's sandbox as a
//! configured one is. A server of a name the user's configuration already
//! has is left out (the user's wins), as is an SSE one (bosun speaks only
//! Streamable HTTP); each with a notice. They are the person's (their
//! editor's settings), never the repository's, and cannot loosen the
//! sandbox: only the user's own config file may.

use std::path::Path;

use agent_client_protocol::v1::schema::McpServer as ClientServer;
use bosun_agent::Notices;
use bosun_agent::config::mcp::{McpServer, McpServerEntry, check_name};
use bosun_agent::config::{Overrides, Settings, Source};
use bosun_core::env::Env;

/// Where the client's servers are said to come from (`bosun config show`,
/// notices).
const SOURCE: Source = Source::Flag("the editor's session/new");

/// The workspace's settings with the client's servers added.
pub(crate) fn settings_with(
    workspace: &Path,
    env: &Env,
    servers: &[ClientServer],
    notices: &Notices,
    overrides: &Overrides,
) -> Result<Settings, String> {
    let mut settings =
        bosun_agent::config::resolve(workspace, env, None, overrides).map_err(|e| format!("{e:#}"))?;
    for server in servers {
        let (name, entry) = match server {
            ClientServer::Stdio(stdio) => {
                let entry = McpServerEntry {
                    command: Some(stdio.command.display().to_string()),
                    args: stdio.args.clone(),
                    env: stdio.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                    ..Default::default()
                };
                (stdio.name.clone(), entry)
            }
            ClientServer::Http(http) => {
                let entry = McpServerEntry {
                    url: Some(http.url.clone()),
                    http_headers: http.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
                    ..Default::default()
                };
                (http.name.clone(), entry)
            }
            _ => {
                notices.warn(
                    "an MCP server the editor passed is left out: bosun speaks stdio and Streamable HTTP",
                );
                continue;
            }
        };
        if let Err(error) = check_name(&name) {
            notices.warn(format!("an MCP server the editor passed is left out: {error:#}"));
            continue;
        }
        if settings.mcp_servers.contains_key(&name) {
            notices.warn(format!(
                "the editor's MCP server `{name}` is left out: your configuration has one of that name"
            ));
            continue;
        }
        settings.mcp_servers.insert(name, McpServer { entry, source: SOURCE });
    }
    Ok(settings)
}
