//! Starting one server: spawn its process (cleared environment, its own
//! process group) or connect over Streamable HTTP, then `initialize` and
//! `tools/list`, all within its start-up timeout. A failure leaves nothing
//! running: the process group is killed and reaped before the error is
//! returned.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::model::Tool as McpToolInfo;
use rmcp::service::{ClientInitializeError, RoleClient};
use rmcp::transport::IntoTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientCacheConfig, ServiceExt};
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::auth::OAuth;
use crate::auth_http::OAuthHttp;
use crate::client::{Handler, Shared};
use crate::config::{HttpTransport, ServerConfig, ServerSandbox, StdioTransport, Transport};
use crate::elicit::Elicitor;
use crate::env::{ParentEnv, child_env};
use crate::error::ServerError;
use crate::events::{Events, ServerEvent};
use crate::process::{Exit, ServerProcess};
use crate::server::{Parts, Server};
use crate::stdout::{StrayOutput, WatchedStdout};
use bosun_sandbox::CallAccess;

/// What every server's start shares.
pub(crate) struct Context {
    pub(crate) workspace_root: PathBuf,
    pub(crate) parent_env: ParentEnv,
    pub(crate) elicitor: Arc<dyn Elicitor>,
    pub(crate) sampler: Arc<dyn crate::sampling::Sampler>,
    pub(crate) events: Events,
    /// Where stdio servers run; unconfined when `None`.
    pub(crate) sandbox: Option<Arc<bosun_sandbox::Sandbox>>,
}

/// Starts `config`'s server and lists its tools.
pub(crate) async fn start(
    config: ServerConfig,
    context: &Context,
) -> Result<(Arc<Server>, Vec<McpToolInfo>), ServerError> {
    match config.transport.clone() {
        Transport::Stdio(stdio) => start_stdio(config, &stdio, context).await,
        Transport::Http(http) => start_http(config, &http, context).await,
    }
}

async fn start_stdio(
    config: ServerConfig,
    stdio: &StdioTransport,
    context: &Context,
) -> Result<(Arc<Server>, Vec<McpToolInfo>), ServerError> {
    let invalid = |reason: String| ServerError::InvalidConfig { server: config.name.clone(), reason };
    if stdio.command.trim().is_empty() {
        return Err(invalid("no command is configured".into()));
    }
    let cwd = match &stdio.cwd {
        Some(dir) => context.workspace_root.join(dir),
        None => context.workspace_root.clone(),
    };
    if !cwd.is_dir() {
        // Spawning would fail with "not found" too, naming no directory.
        return Err(invalid(format!("the working directory {} does not exist", cwd.display())));
    }
    let mut command = Command::new(&stdio.command);
    command.args(&stdio.args).env_clear().envs(child_env(&context.parent_env, stdio)).current_dir(&cwd);
    let sandboxed = match (&context.sandbox, config.sandbox) {
        (Some(sandbox), ServerSandbox::Policy) => sandbox.prepare(&mut command, CallAccess::Policy),
        (Some(sandbox), ServerSandbox::Network) => sandbox.prepare(&mut command, CallAccess::Network),
        (None, _) | (Some(_), ServerSandbox::Off) => Ok(bosun_sandbox::unconfined(&mut command)),
    }
    .map_err(|error| ServerError::Spawn {
        server: config.name.clone(),
        command: stdio.command.clone(),
        source: std::io::Error::other(error),
    })?;
    let events = context.events.clone();
    let server = config.name.clone();
    let on_stderr = move |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        events.emit(ServerEvent::Stderr { server: server.clone(), text });
    };
    let (process, stdout, stdin) = ServerProcess::spawn(command, sandboxed, on_stderr).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ServerError::CommandNotFound { server: config.name.clone(), command: stdio.command.clone() }
        } else {
            ServerError::Spawn { server: config.name.clone(), command: stdio.command.clone(), source }
        }
    })?;
    let stray = StrayOutput::default();
    let transport = (WatchedStdout::new(stdout, stray.clone()), stdin);
    connect(config, context, transport, Some(process), Some(stray)).await
}

async fn start_http(
    config: ServerConfig,
    http: &HttpTransport,
    context: &Context,
) -> Result<(Arc<Server>, Vec<McpToolInfo>), ServerError> {
    let invalid = |reason: String| ServerError::InvalidConfig { server: config.name.clone(), reason };
    let url = reqwest::Url::parse(&http.url)
        .map_err(|e| invalid(format!("the URL `{}` is not valid: {e}", http.url)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!("the URL `{}` is not http:// or https://", http.url)));
    }
    let mut headers = HashMap::new();
    for (name, value) in &http.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("`{name}` is not a valid header name")))?;
        // The value is a secret: the error names the header only.
        let mut value = HeaderValue::from_str(value.expose())
            .map_err(|_| invalid(format!("the value of header `{name}` is not valid")))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    // Built here so that a failure is an error rather than rmcp's panic, and
    // with no redirects: a token never follows one to another place.
    crate::tls::install_default_provider();
    let client = reqwest::Client::builder()
        .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| invalid(format!("cannot build the HTTP client: {e}")))?;
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(http.url.as_str()).custom_headers(headers);
    if let Some(token) = &http.bearer_token {
        transport_config = transport_config.auth_header(token.expose());
    }
    let oauth = match (&http.oauth, &http.bearer_token) {
        (Some(oauth), None) => oauth.clone(),
        _ => {
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            return connect(config, context, transport, None, None).await;
        }
    };
    // OAuth lives in the HTTP client, below the transport (auth.rs).
    let oauth = Arc::new(OAuth::new(&config.name, &http.url, oauth, client.clone()));
    let transport = StreamableHttpClientTransport::with_client(
        OAuthHttp::new(client, Arc::clone(&oauth)),
        transport_config,
    );
    let server = config.name.clone();
    connect(config, context, transport, None, None).await.map_err(|error| match oauth.failure() {
        Some(reason) => ServerError::Unauthorized { server, reason },
        None => error,
    })
}

/// `initialize` and `tools/list` over `transport`, before the deadline.
async fn connect<T, E, A>(
    config: ServerConfig,
    context: &Context,
    transport: T,
    mut process: Option<ServerProcess>,
    stray: Option<StrayOutput>,
) -> Result<(Arc<Server>, Vec<McpToolInfo>), ServerError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let deadline = Instant::now() + config.startup_timeout;
    let shared = Arc::new(Shared::default());
    let handler = Handler::new(
        &config.name,
        &context.workspace_root,
        Arc::clone(&context.elicitor),
        // Advertised, and answered, only where the config asks for it.
        config.sampling.then(|| Arc::clone(&context.sampler)),
        context.events.clone(),
        Arc::clone(&shared),
    );
    let cancel = CancellationToken::new();
    let failure = Failure { config: &config, stray: stray.as_ref() };
    let running =
        match tokio::time::timeout_at(deadline, handler.serve_with_ct(transport, cancel.clone())).await {
            Ok(Ok(running)) => running,
            Ok(Err(error)) => {
                cancel.cancel();
                let exit = exited_on_its_own(process.as_ref()).await;
                let stderr = stop(process.as_mut()).await;
                return Err(failure.initialize(describe(&error, exit), stderr));
            }
            Err(_) => {
                cancel.cancel();
                let stderr = stop(process.as_mut()).await;
                return Err(failure.timeout(stderr));
            }
        };
    let peer = running.peer().clone();
    // Every listing is a fresh one: a stale cached list would hide a change
    // or a dead server.
    peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
    // Changes announced before this listing are in it.
    shared.tools_changed.store(false, std::sync::atomic::Ordering::SeqCst);
    let tools = match tokio::time::timeout_at(deadline, peer.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(error)) => {
            cancel.cancel();
            stop(process.as_mut()).await;
            return Err(ServerError::ListTools { server: config.name.clone(), reason: error.to_string() });
        }
        Err(_) => {
            cancel.cancel();
            let stderr = stop(process.as_mut()).await;
            return Err(failure.timeout(stderr));
        }
    };
    let connection = tokio::spawn(async move {
        let _ = running.waiting().await;
    });
    let events = context.events.clone();
    let server = Server::new(Parts { config, peer, shared, events, cancel, process, connection, stray });
    Ok((server, tools))
}

struct Failure<'a> {
    config: &'a ServerConfig,
    stray: Option<&'a StrayOutput>,
}

impl Failure<'_> {
    fn timeout(&self, stderr: String) -> ServerError {
        ServerError::StartupTimeout {
            server: self.config.name.clone(),
            timeout: self.config.startup_timeout,
            stray: self.stray.and_then(StrayOutput::describe),
            stderr,
        }
    }

    fn initialize(&self, reason: String, stderr: String) -> ServerError {
        ServerError::Initialize {
            server: self.config.name.clone(),
            reason,
            stray: self.stray.and_then(StrayOutput::describe),
            stderr,
        }
    }
}

/// The process's exit, if it ended by itself (waited for briefly: the
/// closed pipe is usually seen first).
async fn exited_on_its_own(process: Option<&ServerProcess>) -> Option<Exit> {
    let mut exit = process?.exit_watch();
    let waited =
        tokio::time::timeout(std::time::Duration::from_millis(500), exit.wait_for(Option::is_some)).await;
    match waited {
        Ok(Ok(status)) => *status,
        _ => None,
    }
}

/// Kills and reaps the process group; returns its stderr tail.
async fn stop(process: Option<&mut ServerProcess>) -> String {
    let Some(process) = process else { return String::new() };
    let exit = process.kill().await;
    tracing::debug!(%exit, "mcp: a server that failed to start was stopped");
    process.stderr().text()
}

fn describe(error: &ClientInitializeError, exit: Option<Exit>) -> String {
    match (error, exit) {
        (ClientInitializeError::ConnectionClosed(_), Some(exit)) => {
            format!("it exited ({exit}) before answering `initialize`")
        }
        (ClientInitializeError::ConnectionClosed(_), None) => {
            "the connection closed before `initialize` was answered".to_owned()
        }
        (ClientInitializeError::JsonRpcError(error), _) => {
            format!(
                "it answered `initialize` with an error: {} (JSON-RPC error {})",
                error.message, error.code.0
            )
        }
        (other, _) => other.to_string(),
    }
}
