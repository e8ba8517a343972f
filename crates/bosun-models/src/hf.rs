//! Any GGUF on the Hugging Face Hub, named as Ollama and llama.cpp name it:
//! `hf:OWNER/REPO[@REVISION]/[SUBDIR/]FILE.gguf`. The hub is asked for the
//! file's Git LFS object id (`POST /api/models/OWNER/REPO/paths-info/REV`,
//! as `huggingface_hub` asks), which is the sha256 of its bytes; the file is
//! then downloaded from `/OWNER/REPO/resolve/REV/PATH` through the same
//! resumable [`fetch::download`] as the known models, and takes its name only
//! once its size and sha256 match. A file the hub keeps outside LFS has no
//! sha256 to check and is refused.
//!
//! Everything the hub says is checked: the reference's parts are plain names
//! (the local file name is its last part: a `.gguf`, no separators), the
//! answer must be about the path asked for, sizes must agree and the oid must
//! be a sha256. `HF_TOKEN` goes to the hub endpoint only: its redirects to a
//! CDN on another host do not carry it (reqwest drops `Authorization` on a
//! cross-origin redirect; `hf_tests.rs` checks it).

use std::fmt;
use std::path::{Path, PathBuf};

use bosun_core::env::Env;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Url};
use serde::Deserialize;

use crate::error::{Context, Error, Result, bail, fail};
use crate::fetch::human;
use crate::fetch::{self, Expected, Progress};
use crate::source::{self, Record};

/// The public hub.
pub const ENDPOINT: &str = "https://huggingface.co";

/// The revision when a reference names none.
pub const DEFAULT_REVISION: &str = "main";

/// Largest paths-info answer read: one entry is a few hundred bytes.
const MAX_INFO_BYTES: usize = 256 * 1024;

/// Most directories a file may sit under in its repository.
const MAX_DEPTH: usize = 8;

/// A file on the hub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HfRef {
    /// The user or organisation.
    pub owner: String,
    /// The repository.
    pub repo: String,
    /// The branch, tag or commit, when the reference names one.
    pub revision: Option<String>,
    /// The file's path in the repository, `/`-separated.
    pub path: String,
}

impl HfRef {
    /// Parses `hf:OWNER/REPO[@REVISION]/[SUBDIR/]FILE.gguf`, refusing any part
    /// that is not a plain name (no `..`, no `.`-names, no backslashes or
    /// other characters a file name should not hold).
    pub fn parse(text: &str) -> Result<Self> {
        let shape = "hf:OWNER/REPO[@REVISION]/FILE.gguf";
        let Some(rest) = text.strip_prefix("hf:") else {
            bail!("`{text}` is not {shape}");
        };
        let mut parts = rest.split('/');
        let (Some(owner), Some(repo_rev)) = (parts.next(), parts.next()) else {
            bail!("`{text}` is not {shape}");
        };
        let path: Vec<&str> = parts.collect();
        if path.is_empty() {
            bail!("`{text}` names no file: use {shape}");
        }
        if path.len() > MAX_DEPTH + 1 {
            bail!("`{text}`: the file is more than {MAX_DEPTH} directories deep");
        }
        let (repo, revision) = match repo_rev.split_once('@') {
            Some((repo, revision)) => (repo, Some(revision)),
            None => (repo_rev, None),
        };
        plain(owner, "owner", text)?;
        plain(repo, "repository", text)?;
        if let Some(revision) = revision {
            plain(revision, "revision", text)?;
        }
        for part in &path {
            plain(part, "path", text)?;
        }
        let file = path.last().copied().unwrap_or_default();
        if !file.ends_with(".gguf") || file.len() == ".gguf".len() {
            bail!("`{text}`: `{file}` is not a .gguf file");
        }
        Ok(Self {
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            revision: revision.map(str::to_owned),
            path: path.join("/"),
        })
    }

    /// The revision asked for (default `main`).
    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(DEFAULT_REVISION)
    }

    /// The file name it gets in the models directory: the last part of its path.
    pub fn file(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// `OWNER/REPO`.
    pub fn repo_id(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// Whether `record` (a pulled file's sidecar) is this file: the same
    /// repository (the hub ignores case in its names) and path, and the same
    /// revision when this reference names one.
    pub fn matches(&self, record: &Record) -> bool {
        self.same_file(record) && self.revision.as_deref().is_none_or(|revision| revision == record.revision)
    }

    /// Whether `record` is this file at any revision.
    pub fn same_file(&self, record: &Record) -> bool {
        record.repo.eq_ignore_ascii_case(&self.repo_id()) && record.path == self.path
    }
}

impl fmt::Display for HfRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.revision {
            Some(revision) => write!(f, "hf:{}/{}@{revision}/{}", self.owner, self.repo, self.path),
            None => write!(f, "hf:{}/{}/{}", self.owner, self.repo, self.path),
        }
    }
}

/// One part of a reference: ASCII letters, digits and `-_.+`, not starting
/// with `.` (so neither `.` nor `..`), at most 255 bytes. Stricter than the
/// hub, so that no part can climb out of a directory, hide, or be read
/// differently by a URL, a shell or a terminal.
fn plain(part: &str, what: &str, text: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+');
    if part.is_empty() {
        bail!("`{text}`: the {what} is empty");
    }
    if part.starts_with('.') || part.len() > 255 || !part.chars().all(allowed) {
        bail!(
            "`{text}`: the {what} part `{part}` is refused: use letters, digits and `-_.+`, not starting with `.`"
        );
    }
    Ok(())
}

/// Where the hub is and how bosun identifies itself to it.
#[derive(Clone)]
pub struct Hub {
    endpoint: Url,
    token: Option<String>,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("endpoint", &self.endpoint.as_str())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Hub {
    /// `HF_ENDPOINT` (default: the public hub) and `HF_TOKEN`, as `huggingface_hub` reads them.
    pub fn from_env(env: &Env) -> Result<Self> {
        let text = env.get("HF_ENDPOINT").unwrap_or(ENDPOINT);
        let endpoint = crate::url::http_url("HF_ENDPOINT", text)?;
        if endpoint.cannot_be_a_base() || endpoint.query().is_some() {
            bail!("HF_ENDPOINT=`{text}` must be a plain base URL");
        }
        Ok(Self { endpoint, token: env.get("HF_TOKEN").map(str::to_owned) })
    }

    /// The client for the hub: the token, when set, as a bearer on every
    /// request it starts (all of them at the endpoint), marked sensitive so
    /// that no debug output shows it.
    fn client(&self) -> Result<Client> {
        let mut headers = HeaderMap::new();
        if let Some(token) = &self.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| fail!(Invalid: "HF_TOKEN holds characters an HTTP header cannot carry"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        fetch::client_builder().default_headers(headers).build().map_err(Error::Client)
    }

    /// The endpoint URL with `segments` appended, each escaped as a path segment.
    fn url(&self, segments: &[&str]) -> Result<Url> {
        let mut url = self.endpoint.clone();
        url.path_segments_mut()
            .map_err(|()| fail!(Invalid: "HF_ENDPOINT cannot take a path"))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// Where the file's bytes are served.
    pub fn resolve_url(&self, file: &HfRef) -> Result<Url> {
        let mut segments = vec![file.owner.as_str(), file.repo.as_str(), "resolve", file.revision()];
        segments.extend(file.path.split('/'));
        self.url(&segments)
    }

    /// The size and sha256 the hub reports for `file`, checked.
    pub(crate) async fn pin(&self, client: &Client, file: &HfRef) -> Result<Pin> {
        let url = self.url(&["api", "models", &file.owner, &file.repo, "paths-info", file.revision()])?;
        let body = serde_json::json!({ "paths": [file.path] }).to_string();
        let mut response = client
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|error| fail!(Download: "cannot reach {url}: {}", fetch::cause(&error)))?;
        let status = response.status();
        if matches!(status.as_u16(), 401 | 403) {
            let hint = if self.token.is_some() {
                "HF_TOKEN is set but does not give access (accept the model's terms on its page?)"
            } else {
                "a gated or private repository needs HF_TOKEN"
            };
            bail!(Hub: "the hub refused {} ({status}): {hint}", file.repo_id());
        }
        if status.as_u16() == 404 {
            bail!(Hub: "the hub has no repository {} at revision {} ({status})", file.repo_id(), file.revision());
        }
        if !status.is_success() {
            bail!(Download: "{url} answered {status}");
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| fail!(Download: "cannot read {url}: {}", fetch::cause(&error)))?
        {
            if bytes.len() + chunk.len() > MAX_INFO_BYTES {
                bail!(Hub: "{url} answered more than {} KiB; refusing it", MAX_INFO_BYTES / 1024);
            }
            bytes.extend_from_slice(&chunk);
        }
        let entries: Vec<PathInfo> = serde_json::from_slice(&bytes)
            .with_context(|| format!("{url} did not answer a list of paths"))?;
        pin_from(file, entries)
    }
}

/// One entry of a paths-info answer; other fields are ignored.
#[derive(Debug, Deserialize)]
struct PathInfo {
    #[serde(rename = "type")]
    kind: Option<String>,
    path: String,
    size: Option<u64>,
    lfs: Option<Lfs>,
}

#[derive(Debug, Deserialize)]
struct Lfs {
    oid: String,
    size: u64,
}

/// What a file from the hub must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pin {
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256 (the LFS oid), lowercase hex.
    pub sha256: String,
}

/// The pin in a paths-info answer, which must be about `file` itself.
fn pin_from(file: &HfRef, entries: Vec<PathInfo>) -> Result<Pin> {
    let Some(entry) = entries.into_iter().find(|entry| entry.path == file.path) else {
        bail!(Hub: "the hub lists no file `{}` in {} at revision {}", file.path, file.repo_id(), file.revision());
    };
    if entry.kind.as_deref().is_some_and(|kind| kind != "file") {
        bail!(Hub: "`{}` in {} is not a file", file.path, file.repo_id());
    }
    let Some(lfs) = entry.lfs else {
        bail!(Hub:
            "the hub reports no sha256 for `{}` in {}: it is not stored with Git LFS, so there is nothing to \
             check the download against; refusing it",
            file.path,
            file.repo_id()
        );
    };
    let sha256 = lfs.oid.to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(Hub: "the hub's LFS oid for `{}` is not a sha256; refusing it", file.path);
    }
    if entry.size.is_some_and(|size| size != lfs.size) {
        bail!(Hub:
            "the hub reports two sizes for `{}` ({:?} and {}); refusing it",
            file.path,
            entry.size,
            lfs.size
        );
    }
    if lfs.size == 0 {
        bail!(Hub: "the hub reports `{}` as empty; refusing it", file.path);
    }
    Ok(Pin { size: lfs.size, sha256 })
}

/// Fetches `file` from the hub into `dir` and returns its path: already
/// there and checked, or downloaded (resuming a `.part`), checked against
/// the hub's sha256 and size, renamed into place, with its sidecar record.
pub async fn pull(file: &HfRef, hub: &Hub, dir: &Path, progress: &Progress) -> Result<PathBuf> {
    let name = file.file();
    tokio::fs::create_dir_all(dir).await.with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = fetch::lock(dir, progress).await?;
    let client = hub.client()?;
    let pin = hub.pin(&client, file).await?;
    progress.note(&format!(
        "{file}: {} at revision {}, sha256 {} (the hub's LFS oid)",
        human(pin.size),
        file.revision(),
        pin.sha256
    ));
    let target = dir.join(name);
    let expected = Expected { file: name, size: pin.size, sha256: &pin.sha256 };
    if tokio::fs::metadata(&target).await.is_ok() {
        match fetch::verify(&target, Some(pin.size), &pin.sha256, progress).await {
            Ok(()) => {
                progress.note(&format!("{} is present and checks out", target.display()));
                record(dir, file, &pin)?;
                return Ok(target);
            }
            // Ours, but another revision or damaged: replaced once the new one checks out.
            Err(_) if source::read(dir, name).is_some_and(|old| file.same_file(&old)) => {
                let shown = target.display();
                progress.note(&format!("{shown} is another revision of {file}, or damaged; fetching it"));
            }
            Err(error) => {
                return Err(error.context(format!(
                    "{} is already there and is not {file}; remove it (`bosun models rm {name}`) to pull this one",
                    target.display()
                )));
            }
        }
    }
    let part = fetch::partial_path(dir, name);
    let url = hub.resolve_url(file)?;
    progress.note(&format!("fetching {url}"));
    fetch::download(&client, url.as_str(), &part, Some(pin.size), name, progress).await?;
    fetch::finish(&part, &target, expected, progress).await?;
    record(dir, file, &pin)?;
    Ok(target)
}

fn record(dir: &Path, file: &HfRef, pin: &Pin) -> Result<()> {
    let record = Record {
        reference: file.to_string(),
        repo: file.repo_id(),
        revision: file.revision().to_owned(),
        path: file.path.clone(),
        sha256: pin.sha256.clone(),
        size: pin.size,
        pulled_at: source::now(),
    };
    source::write(dir, file.file(), &record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, size: Option<u64>, lfs: Option<(&str, u64)>) -> PathInfo {
        PathInfo {
            kind: Some("file".to_owned()),
            path: path.to_owned(),
            size,
            lfs: lfs.map(|(oid, size)| Lfs { oid: oid.to_owned(), size }),
        }
    }

    #[test]
    fn references_parse_with_subdirectories_and_revisions() {
        let plain = HfRef::parse("hf:Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf").unwrap();
        assert_eq!((plain.owner.as_str(), plain.repo.as_str()), ("Qwen", "Qwen3-4B-GGUF"));
        assert_eq!((plain.revision(), plain.file()), ("main", "Qwen3-4B-Q4_K_M.gguf"));
        assert_eq!(plain.to_string(), "hf:Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf");
        let deep = HfRef::parse("hf:o/r@v1.2/sub/dir/m.gguf").unwrap();
        assert_eq!((deep.revision(), deep.path.as_str(), deep.file()), ("v1.2", "sub/dir/m.gguf", "m.gguf"));
        assert_eq!(deep.to_string(), "hf:o/r@v1.2/sub/dir/m.gguf");
    }

    #[test]
    fn hostile_or_malformed_references_are_refused() {
        for (bad, why) in [
            ("hf:o/r/../x.gguf", "`..` is refused"),
            ("hf:o/r/a/../../x.gguf", "`..` is refused"),
            ("hf:o/r/.hidden.gguf", "`.hidden.gguf` is refused"),
            ("hf:o/r/a\\b.gguf", "is refused"),
            ("hf:o/r//x.gguf", "is empty"),
            ("hf:o/r/x.gguf/", "is empty"),
            ("hf:../r/x.gguf", "owner part `..`"),
            ("hf:o/r@../x.gguf", "revision part `..`"),
            ("hf:o/r/x%2F..gguf", "is refused"),
            ("hf:o/r/x.bin", "not a .gguf"),
            ("hf:o/r/.gguf", "is refused"),
            ("hf:o/r", "names no file"),
            ("o/r/x.gguf", "is not hf:"),
        ] {
            let error = HfRef::parse(bad).unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }

    #[test]
    fn the_pin_must_be_an_lfs_sha256_of_the_path_asked_for() {
        let file = HfRef::parse("hf:o/r/m.gguf").unwrap();
        let oid = "AB".repeat(32);
        let pin = pin_from(&file, vec![entry("m.gguf", Some(9), Some((&oid, 9)))]).unwrap();
        assert_eq!(pin, Pin { size: 9, sha256: "ab".repeat(32) });
        for (entries, why) in [
            (vec![entry("../m.gguf", Some(9), Some((&oid, 9)))], "lists no file `m.gguf`"),
            (vec![entry("m.gguf", Some(9), None)], "not stored with Git LFS"),
            (vec![entry("m.gguf", Some(9), Some(("abc", 9)))], "not a sha256"),
            (vec![entry("m.gguf", Some(8), Some((&oid, 9)))], "two sizes"),
            (vec![entry("m.gguf", None, Some((&oid, 0)))], "empty"),
        ] {
            let error = pin_from(&file, entries).unwrap_err().to_string();
            assert!(error.contains(why), "{why}: {error}");
        }
    }

    #[test]
    fn the_endpoint_comes_from_hf_endpoint_and_the_token_is_not_shown() {
        let hub = Hub::from_env(&Env::from_pairs(&[("HF_TOKEN", "hf_secret")])).unwrap();
        let file = HfRef::parse("hf:o/r@dev/sub/m+1.gguf").unwrap();
        assert_eq!(
            hub.resolve_url(&file).unwrap().as_str(),
            "https://huggingface.co/o/r/resolve/dev/sub/m+1.gguf"
        );
        assert!(!format!("{hub:?}").contains("hf_secret"), "{hub:?}");
        let mirror = Hub::from_env(&Env::from_pairs(&[("HF_ENDPOINT", "http://127.0.0.1:9/hub/")])).unwrap();
        assert_eq!(
            mirror.resolve_url(&file).unwrap().as_str(),
            "http://127.0.0.1:9/hub/o/r/resolve/dev/sub/m+1.gguf"
        );
        for bad in ["ftp://h", "not a url", "http://h/?q=1"] {
            assert!(Hub::from_env(&Env::from_pairs(&[("HF_ENDPOINT", bad)])).is_err(), "{bad}");
        }
    }
}
