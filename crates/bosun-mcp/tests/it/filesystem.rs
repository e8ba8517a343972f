//! Against the real filesystem server (npm
//! `@modelcontextprotocol/server-filesystem`): results carrying
//! `structuredContent`, its errors, trusted annotations.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use bosun_core::ToolCategory;
use bosun_mcp::{ServerConfig, StdioTransport};
use serde_json::json;
use support::{call, text, tool};

fn filesystem(allowed: &std::path::Path) -> Option<ServerConfig> {
    let entry = bosun_testing::mcp::filesystem_server()?;
    let stdio =
        StdioTransport::new("node").arg(entry.display().to_string()).arg(allowed.display().to_string());
    Some(ServerConfig::new("fs", stdio))
}

#[tokio::test]
async fn structured_content_that_repeats_the_text_is_not_shown_twice() {
    let workspace = tempfile::tempdir().unwrap();
    let Some(config) = filesystem(workspace.path()) else { return };
    std::fs::write(workspace.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    let started = support::start(workspace.path(), vec![config.with_trust_annotations(true)]).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    assert!(started.rejected.is_empty(), "{:?}", started.rejected);
    let servers = started.servers;

    let path = workspace.path().join("notes.txt").display().to_string();
    let read = call(&servers, "mcp__fs__read_text_file", json!({"path": path})).await;
    assert!(!read.is_error, "{read:?}");
    assert_eq!(read.content.len(), 1, "one text part: the structured copy is left out: {read:?}");
    assert_eq!(text(&read), "first line\nsecond line\n");

    let listed = call(&servers, "mcp__fs__list_directory", json!({"path": workspace.path()})).await;
    assert_eq!(text(&listed), "[FILE] notes.txt");

    let outside = call(&servers, "mcp__fs__read_text_file", json!({"path": "/etc/hostname"})).await;
    assert!(outside.is_error);
    assert!(text(&outside).contains("Access denied"), "{}", text(&outside));

    assert_eq!(tool(&servers, "mcp__fs__read_text_file").category(), ToolCategory::Read);
    assert_eq!(tool(&servers, "mcp__fs__write_file").category(), ToolCategory::External);
    servers.shutdown().await;
}
