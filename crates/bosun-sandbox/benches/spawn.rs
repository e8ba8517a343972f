//! What the sandbox adds to one command: spawn and wait for `/bin/true`
//! unconfined (with the parent-death signal, as every spawn gets) and in
//! the `workspace-write` sandbox (namespaces, mounts, Landlock, seccomp, the
//! call's temporary folder made and removed). The goal is under 2 ms more.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bosun_sandbox::{CallAccess, Sandbox, SandboxMode, SandboxPolicy};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio::process::Command;

fn spawn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Outside /tmp, as most workspaces are (one under /tmp is bound into
    // the call's /tmp as well, which costs more).
    let workspace = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = workspace.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &root)
        .with_protected_names([".git", ".bosun", "AGENTS.md"])
        .with_default_secrets(std::path::Path::new("/root"), None);
    let sandbox = Sandbox::new(policy).expect("this machine has the sandbox");
    let mut group = c.benchmark_group("spawn /bin/true");
    group.bench_function("unconfined", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut command = Command::new("/bin/true");
                command.current_dir(&root);
                let _call = bosun_sandbox::unconfined(&mut command);
                assert!(command.status().await.unwrap().success());
            })
        })
    });
    group.bench_function("workspace-write sandbox", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut command = Command::new("/bin/true");
                command.current_dir(&root);
                let call = sandbox.prepare(&mut command, CallAccess::Policy).unwrap();
                assert!(command.status().await.unwrap().success());
                call.finish();
            })
        })
    });
    group.finish();
}

criterion_group!(benches, spawn);
criterion_main!(benches);
