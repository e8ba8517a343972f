//! The models a new user names first (`openai/gpt-4o`, the README's and
//! `--help`'s example) are priced and have a window through the real
//! binary: the imported model table (`data/models-litellm.json`) is what
//! answers for them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support::*;

#[test]
fn exec_with_gpt_4o_shows_a_cost_and_no_unknown_window_notice() {
    let answer = json!({"match": {"userMessage": "price", "turnIndex": 0}, "response": {
        "content": "Done.", "usage": {"input_tokens": 1200, "output_tokens": 300}}});
    let Some(mock) = Aimock::start(&fixtures(vec![answer])) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.bosun();
    let base = format!("{}/v1", mock.url());
    cmd.env(Api::OpenAiChat.key_var(), "test").args([
        "exec",
        "--model",
        "openai/gpt-4o",
        "--base-url",
        &base,
    ]);
    cmd.arg("price this");
    let out = run(cmd);
    out.expect_code(0);
    // 1,200 × $2.50 + 300 × $10 per million = 3,000 + 3,000 micro-dollars.
    let tokens = out.stderr.lines().find(|l| l.starts_with("tokens: ")).expect("a tokens line");
    assert_eq!(tokens, "tokens: 1200 in, 300 out, $0.0060", "{}", out.stderr);
    assert!(!out.stderr.contains("is not known"), "{}", out.stderr);
}
