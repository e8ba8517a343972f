//! Sampling (`sampling/createMessage`): advertised only to a server whose
//! config enables it, answered by the [`Sampler`] of the start options.
//! Against the real everything server (`trigger-sampling-request`) over
//! stdio, and a hand-written Python server that asks although sampling was
//! never advertised to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns

use crate::support;

use std::sync::{Arc, Mutex};

use bosun_core::{Message, Usage};
use bosun_mcp::{
    MAX_SAMPLING_TOKENS, McpServers, SampleFuture, Sampler, SamplingRefused, SamplingRequest,
    SamplingResponse, ServerConfig, StartOptions, StdioTransport, complete,
};
use bosun_testing::{Reply, ScriptedModel};
use serde_json::json;
use support::{call, everything, parent_env, python3, text, write_script};

const SAMPLE: &str = "mcp__everything__trigger-sampling-request";

/// Answers with `answer` (or refuses with it), recording every request.
struct TestSampler {
    answer: Result<String, String>,
    seen: Mutex<Vec<SamplingRequest>>,
}

impl TestSampler {
    fn new(answer: Result<&str, &str>) -> Arc<Self> {
        let answer = answer.map(str::to_owned).map_err(str::to_owned);
        Arc::new(Self { answer, seen: Mutex::new(Vec::new()) })
    }

    fn seen(&self) -> Vec<SamplingRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Sampler for TestSampler {
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_> {
        self.seen.lock().unwrap().push(request);
        let answer = match &self.answer {
            Ok(text) => {
                let mut response = SamplingResponse::new(text.clone(), "test-model");
                response.usage = Usage::new(30, 7);
                Ok(response)
            }
            Err(reason) => Err(SamplingRefused::new(reason.clone())),
        };
        Box::pin(std::future::ready(answer))
    }
}

async fn start(workspace: &std::path::Path, config: ServerConfig, sampler: Arc<TestSampler>) -> McpServers {
    let options = StartOptions::new(workspace, parent_env()).with_sampler(sampler);
    let started = McpServers::start(vec![config], options).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    started.servers
}

#[tokio::test]
async fn the_samplers_text_reaches_the_servers_tool_result() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let sampler = TestSampler::new(Ok("sampled-text-42"));
    let servers = start(workspace.path(), config.with_sampling(true), Arc::clone(&sampler)).await;
    let output =
        call(&servers, SAMPLE, json!({"prompt": "what is the answer?", "maxTokens": 1_000_000})).await;
    assert!(!output.is_error, "{}", text(&output));
    assert_eq!(output.usage, Usage::new(30, 7), "the call carries what its sampling spent, for the turn");
    let shown = text(&output);
    assert!(shown.contains("\"text\": \"sampled-text-42\""), "{shown}");
    assert!(
        shown.contains("\"model\": \"test-model\"") && shown.contains("\"role\": \"assistant\""),
        "{shown}"
    );

    let seen = sampler.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.server, "everything");
    assert_eq!(request.system_prompt.as_deref(), Some("You are a helpful test server."));
    assert_eq!(request.max_tokens, MAX_SAMPLING_TOKENS, "a million tokens asked for, capped");
    assert_eq!(request.temperature, Some(0.7));
    let [Message::User { .. }] = request.messages.as_slice() else { panic!("{:?}", request.messages) };
    assert!(request.messages[0].text().contains("what is the answer?"), "{:?}", request.messages);
    servers.shutdown().await;
}

/// A sampler over a model, as the CLI's is (without its approval).
struct ModelSampler(ScriptedModel);

impl Sampler for ModelSampler {
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_> {
        Box::pin(async move {
            complete(&self.0, "scripted", &request).await.map_err(|e| SamplingRefused::new(e.to_string()))
        })
    }
}

#[tokio::test]
async fn a_model_answers_through_complete_with_the_servers_prompt_and_bounds() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new().reply(Reply::new().text("from the model").usage(Usage::new(12, 3)));
    let options =
        StartOptions::new(workspace.path(), parent_env()).with_sampler(Arc::new(ModelSampler(model.clone())));
    let started = McpServers::start(vec![config.with_sampling(true)], options).await;
    let servers = started.servers;
    let output = call(&servers, SAMPLE, json!({"prompt": "ping", "maxTokens": 50})).await;
    assert!(!output.is_error, "{}", text(&output));
    assert!(text(&output).contains("\"text\": \"from the model\""), "{}", text(&output));
    assert!(text(&output).contains("\"model\": \"scripted\""), "{}", text(&output));
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.system.as_deref(), Some("You are a helpful test server."));
    assert!(request.tools.is_empty(), "no tools in sampling");
    assert_eq!(request.options.max_tokens, Some(50));
    assert_eq!(request.options.temperature, Some(0.7));
    assert!(request.messages[0].text().ends_with("context: ping"), "{:?}", request.messages);
    servers.shutdown().await;
}

#[tokio::test]
async fn a_refusal_reaches_the_server_as_an_error() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let sampler = TestSampler::new(Err("denied by the user"));
    let servers = start(workspace.path(), config.with_sampling(true), Arc::clone(&sampler)).await;
    let output = call(&servers, SAMPLE, json!({"prompt": "spend tokens"})).await;
    // The everything server turns the JSON-RPC error into an error result.
    assert!(output.is_error, "{}", text(&output));
    assert!(text(&output).contains("denied by the user"), "{}", text(&output));
    assert_eq!(sampler.seen().len(), 1);
    servers.shutdown().await;
}

#[tokio::test]
async fn without_the_config_key_sampling_is_not_advertised() {
    let Some(config) = everything("everything") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let sampler = TestSampler::new(Ok("never"));
    let servers = start(workspace.path(), config, Arc::clone(&sampler)).await;
    let names: Vec<String> = servers.tools().iter().map(|t| t.definition().name.clone()).collect();
    assert!(names.iter().any(|n| n == "mcp__everything__trigger-elicitation-request"), "{names:?}");
    // The server offers the tool only to clients that advertise sampling.
    assert!(!names.iter().any(|n| n == SAMPLE), "{names:?}");
    servers.shutdown().await;
}

/// A server that, on `tools/call` of `sample`, sends `sampling/createMessage`
/// whatever the client advertised, and returns what came back (with the
/// capabilities the client sent) as the tool's text.
const ASKS_ANYWAY: &str = r##"
import json, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

capabilities = None
while True:
    line = sys.stdin.readline()
    if not line:
        break
    message = json.loads(line)
    method, id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        capabilities = params.get("capabilities")
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asks-anyway", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "sample", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}})
        while True:
            answer = json.loads(sys.stdin.readline())
            if answer.get("id") == "ask-1":
                break
        text = json.dumps({"capabilities": capabilities, "answer": answer})
        send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
"##;

#[tokio::test]
async fn a_request_to_a_server_without_sampling_is_refused_and_never_sampled() {
    let workspace = tempfile::tempdir().unwrap();
    let script = write_script(workspace.path(), "asks_anyway.py", ASKS_ANYWAY);
    let config = ServerConfig::new("py", StdioTransport::new(python3()).arg(script.display().to_string()));
    let sampler = TestSampler::new(Ok("never"));
    let servers = start(workspace.path(), config.clone(), Arc::clone(&sampler)).await;
    let output = call(&servers, "mcp__py__sample", json!({})).await;
    let seen: serde_json::Value = serde_json::from_str(&text(&output)).unwrap();
    assert_eq!(seen["capabilities"].get("sampling"), None, "not advertised: {seen}");
    assert_eq!(seen["answer"]["error"]["code"], -32601, "{seen}");
    let message = seen["answer"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("sampling is not enabled for this server"), "{message}");
    assert!(sampler.seen().is_empty(), "the sampler was never asked");
    servers.shutdown().await;

    // The same server with the key: advertised, and answered.
    let servers = start(workspace.path(), config.with_sampling(true), Arc::clone(&sampler)).await;
    let output = call(&servers, "mcp__py__sample", json!({})).await;
    let seen: serde_json::Value = serde_json::from_str(&text(&output)).unwrap();
    assert!(seen["capabilities"]["sampling"].is_object(), "{seen}");
    assert_eq!(seen["answer"]["result"]["content"]["text"], "never", "{seen}");
    assert_eq!(sampler.seen().len(), 1);
    servers.shutdown().await;
}
