//! `credential_process`: a profile's keys printed by a program the user
//! named in the AWS config file (a vault, an SSO broker, `aws-vault exec
//! --json`), in the JSON the AWS CLI documents:
//! `{"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken",
//! "Expiration"}`. Run as the AWS CLI runs it: the line split as a shell
//! would split words, with no shell; inside the sandbox the front end hands
//! in, like every credential command (`cloud::command`).

use std::sync::Arc;

use bosun_core::ModelError;
use serde_json::Value;

use super::{AwsAuthError, AwsCredentialSource, AwsCredentials, CredentialsFuture};
use crate::cloud::{CommandConfiner, run_credential_command};

/// A profile's `credential_process`, its keys cached until five minutes
/// before their `Expiration` (for ever without one, as the CLI does).
/// `Debug` shows the profile and the program, never its arguments (they
/// may hold a secret) or what it printed.
pub struct ProcessCredentials {
    profile: String,
    program: String,
    args: Vec<String>,
    confiner: Option<Arc<dyn CommandConfiner>>,
    cache: super::http::Cache,
}

impl std::fmt::Debug for ProcessCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessCredentials")
            .field("profile", &self.profile)
            .field("program", &self.program)
            .field("confined", &self.confiner.is_some())
            .finish_non_exhaustive()
    }
}

impl ProcessCredentials {
    /// The `credential_process` of `profile`'s `section`, if it has one.
    pub(crate) fn from_profile(
        profile: &str,
        section: &std::collections::HashMap<String, String>,
        confiner: Option<Arc<dyn CommandConfiner>>,
    ) -> Result<Option<Self>, AwsAuthError> {
        let Some(line) = section.get("credential_process") else { return Ok(None) };
        let invalid =
            |why: &str| AwsAuthError::Process(format!("profile {profile}: credential_process {why}"));
        let words = shlex::split(line).ok_or_else(|| invalid("has an unclosed quote"))?;
        let Some((program, args)) = words.split_first() else { return Err(invalid("is empty")) };
        Ok(Some(Self {
            profile: profile.to_owned(),
            program: program.clone(),
            args: args.to_vec(),
            confiner,
            cache: super::http::Cache::default(),
        }))
    }

    async fn fetch(&self) -> Result<(AwsCredentials, Option<std::time::Instant>), ModelError> {
        let what = format!("the credential_process of AWS profile {}", self.profile);
        let stdout =
            run_credential_command(&self.program, &self.args, self.confiner.as_deref(), &what).await?;
        parse(&stdout).map_err(|why| ModelError::Authentication(format!("{what} `{}` {why}", self.program)))
    }
}

impl AwsCredentialSource for ProcessCredentials {
    fn credentials(&self) -> CredentialsFuture<'_> {
        Box::pin(self.cache.get(self.fetch()))
    }
}

/// The keys in the process's output, and when they expire. The reasons
/// never quote the output: it holds the secret.
fn parse(stdout: &str) -> Result<(AwsCredentials, Option<std::time::Instant>), String> {
    let value: Value =
        serde_json::from_str(stdout.trim()).map_err(|_| "printed something that is not JSON".to_owned())?;
    if value.get("Version").and_then(Value::as_u64) != Some(1) {
        return Err("printed no `\"Version\": 1` (the only version the AWS CLI documents)".to_owned());
    }
    let field = |name: &str| value.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
    let (Some(id), Some(secret)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
        return Err("printed no AccessKeyId and SecretAccessKey".to_owned());
    };
    let expires = match field("Expiration") {
        Some(at) => Some(
            super::http::instant_of(at)
                .ok_or_else(|| format!("printed an Expiration bosun cannot read ({at})"))?,
        ),
        None => None,
    };
    Ok((AwsCredentials::new(id, secret, field("SessionToken").map(str::to_owned)), expires))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_output_is_read_and_bad_output_refused_without_quoting_it() {
        let (keys, expires) = parse(
            r#"{"Version": 1, "AccessKeyId": "ASIAPROC", "SecretAccessKey": "s3cret", "SessionToken": "tok", "Expiration": "2099-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(keys.access_key_id, "ASIAPROC");
        assert!(expires.is_some());
        let (_, never) = parse(r#"{"Version": 1, "AccessKeyId": "AKIA", "SecretAccessKey": "s"}"#).unwrap();
        assert!(never.is_none(), "no Expiration: kept");
        for bad in [
            "AKIA s3cret",
            r#"{"Version": 2, "AccessKeyId": "AKIA", "SecretAccessKey": "s3cret"}"#,
            r#"{"Version": 1, "AccessKeyId": "AKIA"}"#,
            r#"{"Version": 1, "AccessKeyId": "AKIA", "SecretAccessKey": "s3cret", "Expiration": "soon"}"#,
        ] {
            let why = parse(bad).unwrap_err();
            assert!(!why.contains("s3cret"), "{why}");
        }
    }

    #[test]
    fn the_line_is_split_into_words_as_a_shell_would_without_one() {
        let section =
            [("credential_process".to_owned(), r#"/opt/vault "get keys" --json"#.to_owned())].into();
        let found = ProcessCredentials::from_profile("p", &section, None).unwrap().unwrap();
        assert_eq!(found.program, "/opt/vault");
        assert_eq!(found.args, ["get keys", "--json"]);
        let open = [("credential_process".to_owned(), r#"vault "unclosed"#.to_owned())].into();
        assert!(ProcessCredentials::from_profile("p", &open, None).is_err());
        let empty = [("credential_process".to_owned(), String::new())].into();
        assert!(ProcessCredentials::from_profile("p", &empty, None).is_err());
        assert!(ProcessCredentials::from_profile("p", &Default::default(), None).unwrap().is_none());
    }
}
