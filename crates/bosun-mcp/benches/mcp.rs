//! What MCP costs: starting 0, 1 and 5 stdio servers (the everything
//! reference server, under `node`) until their tools are listed, then
//! shutting them down; and one `echo` call through MCP against the same
//! work done by a native tool: `cargo bench -p bosun-mcp --bench mcp`.
//!
//! Each figure is the median (and range) of [`RUNS`] runs, printed on lines
//! starting `bosun-bench:`. Start-up is what `bosun exec` waits for before
//! its session is built (servers start in parallel); the call is
//! `Tool::execute` on the tool `McpServers` offers, so it includes argument
//! encoding, JSON-RPC over the pipe, the server's own work and result
//! mapping. Results and their reading: `docs/benchmarks.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use bosun_core::{CallId, Tool, ToolCategory, ToolContext};
use bosun_mcp::{McpServers, ParentEnv, ServerConfig, StartOptions, StdioTransport};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const RUNS: usize = 11;
const CALLS: usize = 201;

fn everything(name: &str) -> ServerConfig {
    let entry = bosun_testing::mcp::everything_path();
    assert!(entry.is_file(), "{} is missing: npm ci --prefix test-peers", entry.display());
    ServerConfig::new(name, StdioTransport::new("node").arg(entry.display().to_string()).arg("stdio"))
}

fn options(root: &std::path::Path) -> StartOptions {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    StartOptions::new(root, ParentEnv::from_vars([("PATH", path)]))
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let (low, high) = (samples[0], samples[samples.len() - 1]);
    println!(
        "bosun-bench: {label}: median {median:.2?} (range {low:.2?} to {high:.2?}, {} runs)",
        samples.len()
    );
}

fn context() -> ToolContext {
    ToolContext::detached(CallId::new_v7(), CancellationToken::new())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let root = tempfile::tempdir().unwrap();
    for servers in [0usize, 1, 5] {
        let mut start = Vec::new();
        let mut stop = Vec::new();
        for _ in 0..RUNS {
            let configs = (0..servers).map(|i| everything(&format!("e{i}"))).collect();
            let began = Instant::now();
            let started = runtime.block_on(McpServers::start(configs, options(root.path())));
            start.push(began.elapsed());
            assert!(started.failures.is_empty(), "{:?}", started.failures);
            assert!(started.servers.tools().len() >= servers * 10, "every server's tools are listed");
            let began = Instant::now();
            runtime.block_on(started.servers.shutdown());
            stop.push(began.elapsed());
        }
        report(&format!("start {servers} stdio servers, tools listed"), start);
        report(&format!("shut down {servers} stdio servers"), stop);
    }

    let started = runtime.block_on(McpServers::start(vec![everything("e")], options(root.path())));
    let echo = started.servers.tools().into_iter().find(|t| t.definition().name == "mcp__e__echo").unwrap();
    let native = bosun_testing::FnTool::text("echo", ToolCategory::Read, |args| {
        format!("Echo: {}", args["message"].as_str().unwrap_or_default())
    });
    for (label, tool) in [("MCP echo call", echo.as_ref()), ("native echo call", &native as &dyn Tool)] {
        let mut samples = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let args = json!({"message": format!("m{i}")});
            let began = Instant::now();
            let output = runtime.block_on(tool.execute(args, context()));
            samples.push(began.elapsed());
            assert!(!output.is_error, "{output:?}");
        }
        report(label, samples);
    }
    runtime.block_on(started.servers.shutdown());
}
