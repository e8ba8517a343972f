//! Against a server built on the Python MCP SDK (PyPI `mcp`, in the venv
//! `scripts/test` makes from `test-peers/requirements.txt`), over stdio and
//! over Streamable HTTP. The SDK is a peer of its own kind: it derives each
//! tool's schemas from Python type hints (pydantic: `title`s, `$defs` and
//! `$ref`s, an `outputSchema`), answers with `structuredContent`, turns
//! exceptions (all but its `MCPError`) and argument errors into `isError`
//! results, and frames its SSE events with CRLF and no `id:` lines, where
//! the npm servers use LF and ids.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use bosun_core::schema::CompiledSchema;
use bosun_core::{Message, Mode, Session};
use bosun_mcp::{HttpTransport, LIST_RESOURCES, McpServers, READ_RESOURCE, ServerConfig, StdioTransport};
use bosun_testing::mcp::PythonSdkHttp;
use bosun_testing::{RecordingApprover, ScriptedModel};
use serde_json::{Value, json};
use support::{alive, call, context, text, tool, write_script};
use tokio_util::sync::CancellationToken;

/// The server: `python sdk_server.py` serves stdio, `… sdk_server.py http`
/// Streamable HTTP on 127.0.0.1 with a port the kernel picks (uvicorn logs
/// it, `PythonSdkHttp` reads it).
const SERVER: &str = r#"
import sys
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

mcp = MCPServer("py-sdk", version="1.0")


class Box(BaseModel):
    width: float
    height: float


class Split(BaseModel):
    head: str
    rest: list[str]


class Forecast(BaseModel):
    city: str
    celsius: int


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def split(text: str, sep: str = " ", mode: Literal["all", "first"] = "all") -> Split:
    """Splits text at a separator."""
    parts = text.split(sep) if mode == "all" else text.split(sep, 1)
    return Split(head=parts[0], rest=parts[1:])


@mcp.tool()
def area(box: Box) -> float:
    """The area of a box."""
    return box.width * box.height


@mcp.tool()
def forecast(city: str) -> Annotated[CallToolResult, Forecast]:
    """A summary as text, the numbers only as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text="mild, see the data")],
        structured_content={"city": city, "celsius": 17},
    )


@mcp.tool()
def crash(reason: str) -> str:
    """Raises an unexpected exception."""
    raise ValueError(f"crashed: {reason}")


@mcp.tool()
def refuse(reason: str) -> str:
    """Raises the SDK's ToolError."""
    raise ToolError(f"refused: {reason}")


@mcp.tool()
def down() -> str:
    """Raises the SDK's MCPError: a JSON-RPC error, not a result."""
    raise MCPError(code=-32000, message="backend is down")


@mcp.resource("note://greeting", mime_type="text/plain")
def greeting() -> str:
    """A short note."""
    return "hello from the SDK"


if sys.argv[1:] == ["http"]:
    mcp.run("streamable-http", host="127.0.0.1", port=0)
else:
    mcp.run()
"#;

/// The SDK's tools in the order bosun offers them (sorted by name).
const TOOLS: [&str; 7] = ["add", "area", "crash", "down", "forecast", "refuse", "split"];

fn script(dir: &Path) -> String {
    write_script(dir, "sdk_server.py", SERVER).display().to_string()
}

/// The server on stdio, or `None` when the SDK is missing and the test may skip.
fn stdio(dir: &Path, name: &str) -> Option<ServerConfig> {
    let python = bosun_testing::mcp::python_sdk()?;
    let transport = StdioTransport::new(python.display().to_string()).arg(script(dir));
    Some(ServerConfig::new(name, transport))
}

/// What both transports must show: the tools, their lowered schemas, the
/// results, the errors. `server` is the config's name.
async fn tools_and_results(servers: &McpServers, server: &str) {
    let name = |tool: &str| format!("mcp__{server}__{tool}");
    let offered: Vec<String> = servers.tools().iter().map(|t| t.definition().name.clone()).collect();
    assert_eq!(offered, TOOLS.map(name));

    // pydantic's `title`s are annotations and dropped; `default`, `enum`
    // and `required` are kept, and so checked by bosun before a call.
    let parameters = |tool_name: &str| tool(servers, &name(tool_name)).definition().parameters.clone();
    assert_eq!(
        parameters("add"),
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        })
    );
    assert_eq!(
        parameters("split"),
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "sep": {"type": "string", "default": " "},
                "mode": {"type": "string", "enum": ["all", "first"], "default": "all"},
            },
            "required": ["text"],
        })
    );
    // A pydantic model argument comes as `$defs` + `$ref`: inlined.
    assert_eq!(
        parameters("area"),
        json!({
            "type": "object",
            "properties": {"box": {
                "type": "object",
                "properties": {"width": {"type": "number"}, "height": {"type": "number"}},
                "required": ["width", "height"],
            }},
            "required": ["box"],
        })
    );
    assert_eq!(tool(servers, &name("add")).definition().description, "Adds two integers.");

    // `structuredContent` {"result": 42} repeats the text "42": shown once.
    let sum = call(servers, &name("add"), json!({"a": 2, "b": 40})).await;
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(sum.content.len(), 1, "{sum:?}");
    assert_eq!(text(&sum), "42");
    // A model's result: the text is its JSON, the same as the structured copy.
    let split = call(servers, &name("split"), json!({"text": "a b c"})).await;
    assert_eq!(split.content.len(), 1, "{split:?}");
    let shown: Value = serde_json::from_str(&text(&split)).unwrap();
    assert_eq!(shown, json!({"head": "a", "rest": ["b", "c"]}));
    let first = call(servers, &name("split"), json!({"text": "a-b-c", "sep": "-", "mode": "first"})).await;
    assert_eq!(serde_json::from_str::<Value>(&text(&first)).unwrap(), json!({"head": "a", "rest": ["b-c"]}));
    let area = call(servers, &name("area"), json!({"box": {"width": 1.5, "height": 4}})).await;
    assert_eq!(text(&area), "6.0");
    // Structured content that says what the text does not: added as JSON.
    let weather = call(servers, &name("forecast"), json!({"city": "Oslo"})).await;
    assert!(!weather.is_error, "{weather:?}");
    assert_eq!(weather.content.len(), 2, "{weather:?}");
    assert_eq!(bosun_core::message::concat_text(&weather.content[..1]), "mild, see the data");
    let data: Value = serde_json::from_str(&bosun_core::message::concat_text(&weather.content[1..])).unwrap();
    assert_eq!(data, json!({"city": "Oslo", "celsius": 17}));

    // An unexpected exception: the SDK answers `isError` with its own
    // message and keeps the exception's text (server-side data) to its log.
    let crash = call(servers, &name("crash"), json!({"reason": "disk"})).await;
    assert!(crash.is_error, "{crash:?}");
    assert_eq!(text(&crash), "Error executing tool crash");
    // A `ToolError` is the SDK's way to say why: its text is shown.
    let refused = call(servers, &name("refuse"), json!({"reason": "not today"})).await;
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(text(&refused), "Error executing tool refuse: refused: not today");
    // An `MCPError` is the one exception the SDK answers as a JSON-RPC error.
    let down = call(servers, &name("down"), json!({})).await;
    assert!(down.is_error, "{down:?}");
    assert_eq!(
        text(&down),
        format!("MCP server `{server}` refused the call of `down`: backend is down (JSON-RPC error -32000)")
    );
}

/// A wrong argument type, both ways it can go. A session validates every
/// call against the lowered schema before approval and again before
/// dispatch, so bosun answers it and the server is not called
/// (`a_session_refuses_…` below). A
/// direct `execute`, which skips the session, reaches the SDK, and pydantic
/// answers with an `isError` result. pydantic is laxer than bosun: `"2"`
/// passes as an integer there, which bosun's schema refuses.
async fn wrong_types(servers: &McpServers, server: &str) {
    let add = format!("mcp__{server}__add");
    let schema = CompiledSchema::compile(&tool(servers, &add).definition().parameters).unwrap();
    let refused = schema.validate(&json!({"a": "two", "b": 1})).unwrap_err();
    assert_eq!(refused.to_string(), "/a: expected integer, got string", "{refused:?}");
    assert!(schema.validate(&json!({"a": "2", "b": 1})).is_err());

    let direct = call(servers, &add, json!({"a": "two", "b": 1})).await;
    assert!(direct.is_error, "{direct:?}");
    let shown = text(&direct);
    assert!(
        shown.starts_with("Error executing tool add: 1 validation error for addArguments\na\n"),
        "{shown}"
    );
    assert!(shown.contains("Input should be a valid integer"), "{shown}");
    let lax = call(servers, &add, json!({"a": "2", "b": 1})).await;
    assert!(!lax.is_error && text(&lax) == "3", "pydantic coerces the string: {lax:?}");
}

async fn resources(servers: &Arc<McpServers>, server: &str) {
    let tools = servers.resource_tools();
    let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(names, [LIST_RESOURCES, READ_RESOURCE]);
    let cancel = CancellationToken::new();
    let listing = tools[0].execute(json!({"server": server}), context(&cancel)).await;
    assert!(!listing.is_error, "{listing:?}");
    let listed = text(&listing);
    assert!(listed.contains(r#""uri":"note://greeting""#), "{listed}");
    assert!(listed.contains(r#""description":"A short note.""#), "{listed}");
    let read = tools[1].execute(json!({"server": server, "uri": "note://greeting"}), context(&cancel)).await;
    assert!(!read.is_error, "{read:?}");
    assert_eq!(text(&read), "[resource note://greeting (text/plain)]\nhello from the SDK");
}

#[tokio::test]
async fn stdio_server_lists_lowered_tools_and_answers_with_structured_content_and_errors() {
    let workspace = tempfile::tempdir().unwrap();
    let Some(config) = stdio(workspace.path(), "py") else { return };
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    assert!(started.rejected.is_empty(), "{:?}", started.rejected);
    let servers = Arc::new(started.servers);
    tools_and_results(&servers, "py").await;
    wrong_types(&servers, "py").await;
    resources(&servers, "py").await;
    let pid = servers.process_id("py").unwrap();
    servers.shutdown().await;
    assert!(!alive(pid), "the SDK's stdio server is gone once shutdown returns");
}

#[tokio::test]
async fn a_session_refuses_a_wrong_argument_type_before_the_server_sees_it() {
    let workspace = tempfile::tempdir().unwrap();
    let Some(config) = stdio(workspace.path(), "py") else { return };
    let servers = support::start(workspace.path(), vec![config]).await.servers;
    let model = ScriptedModel::new()
        .tool_call("mcp__py__add", json!({"a": "two", "b": 1}))
        .tool_call("mcp__py__add", json!({"a": 2, "b": 1}))
        .answer("done");
    let approver = RecordingApprover::approve_all();
    let mut session = Session::builder(model)
        .tools(servers.tools())
        .mode(Mode::Propose)
        .approver(approver.clone())
        .build()
        .await
        .unwrap();
    session.run("add", &mut Vec::new()).await.unwrap();
    let results: Vec<(String, bool)> = session
        .history()
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .map(|m| (m.text(), m.is_error()))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    let (refusal, is_error) = &results[0];
    assert!(is_error, "{results:?}");
    // bosun's words, not pydantic's ("validation error for addArguments").
    assert!(refusal.contains("/a: expected integer, got string"), "{refusal}");
    assert!(!refusal.contains("addArguments"), "{refusal}");
    assert_eq!(results[1], ("3".to_owned(), false));
    assert_eq!(approver.seen().len(), 1, "only the valid call is put to the approver");
    servers.shutdown().await;
}

/// POSTs `initialize` by hand and returns the raw response: what the SDK
/// really sends, so that the HTTP test is known to exercise CRLF framing.
fn raw_initialize(port: u16) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    })
    .to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(support::HANG_GUARD)).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    String::from_utf8(response).unwrap()
}

#[tokio::test]
async fn streamable_http_server_with_crlf_sse_lists_and_answers() {
    let workspace = tempfile::tempdir().unwrap();
    let script = script(workspace.path());
    let Some(http) = PythonSdkHttp::start(Path::new(&script), &["http"]) else { return };
    assert!(http.url().starts_with("http://127.0.0.1:"), "{}", http.url());

    let raw = tokio::task::spawn_blocking({
        let port = http.port();
        move || raw_initialize(port)
    })
    .await
    .unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.to_ascii_lowercase().contains("content-type: text/event-stream"), "{raw}");
    assert!(raw.contains("event: message\r\ndata: {"), "CRLF-framed SSE: {raw:?}");
    assert!(!raw.contains("\nid:"), "no event ids: {raw:?}");

    let config = ServerConfig::new("web", HttpTransport::new(http.url()));
    let started = support::start(workspace.path(), vec![config]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    assert!(started.rejected.is_empty(), "{:?}", started.rejected);
    let servers = Arc::new(started.servers);
    assert_eq!(servers.process_id("web"), None);
    tools_and_results(&servers, "web").await;
    wrong_types(&servers, "web").await;
    resources(&servers, "web").await;
    servers.shutdown().await;

    let pid = http.pid();
    drop(http);
    assert!(!alive(pid), "the HTTP server is killed and reaped on drop");
}
