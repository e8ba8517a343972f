//! What the file tools share: the read ledger, argument parsing, running
//! blocking work off the async executor, and result text helpers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bosun_core::{ToolContext, ToolOutput};
use serde::de::DeserializeOwned;

use crate::limits::ToolLimits;
use crate::workspace::{FileIdentity, RelPath, Workspace, WorkspaceError};

/// Files read in this session and who they were at the time, so a replace
/// can check it is replacing what the model saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ledger(Arc<Mutex<HashMap<RelPath, FileIdentity>>>);

impl Ledger {
    pub(crate) fn record(&self, path: &RelPath, identity: FileIdentity) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(path.clone(), identity);
        }
    }

    pub(crate) fn get(&self, path: &RelPath) -> Option<FileIdentity> {
        self.0.lock().ok().and_then(|map| map.get(path).cloned())
    }

    pub(crate) fn forget(&self, path: &RelPath) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(path);
        }
    }
}

/// What every file tool holds.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    pub(crate) workspace: Workspace,
    pub(crate) limits: ToolLimits,
    pub(crate) ledger: Ledger,
}

/// Parses arguments the session already validated against the schema; a
/// failure here means the tool was called directly with a bad object.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &str,
    arguments: serde_json::Value,
) -> Result<T, ToolOutput> {
    serde_json::from_value(arguments)
        .map_err(|e| ToolOutput::error(format!("invalid arguments for `{tool}`: {e}")))
}

/// Runs blocking file work on tokio's blocking pool and waits for it. The
/// work always runs to completion: the file tools are finish-once-started,
/// so a cancelled turn still waits here and no write is left half done.
pub(crate) async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(output) => output,
        Err(error) if error.is_panic() => {
            ToolOutput::error("the tool failed unexpectedly (a panic in file I/O)")
        }
        Err(_) => ToolOutput::error("the tool was stopped before it finished"),
    }
}

/// A refusal or failure, as the model sees it.
pub(crate) fn refuse(error: WorkspaceError) -> ToolOutput {
    ToolOutput::error(error.to_string())
}

/// Keeps `text` within `max` bytes, cutting at a line end where possible,
/// and says so.
pub(crate) fn cap(text: String, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut_at = text[..end].rfind('\n').map(|i| i + 1).unwrap_or(end);
    format!("{}[{what} cut at {max} bytes of {}]", &text[..cut_at], text.len())
}

/// The context is unused by most file tools; naming it keeps signatures
/// uniform.
pub(crate) type Context = ToolContext;
