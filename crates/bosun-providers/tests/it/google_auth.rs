//! Google application default credentials end to end against a local
//! server standing in for Google's token endpoint (and the metadata
//! server) and for Vertex: the service-account assertion is checked with
//! the test key's public half (signature, `iss`, `aud`, `scope`, `exp`)
//! before a token is issued, the refresh-token grant's fields are checked,
//! the metadata request must carry `Metadata-Flavor: Google`, and the model
//! server answers only the token it issued. Tokens are cached until
//! shortly before they expire.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bosun_core::{Model, ModelError};
use bosun_providers::{Api, GoogleCredentials, HostedModel, ProviderConfig};
use serde_json::{Value, json};
use support::faults::{collect, good};
use support::routes::{Routed, json};
use support::{Canned, Recorded};

const EMAIL: &str = "bosun-test@proj-1.iam.gserviceaccount.com";
const MODEL: &str = "gemini-2.5-flash";
const MODEL_PATH: &str = "/v1/projects/proj-1/locations/global/publishers/google/models/";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/google").join(name)
}

fn form(body: &[u8]) -> HashMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// The token endpoint's check of a JWT-bearer grant: the assertion is
/// signed RS256 by the test key and claims what Google requires.
fn check_assertion(request: &Recorded, token_uri: &str) -> Result<(), String> {
    let fields = form(&request.body);
    if fields.get("grant_type").map(String::as_str) != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return Err(format!("grant_type: {fields:?}"));
    }
    let assertion = fields.get("assertion").ok_or("no assertion")?;
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else { return Err("not three parts".into()) };
    let public = std::fs::read(fixture("test-only-key.pub.der")).unwrap();
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public);
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|e| e.to_string())?;
    key.verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| "bad signature".to_owned())?;
    let decode =
        |part: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap() };
    let (header, claims) = (decode(header), decode(claims));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let number = |key: &str| claims[key].as_u64().unwrap_or(0);
    let checks = [
        (header["alg"] == json!("RS256"), "alg"),
        (header["kid"] == json!("test-key-1"), "kid"),
        (claims["iss"] == json!(EMAIL), "iss"),
        (claims["aud"] == json!(token_uri), "aud"),
        (claims["scope"] == json!("https://www.googleapis.com/auth/cloud-platform"), "scope"),
        (number("iat") <= now + 5 && number("iat") + 60 >= now, "iat"),
        (number("exp") == number("iat") + 3600, "exp"),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, claim)) => Err(format!("claim {claim}: {header} {claims}")),
        None => Ok(()),
    }
}

/// A server for both sides: `token` answers the token requests (paths not
/// under the model path), and the model path streams a good answer only
/// to `Bearer {issued}`.
async fn server(
    token: impl Fn(&Recorded, &str) -> Canned + Send + Sync + 'static,
    issued: &'static str,
) -> Routed {
    let url: Arc<std::sync::OnceLock<String>> = Arc::default();
    let known = Arc::clone(&url);
    let routed = Routed::start(move |request| {
        if request.path.starts_with(MODEL_PATH) {
            if request.header("authorization") == Some(&format!("Bearer {issued}")) {
                return good(Api::Gemini);
            }
            return json(401, &json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}));
        }
        token(request, known.get().map_or("", String::as_str))
    })
    .await;
    url.set(routed.url.clone()).unwrap();
    routed
}

fn granted(token: &str, expires_in: u64) -> Canned {
    json(200, &json!({"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}))
}

fn model(url: &str, credentials: GoogleCredentials) -> HostedModel {
    let config = ProviderConfig::vertex("proj-1", "global", MODEL)
        .with_base_url(url)
        .with_token_source(Arc::new(credentials));
    HostedModel::new(config, MODEL).unwrap()
}

fn service_account_file(dir: &tempfile::TempDir, token_uri: &str) -> PathBuf {
    let key = std::fs::read_to_string(fixture("test-only-key.pem")).unwrap();
    let file = json!({
        "type": "service_account", "project_id": "proj-1", "private_key_id": "test-key-1",
        "private_key": key, "client_email": EMAIL, "client_id": "1", "token_uri": token_uri,
    });
    let path = dir.path().join("key.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

#[tokio::test]
async fn a_service_account_key_gets_a_token_by_a_signed_assertion_and_keeps_it() {
    let server = server(
        |request, url| match check_assertion(request, &format!("{url}/token")) {
            Ok(()) => granted("ya29.sa-token", 3600),
            Err(why) => json(400, &json!({"error": "invalid_grant", "error_description": why})),
        },
        "ya29.sa-token",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credentials =
        GoogleCredentials::from_file(&service_account_file(&dir, &format!("{}/token", server.url))).unwrap();
    assert_eq!(credentials.project_id(), Some("proj-1"));
    let model = model(&server.url, credentials);
    for round in 0..2 {
        let outcome = collect(&model).await;
        assert_eq!(outcome.response().text(), "Hello", "round {round}: {:?}", outcome.result);
    }
    let tokens = server.to("/token");
    assert_eq!(tokens.len(), 1, "one token for both requests: {:?}", server.requests());
    assert_eq!(tokens[0].header("content-type"), Some("application/x-www-form-urlencoded"));
    assert_eq!(server.to(MODEL_PATH).len(), 2);
}

#[tokio::test]
async fn a_key_the_endpoint_refuses_fails_as_authentication_and_nothing_reaches_the_model() {
    let server = server(
        |_, _| json(400, &json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."})),
        "never",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credentials =
        GoogleCredentials::from_file(&service_account_file(&dir, &format!("{}/token", server.url))).unwrap();
    let outcome = collect(&model(&server.url, credentials)).await;
    let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
    assert!(message.contains("invalid_grant (Invalid JWT Signature.)"), "{message}");
    assert!(message.contains("service-account key"), "{message}");
    assert!(server.to(MODEL_PATH).is_empty());
    assert_eq!(server.to("/token").len(), 1, "a refused grant is not retried");
}

#[tokio::test]
async fn gcloud_user_credentials_refresh_and_a_token_past_its_life_is_fetched_again() {
    let server = server(
        |request, _| {
            let fields = form(&request.body);
            let expected = [
                ("grant_type", "refresh_token"),
                ("client_id", "client-1.apps.googleusercontent.com"),
                ("client_secret", "user-secret"),
                ("refresh_token", "1//refresh"),
            ];
            if request.path == "/oauth/token"
                && expected.iter().all(|(k, v)| fields.get(*k).map(String::as_str) == Some(*v))
            {
                // Already within the refresh margin: each request fetches anew.
                granted("ya29.user-token", 0)
            } else {
                json(400, &json!({"error": "invalid_request", "error_description": format!("{fields:?}")}))
            }
        },
        "ya29.user-token",
    )
    .await;
    let file = json!({
        "type": "authorized_user", "client_id": "client-1.apps.googleusercontent.com",
        "client_secret": "user-secret", "refresh_token": "1//refresh",
        "quota_project_id": "proj-1", "token_uri": format!("{}/oauth/token", server.url),
    });
    let credentials = GoogleCredentials::from_json(&file.to_string(), "adc.json").unwrap();
    let model = model(&server.url, credentials);
    for _ in 0..2 {
        assert_eq!(collect(&model).await.response().text(), "Hello");
    }
    assert_eq!(server.to("/oauth/token").len(), 2, "an expired token is not reused");
}

#[tokio::test]
async fn the_metadata_server_is_asked_with_its_flavor_header() {
    let server = server(
        |request, _| {
            let path = "/computeMetadata/v1/instance/service-accounts/default/token";
            if request.method == "GET"
                && request.path == path
                && request.header("metadata-flavor") == Some("Google")
            {
                granted("ya29.gce-token", 3599)
            } else {
                json(403, &json!({"error": "missing Metadata-Flavor"}))
            }
        },
        "ya29.gce-token",
    )
    .await;
    // As GCE_METADATA_HOST gives it: host and port, no scheme.
    let host = server.url.trim_start_matches("http://");
    let credentials = GoogleCredentials::metadata_server(host).unwrap();
    let model = model(&server.url, credentials);
    assert_eq!(model.capabilities().tools, bosun_core::Support::Yes);
    for _ in 0..2 {
        assert_eq!(collect(&model).await.response().text(), "Hello");
    }
    assert_eq!(server.to("/computeMetadata").len(), 1);
}

#[tokio::test]
async fn no_credentials_and_no_metadata_server_is_an_authentication_error_saying_what_to_set() {
    let server = server(|_, _| granted("unused", 3600), "unused").await;
    let refused = support::refused_url().await;
    let credentials = GoogleCredentials::metadata_server(refused.trim_start_matches("http://")).unwrap();
    let outcome = collect(&model(&server.url, credentials)).await;
    let ModelError::Authentication(message) = outcome.error() else { panic!("{:?}", outcome.error()) };
    assert!(
        message.contains("GOOGLE_APPLICATION_CREDENTIALS") && message.contains("gcloud auth"),
        "{message}"
    );
    assert!(message.contains("connection refused"), "{message}");
    assert!(outcome.retries().is_empty(), "not being in Google Cloud is not retried");
    assert!(server.requests().is_empty());
}
