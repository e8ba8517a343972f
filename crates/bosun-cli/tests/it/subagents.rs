//! Sub-agents through the real binary against aimock (docs/agents.md): a
//! hosted model's session offers `delegate_tasks`; each task runs as a child
//! session in parallel on the same model, its first user message the task
//! and its system prompt a sub-agent's (or its named agent's body), and the
//! children's answers come back in task order as `## task N [session ID]`
//! sections. Children are sessions of their own, linked to the parent's
//! session and call, and left out of `sessions list`; their progress shows
//! on stderr as indented `↳` lines. A project's named agent narrows what its
//! child is offered, even in an untrusted project; `subagents = false`
//! (`BOSUN_SUBAGENTS=0`) offers no `delegate_tasks`.
//!
//! aimock tells the parent's requests from the children's by the last user
//! message (`userMessage` is a substring match on it): the parent's prompt
//! never contains a task's text, and each child's last user message is its
//! task. `turnIndex` is strict, so each fixture answers one position of one
//! conversation only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support;

use support::*;

const PARENT: &str = "share out the fruit counting";
const APPLES: &str = "count the apples";
const PEARS: &str = "count the pears";
/// How long aimock holds each child's first chunk: two children run one
/// after the other reach aimock at least this far apart.
const CHILD_DELAY_MS: i64 = 3000;

/// The text of a chat message's `content`, a string or text parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The text of a request's last user message (what aimock's `userMessage`
/// matches).
fn last_user(request: &Value) -> String {
    let messages = request["body"]["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().rev().find(|m| m["role"] == "user").map(|m| text_of(&m["content"])).unwrap_or_default()
}

/// The system prompt of an OpenAI Chat request.
fn system_of(request: &Value) -> String {
    let messages = request["body"]["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().find(|m| m["role"] == "system").map(|m| text_of(&m["content"])).unwrap_or_default()
}

/// The tool names a request offered, in order.
fn tools_of(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The one request of the journal whose last user message is `text`.
fn only_request<'a>(journal: &'a [Value], text: &str) -> &'a Value {
    let found: Vec<&Value> = journal.iter().filter(|r| last_user(r) == text).collect();
    assert_eq!(found.len(), 1, "one request for {text:?}: {journal:#?}");
    found[0]
}

/// The text of the request's tool-result messages, in order.
fn tool_results(request: &Value) -> Vec<String> {
    let messages = request["body"]["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "tool").map(|m| text_of(&m["content"])).collect()
}

/// The `## task N` heads of a `delegate_tasks` result, and the session id
/// each names in `[session ID]`.
fn task_heads(result: &str) -> Vec<(String, String)> {
    result
        .lines()
        .filter(|line| line.starts_with("## task "))
        .map(|line| {
            let id = line
                .split_once("[session ")
                .and_then(|(_, rest)| rest.split_once(']'))
                .map(|(id, _)| id.trim().to_owned())
                .unwrap_or_else(|| panic!("no `[session ID]` in {line:?}"));
            (line.to_owned(), id)
        })
        .collect()
}

/// `bosun sessions ARGS… --json`, parsed.
fn sessions_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut cmd = sandbox.bosun();
    cmd.arg("sessions").args(args).arg("--json");
    let out = run(cmd);
    out.expect_code(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

/// A child's answer fixture, its first chunk held `CHILD_DELAY_MS`.
fn child_answer(task: &str, answer: &str) -> Value {
    json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {"content": answer},
        "streamingProfile": {"ttft": CHILD_DELAY_MS}})
}

#[test]
fn parallel_children_answer_from_their_own_fixtures_and_are_stored_as_linked_sessions() {
    let script = vec![
        json!({"match": {"userMessage": PARENT, "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "delegate_tasks", "arguments": {"tasks": [{"task": APPLES}, {"task": PEARS}]}}]}}),
        json!({"match": {"userMessage": PARENT, "turnIndex": 1}, "response": {"content": "done"}}),
        child_answer(APPLES, "3 apples"),
        child_answer(PEARS, "5 pears"),
    ];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg(PARENT);
    let out = run(cmd);
    out.expect_code(0);
    let parent = session_from_stderr(&out.stderr);

    let journal = mock.journal();
    assert_eq!(journal.len(), 4, "the parent's two requests and one per child: {journal:#?}");
    let parents: Vec<&Value> = journal.iter().filter(|r| last_user(r) == PARENT).collect();
    assert_eq!(parents.len(), 2, "{journal:#?}");
    assert!(tools_of(parents[0]).contains(&"delegate_tasks".to_owned()), "{:?}", tools_of(parents[0]));
    assert!(!system_of(parents[0]).starts_with("You are a sub-agent"), "{}", system_of(parents[0]));

    // The children: their own conversations, a sub-agent's prompt, the
    // parent's tools, both asked before either could have answered.
    let apples = only_request(&journal, APPLES);
    let pears = only_request(&journal, PEARS);
    for child in [apples, pears] {
        let messages = child["body"]["messages"].as_array().unwrap();
        let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
        assert_eq!(users.len(), 1, "a conversation of its own: {messages:#?}");
        assert!(!child["body"]["messages"].to_string().contains(PARENT), "{messages:#?}");
        let system = system_of(child);
        assert!(system.starts_with("You are a sub-agent"), "{system}");
        assert!(tools_of(child).contains(&"read_file".to_owned()), "{:?}", tools_of(child));
        assert_eq!(child["body"]["model"], parents[0]["body"]["model"], "the parent's model");
    }
    let apart = (apples["timestamp"].as_i64().unwrap() - pears["timestamp"].as_i64().unwrap()).abs();
    assert!(
        apart < CHILD_DELAY_MS * 2 / 3,
        "in parallel: the children reached aimock {apart} ms apart, each answer held {CHILD_DELAY_MS} ms"
    );

    // The parent's second request: one tool result, the answers in task order.
    let results = tool_results(parents[1]);
    assert_eq!(results.len(), 1, "{results:#?}");
    let result = &results[0];
    let (three, five) = (result.find("3 apples"), result.find("5 pears"));
    assert!(three.is_some() && five.is_some() && three < five, "answers in task order: {result}");
    let heads = task_heads(result);
    assert_eq!(heads.len(), 2, "{result}");
    assert!(heads[0].0.starts_with("## task 1 [session ") && heads[1].0.starts_with("## task 2 [session "));
    let (first, second) = (heads[0].1.clone(), heads[1].1.clone());
    assert!(first != second && first != parent && second != parent, "{result}");
    assert!(result.find(&heads[1].0) > three, "task 1's answer under its head: {result}");

    // Child progress on stderr: indented `↳` lines naming each child.
    let arrows: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("  ↳")).collect();
    for id in [&first, &second] {
        let tail = &id[id.len().saturating_sub(8)..];
        assert!(
            arrows.iter().any(|l| l.contains(tail) && l.contains("done")),
            "a `↳ {tail} done` line: {}",
            out.stderr
        );
    }

    // Stored: each child linked to the parent and its call; listed, only the parent.
    let stored = sessions_json(&sandbox, &["show", &parent]);
    let call = stored["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| &entry[1])
        .find(|m| m["role"] == "tool_result" && m["tool_name"] == "delegate_tasks")
        .and_then(|m| m["call_id"].as_str())
        .unwrap_or_else(|| panic!("the parent's delegate_tasks result: {stored:#}"))
        .to_owned();
    assert!(stored["summary"]["parent"].is_null(), "{stored:#}");
    for (id, task, answer) in [(&first, APPLES, "3 apples"), (&second, PEARS, "5 pears")] {
        let child = sessions_json(&sandbox, &["show", id]);
        assert_eq!(child["summary"]["parent"], json!({"session": parent, "call": call}), "{child:#}");
        let history = child["history"].to_string();
        assert!(history.contains(task) && history.contains(answer), "{child:#}");
        assert!(!history.contains(PARENT), "{child:#}");
    }
    let listed = sessions_json(&sandbox, &["list"]);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, [parent.as_str()], "children are left out: {listed:#}");
    let listed = sessions_json(&sandbox, &["list", "--children"]);
    let mut ids: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    ids.sort_unstable();
    let mut all = [parent.as_str(), first.as_str(), second.as_str()];
    all.sort_unstable();
    assert_eq!(ids, all, "--children lists them too: {listed:#}");
    // Shown to a person: the parent names its sub-agents, a child its parent.
    let show = |id: &str| {
        let mut cmd = sandbox.bosun();
        cmd.args(["sessions", "show", id]);
        let out = run(cmd);
        out.expect_code(0);
        out.stdout
    };
    let shown = show(&parent);
    assert!(
        shown.contains(&format!("sub-agent {first}")) && shown.contains(&format!("sub-agent {second}")),
        "{shown}"
    );
    let shown = show(&first);
    assert!(shown.contains(&format!("sub-agent of session {parent} (call {call})")), "{shown}");
}

#[test]
fn a_named_agents_tools_list_narrows_what_the_child_is_offered() {
    let task = "look at greet.sh and say what it prints";
    let body = "READER BODY: you read files and never change them.";
    let script = vec![
        json!({"match": {"userMessage": "have the reader look", "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "delegate_tasks", "arguments": {"tasks": [
                {"task": task, "agent": "reader", "tools": ["shell"]}]}}]}}),
        json!({"match": {"userMessage": "have the reader look", "turnIndex": 1}, "response": {"content": "ok"}}),
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {"content": "it prints hello wrold"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    // A repository nothing trusts.
    std::fs::create_dir(sandbox.ws().join(".git")).unwrap();
    std::fs::create_dir_all(sandbox.ws().join(".bosun/agents")).unwrap();
    std::fs::write(
        sandbox.ws().join(".bosun/agents/reader.md"),
        format!("---\nname: reader\ndescription: reads files and reports\ntools: read_file\n---\n{body}\n"),
    )
    .unwrap();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg("have the reader look");
    let out = run(cmd);
    out.expect_code(0);

    let journal = mock.journal();
    assert_eq!(journal.len(), 4, "{journal:#?}");
    let parents: Vec<&Value> = journal.iter().filter(|r| last_user(r) == "have the reader look").collect();
    assert_eq!(parents.len(), 2, "{journal:#?}");
    let parent_tools = tools_of(parents[0]);
    assert!(
        parent_tools.contains(&"shell".to_owned()) && parent_tools.contains(&"write_file".to_owned()),
        "the parent has them: {parent_tools:?}"
    );
    let delegate = parents[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "delegate_tasks")
        .expect("delegate_tasks offered");
    let described = delegate["function"]["description"].as_str().unwrap_or_default();
    assert!(described.contains("- reader: reads files and reports"), "the agent is listed: {described}");

    let children: Vec<&Value> = journal.iter().filter(|r| last_user(r) == task).collect();
    assert_eq!(children.len(), 2, "{journal:#?}");
    for child in &children {
        let tools = tools_of(child);
        assert_eq!(tools, ["read_file"], "only the agent's tools, `shell` asked for or not");
        assert!(!tools.contains(&"shell".to_owned()) && !tools.contains(&"write_file".to_owned()));
        let system = system_of(child);
        assert!(system.starts_with(body), "the agent's body first: {system}");
        assert!(!system.contains("You are a sub-agent"), "{system}");
    }
    let read = tool_results(children[1]);
    assert!(read.iter().any(|r| r.contains("hello wrold")), "the child read the file: {read:#?}");

    let results = tool_results(parents[1]);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(results[0].starts_with("## task 1 (agent reader) [session "), "{}", results[0]);
    assert!(results[0].contains("it prints hello wrold"), "{}", results[0]);
    let heads = task_heads(&results[0]);
    let child = sessions_json(&sandbox, &["show", &heads[0].1]);
    let parent = session_from_stderr(&out.stderr);
    assert_eq!(child["summary"]["parent"]["session"].as_str(), Some(parent.as_str()), "{child:#}");
}

#[test]
fn subagents_false_offers_no_delegate_tasks() {
    let script =
        vec![json!({"match": {"userMessage": "anything to hand out"}, "response": {"content": "no"}})];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    let offered = |value: Option<&str>| -> BTreeSet<String> {
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        if let Some(value) = value {
            cmd.env("BOSUN_SUBAGENTS", value);
        }
        cmd.arg("anything to hand out");
        run(cmd).expect_code(0);
        tools_of(mock.journal().last().unwrap()).into_iter().collect()
    };

    let default = offered(None);
    assert!(default.contains("delegate_tasks"), "a hosted model offers it: {default:?}");
    for off in ["0", "false"] {
        let tools = offered(Some(off));
        assert!(!tools.contains("delegate_tasks"), "BOSUN_SUBAGENTS={off}: {tools:?}");
        assert!(tools.contains("read_file"), "the other tools stay: {tools:?}");
        let mut with = tools.clone();
        with.insert("delegate_tasks".to_owned());
        assert_eq!(with, default, "BOSUN_SUBAGENTS={off} takes only delegate_tasks away");
    }
    let on = offered(Some("1"));
    assert!(on.contains("delegate_tasks"), "BOSUN_SUBAGENTS=1: {on:?}");
    assert_eq!(mock.journal().len(), 4);
}

/// The pid and process group of each process whose parent is `parent`, from
/// `/proc/PID/stat` (`pid (comm) state ppid pgrp …`).
fn children_of(parent: u32) -> Vec<(i32, i32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(ppid), Some(pgrp)) = (fields.get(1), fields.get(2)) else { continue };
        if ppid.parse::<u32>().ok() == Some(parent)
            && let Ok(pgrp) = pgrp.parse::<i32>()
        {
            found.push((pid, pgrp));
        }
    }
    found
}

#[test]
fn a_parent_killed_while_a_child_runs_resumes_with_the_call_interrupted_and_the_child_resumable() {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    use std::time::{Duration, Instant};

    const PROMPT: &str = "hand out the waiting";
    const WAIT: &str = "wait for the signal";
    // The child's shell: the marker, then a wait that ends by itself once
    // bosun (bash's parent) is gone and reaped, so it cannot outlive the
    // test even if the kill of its group below missed it.
    let command = "touch started; while kill -0 $PPID 2>/dev/null; do sleep 0.2; done";
    let script = vec![
        json!({"match": {"userMessage": PROMPT, "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "delegate_tasks", "arguments": {"tasks": [{"task": WAIT}]}}]}}),
        json!({"match": {"userMessage": "go on", "turnIndex": 1}, "response": {"content": "resumed fine"}}),
        json!({"match": {"userMessage": WAIT, "turnIndex": 0}, "response": {"toolCalls": [
            {"name": "shell", "arguments": {"command": command}}]}}),
        json!({"match": {"userMessage": "continue", "turnIndex": 1}, "response": {"content": "child resumed"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    let marker = sandbox.ws().join("started");
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--dangerously-approve-all", PROMPT]);
    let mut running = Running::spawn(cmd, None);

    // The marker is the signal that the child's shell runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        if let Ok(Some(status)) = running.child.try_wait() {
            panic!("bosun exited ({status}) before the child's shell ran\nstderr:\n{}", running.stderr());
        }
        assert!(
            Instant::now() < deadline,
            "no {} within 60 s: the child's shell never ran\nstderr:\n{}",
            marker.display(),
            running.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The shell leads its own process group, a child of bosun's.
    let bosun = running.child.id();
    let groups: Vec<i32> =
        children_of(bosun).into_iter().filter(|&(pid, pgrp)| pid == pgrp).map(|(_, g)| g).collect();
    running.child.kill().unwrap(); // SIGKILL
    let status = running.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "{status}");
    for &group in &groups {
        let _ = kill_process_group(Pid::from_raw(group).unwrap(), Signal::KILL);
    }
    assert!(!groups.is_empty(), "the shell's process group, a child of bosun {bosun}: none found");
    let gone = Instant::now() + Duration::from_secs(10);
    while groups.iter().any(|&g| test_kill_process_group(Pid::from_raw(g).unwrap()).is_ok()) {
        assert!(Instant::now() < gone, "the shell's process group {groups:?} outlived bosun");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(running);
    let first_run = mock.journal();
    let child_first = only_request(&first_run, WAIT).clone();

    // The sessions: the parent listed, its one child in the store.
    let listed = sessions_json(&sandbox, &["list"]);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids.len(), 1, "only the parent is listed: {listed:#}");
    let parent = ids[0].to_owned();
    let store = bosun_store::Store::open(sandbox.path("bosun/sessions.db")).unwrap();
    let children = store.children(&parent).unwrap();
    assert_eq!(children.len(), 1, "{children:#?}");
    let child = children[0].id.clone();
    let link = children[0].parent.as_ref().expect("the child's parent link");
    assert_eq!(link.session, parent, "{children:#?}");
    drop(store);
    let shown = sessions_json(&sandbox, &["show", &child]);
    assert_eq!(shown["summary"]["parent"]["session"].as_str(), Some(parent.as_str()), "{shown:#}");
    // The child's first turn was killed before its first commit: no message
    // in its history, its task shown as an interrupted turn.
    assert_eq!(shown["history"], json!([]), "{shown:#}");
    let cut = &shown["failed_turns"][0];
    assert_eq!(
        (&cut["interrupted"], &cut["message"]["content"][0]["text"]),
        (&json!(true), &json!(WAIT)),
        "{shown:#}"
    );

    // The parent resumes: the call reported interrupted, not re-run.
    let resume = |id: &str, prompt: &str| {
        let mut cmd = sandbox.bosun();
        cmd.env(Api::OpenAiChat.key_var(), "test")
            .args(["resume", id, prompt])
            .args(Api::OpenAiChat.args(&mock));
        run(cmd)
    };
    let out = resume(&parent, "go on");
    out.expect_code(0);
    assert!(out.stdout.contains("resumed fine"), "{out:#?}");
    let journal = mock.journal();
    let request = only_request(&journal, "go on");
    let results = tool_results(request);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(bosun_core::results::INTERRUPTED_RESULT),
        "the call interrupted: {results:#?}"
    );
    let calls = request["body"]["messages"].to_string();
    assert!(calls.contains("delegate_tasks"), "the interrupted call is delegate_tasks: {calls}");
    assert_eq!(
        journal.iter().filter(|r| last_user(r) == WAIT).count(),
        1,
        "the child's task was not run again: {journal:#?}"
    );

    // The child resumes by itself: its prompt and its tools.
    let out = resume(&child, "continue");
    out.expect_code(0);
    assert!(out.stdout.contains("child resumed"), "{out:#?}");
    let journal = mock.journal();
    let request = only_request(&journal, "continue");
    let system = system_of(request);
    assert!(system.starts_with("You are a sub-agent"), "{system}");
    let tools = tools_of(request);
    assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
    let before: BTreeSet<String> = tools_of(&child_first).into_iter().collect();
    let after: BTreeSet<String> = tools.into_iter().collect();
    assert_eq!(after, before, "the tools of the child's first request");
    let results = tool_results(request);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains(bosun_core::results::INTERRUPTED_RESULT),
        "the shell interrupted: {results:#?}"
    );
    assert!(!request["body"]["messages"].to_string().contains(PROMPT), "its own conversation");
}
