//! Per-task limits through the real binary against aimock: a task past its
//! token budget ends after the round that spent it, with the checkpoint
//! kept, the limit named, and exit code 1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

mod support;

use support::*;

#[test]
fn a_task_past_its_token_limit_stops_between_rounds_with_exit_code_1() {
    let list = vec![
        json!({"match": {"userMessage": "limited", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"toolResultContains": "echo", "turnIndex": 1}, "response": {"content": "never"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", "--max-tokens", "1", "a limited task"]);
    let out = run(cmd);
    out.expect_code(1);
    let events = json_events(&out.stdout);
    let error = of_type(&events, "error");
    assert_eq!(error.len(), 1, "{events:#?}");
    assert_eq!(error[0]["kind"], "limit");
    assert!(
        error[0]["message"].as_str().unwrap().starts_with("the turn reached its limit of 1 tokens"),
        "{}",
        error[0]
    );
    assert_eq!(of_type(&events, "tool_end").len(), 1, "the first round's call ran and was kept");
    assert_eq!(mock.journal().len(), 1, "no second request");
}
