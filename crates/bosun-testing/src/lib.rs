//! bosun-testing: test doubles for bosun's own tests and for programs that
//! embed bosun. A [`ScriptedModel`] plays scripted responses and records the
//! requests it got; [`RecordingApprover`] answers approvals from a script;
//! [`FnTool`] makes a tool from a closure; [`FailingSink`] fails on cue;
//! [`TinyModel`] builds a tiny GGUF model whose answers are programmed, for
//! tests of the local engine that need no download.
//!
//! Not for production: nothing here talks to a real model, and the only disk
//! access is writing a built GGUF file where the caller says.

mod approver;
pub mod gguf;
mod model;
mod sink;
mod tools;

pub use approver::RecordingApprover;
pub use gguf::{Gguf, GgufValue, TinyModel};
pub use model::{RecordedRequest, Reply, ScriptedModel};
pub use sink::FailingSink;
pub use tools::FnTool;
