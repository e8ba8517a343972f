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

/// aimock answering each of `words` with "Answered WORD.", a task sandbox,
/// and `bosun exec first` run in it.
fn first_session(words: &[&str]) -> Option<(Aimock, Sandbox, Output)> {
    let answers: Vec<_> = words
        .iter()
        .map(|word| json!({"match": {"userMessage": word}, "response": {"content": format!("Answered {word}.")}}))
        .collect();
    let mock = Aimock::start(&fixtures(answers))?;
    let sandbox = task_sandbox();
    let out = bosun(&sandbox, &mock, &["exec", "first"]);
    out.expect_code(0);
    Some((mock, sandbox, out))
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
    let Some((mock, sandbox, out)) = first_session(&["first", "other", "go on"]) else { return };
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

/// A workspace moved with `mv` is the same directory (device and inode
/// unchanged): its sessions resume there with a notice. A copy is another
/// directory: a wider authority, refused in a script until accepted.
#[test]
fn a_moved_workspace_resumes_with_a_notice_and_a_copy_is_a_change_to_accept() {
    let Some((_mock, sandbox, out)) = first_session(&["first", "after the move", "in the copy"]) else {
        return;
    };
    let id = session_from_stderr(&out.stderr);

    let moved = sandbox.path("moved");
    std::fs::rename(sandbox.ws(), &moved).unwrap();
    let in_dir = |dir: &std::path::Path, args: &[&str]| {
        let mut cmd = sandbox.bosun_in(dir, &sandbox.path("bosun"));
        cmd.env("OPENAI_API_KEY", "test").args(args);
        run(cmd)
    };
    let out = in_dir(&moved, &["resume", &id, "after the move"]);
    out.expect_code(0);
    assert!(out.stdout.contains("Answered after the move."), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("the same directory, moved"), "{}", out.stderr);

    let copy = sandbox.path("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(moved.join("greet.sh"), copy.join("greet.sh")).unwrap();
    let out = in_dir(&copy, &["resume", &id, "in the copy"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("another directory") && out.stderr.contains("--accept-authority"),
        "{}",
        out.stderr
    );
    let out = in_dir(&copy, &["resume", &id, "in the copy", "--accept-authority"]);
    out.expect_code(0);
    assert!(out.stdout.contains("Answered in the copy."), "{}\n{}", out.stdout, out.stderr);
}
