//! A home for a server (config, store, workspace), the server started on a
//! loopback port, an HTTP client with its token, and an SSE reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod process;

use bosun_core::env::Env;
use bosun_serve::{ServeOptions, Server, Token};
use bosun_store::Store;
use bosun_testing::aimock::Aimock;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const TOKEN: &str = "test-token-0123456789abcdef";

/// No wait in these tests may take longer: a hang fails the test.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A user's home: config pointing at aimock, the store, workspaces.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new(mock: &Aimock) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("xdg/bosun");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\n", mock.url()),
        )
        .unwrap();
        Self { dir }
    }

    pub fn env(&self) -> Env {
        let root = self.dir.path().display().to_string();
        let xdg = format!("{root}/xdg");
        let home = format!("{root}/home");
        let bosun = format!("{root}/bosun");
        let path = std::env::var("PATH").unwrap_or_default();
        Env::from_pairs(&[
            ("HOME", home.as_str()),
            ("XDG_CONFIG_HOME", xdg.as_str()),
            ("BOSUN_HOME", bosun.as_str()),
            ("OPENAI_API_KEY", "test"),
            ("PATH", path.as_str()),
        ])
    }

    pub fn store(&self) -> Store {
        let path = self.dir.path().join("bosun/sessions.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Store::open(path).unwrap()
    }

    /// A workspace (a git repository) named `name`.
    pub fn workspace(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join("work").join(name);
        std::fs::create_dir_all(path.join(".git")).unwrap();
        std::fs::write(path.join("README.md"), "# a project\n").unwrap();
        path
    }
}

/// A server running in this process.
pub struct Served {
    pub url: String,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), bosun_serve::ServeError>>,
}

impl Served {
    pub async fn start(home: &Home) -> Self {
        Self::start_with(home, |_| {}).await
    }

    /// [`Served::start`] with options changed by `change`.
    pub async fn start_with(home: &Home, change: impl FnOnce(&mut ServeOptions)) -> Self {
        bosun_providers::tls::install_default_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut options = ServeOptions::new(Token::new(TOKEN).unwrap(), home.env(), home.store());
        change(&mut options);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(Server::new(options).serve(listener, async move {
            let _ = stopped.await;
        }));
        Self { url, client: reqwest::Client::new(), stop: Some(stop), task }
    }

    /// Stops the server as SIGTERM does, and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(DEADLINE, &mut self.task).await.expect("the server stops").unwrap().unwrap();
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.url)).bearer_auth(TOKEN)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        answer(self.request(reqwest::Method::GET, path).send().await.unwrap()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        answer(self.request(reqwest::Method::POST, path).json(&body).send().await.unwrap()).await
    }

    pub async fn delete(&self, path: &str) -> u16 {
        self.request(reqwest::Method::DELETE, path).send().await.unwrap().status().as_u16()
    }

    /// A new session in `workspace` in `mode`; its id.
    pub async fn create(&self, workspace: &Path, mode: &str) -> String {
        let (status, body) = self
            .post("/v1/sessions", json!({"workspace": workspace.display().to_string(), "mode": mode}))
            .await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// A client with no token.
    pub fn anonymous(&self) -> reqwest::Client {
        self.client.clone()
    }

    /// The events of `session` after `after` until one satisfies `until`
    /// (included), as `(number, event)`.
    pub async fn events_until(
        &self,
        session: &str,
        after: Option<u64>,
        mut until: impl FnMut(&Value) -> bool,
    ) -> Vec<(u64, Value)> {
        let mut request = self.request(reqwest::Method::GET, &format!("/v1/sessions/{session}/events"));
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        let mut events = Vec::new();
        let reading = async {
            while let Some(chunk) = body.next().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    let Some(event) = parse(&block) else { continue };
                    let done = until(&event.1);
                    events.push(event);
                    if done {
                        return;
                    }
                }
            }
            panic!("the stream ended first");
        };
        tokio::time::timeout(DEADLINE, reading)
            .await
            .unwrap_or_else(|_| panic!("no such event: {events:#?}"));
        events
    }

    /// The pending approvals.
    pub async fn approvals(&self) -> Vec<Value> {
        let (status, body) = self.get("/v1/approvals").await;
        assert_eq!(status, 200);
        body["approvals"].as_array().unwrap().clone()
    }
}

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// One SSE block as `(id, data)`; `None` for a comment (keep-alive).
fn parse(block: &str) -> Option<(u64, Value)> {
    let mut id = None;
    let mut data = String::new();
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("id:") {
            id = value.trim().parse().ok();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push_str(value.trim_start());
        }
    }
    Some((id?, serde_json::from_str(&data).unwrap()))
}

/// Whether `event` is of type `kind`.
pub fn is(event: &Value, kind: &str) -> bool {
    event["type"] == kind
}
