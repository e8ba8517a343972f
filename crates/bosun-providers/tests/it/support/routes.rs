//! A local server that answers each request as a handler decides from the
//! request itself (its path, headers and body), for flows where what is
//! asked decides the answer: a token endpoint that checks an assertion's
//! signature, a model server that requires the token it issued.

use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::{Canned, Recorded, read_request};

/// The handler: the answer to one request.
pub type Handler = Arc<dyn Fn(&Recorded) -> Canned + Send + Sync>;

/// A server on 127.0.0.1 that records every request and answers it with
/// its handler's `Canned` (status, headers and body; the other fault knobs
/// are not used here).
pub struct Routed {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Routed {
    pub async fn start(handler: impl Fn(&Recorded) -> Canned + Send + Sync + 'static) -> Self {
        let handler: Handler = Arc::new(handler);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let seen = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let handler = Arc::clone(&handler);
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    let canned = handler(&request);
                    seen.lock().unwrap().push(request);
                    let body: Vec<u8> = canned.chunks.concat();
                    let mut head = format!(
                        "HTTP/1.1 {} X\r\nconnection: close\r\ncontent-length: {}\r\n",
                        canned.status,
                        body.len()
                    );
                    for (name, value) in &canned.headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests whose path starts with `prefix`.
    pub fn to(&self, prefix: &str) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.path.starts_with(prefix)).collect()
    }
}

/// A JSON answer.
pub fn json(status: u16, body: &serde_json::Value) -> Canned {
    let mut canned = Canned::error(status, &body.to_string());
    canned.status = status;
    canned
}
