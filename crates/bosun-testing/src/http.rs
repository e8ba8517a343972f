//! A small HTTP/1.1 server on 127.0.0.1 for tests of bosun's HTTP clients:
//! fixed answers by path (query included), `Range: bytes=N-` honoured (or
//! not, per route), a route that breaks off mid-body, one that stalls after
//! its head, extra headers (a redirect's `Location`), and a log of every
//! request with its method, path, headers and body. It plays the Hugging
//! Face Hub and its CDN for bosun-models, and web pages and search
//! providers for bosun-web.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How a path answers.
#[derive(Clone, Debug)]
pub struct Route {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// Honour `Range` requests with 206.
    pub ranges: bool,
    /// Close the connection after this many body bytes (the length header
    /// still announces the whole body).
    pub cut_at: Option<usize>,
    /// Send the head, then nothing more until the server is dropped: a
    /// server that stopped answering.
    pub stall: bool,
    /// More response headers.
    pub headers: Vec<(String, String)>,
}

impl Route {
    /// A 200 with `body` as `application/octet-stream`, ranges honoured.
    pub fn file(body: &[u8]) -> Self {
        Self {
            status: 200,
            body: body.to_vec(),
            content_type: "application/octet-stream",
            ranges: true,
            cut_at: None,
            stall: false,
            headers: Vec::new(),
        }
    }

    /// A 200 with `body` of `content_type`, no ranges.
    pub fn typed(content_type: &'static str, body: &[u8]) -> Self {
        Self { content_type, ranges: false, ..Self::file(body) }
    }

    /// A `302 Found` to `location`.
    pub fn redirect(location: &str) -> Self {
        Self { status: 302, ..Self::file(b"") }.header("Location", location)
    }

    /// A 200 with `value` as JSON (PyPI's simple API media type, which the
    /// models tests read; JSON all the same).
    pub fn json(value: &serde_json::Value) -> Self {
        Self {
            content_type: "application/vnd.pypi.simple.v1+json",
            ..Self::file(value.to_string().as_bytes())
        }
    }

    /// `status` with a short body.
    pub fn status(status: u16) -> Self {
        Self { status, ..Self::file(b"no") }
    }

    /// This route, sending its head and then nothing (see [`Route::stall`]).
    pub fn stalled(self) -> Self {
        Self { stall: true, ..self }
    }

    /// This route with one more response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// One request as the server saw it, briefly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The request target (path and query).
    pub path: String,
    /// The `Range` header.
    pub range: Option<String>,
}

/// One request in full.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The method.
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// The `Range` header.
    pub range: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// Every header, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Request {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;
type Log = Arc<Mutex<Vec<Request>>>;

/// The server; it stops when dropped.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    routes: Routes,
    seen: Log,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A lock that a panicking test thread left poisoned still holds good data.
fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// Listens on a free loopback port; every path answers 404 until routed.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start() -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let routes = Routes::default();
        let seen = Log::default();
        let (accept_routes, accept_seen) = (routes.clone(), seen.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (routes, seen) = (accept_routes.clone(), accept_seen.clone());
                tokio::spawn(async move {
                    let _ = answer(stream, routes, seen).await;
                });
            }
        });
        Ok(Self { url, routes, seen, task })
    }

    /// Answers `path` (with its query, if the request has one) with `route`.
    pub fn route(&self, path: &str, route: Route) {
        locked(&self.routes).insert(path.to_owned(), route);
    }

    /// Every request so far, briefly.
    pub fn seen(&self) -> Vec<Seen> {
        let requests = self.requests();
        requests.into_iter().map(|request| Seen { path: request.path, range: request.range }).collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        locked(&self.seen).clone()
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

/// A URL on which nothing listens.
///
/// # Errors
/// When no loopback port can be bound.
pub async fn closed_url() -> io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    drop(listener);
    Ok(url)
}

async fn answer(mut stream: TcpStream, routes: Routes, seen: Log) -> io::Result<()> {
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
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let header = |wanted: &str| headers.iter().find(|(name, _)| name == wanted).map(|(_, v)| v.clone());
    let range = header("range");
    let length = header("content-length").and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    let mut request_body = vec![0; length.min(1 << 20)];
    stream.read_exact(&mut request_body).await?;
    let authorization = header("authorization");
    locked(&seen).push(Request {
        method,
        path: path.clone(),
        range: range.clone(),
        authorization,
        headers,
        body: String::from_utf8_lossy(&request_body).into_owned(),
    });
    let route = locked(&routes).get(&path).cloned().unwrap_or_else(|| Route::status(404));
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
    stream.flush().await?;
    if route.stall {
        // Held open, silent, until the runtime ends the task.
        std::future::pending::<()>().await;
    }
    let sent = route.cut_at.map_or(body.len(), |cut| cut.min(body.len()));
    stream.write_all(&body[..sent]).await?;
    stream.flush().await?;
    stream.shutdown().await
}
