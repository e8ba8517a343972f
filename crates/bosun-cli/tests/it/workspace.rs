//! Which folder bosun works in, with the real `bosun` against aimock: `/`
//! and the home folder are refused (exit 2, naming the folder and
//! `--allow-any-workspace`) by `exec`, `resume` and the conversation unless
//! the flag is given, and a workspace outside version control is named as
//! such on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::support;

use support::*;

/// aimock answering "look around".
fn look_around() -> Option<Aimock> {
    Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "look around"}, "response": {"content": "Looked."}}),
    ]))
}

fn refused(out: &Output, folder: &std::path::Path) {
    out.expect_code(2);
    let folder = std::fs::canonicalize(folder).unwrap();
    assert!(
        out.stderr.contains(&format!("will not use {} as the workspace", folder.display())),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--allow-any-workspace"), "{}", out.stderr);
}

#[test]
fn the_root_and_the_home_folder_are_refused_unless_allowed() {
    let Some(mock) = look_around() else { return };
    let sandbox = task_sandbox();
    let home = sandbox.path("home");
    let (model, key) = (Api::OpenAiChat.args(&mock), Api::OpenAiChat.key_var());

    let mut exec = sandbox.bosun_in(std::path::Path::new("/"), &sandbox.path("bosun"));
    exec.env(key, "test").arg("exec").args(&model).arg("look around");
    refused(&run(exec), std::path::Path::new("/"));

    let mut exec = sandbox.bosun_in(&home, &sandbox.path("bosun"));
    exec.env(key, "test").arg("exec").args(&model).arg("look around");
    refused(&run(exec), &home);

    let mut resume = sandbox.bosun_in(&home, &sandbox.path("bosun"));
    resume.env(key, "test").args(["resume", "--last", "look around"]).args(&model);
    refused(&run(resume), &home);

    // The conversation, on a terminal.
    let mut talk = sandbox.bosun_in(&home, &sandbox.path("bosun"));
    talk.env(key, "test").args(&model);
    let exit = Pty::spawn(talk, 30, 100).finish();
    assert_eq!(exit.status.code(), Some(2), "{}", exit.contents);
    assert!(exit.contents.contains("--allow-any-workspace"), "{}", exit.contents);

    // Told, it works there.
    let mut exec = sandbox.bosun_in(&home, &sandbox.path("bosun"));
    exec.env(key, "test").args(["exec", "--allow-any-workspace"]).args(&model).arg("look around");
    let out = run(exec);
    out.expect_code(0);
    assert!(out.stdout.contains("Looked."), "{}", out.stderr);
    assert_eq!(mock.journal().len(), 1, "only the allowed run reached the model");
}

#[test]
fn a_workspace_outside_version_control_is_named_on_stderr() {
    let Some(mock) = look_around() else { return };
    let sandbox = task_sandbox();
    let advice = "is not inside a version-controlled tree";
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg("look around");
    let out = run(exec);
    out.expect_code(0);
    assert!(out.stderr.contains(advice), "{}", out.stderr);
    // --json keeps stderr quiet.
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.args(["--json", "look around"]);
    let out = run(exec);
    out.expect_code(0);
    assert!(!out.stderr.contains(advice), "{}", out.stderr);
    // Inside a repository (a .git above the workspace), nothing is said.
    std::fs::create_dir(sandbox.path(".git")).unwrap();
    let mut exec = sandbox.exec(Api::OpenAiChat, &mock);
    exec.arg("look around");
    let out = run(exec);
    out.expect_code(0);
    assert!(!out.stderr.contains(advice), "{}", out.stderr);
}
