//! The escape suite (`bosun_testing::escape`) run as a sandboxed command,
//! and unconfined to show that every check can fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bosun_core::permission::{PROTECTED_DIRS, PROTECTED_FILES};
use bosun_sandbox::{CallAccess, Sandbox, SandboxMode, SandboxPolicy};
use bosun_testing::escape::EscapeScene;
use tokio::process::Command;

fn policy(scene: &EscapeScene, mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy::new(mode, scene.workspace())
        .with_protected_names(PROTECTED_DIRS.iter().chain(PROTECTED_FILES).copied())
        .with_default_secrets(&scene.home(), Some(&scene.xdg_config_home()))
}

fn command(scene: &EscapeScene) -> Command {
    let mut command = Command::new("bash");
    command.arg("-c").arg(scene.script()).current_dir(scene.workspace()).env("HOME", scene.home());
    command
}

/// Runs the suite's script; `output()` returns once every holder of the
/// output pipe is gone, which a survivor would delay past the bound.
async fn run(mut command: Command) -> String {
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the suite ended")
        .expect("the suite ran");
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[tokio::test]
async fn invariant_18_escape_suite_holds_in_the_workspace_write_sandbox() {
    let scene = EscapeScene::new().unwrap();
    let sandbox = Sandbox::new(policy(&scene, SandboxMode::WorkspaceWrite)).unwrap();
    assert!(sandbox.support().landlock_abi.is_some_and(|abi| abi >= 3), "{:?}", sandbox.support());
    assert!(sandbox.support().namespaces, "{:?}", sandbox.support());
    let mut command = command(&scene);
    let call = sandbox.prepare(&mut command, CallAccess::Policy).unwrap();
    let output = run(command).await;
    let notes = call.finish();
    let violations = scene.violations(&output);
    scene.clean_up_survivors();
    assert!(violations.is_empty(), "{violations:#?}\n{output}\n{notes:?}");
    // The suite really ran: its attempts were refused by the kernel.
    assert!(output.contains("Read-only file system"), "{output}");
    assert!(output.contains("Permission denied"), "{output}");
}

#[tokio::test]
async fn invariant_18_escape_suite_holds_in_the_read_only_sandbox() {
    let scene = EscapeScene::new().unwrap();
    let sandbox = Sandbox::new(policy(&scene, SandboxMode::ReadOnly)).unwrap();
    let mut command = command_with(&scene, &format!("{}\necho new > made-here\n", scene.script()));
    let _call = sandbox.prepare(&mut command, CallAccess::Policy).unwrap();
    let output = run(command).await;
    let violations = scene.violations(&output);
    scene.clean_up_survivors();
    assert!(violations.is_empty(), "{violations:#?}\n{output}");
    assert!(!scene.workspace().join("made-here").exists(), "read-only wrote the workspace");
}

fn command_with(scene: &EscapeScene, script: &str) -> Command {
    let mut command = Command::new("bash");
    command.arg("-c").arg(script).current_dir(scene.workspace()).env("HOME", scene.home());
    command
}

#[tokio::test]
async fn invariant_18_escape_suite_finds_the_effects_of_an_unconfined_run() {
    let scene = EscapeScene::new().unwrap();
    let mut command = command(&scene);
    let _call = bosun_sandbox::unconfined(&mut command);
    let output = run(command).await;
    let violations = scene.violations(&output);
    scene.clean_up_survivors();
    for expected in [
        "config.toml changed",
        ".bashrc changed",
        "the SSH key or AWS credentials were read",
        "the loopback listener got a connection",
        "a setsid survivor outlived its call",
        "victim is gone",
        "READ-BOSUN-MEM was printed",
        "fsmon-arrived-ran was created",
        "fsmon-planted-ran was created",
        "pwned was created",
    ] {
        assert!(violations.iter().any(|v| v.contains(expected)), "{expected} not found in {violations:#?}");
    }
}
