//! The assembled bosun agent, for every front end: the `bosun` command,
//! `serve`, ACP and any program that embeds bosun.
//!
//! [`config`] reads the layered configuration (user file, project file
//! behind the trust gate, profiles, environment, flags) into [`config::Settings`].
//! [`mcp_login`] logs in to and out of an MCP server over OAuth, the front
//! end showing the URL; [`mcp_conformance`] is the client the MCP
//! conformance suite drives.

mod agent;
pub mod attach;
pub mod children;
pub mod clouds;
pub mod config;
pub mod credential_sandbox;
pub mod error;
pub mod examples;
pub mod hints;
pub mod instructions;
pub mod json_events;
pub mod mcp;
pub mod mcp_conformance;
pub mod mcp_login;
pub mod model;
mod notice;
pub mod output_schema;
pub mod parts;
pub mod rewind;
pub mod sampling;
pub mod sandboxing;
pub mod shared;
pub mod stored;
pub mod warm;
pub mod workspace_guard;

pub use agent::{Agent, AgentBuilder, StoredSession};
pub use bosun_tools::{FileAccess, OutputEcho, ShellCall, ShellRunner};
pub use error::{Error, Result};
pub use notice::{Notice, Notices};

/// The README's examples, compiled (and run, unless marked `no_run`) as
/// doctests here, where every library crate they name is a dependency.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
