//! AWS assumed roles and web identity: `role_arn` profiles (from a
//! static-keys `source_profile`, chained through another role, from
//! `credential_source = Environment`) and `AWS_WEB_IDENTITY_TOKEN_FILE`,
//! against a local STS (`tests/peers/sts_server.py`) that checks each
//! AssumeRole signature with botocore and answers STS's XML; the role's
//! keys then sign a Bedrock request botocore accepts. Cycles refused,
//! AccessDenied not retried, throttling retried, keys near expiry fetched
//! again, and the chain's order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bosun_core::ModelError;
use bosun_providers::cloud::aws::{self, AwsCredentialSource};
use bosun_providers::{ProviderConfig, RetryPolicy};
use serde_json::{Value, json};

use crate::bedrock::{KEY_ID, SECRET, SESSION};
use crate::support::TestServer;
use crate::support::faults::collect;

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const BASE_KEY: &str = "AKIABASEEXAMPLE";
const BASE_SECRET: &str = "base/secret+EXAMPLE";
const ROLE_A: &str = "arn:aws:iam::123456789012:role/a";
const ROLE_B: &str = "arn:aws:iam::123456789012:role/b";
const ROLE_WEB: &str = "arn:aws:iam::123456789012:role/web";

/// The STS stand-in, killed when dropped.
struct Sts(bosun_testing::botocore::Peer);

impl std::ops::Deref for Sts {
    type Target = bosun_testing::botocore::Peer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Sts {
    /// Starts the peer under the test venv's Python (`BOSUN_MCP_PYTHON`,
    /// with botocore); `None` only when it may be skipped.
    fn start(roles: Value) -> Option<Self> {
        let config = json!({
            "region": "us-east-1",
            "keys": {BASE_KEY: [BASE_SECRET, null], "AKIAENVEXAMPLE": ["env-secret", "env-token"]},
            "roles": roles,
            "web_identity_tokens": ["oidc-token-1", "oidc-token-2"],
        });
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/sts_server.py");
        bosun_testing::botocore::start(&script, &[&config.to_string()]).map(Self)
    }

    /// What the peer was asked, in order.
    async fn asked(&self) -> Vec<Value> {
        let text = reqwest::get(format!("{}/requests", self.url)).await.unwrap().text().await.unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// Shared files in a temporary home, and the environment that points the
/// chain at them and at the STS peer (the real `AWS_ENDPOINT_URL_STS`).
struct Setup {
    home: tempfile::TempDir,
    vars: HashMap<String, String>,
}

impl Setup {
    fn new(sts: &str, config: &str, extra: &[(&str, &str)]) -> Self {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        std::fs::write(home.path().join(".aws/config"), config).unwrap();
        let credentials =
            format!("[base]\naws_access_key_id = {BASE_KEY}\naws_secret_access_key = {BASE_SECRET}\n");
        std::fs::write(home.path().join(".aws/credentials"), credentials).unwrap();
        let mut vars: HashMap<String, String> = [
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_ENDPOINT_URL_STS", sts),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        vars.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        Self { home, vars }
    }

    fn source(&self, profile: Option<&str>) -> Result<Arc<dyn AwsCredentialSource>, String> {
        aws::source(&|name| self.vars.get(name).cloned(), profile, None).map_err(|e| e.to_string())
    }
}

const PROFILES: &str = "
[profile dev]
role_arn = arn:aws:iam::123456789012:role/a
source_profile = base
role_session_name = bosun-test
external_id = ext-1
duration_seconds = 1800

[profile chained]
role_arn = arn:aws:iam::123456789012:role/a
source_profile = middle

[profile middle]
role_arn = arn:aws:iam::123456789012:role/b
source_profile = base

[profile ci]
role_arn = arn:aws:iam::123456789012:role/a
credential_source = Environment

[profile loop-a]
role_arn = arn:aws:iam::123456789012:role/a
source_profile = loop-b

[profile loop-b]
role_arn = arn:aws:iam::123456789012:role/b
source_profile = loop-a

[profile orphan]
role_arn = arn:aws:iam::123456789012:role/a

[profile web]
role_arn = arn:aws:iam::123456789012:role/web
web_identity_token_file = TOKEN_FILE
role_session_name = from-profile
";

fn model(url: &str, source: Arc<dyn AwsCredentialSource>) -> bosun_providers::HostedModel {
    let config = ProviderConfig::bedrock("us-east-1").with_base_url(url).with_aws_source(source).with_retry(
        RetryPolicy::default()
            .with_attempts(3)
            .with_delays(Duration::from_millis(1), Duration::from_millis(1)),
    );
    bosun_providers::HostedModel::new(config, MODEL).unwrap()
}

#[tokio::test]
async fn a_role_from_a_static_keys_profile_signs_a_bedrock_request_botocore_accepts() {
    let Some(sts) = Sts::start(json!({ROLE_A: {"issue": [KEY_ID, SECRET, SESSION]}})) else { return };
    let Some(bedrock) = crate::bedrock::botocore_peer(Some(SESSION)) else { return };
    let setup = Setup::new(&sts.url, PROFILES, &[("AWS_PROFILE", "dev")]);
    let source = setup.source(None).unwrap();
    let shown = format!("{source:?}");
    assert!(shown.contains("AssumedRole") && shown.contains(ROLE_A) && shown.contains(BASE_KEY), "{shown}");
    assert!(!shown.contains(BASE_SECRET), "{shown}");
    let outcome = collect(&model(&bedrock.url, source.clone())).await;
    assert!(outcome.response().text().starts_with("Hello!"));
    assert_eq!(crate::bedrock::counts(&bedrock).await, json!({"posts": 1, "refused": 0}));
    let asked = sts.asked().await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let request = &asked[0];
    assert_eq!(request["status"], 200, "botocore accepted the AssumeRole signature: {request}");
    assert_eq!(request["key"], BASE_KEY);
    assert_eq!(request["content_type"], "application/x-www-form-urlencoded; charset=utf-8");
    assert_eq!(
        request["params"],
        json!({"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": ROLE_A,
            "RoleSessionName": "bosun-test", "ExternalId": "ext-1", "DurationSeconds": "1800"})
    );
    // An hour's keys are kept.
    assert_eq!(source.credentials().await.unwrap().access_key_id, KEY_ID);
    assert_eq!(sts.asked().await.len(), 1);
}

#[tokio::test]
async fn chained_roles_are_assumed_innermost_first_each_with_the_keys_before() {
    let Some(sts) = Sts::start(json!({ROLE_A: {}, ROLE_B: {}})) else { return };
    let setup = Setup::new(&sts.url, PROFILES, &[]);
    let keys = setup.source(Some("chained")).unwrap().credentials().await.unwrap();
    let asked = sts.asked().await;
    let links: Vec<_> = asked
        .iter()
        .map(|r| (r["params"]["RoleArn"].as_str().unwrap(), r["key"].as_str().unwrap(), r["status"].as_u64()))
        .collect();
    // B's keys (the first issued) sign the AssumeRole for A.
    assert_eq!(
        links,
        [(ROLE_B, BASE_KEY, Some(200)), (ROLE_A, "ASIA0000000000000001", Some(200))],
        "{asked:?}"
    );
    assert_eq!(keys.access_key_id, "ASIA0000000000000002");
    let session = asked[0]["params"]["RoleSessionName"].as_str().unwrap();
    assert!(session.starts_with("bosun-") && session[6..].parse::<u64>().is_ok(), "{session}");
}

#[test]
fn a_cycle_a_missing_source_and_a_long_chain_are_refused_before_any_request() {
    let unreachable = "http://127.0.0.1:9";
    let error = Setup::new(unreachable, PROFILES, &[]).source(Some("loop-a")).unwrap_err();
    assert!(error.contains("loops: loop-a -> loop-b -> loop-a"), "{error}");
    let error = Setup::new(unreachable, PROFILES, &[]).source(Some("orphan")).unwrap_err();
    assert!(
        error.contains("profile orphan") && error.contains("no source_profile, credential_source"),
        "{error}"
    );
    let long: String = (0..12)
        .map(|i| {
            format!(
                "[profile p{i}]\nrole_arn = arn:aws:iam::123456789012:role/r{i}\nsource_profile = p{}\n\n",
                i + 1
            )
        })
        .collect();
    let error = Setup::new(unreachable, &long, &[]).source(Some("p0")).unwrap_err();
    assert!(error.contains("more than 10 profiles"), "{error}");
    let missing = "[profile x]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = nowhere\n";
    let error = Setup::new(unreachable, missing, &[]).source(Some("x")).unwrap_err();
    assert!(error.contains("source_profile nowhere"), "{error}");
}

#[tokio::test]
async fn credential_source_environment_signs_with_the_environment_keys() {
    let Some(sts) = Sts::start(json!({ROLE_A: {}})) else { return };
    let env_keys = [
        ("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "env-secret"),
        ("AWS_SESSION_TOKEN", "env-token"),
    ];
    let setup = Setup::new(&sts.url, PROFILES, &env_keys);
    // Named in bosun's config: the profile comes before keys in the environment.
    let keys = setup.source(Some("ci")).unwrap().credentials().await.unwrap();
    assert!(keys.access_key_id.starts_with("ASIA"), "{keys:?}");
    let asked = sts.asked().await;
    assert_eq!((asked[0]["key"].as_str(), asked[0]["status"].as_u64()), (Some("AKIAENVEXAMPLE"), Some(200)));
    // Without it, the environment's keys are the chain's first source.
    let first = setup.source(None).unwrap();
    assert!(format!("{first:?}").starts_with("AwsCredentials"), "{first:?}");
}

#[tokio::test]
async fn web_identity_from_the_environment_rereads_the_token_file_at_each_fetch() {
    // Keys expiring in 200 seconds are inside the five-minute margin: each
    // call fetches again.
    let Some(sts) = Sts::start(json!({ROLE_WEB: {"expires_in": 200}})) else { return };
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "oidc-token-1\n").unwrap();
    let web = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
        ("AWS_ROLE_ARN", ROLE_WEB),
        ("AWS_ROLE_SESSION_NAME", "gha-run-7"),
        ("AWS_CONFIG_FILE", "/nonexistent/config"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials"),
    ];
    let setup = Setup::new(&sts.url, "", &web);
    let source = setup.source(None).unwrap();
    assert!(format!("{source:?}").contains("web_identity_token_file"), "{source:?}");
    source.credentials().await.unwrap();
    std::fs::write(&token, "oidc-token-2").unwrap();
    let keys = source.credentials().await.unwrap();
    assert!(!format!("{source:?} {keys:?}").contains("oidc-token"));
    let asked = sts.asked().await;
    let tokens: Vec<_> = asked.iter().map(|r| r["params"]["WebIdentityToken"].as_str().unwrap()).collect();
    assert_eq!(
        tokens,
        ["oidc-token-1", "oidc-token-2"],
        "keys expiring within five minutes are fetched again"
    );
    for request in &asked {
        assert_eq!(request["params"]["Action"], "AssumeRoleWithWebIdentity");
        assert_eq!(request["params"]["RoleSessionName"], "gha-run-7");
        assert_eq!((request["signed"].as_bool(), request["status"].as_u64()), (Some(false), Some(200)));
    }
    assert_eq!(keys.access_key_id, "ASIA0000000000000002");
}

#[tokio::test]
async fn a_web_identity_profile_and_a_refused_token() {
    let Some(sts) = Sts::start(json!({ROLE_WEB: {}})) else { return };
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "not-a-token-sts-knows").unwrap();
    let config = PROFILES.replace("TOKEN_FILE", token.to_str().unwrap());
    let setup = Setup::new(&sts.url, &config, &[]);
    let source = setup.source(Some("web")).unwrap();
    let error = source.credentials().await.unwrap_err();
    let ModelError::Authentication(message) = &error else { panic!("{error:?}") };
    assert!(message.contains("InvalidIdentityToken") && !message.contains("not-a-token"), "{message}");
    std::fs::write(&token, "oidc-token-1").unwrap();
    assert!(source.credentials().await.unwrap().access_key_id.starts_with("ASIA"));
    let sessions: Vec<_> = sts.asked().await.iter().map(|r| r["params"]["RoleSessionName"].clone()).collect();
    assert_eq!(sessions, ["from-profile", "from-profile"]);
}

#[tokio::test]
async fn access_denied_is_an_authentication_error_and_not_retried() {
    // Role a is not one the stand-in lets anyone assume.
    let Some(sts) = Sts::start(json!({ROLE_B: {}})) else { return };
    let bedrock = TestServer::start(vec![]).await;
    let setup = Setup::new(&sts.url, PROFILES, &[("AWS_PROFILE", "dev")]);
    let outcome = collect(&model(&bedrock.url, setup.source(None).unwrap())).await;
    let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
    assert!(message.contains("AccessDenied") && message.contains("sts:AssumeRole on resource"), "{message}");
    assert_eq!(sts.asked().await.len(), 1, "not retried");
    assert!(bedrock.requests().is_empty());
}

#[tokio::test]
async fn sts_throttling_is_retried_and_a_wrong_secret_refused() {
    let Some(sts) = Sts::start(json!({ROLE_A: {"throttle": 1}})) else { return };
    let bedrock = TestServer::start(vec![crate::bedrock::stream(crate::bedrock::recorded_body())]).await;
    let setup = Setup::new(&sts.url, PROFILES, &[("AWS_PROFILE", "dev")]);
    let outcome = collect(&model(&bedrock.url, setup.source(None).unwrap())).await;
    assert!(outcome.response().text().starts_with("Hello!"));
    assert_eq!(outcome.retries().len(), 1);
    let statuses: Vec<_> = sts.asked().await.iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [400, 200]);
    let auth = bedrock.requests()[0].header("authorization").unwrap().to_owned();
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=ASIA"), "{auth}");

    // The stand-in does check signatures: a secret it does not hold is refused.
    let setup = Setup::new(&sts.url, PROFILES, &[("AWS_PROFILE", "dev")]);
    let credentials =
        format!("[base]\naws_access_key_id = {BASE_KEY}\naws_secret_access_key = not-the-secret\n");
    std::fs::write(setup.home.path().join(".aws/credentials"), credentials).unwrap();
    let error = setup.source(None).unwrap().credentials().await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Authentication(m) if m.contains("SignatureDoesNotMatch")),
        "{error:?}"
    );
}

#[test]
fn the_chain_order_env_keys_then_the_profile_then_web_identity_then_the_container() {
    let unreachable = "http://127.0.0.1:9";
    let web = [("AWS_WEB_IDENTITY_TOKEN_FILE", "/tmp/t"), ("AWS_ROLE_ARN", ROLE_WEB)];
    let container = ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds");
    let shown = |extra: &[(&str, &str)], profile: Option<&str>| {
        format!("{:?}", Setup::new(unreachable, PROFILES, extra).source(profile).unwrap())
    };
    let keys = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "s")];
    assert!(shown(&[keys[0], keys[1], ("AWS_PROFILE", "dev")], None).starts_with("AwsCredentials"));
    assert!(shown(&[web[0], web[1], ("AWS_PROFILE", "dev")], None).contains(ROLE_A));
    // The base profile's static keys come before web identity.
    assert!(shown(&[web[0], web[1], container, ("AWS_PROFILE", "base")], None).starts_with("AwsCredentials"));
    let web_first = shown(&[web[0], web[1], container, ("AWS_PROFILE", "nobody")], None);
    assert!(web_first.contains(ROLE_WEB) && web_first.contains("web_identity_token_file"), "{web_first}");
    assert!(shown(&[container, ("AWS_PROFILE", "nobody")], None).starts_with("ContainerCredentials"));
}

#[tokio::test]
async fn a_role_takes_its_source_keys_from_a_credential_process() {
    let Some(sts) = Sts::start(json!({ROLE_A: {}})) else { return };
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("keys.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '{{\"Version\": 1, \"AccessKeyId\": \"{BASE_KEY}\", \"SecretAccessKey\": \
             \"{BASE_SECRET}\"}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = format!(
        "[profile via-process]\nrole_arn = {ROLE_A}\nsource_profile = proc\n\n[profile proc]\ncredential_process = \
         {}\n",
        script.display()
    );
    let setup = Setup::new(&sts.url, &config, &[("AWS_PROFILE", "via-process")]);
    let keys = setup.source(None).unwrap().credentials().await.unwrap();
    assert!(keys.access_key_id.starts_with("ASIA"), "the role's keys: {keys:?}");
    let asked = sts.asked().await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["status"], 200, "signed with the printed keys: {}", asked[0]);
    assert_eq!(asked[0]["key"], BASE_KEY);
}
