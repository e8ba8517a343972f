//! `bosun mcp-server` driven by bosun's own MCP client (rmcp underneath):
//! the real binary started over stdio, a task run in an allowed folder
//! against aimock, a follow-up by session id, approvals asked of the client
//! through elicitation (answered both ways), and the folder rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod delegate;
