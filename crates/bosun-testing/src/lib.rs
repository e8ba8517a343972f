//! bosun-testing: test doubles for bosun's own tests and for programs that
//! embed bosun. A [`ScriptedModel`] plays scripted responses and records the
//! requests it got; [`RecordingApprover`] answers approvals from a script;
//! [`FnTool`] makes a tool from a closure; [`FailingSink`] fails on cue;
//! [`TinyModel`] builds a tiny GGUF model whose answers are programmed, for
//! tests of the local engine that need no download. [`Aimock`] runs the real
//! aimock mock-LLM server for tests over HTTP, [`mcp`] finds the MCP
//! reference servers and the Python MCP SDK (and runs them over HTTP), [`conformance`] runs the
//! official MCP conformance suite against a client, and [`skip_or_fail`] is the
//! rule for a test that lacks what it needs: fail, or skip loudly when told.
//! [`http::Server`] is a small loopback HTTP server with routes and a log of
//! requests, for tests of bosun's own HTTP clients; [`botocore`] starts the
//! AWS stand-ins that check signatures with botocore. [`crash`] is the crash
//! harness every durable journal's tests run: a scripted session SIGKILLed
//! at each journal append, tool call and model stream, then resumed and
//! checked.
//!
//! Not for production: nothing here talks to a real model; the only disk
//! access is writing a built GGUF file where the caller says, aimock's
//! fixture file, the MCP server's loopback shim and the crash harness's
//! temporary directories, and the only processes started are aimock, the
//! MCP HTTP servers, the Python SDK's interpreter once to see that it
//! imports the SDK, the conformance suite (which writes its results where
//! the caller says), and the crash harness's children (the calling test
//! executable itself).

pub mod aimock;
mod approver;
pub mod botocore;
pub mod conformance;
pub mod crash;
pub mod escape;
pub mod gguf;
pub mod http;
pub mod mcp;
mod model;
pub mod postgres;
mod sink;
mod skip;
pub mod tier;
mod tools;

pub use aimock::Aimock;
pub use approver::RecordingApprover;
pub use gguf::{Gguf, GgufValue, TinyModel};
pub use model::{RecordedRequest, Reply, ScriptedModel};
pub use sink::FailingSink;
pub use skip::{SKIP_LOG_VARIABLE, skip_or_fail};
pub use tier::{by_tier, full_tier};
pub use tools::FnTool;
