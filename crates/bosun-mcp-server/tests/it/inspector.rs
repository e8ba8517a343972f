//! The MCP Inspector's command-line mode (npm `@modelcontextprotocol/inspector`,
//! a client bosun did not write) lists and calls `bosun mcp-server`'s tools.
//! It advertises no elicitation, so a call that needs approval is denied.

use std::path::PathBuf;
use std::process::Command;

use bosun_testing::Aimock;
use serde_json::{Value, json};

use crate::delegate::bosun_bin;

fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test-peers/node_modules")
}

/// `(node, inspector launcher)`, or `None` when missing and skipping is allowed.
fn inspector() -> Option<(PathBuf, PathBuf)> {
    let node = bosun_testing::conformance::node22_path();
    let launcher = peers().join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    if node.is_file() && launcher.is_file() {
        return Some((node, launcher));
    }
    bosun_testing::skip_or_fail(
        "BOSUN_SKIP_INSPECTOR",
        &format!(
            "the MCP Inspector is not installed at {}: run `scripts/test` or `npm ci --prefix test-peers`",
            launcher.display()
        ),
    );
    None
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(mock: &Aimock) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/bosun")).unwrap();
        std::fs::write(
            dir.path().join("xdg/bosun/config.toml"),
            format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\n", mock.url()),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("allowed/ws/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("inspector")).unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    /// `mcp-inspector --cli … bosun mcp-server …` with `method_args`; its JSON.
    fn inspect(&self, method_args: &[&str]) -> Value {
        let (node, launcher) = inspector().unwrap();
        let mut cmd = Command::new(node);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // The inspector keeps a catalog and state under HOME.
            .env("HOME", self.path("inspector"))
            .env("MCP_CATALOG_PATH", self.path("inspector/catalog.json"))
            .arg(launcher)
            .arg("--cli");
        for (name, value) in [
            ("HOME", self.path("home")),
            ("XDG_CONFIG_HOME", self.path("xdg")),
            ("BOSUN_HOME", self.path("bosun")),
            ("OPENAI_API_KEY", "test".to_owned()),
        ] {
            cmd.arg("-e").arg(format!("{name}={value}"));
        }
        cmd.arg(bosun_bin()).args(["mcp-server", "--allow-root", &self.path("allowed")]).args(method_args);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

#[test]
fn the_mcp_inspectors_cli_lists_and_calls_bosuns_tools() {
    if inspector().is_none() {
        return;
    }
    let list = vec![
        json!({"match": {"userMessage": "hello", "turnIndex": 0}, "response": {"content": "Hi, inspector."}}),
        json!({"match": {"userMessage": "write", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "x\n"}}]}}),
        json!({"match": {"userMessage": "write", "turnIndex": 1}, "response": {"content": "Not allowed, then."}}),
    ];
    let Some(mock) = Aimock::start(&json!({ "fixtures": list })) else { return };
    let home = Home::new(&mock);

    let listed = home.inspect(&["--method", "tools/list"]);
    let names: Vec<&str> =
        listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bosun_task", "bosun_continue"]);

    let workspace = format!("workspace={}", home.path("allowed/ws"));
    let called = home.inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "bosun_task",
        "--tool-arg",
        "task=hello",
        "--tool-arg",
        &workspace,
    ]);
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(called["content"][0]["text"], "Hi, inspector.");
    assert_eq!(called["structuredContent"]["outcome"], "completed");
    assert!(called["structuredContent"]["session_id"].is_string());

    // No elicitation: the write is denied and has no effect.
    let denied = home.inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "bosun_task",
        "--tool-arg",
        "task=write",
        "--tool-arg",
        &workspace,
    ]);
    assert_eq!(denied["content"][0]["text"], "Not allowed, then.", "{denied}");
    assert!(!home.dir.path().join("allowed/ws/note.txt").exists());
    assert!(mock.last_request().contains("cannot be asked"), "the model read why: {}", mock.last_request());
}
