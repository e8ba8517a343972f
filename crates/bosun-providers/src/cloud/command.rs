//! A bearer token printed by a command the user configured: how Entra ID
//! tokens for Azure are had without an Azure SDK (`az account
//! get-access-token --resource https://cognitiveservices.azure.com -o
//! json`), and refreshed as they expire.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bosun_core::ModelError;

use super::token::{TokenFuture, TokenSource};
use crate::secret::ApiKey;

/// How long a token whose expiry the command does not say is kept: the
/// Azure CLI hands out a cached token only while it has five minutes left.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(240);
/// How long before its stated expiry a token is replaced.
const MARGIN: Duration = Duration::from_secs(300);
/// Longest a token command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `program` with `args` for a token and keeps it until shortly
/// before it expires. The command prints the token alone, or a JSON object
/// with `accessToken` (or `access_token`) and, when known, `expires_on`
/// (seconds since 1970, as the Azure CLI prints it).
#[derive(Debug)]
pub struct CommandToken {
    program: String,
    args: Vec<String>,
    cache: tokio::sync::Mutex<Option<(ApiKey, Instant)>>,
}

impl CommandToken {
    /// The command `program args…`, run without a shell.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self { program: program.into(), args, cache: tokio::sync::Mutex::new(None) }
    }

    async fn cached(&self) -> Result<ApiKey, ModelError> {
        let mut cache = self.cache.lock().await;
        if let Some((token, until)) = cache.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let (token, until) = self.run().await?;
        *cache = Some((token.clone(), until));
        Ok(token)
    }

    async fn run(&self) -> Result<(ApiKey, Instant), ModelError> {
        let program = &self.program;
        let failed = |why: String| ModelError::Authentication(format!("the token command `{program}` {why}"));
        let output = tokio::process::Command::new(program)
            .args(&self.args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(COMMAND_TIMEOUT, output)
            .await
            .map_err(|_| failed(format!("did not finish within {} s", COMMAND_TIMEOUT.as_secs())))?
            .map_err(|e| failed(format!("cannot be run: {e}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let head: String = stderr.trim().chars().take(300).collect();
            return Err(failed(format!("failed ({}): {head}", output.status)));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        parse(&stdout, SystemTime::now()).ok_or_else(|| failed("printed no token".into()))
    }
}

impl TokenSource for CommandToken {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.cached())
    }
}

/// The token in a command's output and until when to keep it.
fn parse(output: &str, now: SystemTime) -> Option<(ApiKey, Instant)> {
    let output = output.trim();
    let (token, expires_on) = match serde_json::from_str::<serde_json::Value>(output) {
        Ok(serde_json::Value::Object(map)) => {
            let token = map.get("accessToken").or_else(|| map.get("access_token"))?.as_str()?.to_owned();
            let expires = map.get("expires_on").and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
            (token, expires)
        }
        _ => (output.to_owned(), None),
    };
    if token.is_empty() || token.contains(char::is_whitespace) {
        return None;
    }
    let lifetime = match expires_on {
        Some(at) => {
            let left = Duration::from_secs(at).saturating_sub(now.duration_since(UNIX_EPOCH).ok()?);
            left.saturating_sub(MARGIN)
        }
        None => UNKNOWN_LIFETIME,
    };
    Some((ApiKey::new(token), Instant::now() + lifetime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_read_bare_or_from_the_azure_clis_json() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let (token, until) = parse("eyJ0.bare\n", now).unwrap();
        assert_eq!(token, ApiKey::new("eyJ0.bare"));
        assert!(until > Instant::now() + Duration::from_secs(200));
        let json = r#"{"accessToken": "eyJ0.az", "expires_on": 1003600, "tokenType": "Bearer"}"#;
        let (token, until) = parse(json, now).unwrap();
        assert_eq!(token, ApiKey::new("eyJ0.az"));
        let kept = until.saturating_duration_since(Instant::now());
        assert!(kept > Duration::from_secs(3200) && kept <= Duration::from_secs(3300), "{kept:?}");
        // Expired already: kept for no time at all.
        let stale = r#"{"access_token": "t", "expires_on": "999000"}"#;
        assert!(parse(stale, now).unwrap().1 <= Instant::now());
        assert!(parse("", now).is_none() && parse("two words", now).is_none());
        assert!(parse(r#"{"token": "x"}"#, now).is_none());
    }
}
