//! OAuth login and logout for a configured Streamable HTTP MCP server
//! (`bosun mcp login NAME`, `bosun mcp logout NAME`). [`login`] connects to
//! the server with a [`Loopback`] authorizer: the front end is handed the
//! authorization URL to show and open (the CLI prints it and runs
//! `xdg-open`), and the redirect is taken on a loopback port of 127.0.0.1,
//! accepting only the `state` that was sent. bosun-mcp does the rest
//! (discovery, registration, PKCE, the exchange) and keeps the tokens in
//! `<data dir>/mcp-auth/NAME.json` (mode 0600), which later sessions use and
//! refresh. [`logout`] removes that file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bosun_mcp::{
    Authorization, AuthorizationResponse, AuthorizeFuture, Authorizer, McpServers, ParentEnv, StartOptions,
    Transport,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::config::mcp::check_name;
use crate::config::{self, Env};
use crate::error::{Context, Result, bail};

/// How long a login waits for the person to finish in the browser.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// Longest request head read from the browser.
const MAX_REQUEST: usize = 16 * 1024;
/// The redirect's path on the loopback listener.
const CALLBACK: &str = "/callback";

/// Shows the person an authorization to complete: its
/// [`Authorization::url`] is the authorization server's, to be shown
/// sanitised and opened, never obeyed otherwise.
pub type ShowAuthorization = Arc<dyn Fn(&Authorization) + Send + Sync>;

/// What [`login`] or [`logout`] did to a server's tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tokens {
    /// The server's name.
    pub server: String,
    /// Where its tokens are kept.
    pub file: PathBuf,
    /// What changed.
    pub change: Change,
}

/// What a login or logout changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The server asked for an authorization, which the person gave.
    LoggedIn,
    /// The server asked for none (its stored tokens still work, or it
    /// needs none): nothing changed.
    Unchanged,
    /// The stored tokens were removed.
    LoggedOut,
    /// There were no stored tokens to remove.
    NoneKept,
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, file) = (&self.server, self.file.display());
        match self.change {
            Change::LoggedIn => write!(f, "logged in to MCP server `{name}`; its tokens are kept in {file}"),
            Change::Unchanged => write!(
                f,
                "MCP server `{name}` did not ask for authorization (or the tokens in {file} still work); nothing changed"
            ),
            Change::LoggedOut => write!(f, "logged out of MCP server `{name}`: removed {file}"),
            Change::NoneKept => {
                write!(f, "no tokens are kept for MCP server `{name}` ({file} does not exist)")
            }
        }
    }
}

/// Logs in to configured server `name` (configuration read for the working
/// directory `dir` and `profile`, as [`config::resolve`] does): connects to
/// it with a [`Loopback`] authorizer, which hands each authorization to
/// `show`, and shuts it down again. An error when `name` is not a server
/// reached by URL without a bearer token, or the login failed.
pub async fn login(
    dir: Option<&Path>,
    profile: Option<&str>,
    name: &str,
    env: &Env,
    show: ShowAuthorization,
) -> Result<Tokens> {
    check_name(name)?;
    let root = config::workdir(dir)?;
    let settings = config::resolve(&root, env, profile, &Default::default())?;
    let Some(server) = settings.mcp_servers.get(name) else {
        bail!("no MCP server `{name}` is configured (see `bosun mcp list`)");
    };
    if server.entry.url.is_none() {
        bail!("MCP server `{name}` runs as a program; OAuth is for servers reached by URL");
    }
    if let Some(var) = &server.entry.bearer_token_env_var {
        bail!("MCP server `{name}` is given a bearer token from {var}; OAuth is not used with one");
    }
    let tokens = config::mcp::token_file(env, name)
        .context("cannot tell where to keep the tokens: set BOSUN_HOME or HOME")?;
    let loopback = Arc::new(Loopback::bind(show).await?);
    // Longer than the browser's wait, so that a slow person is told that.
    let mut config = config::mcp::server_config(name, &server.entry, env)?
        .with_startup_timeout(LOGIN_WAIT + Duration::from_secs(30));
    match &mut config.transport {
        Transport::Http(http) => {
            let oauth = config::mcp::oauth_config(name, &server.entry, env)?
                .with_authorizer(Arc::clone(&loopback) as _);
            http.oauth = Some(oauth);
        }
        _ => bail!("MCP server `{name}` is not reached by URL"),
    }
    let options = StartOptions::new(&root, ParentEnv::from_vars(env.vars()));
    let started = McpServers::start(vec![config], options).await;
    let failure = started.failures.into_iter().next();
    started.servers.shutdown().await;
    if let Some(failure) = failure {
        return Err(failure).context(format!("logging in to `{name}` failed"));
    }
    let change = if loopback.used() { Change::LoggedIn } else { Change::Unchanged };
    Ok(Tokens { server: name.to_owned(), file: tokens, change })
}

/// Removes the tokens kept for server `name` (configured or not any more).
pub fn logout(name: &str, env: &Env) -> Result<Tokens> {
    check_name(name)?;
    let tokens = config::mcp::token_file(env, name)
        .context("cannot tell where the tokens are kept: set BOSUN_HOME or HOME")?;
    let removed = bosun_mcp::remove_token_file(&tokens)
        .with_context(|| format!("cannot remove {}", tokens.display()))?;
    let change = if removed { Change::LoggedOut } else { Change::NoneKept };
    Ok(Tokens { server: name.to_owned(), file: tokens, change })
}

/// The person's browser, for an [`Authorizer`]: each authorization is handed
/// to the front end to show and open, and the redirect is taken on a
/// loopback port of 127.0.0.1, only with the `state` sent.
pub struct Loopback {
    listener: TcpListener,
    redirect_uri: String,
    show: ShowAuthorization,
    used: AtomicBool,
}

impl fmt::Debug for Loopback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loopback").field("redirect_uri", &self.redirect_uri).finish_non_exhaustive()
    }
}

impl Loopback {
    /// Listens on a free port of 127.0.0.1; `show` is handed each authorization.
    pub async fn bind(show: ShowAuthorization) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("cannot listen on 127.0.0.1")?;
        let port = listener.local_addr().context("cannot read the listening port")?.port();
        let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK}");
        Ok(Self { listener, redirect_uri, show, used: AtomicBool::new(false) })
    }

    /// Whether an authorization was asked for.
    pub fn used(&self) -> bool {
        self.used.load(Ordering::SeqCst)
    }

    /// Takes requests until one carries `state`; others get a 400 and are
    /// otherwise ignored (a page or another program guessing at the port).
    async fn redirect(&self, state: &str) -> Result<AuthorizationResponse, String> {
        loop {
            let (stream, _) =
                self.listener.accept().await.map_err(|e| format!("the loopback listener failed: {e}"))?;
            if let Some(response) = answer(stream, state).await {
                return response;
            }
        }
    }
}

impl Authorizer for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, authorization: Authorization) -> AuthorizeFuture<'_> {
        Box::pin(async move {
            self.used.store(true, Ordering::SeqCst);
            (self.show)(&authorization);
            match tokio::time::timeout(LOGIN_WAIT, self.redirect(&authorization.state)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer from the browser within {} s", LOGIN_WAIT.as_secs())),
            }
        })
    }
}

/// Answers one request on the listener: the redirect when it carries
/// `state`, else `None` (and a 400 or 404 to the asker).
async fn answer(mut stream: TcpStream, state: &str) -> Option<Result<AuthorizationResponse, String>> {
    let target = match read_target(&mut stream).await {
        Some(target) => target,
        None => {
            reply(&mut stream, "400 Bad Request", "not a request bosun expects").await;
            return None;
        }
    };
    let url = match reqwest::Url::parse("http://127.0.0.1").and_then(|base| base.join(&target)) {
        Ok(url) if url.path() == CALLBACK => url,
        _ => {
            reply(&mut stream, "404 Not Found", "not found").await;
            return None;
        }
    };
    let carried = url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned());
    if carried.as_deref() != Some(state) {
        reply(&mut stream, "400 Bad Request", "this is not the authorization bosun is waiting for").await;
        return None;
    }
    let response = AuthorizationResponse::from_redirect_url(url.as_str());
    let page = match &response {
        Ok(_) => "bosun is authorized; you can close this page",
        Err(_) => "the authorization was refused; see the terminal",
    };
    reply(&mut stream, "200 OK", page).await;
    Some(response)
}

/// The request target of a `GET`, read from the request head.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let read =
            tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await.ok()?.ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut words = line.split(' ');
    let (method, target) = (words.next()?, words.next()?);
    (method == "GET" && target.starts_with('/')).then(|| target.to_owned())
}

async fn reply(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>bosun</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Env {
        Env::from_pairs(&[("BOSUN_HOME", home.to_str().unwrap())])
    }

    #[test]
    fn tokens_live_in_the_data_directory_one_file_per_server() {
        let file = config::mcp::token_file(&Env::from_pairs(&[("BOSUN_HOME", "/b")]), "github").unwrap();
        assert_eq!(file, PathBuf::from("/b/mcp-auth/github.json"));
        let file = config::mcp::token_file(&Env::from_pairs(&[("HOME", "/h")]), "x").unwrap();
        assert_eq!(file, PathBuf::from("/h/.local/share/bosun/mcp-auth/x.json"));
        assert!(config::mcp::token_file(&Env::from_pairs(&[]), "x").is_none());
    }

    #[test]
    fn logout_removes_the_servers_tokens_and_only_them() {
        let home = tempfile::tempdir().unwrap();
        let env = env(home.path());
        let dir = home.path().join("mcp-auth");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("remote.json"), "{}").unwrap();
        std::fs::write(dir.join("remote.lock"), "").unwrap();
        std::fs::write(dir.join("other.json"), "{}").unwrap();
        let said = logout("remote", &env).unwrap().to_string();
        assert!(said.contains("logged out") && said.contains("remote.json"), "{said}");
        assert!(!dir.join("remote.json").exists() && !dir.join("remote.lock").exists());
        assert!(dir.join("other.json").exists(), "another server's tokens stay");
        let again = logout("remote", &env).unwrap();
        assert!(
            again.change == Change::NoneKept && again.to_string().contains("no tokens are kept"),
            "{again}"
        );
        assert!(logout("../other", &env).is_err(), "a name is checked before it makes a path");
        assert!(dir.join("other.json").exists());
    }

    #[test]
    fn logout_removes_a_symlink_without_touching_its_target() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("mcp-auth");
        std::fs::create_dir_all(&dir).unwrap();
        let target = home.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("remote.json")).unwrap();
        logout("remote", &env(home.path())).unwrap();
        assert!(std::fs::symlink_metadata(dir.join("remote.json")).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[tokio::test]
    async fn only_a_server_reached_by_url_without_a_bearer_token_logs_in() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("bosun/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            "[mcp_servers.prog]\ncommand = \"srv\"\n\
             [mcp_servers.bearer]\nurl = \"https://mcp.example\"\nbearer_token_env_var = \"TOKEN\"\n",
        )
        .unwrap();
        let home_dir = home.path().to_str().unwrap();
        let env = Env::from_pairs(&[("BOSUN_HOME", home_dir), ("XDG_CONFIG_HOME", home_dir)]);
        let said = |name: &'static str| {
            let (env, dir) = (env.clone(), home.path().to_owned());
            async move {
                let shown = Arc::new(|_: &Authorization| {});
                let error = login(Some(&dir), None, name, &env, shown).await.unwrap_err();
                format!("{error:#}")
            }
        };
        assert_eq!(said("nope").await, "no MCP server `nope` is configured (see `bosun mcp list`)");
        assert_eq!(
            said("prog").await,
            "MCP server `prog` runs as a program; OAuth is for servers reached by URL"
        );
        assert_eq!(
            said("bearer").await,
            "MCP server `bearer` is given a bearer token from TOKEN; OAuth is not used with one"
        );
    }

    #[test]
    fn what_a_login_did_is_said() {
        let login = Tokens { server: "gh".into(), file: "/d/gh.json".into(), change: Change::LoggedIn };
        assert_eq!(login.to_string(), "logged in to MCP server `gh`; its tokens are kept in /d/gh.json");
        let unchanged = Tokens { change: Change::Unchanged, ..login };
        assert!(unchanged.to_string().ends_with("(or the tokens in /d/gh.json still work); nothing changed"));
    }

    #[tokio::test]
    async fn the_browser_redirect_is_taken_only_with_the_state_sent() {
        let loopback = Loopback::bind(Arc::new(|_: &Authorization| {})).await.unwrap();
        assert!(!loopback.used());
        let port = reqwest::Url::parse(&loopback.redirect_uri()).unwrap().port().unwrap();
        let waiting = tokio::spawn(async move { loopback.redirect("s1").await });
        let get = |target: &'static str| async move {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer
        };
        assert!(get("/callback?code=evil&state=other").await.starts_with("HTTP/1.1 400"));
        assert!(get("/favicon.ico").await.starts_with("HTTP/1.1 404"));
        assert!(get("/callback?code=c1&state=s1").await.starts_with("HTTP/1.1 200"));
        let response = waiting.await.unwrap().unwrap();
        assert_eq!((response.code.expose(), response.state.as_str()), ("c1", "s1"));
    }
}
