//! bosun-mcp's integration tests, in one binary: a module per area (the
//! reference everything and filesystem servers, the official Python SDK, a
//! hand-written Python server, lifecycle and restarts, resources, sampling,
//! sessions, stored OAuth tokens), with their shared `support` module (the
//! servers' configs, an event log to wait on, call helpers).
//!
//! Run one area with `cargo test -p bosun-mcp --test it <module>::`.

mod support;

mod everything;
mod filesystem;
mod lifecycle;
mod oauth;
mod python;
mod python_sdk;
mod resources;
mod restart;
mod sampling;
mod session;
