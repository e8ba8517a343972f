//! AWS credentials fetched over HTTP: the container endpoint (ECS, EKS Pod
//! Identity) stood in for by a local server, the keys it gives signing a
//! Bedrock request, cached until five minutes before they expire, and the
//! endpoint's refusals and the SDKs' address rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use bosun_core::ModelError;
use bosun_providers::ProviderConfig;
use bosun_providers::cloud::aws::{self, AwsCredentialSource, ContainerCredentials, ECS_ENDPOINT_OVERRIDE};
use serde_json::json;
use support::faults::collect;
use support::routes::{Routed, json};
use support::{Canned, ManualClock, TestServer, scripted};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const KEY_ID: &str = "ASIACONTAINEREXAMPLE";
const TOKEN: &str = "container-session-token";
const RELATIVE: &str = "/v2/credentials/task-role-1";

/// An RFC 3339 time `from_now` ahead (or behind) the wall clock.
pub(crate) fn expiration(from_now: i64) -> String {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() as i64;
    let seconds = now + from_now;
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // The civil date of a day count, for the test's own clock.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

fn keys(expires_in: i64) -> Canned {
    json(
        200,
        &json!({
            "AccessKeyId": KEY_ID, "SecretAccessKey": "container-secret", "Token": TOKEN,
            "Expiration": expiration(expires_in), "RoleArn": "arn:aws:iam::123456789012:role/task",
        }),
    )
}

fn source(vars: &[(&str, &str)]) -> Result<Option<ContainerCredentials>, String> {
    let vars: HashMap<String, String> =
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    ContainerCredentials::from_env(&|name| vars.get(name).cloned()).map_err(|e| e.to_string())
}

#[tokio::test]
async fn container_keys_sign_the_request_and_are_kept_until_near_expiry() {
    let agent = Routed::start(|request| {
        if request.path == RELATIVE && request.header("authorization") == Some("agent-token") {
            keys(3600)
        } else {
            json(403, &json!({"message": "no"}))
        }
    })
    .await;
    let credentials = source(&[
        ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", RELATIVE),
        (ECS_ENDPOINT_OVERRIDE, &agent.url),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "agent-token"),
    ])
    .unwrap()
    .unwrap();
    assert!(!format!("{credentials:?}").contains("agent-token"));
    let server = TestServer::start(vec![crate::bedrock::stream(crate::bedrock::recorded_body())]).await;
    let clock = ManualClock::default();
    let config = ProviderConfig::bedrock("us-east-1")
        .with_base_url(&server.url)
        .with_sleeper(clock.clone())
        .with_aws_source(Arc::new(credentials));
    let model = bosun_providers::HostedModel::new(config, MODEL).unwrap();
    for _ in 0..2 {
        let outcome = scripted(Some(&server), &clock, &[], collect(&model)).await;
        assert!(outcome.response().text().starts_with("Hello!"));
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let auth = request.header("authorization").unwrap();
        assert!(auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={KEY_ID}/")), "{auth}");
        assert_eq!(request.header("x-amz-security-token"), Some(TOKEN));
    }
    assert_eq!(agent.to(RELATIVE).len(), 1, "an hour's keys are fetched once");
}

#[tokio::test]
async fn keys_within_five_minutes_of_expiry_are_fetched_again() {
    let agent = Routed::start(|_| keys(240)).await;
    let full = format!("{}/creds", agent.url);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "pod-token-1\n").unwrap();
    let credentials = source(&[
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &full),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", file.to_str().unwrap()),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-a-file-is-named"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(credentials.credentials().await.unwrap().access_key_id, KEY_ID);
    // The file is read at each fetch: EKS rotates it.
    std::fs::write(&file, "pod-token-2").unwrap();
    assert_eq!(credentials.credentials().await.unwrap().access_key_id, KEY_ID);
    let asked: Vec<_> =
        agent.to("/creds").iter().map(|r| r.header("authorization").unwrap_or("").to_owned()).collect();
    assert_eq!(asked, ["pod-token-1", "pod-token-2"]);
}

#[tokio::test]
async fn a_refusal_is_an_authentication_error_and_an_agent_in_trouble_a_network_one() {
    let agent = Routed::start(|request| {
        if request.path == "/denied" {
            json(403, &json!({"message": "forbidden"}))
        } else {
            json(503, &json!({"message": "busy"}))
        }
    })
    .await;
    let denied =
        source(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &format!("{}/denied", agent.url))]).unwrap().unwrap();
    let error = denied.credentials().await.unwrap_err();
    assert!(matches!(&error, ModelError::Authentication(m) if m.contains("403")), "{error:?}");
    let busy =
        source(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &format!("{}/busy", agent.url))]).unwrap().unwrap();
    let error = busy.credentials().await.unwrap_err();
    assert!(matches!(&error, ModelError::Network(m) if m.contains("503")), "{error:?}");
}

#[test]
fn a_full_uri_must_be_https_or_a_local_or_agent_address() {
    let refused = source(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds")]).unwrap_err();
    assert!(refused.contains("neither https nor a loopback"), "{refused}");
    for allowed in [
        "https://example.com/creds",
        "http://127.0.0.1:9/creds",
        "http://localhost/creds",
        "http://169.254.170.23/v1/credentials",
        "http://[::1]:9/creds",
    ] {
        assert!(source(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", allowed)]).unwrap().is_some(), "{allowed}");
    }
    assert!(source(&[]).unwrap().is_none());
}

#[test]
fn the_chain_takes_static_keys_first_and_the_container_only_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none").display().to_string();
    let vars = |extra: &[(&str, &str)]| {
        let mut vars: HashMap<String, String> = [
            ("AWS_SHARED_CREDENTIALS_FILE", none.as_str()),
            ("AWS_CONFIG_FILE", none.as_str()),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        vars.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        vars
    };
    let keyed = vars(&[("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "s")]);
    let chosen = aws::source(&|name| keyed.get(name).cloned(), None, None).unwrap();
    assert!(format!("{chosen:?}").contains("AKIAENV"), "{chosen:?}");
    let bare = vars(&[]);
    let chosen = aws::source(&|name| bare.get(name).cloned(), None, None).unwrap();
    assert!(format!("{chosen:?}").contains("ContainerCredentials"), "{chosen:?}");
}

// ------------------------------------------------------ instance metadata

const ROLES: &str = "/latest/meta-data/iam/security-credentials/";

/// IMDSv2 as EC2 answers it: keys only with the session token the PUT gave.
async fn imds(roles: &'static str) -> Routed {
    Routed::start(move |request| {
        let token = request.header("x-aws-ec2-metadata-token") == Some("imds-session");
        match (request.method.as_str(), request.path.as_str()) {
            ("PUT", "/latest/api/token")
                if request.header("x-aws-ec2-metadata-token-ttl-seconds") == Some("21600") =>
            {
                Canned { headers: vec![], ..Canned::error(200, "imds-session") }
            }
            ("GET", ROLES) if token && !roles.is_empty() => Canned::error(200, roles),
            ("GET", path) if token && path == format!("{ROLES}bosun-role") => json(
                200,
                &json!({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAINSTANCE",
                    "SecretAccessKey": "instance-secret", "Token": "instance-token",
                    "Expiration": expiration(6 * 3600)}),
            ),
            ("GET", _) if token => json(404, &json!({"message": "not found"})),
            _ => json(401, &json!({"message": "unauthorized"})),
        }
    })
    .await
}

fn chain(vars: &[(&str, &str)]) -> Result<Arc<dyn AwsCredentialSource>, String> {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none").display().to_string();
    let mut all: HashMap<String, String> =
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    all.insert("AWS_SHARED_CREDENTIALS_FILE".into(), none.clone());
    all.insert("AWS_CONFIG_FILE".into(), none);
    aws::source(&|name| all.get(name).cloned(), None, None).map_err(|e| e.to_string())
}

#[tokio::test]
async fn instance_metadata_asks_a_session_token_then_the_role_then_its_keys_once() {
    let server = imds("bosun-role\n").await;
    let source = chain(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &server.url)]).unwrap();
    assert!(format!("{source:?}").contains("InstanceMetadata"), "{source:?}");
    for _ in 0..2 {
        let keys = source.credentials().await.unwrap();
        assert_eq!(keys.access_key_id, "ASIAINSTANCE");
        assert!(!format!("{keys:?}").contains("instance-secret"));
    }
    let asked: Vec<_> = server.to("/latest").iter().map(|r| (r.method.clone(), r.path.clone())).collect();
    assert_eq!(
        asked,
        [
            ("PUT".to_owned(), "/latest/api/token".to_owned()),
            ("GET".to_owned(), ROLES.to_owned()),
            ("GET".to_owned(), format!("{ROLES}bosun-role")),
        ],
        "six hours' keys are fetched once"
    );
}

#[tokio::test]
async fn an_instance_without_a_role_says_so() {
    let server = imds("").await;
    let source = chain(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &server.url)]).unwrap();
    let error = source.credentials().await.unwrap_err();
    assert!(matches!(&error, ModelError::Authentication(m) if m.contains("no IAM role")), "{error:?}");
}

#[tokio::test]
async fn off_ec2_the_error_names_every_source_tried_and_disabling_metadata_fails_at_once() {
    let refused = support::refused_url().await;
    let source = chain(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &refused)]).unwrap();
    let error = source.credentials().await.unwrap_err();
    let ModelError::Authentication(message) = &error else { panic!("{error:?}") };
    for named in [
        "AWS_ACCESS_KEY_ID",
        "~/.aws/credentials",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "instance metadata",
    ] {
        assert!(message.contains(named), "{named} in {message}");
    }
    let error = chain(&[("AWS_EC2_METADATA_DISABLED", "true")]).unwrap_err();
    assert!(error.contains("no AWS credentials found"), "{error}");
}
