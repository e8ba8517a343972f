//! OAuth tokens kept between runs, against a small protected MCP server and
//! token endpoint written here (the conformance suite, run by
//! `scripts/mcp-conformance` and `bosun-cli/tests/it/mcp_conformance.rs`, covers
//! the authorization flows themselves): an expired stored token is refreshed
//! and the file rewritten; a server that asks for authorization with no
//! usable token and nobody to authorize fails as `Unauthorized`; tokens
//! stored for another URL are never sent; a server that asks for nothing
//! (the everything server over HTTP) works as without OAuth.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};

use bosun_mcp::{HttpTransport, McpServers, OAuthConfig, ParentEnv, ServerConfig, ServerError, StartOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The token the server takes; anything else gets a 401.
const GOOD: &str = "fresh-token";

/// A protected MCP server (`/mcp`) and its token endpoint (`/token`), on
/// 127.0.0.1; what the token endpoint was sent is kept.
struct Protected {
    base: String,
    grants: Arc<Mutex<Vec<String>>>,
}

impl Protected {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let grants = Arc::new(Mutex::new(Vec::new()));
        let (shared, metadata) =
            (Arc::clone(&grants), format!("{base}/.well-known/oauth-protected-resource/mcp"));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared), metadata.clone()));
            }
        });
        Self { base, grants }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }
}

/// One request per connection (`Connection: close`).
async fn serve(mut stream: TcpStream, grants: Arc<Mutex<Vec<String>>>, metadata: String) {
    let mut data = Vec::new();
    let mut buffer = [0u8; 4096];
    let (head, body) = loop {
        let read = stream.read(&mut buffer).await.unwrap_or(0);
        if read == 0 {
            return;
        }
        data.extend_from_slice(&buffer[..read]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&data[..end]).to_string();
        let length = head
            .lines()
            .find_map(|line| {
                line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
            })
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        while data.len() < end + 4 + length {
            let read = stream.read(&mut buffer).await.unwrap_or(0);
            if read == 0 {
                return;
            }
            data.extend_from_slice(&buffer[..read]);
        }
        break (head, String::from_utf8_lossy(&data[end + 4..end + 4 + length]).to_string());
    };
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    let authorized =
        head.lines().any(|line| line.eq_ignore_ascii_case(&format!("authorization: Bearer {GOOD}")));
    let (status, headers, body) = match request_line.split(' ').take(2).collect::<Vec<_>>()[..] {
        ["POST", "/token"] => {
            grants.lock().unwrap().push(body);
            let tokens = json!({"access_token": GOOD, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r2"});
            ("200 OK", String::new(), tokens.to_string())
        }
        ["POST", "/mcp"] if !authorized => (
            "401 Unauthorized",
            format!("WWW-Authenticate: Bearer resource_metadata=\"{metadata}\"\r\n"),
            json!({"error": "invalid_token"}).to_string(),
        ),
        ["POST", "/mcp"] => {
            let message: Value = serde_json::from_str(&body).unwrap_or_default();
            let result = match message["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "protected", "version": "1"}
                }),
                Some("tools/list") => json!({"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]}),
                Some("tools/call") => json!({"content": [{"type": "text", "text": "pong"}]}),
                _ => return reply(&mut stream, "202 Accepted", "", "").await,
            };
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
            ("200 OK", String::new(), answer.to_string())
        }
        _ => ("405 Method Not Allowed", String::new(), String::new()),
    };
    reply(&mut stream, status, &headers, &body).await;
}

async fn reply(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A token file as `bosun mcp login` leaves it, holding `token` (received
/// long ago, so expired) and refresh token `r1`.
fn stored(path: &Path, server: &Protected, url: &str, token: &str) {
    let file = json!({
        "version": 1,
        "server_url": url,
        "registration": {"client_id": "bosun-client"},
        "metadata": {
            "issuer": server.base,
            "authorization_endpoint": format!("{}/authorize", server.base),
            "token_endpoint": format!("{}/token", server.base),
            "code_challenge_methods_supported": ["S256"]
        },
        "credentials": {
            "client_id": "bosun-client",
            "token_response": {"access_token": token, "token_type": "bearer", "expires_in": 60, "refresh_token": "r1"},
            "granted_scopes": [],
            "token_received_at": 1
        }
    });
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

async fn start(url: String, token_file: Option<&Path>) -> bosun_mcp::Started {
    let mut oauth = OAuthConfig::new();
    if let Some(path) = token_file {
        oauth = oauth.with_token_file(path);
    }
    let workspace = tempfile::tempdir().unwrap();
    let config = ServerConfig::new("protected", HttpTransport::new(url).with_oauth(oauth));
    McpServers::start(
        vec![config],
        StartOptions::new(workspace.path(), ParentEnv::from_vars(std::iter::empty::<(&str, &str)>())),
    )
    .await
}

#[tokio::test]
async fn an_expired_stored_token_is_refreshed_and_the_file_rewritten_0600() {
    let server = Protected::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-auth/protected.json");
    stored(&path, &server, &server.url(), "old-token");
    let started = start(server.url(), Some(&path)).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let names: Vec<String> = started.servers.tools().iter().map(|t| t.definition().name.clone()).collect();
    assert_eq!(names, ["mcp__protected__ping"]);
    started.servers.shutdown().await;
    let grants = server.grants.lock().unwrap().clone();
    assert_eq!(grants.len(), 1, "one refresh: {grants:?}");
    assert!(
        grants[0].contains("grant_type=refresh_token") && grants[0].contains("refresh_token=r1"),
        "{grants:?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(GOOD) && text.contains("\"r2\"") && !text.contains("old-token"), "{text}");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn a_server_asking_for_authorization_with_nobody_to_authorize_is_unauthorized() {
    let server = Protected::start().await;
    let dir = tempfile::tempdir().unwrap();
    let started = start(server.url(), Some(&dir.path().join("none.json"))).await;
    match &started.failures[..] {
        [ServerError::Unauthorized { server, reason }] => {
            assert_eq!(server, "protected");
            assert!(reason.contains("no stored token"), "{reason}");
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(!dir.path().join("none.json").exists(), "nothing is written without tokens");
}

#[tokio::test]
async fn tokens_stored_for_another_url_are_never_sent() {
    let server = Protected::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-auth/protected.json");
    // Good for this server, but kept for another URL: the name was reused.
    stored(&path, &server, "https://elsewhere.example/mcp", GOOD);
    let started = start(server.url(), Some(&path)).await;
    assert!(matches!(&started.failures[..], [ServerError::Unauthorized { .. }]), "{:?}", started.failures);
    assert!(server.grants.lock().unwrap().is_empty(), "no refresh either");
}

#[tokio::test]
async fn a_server_that_asks_for_no_authorization_works_as_without_oauth() {
    let Some(http) = bosun_testing::mcp::EverythingHttp::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-auth/everything.json");
    let started = start(http.url().to_owned(), Some(&path)).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let echo =
        started.servers.tools().into_iter().find(|t| t.definition().name == "mcp__protected__echo").unwrap();
    let context = bosun_core::ToolContext::detached(bosun_core::CallId::new_v7(), Default::default());
    let output = echo.execute(json!({"message": "hi"}), context).await;
    assert!(!output.is_error, "{:?}", output.content);
    started.servers.shutdown().await;
    assert!(!path.exists(), "no token file without tokens");
}
