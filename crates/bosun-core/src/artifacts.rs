//! Artifacts: a session's store of tool outputs too large to show whole.
//! When a result passes the tool output bound, the session keeps the whole
//! text as an artifact (durable before the result that names it is
//! journaled) and the model sees the head and tail with the artifact's id;
//! the `read_artifact` tool ([`ReadArtifact`]) pages through it. The store
//! is the embedder's: [`InMemoryArtifacts`] here, the SQLite store in the
//! CLI. A sub-agent is given its parent's store, so it reads the parent's
//! artifacts by id.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::tool::{Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};

/// The future an [`Artifacts`] method returns.
pub type ArtifactFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ArtifactError>> + Send + 'a>>;

/// Most bytes one `read_artifact` call returns.
pub const ARTIFACT_PAGE: usize = 32 * 1024;

/// A store that could not keep or read an artifact.
#[derive(Debug, Clone, thiserror::Error)]
#[error("artifacts: {0}")]
pub struct ArtifactError(pub String);

/// Where a session keeps whole outputs.
pub trait Artifacts: Send + Sync {
    /// Keeps `text` whole; resolves with its id once it is durable.
    fn put<'a>(&'a self, text: &'a str) -> ArtifactFuture<'a, String>;

    /// The text kept under `id`, when this store holds it.
    fn get<'a>(&'a self, id: &'a str) -> ArtifactFuture<'a, Option<String>>;
}

/// Artifacts in memory, shared by clones (a parent and its sub-agents).
#[derive(Clone, Debug, Default)]
pub struct InMemoryArtifacts {
    texts: Arc<Mutex<HashMap<String, Arc<str>>>>,
}

impl InMemoryArtifacts {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many artifacts it holds.
    pub fn len(&self) -> usize {
        self.texts.lock().map(|t| t.len()).unwrap_or_default()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Artifacts for InMemoryArtifacts {
    fn put<'a>(&'a self, text: &'a str) -> ArtifactFuture<'a, String> {
        let id = uuid::Uuid::now_v7().to_string();
        let kept = self
            .texts
            .lock()
            .map(|mut texts| {
                texts.insert(id.clone(), Arc::from(text));
            })
            .map_err(|_| ArtifactError("the store's lock is poisoned".into()));
        Box::pin(std::future::ready(kept.map(|()| id)))
    }

    fn get<'a>(&'a self, id: &'a str) -> ArtifactFuture<'a, Option<String>> {
        let text = self
            .texts
            .lock()
            .map(|texts| texts.get(id).map(|t| t.to_string()))
            .map_err(|_| ArtifactError("the store's lock is poisoned".into()));
        Box::pin(std::future::ready(text))
    }
}

/// The line a shortened result ends with, naming the artifact.
pub(crate) fn artifact_note(id: &str, bytes: usize) -> String {
    format!(
        "\n[bosun: the whole output ({bytes} bytes) is kept as artifact {id}; read_artifact with this id and an \
         offset reads it in pages of {ARTIFACT_PAGE} bytes]"
    )
}

/// `read_artifact{id, offset?}`: a page of an artifact.
#[derive(Clone)]
pub struct ReadArtifact {
    definition: ToolDefinition,
    store: Arc<dyn Artifacts>,
}

impl std::fmt::Debug for ReadArtifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadArtifact").finish_non_exhaustive()
    }
}

impl ReadArtifact {
    /// The tool's name.
    pub const NAME: &'static str = "read_artifact";

    /// Reads from `store`.
    pub fn new(store: Arc<dyn Artifacts>) -> Self {
        let definition = ToolDefinition::new(
            Self::NAME,
            format!(
                "Read a tool output that was too long to show whole, by the artifact id its shortened result \
                 names. Returns up to {ARTIFACT_PAGE} bytes from `offset` (default 0) and the offset to read \
                 next."
            ),
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The artifact id."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        );
        Self { definition, store }
    }
}

impl Tool for ReadArtifact {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let id = arguments["id"].as_str().unwrap_or_default().to_owned();
            let offset = arguments["offset"].as_u64().unwrap_or(0) as usize;
            match self.store.get(&id).await {
                Ok(Some(text)) => ToolOutput::text(page(&text, offset)),
                Ok(None) => ToolOutput::error(format!("no artifact {id} in this session")),
                Err(error) => ToolOutput::error(error.to_string()),
            }
        })
    }
}

/// Up to [`ARTIFACT_PAGE`] bytes of `text` from `offset`, cut at character
/// boundaries, with where the next page starts.
fn page(text: &str, offset: usize) -> String {
    if offset >= text.len() {
        return format!("[offset {offset} is at or past the end ({} bytes)]", text.len());
    }
    let start = (0..=offset).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let mut end = (start + ARTIFACT_PAGE).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text[start..end].to_owned();
    if end < text.len() {
        out.push_str(&format!("\n[bytes {start}..{end} of {}; next offset {end}]", text.len()));
    } else {
        out.push_str(&format!("\n[bytes {start}..{end} of {}; the end]", text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cut_at_character_boundaries_and_say_where_to_go_on() {
        let text = "é".repeat(ARTIFACT_PAGE); // two bytes each
        let first = page(&text, 0);
        assert!(first.ends_with(&format!("next offset {ARTIFACT_PAGE}]")), "{}", &first[first.len() - 60..]);
        // An offset inside a character starts at that character.
        let inside = page(&text, 1);
        assert!(inside.starts_with('é'));
        let last = page(&text, 2 * ARTIFACT_PAGE - 2);
        assert!(last.starts_with("é\n[bytes") && last.ends_with("the end]"), "{last}");
        assert!(page(&text, 10 * ARTIFACT_PAGE).contains("past the end"));
    }
}
