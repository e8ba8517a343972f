//! The real `bosun` binary as a test runs it: a temporary home for it,
//! `bosun serve` started on a free loopback port, its output kept.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use bosun_testing::Aimock;

/// The longest a child may take to say it is ready.
const SPAWN_DEADLINE: Duration = Duration::from_secs(60);

/// The `bosun` binary: `BOSUN_TEST_BIN`, else the one built beside this
/// test (`target/<profile>/bosun`).
pub fn bosun_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("BOSUN_TEST_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    let profile =
        exe.ancestors().find(|dir| dir.file_name().is_some_and(|name| name == "deps")).and_then(Path::parent);
    let bin = profile.map(|dir| dir.join("bosun")).filter(|bin| bin.is_file());
    bin.unwrap_or_else(|| {
        panic!("no bosun binary beside {}: build it (cargo build -p bosun-cli)", exe.display())
    })
}

/// A temporary home, config directory, session store and workspace; the
/// user config names aimock's model and address.
pub struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    pub fn new(mock: &Aimock) -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "xdg/bosun", "bosun", "ws", "chromium"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        let config = format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\n", mock.url());
        std::fs::write(root.path().join("xdg/bosun/config.toml"), config).unwrap();
        Self { root }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    pub fn ws(&self) -> PathBuf {
        self.path("ws")
    }
}

/// A child killed on drop, its stdout read into `output` by a thread.
pub struct Spawned {
    child: Child,
    pub output: Arc<Mutex<String>>,
}

impl Spawned {
    /// Spawns `cmd` and waits for a stdout line containing `marker`:
    /// returns the child and what follows the marker on that line.
    pub fn start(mut cmd: Command, marker: &'static str) -> (Self, String) {
        let program = cmd.get_program().to_string_lossy().into_owned();
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let collected = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find(marker)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(line[at + marker.len()..].trim().to_owned());
                }
                let mut all = collected.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                all.push_str(&line);
                all.push('\n');
            }
        });
        let spawned = Self { child, output };
        match rx.recv_timeout(SPAWN_DEADLINE) {
            Ok(rest) => (spawned, rest),
            Err(_) => panic!("{program} did not print `{marker}`; its stdout:\n{}", spawned.output()),
        }
    }

    pub fn output(&self) -> String {
        self.output.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `bosun serve` on a free port of 127.0.0.1 with a token it did not make.
pub struct Serve {
    pub process: Spawned,
    /// The page's address, with the token in its fragment.
    pub url: String,
}

pub const TOKEN: &str = "page-test-token-6d1f0b8e";

impl Serve {
    pub fn start(dirs: &Dirs) -> Self {
        Self::start_with_env(dirs, &[])
    }

    /// [`Serve::start`] with more variables set.
    pub fn start_with_env(dirs: &Dirs, extra: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bosun_bin());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", dirs.path("home"))
            .env("XDG_CONFIG_HOME", dirs.path("xdg"))
            .env("BOSUN_HOME", dirs.path("bosun"))
            .env("BOSUN_SERVE_TOKEN", TOKEN)
            .env("OPENAI_API_KEY", "test")
            .envs(extra.iter().copied())
            .args(["serve", "--listen", "127.0.0.1:0"]);
        let (process, address) = Spawned::start(cmd, "listening on ");
        let address = address.split_whitespace().next().unwrap_or_default();
        assert!(address.starts_with("http://127.0.0.1:"), "bosun serve's address: {address}");
        // A token from the environment is the caller's own, so the address
        // printed carries none: the caller adds it, as a person would.
        let url = if address.contains('#') { address.to_owned() } else { format!("{address}#token={TOKEN}") };
        Self { process, url }
    }
}
