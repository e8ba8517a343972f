//! Resources as the tools `list_mcp_resources` and `read_mcp_resource`:
//! against the real everything server (static documents, text and blob
//! templates) over stdio, and a hand-written Python server whose listing
//! never ends, for the page bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::sync::Arc;

use bosun_core::ToolSource;
use bosun_core::schema::CompiledSchema;
use bosun_core::{Tool, ToolCategory, ToolOutput};
use bosun_mcp::{
    LIST_RESOURCES, MAX_RESOURCE_PAGES, McpServers, READ_RESOURCE, ServerConfig, ServerEvent, StdioTransport,
};
use serde_json::{Value, json};
use support::{EventLog, call, context, everything, python, python3, text, write_script};
use tokio_util::sync::CancellationToken;

/// The resource tool named `name`.
fn resource_tool(servers: &Arc<McpServers>, name: &str) -> Arc<dyn Tool> {
    let tools = servers.resource_tools();
    tools.into_iter().find(|t| t.definition().name == name).unwrap_or_else(|| panic!("no {name}"))
}

async fn run(servers: &Arc<McpServers>, name: &str, arguments: Value) -> ToolOutput {
    let tool = resource_tool(servers, name);
    let schema = CompiledSchema::compile(&tool.definition().parameters).unwrap();
    assert!(schema.validate(&arguments).is_ok(), "{arguments} fits the schema of {name}");
    tool.execute(arguments, context(&CancellationToken::new())).await
}

/// The JSON lines of a listing (its headings left out).
fn listed(output: &ToolOutput) -> Vec<Value> {
    text(output).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect()
}

/// The everything server's `dist/docs/`, which it offers as static resources.
fn docs_dir() -> std::path::PathBuf {
    bosun_testing::mcp::everything_path().parent().unwrap().join("docs")
}

#[tokio::test]
async fn the_everything_servers_documents_are_listed_and_read_back_whole() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = Arc::new(started.servers);
    let tools = servers.resource_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(names, [LIST_RESOURCES, READ_RESOURCE]);
    for tool in &tools {
        assert_eq!(tool.category(), ToolCategory::External, "untrusted servers' resources ask");
        assert_eq!(tool.definition().parameters["properties"]["server"]["enum"], json!(["everything"]));
    }
    assert!(servers.tools().iter().all(|t| t.definition().name.starts_with("mcp__")), "kept apart");

    let listing = run(&servers, LIST_RESOURCES, json!({})).await;
    assert!(!listing.is_error, "{}", text(&listing));
    let resources = listed(&listing);
    let on_disk = std::fs::read_dir(docs_dir()).unwrap().count();
    assert_eq!(resources.len(), on_disk, "{}", text(&listing));
    assert!(text(&listing).starts_with(&format!("everything: {on_disk} resources\n")), "{}", text(&listing));
    let markdown = resources
        .iter()
        .find(|r| r["mimeType"] == "text/markdown")
        .unwrap_or_else(|| panic!("no markdown document in {resources:?}"));
    let uri = markdown["uri"].as_str().unwrap();
    assert!(uri.starts_with("demo://resource/static/document/"), "{uri}");
    assert!(markdown["description"].as_str().unwrap().contains("Static document"), "{markdown}");

    let read = run(&servers, READ_RESOURCE, json!({"server": "everything", "uri": uri})).await;
    assert!(!read.is_error, "{}", text(&read));
    let file = std::fs::read_to_string(docs_dir().join(markdown["name"].as_str().unwrap())).unwrap();
    assert_eq!(text(&read), format!("[resource {uri} (text/markdown)]\n{file}"));

    let only = run(&servers, LIST_RESOURCES, json!({"server": "everything"})).await;
    assert_eq!(listed(&only), resources, "one server named lists the same");
    servers.shutdown().await;
    drop(servers);
    let after = tools[0].execute(json!({}), context(&CancellationToken::new())).await;
    assert!(after.is_error);
    assert_eq!(text(&after), "the MCP servers were shut down");
}

#[tokio::test]
async fn text_and_blob_templates_are_read_and_failures_are_error_outputs() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let servers = Arc::new(support::start(workspace.path(), vec![config]).await.servers);
    let read = |uri: &str| run(&servers, READ_RESOURCE, json!({"server": "everything", "uri": uri}));

    let plain = read("demo://resource/dynamic/text/2").await;
    assert!(!plain.is_error);
    assert!(
        text(&plain).starts_with(
            "[resource demo://resource/dynamic/text/2 (text/plain)]\nResource 2: This is a plaintext resource"
        ),
        "{}",
        text(&plain)
    );
    // A base64 blob of type text/plain is decoded to its text.
    let blob = read("demo://resource/dynamic/blob/7").await;
    assert!(!blob.is_error);
    assert!(text(&blob).contains("\nResource 7: This is a base64 blob created at"), "{}", text(&blob));

    let unknown = read("demo://resource/nothing-here").await;
    assert!(unknown.is_error);
    assert!(
        text(&unknown)
            .starts_with("MCP server `everything` refused the read of `demo://resource/nothing-here`:"),
        "{}",
        text(&unknown)
    );
    // The schema's enum keeps a session from sending this; a direct call is still answered.
    let tool = resource_tool(&servers, READ_RESOURCE);
    let output = tool
        .execute(json!({"server": "nobody", "uri": "demo://x"}), context(&CancellationToken::new()))
        .await;
    assert!(output.is_error);
    assert_eq!(text(&output), "no MCP server `nobody` with resources; those with resources: everything");
    servers.shutdown().await;
}

#[tokio::test]
async fn only_servers_with_resources_are_reached_and_trust_makes_reads() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    // The Python peer says it has tools only.
    let py = python(workspace.path(), "py");
    let alone = Arc::new(support::start(workspace.path(), vec![py.clone()]).await.servers);
    assert!(alone.resource_tools().is_empty(), "no server has resources, no tools");
    alone.shutdown().await;

    let both = Arc::new(
        support::start(workspace.path(), vec![py, config.with_trust_annotations(true)]).await.servers,
    );
    let list = resource_tool(&both, LIST_RESOURCES);
    assert_eq!(list.definition().parameters["properties"]["server"]["enum"], json!(["everything"]));
    assert_eq!(list.category(), ToolCategory::Read, "every server reached is trusted");
    both.shutdown().await;
}

/// Says it has resources, and answers every page of `resources/list` with
/// one resource and a cursor to a next page, forever; its tool `die` exits.
const ENDLESS: &str = r##"
import json, os, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    method, id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "endless", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "die", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        os._exit(3)
    elif method == "resources/list":
        page = int(params.get("cursor") or "0")
        send({"jsonrpc": "2.0", "id": id, "result": {
            "resources": [{"uri": "loop://%d" % page, "name": "page %d" % page}],
            "nextCursor": str(page + 1)}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"##;

fn endless(workspace: &std::path::Path) -> ServerConfig {
    let script = write_script(workspace, "endless.py", ENDLESS);
    ServerConfig::new("endless", StdioTransport::new(python3()).arg(script.display().to_string()))
}

#[tokio::test]
async fn a_listing_that_never_ends_stops_at_the_page_bound_and_says_so() {
    let workspace = tempfile::tempdir().unwrap();
    let config = endless(workspace.path());
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = Arc::new(started.servers);
    let listing = run(&servers, LIST_RESOURCES, json!({})).await;
    assert!(!listing.is_error, "{}", text(&listing));
    let resources = listed(&listing);
    assert_eq!(resources.len(), MAX_RESOURCE_PAGES);
    assert_eq!(resources[MAX_RESOURCE_PAGES - 1]["uri"], format!("loop://{}", MAX_RESOURCE_PAGES - 1));
    let heading = text(&listing).lines().next().unwrap().to_owned();
    assert_eq!(
        heading,
        format!(
            "endless: {MAX_RESOURCE_PAGES} resources (the listing stopped after {MAX_RESOURCE_PAGES} pages; the \
             server has more)"
        )
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_restarted_server_is_the_one_the_resource_tools_reach() {
    let workspace = tempfile::tempdir().unwrap();
    let (options, events) = EventLog::options(workspace.path());
    let started = McpServers::start(vec![endless(workspace.path())], options).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let servers = Arc::new(started.servers);
    let list = resource_tool(&servers, LIST_RESOURCES);
    let first = servers.process_id("endless").unwrap();

    assert!(call(&servers, "mcp__endless__die", json!({})).await.is_error);
    let (_, events) =
        events.wait_for(|e| matches!(e, ServerEvent::Exited { server, .. } if server == "endless")).await;
    let gone = list.execute(json!({}), context(&CancellationToken::new())).await;
    assert!(gone.is_error && text(&gone).contains("unavailable"), "{}", text(&gone));
    // The session's question between rounds starts the restart, and a later one collects it.
    servers.changes().await;
    let (_, _events) =
        events.wait_for(|e| matches!(e, ServerEvent::Ready { server, .. } if server == "endless")).await;
    while !servers.pending() {
        tokio::task::yield_now().await;
    }
    servers.changes().await;
    assert_ne!(servers.process_id("endless"), Some(first), "a new process");
    let back = list.execute(json!({}), context(&CancellationToken::new())).await;
    assert!(!back.is_error, "the tool made before the restart reaches the new server: {}", text(&back));
    assert_eq!(listed(&back).len(), MAX_RESOURCE_PAGES);
    servers.shutdown().await;
}
