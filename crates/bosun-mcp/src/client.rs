//! bosun's side of one MCP connection (rmcp's `ClientHandler`): what it
//! advertises (roots, form elicitation; sampling only when the server's
//! config enables it), the roots it answers (the workspace root),
//! elicitation through the [`Elicitor`], sampling through the [`Sampler`]
//! (a request the server withdraws stops either), and the
//! notifications it records: progress (routed to the running call), tool
//! list changes (a flag the runtime reads between rounds), logs.

// Roots and logging are deprecated by SEP-2577 (the 2026-07-28 protocol),
// but they are what servers speaking the `initialize` era use: the
// filesystem server reads its allowed directories from roots.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bosun_core::tool::ProgressSink;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    ListRootsResult, LoggingMessageNotificationParam, MetaObject, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, Root, RootsCapabilities, SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use crate::elicit::{ElicitationKind, ElicitationRequest, ElicitationResponse, Elicitor};
use crate::events::{Events, ServerEvent};
use crate::sampling::{self, Sampler};

/// State the connection's handler shares with the server's calls.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set by `notifications/tools/list_changed`, cleared by a listing.
    pub(crate) tools_changed: AtomicBool,
    progress: Mutex<HashMap<ProgressToken, Route>>,
    /// What sampling spent since a call last took it: a server samples
    /// while it handles a call, so the next call to end carries it.
    sampled: Mutex<bosun_core::Usage>,
}

/// Where a call's progress goes.
#[derive(Debug)]
struct Route {
    tool: String,
    sink: ProgressSink,
}

/// Removes a call's progress route when the call ends, however it ends.
#[derive(Debug)]
pub(crate) struct RouteGuard {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.shared.progress.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.token);
    }
}

impl Shared {
    /// Takes what sampling spent since last asked.
    pub(crate) fn take_sampled(&self) -> bosun_core::Usage {
        std::mem::take(&mut *self.sampled.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Sends progress for `token` to `sink` until the guard is dropped.
    pub(crate) fn route(
        self: &Arc<Self>,
        token: ProgressToken,
        tool: &str,
        sink: ProgressSink,
    ) -> RouteGuard {
        let route = Route { tool: tool.to_owned(), sink };
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).insert(token.clone(), route);
        RouteGuard { shared: Arc::clone(self), token }
    }
}

/// The handler of one connection.
pub(crate) struct Handler {
    server: String,
    workspace_root: Option<Root>,
    elicitor: Arc<dyn Elicitor>,
    /// Set when sampling is enabled for this server (and so advertised).
    sampler: Option<Arc<dyn Sampler>>,
    events: Events,
    shared: Arc<Shared>,
}

impl Handler {
    pub(crate) fn new(
        server: &str,
        workspace_root: &Path,
        elicitor: Arc<dyn Elicitor>,
        sampler: Option<Arc<dyn Sampler>>,
        events: Events,
        shared: Arc<Shared>,
    ) -> Self {
        let workspace_root = root(workspace_root);
        Self { server: server.to_owned(), workspace_root, elicitor, sampler, events, shared }
    }
}

/// The workspace root as an MCP root, `file://` and percent-encoded.
fn root(path: &Path) -> Option<Root> {
    let absolute = std::path::absolute(path).ok()?;
    let text = absolute.to_str()?;
    let mut uri = String::from("file://");
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    let name = absolute.file_name().and_then(|n| n.to_str()).unwrap_or("workspace").to_owned();
    Some(Root::new(uri).with_name(name))
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        if self.sampler.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        // The `initialize` handshake is what every server speaks; rmcp's
        // default version (2026-07-28) has no handshake.
        ClientConfig::new(capabilities, Implementation::new("bosun", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(ListRootsResult::new(self.workspace_root.iter().cloned().collect()))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let Some(sampler) = &self.sampler else { return Err(sampling::not_enabled()) };
        let request = sampling::lower(&self.server, params)?;
        tokio::select! {
            answer = sampler.sample(request) => {
                let response = answer.map_err(sampling::refusal)?;
                // The call the server samples for reports these tokens to
                // the session, which counts them in the turn.
                let usage = response.usage;
                tracing::info!(server = %self.server, input = usage.input + usage.cache_read,
                    output = usage.output, "mcp: sampling used the model");
                *self.shared.sampled.lock().unwrap_or_else(PoisonError::into_inner) += usage;
                Ok(sampling::answer(response))
            }
            // Dropping the sampler's future stops what it started.
            () = context.ct.cancelled() => {
                Err(sampling::refusal(sampling::SamplingRefused::new("the server withdrew the request")))
            }
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (message, kind) = match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or_default();
                (message, ElicitationKind::Form { schema })
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                (message, ElicitationKind::Url { url })
            }
            // A mode newer than this client.
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let request = ElicitationRequest { server: self.server.clone(), message, kind };
        // A request the server withdrew (or a connection that ended) stops
        // the elicitor, a prompt included, rather than leaving it asking.
        let answer = tokio::select! {
            answer = self.elicitor.elicit(request) => answer,
            () = context.ct.cancelled() => ElicitationResponse::Cancel,
        };
        Ok(match answer {
            ElicitationResponse::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content)
            }
            ElicitationResponse::Decline { reason } => {
                let mut meta = MetaObject::new();
                meta.0.insert("reason".into(), reason.into());
                ElicitResult::new(ElicitationAction::Decline).with_meta(meta)
            }
            ElicitationResponse::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let mut message = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => params.progress.to_string(),
        };
        if let Some(text) = &params.message {
            message.push_str(": ");
            message.push_str(text);
        }
        let tool = {
            let routes = self.shared.progress.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(route) = routes.get(&params.progress_token) else { return };
            route.sink.report(message.clone());
            route.tool.clone()
        };
        self.events.emit(ServerEvent::Progress { server: self.server.clone(), tool, message });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.tools_changed.store(true, Ordering::SeqCst);
        self.events.emit(ServerEvent::ToolsChanged { server: self.server.clone() });
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = format!("{:?}", params.level).to_lowercase();
        let message = match params.data {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        };
        tracing::debug!(server = %self.server, %level, %message, "mcp: server log");
        self.events.emit(ServerEvent::Log { server: self.server.clone(), level, message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_a_percent_encoded_file_uri() {
        let root = root(Path::new("/tmp/my work/ä")).unwrap();
        assert_eq!(root.uri, "file:///tmp/my%20work/%C3%A4");
        assert_eq!(root.name.as_deref(), Some("ä"));
    }
}
