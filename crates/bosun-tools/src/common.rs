//! What the file tools share: the read ledger, argument parsing, running
//! blocking work off the async executor (and telling it to stop), and
//! result text helpers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bosun_core::ToolOutput;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::access::Via;
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
    /// Where text is read and written besides the disk (an editor).
    pub(crate) access: Option<Arc<dyn crate::FileAccess>>,
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
/// Work that may run long and can stop anywhere (walks, searches) uses
/// [`blocking_stoppable`] instead.
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

/// Set once the call's cancellation token fires (the turn was cancelled or
/// the call timed out). Blocking work that may run long (walks, searches)
/// checks it between files and between buffers of a file and stops early;
/// a plain load, cheap enough for a hot loop.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Whether the work should stop.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Asks the work to stop.
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs stoppable blocking work: `stop` is set when `cancel` fires, and the
/// work is still waited for, so what it returns (a partial result saying it
/// was cancelled) is the call's result.
pub(crate) async fn blocking_stoppable<F>(cancel: CancellationToken, work: F) -> ToolOutput
where
    F: FnOnce(&Stop) -> ToolOutput + Send + 'static,
{
    let stop = Stop::default();
    if cancel.is_cancelled() {
        stop.set();
    }
    let flag = stop.clone();
    let task = blocking(move || work(&flag));
    tokio::pin!(task);
    tokio::select! {
        biased;
        output = &mut task => output,
        () = cancel.cancelled() => {
            stop.set();
            task.await
        }
    }
}

/// The refusal of a change to a file that changed since it was read (by
/// another call or outside bosun): nothing was written, and the file's
/// current content is shown, so the model can make its change again
/// against it. What is shown counts as read, as with `read_file`. Call it
/// while holding the path's lock.
pub(crate) fn stale(shared: &Shared, path: &RelPath, via: Via) -> ToolOutput {
    let head = format!(
        "`{path}` changed since it was read (by another call or outside bosun); nothing was written."
    );
    let file = match shared.load(path, via) {
        Ok(file) => file,
        Err(WorkspaceError::NotFound { .. }) => {
            shared.ledger.forget(path);
            return ToolOutput::error(format!("{head} It no longer exists."));
        }
        Err(error) => {
            return ToolOutput::error(format!("{head} Its current content cannot be shown: {error}"));
        }
    };
    shared.ledger.record(path, file.identity.clone());
    let size = file.bytes.len();
    let text = match String::from_utf8(file.bytes) {
        Ok(text) if !text.contains('\0') => text,
        _ => return ToolOutput::error(format!("{head} It now holds {size} bytes that are not text.")),
    };
    let mut shown = format!("{head} Its current content follows; make the change against it.\n");
    if text.is_empty() {
        shown.push_str("(empty file)\n");
    }
    let max = shared.limits.max_output_bytes;
    for (index, line) in text.lines().enumerate() {
        let entry = format!("{:>6}\t{line}\n", index + 1);
        if shown.len() + entry.len() > max {
            shown.push_str(&format!("[content cut at line {index}; read the rest with read_file]"));
            break;
        }
        shown.push_str(&entry);
    }
    ToolOutput::error(shown)
}

/// A refusal or failure, as the model sees it.
pub(crate) fn refuse(error: WorkspaceError) -> ToolOutput {
    ToolOutput::error(error.to_string())
}

/// Keeps `text` within `max` bytes, cutting at a line end where possible,
/// and says so (`[WHAT cut at MAX bytes of LEN]`). Also the web tools' bound
/// (`bosun_tools::limits::cap`).
pub fn cap(text: String, max: usize, what: &str) -> String {
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
