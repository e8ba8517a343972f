//! `bosun exec`'s human output with the real binary against aimock: the
//! streamed reasoning (on stderr) is ended by a newline before the next
//! line there, so the tokens line starts a line of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

#[test]
fn the_tokens_line_starts_its_own_line_after_streamed_reasoning() {
    let task = "think then answer";
    let fixture = json!({"match": {"userMessage": task}, "response": {
        "content": "The answer.", "reasoning": "Let me think about it."}});
    let Some(mock) = Aimock::start(&fixtures(vec![fixture])) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.arg(task);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stderr.contains("Let me think about it.\n"), "{}", out.stderr);
    assert!(out.stderr.lines().any(|l| l.starts_with("tokens: ")), "{}", out.stderr);
}
