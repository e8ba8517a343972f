use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::ToolContext;
use bosun_core::message::{CallId, concat_text};
use bosun_mcp::{
    ElicitFuture, ElicitationRequest, ElicitationResponse, Elicitor, McpServers, ParentEnv, ServerConfig,
    StartOptions, StdioTransport,
};
use bosun_testing::Aimock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The `bosun` binary: `BOSUN_TEST_BIN`, else the one built beside this test.
fn bosun_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("BOSUN_TEST_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    let profile = exe.ancestors().find(|d| d.file_name().is_some_and(|n| n == "deps")).and_then(Path::parent);
    profile.map(|d| d.join("bosun")).filter(|b| b.is_file()).unwrap_or_else(|| {
        panic!("no bosun binary beside {}: build it (cargo build -p bosun-cli)", exe.display())
    })
}

/// Answers bosun's approval forms with `decision`, and says it was asked.
struct Answering {
    decision: Option<&'static str>,
    asked: std::sync::Mutex<Vec<String>>,
}

impl Elicitor for Answering {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_> {
        self.asked.lock().unwrap().push(request.message);
        let response = match self.decision {
            Some(decision) => ElicitationResponse::Accept(json!({ "decision": decision })),
            None => ElicitationResponse::Decline { reason: "no".into() },
        };
        Box::pin(std::future::ready(response))
    }
}

struct Delegate {
    home: tempfile::TempDir,
    servers: McpServers,
}

impl Delegate {
    /// `bosun mcp-server --allow-root HOME/allowed` against `mock`, its
    /// approvals answered by `elicitor`.
    async fn start(mock: &Aimock, elicitor: Arc<dyn Elicitor>) -> Self {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().display().to_string();
        std::fs::create_dir_all(home.path().join("xdg/bosun")).unwrap();
        std::fs::write(
            home.path().join("xdg/bosun/config.toml"),
            format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\n", mock.url()),
        )
        .unwrap();
        for dir in ["allowed/ws/.git", "elsewhere/.git"] {
            std::fs::create_dir_all(home.path().join(dir)).unwrap();
        }
        let transport = StdioTransport::new(bosun_bin().display().to_string())
            .args(["mcp-server", "--allow-root", &format!("{root}/allowed")])
            .env("HOME", format!("{root}/home"))
            .env("XDG_CONFIG_HOME", format!("{root}/xdg"))
            .env("BOSUN_HOME", format!("{root}/bosun"))
            .env("OPENAI_API_KEY", "test");
        let path = std::env::var("PATH").unwrap_or_default();
        let parent = ParentEnv::from_vars([("PATH", path.as_str())]);
        let options = StartOptions::new(home.path(), parent).with_elicitor(elicitor);
        let started = McpServers::start(vec![ServerConfig::new("bosun", transport)], options).await;
        assert!(started.failures.is_empty(), "{:?}", started.failures);
        Self { home, servers: started.servers }
    }

    fn path(&self, rel: &str) -> String {
        self.home.path().join(rel).display().to_string()
    }

    /// Whether the call failed, and its first text: the answer (bosun's
    /// client adds the structured `result` line after it).
    async fn call(&self, tool: &str, arguments: Value) -> (bool, String) {
        let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        let output = self.servers.call_tool("bosun", tool, arguments, context).await;
        let first =
            output.content.first().map(|part| concat_text(std::slice::from_ref(part))).unwrap_or_default();
        (output.is_error, first)
    }
}

fn mock(list: Vec<Value>) -> Option<Aimock> {
    Aimock::start(&json!({ "fixtures": list }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agent_hands_bosun_a_task_and_a_follow_up() {
    let list = vec![
        json!({"match": {"userMessage": "hello", "turnIndex": 0}, "response": {"content": "Hi from the delegate."}}),
        json!({"match": {"userMessage": "and then", "turnIndex": 1}, "response": {"content": "Then this."}}),
    ];
    let Some(mock) = mock(list) else { return };
    let delegate =
        Delegate::start(&mock, Arc::new(Answering { decision: None, asked: Default::default() })).await;
    let tools = delegate.servers.tools();
    let mut names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
    names.sort();
    assert_eq!(names, ["mcp__bosun__bosun_continue", "mcp__bosun__bosun_task"]);

    let (failed, answer) =
        delegate.call("bosun_task", json!({"task": "hello", "workspace": delegate.path("allowed/ws")})).await;
    assert!(!failed, "{answer}");
    assert_eq!(answer, "Hi from the delegate.");
    let store = bosun_store::Store::open_read_only(delegate.home.path().join("bosun/sessions.db")).unwrap();
    let sessions = store.list(&bosun_store::ListFilter::default()).unwrap();
    assert_eq!(sessions.len(), 1);
    let id = sessions[0].id.clone();

    let (failed, answer) =
        delegate.call("bosun_continue", json!({"session_id": id, "task": "and then"})).await;
    assert!(!failed, "{answer}");
    assert_eq!(answer, "Then this.");
    delegate.servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_outside_the_allowed_folders_and_a_looser_mode_are_refused() {
    let Some(mock) = mock(Vec::new()) else { return };
    let delegate =
        Delegate::start(&mock, Arc::new(Answering { decision: None, asked: Default::default() })).await;
    let (failed, said) =
        delegate.call("bosun_task", json!({"task": "x", "workspace": delegate.path("elsewhere")})).await;
    assert!(failed);
    assert!(said.contains("is not under a folder the user allowed"), "{said}");
    // A `..` that leads out is the same refusal, after canonicalisation.
    let sneaky = format!("{}/../../elsewhere", delegate.path("allowed/ws"));
    let (failed, said) = delegate.call("bosun_task", json!({"task": "x", "workspace": sneaky})).await;
    assert!(failed && said.contains("is not under a folder the user allowed"), "{said}");
    let (failed, said) = delegate
        .call(
            "bosun_task",
            json!({"task": "x", "workspace": delegate.path("allowed/ws"), "mode": "autonomous"}),
        )
        .await;
    assert!(failed);
    assert!(said.contains("looser than the user's own"), "{said}");
    assert!(mock.journal().is_empty(), "no model was asked");
    delegate.servers.shutdown().await;
}

fn write_fixtures(word: &str, answer: &str) -> Vec<Value> {
    vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "from the delegate\n"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"content": answer}}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_asked_of_the_calling_client_and_its_yes_lets_the_call_run() {
    let Some(mock) = mock(write_fixtures("write", "Wrote it.")) else { return };
    let answering = Arc::new(Answering { decision: Some("once"), asked: Default::default() });
    let delegate = Delegate::start(&mock, answering.clone()).await;
    let (failed, answer) =
        delegate.call("bosun_task", json!({"task": "write", "workspace": delegate.path("allowed/ws")})).await;
    assert!(!failed, "{answer}");
    assert_eq!(answer, "Wrote it.");
    let asked = answering.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("write_file"), "{asked:?}");
    let written = std::fs::read_to_string(delegate.home.path().join("allowed/ws/note.txt")).unwrap();
    assert_eq!(written, "from the delegate\n");
    delegate.servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_approval_leaves_no_effect() {
    let Some(mock) = mock(write_fixtures("write", "Could not write.")) else { return };
    let answering = Arc::new(Answering { decision: None, asked: Default::default() });
    let delegate = Delegate::start(&mock, answering.clone()).await;
    let (failed, answer) =
        delegate.call("bosun_task", json!({"task": "write", "workspace": delegate.path("allowed/ws")})).await;
    assert!(!failed, "{answer}");
    assert_eq!(answer, "Could not write.");
    assert_eq!(answering.asked.lock().unwrap().len(), 1);
    assert!(!delegate.home.path().join("allowed/ws/note.txt").exists(), "a denied call has no effect");
    let result = mock.last_request();
    assert!(result.contains("denied"), "the model read the denial: {result}");
    delegate.servers.shutdown().await;
}
