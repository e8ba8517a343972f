//! Shared helpers for bosun-core's integration tests.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use bosun_core::{Event, Message, ToolCategory, ToolOutput};
use bosun_testing::FnTool;
use serde_json::Value;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Concatenated text deltas.
pub fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Concatenated reasoning deltas.
pub fn streamed_reasoning(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The `type` tag of each event.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e)
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect()
}

/// A write tool that answers "wrote".
pub fn write_tool(name: &str) -> FnTool {
    FnTool::text(name, ToolCategory::Write, |_| "wrote".into())
}

/// An execute tool that answers "ran".
pub fn exec_tool(name: &str) -> FnTool {
    FnTool::text(name, ToolCategory::Execute, |_| "ran".into())
}

/// Text of the tool result at `index` among the tool results of `history`.
pub fn tool_result(history: &[Message], index: usize) -> (String, bool) {
    history
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .nth(index)
        .map(|m| (m.text(), m.is_error()))
        .unwrap_or_default()
}

/// A shared, ordered log of what happened, for ordering assertions.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A tool that logs its start and end.
pub fn logging_tool(name: &str, category: ToolCategory, log: &Log) -> FnTool {
    let log = log.clone();
    let tool_name = name.to_owned();
    FnTool::new(name, category, move |_args: Value, _| {
        let log = log.clone();
        let tool_name = tool_name.clone();
        Box::pin(async move {
            log.push(format!("tool start {tool_name}"));
            tokio::task::yield_now().await;
            log.push(format!("tool end {tool_name}"));
            ToolOutput::text("ok")
        })
    })
}
