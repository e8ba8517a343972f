use bosun_sandbox::*;
#[tokio::test]
async fn smoke() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path().canonicalize().unwrap())
        .with_protected_names([".git", "AGENTS.md"])
        .with_default_secrets(std::path::Path::new("/root"), None);
    let sandbox = Sandbox::new(policy).unwrap();
    println!("{:?}", sandbox.support());
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c").arg("id; echo $$; pwd; echo hi > ok.txt; echo x > .git/config; echo y > /root/evil; ls /root/.ssh; echo t > /tmp/t && ls /tmp; cat /proc/1/cmdline | tr '\\0' ' '; echo; (exec 3<>/dev/tcp/127.0.0.1/22) ; ls /proc | head -5; echo new > AGENTS.md; echo done").current_dir(ws.path());
    let call = sandbox.prepare(&mut cmd, CallAccess::Policy).unwrap();
    let out = cmd.output().await.unwrap();
    println!(
        "status {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{:?}", call.finish());
    println!(
        "{:?}",
        std::fs::read_dir(ws.path()).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>()
    );
}
