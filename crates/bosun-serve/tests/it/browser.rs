//! The page `bosun serve` serves, in headless Chromium (Debian's `chromium`
//! and `chromium-driver`, which `scripts/test` installs when missing),
//! driven over WebDriver by fantoccini against the real `bosun serve` and
//! aimock: the page loads with the token from its address, a session made
//! in its form runs a task sent from its box and streams aimock's answer,
//! an approval clicked in its panel lets the tool run, and its Steer and
//! Cancel reach a running turn. A screenshot of each state is kept in
//! `target/browser-screenshots/`; the page may meet no script error and
//! nothing its Content-Security-Policy blocks.
//!
//! Nothing sleeps to synchronise: every wait polls the page until what it
//! waits for shows, and fails at a deadline with a screenshot and the page's
//! text. A missing chromium or chromedriver FAILS the test, unless
//! `BOSUN_SKIP_BROWSER=1` says to skip it (then it says so, on stderr and in
//! `BOSUN_SKIP_LOG`); a missing aimock follows `BOSUN_SKIP_AIMOCK`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bosun_testing::Aimock;
use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::FutureExt;
use serde_json::{Value, json};

use crate::support::process::{Dirs, Serve, Spawned};

/// The longest any one wait lasts: a hang guard, far above what each takes.
const DEADLINE: Duration = Duration::from_secs(60);

/// aimock's answer to the first task: markup in it is text, not markup.
const ANSWER: &str = "Hello from aimock, through the page: <b>not bold</b>.";
/// aimock's answer once the file is written.
const WROTE: &str = "Wrote notes.txt as asked.";
/// What the approved `write_file` call writes.
const NOTES: &str = "written from the page\n";
/// A steer, and aimock's answer to it.
const STEER: &str = "also mention the weather";
const STEERED: &str = "Steered: the weather is fine.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_streams_a_task_and_runs_a_tool_once_its_approval_is_clicked() {
    // The first task is answered; the second calls write_file (asked in
    // `propose` mode), then answers once its result names the file.
    let fixtures = json!([
        {"match": {"userMessage": "say hello", "turnIndex": 0}, "response": {"content": ANSWER}},
        {"match": {"userMessage": "write the notes", "turnIndex": 1}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": NOTES}}]}},
        {"match": {"toolResultContains": "notes.txt", "turnIndex": 2}, "response": {"content": WROTE}},
    ]);
    with_page(fixtures, async |page, dirs| {
        // 1. The page loads with the token from the address, takes it off
        //    the address bar, and lists the (no) sessions.
        let address = page.client.current_url().await.unwrap();
        assert!(!address.as_str().contains("token"), "the token stays in the address bar: {address}");
        page.shoot("01-loaded.png").await;

        // 2. A session made in the form, in `propose` mode; a task sent
        //    from the box streams aimock's answer.
        page.new_session(dirs, "propose").await;
        page.fill("#task", "say hello").await;
        page.click("#send").await;
        page.wait_for_text("aimock's answer", ".assistant-text", ANSWER).await;
        page.wait_for("the first turn's end", ".turn-end.outcome-completed").await;
        let markup = page.client.find_all(Locator::Css("#conversation b")).await.unwrap();
        assert!(markup.is_empty(), "the model's text became markup");
        page.shoot("02-answered.png").await;

        // 3. A task whose tool call asks: the approval shows in the panel
        //    and on the call's card; "Allow once" lets it run.
        page.fill("#task", "write the notes").await;
        page.click("#send").await;
        page.wait_for("the approval", ".approval button[data-decision=once]").await;
        page.wait_for("the call awaiting approval", ".tool-call[data-status=awaiting-approval]").await;
        let asked = page.text(".approval").await;
        assert!(asked.contains("write_file") && asked.contains("notes.txt"), "the approval shows: {asked}");
        assert!(!dirs.ws().join("notes.txt").exists(), "the file was written before the approval");
        page.shoot("03-approval.png").await;
        page.click(".approval button[data-decision=once]").await;
        page.wait_for("the call done", ".tool-call[data-status=done]").await;
        page.wait_for_text("the answer after the call", ".assistant-text", WROTE).await;
        page.wait_for("the approval gone", "#approvals:empty").await;
        assert_eq!(std::fs::read_to_string(dirs.ws().join("notes.txt")).unwrap(), NOTES);
        page.shoot("04-approved.png").await;
        // Each event drawn once: two tasks, one call, two turns.
        page.wait_for_count(".turn-end", 2).await;
        page.assert_counts(&[(".user-text", 2), (".tool-call", 1), (".turn-end", 2)]).await;

        // 4. Another token typed into the address: the page takes it, and
        //    says the server refused it.
        page.client.goto(&format!("{address}#token=not-the-token")).await.unwrap();
        page.wait_for_text("the refusal", "#status", "refused the token").await;
        page.watch_errors().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_steers_a_running_turn_and_cancels_one() {
    // A shell command that waits for the test (it reads a FIFO); the answer
    // comes only to a request whose last message is the steer.
    let gated = "read x < gate.fifo; echo released $x";
    let fixtures = json!([
        {"match": {"userMessage": "run the gated command", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": gated}}]}},
        {"match": {"userMessage": STEER, "turnIndex": 1}, "response": {"content": STEERED}},
        {"match": {"userMessage": "once more", "turnIndex": 2}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": gated}}]}},
    ]);
    with_page(fixtures, async |page, dirs| {
        let gate = dirs.ws().join("gate.fifo");
        assert!(Command::new("mkfifo").arg(&gate).status().unwrap().success());
        page.new_session(dirs, "autonomous").await;
        page.wait_for("Steer and Cancel off while no turn runs", "#steer:disabled + #cancel:disabled").await;

        // A steer typed while the command runs reaches the model after it.
        page.fill("#task", "run the gated command").await;
        page.click("#send").await;
        page.wait_for("the command running", ".tool-call[data-status=running]").await;
        page.wait_for("Steer on while a turn runs", "#steer:enabled").await;
        page.fill("#task", STEER).await;
        page.click("#steer").await;
        page.wait_for_text("the steer shown", ".user-text[data-kind=steer]", STEER).await;
        let release = gate.clone();
        let writer = std::thread::spawn(move || std::fs::write(release, "go\n").unwrap());
        page.wait_for_text("the steered answer", ".assistant-text", STEERED).await;
        writer.join().unwrap();
        page.wait_for("the call done", ".tool-call[data-status=done]").await;
        page.shoot("05-steered.png").await;

        // Cancel stops a turn whose command waits.
        page.wait_for("the first turn's end", ".turn-end.outcome-completed").await;
        page.fill("#task", "once more").await;
        page.click("#send").await;
        page.wait_for_count(".tool-call[data-status=running]", 1).await;
        page.wait_for("Cancel on while a turn runs", "#cancel:enabled").await;
        page.click("#cancel").await;
        page.wait_for("the turn cancelled", ".turn-end.outcome-cancelled").await;
        page.wait_for("Steer and Cancel off again", "#steer:disabled + #cancel:disabled").await;
        page.shoot("06-cancelled.png").await;
        page.assert_counts(&[(".user-text", 3), (".tool-call", 2), (".turn-end", 2)]).await;
    })
    .await;
}

/// Starts aimock on `fixtures`, `bosun serve` on it, and a headless
/// browser on the page (token in its address), waits until the page has
/// listed the sessions, runs `test`, then checks the page met no script
/// error and nothing its CSP blocked. Returns early when a skip allows.
async fn with_page(fixtures: Value, test: impl AsyncFnOnce(&Page, &Dirs)) {
    let Some(browser) = Browser::find() else { return };
    let Some(mock) = Aimock::start(&json!({ "fixtures": fixtures })) else { return };
    let dirs = Dirs::new(&mock);
    let serve = Serve::start(&dirs);
    let driver = browser.start_driver();
    let client = browser.connect(&driver, &dirs).await;
    let page =
        Page { client: client.clone(), shots: screenshots_dir(), serve: Arc::clone(&serve.process.output) };
    let run = AssertUnwindSafe(async {
        page.client.goto(&serve.url).await.unwrap();
        page.watch_errors().await;
        page.wait_for("the sessions list", "body[data-loaded] #no-sessions").await;
        test(&page, &dirs).await;
        page.assert_no_errors().await;
    })
    .catch_unwind()
    .await;
    // The browser goes whatever happened: chromedriver does not take it
    // down when killed.
    let _ = client.close().await;
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
    eprintln!("browser screenshots: {}", page.shots.display());
}

// ---------------------------------------------------------------- the page

struct Page {
    client: Client,
    shots: PathBuf,
    /// `bosun serve`'s output so far.
    serve: Arc<Mutex<String>>,
}

impl Page {
    async fn shoot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let path = self.shots.join(name);
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }

    /// From here on, records the page's script errors and what its
    /// Content-Security-Policy blocked (an inline style, say).
    async fn watch_errors(&self) {
        let script = "window.__seen = [];
            window.addEventListener('error', (e) => window.__seen.push(`error: ${e.message}`));
            window.addEventListener('unhandledrejection', (e) => window.__seen.push(`rejection: ${e.reason}`));
            document.addEventListener('securitypolicyviolation',
                (e) => window.__seen.push(`blocked by ${e.violatedDirective}: ${e.blockedURI} ${e.sample}`));";
        self.client.execute(script, Vec::new()).await.unwrap();
    }

    async fn assert_no_errors(&self) {
        let seen = self.client.execute("return window.__seen;", Vec::new()).await.unwrap();
        assert_eq!(seen, json!([]), "the page's errors and blocked content");
    }

    /// A session made in the form on the test's workspace and aimock's
    /// model, in `mode`, and selected.
    async fn new_session(&self, dirs: &Dirs, mode: &str) {
        self.fill("#new-workspace", &dirs.ws().display().to_string()).await;
        self.fill("#new-model", "openai/gpt-test").await;
        self.client.find(Locator::Css("#new-mode")).await.unwrap().select_by_value(mode).await.unwrap();
        self.click("#create").await;
        self.wait_for("the new session, selected", "#sessions .session.selected").await;
    }

    async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.unwrap().len()
    }

    async fn wait_for_count(&self, css: &str, count: usize) {
        self.poll(&format!("{count} of {css}"), || async { self.count(css).await >= count }).await;
    }

    async fn assert_counts(&self, expected: &[(&str, usize)]) {
        for &(css, count) in expected {
            assert_eq!(self.count(css).await, count, "how many {css}");
        }
    }

    async fn fill(&self, css: &str, text: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    async fn click(&self, css: &str) {
        self.client.find(Locator::Css(css)).await.unwrap().click().await.unwrap();
    }

    /// The text of every element `css` matches, one a line.
    async fn text(&self, css: &str) -> String {
        let mut texts = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            // An element may go between the find and the read.
            if let Ok(text) = element.text().await {
                texts.push(text);
            }
        }
        texts.join("\n")
    }

    async fn wait_for(&self, what: &str, css: &str) {
        self.poll(what, || async { !self.client.find_all(Locator::Css(css)).await.unwrap().is_empty() })
            .await;
    }

    async fn wait_for_text(&self, what: &str, css: &str, needle: &str) {
        self.poll(what, || async { self.text(css).await.contains(needle) }).await;
    }

    /// Polls `ready` until it holds; at the deadline, fails with a
    /// screenshot, the page's text and the server's output.
    async fn poll<F, Fut>(&self, what: &str, ready: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = Instant::now() + DEADLINE;
        while !ready().await {
            if Instant::now() >= deadline {
                let name = format!("failed-{}.png", what.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
                self.shoot(&name).await;
                let body = self.text("body").await;
                panic!(
                    "timed out waiting for {what}\nthe page shows:\n{body}\nbosun serve's output:\n{}",
                    self.serve.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `target/browser-screenshots/` (each test names its own files).
fn screenshots_dir() -> PathBuf {
    let dir = target_dir().join("browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The target directory this test was built in (it runs from
/// `target/<profile>/deps/`), or `CARGO_TARGET_DIR`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "deps"))
        .and_then(|deps| deps.parent()?.parent())
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"), Path::to_path_buf)
}

/// Chromium and its WebDriver server.
struct Browser {
    chromium: PathBuf,
    chromedriver: PathBuf,
}

impl Browser {
    /// Both programs (`BOSUN_CHROMIUM` and `BOSUN_CHROMEDRIVER` name them,
    /// else the `PATH` does), or `None` when one is missing and
    /// `BOSUN_SKIP_BROWSER=1`.
    #[track_caller]
    fn find() -> Option<Self> {
        let chromium = program("BOSUN_CHROMIUM", &["chromium", "chromium-browser"]);
        let chromedriver = program("BOSUN_CHROMEDRIVER", &["chromedriver"]);
        match (chromium, chromedriver) {
            (Some(chromium), Some(chromedriver)) => Some(Self { chromium, chromedriver }),
            (chromium, chromedriver) => {
                let missing: Vec<&str> =
                    [(chromium.is_none(), "chromium"), (chromedriver.is_none(), "chromedriver")]
                        .into_iter()
                        .filter_map(|(gone, name)| gone.then_some(name))
                        .collect();
                bosun_testing::skip_or_fail(
                    "BOSUN_SKIP_BROWSER",
                    &format!(
                        "{} not found: run `scripts/test`, or apt-get install chromium chromium-driver",
                        missing.join(" and ")
                    ),
                );
                None
            }
        }
    }

    /// chromedriver on a free port it picks and prints.
    fn start_driver(&self) -> Driver {
        let mut cmd = Command::new(&self.chromedriver);
        cmd.arg("--port=0").stderr(Stdio::null());
        let (process, port) = Spawned::start(cmd, "started successfully on port ");
        let port = port.trim_end_matches('.').to_owned();
        Driver { _process: process, url: format!("http://127.0.0.1:{port}") }
    }

    /// A headless browser session, 1280 × 900, with its profile in `dirs`.
    async fn connect(&self, driver: &Driver, dirs: &Dirs) -> Client {
        let mut capabilities = serde_json::Map::new();
        let profile = format!("--user-data-dir={}", dirs.path("chromium").display());
        let options: Value = json!({
            "binary": self.chromium,
            // --no-sandbox: Chromium's own sandbox refuses to run as root,
            // which the test machines are.
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run", profile],
        });
        capabilities.insert("goog:chromeOptions".into(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&driver.url)
            .await
            .unwrap_or_else(|e| panic!("chromedriver at {} starts no browser: {e}", driver.url))
    }
}

struct Driver {
    _process: Spawned,
    url: String,
}

/// The program `variable` names, else the first of `names` on the `PATH`.
fn program(variable: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path)).filter(|path| path.is_file());
    }
    let path = std::env::var_os("PATH")?;
    names
        .iter()
        .find_map(|name| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|file| file.is_file()))
}
