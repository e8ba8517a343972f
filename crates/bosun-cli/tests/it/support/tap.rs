//! A recording proxy in front of aimock, for the request bodies exactly as
//! bosun sent them: aimock's own journal keeps each request converted to
//! the Chat Completions shape (an Anthropic, Responses or Gemini image part
//! left out) and cut at 64 KB. Each request is kept whole before it is
//! forwarded with `connection: close` (so every request comes on a
//! connection of its own), and the answer is streamed back as it comes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::NO_HANG;

/// A request as it passed: its path and its body (JSON, or the text that
/// did not parse as a string).
#[derive(Clone, Debug)]
pub struct Tapped {
    pub path: String,
    pub body: Value,
}

pub struct Tap {
    pub url: String,
    seen: Arc<Mutex<Vec<Tapped>>>,
}

impl Tap {
    /// Listens on 127.0.0.1 and forwards to `upstream` (`http://HOST:PORT`).
    pub fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream =
            upstream.strip_prefix("http://").expect("an http:// URL").trim_end_matches('/').to_owned();
        let seen: Arc<Mutex<Vec<Tapped>>> = Arc::default();
        let keep = Arc::clone(&seen);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let (keep, upstream) = (Arc::clone(&keep), upstream.clone());
                std::thread::spawn(move || pass(client, &upstream, &keep));
            }
        });
        Self { url, seen }
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Tapped> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests to model APIs (not aimock's own endpoints), oldest first.
    pub fn model_requests(&self) -> Vec<Tapped> {
        self.requests().into_iter().filter(|r| !r.path.starts_with("/__aimock")).collect()
    }
}

/// One request: read whole, kept, forwarded; the answer copied back.
fn pass(mut client: TcpStream, upstream: &str, keep: &Mutex<Vec<Tapped>>) {
    client.set_read_timeout(Some(NO_HANG)).unwrap();
    let Some(head) = read_head(&mut client) else { return };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let path = request_line.split(' ').nth(1).unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut forwarded = format!("{request_line}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().unwrap();
        }
        if !name.eq_ignore_ascii_case("connection") {
            forwarded.push_str(&format!("{line}\r\n"));
        }
    }
    forwarded.push_str("connection: close\r\n\r\n");
    let mut body = vec![0u8; length];
    client.read_exact(&mut body).unwrap();
    let parsed = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    keep.lock().unwrap().push(Tapped { path, body: parsed });
    let mut server = TcpStream::connect(upstream).unwrap();
    server.set_read_timeout(Some(NO_HANG)).unwrap();
    server.write_all(forwarded.as_bytes()).unwrap();
    server.write_all(&body).unwrap();
    // The answer's head says the connection closes too, or the client
    // would pool it and find it closed on its next request.
    let Some(head) = read_head(&mut server) else { return };
    let mut answer = String::new();
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default();
        if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("keep-alive") {
            answer.push_str(&format!("{line}\r\n"));
        }
    }
    answer.push_str("connection: close\r\n\r\n");
    if client.write_all(answer.as_bytes()).is_ok() {
        let _ = std::io::copy(&mut server, &mut client);
    }
    let _ = client.shutdown(std::net::Shutdown::Both);
}

/// A request's or an answer's head, up to its blank line.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}
