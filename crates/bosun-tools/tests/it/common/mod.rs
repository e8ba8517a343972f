//! What the suites share: the file-tool fixture (a temporary workspace with
//! the workspace tools, no shell, built over it, and calls to them by name),
//! and the shell and hook suites' workspace, polling and process-group
//! helpers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext};
use bosun_tools::{ToolLimits, Workspace, WorkspaceTools};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub tools: Vec<Arc<dyn Tool>>,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_limits(ToolLimits::default())
    }

    pub fn with_limits(limits: ToolLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let tools = WorkspaceTools::new(workspace).limits(limits).without_shell().build();
        Self { dir, tools }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn put(&self, path: &str, content: &str) {
        let full = self.root().join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, content).unwrap();
    }

    pub fn get(&self, path: &str) -> String {
        fs::read_to_string(self.root().join(path)).unwrap()
    }

    /// Runs a call with `token`; a guard against a hang fails the test
    /// instead of stalling it.
    pub async fn call_with(&self, name: &str, arguments: Value, token: CancellationToken) -> (String, bool) {
        let tool = self.tools.iter().find(|t| t.definition().name == name).unwrap();
        let call = tool.execute(arguments, ToolContext::detached(CallId::new_v7(), token));
        let output = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("`{name}` did not answer within 60 s"));
        (concat_text(&output.content), output.is_error)
    }

    pub async fn call(&self, name: &str, arguments: Value) -> (String, bool) {
        self.call_with(name, arguments, CancellationToken::new()).await
    }

    pub async fn ok(&self, name: &str, arguments: Value) -> String {
        let (text, is_error) = self.call(name, arguments.clone()).await;
        assert!(!is_error, "{name} {arguments} failed: {text}");
        text
    }

    pub async fn err(&self, name: &str, arguments: Value) -> String {
        let (text, is_error) = self.call(name, arguments.clone()).await;
        assert!(is_error, "{name} {arguments} should have failed: {text}");
        text
    }
}

// ---------------------------------------------------------------------------
// Child processes (the shell and hook suites)
// ---------------------------------------------------------------------------

/// How long conditions are polled for before a test gives up.
pub const DEADLINE: Duration = Duration::from_secs(20);
pub const POLL: Duration = Duration::from_millis(20);

/// A temporary workspace and its canonical path.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

/// Polls until `path` exists, then returns its content, failing at the deadline.
pub async fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(content) = std::fs::read_to_string(path) {
            return content;
        }
        assert!(start.elapsed() < DEADLINE, "{} never appeared", path.display());
        tokio::time::sleep(POLL).await;
    }
}

/// Pids of the live (not zombie) processes whose process group is `pgid`.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        // A process may vanish between listing and reading.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some(after_comm) = stat.rfind(')').map(|at| &stat[at + 1..]) else { continue };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        if fields.len() > 2 && fields[2].parse() == Ok(pgid) && !matches!(fields[0], "Z" | "X") {
            members.push(pid);
        }
    }
    members
}
