//! Credentials printed by a command the user configured: how Entra ID
//! tokens for Azure are had without an Azure SDK (`az account
//! get-access-token --resource https://cognitiveservices.azure.com -o
//! json`), and refreshed as they expire; and how every such command is run
//! (AWS's `credential_process` too): inside the OS sandbox the front end
//! hands in ([`CommandConfiner`]), with a timeout, killed with bosun.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bosun_core::ModelError;

use super::token::{TokenFuture, TokenSource};
use crate::secret::ApiKey;

/// How long a token whose expiry the command does not say is kept: the
/// Azure CLI hands out a cached token only while it has five minutes left.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(240);
/// How long before its stated expiry a token is replaced.
const MARGIN: Duration = Duration::from_secs(300);
/// Longest a credential command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Readies a credential command to run inside the OS sandbox (MISSION.md
/// invariant 18). bosun-providers starts no process on its own authority:
/// the front end, which owns the sandbox, supplies this.
pub trait CommandConfiner: Send + Sync + std::fmt::Debug {
    /// Confines `command` (and sets where it runs); the returned guard is
    /// kept until the command has ended. An error means the command must
    /// not run.
    fn confine(&self, command: &mut tokio::process::Command) -> Result<Box<dyn Send>, String>;
}

/// What a credential command printed on stdout, once it succeeded.
/// `what` names it in errors (`the token command `az``).
pub(crate) async fn run_credential_command(
    program: &str,
    args: &[String],
    confiner: Option<&dyn CommandConfiner>,
    what: &str,
) -> Result<String, ModelError> {
    let failed = |why: String| ModelError::Authentication(format!("{what} `{program}` {why}"));
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    let guard = match confiner {
        Some(confiner) => {
            Some(confiner.confine(&mut command).map_err(|e| failed(format!("cannot be sandboxed: {e}")))?)
        }
        None => None,
    };
    let output = tokio::time::timeout(COMMAND_TIMEOUT, command.output())
        .await
        .map_err(|_| failed(format!("did not finish within {} s", COMMAND_TIMEOUT.as_secs())))?
        .map_err(|e| failed(format!("cannot be run: {e}")))?;
    drop(guard);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let head: String = stderr.trim().chars().take(300).collect();
        return Err(failed(format!("failed ({}): {head}", output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `program` with `args` for a token and keeps it until shortly
/// before it expires. The command prints the token alone, or a JSON object
/// with `accessToken` (or `access_token`) and, when known, `expires_on`
/// (seconds since 1970, as the Azure CLI prints it).
#[derive(Debug)]
pub struct CommandToken {
    program: String,
    args: Vec<String>,
    confiner: Option<std::sync::Arc<dyn CommandConfiner>>,
    cache: tokio::sync::Mutex<Option<(ApiKey, Instant)>>,
}

impl CommandToken {
    /// The command `program args…`, run without a shell.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self { program: program.into(), args, confiner: None, cache: tokio::sync::Mutex::new(None) }
    }

    /// Runs the command inside `confiner`'s sandbox.
    #[must_use]
    pub fn with_confiner(mut self, confiner: std::sync::Arc<dyn CommandConfiner>) -> Self {
        self.confiner = Some(confiner);
        self
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
        let what = "the token command";
        let stdout =
            run_credential_command(&self.program, &self.args, self.confiner.as_deref(), what).await?;
        parse(&stdout, SystemTime::now())
            .ok_or_else(|| ModelError::Authentication(format!("{what} `{}` printed no token", self.program)))
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
