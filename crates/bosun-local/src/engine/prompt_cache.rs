//! The prompt cache on disk: the KV cache of a model's latest long prompt,
//! saved so the next process that loads the same file starts from it. A
//! command-line agent is a new process per command, and every command's
//! prompt opens with the same system prompt and tool list (about 1,500
//! tokens, 8 s of prompt processing for a 0.5B model on two cores); with the
//! cache, only what follows them is processed.
//!
//! One file per model file, named by the model's identity (path, size and
//! modification time) and the context size, so weights that changed never
//! meet an old cache. Written to a temporary name and renamed, so a reader
//! never sees half a file; a file llama.cpp refuses is deleted and ignored.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Prompt tokens a request must have decoded (not reused) before its cache
/// is saved: smaller gains are not worth the write.
pub(crate) const SAVE_AFTER: usize = 256;

/// The cache file for the model at `model` with a context of `n_ctx`, in `dir`.
pub(crate) fn file_for(dir: &Path, model: &Path, n_ctx: u32) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let canonical = std::fs::canonicalize(model).unwrap_or_else(|_| model.to_owned());
    canonical.hash(&mut hasher);
    if let Ok(metadata) = std::fs::metadata(model) {
        metadata.len().hash(&mut hasher);
        metadata.modified().ok().hash(&mut hasher);
    }
    n_ctx.hash(&mut hasher);
    let stem = model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!("{stem}-{:016x}.kv", hasher.finish()))
}

/// A temporary name next to `file`, unique to this process.
pub(crate) fn temporary(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(name)
}
