//! What a server is: how to reach it (a child process speaking on stdio, or
//! a Streamable HTTP URL), its timeouts, which of its tools to offer and how
//! far to trust what they say about themselves. Plain data: the CLI parses
//! its configuration files into these; nothing here reads a file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::auth::OAuthConfig;
pub use crate::secret::Secret;

/// How bosun reaches a server.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Transport {
    /// A child process: JSON-RPC lines on its stdin and stdout.
    Stdio(StdioTransport),
    /// A Streamable HTTP endpoint.
    Http(HttpTransport),
}

impl From<StdioTransport> for Transport {
    fn from(stdio: StdioTransport) -> Self {
        Self::Stdio(stdio)
    }
}

impl From<HttpTransport> for Transport {
    fn from(http: HttpTransport) -> Self {
        Self::Http(http)
    }
}

/// A server run as a child process.
///
/// Its environment starts empty: `PATH`, `HOME`, `LANG` and `LC_*` come from
/// bosun's own, then the variables named in [`env_vars`](Self::env_vars),
/// then [`env`](Self::env). Nothing else reaches it.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioTransport {
    /// The program: a name looked up on the child's `PATH`, or a path.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it (values are redacted in `Debug`).
    pub env: BTreeMap<String, String>,
    /// Names of bosun's own variables passed through when set.
    pub env_vars: Vec<String>,
    /// Its working directory; relative to the workspace root. Default: the
    /// workspace root.
    pub cwd: Option<PathBuf>,
}

impl StdioTransport {
    /// Runs `command` with no arguments.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            env_vars: Vec::new(),
            cwd: None,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable for the server.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Passes bosun's own variable `name` through, when it is set.
    pub fn env_var(mut self, name: impl Into<String>) -> Self {
        self.env_vars.push(name.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

// Environment values are often tokens; only their names are shown.
impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &RedactedValues(&self.env))
            .field("env_vars", &self.env_vars)
            .field("cwd", &self.cwd)
            .finish()
    }
}

struct RedactedValues<'a, V>(&'a BTreeMap<String, V>);

impl<V> fmt::Debug for RedactedValues<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|k| (k, "<redacted>"))).finish()
    }
}

/// A server reached over Streamable HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpTransport {
    /// The endpoint, `http://` or `https://`, e.g. `https://example.com/mcp`.
    pub url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub bearer_token: Option<Secret>,
    /// Sent with every request; values are treated as secrets.
    pub headers: BTreeMap<String, Secret>,
    /// OAuth, when the server asks for it: stored tokens are sent and
    /// refreshed, and a `401` or `403` is answered by authorizing (see
    /// [`OAuthConfig`]). Not used when a [`bearer_token`](Self::bearer_token)
    /// is set.
    pub oauth: Option<OAuthConfig>,
}

impl HttpTransport {
    /// The endpoint at `url`, with no credentials.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), bearer_token: None, headers: BTreeMap::new(), oauth: None }
    }

    /// Authorizes with OAuth as `oauth` says.
    pub fn with_oauth(mut self, oauth: OAuthConfig) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Sends `token` as a bearer token.
    pub fn bearer_token(mut self, token: impl Into<Secret>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Sends a header with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<Secret>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }
}

/// One server: its name, how to reach it and how to treat its tools.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Unique among the servers; part of every tool name (`mcp__NAME__TOOL`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Longest wait from spawn or connect to a listed set of tools.
    pub startup_timeout: Duration,
    /// Longest wait for one tool call.
    pub tool_timeout: Duration,
    /// At shutdown, how long a stdio server gets after its stdin closes, and
    /// again after `SIGTERM`, before its process group is killed.
    pub shutdown_grace: Duration,
    /// Only these tools (by their MCP names) are offered, when set.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools (by their MCP names) are never offered.
    pub disabled_tools: Vec<String>,
    /// Believe the server's `readOnlyHint`: such tools count as reads, which
    /// every mode allows. Off by default: a server may say anything.
    pub trust_annotations: bool,
    /// Offer tools the server adds after start-up (`tools/list_changed`).
    /// Off by default: the set the session was built with stays the set.
    pub allow_new_tools: bool,
    /// Advertise sampling to the server and hand its `sampling/createMessage`
    /// requests to the [`Sampler`](crate::Sampler). Off by default: a
    /// server's prompt would spend the user's tokens.
    pub sampling: bool,
    /// How a stdio server runs in the session's OS sandbox. Only the user's
    /// own configuration should loosen it.
    pub sandbox: ServerSandbox,
}

/// How one stdio server runs in the session's OS sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSandbox {
    /// The session's policy (network off unless it says otherwise).
    #[default]
    Policy,
    /// The session's policy with the network on (a server that calls an
    /// API).
    Network,
    /// Outside the sandbox.
    Off,
}

impl ServerConfig {
    /// The default [`startup_timeout`](Self::startup_timeout).
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default [`tool_timeout`](Self::tool_timeout).
    pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default [`shutdown_grace`](Self::shutdown_grace).
    pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

    /// A server with the default timeouts, all its tools offered, none trusted.
    pub fn new(name: impl Into<String>, transport: impl Into<Transport>) -> Self {
        Self {
            name: name.into(),
            transport: transport.into(),
            startup_timeout: Self::DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: Self::DEFAULT_TOOL_TIMEOUT,
            shutdown_grace: Self::DEFAULT_SHUTDOWN_GRACE,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            trust_annotations: false,
            allow_new_tools: false,
            sampling: false,
            sandbox: ServerSandbox::Policy,
        }
    }

    /// Sets the start-up timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Sets the per-call timeout.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Sets the shutdown grace.
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Offers only these tools.
    pub fn with_enabled_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.enabled_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Never offers these tools.
    pub fn with_disabled_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.disabled_tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Sets [`trust_annotations`](Self::trust_annotations).
    pub fn with_trust_annotations(mut self, trust: bool) -> Self {
        self.trust_annotations = trust;
        self
    }

    /// Sets [`allow_new_tools`](Self::allow_new_tools).
    pub fn with_allow_new_tools(mut self, allow: bool) -> Self {
        self.allow_new_tools = allow;
        self
    }

    /// Sets [`sampling`](Self::sampling).
    pub fn with_sampling(mut self, sampling: bool) -> Self {
        self.sampling = sampling;
        self
    }

    /// Whether the filters let the MCP tool `tool` through.
    pub fn offers(&self, tool: &str) -> bool {
        let enabled = self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|t| t == tool));
        enabled && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets_or_env_values() {
        let stdio = StdioTransport::new("srv").env("API_TOKEN", "s3cret-env");
        let http = HttpTransport::new("https://example.com/mcp")
            .bearer_token("s3cret-token")
            .header("X-Key", "s3cret-header");
        let text =
            format!("{:?} {:?}", ServerConfig::new("a", stdio.clone()), ServerConfig::new("b", http.clone()));
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("API_TOKEN") && text.contains("X-Key"), "names stay visible: {text}");
        assert_eq!(http.bearer_token.as_ref().map(Secret::expose), Some("s3cret-token"));
        assert_eq!(stdio.env["API_TOKEN"], "s3cret-env");
    }

    #[test]
    fn filters_enable_then_disable() {
        let all = ServerConfig::new("s", StdioTransport::new("x"));
        assert!(all.offers("anything"));
        let some = all.clone().with_enabled_tools(["a", "b"]).with_disabled_tools(["b"]);
        assert!(some.offers("a"));
        assert!(!some.offers("b"), "disabled wins over enabled");
        assert!(!some.offers("c"));
    }
}
