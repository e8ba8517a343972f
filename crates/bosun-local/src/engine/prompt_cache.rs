//! The prompt cache on disk: the KV cache of a model's latest long prompt,
//! saved so the next process that loads the same file starts from it. A
//! command-line agent is a new process per command, and every command's
//! prompt opens with the same system prompt and tool list (about 1,500
//! tokens, 8 s of prompt processing for a 0.5B model on two cores); with the
//! cache, only what follows them is processed.
//!
//! Files are named by the model file's stem and a hash of its identity
//! (path, size and modification time) and the context size, so weights that
//! changed never meet an old cache; saving removes the model's caches of
//! other identities, so there is about one per model file. Written to a temporary name and renamed, so a reader
//! never sees half a file; a file llama.cpp refuses is deleted and ignored.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Prompt tokens a request must have decoded (not reused) before its cache
/// is saved: smaller gains are not worth the write.
pub(crate) const SAVE_AFTER: usize = 256;

/// The cache file for the model at `model` with a context of `n_ctx`, in `dir`.
pub(crate) fn file_for(dir: &Path, model: &Path, n_ctx: u32) -> PathBuf {
    dir.join(format!("{}-{:016x}.kv", stem(model), identity(model, n_ctx)))
}

fn identity(model: &Path, n_ctx: u32) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let canonical = std::fs::canonicalize(model).unwrap_or_else(|_| model.to_owned());
    canonical.hash(&mut hasher);
    if let Ok(metadata) = std::fs::metadata(model) {
        metadata.len().hash(&mut hasher);
        metadata.modified().ok().hash(&mut hasher);
    }
    n_ctx.hash(&mut hasher);
    hasher.finish()
}

fn stem(model: &Path) -> String {
    model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether `name` is the name of a cache file of the model whose stem is `stem`.
fn is_cache_of(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.strip_suffix(".kv"))
        .is_some_and(|hash| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The prompt caches in `dir` of the model file `model` (any identity, any
/// context size), sorted; none when `dir` is missing or unreadable.
pub fn prompt_caches(dir: &Path, model: &Path) -> Vec<PathBuf> {
    let stem = stem(model);
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.file_name().is_some_and(|name| is_cache_of(&name.to_string_lossy(), &stem)))
        .collect();
    found.sort();
    found
}

/// Removes the prompt caches in `dir` of the model file `model` (any
/// identity, any context size) but `keep`; returns the files removed.
///
/// # Errors
/// When `dir` exists but cannot be read, or a cache cannot be removed.
pub fn remove_prompt_caches(dir: &Path, model: &Path, keep: Option<&Path>) -> std::io::Result<Vec<PathBuf>> {
    let stem = stem(model);
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let ours = path.file_name().is_some_and(|name| is_cache_of(&name.to_string_lossy(), &stem));
        if ours && Some(path.as_path()) != keep {
            std::fs::remove_file(&path)?;
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

/// A temporary name next to `file`, unique to this process.
pub(crate) fn temporary(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_names_are_recognised_exactly() {
        assert!(is_cache_of("qwen-0123456789abcdef.kv", "qwen"));
        assert!(!is_cache_of("qwen-big-0123456789abcdef.kv", "qwen"));
        assert!(!is_cache_of("qwen-0123456789abcde.kv", "qwen"));
        assert!(!is_cache_of("qwen-0123456789abcdef.kv.tmp-7", "qwen"));
        assert!(!is_cache_of("qwen.gguf", "qwen"));
    }

    #[test]
    fn removing_keeps_the_named_file_and_other_models() {
        let dir = std::env::temp_dir().join(format!("bosun-prompt-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = Path::new("/models/qwen.gguf");
        let names = ["qwen-0000000000000001.kv", "qwen-0000000000000002.kv", "other-0000000000000001.kv"];
        for name in names {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        let keep = dir.join(names[1]);
        assert_eq!(prompt_caches(&dir, model), [dir.join(names[0]), keep.clone()]);
        let removed = remove_prompt_caches(&dir, model, Some(&keep)).unwrap();
        assert_eq!(removed, [dir.join(names[0])]);
        assert!(keep.is_file() && dir.join(names[2]).is_file());
        assert_eq!(remove_prompt_caches(&dir, model, None).unwrap(), [keep]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(remove_prompt_caches(&dir, model, None).unwrap().is_empty(), "a missing directory is empty");
    }
}
