//! A listener standing in for a hostile host (`hostile_repo.rs`): it keeps
//! the head of every request and answers 400.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A listener standing in for a hostile host: records the head of every
/// request it receives (request line and headers) and answers 400, so a
/// client that reaches it fails fast instead of retrying.
pub struct Recorder {
    pub url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = Arc::clone(&heads);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                record.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            }
        });
        Self { url, heads }
    }

    /// Every request head received so far.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}
