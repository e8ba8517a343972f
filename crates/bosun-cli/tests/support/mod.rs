//! What the CLI's end-to-end suites share: the real aimock mock-LLM server
//! (npm `@copilotkit/aimock`, installed by `scripts/test`) with its request
//! journal, and children run under a deadline with their output collected,
//! optionally on a pseudo-terminal. A missing aimock fails the test when
//! `BOSUN_REQUIRE_PEERS` is set, and is reported as skipped otherwise.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// No command may take longer than this: a hang fails the test.
pub const NO_HANG: Duration = Duration::from_secs(60);

pub const BOSUN: &str = env!("CARGO_BIN_EXE_bosun");
const GREET: &str = "echo \"hello wrold\"\n";
const FIXED: &str = "echo \"hello world\"\n";
const TASK: &str = "please fix greet.sh";

// ---------------------------------------------------------------- aimock

pub fn aimock_cli() -> Option<PathBuf> {
    let path = std::env::var_os("BOSUN_AIMOCK_CLI").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../test-peers/node_modules/@copilotkit/aimock/dist/cli.js")
    });
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("BOSUN_REQUIRE_PEERS").is_some() {
        panic!("aimock is required (BOSUN_REQUIRE_PEERS) but missing at {}", path.display());
    }
    eprintln!(
        "\n!!! SKIPPED: aimock is not installed ({}); run scripts/test to install it !!!\n",
        path.display()
    );
    None
}

/// A running aimock with its own fixtures, killed on drop. `turnIndex` is
/// strict: a fixture answers only when the request holds exactly that many
/// assistant messages.
pub struct Aimock {
    pub url: String,
    child: Child,
    _fixtures: tempfile::NamedTempFile,
}

impl Aimock {
    pub fn start(fixtures: &Value) -> Option<Self> {
        let cli = aimock_cli()?;
        let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
        std::fs::write(file.path(), fixtures.to_string()).unwrap();
        let mut child = Command::new("node")
            .arg(cli)
            .args(["-p", "0", "-h", "127.0.0.1", "--log-level", "info", "-f"])
            .arg(file.path())
            .env("AIMOCK_STRICT_TURN_INDEX", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        // Reads until the address shows, then keeps draining so aimock never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(line[at + "listening on ".len()..].trim().to_owned());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => Some(Self { url, child, _fixtures: file }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("aimock did not start listening within 30 s");
            }
        }
    }

    /// The requests aimock received, oldest first.
    pub fn journal(&self) -> Vec<Value> {
        let host = self.url.strip_prefix("http://").expect("an http URL");
        let mut stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET /__aimock/journal HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        assert!(head.lines().next().unwrap_or_default().contains(" 200 "), "journal: {head}");
        serde_json::from_str::<Vec<Value>>(body).expect("the journal is a JSON array")
    }

    /// The last request's body, as JSON text.
    pub fn last_request(&self) -> String {
        let journal = self.journal();
        let last = journal.last().expect("aimock saw a request");
        last["body"].to_string()
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- running

/// A finished command.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Asserts the exit code, showing everything when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.status.code(), Some(code), "exit status {}\n{self:#?}", self.status);
        self
    }
}

pub fn pump(mut source: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // A pseudo-terminal's master reads EIO once the child is gone.
        while let Ok(n @ 1..) = source.read(&mut buf) {
            into.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    })
}

/// A running child whose stdout and stderr (or terminal) are collected.
pub struct Running {
    pub child: Child,
    pub out: Arc<Mutex<Vec<u8>>>,
    pub err: Arc<Mutex<Vec<u8>>>,
    pub readers: Vec<JoinHandle<()>>,
    /// The pseudo-terminal's master, to type on.
    pub terminal: Option<File>,
}

impl Running {
    /// Spawns with stdin null (or `stdin` written to a pipe), stdout and
    /// stderr piped.
    pub fn spawn(mut cmd: Command, stdin: Option<&str>) -> Self {
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("the command starts");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            let text = text.to_owned();
            std::thread::spawn(move || {
                let _ = pipe.write_all(text.as_bytes());
            });
        }
        let (out, err) = (Arc::default(), Arc::default());
        let readers = vec![
            pump(child.stdout.take().unwrap(), Arc::clone(&out)),
            pump(child.stderr.take().unwrap(), Arc::clone(&err)),
        ];
        Self { child, out, err, readers, terminal: None }
    }

    /// Spawns `cmd` in a new session whose controlling terminal is a fresh
    /// pseudo-terminal (stdin and stderr on it, stdout piped), through
    /// util-linux `setsid --ctty`. What the terminal shows is `stderr()`.
    pub fn spawn_in_terminal(cmd: Command) -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let open_slave = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
                .open(name.to_str().unwrap())
                .unwrap()
        };
        let mut setsid = Command::new("setsid");
        setsid.arg("--ctty").arg(cmd.get_program()).args(cmd.get_args()).env_clear();
        for (key, value) in cmd.get_envs() {
            if let Some(value) = value {
                setsid.env(key, value);
            }
        }
        setsid.stdin(open_slave()).stdout(Stdio::piped()).stderr(open_slave());
        let mut child = setsid.spawn().expect("setsid (util-linux) runs");
        // Only the child holds the terminal now, so the master reads EIO
        // when it exits.
        drop(setsid);
        let master = File::from(master);
        let (out, err) = (Arc::default(), Arc::default());
        let readers = vec![
            pump(child.stdout.take().unwrap(), Arc::clone(&out)),
            pump(master.try_clone().unwrap(), Arc::clone(&err)),
        ];
        Self { child, out, err, readers, terminal: Some(master) }
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }

    /// Polls `ready` until it holds; fails if the child exits first or the
    /// deadline passes.
    pub fn wait_for(&mut self, what: &str, ready: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + NO_HANG;
        while !ready(self) {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The output may still be draining.
                std::thread::sleep(Duration::from_millis(100));
                if ready(self) {
                    return;
                }
                panic!(
                    "exited ({status}) before {what}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "timed out waiting for {what}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Types `text` on the terminal.
    pub fn type_line(&mut self, text: &str) {
        let terminal = self.terminal.as_mut().expect("a terminal");
        terminal.write_all(format!("{text}\n").as_bytes()).unwrap();
        terminal.flush().unwrap();
    }

    /// Waits for the exit, within the deadline.
    pub fn finish(mut self) -> Output {
        let deadline = Instant::now() + NO_HANG;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the command hung\nstdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        Output { status, stdout: self.stdout(), stderr: self.stderr() }
    }
}

impl Drop for Running {
    /// A failed assertion leaves no child behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `cmd` with stdin null, within the deadline.
pub fn run(cmd: Command) -> Output {
    Running::spawn(cmd, None).finish()
}

/// `--json` output: every line parses, is an object with a string `type`
/// and the same string `session_id`.
pub fn json_events(stdout: &str) -> Vec<Value> {
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")))
        .collect();
    assert!(!events.is_empty(), "no events");
    let session = events[0]["session_id"].as_str().expect("a session_id").to_owned();
    for event in &events {
        assert!(event["type"].is_string(), "no type: {event}");
        assert_eq!(event["session_id"].as_str(), Some(session.as_str()), "{event}");
    }
    events
}

pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

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

/// A temporary home, config directory, session store and workspace.
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "xdg", "bosun", "ws"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        Self { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    pub fn ws(&self) -> PathBuf {
        self.path("ws")
    }

    /// `bosun -C DIR` with a cleared, isolated environment (`PATH` kept for
    /// the shell tool) and the given `BOSUN_HOME`.
    pub fn bosun_in(&self, dir: &Path, bosun_home: &Path) -> Command {
        let mut cmd = Command::new(BOSUN);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("BOSUN_HOME", bosun_home)
            .arg("-C")
            .arg(dir);
        cmd
    }

    /// `bosun -C WS` with the sandbox's session store in `bosun_home`.
    pub fn bosun_at(&self, bosun_home: &Path) -> Command {
        self.bosun_in(&self.ws(), bosun_home)
    }

    pub fn bosun(&self) -> Command {
        self.bosun_at(&self.path("bosun"))
    }
}
