//! A small HTTP/1.1 server on 127.0.0.1 for the models tests: fixed bodies
//! by path, `Range: bytes=N-` honoured (or not, per route), a route that
//! breaks off mid-body, extra headers (a redirect's `Location`), and a log
//! of every request with its method, `Range`, `Authorization` and body, so
//! that it can play the Hugging Face Hub (paths-info, resolve) and its CDN.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How a path answers.
#[derive(Clone, Debug)]
pub struct Route {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    /// Honour `Range` requests with 206.
    pub ranges: bool,
    /// Close the connection after this many body bytes (the length header
    /// still announces the whole body).
    pub cut_at: Option<usize>,
    /// More response headers.
    pub headers: Vec<(String, String)>,
}

impl Route {
    pub fn file(body: &[u8]) -> Self {
        Self {
            status: 200,
            body: body.to_vec(),
            content_type: "application/octet-stream",
            ranges: true,
            cut_at: None,
            headers: Vec::new(),
        }
    }

    /// A `302 Found` to `location`.
    pub fn redirect(location: &str) -> Self {
        Self { status: 302, headers: vec![("Location".to_owned(), location.to_owned())], ..Self::file(b"") }
    }

    pub fn json(value: &serde_json::Value) -> Self {
        Self {
            content_type: "application/vnd.pypi.simple.v1+json",
            ..Self::file(value.to_string().as_bytes())
        }
    }

    pub fn status(status: u16) -> Self {
        Self { status, ..Self::file(b"no") }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
}

/// One request in full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub authorization: Option<String>,
    pub body: String,
}

#[derive(Debug)]
pub struct Server {
    pub url: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    seen: Arc<Mutex<Vec<Request>>>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let routes = Arc::new(Mutex::new(HashMap::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (accept_routes, accept_seen) = (routes.clone(), seen.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (routes, seen) = (accept_routes.clone(), accept_seen.clone());
                tokio::spawn(async move {
                    let _ = answer(stream, routes, seen).await;
                });
            }
        });
        Self { url, routes, seen, task }
    }

    pub fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    pub fn seen(&self) -> Vec<Seen> {
        let requests = self.requests();
        requests.into_iter().map(|request| Seen { path: request.path, range: request.range }).collect()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

/// A URL on which nothing listens.
pub async fn closed_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

async fn answer(
    mut stream: TcpStream,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    seen: Arc<Mutex<Vec<Request>>>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let method = head.split_whitespace().next().unwrap_or("GET").to_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let header = |wanted: &str| {
        head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case(wanted).then(|| value.trim().to_owned())
        })
    };
    let range = header("range");
    let length = header("content-length").and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    let mut request_body = vec![0; length.min(1 << 20)];
    stream.read_exact(&mut request_body).await?;
    seen.lock().unwrap().push(Request {
        method,
        path: path.clone(),
        range: range.clone(),
        authorization: header("authorization"),
        body: String::from_utf8_lossy(&request_body).into_owned(),
    });
    let route = routes.lock().unwrap().get(&path).cloned().unwrap_or_else(|| Route::status(404));
    let len = route.body.len();
    let start = range
        .as_deref()
        .filter(|_| route.ranges && route.status == 200)
        .and_then(|value| value.strip_prefix("bytes=")?.strip_suffix('-')?.parse::<usize>().ok());
    let (status, body, extra) = match start {
        Some(start) if start >= len => (416, &route.body[..0], format!("Content-Range: bytes */{len}\r\n")),
        Some(start) => {
            (206, &route.body[start..], format!("Content-Range: bytes {start}-{}/{len}\r\n", len - 1))
        }
        None => (route.status, &route.body[..], String::new()),
    };
    let extra: String = route
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .fold(extra, |all, one| all + &one);
    let header = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        route.content_type,
        body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    let sent = route.cut_at.map_or(body.len(), |cut| cut.min(body.len()));
    stream.write_all(&body[..sent]).await?;
    stream.flush().await?;
    stream.shutdown().await
}
