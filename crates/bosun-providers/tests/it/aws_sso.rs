//! AWS SSO profiles: the token `aws sso login` caches, read from the cache
//! file named by the SHA-1 of the session (or legacy start URL), exchanged
//! at a local server standing in for the SSO portal for role keys, which
//! are kept until near expiry; an expired token says to log in again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bosun_core::ModelError;
use bosun_providers::cloud::aws::{self, AwsCredentialSource, SSO_PORTAL_OVERRIDE};
use serde_json::json;
use support::routes::{Routed, json};

const SESSION_FILE: &str = "0ad374308c5a4e22f723adf10145eafad7c4031c.json"; // sha1("my-sso")
const LEGACY_FILE: &str = "40840c65697c043e2a71754cccb2ab4de3acc1c1.json"; // sha1 of the start URL
const START_URL: &str = "https://my.awsapps.com/start";
const PORTAL_PATH: &str = "/federation/credentials?role_name=Dev&account_id=123456789012";

const CONFIG: &str = "
[profile dev]
sso_session = my-sso
sso_account_id = 123456789012
sso_role_name = Dev
region = us-east-1

[sso-session my-sso]
sso_region = us-east-1
sso_start_url = https://my.awsapps.com/start

[profile legacy]
sso_start_url = https://my.awsapps.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = Dev
";

async fn portal() -> Routed {
    Routed::start(|request| {
        if request.path == PORTAL_PATH && request.header("x-amz-sso_bearer_token") == Some("sso-access") {
            let ms = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                + 3600)
                * 1000;
            json(
                200,
                &json!({"roleCredentials": {"accessKeyId": "ASIASSO", "secretAccessKey": "sso-secret",
                    "sessionToken": "sso-session-token", "expiration": ms}}),
            )
        } else {
            json(401, &json!({"message": "Session token not found or invalid"}))
        }
    })
    .await
}

fn home(file: &str, expires_in: i64) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".aws/sso/cache")).unwrap();
    std::fs::write(home.path().join(".aws/config"), CONFIG).unwrap();
    let cached = json!({"startUrl": START_URL, "region": "us-east-1", "accessToken": "sso-access",
        "expiresAt": crate::aws_credentials::expiration(expires_in)});
    std::fs::write(home.path().join(".aws/sso/cache").join(file), cached.to_string()).unwrap();
    home
}

fn chain(home: &Path, url: &str, profile: &str, extra: &[(&str, &str)]) -> Arc<dyn AwsCredentialSource> {
    let mut vars: HashMap<String, String> = [
        ("HOME", home.to_str().unwrap()),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials"),
        ("AWS_PROFILE", profile),
        (SSO_PORTAL_OVERRIDE, url),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    vars.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    aws::source(&|name| vars.get(name).cloned(), None, None).unwrap()
}

#[tokio::test]
async fn an_sso_session_profile_exchanges_the_cached_token_for_role_keys_once() {
    let portal = portal().await;
    let home = home(SESSION_FILE, 3600);
    let source = chain(home.path(), &portal.url, "dev", &[]);
    assert!(format!("{source:?}").contains("SsoCredentials"), "{source:?}");
    for _ in 0..2 {
        let keys = source.credentials().await.unwrap();
        assert_eq!(keys.access_key_id, "ASIASSO");
    }
    assert!(!format!("{source:?}").contains("sso-access"));
    assert_eq!(portal.to("/federation").len(), 1, "an hour's keys are fetched once");
}

#[tokio::test]
async fn a_legacy_profile_finds_its_token_by_the_start_url() {
    let portal = portal().await;
    let home = home(LEGACY_FILE, 3600);
    let keys = chain(home.path(), &portal.url, "legacy", &[]).credentials().await.unwrap();
    assert_eq!(keys.access_key_id, "ASIASSO");
}

#[tokio::test]
async fn an_expired_or_missing_token_says_to_log_in_and_asks_nothing() {
    let portal = portal().await;
    let home = home(SESSION_FILE, -60);
    let error = chain(home.path(), &portal.url, "dev", &[]).credentials().await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Authentication(m) if m.contains("expired") && m.contains("aws sso login --profile dev")),
        "{error:?}"
    );
    // The legacy profile's file was never written.
    let error = chain(home.path(), &portal.url, "legacy", &[]).credentials().await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Authentication(m) if m.contains("aws sso login --profile legacy")),
        "{error:?}"
    );
    assert!(portal.to("/federation").is_empty());
}

#[tokio::test]
async fn keys_in_the_environment_come_before_an_sso_profile() {
    let portal = portal().await;
    let home = home(SESSION_FILE, 3600);
    let keyed = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "s")];
    let keys = chain(home.path(), &portal.url, "dev", &keyed).credentials().await.unwrap();
    assert_eq!(keys.access_key_id, "AKIAENV");
    assert!(portal.to("/federation").is_empty());
}
