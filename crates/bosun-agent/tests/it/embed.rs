//! `examples/embed.rs`, an embedder's program, run as a process against the
//! real aimock server, with the user's configuration in a sandboxed home
//! naming a real MCP server (the reference everything server) and a skill:
//! its own tool is offered and called, its approval policy refuses the
//! shell command the model asks for, the events come out as JSON lines, and
//! the resumed session sends the first turn's history. Without aimock or the
//! server it FAILS, unless `BOSUN_SKIP_AIMOCK=1` / `BOSUN_SKIP_MCP=1` say to
//! skip.

use std::path::PathBuf;
use std::process::Command;

use bosun_testing::Aimock;
use serde_json::{Value, json};

/// The example's binary: `cargo test` builds examples beside the test
/// binaries (`target/<profile>/examples/`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile_dir.join("examples/embed");
    assert!(
        path.is_file(),
        "{} is not built: `cargo test -p bosun-agent` builds the examples",
        path.display()
    );
    path
}

fn fixtures() -> Value {
    let turn = |index: u32, response: Value| json!({"match": {"userMessage": "build", "turnIndex": index}, "response": response});
    json!({"fixtures": [
        turn(0, json!({"toolCalls": [{"name": "last_build", "arguments": {}}]})),
        turn(1, json!({"toolCalls": [{"name": "shell", "arguments": {"command": "rm notes.txt"}}]})),
        turn(2, json!({"content": "The last build passed."})),
        json!({"match": {"userMessage": "still", "turnIndex": 3}, "response": {"content": "Still passing."}}),
    ]})
}

#[test]
fn the_embed_example_runs_a_task_with_its_tool_policy_servers_and_skills_and_resumes_it() {
    let Some(server) = bosun_testing::mcp::everything_server() else { return };
    let Some(mock) = Aimock::start(&fixtures()) else { return };
    let root = tempfile::tempdir().unwrap();
    let (home, work, data) = (root.path().join("home"), root.path().join("work"), root.path().join("data"));
    let config = home.join(".config/bosun");
    std::fs::create_dir_all(config.join("skills/release-notes")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "keep me\n").unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "model = \"openai-compatible/test-model\"\nbase_url = \"{}/v1\"\n\n[mcp_servers.everything]\n\
             command = \"node\"\nargs = [{}, \"stdio\"]\n",
            mock.url(),
            serde_json::to_string(&server.display().to_string()).unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        config.join("skills/release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Writes the release notes from the changelog.\n---\nRead CHANGELOG.md.\n",
    )
    .unwrap();

    let output = Command::new(example())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        .env("HOME", &home)
        .env("BOSUN_HOME", &data)
        .arg(&work)
        .args(["did the last build pass?", "still passing?"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}\nstdout: {stdout}\nstderr: {stderr}", output.status);

    // Both answers, and the events as JSON, the tool's result among them.
    let answers: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("answer: ")).collect();
    assert_eq!(answers, ["The last build passed.", "Still passing."], "{stdout}");
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(events.len() >= 6, "{stdout}");
    assert!(events.iter().any(|e| e.to_string().contains("build 4711 passed")), "{stdout}");

    // The policy refused the command: the file is there, and the model was told why.
    assert_eq!(std::fs::read_to_string(work.join("notes.txt")).unwrap(), "keep me\n");
    let journal = mock.journal();
    assert_eq!(journal.len(), 4, "{journal:#?}");
    let body = |i: usize| journal[i]["body"].to_string();
    assert!(body(2).contains("this program allows reads only"), "{}", body(2));

    // The first request offered the program's tool, the server's and the skill.
    let first = body(0);
    for offered in ["last_build", "mcp__everything__echo", "release-notes"] {
        assert!(first.contains(offered), "`{offered}` not in the first request: {first}");
    }
    // The resumed session sent the first turn's history.
    assert!(
        body(3).contains("The last build passed.") && body(3).contains("build 4711 passed"),
        "{}",
        body(3)
    );
}
