//! `bosun exec` end to end on a local model with no download: a tiny GGUF
//! built by the test (`bosun_testing::TinyModel`, programmed to answer
//! "Hello from tiny") run in-process by the real binary, in a temporary
//! workspace with a cleared environment. Checks the whole path a local model
//! takes: `--model local:PATH`, loading, the system prompt and tools through
//! the file's chat template, streaming to stdout, the session store, exit 0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bosun_testing::TinyModel;
use bosun_testing::gguf::END_OF_TURN;

use crate::support::BOSUN;

/// No run may take longer: a hang fails the test.
const NO_HANG: Duration = Duration::from_secs(120);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `bosun -C ROOT/ws ARGS` with a cleared environment whose home, config
/// and data directories are under `root`.
fn bosun(root: &Path, args: &[&str]) -> Run {
    bosun_with(root, &[], args)
}

/// [`bosun`] with `vars` added to the environment.
fn bosun_with(root: &Path, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut child = Command::new(BOSUN)
        .env_clear()
        .envs(vars.iter().copied())
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .env("BOSUN_HOME", root.join("bosun"))
        .arg("-C")
        .arg(root.join("ws"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).unwrap();
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > NO_HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bosun {args:?} did not finish in {NO_HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run { code: status.code(), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// A workspace under `root` and a tiny model that answers "Hello from tiny"
/// after a newline, or, where that is not allowed, writes a `list_files`
/// call; returns its `--model` spec.
fn tiny_setup(root: &Path) -> String {
    for dir in ["home", "xdg", "bosun", "ws"] {
        std::fs::create_dir(root.join(dir)).unwrap();
    }
    let model = root.join("tiny.gguf");
    // The CLI caps a local context at 8,192 tokens; the prompt (system
    // prompt and tool schemas, mostly byte tokens here) needs a few thousand.
    TinyModel::new()
        .context_length(8192)
        .chain(&["\n", "Hello", " from", " tiny", END_OF_TURN])
        .or_else("\n", "<tool_call>")
        .chain(&["<tool_call>", r#"{"name": "list_files", "arguments": {}}"#, "</tool_call>", END_OF_TURN])
        .write(&model)
        .unwrap();
    format!("local:{}", model.display())
}

#[test]
fn exec_answers_with_a_tiny_local_model() {
    let root = tempfile::tempdir().unwrap();
    let spec = tiny_setup(root.path());
    // Without the first-round call the answer comes in one round.
    let run = bosun_with(root.path(), &[("BOSUN_LOCAL_FIRST_CALL", "0")], &["exec", "--model", &spec, "hi"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.stdout.trim_end(), "Hello from tiny", "stderr: {}", run.stderr);

    let run = bosun(root.path(), &["sessions", "list"]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let sessions: Vec<&str> = run.stdout.lines().collect();
    assert!(
        sessions.len() == 1 && sessions[0].contains("2 msgs") && sessions[0].ends_with(" hi"),
        "one session holding the question and the answer: {}",
        run.stdout
    );
}

#[test]
fn a_local_model_must_call_a_tool_in_the_first_round_then_answers() {
    let root = tempfile::tempdir().unwrap();
    let spec = tiny_setup(root.path());
    std::fs::write(root.path().join("ws/notes.txt"), "n").unwrap();
    // The model would answer at once (its first choice); for a prompt about
    // the workspace the first round's grammar refuses text, so it takes its
    // second choice, the call; the second round, free, is its answer.
    let run = bosun(root.path(), &["exec", "--json", "--model", &spec, "What is in this project?"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let events: Vec<serde_json::Value> =
        run.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let rounds = kinds.iter().filter(|k| **k == "model_round_start").count();
    assert_eq!(rounds, 2, "a call, then the answer: {}", run.stdout);
    let call = events.iter().find(|e| e["type"] == "tool_call_proposed").expect("a call");
    assert_eq!(call["name"], "list_files", "{call}");
    let first_call = kinds.iter().position(|k| *k == "tool_call_proposed").unwrap();
    let second_round = kinds.iter().rposition(|k| *k == "model_round_start").unwrap();
    assert!(first_call < second_round, "{kinds:?}");
    let end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["outcome"], "completed", "{end}");
    let text: String =
        events.iter().filter(|e| e["type"] == "text_delta").filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(text, "Hello from tiny");
}

/// The events of a `--json` run, and their `type`s.
fn events_of(stdout: &str) -> (Vec<serde_json::Value>, Vec<String>) {
    let events: Vec<serde_json::Value> =
        stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let kinds = events.iter().filter_map(|e| e["type"].as_str().map(str::to_owned)).collect();
    (events, kinds)
}

#[test]
fn a_change_the_local_model_never_makes_fails_exec_after_the_file_was_read_first() {
    let root = tempfile::tempdir().unwrap();
    let spec = tiny_setup(root.path());
    std::fs::write(root.path().join("ws/notes.txt"), "helo\n").unwrap();
    // The tiny model only ever lists files: pushed toward the change for
    // three rounds, it lists, then, its repeats withdrawn, answers.
    let run = bosun(root.path(), &["exec", "--json", "--model", &spec, "Fix the typo in notes.txt."]);
    assert_eq!(run.code, Some(1), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("the task asked for a change"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(root.path().join("ws/notes.txt")).unwrap(), "helo\n");
    let (events, kinds) = events_of(&run.stdout);
    let first_round = kinds.iter().position(|k| k == "model_round_start").unwrap();
    let opening = events.iter().position(|e| e["type"] == "tool_call_proposed").unwrap();
    assert!(opening < first_round, "the named file is read before round 1: {kinds:?}");
    assert_eq!(events[opening]["name"], "read_file");
    assert_eq!(events[opening]["arguments"]["path"], "notes.txt", "{}", events[opening]);
    let listed =
        events.iter().filter(|e| e["type"] == "tool_call_proposed" && e["name"] == "list_files").count();
    assert_eq!(listed, 3, "three rounds had to be calls: {kinds:?}");
    let end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["outcome"], "completed", "the turn itself completed: {end}");

    // Without the rules the model answers at once (the read stands for the
    // first round's call), and nothing judges the answer.
    let vars = [("BOSUN_LOCAL_PERSISTENCE", "0")];
    let run =
        bosun_with(root.path(), &vars, &["exec", "--json", "--model", &spec, "Fix the typo in notes.txt."]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let (_, kinds) = events_of(&run.stdout);
    assert_eq!(kinds.iter().filter(|k| *k == "model_round_start").count(), 1, "{kinds:?}");
}

#[test]
fn a_local_model_answers_a_prompt_about_nothing_in_the_workspace_at_once() {
    let root = tempfile::tempdir().unwrap();
    let spec = tiny_setup(root.path());
    let run = bosun(root.path(), &["exec", "--json", "--model", &spec, "What is 17 times 23?"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let (events, kinds) = events_of(&run.stdout);
    assert_eq!(kinds.iter().filter(|k| *k == "model_round_start").count(), 1, "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "tool_call_proposed"), "no call was required: {kinds:?}");
    let text: String =
        events.iter().filter(|e| e["type"] == "text_delta").filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(text, "Hello from tiny");
}

/// The share of the prompt the usage line reports as cached, in percent.
fn cached_percent(stderr: &str) -> Option<u32> {
    let line = stderr.lines().find(|line| line.starts_with("tokens:"))?;
    let (_, rest) = line.split_once(" in (")?;
    rest.split_once("% cached")?.0.parse().ok()
}

#[test]
fn models_warm_fills_the_prompt_cache_that_the_first_command_in_another_workspace_reuses() {
    let root = tempfile::tempdir().unwrap();
    let spec = tiny_setup(root.path());
    let models = root.path().join("bosun/models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::rename(spec.strip_prefix("local:").unwrap(), models.join("tiny.gguf")).unwrap();
    let caches = root.path().join("bosun/prompt-cache");
    assert!(!caches.exists(), "no cache before the warming");

    let run = bosun(root.path(), &["models", "warm", "tiny.gguf"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("prompt cache ready"), "{}", run.stderr);
    let files: Vec<_> = std::fs::read_dir(&caches).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 1, "one cache for the model: {files:?}");
    assert!(files[0].to_string_lossy().starts_with("tiny-"), "{files:?}");
    let stored = bosun(root.path(), &["sessions", "list"]);
    assert!(
        stored.stdout.trim().is_empty(),
        "the warming turn is not a session of the user's: {}",
        stored.stdout
    );

    // The first command, in a workspace the warming never saw, on the
    // same model named another way, starts from the cache.
    let vars = [("BOSUN_LOCAL_FIRST_CALL", "0")];
    let run = bosun_with(root.path(), &vars, &["exec", "--model", "local/tiny.gguf", "hi"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert_eq!(run.stdout.trim_end(), "Hello from tiny", "stderr: {}", run.stderr);
    let cached = cached_percent(&run.stderr);
    assert!(cached.is_some_and(|p| p >= 90), "most of the first prompt came from the cache: {}", run.stderr);
}
