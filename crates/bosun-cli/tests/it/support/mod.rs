//! What the CLI's end-to-end suites share: the real aimock mock-LLM server
//! (npm `@copilotkit/aimock`, installed by `scripts/test`; launched by
//! `bosun_testing::Aimock`) with its request journal, a sandboxed `bosun`
//! command, and children run under a deadline with their output collected,
//! optionally on a pseudo-terminal. Nothing sleeps to synchronise: reader
//! threads wake waiters on every read.
//!
//! A missing aimock FAILS the test, unless `BOSUN_SKIP_AIMOCK=1` says to
//! skip (loudly, on stderr); `BOSUN_REQUIRE_PEERS` (set by `scripts/test`)
//! wins over a skip.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod recorder;
mod tap;

pub use recorder::Recorder;
pub use tap::Tap;

/// No command may take longer than this: a hang fails the test.
pub const NO_HANG: Duration = Duration::from_secs(60);

pub const BOSUN: &str = env!("CARGO_BIN_EXE_bosun");

/// The binary under test: this build's, or `BOSUN_TEST_BIN` (to run a suite
/// against another build, such as the commit before a fix, and see it fail).
pub fn bosun_bin() -> PathBuf {
    std::env::var_os("BOSUN_TEST_BIN").map_or_else(|| PathBuf::from(BOSUN), PathBuf::from)
}
/// The task's file before and after the fix, and the task.
pub const GREET: &str = "echo \"hello wrold\"\n";
pub const FIXED: &str = "echo \"hello world\"\n";
pub const TASK: &str = "please fix greet.sh";

// ---------------------------------------------------------------- aimock

/// The launcher shared with the providers' tests: fixtures in, a URL out,
/// strict `turnIndex`, killed on drop, and the skip rule above.
pub use bosun_testing::Aimock;

/// `{"fixtures": list}`, what `Aimock::start` takes.
pub fn fixtures(list: Vec<Value>) -> Value {
    serde_json::json!({ "fixtures": list })
}

/// For prompts containing `word`: the model calls `tool` with `arguments`;
/// when the result contains `result`, it answers `answer`. Nothing else
/// matches the second request, so a result that is not what was expected
/// fails the turn.
pub fn call_then_answer(word: &str, tool: &str, arguments: Value, result: &str, answer: &str) -> Vec<Value> {
    use serde_json::json;
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": tool, "arguments": arguments}]}}),
        json!({"match": {"toolResultContains": result, "turnIndex": 1}, "response": {"content": answer}}),
    ]
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

/// What a child's reader threads collect from its stdout and its stderr (or
/// terminal), and how many of them still read; every read and every close
/// wakes the waiters.
#[derive(Default)]
struct Collected {
    state: Mutex<Streams>,
    changed: Condvar,
}

#[derive(Default)]
struct Streams {
    /// stdout, then stderr or the terminal.
    bytes: [Vec<u8>; 2],
    /// Reads so far, to tell a change.
    reads: u64,
    open: usize,
}

const OUT: usize = 0;
const ERR: usize = 1;

/// Why a wait ended without what it waited for.
enum Unmet {
    Closed,
    TimedOut,
}

impl Collected {
    fn state(&self) -> std::sync::MutexGuard<'_, Streams> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads `source` into stream `into` until it ends.
    fn pump(self: &Arc<Self>, into: usize, mut source: impl Read + Send + 'static) {
        self.state().open += 1;
        let this = Arc::clone(self);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // A pseudo-terminal's master reads EIO once the child is gone.
            while let Ok(n @ 1..) = source.read(&mut buf) {
                let mut state = this.state();
                state.bytes[into].extend_from_slice(&buf[..n]);
                state.reads += 1;
                drop(state);
                this.changed.notify_all();
            }
            this.state().open -= 1;
            this.changed.notify_all();
        });
    }

    fn bytes(&self, stream: usize) -> Vec<u8> {
        self.state().bytes[stream].clone()
    }

    fn reads(&self) -> u64 {
        self.state().reads
    }

    /// Waits until `done` holds, every stream is closed, or the deadline.
    fn wait(&self, deadline: Instant, done: impl Fn(&Streams) -> bool) -> Result<(), Unmet> {
        let mut state = self.state();
        while !done(&state) {
            if state.open == 0 {
                return Err(Unmet::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Unmet::TimedOut);
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        Ok(())
    }
}

/// A running child whose stdout and stderr (or terminal) are collected. No
/// wait on it lasts past `NO_HANG` from its start.
pub struct Running {
    pub child: Child,
    collected: Arc<Collected>,
    /// The pseudo-terminal's master, to type on.
    terminal: Option<File>,
    deadline: Instant,
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
        let collected = Arc::new(Collected::default());
        collected.pump(OUT, child.stdout.take().unwrap());
        collected.pump(ERR, child.stderr.take().unwrap());
        Self { child, collected, terminal: None, deadline: Instant::now() + NO_HANG }
    }

    /// Spawns `cmd` in a new session whose controlling terminal is a fresh
    /// pseudo-terminal (stdin and stderr on it, stdout piped), through
    /// util-linux `setsid --ctty`. What the terminal shows is `stderr()`.
    pub fn spawn_in_terminal(cmd: Command) -> Self {
        Self::spawn_on_terminal(cmd, false)
    }

    /// `spawn_in_terminal`, with stdout on the terminal too when
    /// `stdout_on_terminal` (then `stdout()` is empty).
    pub fn spawn_on_terminal(cmd: Command, stdout_on_terminal: bool) -> Self {
        Self::spawn_on_terminal_of(cmd, stdout_on_terminal, None)
    }

    /// `spawn_in_terminal` on a terminal of `rows` × `cols`.
    pub fn spawn_in_terminal_sized(cmd: Command, rows: u16, cols: u16) -> Self {
        Self::spawn_on_terminal_of(cmd, false, Some((rows, cols)))
    }

    fn spawn_on_terminal_of(cmd: Command, stdout_on_terminal: bool, size: Option<(u16, u16)>) -> Self {
        let (master, open_slave) = open_pty(size);
        let mut setsid = on_controlling_terminal(&cmd);
        setsid.stdin(open_slave()).stderr(open_slave());
        if stdout_on_terminal {
            setsid.stdout(open_slave());
        } else {
            setsid.stdout(Stdio::piped());
        }
        let mut child = setsid.spawn().expect("setsid (util-linux) runs");
        // Only the child holds the terminal now, so the master reads EIO
        // when it exits.
        drop(setsid);
        let master = File::from(master);
        let collected = Arc::new(Collected::default());
        if let Some(stdout) = child.stdout.take() {
            collected.pump(OUT, stdout);
        }
        collected.pump(ERR, master.try_clone().unwrap());
        Self { child, collected, terminal: Some(master), deadline: Instant::now() + NO_HANG }
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout_bytes()).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr_bytes()).into_owned()
    }

    pub fn stdout_bytes(&self) -> Vec<u8> {
        self.collected.bytes(OUT)
    }

    /// Stderr's bytes, or on a terminal everything the terminal received.
    pub fn stderr_bytes(&self) -> Vec<u8> {
        self.collected.bytes(ERR)
    }

    /// Waits until `ready` holds, checked on every read; fails if the
    /// output closes first or the deadline passes.
    pub fn wait_for(&mut self, what: &str, ready: impl Fn(&Self) -> bool) {
        loop {
            let seen = self.collected.reads();
            if ready(self) {
                return;
            }
            match self.collected.wait(self.deadline, |state| state.reads != seen) {
                Ok(()) => {}
                Err(Unmet::Closed) => {
                    let status = self.child.wait().unwrap();
                    panic!(
                        "exited ({status}) before {what}\nstdout:\n{}\nstderr:\n{}",
                        self.stdout(),
                        self.stderr()
                    );
                }
                Err(Unmet::TimedOut) => {
                    let _ = self.child.kill();
                    panic!(
                        "timed out waiting for {what}\nstdout:\n{}\nstderr:\n{}",
                        self.stdout(),
                        self.stderr()
                    );
                }
            }
        }
    }

    /// Writes `bytes` to the terminal, as keys typed.
    pub fn keys(&mut self, bytes: &[u8]) {
        let terminal = self.terminal.as_mut().expect("a terminal");
        terminal.write_all(bytes).unwrap();
        terminal.flush().unwrap();
    }

    /// Types `text` and Enter on the terminal.
    pub fn type_line(&mut self, text: &str) {
        let terminal = self.terminal.as_mut().expect("a terminal");
        terminal.write_all(format!("{text}\n").as_bytes()).unwrap();
        terminal.flush().unwrap();
    }

    /// Waits for the exit (every stream closed), within the deadline: the
    /// status, stdout's bytes and stderr's (or the terminal's).
    pub fn finish_bytes(mut self) -> (ExitStatus, Vec<u8>, Vec<u8>) {
        if let Err(Unmet::TimedOut) = self.collected.wait(self.deadline, |state| state.open == 0) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("the command hung\nstdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr());
        }
        let status = self.child.wait().unwrap();
        (status, self.stdout_bytes(), self.stderr_bytes())
    }

    /// Waits for the exit, within the deadline.
    pub fn finish(self) -> Output {
        let (status, stdout, stderr) = self.finish_bytes();
        Output {
            status,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
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

/// Asserts how `exec --json`'s events end: the turn's `turn_end` with
/// `outcome`, then the `result` line with the same outcome, last.
#[track_caller]
pub fn assert_ended(events: &[Value], outcome: &str) {
    let [.., end, result] = events else { panic!("too few events: {events:#?}") };
    assert_eq!((&end["type"], &end["outcome"]), (&json!("turn_end"), &json!(outcome)), "{end}");
    assert_eq!((&result["type"], &result["outcome"]), (&json!("result"), &json!(outcome)), "{result}");
}

pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Whether `needle` occurs in `haystack` (raw terminal bytes).
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
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
        let mut cmd = Command::new(bosun_bin());
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

    /// `bosun -C WS exec --model … --base-url …` on `api` against `mock`,
    /// with the API's key set.
    pub fn exec(&self, api: Api, mock: &Aimock) -> Command {
        let mut cmd = self.bosun();
        cmd.env(api.key_var(), "test").arg("exec").args(api.args(mock));
        cmd
    }

    /// The conversation (`bosun ARGS`) on OpenAI's chat API against `mock`
    /// in a `cols`-wide terminal of 40 rows, once its status line shows.
    pub fn converse(&self, mock: &Aimock, args: &[&str], cols: u16) -> Pty {
        let api = Api::OpenAiChat;
        let mut cmd = self.bosun();
        cmd.env(api.key_var(), "test").args(api.args(mock)).args(args);
        let mut pty = Pty::spawn(cmd, 40, cols);
        // The status line starts with the model (a notice may name it too).
        pty.wait_until("the status line", |e| e.contents().lines().any(|l| l.starts_with("openai/gpt-test")));
        pty
    }

    /// A FIFO named `name` in the workspace: a shell command that reads it
    /// (`read x < gate.fifo`) waits until the test writes it, so a test
    /// holds a call running without a sleep.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.ws().join(name);
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        path
    }

    /// The workspace's greet.sh.
    pub fn greet(&self) -> String {
        std::fs::read_to_string(self.ws().join("greet.sh")).unwrap()
    }
}

/// A sandbox whose workspace holds the typo'd greet.sh.
pub fn task_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.ws().join("greet.sh"), GREET).unwrap();
    sandbox
}

/// The APIs the task runs on (`APIS`), and the other two bosun speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAiChat,
    Anthropic,
    OpenAiResponses,
    Gemini,
}

pub const APIS: [Api; 2] = [Api::OpenAiChat, Api::Anthropic];

impl Api {
    pub fn key_var(self) -> &'static str {
        match self {
            Self::OpenAiChat | Self::OpenAiResponses => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::Gemini => "GEMINI_API_KEY",
        }
    }

    /// `--model … --base-url …` for this API against `mock`.
    pub fn args(self, mock: &Aimock) -> Vec<String> {
        self.args_at(mock.url())
    }

    /// `--model … --base-url …` for this API against a server at `url`.
    pub fn args_at(self, url: &str) -> Vec<String> {
        let (model, url) = match self {
            Self::OpenAiChat => ("openai/gpt-test", format!("{url}/v1")),
            Self::OpenAiResponses => ("openai-responses/gpt-test", format!("{url}/v1")),
            Self::Anthropic => ("anthropic/claude-test", url.to_owned()),
            Self::Gemini => ("gemini/gemini-test", url.to_owned()),
        };
        vec!["--model".into(), model.into(), "--base-url".into(), url]
    }
}

/// The session id from the human output's last line (`session ID`).
pub fn session_from_stderr(stderr: &str) -> String {
    let line = stderr.lines().rev().find_map(|l| l.strip_prefix("session ")).expect("a `session ID` line");
    line.trim().to_owned()
}

// ---------------------------------------------------------------- an emulated terminal

/// What the emulator behind a [`Pty`] knows: the screen (a `vt100`
/// parser the size of the pseudo-terminal), every row it has shown since
/// the start (in first-seen order, each text once: rows that scrolled away
/// or were redrawn are still there to find), and query bytes held back
/// until they are complete.
pub struct Emulator {
    parser: vt100::Parser,
    shown: Vec<String>,
    seen: std::collections::HashSet<String>,
    held: Vec<u8>,
}

/// The queries a full-screen program asks its terminal and waits on (the
/// UI's crossterm asks the cursor position for its inline viewport, and
/// the primary device attributes after the keyboard-protocol query, which
/// this terminal does not answer: it speaks the legacy protocol).
const CURSOR_QUERY: &[u8] = b"\x1b[6n";
const ATTRIBUTES_QUERY: &[u8] = b"\x1b[c";

impl Emulator {
    fn new(rows: u16, cols: u16) -> Self {
        Self {
            parser: vt100::Parser::new(rows, cols, 0),
            shown: Vec::new(),
            seen: std::collections::HashSet::new(),
            held: Vec::new(),
        }
    }

    /// Feeds `bytes` to the screen and returns what the terminal answers
    /// to the queries among them, each answered at its place in the stream.
    fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut data = std::mem::take(&mut self.held);
        data.extend_from_slice(bytes);
        let mut answers = Vec::new();
        let mut rest = &data[..];
        loop {
            let next = [CURSOR_QUERY, ATTRIBUTES_QUERY]
                .into_iter()
                .filter_map(|q| rest.windows(q.len()).position(|w| w == q).map(|at| (at, q)))
                .min_by_key(|(at, _)| *at);
            let Some((at, query)) = next else { break };
            self.parser.process(&rest[..at]);
            if query == CURSOR_QUERY {
                let (row, col) = self.parser.screen().cursor_position();
                answers.extend_from_slice(format!("\x1b[{};{}R", row + 1, col + 1).as_bytes());
            } else {
                answers.extend_from_slice(b"\x1b[?62;22c");
            }
            rest = &rest[at + query.len()..];
        }
        // A query split across reads: hold its start back.
        let keep = [CURSOR_QUERY, ATTRIBUTES_QUERY]
            .into_iter()
            .flat_map(|q| (1..q.len()).filter(move |&n| rest.ends_with(&q[..n])))
            .max()
            .unwrap_or(0);
        self.parser.process(&rest[..rest.len() - keep]);
        self.held = rest[rest.len() - keep..].to_vec();
        self.record();
        answers
    }

    fn record(&mut self) {
        let cols = self.parser.screen().size().1;
        let rows: Vec<String> = self.parser.screen().rows(0, cols).map(|r| r.trim_end().to_owned()).collect();
        for row in rows {
            if !row.is_empty() && self.seen.insert(row.clone()) {
                self.shown.push(row);
            }
        }
    }

    /// What the screen shows now, row by row.
    pub fn contents(&self) -> String {
        self.parser.screen().contents()
    }

    /// Every row shown since the start, first-seen order.
    pub fn shown(&self) -> &[String] {
        &self.shown
    }

    /// Whether some row ever showed `text`.
    pub fn ever_showed(&self, text: &str) -> bool {
        self.shown.iter().any(|row| row.contains(text))
    }

    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }
}

/// A child on a fresh pseudo-terminal of a set size (stdin, stdout and
/// stderr all on it, its controlling terminal), with a terminal emulator
/// on the master side that draws what it prints and answers its queries.
/// Waits wake on every read and fail, showing the screen, at the deadline.
pub struct Pty {
    running: Running,
    master: File,
    emulator: Arc<Mutex<Emulator>>,
}

/// How a [`Pty`]'s child ended.
pub struct PtyExit {
    pub status: ExitStatus,
    /// Every byte the terminal received.
    pub raw: Vec<u8>,
    /// The screen at the end.
    pub contents: String,
    /// Every row ever shown.
    pub shown: Vec<String>,
    /// The terminal's settings after the exit.
    pub termios: rustix::termios::Termios,
    pub bracketed_paste: bool,
    pub cursor_hidden: bool,
}

/// A fresh pseudo-terminal, `rows` × `cols` when given: its master, and
/// what opens its slave (without making it this process's terminal).
fn open_pty(size: Option<(u16, u16)>) -> (rustix::fd::OwnedFd, impl Fn() -> File) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    if let Some((rows, cols)) = size {
        let size = rustix::termios::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        rustix::termios::tcsetwinsize(&master, size).unwrap();
    }
    let name = ptsname(&master, Vec::new()).unwrap().into_string().unwrap();
    let open_slave = move || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(&name)
            .unwrap()
    };
    (master, open_slave)
}

/// `cmd` (program, arguments, environment) run by util-linux `setsid
/// --ctty`, so the terminal on its stdin becomes its controlling one.
fn on_controlling_terminal(cmd: &Command) -> Command {
    let mut setsid = Command::new("setsid");
    setsid.arg("--ctty").arg(cmd.get_program()).args(cmd.get_args()).env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            setsid.env(key, value);
        }
    }
    setsid
}

impl Pty {
    /// Spawns `cmd` (with `TERM=xterm-256color`) on a `rows` × `cols`
    /// pseudo-terminal, through util-linux `setsid --ctty`.
    pub fn spawn(mut cmd: Command, rows: u16, cols: u16) -> Self {
        cmd.env("TERM", "xterm-256color");
        let (master, open_slave) = open_pty(Some((rows, cols)));
        let mut setsid = on_controlling_terminal(&cmd);
        if let Some(dir) = cmd.get_current_dir() {
            setsid.current_dir(dir);
        }
        setsid.stdin(open_slave()).stdout(open_slave()).stderr(open_slave());
        let child = setsid.spawn().expect("setsid (util-linux) runs");
        // Only the child holds the terminal now, so the master reads EIO
        // when it exits.
        drop(setsid);
        let master = File::from(master);
        let emulator = Arc::new(Mutex::new(Emulator::new(rows, cols)));
        let collected = Arc::new(Collected::default());
        collected.state().open += 1;
        let (this, screen) = (Arc::clone(&collected), Arc::clone(&emulator));
        let (mut source, mut answer) = (master.try_clone().unwrap(), master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = source.read(&mut buf) {
                let answers =
                    screen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).feed(&buf[..n]);
                if !answers.is_empty() {
                    let _ = answer.write_all(&answers);
                }
                let mut state = this.state();
                state.bytes[ERR].extend_from_slice(&buf[..n]);
                state.reads += 1;
                drop(state);
                this.changed.notify_all();
            }
            this.state().open -= 1;
            this.changed.notify_all();
        });
        let running = Running {
            child,
            collected,
            terminal: Some(master.try_clone().unwrap()),
            deadline: Instant::now() + NO_HANG,
        };
        Self { running, master, emulator }
    }

    fn emulator(&self) -> std::sync::MutexGuard<'_, Emulator> {
        self.emulator.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the screen shows now.
    pub fn contents(&self) -> String {
        self.emulator().contents()
    }

    /// Every row shown so far.
    pub fn shown(&self) -> Vec<String> {
        self.emulator().shown().to_vec()
    }

    /// Every byte the terminal received so far.
    pub fn raw(&self) -> Vec<u8> {
        self.running.stderr_bytes()
    }

    /// The terminal's settings now (the slave's, read through the master).
    pub fn termios(&self) -> rustix::termios::Termios {
        rustix::termios::tcgetattr(&self.master).unwrap()
    }

    /// Resizes the terminal (the child gets SIGWINCH) and the emulator's
    /// screen with it.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.emulator().parser.screen_mut().set_size(rows, cols);
        let size = rustix::termios::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        rustix::termios::tcsetwinsize(&self.master, size).unwrap();
    }

    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.running.child.id()
    }

    /// Waits until `ready` holds for the emulator, checked on every read;
    /// fails, showing the screen, if the child exits first or the deadline
    /// passes.
    pub fn wait_until(&mut self, what: &str, ready: impl Fn(&Emulator) -> bool) {
        loop {
            let seen = self.running.collected.reads();
            if ready(&self.emulator()) {
                return;
            }
            match self.running.collected.wait(self.running.deadline, |state| state.reads != seen) {
                Ok(()) => {}
                Err(unmet) => {
                    let why = match unmet {
                        Unmet::Closed => format!("exited ({})", self.running.child.wait().unwrap()),
                        Unmet::TimedOut => {
                            let _ = self.running.child.kill();
                            "timed out".to_owned()
                        }
                    };
                    let raw = self.raw();
                    let tail = String::from_utf8_lossy(&raw[raw.len().saturating_sub(800)..]).into_owned();
                    let emulator = self.emulator();
                    panic!(
                        "{why} before {what}\nscreen:\n{}\nrows shown:\n{}\nthe last bytes: {tail:?}",
                        emulator.contents(),
                        emulator.shown().join("\n")
                    );
                }
            }
        }
    }

    /// Waits until the screen shows `text` now.
    pub fn wait_on_screen(&mut self, text: &str) {
        self.wait_until(&format!("{text:?} on the screen"), |e| e.contents().contains(text));
    }

    /// Waits until some row has shown `text` (it may have scrolled away or
    /// been redrawn since).
    pub fn wait_shown(&mut self, text: &str) {
        self.wait_until(&format!("{text:?} shown"), |e| e.ever_showed(text));
    }

    /// Writes `bytes` to the terminal, as keys typed.
    pub fn keys(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Types `text`, then Enter (a carriage return, as a terminal in raw
    /// mode sends it).
    pub fn type_line(&mut self, text: &str) {
        self.keys(format!("{text}\r").as_bytes());
    }

    /// Waits for the exit (the terminal closed), within the deadline.
    pub fn finish(self) -> PtyExit {
        let Self { running, master, emulator } = self;
        let (status, _, raw) = running.finish_bytes();
        let termios = rustix::termios::tcgetattr(&master).unwrap();
        let emulator = emulator.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        PtyExit {
            status,
            raw,
            contents: emulator.contents(),
            shown: emulator.shown().to_vec(),
            termios,
            bracketed_paste: emulator.screen().bracketed_paste(),
            cursor_hidden: emulator.screen().hide_cursor(),
        }
    }
}
