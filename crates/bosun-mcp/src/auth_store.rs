//! Where one server's OAuth tokens are kept: one JSON file per server, in a
//! directory the caller chooses (the CLI's data directory). The file is
//! written atomically (a temporary sibling created `0600`, synced, renamed
//! into place, the directory synced) and never through a symlink: opening
//! the file, its temporary sibling or its directory refuses symlinks, and a
//! file other users may read is refused too.
//!
//! Besides rmcp's `StoredCredentials` (the client id and the token response)
//! the file keeps what rmcp's store does not: the client secret a
//! registration gave, the authorization server's metadata (so that a start
//! with a stored token needs no discovery), and the server URL the tokens
//! were issued for, so that they are never sent anywhere else.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::CredentialStore;
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialRefreshGuard, StoredCredentials};
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};

/// Largest token file read: a few tokens and a metadata document.
const MAX_FILE: u64 = 256 * 1024;
/// The format of the file; a newer one is refused, not guessed at.
const VERSION: u32 = 1;

/// A client registration: the id, for a confidential client its secret,
/// and the redirect URI it was registered with.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) redirect_uri: Option<String>,
}

impl Registration {
    /// Its redirect URI, else `fallback` (a refresh sends none).
    pub(crate) fn redirect_or(&self, fallback: &str) -> String {
        self.redirect_uri.clone().unwrap_or_else(|| fallback.to_owned())
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

/// What the file holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub(crate) version: u32,
    /// The server the tokens were issued for.
    pub(crate) server_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) registration: Option<Registration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<AuthorizationMetadata>,
    /// rmcp's part: the client id, the token response, the granted scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) credentials: Option<StoredCredentials>,
}

/// One server's token file.
#[derive(Clone, Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    server_url: String,
}

impl TokenFile {
    pub(crate) fn new(path: PathBuf, server_url: &str) -> Self {
        Self { path, server_url: server_url.to_owned() }
    }

    /// What the file holds for this server: `None` when there is no file or
    /// it was written for another URL (the tokens stay where they belong).
    pub(crate) fn read(&self) -> io::Result<Option<Stored>> {
        let Some(stored) = read(&self.path)? else { return Ok(None) };
        if stored.server_url != self.server_url {
            tracing::info!(file = %self.path.display(), "mcp: stored tokens are for another URL; not used");
            return Ok(None);
        }
        Ok(Some(stored))
    }

    /// Changes what the file holds (starting from nothing when it holds
    /// nothing for this server) and writes it back atomically.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Stored)) -> io::Result<()> {
        let mut stored = self.read()?.unwrap_or_default();
        stored.version = VERSION;
        stored.server_url.clone_from(&self.server_url);
        change(&mut stored);
        let text = serde_json::to_vec_pretty(&stored).map_err(io::Error::other)?;
        write_atomically(&self.path, &text)
    }
}

/// Removes a token file (and its refresh lock); false when there was none.
/// A symlink in its place is removed as a link, never followed.
pub fn remove_token_file(path: &Path) -> io::Result<bool> {
    let removed = |path: &Path| match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    };
    let found = removed(path)?;
    removed(&path.with_extension("lock"))?;
    Ok(found)
}

fn read(path: &Path) -> io::Result<Option<Stored>> {
    let file = match OpenOptions::new().read(true).custom_flags(nofollow()).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(refused(path, "it is a symlink"));
        }
        Err(error) => return Err(error),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(refused(path, "it is not a regular file"));
    }
    if metadata.mode() & 0o077 != 0 {
        return Err(refused(path, "other users may read it (it should be mode 0600)"));
    }
    if metadata.len() > MAX_FILE {
        return Err(refused(path, "it is too large"));
    }
    let mut text = Vec::new();
    file.take(MAX_FILE).read_to_end(&mut text)?;
    let stored: Stored = serde_json::from_slice(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?;
    if stored.version > VERSION {
        return Err(refused(path, "a newer bosun wrote it"));
    }
    Ok(Some(stored))
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the token file {} is refused: {why}", path.display()))
}

fn nofollow() -> i32 {
    // The flag's bits fit an `int`, which is what `open` takes.
    (OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32
}

/// Temporary sibling (`0600`, created exclusively, no symlink followed) →
/// sync → rename over `path` → sync the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("a token file needs a directory"))?;
    ensure_private_dir(dir)?;
    if let Ok(existing) = std::fs::symlink_metadata(path)
        && existing.file_type().is_symlink()
    {
        return Err(refused(path, "it is a symlink"));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("tokens");
    // Unique per process and moment: `create_new` never opens an old one.
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let temporary = dir.join(format!(".{name}.{}-{nanos}.tmp", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nofollow())
        .open(&temporary)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    File::open(dir)?.sync_all()
}

/// Creates the directory `0700` when missing; refuses a symlink there.
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is a symlink; refused", dir.display()),
        )),
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::other(format!("{} is not a directory", dir.display()))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(error) => Err(error),
    }
}

/// rmcp's view of the token file: its `credentials` part, read and written
/// on the blocking pool.
pub(crate) struct FileCredentials {
    file: Arc<TokenFile>,
}

impl FileCredentials {
    pub(crate) fn new(file: Arc<TokenFile>) -> Self {
        Self { file }
    }
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work).await.map_err(store_error)?.map_err(store_error)
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let file = Arc::clone(&self.file);
        Ok(blocking(move || file.read()).await?.and_then(|stored| stored.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let file = Arc::clone(&self.file);
        blocking(move || file.update(|stored| stored.credentials = Some(credentials))).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let file = Arc::clone(&self.file);
        blocking(move || file.update(|stored| stored.credentials = None)).await
    }

    /// Another bosun refreshing the same tokens waits: a refresh token used
    /// twice may be refused the second time.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = self.file.path.with_extension("lock");
        let guard = blocking(move || {
            let dir = lock.parent().ok_or_else(|| io::Error::other("a lock file needs a directory"))?;
            ensure_private_dir(dir)?;
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(nofollow())
                .open(&lock)?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            Ok(file)
        })
        .await?;
        // Dropping the file closes it, which releases the lock.
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path) -> TokenFile {
        TokenFile::new(dir.join("auth").join("srv.json"), "https://mcp.example.com/mcp")
    }

    fn registration() -> Registration {
        Registration {
            client_id: "client-1".into(),
            client_secret: Some("s3cret".into()),
            redirect_uri: None,
        }
    }

    #[test]
    fn a_round_trip_keeps_everything_in_a_0600_file_in_a_0700_directory() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(dir.path());
        assert!(tokens.read().unwrap().is_none(), "no file is no tokens");
        tokens.update(|stored| stored.registration = Some(registration())).unwrap();
        let credentials = StoredCredentials::new("client-1".into(), None, vec!["mcp:read".into()], Some(7));
        tokens.update(|stored| stored.credentials = Some(credentials)).unwrap();
        let stored = tokens.read().unwrap().unwrap();
        assert_eq!(stored.registration, Some(registration()), "an update keeps the other parts");
        let credentials = stored.credentials.unwrap();
        assert_eq!(
            (credentials.client_id.as_str(), credentials.granted_scopes.as_slice()),
            ("client-1", &["mcp:read".to_owned()][..])
        );
        let path = dir.path().join("auth/srv.json");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(dir.path().join("auth")).unwrap().mode() & 0o777, 0o700);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("auth")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left: {leftovers:?}");
        assert!(!format!("{:?}", tokens.read().unwrap()).contains("s3cret"), "Debug redacts the secret");
    }

    #[test]
    fn tokens_for_another_url_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path()).update(|stored| stored.registration = Some(registration())).unwrap();
        let elsewhere = TokenFile::new(dir.path().join("auth/srv.json"), "https://evil.example.com/mcp");
        assert!(elsewhere.read().unwrap().is_none());
    }

    #[test]
    fn a_symlink_is_refused_for_reading_and_writing_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(dir.path());
        tokens.update(|stored| stored.registration = Some(registration())).unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, "untouched").unwrap();
        let path = dir.path().join("auth/srv.json");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let error = tokens.read().unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        let error = tokens.update(|_| {}).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(remove_token_file(&path).unwrap(), "removing removes the link");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    }

    #[test]
    fn a_symlinked_directory_and_a_file_others_may_read_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("auth")).unwrap();
        let error = file(dir.path()).update(|_| {}).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);

        let other = tempfile::tempdir().unwrap();
        let tokens = file(other.path());
        tokens.update(|stored| stored.registration = Some(registration())).unwrap();
        let path = other.path().join("auth/srv.json");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = tokens.read().unwrap_err();
        assert!(error.to_string().contains("0600"), "{error}");
    }
}
