//! `bosun mcp login NAME` and `bosun mcp logout NAME`: OAuth for a
//! Streamable HTTP server. Login connects to the server with an
//! [`Authorizer`] that opens the authorization URL in the browser (with
//! `xdg-open` where there is one, the URL is printed either way) and takes
//! the redirect on a loopback port of 127.0.0.1, accepting only the `state`
//! it sent. bosun-mcp does the rest (discovery, registration, PKCE, the
//! exchange) and keeps the tokens in `<data dir>/mcp-auth/NAME.json`
//! (mode 0600), which `exec` and `resume` then use and refresh. Logout
//! removes that file.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bosun_mcp::{
    Authorization, AuthorizationResponse, AuthorizeFuture, Authorizer, McpServers, ParentEnv, StartOptions,
    Transport,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::config::mcp::check_name;
use crate::config::{self, Env};
use crate::sanitize;

/// How long a login waits for the person to finish in the browser.
const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// Longest request head read from the browser.
const MAX_REQUEST: usize = 16 * 1024;
/// The redirect's path on the loopback listener.
const CALLBACK: &str = "/callback";

/// `bosun mcp login NAME`.
pub async fn login(
    dir: Option<&std::path::Path>,
    profile: Option<&str>,
    name: &str,
    env: &Env,
) -> Result<()> {
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
    let file = config::mcp::token_file(env, name)
        .context("cannot tell where to keep the tokens: set BOSUN_HOME or HOME")?;
    let listener = TcpListener::bind("127.0.0.1:0").await.context("cannot listen on 127.0.0.1")?;
    let port = listener.local_addr().context("cannot read the listening port")?.port();
    let browser = Arc::new(Browser {
        listener,
        redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK}"),
        used: AtomicBool::new(false),
    });
    // Longer than the browser's wait, so that a slow person is told that.
    let mut config = config::mcp::server_config(name, &server.entry, env)?
        .with_startup_timeout(LOGIN_WAIT + Duration::from_secs(30));
    match &mut config.transport {
        Transport::Http(http) => {
            let oauth = config::mcp::oauth_config(name, &server.entry, env)?
                .with_authorizer(Arc::clone(&browser) as _);
            http.oauth = Some(oauth);
        }
        _ => bail!("MCP server `{name}` is not reached by URL"),
    }
    let options = StartOptions::new(&root, ParentEnv::from_vars(env.vars()));
    let started = McpServers::start(vec![config], options).await;
    let failure = started.failures.into_iter().next();
    started.servers.shutdown().await;
    if let Some(failure) = failure {
        return Err(anyhow::Error::new(failure).context(format!("logging in to `{name}` failed")));
    }
    if browser.used.load(Ordering::SeqCst) {
        println!("logged in to MCP server `{name}`; its tokens are kept in {}", file.display());
    } else {
        println!(
            "MCP server `{name}` did not ask for authorization (or the tokens in {} still work); nothing changed",
            file.display()
        );
    }
    Ok(())
}

/// `bosun mcp logout NAME`: what it did, for stdout.
pub fn logout(name: &str, env: &Env) -> Result<String> {
    check_name(name)?;
    let file = config::mcp::token_file(env, name)
        .context("cannot tell where the tokens are kept: set BOSUN_HOME or HOME")?;
    let removed =
        bosun_mcp::remove_token_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    Ok(if removed {
        format!("logged out of MCP server `{name}`: removed {}", file.display())
    } else {
        format!("no tokens are kept for MCP server `{name}` ({} does not exist)", file.display())
    })
}

/// The person's browser: the URL opened (or printed), the redirect taken on
/// a loopback port.
struct Browser {
    listener: TcpListener,
    redirect_uri: String,
    used: AtomicBool,
}

impl Authorizer for Browser {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, authorization: Authorization) -> AuthorizeFuture<'_> {
        Box::pin(async move {
            self.used.store(true, Ordering::SeqCst);
            // The URL comes from the authorization server: shown, not obeyed.
            let url = sanitize::line(&authorization.url);
            eprintln!(
                "bosun: to authorize MCP server `{}`, open this URL:\n\n  {url}\n",
                authorization.server
            );
            open_in_browser(&authorization.url);
            match tokio::time::timeout(LOGIN_WAIT, self.redirect(&authorization.state)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer from the browser within {} s", LOGIN_WAIT.as_secs())),
            }
        })
    }
}

impl Browser {
    /// Takes requests until one carries `state`; others get a 400 and are
    /// otherwise ignored (a page or another program guessing at the port).
    async fn redirect(&self, state: &str) -> Result<AuthorizationResponse, String> {
        loop {
            let (stream, _) =
                self.listener.accept().await.map_err(|e| format!("the loopback listener failed: {e}"))?;
            if let Some(response) = self.answer(stream, state).await {
                return response;
            }
        }
    }

    async fn answer(
        &self,
        mut stream: TcpStream,
        state: &str,
    ) -> Option<Result<AuthorizationResponse, String>> {
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

/// `xdg-open URL` when there is one; the URL is printed either way.
fn open_in_browser(url: &str) {
    let spawned = tokio::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reaped in the background; the login does not wait for it.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(_) => eprintln!("bosun: (no xdg-open here: open the URL yourself)"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn env(home: &std::path::Path) -> Env {
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
        let said = logout("remote", &env).unwrap();
        assert!(said.contains("logged out") && said.contains("remote.json"), "{said}");
        assert!(!dir.join("remote.json").exists() && !dir.join("remote.lock").exists());
        assert!(dir.join("other.json").exists(), "another server's tokens stay");
        let said = logout("remote", &env).unwrap();
        assert!(said.contains("no tokens are kept"), "{said}");
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
    async fn the_browser_redirect_is_taken_only_with_the_state_sent() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let browser = Browser {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK}"),
            used: AtomicBool::new(false),
        };
        let waiting = tokio::spawn(async move { browser.redirect("s1").await });
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
