//! The bearer token every API request must carry: `BOSUN_SERVE_TOKEN` when
//! set, else one made at first start from the OS's random source and kept
//! in a file only the user can read (`0600`, created so, never widened).

use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use subtle::ConstantTimeEq;

use crate::error::ServeError;

/// Random bytes in a made token.
const TOKEN_BYTES: usize = 32;

/// The shortest token taken from the environment or a file.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A bearer token. Shown as `Token(…)` in `Debug`: it is a secret.
#[derive(Clone)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

/// Where the token came from, for the line `bosun serve` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenSource {
    /// `BOSUN_SERVE_TOKEN`.
    Environment,
    /// The token file, made now.
    Created,
    /// The token file, made at an earlier start.
    File,
}

impl Token {
    /// A token of the caller's choosing (tests, an embedder).
    ///
    /// # Errors
    /// When it is shorter than [`MIN_TOKEN_CHARS`] or has characters a
    /// header cannot carry.
    pub fn new(text: impl Into<String>) -> Result<Self, ServeError> {
        let text = text.into();
        let text = text.trim().to_owned();
        if text.chars().count() < MIN_TOKEN_CHARS {
            return Err(ServeError::Token(format!(
                "a token must have at least {MIN_TOKEN_CHARS} characters"
            )));
        }
        if !text.chars().all(|c| c.is_ascii_graphic()) {
            return Err(ServeError::Token("a token may hold only printable ASCII without spaces".into()));
        }
        Ok(Self(text))
    }

    /// The token from `from_env` when given, else the one in `file`, made
    /// there when missing.
    ///
    /// # Errors
    /// When the given token is unusable, or the file cannot be read or
    /// made, or others may read it (a token they could have read is not
    /// secret).
    pub fn load_or_create(from_env: Option<&str>, file: &Path) -> Result<(Self, TokenSource), ServeError> {
        if let Some(text) = from_env {
            return Ok((Self::new(text)?, TokenSource::Environment));
        }
        match std::fs::read_to_string(file) {
            Ok(text) => {
                let mode = std::fs::metadata(file).map_err(|e| io(file, &e))?.permissions().mode();
                if mode & 0o077 != 0 {
                    return Err(ServeError::Token(format!(
                        "{} may be read by others (mode {:o}): remove it, and a new token is made",
                        file.display(),
                        mode & 0o777
                    )));
                }
                Ok((Self::new(text)?, TokenSource::File))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let token = Self::random()?;
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| io(parent, &e))?;
                }
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(file)
                    .map_err(|e| io(file, &e))?;
                writeln!(out, "{}", token.0).map_err(|e| io(file, &e))?;
                Ok((token, TokenSource::Created))
            }
            Err(error) => Err(io(file, &error)),
        }
    }

    /// A token from the OS's random source, as lowercase hex.
    ///
    /// # Errors
    /// When the OS gives no random bytes.
    pub fn random() -> Result<Self, ServeError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| ServeError::Token(format!("no random bytes: {e}")))?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The token's text, for the line that tells the user.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token, in time independent of where they
    /// differ.
    pub fn matches(&self, given: &str) -> bool {
        self.0.as_bytes().ct_eq(given.as_bytes()).into()
    }
}

fn io(path: &Path, error: &std::io::Error) -> ServeError {
    ServeError::Token(format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_token_is_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve/token");
        let (made, source) = Token::load_or_create(None, &file).unwrap();
        assert_eq!(source, TokenSource::Created);
        assert_eq!(made.reveal().len(), 2 * TOKEN_BYTES);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let (again, source) = Token::load_or_create(None, &file).unwrap();
        assert_eq!(source, TokenSource::File);
        assert!(again.matches(made.reveal()));
        assert_eq!(format!("{made:?}"), "Token(…)");
    }

    #[test]
    fn a_token_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = Token::load_or_create(None, &file).unwrap_err().to_string();
        assert!(error.contains("may be read by others (mode 644)"), "{error}");
    }

    #[test]
    fn the_environment_wins_and_short_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let (token, source) = Token::load_or_create(Some("a-long-enough-token"), &file).unwrap();
        assert_eq!(source, TokenSource::Environment);
        assert!(token.matches("a-long-enough-token") && !token.matches("a-long-enough-tokem"));
        assert!(!file.exists(), "no file is made");
        assert!(Token::new("short").is_err());
    }
}
