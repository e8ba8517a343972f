//! The model's plan with the real binary against aimock: three updates
//! shown as a list in the conversation and carried by `exec --json`; plan
//! mode refusing changes until the person approves the plan, then going on
//! in the mode they chose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use crate::support;

use support::*;

/// `update_plan` with the three steps at these states.
fn plan_call(statuses: [&str; 3]) -> Value {
    let steps: Vec<Value> = statuses
        .iter()
        .zip(["read greet.sh", "fix the typo", "run it"])
        .map(|(status, step)| json!({"step": step, "status": status}))
        .collect();
    json!({"toolCalls": [{"name": "update_plan", "arguments": {"plan": steps}}]})
}

/// For prompts containing `word`: three plan updates, then `answer`.
fn three_updates(word: &str, answer: &str) -> Vec<Value> {
    let rounds = [
        plan_call(["in_progress", "pending", "pending"]),
        plan_call(["completed", "in_progress", "pending"]),
        plan_call(["completed", "completed", "in_progress"]),
        json!({"content": answer}),
    ];
    rounds
        .into_iter()
        .enumerate()
        .map(|(turn, response)| json!({"match": {"userMessage": word, "turnIndex": turn}, "response": response}))
        .collect()
}

#[test]
fn exec_json_carries_each_plan_update() {
    let Some(mock) = Aimock::start(&fixtures(three_updates("plan it", "Planned."))) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "plan it"]);
    let out = run(cmd);
    out.expect_code(0);
    let events = json_events(&out.stdout);
    let plans = of_type(&events, "plan_updated");
    let states: Vec<Vec<&str>> = plans
        .iter()
        .map(|p| p["steps"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect())
        .collect();
    assert_eq!(
        states,
        [
            ["in_progress", "pending", "pending"],
            ["completed", "in_progress", "pending"],
            ["completed", "completed", "in_progress"]
        ],
        "{}",
        out.stdout
    );
    assert_eq!(plans[0]["steps"][0]["step"], "read greet.sh");
}

#[test]
fn plan_mode_shows_the_plan_and_goes_on_in_the_chosen_mode_once_approved() {
    let mut list = three_updates("plan the fix", "The plan: fix the typo in greet.sh.");
    list.push(json!({"match": {"userMessage": "The plan is approved", "turnIndex": 4}, "response": {
        "toolCalls": [{"name": "edit_file",
            "arguments": {"path": "greet.sh", "old_text": "wrold", "new_text": "world"}}]}}));
    list.push(json!({"match": {"toolResultContains": "greet.sh", "turnIndex": 5},
        "response": {"content": "Fixed."}}));
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let api = Api::OpenAiChat;
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").args(api.args(&mock)).args(["--mode", "plan", "plan the fix"]);
    let mut pty = Pty::spawn(cmd, 40, 100);
    pty.wait_shown("The plan is ready. Go on with it?");
    let shown = pty.shown();
    for row in
        ["• Plan (0/3 done)", "• Plan (1/3 done)", "• Plan (2/3 done)", "  ✔ fix the typo", "  ▶ run it"]
    {
        assert!(shown.iter().any(|r| r == row), "{row:?} in {shown:#?}");
    }
    assert!(sandbox.greet().contains("wrold"), "nothing changed in plan mode");
    pty.keys(b"\r"); // The first choice: write mode.
    pty.wait_shown("Fixed.");
    assert!(pty.shown().iter().any(|r| r == "plan approved; mode: write"), "{:?}", pty.shown());
    assert!(sandbox.greet().contains("world"), "the edit ran in write mode without asking");
    pty.wait_until("the line at write", |e| {
        e.contents().lines().any(|l| l.starts_with("openai/gpt-test · write · "))
    });
    pty.keys(b"\x04");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);

    let sent: Vec<Value> = mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).collect();
    let first = sent[0]["body"]["messages"].to_string();
    assert!(first.contains("[plan mode]"), "the model was told the mode: {first}");
    let approved = sent.iter().find(|r| r["body"]["messages"].to_string().contains("The plan is approved"));
    let approved = approved.map(|r| r["body"]["messages"].as_array().unwrap().clone()).unwrap_or_default();
    let last_user = approved.iter().rev().find(|m| m["role"] == "user").map(|m| m["content"].to_string());
    let last_user = last_user.unwrap_or_default();
    assert!(!last_user.contains("[plan mode]"), "out of plan mode, no note: {last_user}");
}
