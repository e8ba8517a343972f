//! bosun-mcp: the MCP client. [`McpServers::start`] starts the configured
//! servers ([`ServerConfig`]: a child process on stdio, or a Streamable HTTP
//! endpoint) in parallel and offers each of their tools as a
//! [`bosun_core::Tool`] named `mcp__SERVER__TOOL`, whose input schema is
//! lowered into bosun's bounded vocabulary and whose results are mapped onto
//! bosun's content parts, bounded.
//!
//! A stdio server runs in a cleared environment ([`ParentEnv`]: `PATH`,
//! `HOME`, the locale, and only what its config adds), in its own process
//! group, killed by the kernel if bosun dies, and shut down with the
//! sequence the spec asks for: stdin closed, `SIGTERM`, `SIGKILL`, to the
//! whole group. MCP tools have the category `External` (they ask unless the
//! mode is autonomous) unless the config trusts the server's `readOnlyHint`.
//! When a server says its tool list changed, [`McpServers::refresh`] applies
//! the difference between rounds.
//!
//! Built on the official Rust SDK, `rmcp`, which stays an implementation
//! detail: no rmcp type is part of this API.
//!
//! Servers' resources are offered by [`McpServers::resource_tools`]: one
//! tool that lists them and one that reads one. Sampling is advertised only
//! to servers whose config sets [`ServerConfig::sampling`], and answered by
//! the [`Sampler`] of [`StartOptions`] (refused by default).
//!
//! A Streamable HTTP server may ask for OAuth ([`OAuthConfig`]): stored
//! tokens are sent and refreshed, and a server's `401` or `403` challenge is
//! answered by an authorization (PKCE, metadata discovery, registration)
//! that an [`Authorizer`] has the person complete.
//!
//! A server's request for input is handed to an [`Elicitor`]; [`form`]
//! reads a requested schema into fields and checks the answers, for any
//! front end to render.
//!
//! Not here: configuration files and the `bosun mcp` commands (the CLI's),
//! prompts.
//!
//! ```no_run
//! # async fn example() {
//! use bosun_mcp::{McpServers, ParentEnv, ServerConfig, StartOptions, StdioTransport};
//!
//! let fs = StdioTransport::new("npx").args(["-y", "@modelcontextprotocol/server-filesystem", "."]);
//! let options = StartOptions::new("/path/to/workspace", ParentEnv::from_process());
//! let started = McpServers::start(vec![ServerConfig::new("fs", fs)], options).await;
//! for failure in &started.failures {
//!     eprintln!("{failure}");
//! }
//! let tools = started.servers.tools(); // hand these to the SessionBuilder
//! # let _ = tools;
//! started.servers.shutdown().await;
//! # }
//! ```
#![deny(missing_docs)]

mod auth;
mod auth_http;
mod auth_store;
mod catalog;
mod client;
mod config;
mod connect;
mod elicit;
mod env;
mod error;
mod events;
pub mod form;
mod names;
mod process;
mod resources;
mod result;
mod sampling;
mod secret;
mod server;
mod servers;
mod source;
mod stdout;
mod tls;
mod tool;

pub use auth::{
    Authorization, AuthorizationResponse, AuthorizeFuture, Authorizer, MAX_AUTHORIZATIONS, OAuthConfig,
};
pub use auth_store::remove_token_file;
pub use config::{HttpTransport, Secret, ServerConfig, ServerSandbox, StdioTransport, Transport};
pub use elicit::{
    AcceptDefaults, DECLINED, DeclineAll, ElicitFuture, ElicitationKind, ElicitationRequest,
    ElicitationResponse, Elicitor, schema_defaults,
};
pub use env::ParentEnv;
pub use error::{ServerError, ToolRejection};
pub use events::{EventHook, ServerEvent};
pub use names::{MAX_NAME, tool_name};
pub use resources::{LIST_RESOURCES, MAX_RESOURCE_PAGES, READ_RESOURCE};
pub use result::{MAX_IMAGES, MAX_TEXT};
pub use sampling::{
    MAX_SAMPLING_MESSAGES, MAX_SAMPLING_TEXT, MAX_SAMPLING_TOKENS, REFUSED, RefuseSampling, SampleFuture,
    Sampler, SamplingRefused, SamplingRequest, SamplingResponse, complete,
};
pub use servers::{McpServers, StartOptions, Started, ToolListChange};
pub use source::RESTART_BACKOFF;
