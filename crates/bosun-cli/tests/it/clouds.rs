//! `bosun exec` on Azure OpenAI and Vertex AI (Gemini and Claude), end to
//! end: the real binary runs a tool round trip (the model reads greet.sh,
//! then answers from what it read) against a local server that stands in
//! for the cloud. That server answers only requests at the cloud's own URL
//! with the cloud's authentication: Azure's deployment URL, `api-version`
//! and `api-key`; Vertex's project, location and publisher URL with
//! `Authorization: Bearer` of a token it issued at its token endpoint, for
//! a service-account assertion whose RS256 signature it verified with the
//! test key's public half (and whose `iss`, `aud` and `scope` it checked).
//! Anything else gets a 401 or a 404, and the run fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::support;

use support::*;

const TOKEN: &str = "ya29.e2e-token";
const EMAIL: &str = "e2e@proj-e2e.iam.gserviceaccount.com";
/// What greet.sh holds, and so what the second request must carry back.
const READ_BACK: &str = "hello wrold";
const ANSWER: &str = "It prints hello wrold.";

fn key_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bosun-providers/tests/fixtures/google").join(name)
}

/// One request as the server read it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Which cloud API the server plays.
#[derive(Clone, Copy, Debug)]
enum Wire {
    AzureChat,
    AzureResponses,
    VertexGemini,
    VertexClaude,
}

struct CloudServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl CloudServer {
    fn start(wire: Wire, model_path: String) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let record = Arc::clone(&seen);
        let token_uri = format!("{url}/token");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let Some(request) = read(&mut stream) else { continue };
                let (status, content_type, body) = answer(wire, &model_path, &token_uri, &request);
                record.lock().unwrap().push(request);
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: \
                     close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            }
        });
        Self { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':').map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned())))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while data.len() < end + length {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&chunk[..n]);
    }
    Some(Seen { path, headers, body: String::from_utf8_lossy(&data[end..]).into_owned() })
}

/// The assertion's check: signature by the test key, and Google's claims.
fn assertion_ok(body: &str, token_uri: &str) -> bool {
    let fields: Vec<(String, String)> = body
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    if field("grant_type") != Some("urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer") {
        return false;
    }
    let Some(assertion) = field("assertion") else { return false };
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else { return false };
    let public = std::fs::read(key_fixture("test-only-key.pub.der")).unwrap();
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public);
    let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else { return false };
    if key.verify(format!("{header}.{claims}").as_bytes(), &signature).is_err() {
        return false;
    }
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    claims["iss"] == json!(EMAIL)
        && claims["aud"] == json!(token_uri)
        && claims["scope"] == json!("https://www.googleapis.com/auth/cloud-platform")
        && claims["exp"].as_u64() > claims["iat"].as_u64()
}

fn answer(wire: Wire, model_path: &str, token_uri: &str, request: &Seen) -> (u16, &'static str, String) {
    let granted = (200, "application/json", json!({"access_token": TOKEN, "expires_in": 3600}).to_string());
    if request.path == "/metadata/computeMetadata/v1/instance/service-accounts/default/token" {
        return match request.header("metadata-flavor") {
            Some("Google") => granted,
            _ => (403, "text/plain", "missing Metadata-Flavor".to_owned()),
        };
    }
    if request.path == "/token" && request.body.contains("grant_type=refresh_token") {
        return match request.body.contains("refresh_token=1%2F%2Fe2e")
            && request.body.contains("client_secret=s3")
        {
            true => granted,
            false => (400, "application/json", json!({"error": "invalid_grant"}).to_string()),
        };
    }
    if request.path == "/token" {
        return match assertion_ok(&request.body, token_uri) {
            true => (200, "application/json", json!({"access_token": TOKEN, "expires_in": 3600}).to_string()),
            false => (400, "application/json", json!({"error": "invalid_grant"}).to_string()),
        };
    }
    if request.path != model_path {
        return (404, "application/json", json!({"error": {"message": "no such path"}}).to_string());
    }
    let authorised = match wire {
        Wire::AzureChat | Wire::AzureResponses => {
            request.header("api-key") == Some("az-e2e") && request.header("authorization").is_none()
        }
        _ => request.header("authorization") == Some(&format!("Bearer {TOKEN}")),
    };
    if !authorised {
        return (
            401,
            "application/json",
            json!({"error": {"code": 401, "message": "unauthenticated"}}).to_string(),
        );
    }
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    let shaped = match wire {
        Wire::AzureChat => body["stream"] == json!(true),
        Wire::AzureResponses => body["model"] == json!("reasoner-e2e") && body.get("input").is_some(),
        Wire::VertexGemini => body.get("contents").is_some() && body.get("model").is_none(),
        Wire::VertexClaude => {
            body["anthropic_version"] == json!("vertex-2023-10-16") && body.get("model").is_none()
        }
    };
    if !shaped {
        return (400, "application/json", json!({"error": {"message": "not this cloud's body"}}).to_string());
    }
    let second = request.body.contains(READ_BACK);
    (200, "text/event-stream", stream(wire, second))
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn event(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

/// The model's turn: the call to read greet.sh, or (`second`) the answer.
fn stream(wire: Wire, second: bool) -> String {
    let arguments = json!({"path": "greet.sh"});
    match wire {
        Wire::AzureChat => {
            let delta = if second {
                json!({"content": ANSWER})
            } else {
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": arguments.to_string()}}]})
            };
            let finish = if second { "stop" } else { "tool_calls" };
            data(&json!({"choices": [{"index": 0, "delta": delta}]}))
                + &data(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}))
                + "data: [DONE]\n\n"
        }
        Wire::AzureResponses => {
            let item = if second {
                json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []})
            } else {
                json!({"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "read_file",
                    "arguments": ""})
            };
            let delta = if second {
                event(
                    "response.output_text.delta",
                    &json!({"type": "response.output_text.delta",
                    "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": ANSWER}),
                )
            } else {
                event(
                    "response.function_call_arguments.delta",
                    &json!({
                    "type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
                    "delta": arguments.to_string()}),
                )
            };
            let mut done = item.clone();
            if !second {
                done["arguments"] = json!(arguments.to_string());
            }
            event(
                "response.output_item.added",
                &json!({"type": "response.output_item.added",
                "output_index": 0, "item": item}),
            ) + &delta
                + &event(
                    "response.output_item.done",
                    &json!({"type": "response.output_item.done",
                    "output_index": 0, "item": done}),
                )
                + &event(
                    "response.completed",
                    &json!({"type": "response.completed", "response": {
                    "id": "resp_1", "status": "completed", "output": [],
                    "usage": {"input_tokens": 1000, "output_tokens": 100}}}),
                )
        }
        Wire::VertexGemini => {
            let part = if second {
                json!({"text": ANSWER})
            } else {
                json!({"functionCall": {"name": "read_file", "args": arguments}})
            };
            data(
                &json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 100}}),
            )
        }
        Wire::VertexClaude => {
            let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "claude", "stop_reason": null,
                "usage": {"input_tokens": 1000, "output_tokens": 1}}});
            let (block, delta, stop) = if second {
                (
                    json!({"type": "text", "text": ""}),
                    json!({"type": "text_delta", "text": ANSWER}),
                    "end_turn",
                )
            } else {
                (
                    json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}),
                    json!({"type": "input_json_delta", "partial_json": arguments.to_string()}),
                    "tool_use",
                )
            };
            event("message_start", &start)
                + &event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0, "content_block": block}),
                )
                + &event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
                )
                + &event("content_block_stop", &json!({"type": "content_block_stop", "index": 0}))
                + &event(
                    "message_delta",
                    &json!({"type": "message_delta", "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": 100}}),
                )
                + &event("message_stop", &json!({"type": "message_stop"}))
        }
    }
}

/// Runs the round trip and checks what every cloud run must show: exit 0,
/// the answer, two model requests (the second carrying the file back),
/// each at the cloud's path.
fn round_trip(
    wire: Wire,
    model_path: &str,
    configure: impl FnOnce(&mut std::process::Command, &Sandbox, &str),
) -> (Sandbox, CloudServer, Output) {
    let server = CloudServer::start(wire, model_path.to_owned());
    let sandbox = task_sandbox();
    let mut cmd = sandbox.bosun();
    configure(&mut cmd, &sandbox, &server.url);
    cmd.args(["exec", "--base-url", &server.url, "what does greet.sh print?"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.contains(ANSWER), "{out:#?}");
    let to_model: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.path != "/token" && !s.path.starts_with("/metadata/"))
        .collect();
    assert_eq!(to_model.len(), 2, "{:#?}", server.seen());
    assert!(to_model.iter().all(|s| s.path == model_path), "{to_model:#?}");
    assert!(
        !to_model[0].body.contains(READ_BACK) && to_model[1].body.contains(READ_BACK),
        "the tool result went back"
    );
    (sandbox, server, out)
}

#[test]
fn exec_runs_a_tool_round_trip_on_an_azure_deployment_priced_as_the_model_it_runs() {
    let path = "/openai/deployments/gpt-4o-e2e/chat/completions?api-version=2024-10-21";
    let (sandbox, server, out) = round_trip(Wire::AzureChat, path, |cmd, sandbox, _| {
        let config = "[providers.azure.deployments]\n\"gpt-4o-e2e\" = \"gpt-4o\"\n";
        std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
        std::fs::write(sandbox.path("xdg/bosun/config.toml"), config).unwrap();
        cmd.env("AZURE_OPENAI_API_KEY", "az-e2e").args(["--model", "azure/gpt-4o-e2e"]);
    });
    assert!(!out.stderr.contains("is not known"), "the deployment's model gives the window: {}", out.stderr);
    assert!(server.seen().iter().all(|s| s.header("api-key") == Some("az-e2e")));
    let id = session_from_stderr(&out.stderr);
    let mut show = sandbox.bosun();
    show.args(["sessions", "show", &id]);
    let shown = run(show);
    shown.expect_code(0);
    assert!(shown.stdout.contains("cost: $") && !shown.stdout.contains("cost unknown"), "{shown:#?}");
}

/// A service-account key file whose `token_uri` is the local server's.
fn service_account(sandbox: &Sandbox, url: &str) -> PathBuf {
    let key = std::fs::read_to_string(key_fixture("test-only-key.pem")).unwrap();
    let file = json!({"type": "service_account", "project_id": "from-key", "private_key_id": "k1",
        "private_key": key, "client_email": EMAIL, "token_uri": format!("{url}/token")});
    let path = sandbox.path("home/key.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

fn vertex_env(cmd: &mut std::process::Command, sandbox: &Sandbox, url: &str, model: &str) {
    cmd.env("GOOGLE_APPLICATION_CREDENTIALS", service_account(sandbox, url))
        .env("GOOGLE_CLOUD_PROJECT", "proj-e2e")
        .env("CLOUD_ML_REGION", "us-east5")
        .args(["--model", model]);
}

#[test]
fn exec_runs_a_tool_round_trip_on_gemini_through_vertex_with_a_service_account_token() {
    let path = "/v1/projects/proj-e2e/locations/us-east5/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let (_sandbox, server, _) = round_trip(Wire::VertexGemini, path, |cmd, sandbox, url| {
        vertex_env(cmd, sandbox, url, "vertex/gemini-2.5-pro")
    });
    assert_eq!(server.seen().iter().filter(|s| s.path == "/token").count(), 1, "one token for both requests");
}

#[test]
fn exec_runs_a_tool_round_trip_on_claude_through_vertex_with_a_service_account_token() {
    let path = "/v1/projects/proj-e2e/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict";
    let (_sandbox, server, out) = round_trip(Wire::VertexClaude, path, |cmd, sandbox, url| {
        vertex_env(cmd, sandbox, url, "vertex/claude-sonnet-4-5@20250929")
    });
    assert!(!out.stderr.contains("is not known"), "the table knows Vertex's Claude ids: {}", out.stderr);
    let seen = server.seen();
    assert_eq!(seen[0].path, "/token", "the token is had before the first request");
    assert!(seen.iter().all(|s| s.header("anthropic-version").is_none() && s.header("x-api-key").is_none()));
}

#[test]
fn a_cloud_without_its_settings_is_refused_before_any_request_naming_what_to_set() {
    let sandbox = Sandbox::new();
    for (model, env, expected) in [
        ("azure/dep", vec![], "AZURE_OPENAI_ENDPOINT"),
        ("azure/dep", vec![("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")], "AZURE_OPENAI_AD_TOKEN"),
        (
            "vertex/gemini-2.5-pro",
            vec![("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")],
            "/nonexistent/key.json",
        ),
    ] {
        let mut cmd = sandbox.bosun();
        cmd.envs(env).args(["exec", "--model", model, "hi"]);
        let out = run(cmd);
        out.expect_code(2);
        assert!(out.stderr.contains(expected), "{model}: {out:#?}");
    }
}

#[test]
fn exec_on_vertex_finds_gcloud_user_credentials_and_else_the_metadata_server() {
    let path = "/v1/projects/from-user-file/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    // gcloud's file under CLOUDSDK_CONFIG; its quota project is the project.
    let (_sandbox, server, _) = round_trip(Wire::VertexGemini, path, |cmd, sandbox, url| {
        let dir = sandbox.path("home/gcloud");
        std::fs::create_dir_all(&dir).unwrap();
        let file = json!({"type": "authorized_user", "client_id": "c.apps.googleusercontent.com",
            "client_secret": "s3", "refresh_token": "1//e2e", "quota_project_id": "from-user-file",
            "token_uri": format!("{url}/token")});
        std::fs::write(dir.join("application_default_credentials.json"), file.to_string()).unwrap();
        cmd.env("CLOUDSDK_CONFIG", &dir).args(["--model", "vertex/gemini-2.5-pro"]);
    });
    assert_eq!(server.seen().iter().filter(|s| s.path == "/token").count(), 1);
    // Nothing on disk: the metadata server GCE_METADATA_HOST names.
    let path = "/v1/projects/proj-e2e/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let (_sandbox, server, _) = round_trip(Wire::VertexGemini, path, |cmd, _, url| {
        let host = format!("{}/metadata", url.trim_start_matches("http://"));
        cmd.env("GCE_METADATA_HOST", host)
            .env("GOOGLE_CLOUD_PROJECT", "proj-e2e")
            .args(["--model", "vertex/gemini-2.5-pro"]);
    });
    assert_eq!(server.seen().iter().filter(|s| s.path.starts_with("/metadata/")).count(), 1);
}

#[test]
fn exec_runs_a_tool_round_trip_on_an_azure_responses_deployment() {
    let (_sandbox, server, _) = round_trip(Wire::AzureResponses, "/openai/v1/responses", |cmd, _, _| {
        cmd.env("AZURE_OPENAI_API_KEY", "az-e2e").args(["--model", "azure-responses/reasoner-e2e"]);
    });
    assert!(server.seen().iter().all(|s| s.header("api-key") == Some("az-e2e")));
}
