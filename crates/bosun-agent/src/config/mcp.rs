//! MCP servers as configured: `[mcp_servers.NAME]` tables in the TOML
//! layers (the form Codex uses), and the project's `.mcp.json` (the form
//! Claude Code and others use), read only when the project is trusted.
//!
//! A server is a program bosun starts or a URL it connects to, so a project
//! that names one is asking to run code: an untrusted project's servers are
//! ignored and named, like its other widening keys (docs/trust.md).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Context, Result, bail};
use bosun_mcp::{HttpTransport, OAuthConfig, Secret, ServerConfig, StdioTransport, Transport};
use serde::Deserialize;

use super::{Env, Source};

/// The project file other agents read their servers from.
pub const MCP_JSON: &str = ".mcp.json";
/// Largest `.mcp.json` read.
pub const MAX_MCP_JSON_BYTES: u64 = 256 * 1024;

/// One `[mcp_servers.NAME]` table.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct McpServerEntry {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for it; the rest of its environment is cleared but for
    /// PATH, HOME and the locale.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables passed through from bosun's own environment (for tokens,
    /// which config files may not hold).
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// Its working directory (default: the workspace root).
    pub cwd: Option<PathBuf>,
    /// The server's Streamable HTTP endpoint.
    pub url: Option<String>,
    /// The variable holding a bearer token for `url`.
    pub bearer_token_env_var: Option<String>,
    /// Headers sent to `url`.
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// Headers sent to `url` whose values are read from variables:
    /// `{ "X-Api-Key" = "MY_KEY_VAR" }`.
    #[serde(default)]
    pub env_http_headers: BTreeMap<String, String>,
    /// How long start-up may take (default 10 000).
    pub startup_timeout_ms: Option<u64>,
    /// How long one call may take (default 60 000).
    pub tool_timeout_ms: Option<u64>,
    /// Whether the server is used (default true).
    pub enabled: Option<bool>,
    /// Only these of its tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These of its tools are not offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// Whether its `readOnlyHint` annotations are believed (default false).
    pub trust_annotations: Option<bool>,
    /// Whether tools it adds mid-session are offered (default false).
    pub allow_new_tools: Option<bool>,
    /// Whether it may ask bosun's model for completions (sampling), each
    /// approved like an external tool call (default false: not advertised).
    pub sampling: Option<bool>,
    /// OAuth: a client registered with the server's authorization server
    /// beforehand (else bosun registers itself).
    pub oauth_client_id: Option<String>,
    /// OAuth: the variable holding that client's secret.
    pub oauth_client_secret_env_var: Option<String>,
    /// OAuth: an `https://` URL where bosun's client metadata document is
    /// published, offered as the client id where the server takes one.
    pub oauth_client_metadata_url: Option<String>,
    /// A stdio server's OS sandbox, loosened: `"network"` (the sandbox with
    /// the network on, for a server that calls an API) or `"off"`. Read from
    /// the user's own config only (default: the session's sandbox).
    pub sandbox: Option<McpSandbox>,
}

/// How a stdio server's sandbox is loosened (`sandbox = "network" | "off"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpSandbox {
    /// The session's sandbox with the network on.
    Network,
    /// No sandbox.
    Off,
}

// Values of `env` and headers may be credentials: only their names show.
impl fmt::Debug for McpServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerEntry")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("env_vars", &self.env_vars)
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("bearer_token_env_var", &self.bearer_token_env_var)
            .field("http_headers", &self.http_headers.keys().collect::<Vec<_>>())
            .field("env_http_headers", &self.env_http_headers)
            .field("enabled", &self.enabled)
            .field("oauth_client_id", &self.oauth_client_id)
            .field("oauth_client_secret_env_var", &self.oauth_client_secret_env_var)
            .finish_non_exhaustive()
    }
}

impl McpServerEntry {
    /// Whether the server is used.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// `stdio: CMD ARGS` or `http: URL`, for `bosun mcp list`.
    pub fn summary(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut words = vec![command.clone()];
                words.extend(self.args.iter().cloned());
                format!("stdio: {}", words.join(" "))
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => "(no command or url)".to_owned(),
        }
    }

    /// Checks what TOML cannot: one transport, sane numbers.
    pub fn check(&self, name: &str) -> Result<()> {
        check_name(name)?;
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => bail!("mcp_servers.{name}: set `command` or `url`, not both"),
            (None, None) => bail!("mcp_servers.{name}: set `command` (a program to start) or `url`"),
            (Some(command), None) if command.trim().is_empty() => {
                bail!("mcp_servers.{name}: `command` is empty")
            }
            (None, Some(url)) => {
                crate::config::url::http_url(&format!("mcp_servers.{name}.url"), url)?;
            }
            _ => {}
        }
        let oauth = self.oauth_client_id.is_some()
            || self.oauth_client_secret_env_var.is_some()
            || self.oauth_client_metadata_url.is_some();
        let http_only = !self.http_headers.is_empty()
            || !self.env_http_headers.is_empty()
            || self.bearer_token_env_var.is_some()
            || oauth;
        if self.url.is_none() && http_only {
            bail!("mcp_servers.{name}: headers, bearer tokens and OAuth settings need `url`");
        }
        if self.oauth_client_secret_env_var.is_some() && self.oauth_client_id.is_none() {
            bail!("mcp_servers.{name}: `oauth_client_secret_env_var` needs `oauth_client_id`");
        }
        if let Some(url) = &self.oauth_client_metadata_url
            && !url.starts_with("https://")
        {
            bail!("mcp_servers.{name}.oauth_client_metadata_url must be an https:// URL");
        }
        if self.command.is_none() && (!self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some()) {
            bail!("mcp_servers.{name}: `args`, `env` and `cwd` need `command`");
        }
        for (key, value) in
            [("startup_timeout_ms", self.startup_timeout_ms), ("tool_timeout_ms", self.tool_timeout_ms)]
        {
            if value == Some(0) {
                bail!("mcp_servers.{name}.{key} = 0: use at least 1");
            }
        }
        Ok(())
    }
}

/// Server names become part of tool names (`mcp__NAME__TOOL`), so they are
/// held to what every provider accepts there.
pub fn check_name(name: &str) -> Result<()> {
    let fine = !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__");
    if !fine {
        bail!(
            "MCP server name `{}` must be 1 to 32 letters, digits, `-` or `_` (no `__`)",
            bosun_core::sanitize::line(name)
        );
    }
    Ok(())
}

/// A configured server and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// Its settings.
    pub entry: McpServerEntry,
    /// The file (or `.mcp.json`) it came from.
    pub source: Source,
}

/// The servers of a `.mcp.json` by name, and notices about what was not read.
pub type McpJson = (Vec<(String, McpServerEntry)>, Vec<String>);

/// `.mcp.json`: `{"mcpServers": {NAME: {command, args, env} | {type: "http",
/// url, headers}}}`, with `${VAR}` and `${VAR:-default}` expanded from `env`
/// in every string, as the agents that write these files do. Keys bosun
/// does not know are named in the returned notices, never guessed at.
pub fn parse_mcp_json(text: &str, env: &Env) -> Result<McpJson> {
    let root: serde_json::Value =
        serde_json::from_str(text).map_err(|e| crate::error::invalid!("not valid JSON: {e}"))?;
    let Some(servers) = root.get("mcpServers") else {
        bail!("no `mcpServers` object");
    };
    let Some(servers) = servers.as_object() else {
        bail!("`mcpServers` is not an object");
    };
    let mut out = Vec::new();
    let mut notices = Vec::new();
    for (name, spec) in servers {
        check_name(name)?;
        let Some(spec) = spec.as_object() else {
            bail!("mcpServers.{name} is not an object");
        };
        let text = |key: &str| -> Result<Option<String>> {
            match spec.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(
                    expand(s, env).map_err(|e| crate::error::invalid!("mcpServers.{name}.{key}: {e}"))?,
                )),
                Some(_) => bail!("mcpServers.{name}.{key} is not a string"),
            }
        };
        let map = |key: &str| -> Result<BTreeMap<String, String>> {
            let mut out = BTreeMap::new();
            match spec.get(key) {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::Object(values)) => {
                    for (k, v) in values {
                        let Some(v) = v.as_str() else {
                            bail!("mcpServers.{name}.{key}.{k} is not a string")
                        };
                        let v = expand(v, env)
                            .map_err(|e| crate::error::invalid!("mcpServers.{name}.{key}.{k}: {e}"))?;
                        out.insert(k.clone(), v);
                    }
                }
                Some(_) => bail!("mcpServers.{name}.{key} is not an object"),
            }
            Ok(out)
        };
        let kind = text("type")?;
        let mut entry = McpServerEntry::default();
        match kind.as_deref() {
            None | Some("stdio") => {
                entry.command = text("command")?;
                entry.args = match spec.get("args") {
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(serde_json::Value::Array(items)) => items
                        .iter()
                        .map(|item| match item.as_str() {
                            Some(s) => expand(s, env)
                                .map_err(|e| crate::error::invalid!("mcpServers.{name}.args: {e}")),
                            None => bail!("mcpServers.{name}.args holds a value that is not a string"),
                        })
                        .collect::<Result<_>>()?,
                    Some(_) => bail!("mcpServers.{name}.args is not an array"),
                };
                entry.env = map("env")?;
                entry.cwd = text("cwd")?.map(PathBuf::from);
            }
            Some("http" | "streamable-http" | "streamableHttp") => {
                entry.url = text("url")?;
                entry.http_headers = map("headers")?;
            }
            Some(other) => {
                notices.push(format!(
                    "{MCP_JSON}: server `{name}` has type `{}`, which bosun does not speak (stdio, http); skipped",
                    bosun_core::sanitize::line(other)
                ));
                continue;
            }
        }
        let known = ["type", "command", "args", "env", "cwd", "url", "headers"];
        for key in spec.keys().filter(|k| !known.contains(&k.as_str())) {
            notices.push(format!(
                "{MCP_JSON}: `mcpServers.{name}.{}` is not read by bosun",
                bosun_core::sanitize::line(key)
            ));
        }
        entry.check(name)?;
        out.push((name.clone(), entry));
    }
    Ok((out, notices))
}

/// `${VAR}` and `${VAR:-default}`; `$` not followed by `{` stays as written.
fn expand(text: &str, env: &Env) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else { bail!("`${{` without a closing `}}`") };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            bail!("`${{{}}}` is not a variable name", bosun_core::sanitize::line(inner));
        }
        match (env.get(name), default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => bail!("`${{{name}}}` is not set"),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Where server `name`'s tokens are kept: `mcp-auth/NAME.json` in the data
/// directory (the session database's, `$BOSUN_HOME` or the XDG data dir).
pub fn token_file(env: &Env, name: &str) -> Option<PathBuf> {
    let database = bosun_store::default_path(|var| env.get(var).map(str::to_owned))?;
    Some(database.parent()?.join("mcp-auth").join(format!("{name}.json")))
}

/// OAuth for configured server `name`: its token file, and the client its
/// config names, if any. Nobody is asked to authorize (that is login's).
pub fn oauth_config(name: &str, entry: &McpServerEntry, env: &Env) -> Result<OAuthConfig> {
    let mut oauth = OAuthConfig::new();
    if let Some(path) = token_file(env, name) {
        oauth = oauth.with_token_file(path);
    }
    if let Some(client_id) = &entry.oauth_client_id {
        let secret = match &entry.oauth_client_secret_env_var {
            Some(var) => Some(Secret::new(
                env.get(var).with_context(|| format!("the variable {var} is not set"))?.to_owned(),
            )),
            None => None,
        };
        oauth = oauth.with_client(client_id.clone(), secret);
    }
    if let Some(url) = &entry.oauth_client_metadata_url {
        oauth = oauth.with_client_metadata_url(url.clone());
    }
    Ok(oauth)
}

/// The library's configuration of server `name` from its entry: transport,
/// secrets read from the variables the entry names, stored OAuth tokens.
pub fn server_config(name: &str, entry: &McpServerEntry, env: &Env) -> Result<ServerConfig> {
    let transport: Transport = match (&entry.command, &entry.url) {
        (Some(command), _) => {
            let mut stdio = StdioTransport::new(command.clone()).args(entry.args.iter().cloned());
            for (key, value) in &entry.env {
                stdio = stdio.env(key.clone(), value.clone());
            }
            for var in &entry.env_vars {
                stdio = stdio.env_var(var.clone());
            }
            if let Some(cwd) = &entry.cwd {
                stdio = stdio.cwd(cwd.clone());
            }
            stdio.into()
        }
        (None, Some(url)) => {
            let mut http = HttpTransport::new(url.clone());
            let read = |var: &str| {
                env.get(var).map(str::to_owned).with_context(|| format!("the variable {var} is not set"))
            };
            if let Some(var) = &entry.bearer_token_env_var {
                http = http.bearer_token(Secret::new(read(var)?));
            }
            for (header, value) in &entry.http_headers {
                http = http.header(header.clone(), Secret::new(value.clone()));
            }
            for (header, var) in &entry.env_http_headers {
                http = http.header(header.clone(), Secret::new(read(var)?));
            }
            // Stored tokens (`bosun mcp login`) are used where no bearer token is given.
            if entry.bearer_token_env_var.is_none() {
                http = http.with_oauth(oauth_config(name, entry, env)?);
            }
            http.into()
        }
        (None, None) => bail!("it has no `command` or `url`"),
    };
    let mut config = ServerConfig::new(name, transport)
        .with_disabled_tools(entry.disabled_tools.iter().cloned())
        .with_trust_annotations(entry.trust_annotations.unwrap_or(false))
        .with_allow_new_tools(entry.allow_new_tools.unwrap_or(false))
        .with_sampling(entry.sampling.unwrap_or(false));
    if let Some(ms) = entry.startup_timeout_ms {
        config = config.with_startup_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = entry.tool_timeout_ms {
        config = config.with_tool_timeout(Duration::from_millis(ms));
    }
    if let Some(tools) = &entry.enabled_tools {
        config = config.with_enabled_tools(tools.iter().cloned());
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_pairs(&[("TOKEN", "t0k"), ("HOME", "/home/u")])
    }

    #[test]
    fn mcp_json_in_the_form_other_agents_write_is_read_with_variables_expanded() {
        let text = r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "${HOME}/src"], "env": {"K": "${TOKEN}"}},
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "fallback": {"command": "srv", "args": ["${MISSING:-dflt}"], "alwaysAllow": ["x"]},
            "old": {"type": "sse", "url": "https://x.example/sse"}
        }}"#;
        let (servers, notices) = parse_mcp_json(text, &env()).unwrap();
        let by_name: BTreeMap<_, _> = servers.into_iter().collect();
        assert_eq!(by_name["files"].args, ["-y", "server-filesystem", "/home/u/src"]);
        assert_eq!(by_name["files"].env["K"], "t0k");
        assert_eq!(by_name["remote"].url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(by_name["remote"].http_headers["Authorization"], "Bearer t0k");
        assert_eq!(by_name["fallback"].args, ["dflt"]);
        assert!(!by_name.contains_key("old"));
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(notices.iter().any(|n| n.contains("`sse`")), "{notices:?}");
        assert!(notices.iter().any(|n| n.contains("alwaysAllow")), "{notices:?}");
    }

    #[test]
    fn an_unset_variable_or_a_bad_shape_is_an_error_naming_where() {
        let error = parse_mcp_json(r#"{"mcpServers": {"a": {"command": "${NOPE}"}}}"#, &env()).unwrap_err();
        assert!(
            error.to_string().contains("mcpServers.a.command") && error.to_string().contains("NOPE"),
            "{error}"
        );
        let error =
            parse_mcp_json(r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#, &env()).unwrap_err();
        assert!(error.to_string().contains("args is not an array"), "{error}");
        let error = parse_mcp_json(r#"{"mcpServers": {"a b": {"command": "x"}}}"#, &env()).unwrap_err();
        assert!(error.to_string().contains("must be 1 to 32"), "{error}");
        assert!(parse_mcp_json("[]", &env()).is_err());
        assert!(parse_mcp_json(r#"{"mcpServers": {"a": {}}}"#, &env()).is_err());
    }

    #[test]
    fn an_entry_has_exactly_one_transport() {
        let mut entry = McpServerEntry { command: Some("srv".into()), ..Default::default() };
        entry.check("ok").unwrap();
        entry.url = Some("https://x.example/mcp".into());
        assert!(entry.check("ok").unwrap_err().to_string().contains("not both"));
        entry.command = None;
        entry.check("ok").unwrap();
        entry.args = vec!["a".into()];
        assert!(entry.check("ok").unwrap_err().to_string().contains("need `command`"));
        let bad_url = McpServerEntry { url: Some("file:///etc/passwd".into()), ..Default::default() };
        assert!(bad_url.check("x").is_err());
        let zero =
            McpServerEntry { command: Some("s".into()), tool_timeout_ms: Some(0), ..Default::default() };
        assert!(zero.check("x").unwrap_err().to_string().contains("tool_timeout_ms"));
    }

    #[test]
    fn oauth_settings_need_a_url_and_a_client_id_for_a_secret() {
        let mut entry = McpServerEntry {
            url: Some("https://x.example/mcp".into()),
            oauth_client_id: Some("bosun-client".into()),
            oauth_client_secret_env_var: Some("SECRET".into()),
            ..Default::default()
        };
        entry.check("ok").unwrap();
        entry.oauth_client_id = None;
        assert!(entry.check("ok").unwrap_err().to_string().contains("needs `oauth_client_id`"));
        let stdio = McpServerEntry {
            command: Some("srv".into()),
            oauth_client_id: Some("c".into()),
            ..Default::default()
        };
        assert!(stdio.check("s").unwrap_err().to_string().contains("need `url`"));
        let plain = McpServerEntry {
            url: Some("https://x.example/mcp".into()),
            oauth_client_metadata_url: Some("http://x.example/client.json".into()),
            ..Default::default()
        };
        assert!(plain.check("p").unwrap_err().to_string().contains("https://"));
    }

    #[test]
    fn debug_shows_names_of_env_and_headers_never_their_values() {
        let entry = McpServerEntry {
            url: Some("https://x.example/mcp".into()),
            http_headers: [("X-Key".to_owned(), "hunter2".to_owned())].into(),
            ..Default::default()
        };
        let shown = format!("{entry:?}");
        assert!(shown.contains("X-Key") && !shown.contains("hunter2"), "{shown}");
    }
}
