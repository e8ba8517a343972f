//! End to end: MCP servers through the real `bosun` binary. The servers are
//! the reference ones (npm `@modelcontextprotocol/server-everything`, from
//! `test-peers/`, found by `bosun_testing::mcp`), configured in the user's
//! config file of a sandboxed home; the model is aimock, as in `e2e.rs`.
//!
//! A tool call reaching the server and its result the next request, in
//! `exec` and `resume`; a call refused without a terminal (MCP tools are
//! `external`, so propose and write modes ask); a server that cannot start;
//! a server killed mid-call; Ctrl-C mid-call; SIGTERM and SIGHUP mid
//! `shell` call and Ctrl-C while the servers start (no child left, exit
//! 128 + the signal); `bosun mcp add|list|remove|tools`; an untrusted
//! project's `.mcp.json`.
//!
//! Each everything server is started with a tag argument unique to its
//! sandbox after `stdio` (which the server ignores), so a test finds its own
//! server's process in `/proc` and no other test's. Without the servers or
//! aimock every test FAILS, unless `BOSUN_SKIP_MCP=1` (or
//! `BOSUN_SKIP_AIMOCK=1`) says to skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support;

use support::*;

/// How long a process may take to disappear once it should be gone.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The echo call the model makes, and what the server answers to it.
const ECHO: &str = "mcp__everything__echo";
const ECHOED: &str = "Echo: ahoy-42";
const LONG: &str = "mcp__everything__trigger-long-running-operation";

/// The reference server's entry point, or `None` to skip.
#[track_caller]
fn everything() -> Option<PathBuf> {
    bosun_testing::mcp::everything_server()
}

/// A TOML (and JSON) string literal.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// The argument that tells this sandbox's servers from every other test's.
fn tag(sandbox: &Sandbox) -> String {
    format!("bosun-test-tag={}", sandbox.root.path().display())
}

/// `[mcp_servers.NAME]` starting the everything server over stdio, tagged
/// with `sandbox`'s tag.
fn everything_table(name: &str, entry: &Path, sandbox: &Sandbox) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{}, \"stdio\", {}]\n",
        quoted(&entry.display().to_string()),
        quoted(&tag(sandbox))
    )
}

/// The user's config file in the sandbox (`$XDG_CONFIG_HOME/bosun/config.toml`).
fn user_config(sandbox: &Sandbox) -> PathBuf {
    sandbox.path("xdg/bosun/config.toml")
}

fn write_user_config(sandbox: &Sandbox, text: &str) {
    std::fs::create_dir_all(sandbox.path("xdg/bosun")).unwrap();
    std::fs::write(user_config(sandbox), text).unwrap();
}

/// A sandbox whose user config starts the everything server as `everything`.
fn everything_sandbox(entry: &Path) -> Sandbox {
    let sandbox = task_sandbox();
    write_user_config(&sandbox, &everything_table("everything", entry, &sandbox));
    sandbox
}

/// The long-running operation: 30 steps of a second, one progress
/// notification each.
fn long_call() -> Value {
    json!({"duration": 30, "steps": 30})
}

/// The tool names offered in the `index`th request aimock received.
fn offered(mock: &Aimock, index: usize) -> Vec<String> {
    let journal = mock.journal();
    let tools = journal[index]["body"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

/// The `tool_end` event of `name`.
fn tool_end<'a>(events: &'a [Value], name: &str) -> &'a Value {
    of_type(events, "tool_end")
        .into_iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no tool_end of {name}: {events:#?}"))
}

// ---------------------------------------------------------------- /proc

/// Pids of the live processes one of whose arguments is exactly `arg`
/// (zombies have no command line, so they are not among them).
fn processes_with_arg(arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// The parent pid of `pid`, from `/proc/PID/stat` (after the `)` that ends
/// the command name come the state and the parent pid).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The one server process of `sandbox`, started by `bosun`: its child, or
/// (in the OS sandbox) the child of the waiter bosun forked, the server
/// being PID 1 of its own namespace.
fn server_of(sandbox: &Sandbox, bosun: u32) -> u32 {
    let pids = processes_with_arg(&tag(sandbox));
    assert_eq!(pids.len(), 1, "one server process of this test: {pids:?}");
    let parent = parent_of(pids[0]);
    let started_by_bosun = parent == Some(bosun) || parent.and_then(parent_of) == Some(bosun);
    assert!(
        started_by_bosun,
        "the server {} is bosun's ({bosun}) child or grandchild: parent {parent:?}",
        pids[0]
    );
    pids[0]
}

/// Polls until `done` holds, failing with `what` after `GONE_WITHIN`. The
/// pause between checks only spares the machine's cores; the condition is
/// what ends the wait.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + GONE_WITHIN;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// `bosun exec --json` on a long MCP call, waited on until the server has
/// reported progress on it (so the call is in flight on the server).
fn long_call_in_flight(sandbox: &Sandbox, mock: &Aimock, word: &str) -> Running {
    let mut cmd = sandbox.exec(Api::OpenAiChat, mock);
    cmd.args(["--json", "--dangerously-approve-all", &format!("a {word} call")]);
    let mut running = Running::spawn(cmd, None);
    running.wait_for("the server's progress on the call", |r| r.stdout().contains("\"tool_progress\""));
    running
}

// ---------------------------------------------------------------- calls

#[test]
fn an_mcp_tool_call_reaches_the_server_and_its_result_the_next_request() {
    let Some(entry) = everything() else { return };
    let list = call_then_answer("echo", ECHO, json!({"message": "ahoy-42"}), ECHOED, "done");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = everything_sandbox(&entry);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", "please echo"]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "done\n");
    for shown in ["mcp: starting everything", "mcp: everything ready (", &format!("● {ECHO}")] {
        assert!(out.stderr.contains(shown), "no {shown:?} in stderr:\n{}", out.stderr);
    }
    let tools = offered(&mock, 0);
    assert!(tools.iter().any(|t| t == ECHO) && tools.iter().any(|t| t == "read_file"), "{tools:?}");
    assert!(mock.last_request().contains(ECHOED), "{}", mock.last_request());
    // The server was shut down with the session.
    wait_until("the server outlived bosun", || processes_with_arg(&tag(&sandbox)).is_empty());

    // Autonomous mode allows external tools without the flag.
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--mode", "autonomous", "--json", "please echo"]);
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    assert!(of_type(&events, "approval_requested").is_empty(), "{}", out.stdout);
    let echo = tool_end(&events, ECHO);
    assert_eq!(echo["is_error"], false, "{echo}");
    assert_eq!(echo["output"], ECHOED, "{echo}");
}

#[test]
fn resume_starts_the_servers_too() {
    let Some(entry) = everything() else { return };
    let mut list = call_then_answer("echo", ECHO, json!({"message": "ahoy-42"}), ECHOED, "done");
    // The resumed turn: two assistant messages are already in the history.
    list.extend([
        json!({"match": {"userMessage": "again", "turnIndex": 2}, "response": {
            "toolCalls": [{"name": ECHO, "arguments": {"message": "again-7"}}]}}),
        json!({"match": {"toolResultContains": "Echo: again-7", "turnIndex": 3},
            "response": {"content": "done again"}}),
    ]);
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = everything_sandbox(&entry);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", "please echo"]);
    run(cmd).expect_code(0);
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test")
        .args(["resume", "--last", "--dangerously-approve-all", "again please"])
        .args(Api::OpenAiChat.args(&mock));
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "done again\n");
    assert!(out.stderr.contains("mcp: everything ready ("), "{}", out.stderr);
    assert!(mock.last_request().contains("Echo: again-7"), "{}", mock.last_request());
}

#[test]
fn without_a_terminal_an_mcp_call_is_refused_and_the_model_sees_it() {
    let Some(entry) = everything() else { return };
    let refusal = "without a terminal to ask on";
    let list = call_then_answer("echo", ECHO, json!({"message": "ahoy-42"}), refusal, "not allowed");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = everything_sandbox(&entry);
    // External tools ask in propose mode (the default) and in write mode;
    // stdin null and stderr piped: there is no terminal to ask on.
    for mode in ["propose", "write"] {
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.args(["--mode", mode, "--json", "please echo"]);
        let out = run(cmd);
        out.expect_code(0);
        let events = json_events(&out.stdout);
        let asked: Vec<&Value> = of_type(&events, "approval_requested").iter().map(|e| &e["name"]).collect();
        assert_eq!(asked, [&json!(ECHO)], "{mode}: {}", out.stdout);
        let decided = of_type(&events, "approval_decided");
        assert_eq!(decided.len(), 1, "{mode}");
        assert_eq!(decided[0]["decision"], "deny", "{mode}: {}", decided[0]);
        let echo = tool_end(&events, ECHO);
        assert_eq!(echo["is_error"], true, "{mode}: {echo}");
        assert!(echo["output"].as_str().unwrap().contains(refusal), "{mode}: {echo}");
        let text: String =
            of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(text, "not allowed", "{mode}");
        let request = mock.last_request();
        assert!(request.contains(refusal) && !request.contains(ECHOED), "{mode}: the call ran: {request}");
    }
}

#[test]
fn a_server_that_fails_to_start_is_named_and_the_session_goes_on() {
    let Some(entry) = everything() else { return };
    let list = call_then_answer("echo", ECHO, json!({"message": "ahoy-42"}), ECHOED, "done");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let broken = "[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n";
    write_user_config(&sandbox, &format!("{broken}\n{}", everything_table("everything", &entry, &sandbox)));
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", "please echo"]);
    let out = run(cmd);
    out.expect_code(0);
    assert_eq!(out.stdout, "done\n");
    let failure = "mcp: MCP server `broken`: command `/nonexistent/mcp-server` not found";
    assert!(out.stderr.contains(failure), "{}", out.stderr);
    assert!(out.stderr.contains("mcp: everything ready ("), "{}", out.stderr);
    let tools = offered(&mock, 0);
    assert!(tools.iter().any(|t| t == ECHO), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("mcp__broken__")), "{tools:?}");
}

#[test]
fn a_server_killed_mid_call_gives_an_error_result_and_the_session_continues() {
    let Some(entry) = everything() else { return };
    let during = "during the call of `trigger-long-running-operation`";
    let list = call_then_answer("doomed", LONG, long_call(), during, "The server died.");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = everything_sandbox(&entry);
    let running = long_call_in_flight(&sandbox, &mock, "doomed");
    let server = server_of(&sandbox, running.child.id());
    signal(server, rustix::process::Signal::KILL);
    let out = running.finish();
    out.expect_code(0);
    let events = json_events(&out.stdout);
    let call = tool_end(&events, LONG);
    assert_eq!(call["is_error"], true, "{call}");
    let output = call["output"].as_str().unwrap();
    let said = format!("MCP server `everything` exited (killed by SIGKILL) {during}");
    assert!(output.contains(&said), "{call}");
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "The server died.");
    assert_ended(&events, "completed");
    assert!(out.stderr.contains("mcp: everything exited (killed by SIGKILL)"), "{}", out.stderr);
    assert!(mock.last_request().contains(during), "{}", mock.last_request());
    // Between the rounds the dead server's tools were withdrawn: the next
    // request offers none of them, and the change is an event.
    assert!(offered(&mock, 0).iter().any(|t| t == ECHO));
    assert!(!offered(&mock, 1).iter().any(|t| t.starts_with("mcp__everything__")), "{:?}", offered(&mock, 1));
    let changed = of_type(&events, "tools_changed");
    assert_eq!(changed.len(), 1, "{events:#?}");
    let withdrawn = changed[0]["withdrawn"].as_array().unwrap();
    assert!(withdrawn.contains(&json!(ECHO)) && withdrawn.contains(&json!(LONG)), "{}", changed[0]);
    let notices = changed[0]["notices"].to_string();
    assert!(notices.contains("its tools are withdrawn; restarting it once"), "{notices}");
}

/// A sandbox whose user config starts bosun-testing's Python peer as `py`.
fn python_sandbox(allow_new_tools: bool) -> Sandbox {
    let sandbox = task_sandbox();
    let script = sandbox.path("py_peer.py");
    std::fs::write(&script, bosun_testing::mcp::PY_PEER).unwrap();
    let table = format!(
        "[mcp_servers.py]\ncommand = \"python3\"\nargs = [{}]\nallow_new_tools = {allow_new_tools}\n",
        quoted(&script.display().to_string())
    );
    write_user_config(&sandbox, &table);
    sandbox
}

#[test]
fn a_flood_of_mcp_progress_is_a_few_json_events_ending_with_the_newest() {
    let count = 200_000;
    let list = call_then_answer("flood", "mcp__py__flood", json!({"count": count}), "flooded", "calm");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = python_sandbox(false);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--mode", "autonomous", "--json", "flood"]);
    let started = Instant::now();
    let out = run(cmd);
    let elapsed = started.elapsed();
    out.expect_code(0);
    let events = json_events(&out.stdout);
    assert_ended(&events, "completed");
    let progress = of_type(&events, "tool_progress");
    // One event per call per interval at most, and the first one at once.
    let interval = bosun_core::PROGRESS_INTERVAL.as_millis();
    let bound = usize::try_from(elapsed.as_millis() / interval).unwrap() + 2;
    assert!(
        !progress.is_empty() && progress.len() <= bound,
        "{} progress events for {count} notifications in {elapsed:?}",
        progress.len()
    );
    // Shown last is the newest the call saw before its result. rmcp hands
    // each notification to its own task, so under load the last few may be
    // handled after the result arrived, and then belong to no call: the
    // last shown is near the end, not always the very end (core's own test,
    // `a_calls_newest_report_is_shown_even_when_the_channel_was_full`, holds
    // the exact property for reports a tool makes).
    let last = progress[progress.len() - 1]["message"].as_str().unwrap();
    let done: u64 = last.rsplit(' ').next().and_then(|r| r.split('/').next()).unwrap().parse().unwrap();
    assert!(done >= count - count / 20, "the newest is shown last, or nearly: {last}");
    let end = events.iter().position(|e| e["type"] == "tool_end").unwrap();
    let last_progress = events.iter().rposition(|e| e["type"] == "tool_progress").unwrap();
    assert!(last_progress < end, "progress comes before the call's end");
    assert!(out.stdout.len() < 64 * 1024, "{} bytes of JSON", out.stdout.len());
}

#[test]
fn a_changed_tool_list_withdraws_and_adds_between_rounds_only_when_allowed() {
    let fresh = "mcp__py__fresh";
    let list = vec![
        json!({"match": {"userMessage": "swap", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "mcp__py__swap", "arguments": {}}]}}),
        json!({"match": {"toolResultContains": "swapped", "turnIndex": 1}, "response": {
            "toolCalls": [{"name": fresh, "arguments": {}}]}}),
        json!({"match": {"toolResultContains": "unknown tool", "turnIndex": 2}, "response": {"content": "refused"}}),
        json!({"match": {"toolResultContains": "unknown", "turnIndex": 2}, "response": {"content": "reached"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    // One `exec` on the peer; its events and its answer.
    let swap = |allow_new_tools: bool| {
        let sandbox = python_sandbox(allow_new_tools);
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.args(["--mode", "autonomous", "--json", "swap the tools"]);
        let out = run(cmd);
        out.expect_code(0);
        let events = json_events(&out.stdout);
        let text: String =
            of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        (events, text)
    };

    // Allowed: `big` is withdrawn, `env` (changed) and `fresh` are added
    // between the rounds, and the call of `fresh` reaches the server.
    let (events, text) = swap(true);
    assert_eq!(text, "reached");
    let changed = of_type(&events, "tools_changed");
    assert_eq!(changed.len(), 1, "{events:#?}");
    assert_eq!(changed[0]["withdrawn"], json!(["mcp__py__big"]), "{}", changed[0]);
    assert_eq!(changed[0]["added"], json!(["mcp__py__env", fresh]), "{}", changed[0]);
    assert!(offered(&mock, 0).iter().any(|t| t == "mcp__py__big"));
    let second = offered(&mock, 1);
    assert!(second.iter().any(|t| t == fresh) && !second.iter().any(|t| t == "mcp__py__big"), "{second:?}");

    // Not allowed: the new and changed tools are named, not offered.
    let (events, text) = swap(false);
    assert_eq!(text, "refused");
    let changed = of_type(&events, "tools_changed");
    assert_eq!(changed[0]["withdrawn"], json!(["mcp__py__big", "mcp__py__env"]), "{}", changed[0]);
    assert!(changed[0].get("added").is_none(), "{}", changed[0]);
    let notices = changed[0]["notices"].to_string();
    assert!(notices.contains(fresh) && notices.contains("allow_new_tools"), "{notices}");
    let fourth = offered(&mock, 4);
    assert!(!fourth.iter().any(|t| t == fresh || t.starts_with("mcp__py__env")), "{fourth:?}");
}

#[test]
fn ctrl_c_during_an_mcp_call_leaves_no_server_process() {
    let Some(entry) = everything() else { return };
    let list = call_then_answer("endless", LONG, long_call(), "completed", "unreachable");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = everything_sandbox(&entry);
    let running = long_call_in_flight(&sandbox, &mock, "endless");
    let bosun = running.child.id();
    let server = server_of(&sandbox, bosun);
    signal(bosun, rustix::process::Signal::INT);
    let out = running.finish();
    out.expect_code(130);
    let events = json_events(&out.stdout);
    assert_ended(&events, "cancelled");
    assert_eq!(mock.journal().len(), 1, "no request after the interrupt");
    // Gone altogether: not running, and not a zombie left for someone else
    // to reap.
    wait_until("the server process is still there", || !Path::new(&format!("/proc/{server}")).exists());
    wait_until("a process of the server is still there", || processes_with_arg(&tag(&sandbox)).is_empty());
}

/// bosun killed outright (SIGKILL: no handler runs) while a server's
/// process has started a `setsid` grandchild: the server is PID 1 of its
/// sandbox's namespace and dies with bosun (parent-death signals down the
/// chain), and the grandchild with it. Unconfined, the grandchild left the
/// server's group and lived on.
#[test]
fn sigkill_of_bosun_leaves_no_setsid_grandchild_of_a_server() {
    let Some(entry) = everything() else { return };
    let list = call_then_answer("endless", LONG, long_call(), "completed", "unreachable");
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let script = format!(
        "setsid bash -c 'sleep 86400; : \"$0\"' {tag} </dev/null >/dev/null 2>&1 & exec node {entry} stdio {tag}",
        tag = quoted(&tag(&sandbox)),
        entry = quoted(&entry.display().to_string()),
    );
    write_user_config(
        &sandbox,
        &format!("[mcp_servers.everything]\ncommand = \"bash\"\nargs = [\"-c\", {}]\n", quoted(&script)),
    );
    let mut running = long_call_in_flight(&sandbox, &mock, "endless");
    wait_until("the server and its grandchild run", || processes_with_arg(&tag(&sandbox)).len() == 2);
    signal(running.child.id(), rustix::process::Signal::KILL);
    let _ = running.child.wait();
    wait_until("a process the server started outlived bosun", || {
        processes_with_arg(&tag(&sandbox)).is_empty()
    });
}

// ---------------------------------------------------------------- signals

/// The `shell` call of the signal test: says it started, then writes on
/// until killed. The comment makes the command line unique to `sandbox`.
fn endless_loop(sandbox: &Sandbox) -> String {
    format!("echo started > f; while :; do date >> out; sleep 0.1; done # {}", tag(sandbox))
}

/// SIGTERM and SIGHUP during `exec` end it as Ctrl-C does: the turn is
/// cancelled (the shell's process group killed), the MCP servers stopped,
/// and bosun exits with 128 + the signal's number, leaving no child.
#[test]
fn sigterm_or_sighup_mid_shell_call_leaves_no_child_and_exits_128_plus_the_signal() {
    use rustix::process::Signal;
    let Some(entry) = everything() else { return };
    for (sent, code) in [(Signal::TERM, 143), (Signal::HUP, 129)] {
        let sandbox = everything_sandbox(&entry);
        let command = endless_loop(&sandbox);
        let list = vec![json!({"match": {"userMessage": "loop", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}})];
        let Some(mock) = Aimock::start(&fixtures(list)) else { return };
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.args(["--json", "--dangerously-approve-all", "run the loop"]);
        let running = Running::spawn(cmd, None);
        let bosun = running.child.id();
        wait_until("the loop to start", || sandbox.ws().join("f").exists());
        wait_until("the loop to write", || sandbox.ws().join("out").exists());
        // (Its forks carry its command line until they exec.)
        assert!(!processes_with_arg(&command).is_empty(), "the loop runs");
        let server = server_of(&sandbox, bosun);
        signal(bosun, sent);
        let out = running.finish();
        out.expect_code(code);
        let events = json_events(&out.stdout);
        assert_ended(&events, "cancelled");
        assert_eq!(mock.journal().len(), 1, "no request after the signal");
        wait_until("the loop outlived bosun", || processes_with_arg(&command).is_empty());
        wait_until("the server outlived bosun", || !Path::new(&format!("/proc/{server}")).exists());
        // Nothing writes any more: bosun and the loop are gone, so a second
        // read after both are known gone sees what the first saw.
        let written = std::fs::read(sandbox.ws().join("out")).unwrap();
        wait_until("a process of the server is still there", || {
            processes_with_arg(&tag(&sandbox)).is_empty()
        });
        assert_eq!(std::fs::read(sandbox.ws().join("out")).unwrap(), written, "the loop still writes");
    }
}

/// Ctrl-C while the MCP servers start: the ones started so far are stopped
/// and bosun exits 130 (not killed by the signal). The server here never
/// answers `initialize`, so only the signal ends its start.
#[test]
fn ctrl_c_while_mcp_servers_start_stops_them_and_exits_130() {
    let sandbox = task_sandbox();
    let tag = tag(&sandbox);
    write_user_config(
        &sandbox,
        &format!(
            "[mcp_servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"while read -r line; do :; done\", {}]\n\
             startup_timeout_ms = 600000\n",
            quoted(&tag)
        ),
    );
    // No model request is made before the servers are up: nothing listens.
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test").args([
        "exec",
        "--model",
        "openai/gpt-test",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "a task",
    ]);
    let running = Running::spawn(cmd, None);
    let bosun = running.child.id();
    wait_until("the server to start", || !processes_with_arg(&tag).is_empty());
    signal(bosun, rustix::process::Signal::INT);
    let out = running.finish();
    out.expect_code(130);
    assert!(out.stderr.contains("mcp: starting mute"), "{}", out.stderr);
    assert!(out.stderr.contains("interrupted"), "{}", out.stderr);
    wait_until("the server outlived bosun", || processes_with_arg(&tag).is_empty());
}

// ---------------------------------------------------------------- `bosun mcp`

#[test]
fn mcp_add_list_tools_and_remove_round_trip_through_the_user_config() {
    let Some(entry) = everything() else { return };
    let sandbox = task_sandbox();
    let entry = entry.display().to_string();
    let tag = tag(&sandbox);
    let mcp = |args: &[&str]| {
        let mut cmd = sandbox.bosun();
        cmd.arg("mcp").args(args);
        run(cmd)
    };
    let config = user_config(&sandbox);

    let out = mcp(&["list"]);
    out.expect_code(0);
    assert!(out.stdout.starts_with("no MCP servers configured"), "{}", out.stdout);

    let out = mcp(&["add", "everything", "--", "node", &entry, "stdio", &tag]);
    out.expect_code(0);
    let summary = format!("stdio: node {entry} stdio {tag}");
    let added = format!("added MCP server `everything` ({summary}) to {}\n", config.display());
    assert_eq!(out.stdout, added);
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains("[mcp_servers.everything]") && written.contains("command = \"node\""),
        "{written}"
    );
    // The same name again is refused, the file untouched; --replace replaces.
    let out = mcp(&["add", "everything", "--url", "https://example.invalid/mcp"]);
    out.expect_code(2);
    assert!(out.stderr.contains("an MCP server named `everything` is already in"), "{}", out.stderr);
    assert!(out.stderr.contains("--replace"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written, "nothing was overwritten");
    let out = mcp(&["add", "everything", "--replace", "--", "node", &entry, "stdio", &tag]);
    out.expect_code(0);
    assert_eq!(out.stdout, format!("set MCP server `everything` ({summary}) in {}\n", config.display()));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written, "the same entry, written again");

    let out = mcp(&["list"]);
    out.expect_code(0);
    assert_eq!(out.stdout, format!("everything  enabled  {summary}  ({})\n", config.display()));

    let out = mcp(&["tools", "everything"]);
    out.expect_code(0);
    let heading = format!("{ECHO}  [external]");
    let (_, echo) = out.stdout.split_once(&format!("{heading}\n")).unwrap_or_else(|| {
        panic!("no {heading:?} line in\n{}", out.stdout);
    });
    let echo = echo.split("\n\n").next().unwrap();
    assert!(echo.contains("Echoes back the input string"), "{echo}");
    let (_, schema) = echo.split_once("parameters: ").expect("a schema");
    let schema: Value = serde_json::from_str(schema).unwrap_or_else(|e| panic!("{e}: {schema}"));
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["message"]["type"], "string", "{schema}");
    assert_eq!(schema["required"], json!(["message"]), "{schema}");
    assert!(out.stdout.contains(&format!("{LONG}  [external]")), "{}", out.stdout);
    assert!(out.stderr.contains("mcp: everything ready ("), "{}", out.stderr);
    let out = mcp(&["tools", "nosuch"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no MCP server `nosuch` is configured"), "{}", out.stderr);

    // Tokens a login left go with the server.
    let tokens = sandbox.path("bosun/mcp-auth/everything.json");
    std::fs::create_dir_all(tokens.parent().unwrap()).unwrap();
    std::fs::write(&tokens, "{}").unwrap();
    let out = mcp(&["remove", "everything"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        format!(
            "removed MCP server `everything` from {}\nremoved its OAuth tokens ({})\n",
            config.display(),
            tokens.display()
        )
    );
    assert!(!tokens.exists());
    let out = mcp(&["list"]);
    out.expect_code(0);
    assert!(out.stdout.starts_with("no MCP servers configured"), "{}", out.stdout);
    let out = mcp(&["remove", "everything"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no MCP server `everything` is configured"), "{}", out.stderr);
    let out = mcp(&["tools"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no MCP server is configured"), "{}", out.stderr);
    // No server was left running by `mcp tools`.
    wait_until("a server outlived `bosun mcp tools`", || processes_with_arg(&tag).is_empty());
}

#[test]
fn an_untrusted_projects_mcp_json_is_not_started() {
    let list = vec![json!({"match": {"userMessage": "hello"}, "response": {"content": "hi"}})];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    // In the workspace: the sandbox lets a server write there only.
    let marker = sandbox.ws().join("marker");
    let script = format!(": > {}", marker.display());
    let mcp_json = json!({"mcpServers": {"planted": {"command": "/bin/sh", "args": ["-c", script]}}});
    std::fs::write(sandbox.ws().join(".mcp.json"), mcp_json.to_string()).unwrap();
    let notice =
        ".mcp.json names MCP servers, which an untrusted project cannot start (`bosun trust` allows them)";
    let exec = || {
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.arg("hello there");
        let out = run(cmd);
        out.expect_code(0);
        assert_eq!(out.stdout, "hi\n");
        out
    };

    let mut cmd = sandbox.bosun();
    cmd.args(["mcp", "list"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.starts_with("no MCP servers configured"), "{}", out.stdout);
    assert!(!out.stdout.contains("planted"), "{}", out.stdout);
    assert!(out.stderr.contains(notice), "{}", out.stderr);

    let out = exec();
    assert!(out.stderr.contains(notice), "{}", out.stderr);
    assert!(!out.stderr.contains("planted"), "{}", out.stderr);
    assert!(!marker.exists(), "the project's server ran");

    // Trusted, the same file is read and its server started: the marker
    // shows that the check above could see a start. (`sh` exits without
    // answering `initialize`, so it fails to start, and the session goes on.)
    let mut cmd = sandbox.bosun();
    cmd.arg("trust");
    run(cmd).expect_code(0);
    let mut cmd = sandbox.bosun();
    cmd.args(["mcp", "list"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.starts_with("planted  enabled  stdio: /bin/sh -c"), "{}", out.stdout);
    let out = exec();
    assert!(!out.stderr.contains(notice), "{}", out.stderr);
    assert!(out.stderr.contains("mcp: MCP server `planted` failed to initialize"), "{}", out.stderr);
    assert!(marker.exists(), "the trusted project's server did not run: {}", out.stderr);
}

#[test]
fn the_mcp_command_lists_each_server_its_state_and_its_tools() {
    let Some(entry) = everything() else { return };
    let Some(mock) = Aimock::start(&fixtures(Vec::new())) else { return };
    let sandbox = task_sandbox();
    let broken = "[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n";
    write_user_config(&sandbox, &format!("{}{broken}", everything_table("everything", &entry, &sandbox)));
    let mut pty = sandbox.converse(&mock, &[], 200);
    pty.type_line("/mcp");
    pty.wait_shown("everything: running (pid ");
    let row = pty.shown().into_iter().find(|row| row.starts_with("everything: running")).unwrap();
    assert!(row.contains(" tools: ") && row.contains("echo"), "{row}");
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}

/// An agent delegating to an agent: the outer bosun's own MCP client runs
/// `bosun mcp-server` (the same binary) as a configured server, and the
/// outer model hands the inner bosun a task through `bosun_task`.
#[test]
fn bosun_delegates_a_task_to_bosun_over_mcp() {
    let list = vec![
        json!({"match": {"userMessage": "delegate", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "mcp__sub__bosun_task", "arguments": {"task": "inner hello", "workspace": "WS"}}]}}),
        json!({"match": {"userMessage": "inner hello", "turnIndex": 0}, "response": {"content": "Inner answer."}}),
        json!({"match": {"toolResultContains": "Inner answer.", "turnIndex": 1}, "response": {"content": "The delegate said so."}}),
    ];
    let sandbox = task_sandbox();
    let ws = sandbox.ws().display().to_string();
    let list: Vec<Value> = list
        .into_iter()
        .map(|f| serde_json::from_str(&f.to_string().replace("\"WS\"", &quoted(&ws))).unwrap())
        .collect();
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let inner_xdg = sandbox.path("inner-xdg");
    std::fs::create_dir_all(inner_xdg.join("bosun")).unwrap();
    std::fs::write(
        inner_xdg.join("bosun/config.toml"),
        format!("model = \"openai/gpt-test\"\nbase_url = \"{}/v1\"\n", mock.url()),
    )
    .unwrap();
    let table = format!(
        "[mcp_servers.sub]\ncommand = {}\nargs = [\"mcp-server\", \"--allow-root\", {}]\n\
         # The inner bosun reaches the model on loopback and keeps its own store.\n\
         sandbox = \"off\"\n\
         env = {{ XDG_CONFIG_HOME = {}, BOSUN_HOME = {} }}\nenv_vars = [\"OPENAI_API_KEY\"]\n",
        quoted(&bosun_bin().display().to_string()),
        quoted(&ws),
        quoted(&inner_xdg.display().to_string()),
        quoted(&sandbox.path("inner-bosun").display().to_string()),
    );
    write_user_config(&sandbox, &table);
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--mode", "autonomous", "--json", "delegate"]);
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    let call = tool_end(&events, "mcp__sub__bosun_task");
    assert_eq!(call["is_error"], false, "{call}");
    assert!(call["output"].as_str().unwrap().starts_with("Inner answer."), "{call}");
    let text: String = of_type(&events, "text_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(text, "The delegate said so.");
    // The inner session's progress reached the outer stream.
    let progress: Vec<&str> =
        of_type(&events, "tool_progress").iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert!(progress.iter().any(|m| m.contains("model round 1")), "{progress:?}");
    // The inner session is the inner bosun's own, in its own store.
    assert!(sandbox.path("inner-bosun/sessions.db").is_file());
}
