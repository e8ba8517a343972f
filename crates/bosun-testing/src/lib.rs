//! bosun-testing: test doubles for bosun's own tests and for programs that
//! embed bosun. A [`ScriptedModel`] plays scripted responses and records the
//! requests it got; [`RecordingApprover`] answers approvals from a script;
//! [`FnTool`] makes a tool from a closure; [`FailingSink`] fails on cue.
//!
//! Not for production: nothing here talks to a real model or touches disk.

mod approver;
mod model;
mod sink;
mod tools;

pub use approver::RecordingApprover;
pub use model::{RecordedRequest, Reply, ScriptedModel};
pub use sink::FailingSink;
pub use tools::FnTool;
