//! IAM Identity Center (SSO) profiles: the role keys the SSO portal gives
//! for the access token `aws sso login` cached.
//!
//! bosun never logs in itself (that is a browser flow the AWS CLI owns); it
//! reads the CLI's cached token, and says to log in again once it expires.

use std::path::PathBuf;
use std::time::Duration;

use bosun_core::ModelError;
use serde::Deserialize;

use super::{AwsAuthError, AwsCredentialSource, AwsCredentials, CredentialsFuture, Env};

/// Test-only: replaces `https://portal.sso.{region}.amazonaws.com`, so a
/// test can stand a local server in for the portal. No SDK reads it.
pub const SSO_PORTAL_OVERRIDE: &str = "BOSUN_TEST_AWS_SSO_PORTAL";
const MAX_RESPONSE: usize = 64 * 1024;

/// An SSO profile's role keys, cached until five minutes before they
/// expire. `Debug` shows the profile, account and role, never a token.
pub struct SsoCredentials {
    profile: String,
    account_id: String,
    role_name: String,
    portal: String,
    token_file: PathBuf,
    client: reqwest::Client,
    cache: super::http::Cache,
}

impl std::fmt::Debug for SsoCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoCredentials")
            .field("profile", &self.profile)
            .field("account_id", &self.account_id)
            .field("role_name", &self.role_name)
            .finish_non_exhaustive()
    }
}

fn sha1_hex(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

impl SsoCredentials {
    /// The SSO settings of `profile`'s `section` of the config file, if it
    /// has them (`sso_account_id` and `sso_role_name`, with an
    /// `sso_session` or the legacy `sso_start_url` and `sso_region`).
    pub(crate) fn from_profile(
        env: Env<'_>,
        profile: &str,
        section: &std::collections::HashMap<String, String>,
        config: &std::collections::HashMap<String, std::collections::HashMap<String, String>>,
    ) -> Result<Option<Self>, AwsAuthError> {
        let (Some(account_id), Some(role_name)) =
            (section.get("sso_account_id"), section.get("sso_role_name"))
        else {
            return Ok(None);
        };
        let invalid = |reason: String| AwsAuthError::Sso(format!("profile {profile}: {reason}"));
        // A session's token is cached under its name; a legacy profile's
        // under its start URL.
        let (cache_key, region) = if let Some(session) = section.get("sso_session") {
            let settings = config
                .get(&format!("sso-session {session}"))
                .ok_or_else(|| invalid(format!("no [sso-session {session}] section in the config file")))?;
            let region = settings
                .get("sso_region")
                .ok_or_else(|| invalid(format!("[sso-session {session}] has no sso_region")))?;
            (session.clone(), region.clone())
        } else {
            let url = section
                .get("sso_start_url")
                .ok_or_else(|| invalid("no sso_session or sso_start_url".into()))?;
            let region = section.get("sso_region").ok_or_else(|| invalid("no sso_region".into()))?;
            (url.clone(), region.clone())
        };
        let home =
            super::home(env).ok_or_else(|| invalid("no home directory for ~/.aws/sso/cache".into()))?;
        let token_file = home.join(".aws/sso/cache").join(format!("{}.json", sha1_hex(&cache_key)));
        let portal = env(SSO_PORTAL_OVERRIDE)
            .map(|p| p.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| format!("https://portal.sso.{region}.amazonaws.com"));
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(Some(Self {
            profile: profile.to_owned(),
            account_id: account_id.clone(),
            role_name: role_name.clone(),
            portal,
            token_file,
            client,
            cache: super::http::Cache::default(),
        }))
    }

    fn login(&self, why: &str) -> ModelError {
        ModelError::Authentication(format!(
            "the AWS SSO token for profile {} {why}: run `aws sso login --profile {}`",
            self.profile, self.profile
        ))
    }

    /// The access token `aws sso login` cached, while it is valid. Read at
    /// each fetch: a login in another terminal replaces it.
    fn access_token(&self) -> Result<String, ModelError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cached {
            access_token: String,
            expires_at: String,
        }
        let text = std::fs::read_to_string(&self.token_file)
            .map_err(|_| self.login(&format!("is not cached ({})", self.token_file.display())))?;
        let cached: Cached = serde_json::from_str(&text)
            .map_err(|_| self.login(&format!("cache {} cannot be read", self.token_file.display())))?;
        // The CLI writes `…Z`; older versions wrote `…UTC`.
        let expires = cached.expires_at.trim().replace("UTC", "Z");
        let expires = super::http::epoch_seconds(&expires)
            .ok_or_else(|| self.login("cache has no expiry bosun can read"))?;
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if u64::try_from(expires).unwrap_or(0) <= now {
            return Err(self.login("has expired"));
        }
        Ok(cached.access_token)
    }

    async fn fetch(&self) -> Result<(AwsCredentials, Option<std::time::Instant>), ModelError> {
        let token = self.access_token()?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("role_name", &self.role_name)
            .append_pair("account_id", &self.account_id)
            .finish();
        let url = format!("{}/federation/credentials?{query}", self.portal);
        let request = self.client.get(&url).header("x-amz-sso_bearer_token", token);
        let body = super::http::read(request, &url, "SSO role credentials", MAX_RESPONSE).await.map_err(
            |error| match error {
                // The portal refuses a token revoked or expired early.
                ModelError::Authentication(m) if m.contains("HTTP 401") => self.login("was refused"),
                other => other,
            },
        )?;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Role {
            access_key_id: String,
            secret_access_key: String,
            session_token: Option<String>,
            expiration: Option<i64>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Answer {
            role_credentials: Role,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            ModelError::Protocol(format!("the SSO role credentials from {url} are not keys ({e})"))
        })?;
        let role = answer.role_credentials;
        let expires = role.expiration.map(|ms| super::http::instant_at_epoch(ms / 1000));
        Ok((AwsCredentials::new(role.access_key_id, role.secret_access_key, role.session_token), expires))
    }
}

impl AwsCredentialSource for SsoCredentials {
    fn credentials(&self) -> CredentialsFuture<'_> {
        Box::pin(self.cache.get(self.fetch()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_files_are_named_by_the_sha1_of_the_session_or_start_url() {
        // As `printf %s NAME | sha1sum` gives them.
        assert_eq!(super::sha1_hex("my-sso"), "0ad374308c5a4e22f723adf10145eafad7c4031c");
        assert_eq!(
            super::sha1_hex("https://my.awsapps.com/start"),
            "40840c65697c043e2a71754cccb2ab4de3acc1c1"
        );
    }
}
