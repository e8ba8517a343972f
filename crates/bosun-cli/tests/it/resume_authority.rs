//! Resuming under another authority is a decision (invariant 7), with the
//! real `bosun` against aimock, a real SQLite store, a real MCP server and
//! real skill folders: what widens (an MCP server added, the first skill, a
//! looser limit) fails in a script with the difference in words and the
//! flag that accepts it, is asked on a terminal (before the conversation,
//! and in it on `/resume`), and once accepted is journaled so the next
//! resume asks nothing; what narrows resumes with a notice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

const ROWS: u16 = 30;
const COLS: u16 = 100;

/// Runs `bosun ARGS` in the sandbox with the OpenAI key set and the mock as
/// the configured model (so a resume needs no flag to reach it).
fn bosun(sandbox: &Sandbox, mock: &Aimock, args: &[&str]) -> Output {
    run(command(sandbox, mock, args))
}

fn command(sandbox: &Sandbox, mock: &Aimock, args: &[&str]) -> std::process::Command {
    let mut cmd = sandbox.bosun();
    cmd.env("OPENAI_API_KEY", "test")
        .env("BOSUN_MODEL", "openai/gpt-test")
        .env("BOSUN_BASE_URL", format!("{}/v1", mock.url()))
        .args(args);
    cmd
}

/// Writes the user's first skill.
fn add_user_skill(sandbox: &Sandbox) {
    let folder = sandbox.path("xdg/bosun/skills/release-notes");
    std::fs::create_dir_all(&folder).unwrap();
    let skill = "---\nname: release-notes\ndescription: how we write release notes\n---\nShort.\n";
    std::fs::write(folder.join("SKILL.md"), skill).unwrap();
}

fn chat_requests(mock: &Aimock) -> usize {
    mock.journal().into_iter().filter(|r| r["body"]["messages"].is_array()).count()
}

#[test]
fn resume_under_a_wider_authority_fails_in_a_script_with_the_difference_and_the_flag_accepts_it_once() {
    let Some(entry) = bosun_testing::mcp::everything_server() else { return };
    let answers: Vec<_> = ["first", "second", "third", "fourth"]
        .iter()
        .map(|word| json!({"match": {"userMessage": word}, "response": {"content": format!("Answered {word}.")}}))
        .collect();
    let Some(mock) = Aimock::start(&fixtures(answers)) else { return };
    let sandbox = task_sandbox();
    let out = bosun(&sandbox, &mock, &["exec", "--max-rounds", "3", "first"]);
    out.expect_code(0);
    let id = session_from_stderr(&out.stderr);

    // Three ordinary changes: an MCP server, the first skill, and no
    // --max-rounds (the default is looser).
    let tag = format!("bosun-test-tag={}", sandbox.root.path().display());
    let entry = entry.display().to_string();
    bosun(&sandbox, &mock, &["mcp", "add", "everything", "--", "node", &entry, "stdio", &tag]).expect_code(0);
    add_user_skill(&sandbox);

    let refused = bosun(&sandbox, &mock, &["resume", "--last", "second"]);
    refused.expect_code(2);
    let new_tools = refused.stderr.lines().find(|l| l.starts_with("+ new tools: ")).unwrap_or_default();
    for tool in ["skill", "mcp__everything__echo", "list_mcp_resources"] {
        assert!(new_tools.split([' ', ',']).any(|name| name == tool), "{tool} in\n{}", refused.stderr);
    }
    for said in ["not accepted", "\n+ max rounds was 3, now 50\n", "--accept-authority"] {
        assert!(refused.stderr.contains(said), "{said:?} in\n{}", refused.stderr);
    }
    assert!(!refused.stderr.contains("Limits {"), "no debug dump: {}", refused.stderr);
    assert_eq!(chat_requests(&mock), 1, "nothing was sent");

    let accepted = bosun(&sandbox, &mock, &["resume", "--last", "second", "--accept-authority"]);
    accepted.expect_code(0);
    assert!(accepted.stdout.contains("Answered second."), "{}", accepted.stdout);
    assert!(accepted.stderr.contains("resumes under a wider authority, as accepted"), "{}", accepted.stderr);

    // Journaled: the next resume compares with what was accepted.
    let again = bosun(&sandbox, &mock, &["resume", &id, "third"]);
    again.expect_code(0);
    assert!(again.stdout.contains("Answered third."), "{}", again.stdout);
    assert!(!again.stderr.contains("authority"), "{}", again.stderr);
    let export = bosun(&sandbox, &mock, &["sessions", "export", &id]);
    export.expect_code(0);
    let accepted_record = export
        .stdout
        .lines()
        .find(|line| line.contains(r#""record":"authority_changed""#))
        .unwrap_or_else(|| panic!("no authority_changed record in\n{}", export.stdout));
    assert!(accepted_record.contains(r#""resumed":["+ new tools: "#), "{accepted_record}");
    assert!(accepted_record.contains(r#"skill","+ max rounds was 3, now 50"]"#), "{accepted_record}");

    // Narrowing asks nothing: the server removed and a tighter limit.
    bosun(&sandbox, &mock, &["mcp", "remove", "everything"]).expect_code(0);
    let narrower = bosun(&sandbox, &mock, &["resume", &id, "fourth", "--max-rounds", "5"]);
    narrower.expect_code(0);
    assert!(narrower.stdout.contains("Answered fourth."), "{}", narrower.stdout);
    for said in [
        "resumes under a narrower authority",
        "- tools gone: list_mcp_resources, mcp__everything__echo,",
        "- max rounds was 50, now 5",
    ] {
        assert!(narrower.stderr.contains(said), "{said:?} in\n{}", narrower.stderr);
    }
}

/// On a terminal the person is asked: in plain lines before the
/// conversation starts (`bosun resume ID`), and in the conversation's own
/// question on `/resume`; no keeps the session closed, yes opens it.
#[test]
fn resume_on_a_terminal_asks_before_the_conversation_and_in_it_on_slash_resume() {
    let answers: Vec<_> = ["first", "other", "go on"]
        .iter()
        .map(|word| json!({"match": {"userMessage": word}, "response": {"content": format!("Answered {word}.")}}))
        .collect();
    let Some(mock) = Aimock::start(&fixtures(answers)) else { return };
    let sandbox = task_sandbox();
    let out = bosun(&sandbox, &mock, &["exec", "first"]);
    out.expect_code(0);
    let first = session_from_stderr(&out.stderr);
    let out = bosun(&sandbox, &mock, &["exec", "other"]);
    out.expect_code(0);
    let other = session_from_stderr(&out.stderr);
    add_user_skill(&sandbox);

    let mut pty = Pty::spawn(command(&sandbox, &mock, &["resume", &first]), ROWS, COLS);
    pty.wait_shown("resume under it? [y/n]");
    assert!(pty.contents().contains("+ new tools: skill"), "{}", pty.contents());
    pty.type_line("y");
    pty.wait_shown(&format!("resumed session {first}"));
    pty.wait_on_screen("message · @path attaches · /help");

    pty.type_line(&format!("/resume {other}"));
    pty.wait_on_screen("[y] yes  [n] no");
    assert!(pty.contents().contains("+ new tools: skill"), "{}", pty.contents());
    pty.keys(b"n");
    pty.wait_on_screen("not accepted: resuming widens");
    pty.type_line(&format!("/resume {other}"));
    pty.wait_on_screen("[y] yes  [n] no");
    pty.keys(b"y");
    pty.wait_shown(&format!("resumed session {other}"));
    pty.wait_on_screen("message · @path attaches · /help");
    pty.type_line("go on");
    pty.wait_shown("Answered go on.");
    pty.keys(b"\x03");
    pty.wait_on_screen("ctrl+c again quits");
    pty.keys(b"\x03");
    let exit = pty.finish();
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}
