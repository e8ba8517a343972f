//! The estimate's error against the local tokenizer:
//! `cargo bench -p bosun-local --bench estimate_error [-- FILE.gguf ...]`.
//!
//! A coding session of 60 rounds is simulated on a growing history: each
//! round the model calls a tool (`read_file`, `search`, `shell`, or a tool
//! answering JSON), and its result is real text read at bench time: this
//! repository's source files (numbered as `read_file` numbers them), lines
//! matching a pattern in them, the output of `git log` and `ls`, the model
//! table and the npm lock file; every 15 rounds the model answers and the
//! person asks again. Three results are large (a whole 28 KB source file, a
//! 16 KB slice of the npm lock file, 16 KB of `git log --stat`).
//!
//! Each round, before anything is learned from it: the exact prompt tokens
//! (`Model::count_tokens`, the engine's own template and tokenizer), and
//! `Estimator::estimate` of the request's characters (`chars_of`, as the
//! session measures them, the tools as JSON included). Then the estimator
//! observes the exact count as a response's usage would report it. Printed:
//! every round, then the summary, on lines starting `bosun-bench:`: the cold
//! error (round 1, at 4 characters a token), the mean and largest error after
//! calibration (rounds 2–60), the error on each round right after a large
//! result lands, and how long a count takes. Nothing is compacted: counting
//! needs no context, so the history grows past the model's window.
//!
//! The files default to the two in `.bosun-cache/models/`
//! (`scripts/fetch-test-models`); one that is missing is skipped, and the
//! bench fails when none is there. Results: `docs/benchmarks.md`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bosun_core::compaction::{Estimator, chars_of};
use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, Model, ModelRequest, StopReason, ToolDefinition, Usage,
};
use bosun_local::{LocalModel, LocalOptions};
use serde_json::{Value, json};

const ROUNDS: usize = 60;
/// Rounds after whose response a large result lands (0-based).
const LARGE: [usize; 3] = [18, 33, 48];
/// Every this many rounds the model answers and the person asks again.
const TURN: usize = 15;
const MODELS: [&str; 2] = ["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"];

const SYSTEM: &str = "You are bosun, a coding agent working in the user's repository. \
    Use the tools to look before you answer: read_file to read a file, search to find text, \
    list_files to see what exists, shell to run a command. Make the smallest change that does \
    the job, keep the code's style, and run the tests after a change. Answer briefly, naming \
    the files and lines you mean. Never guess what a file says or what a command prints.";

const ASKS: [&str; 4] = [
    "The local engine counts prompt tokens now. Find where the session decides to compact and check \
     that it uses the count.",
    "Now look at how the worker reports usage, and whether a count can drift from it.",
    "Check the tests of the tool-call parser for a case with a fenced call after text.",
    "Last: summarise what you changed and which tests cover it.",
];

/// What the results are made of, read once.
struct Corpus {
    root: PathBuf,
    /// Rust sources under `crates/*/src`, sorted: (path from the root, text).
    sources: Vec<(String, String)>,
    models_json: Value,
    package_lock: String,
}

impl Corpus {
    fn read(root: &Path) -> Self {
        let mut files = Vec::new();
        walk(&root.join("crates"), &mut files);
        files.retain(|path| {
            path.extension().is_some_and(|e| e == "rs") && path.components().any(|c| c.as_os_str() == "src")
        });
        files.sort();
        let sources: Vec<(String, String)> = files
            .iter()
            .filter_map(|path| {
                let text = std::fs::read_to_string(path).ok()?;
                let relative = path.strip_prefix(root).ok()?.to_string_lossy().into_owned();
                Some((relative, text))
            })
            .collect();
        assert!(sources.len() > 50, "too few sources under {}", root.display());
        let models = std::fs::read_to_string(root.join("crates/bosun-providers/data/models.json")).unwrap();
        Self {
            root: root.to_owned(),
            sources,
            models_json: serde_json::from_str(&models).unwrap(),
            package_lock: std::fs::read_to_string(root.join("test-peers/package-lock.json")).unwrap(),
        }
    }

    fn source(&self, n: usize) -> &(String, String) {
        &self.sources[n % self.sources.len()]
    }

    /// The call and result of round `round`'s response.
    fn step(&self, round: usize) -> (&'static str, Value, String) {
        if let Some(large) = LARGE.iter().position(|r| *r == round) {
            return self.large(large);
        }
        match round % 6 {
            0 | 1 | 3 => {
                let (path, text) = self.source(round * 7 + 3);
                let lines = text.lines().count();
                let limit = 15 + (round * 11) % 35;
                let offset = if lines > limit { (round * 13) % (lines - limit) } else { 0 };
                let args = json!({"path": path, "offset": offset + 1, "limit": limit});
                ("read_file", args, numbered(text, offset, limit))
            }
            2 => {
                let patterns =
                    ["pub fn ", "impl ", "Result<", "async fn ", "#[test]", "tracing::", "Arc<", "match "];
                let pattern = patterns[(round / 6) % patterns.len()];
                let (path, _) = self.source(round * 5);
                let dir =
                    Path::new(path).parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
                let args = json!({"pattern": pattern, "path": dir});
                ("search", args, self.search(pattern, &dir, 25))
            }
            4 => {
                let (command, output) = if round % 12 == 4 {
                    let skip = (round * 3).to_string();
                    (
                        "git log --stat -n 2",
                        run(&self.root, "git", &["log", "--stat", "-n", "2", "--skip", &skip]),
                    )
                } else {
                    let (path, _) = self.source(round * 3);
                    let dir = Path::new(path).parent().unwrap().to_string_lossy().into_owned();
                    ("ls -la", run(&self.root, "ls", &["-la", &dir]))
                };
                ("shell", json!({"command": command}), format!("exit code 0\n{}", cap(&output, 3_000)))
            }
            _ => {
                let models = self.models_json["models"].as_array().cloned().unwrap_or_default();
                let skip = (round / 6 * 2) % models.len().max(1);
                let slice: Vec<Value> = models.into_iter().skip(skip).take(2).collect();
                let text = serde_json::to_string_pretty(&json!({"models": slice})).unwrap();
                ("model_table", json!({"from": skip}), cap(&text, 3_000))
            }
        }
    }

    /// The large results: a whole source file, a slice of the npm lock
    /// file, `git log --stat`.
    fn large(&self, which: usize) -> (&'static str, Value, String) {
        match which {
            0 => {
                let path = "crates/bosun-core/src/session/turn.rs";
                let text = std::fs::read_to_string(self.root.join(path)).unwrap();
                ("read_file", json!({"path": path}), numbered(&text, 0, usize::MAX))
            }
            1 => {
                let args = json!({"command": "cat test-peers/package-lock.json"});
                ("shell", args, format!("exit code 0\n{}", cap(&self.package_lock, 16_000)))
            }
            _ => {
                let log = run(&self.root, "git", &["log", "--stat", "-n", "40"]);
                (
                    "shell",
                    json!({"command": "git log --stat -n 40"}),
                    format!("exit code 0\n{}", cap(&log, 16_000)),
                )
            }
        }
    }

    /// `path:line:text` for lines of the sources under `dir` holding `pattern`.
    fn search(&self, pattern: &str, dir: &str, most: usize) -> String {
        let mut out = String::new();
        let hits = self
            .sources
            .iter()
            .filter(|(path, _)| path.starts_with(dir))
            .flat_map(|(path, text)| text.lines().enumerate().map(move |(n, line)| (path, n + 1, line)))
            .filter(|(_, _, line)| line.contains(pattern))
            .take(most);
        for (path, n, line) in hits {
            out.push_str(&format!("{path}:{n}:{}\n", line.trim()));
        }
        if out.is_empty() { "no matches".to_owned() } else { out }
    }
}

fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, into);
        } else {
            into.push(path);
        }
    }
}

/// Lines `offset..offset + limit` of `text`, numbered as `read_file` does.
fn numbered(text: &str, offset: usize, limit: usize) -> String {
    text.lines()
        .enumerate()
        .skip(offset)
        .take(limit)
        .map(|(n, line)| format!("{:>6}\t{line}\n", n + 1))
        .collect()
}

fn cap(text: &str, most: usize) -> String {
    let mut end = most.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

fn run(root: &Path, program: &str, args: &[&str]) -> String {
    match Command::new(program).args(args).current_dir(root).output() {
        Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
        Err(error) => format!("{program}: {error}"),
    }
}

fn tools() -> Vec<ToolDefinition> {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    vec![
        ToolDefinition::new(
            "read_file",
            "Reads a text file of the workspace. Lines are numbered; offset and limit pick a part.",
            object(
                json!({"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
                &["path"],
            ),
        ),
        ToolDefinition::new(
            "search",
            "Finds lines matching a regular expression in the workspace's files.",
            object(json!({"pattern": {"type": "string"}, "path": {"type": "string"}}), &["pattern"]),
        ),
        ToolDefinition::new(
            "list_files",
            "Lists the files under a directory of the workspace.",
            object(json!({"path": {"type": "string"}}), &[]),
        ),
        ToolDefinition::new(
            "shell",
            "Runs a bash command in the workspace; stdout and stderr together, with the exit code.",
            object(json!({"command": {"type": "string"}}), &["command"]),
        ),
        ToolDefinition::new(
            "edit_file",
            "Replaces one exact occurrence of old_text with new_text in a file.",
            object(
                json!({"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}}),
                &["path", "old_text", "new_text"],
            ),
        ),
        ToolDefinition::new(
            "model_table",
            "Looks up a provider's models in bosun's model table; answers JSON.",
            object(json!({"from": {"type": "integer"}}), &["from"]),
        ),
    ]
}

/// One round's figures.
struct Row {
    chars: usize,
    exact: u64,
    estimate: u64,
    took: Duration,
    /// The round right after a large result landed.
    after_large: Option<usize>,
}

impl Row {
    fn error(&self) -> f64 {
        (self.estimate as f64 - self.exact as f64) / self.exact as f64
    }
}

async fn simulate(model: &LocalModel, corpus: &Corpus) -> Vec<Row> {
    let tools = tools();
    let tools_json = serde_json::to_string(&tools).unwrap().len();
    let system = SYSTEM.len();
    println!("bosun-bench: request parts: system prompt {system} chars, tools as JSON {tools_json} chars");
    let mut messages = vec![Message::user(ASKS[0])];
    let mut estimator = Estimator::new();
    let mut rows = Vec::new();
    for round in 0..ROUNDS {
        let request =
            ModelRequest::new(Some(SYSTEM), &messages[..], &tools[..], GenerationOptions::default());
        let started = Instant::now();
        let exact = model.count_tokens(&request).await.expect("a local model counts");
        let took = started.elapsed();
        let chars = chars_of(Some(SYSTEM), &messages, tools_json);
        let estimate = estimator.estimate(chars);
        // What a response to this request would report.
        estimator.observe(chars, &Usage::new(exact, 40));
        let after_large = round.checked_sub(1).and_then(|r| LARGE.iter().position(|l| *l == r));
        rows.push(Row { chars, exact, estimate, took, after_large });

        if round % TURN == TURN - 1 {
            let answer = format!(
                "Done with this part: the change is in {} and its tests pass.",
                corpus.source(round).0
            );
            messages.push(assistant(vec![ContentPart::text(answer)], StopReason::Stop));
            messages.push(Message::user(ASKS[(round / TURN + 1) % ASKS.len()]));
            continue;
        }
        let (tool, arguments, result) = corpus.step(round);
        let id = CallId::new_v7();
        let call = ContentPart::ToolCall { id, name: tool.into(), arguments, provider_data: None };
        let note = ContentPart::text(format!("Next I use {tool}."));
        messages.push(assistant(vec![note, call], StopReason::ToolUse));
        messages.push(Message::tool_result(id, tool, result, false));
    }
    rows
}

fn assistant(content: Vec<ContentPart>, stop_reason: StopReason) -> Message {
    Message::Assistant { content, usage: Usage::default(), stop_reason }
}

fn percent(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

fn report(name: &str, rows: &[Row]) {
    println!("bosun-bench: {name}");
    println!(
        "bosun-bench: | round | chars | exact tokens | estimate | error | added chars | added tokens | chars/token added | count |"
    );
    println!("bosun-bench: |---|---|---|---|---|---|---|---|---|");
    for (n, row) in rows.iter().enumerate() {
        let (added_chars, added_tokens) = match n.checked_sub(1).map(|p| &rows[p]) {
            Some(prev) => (row.chars - prev.chars, row.exact - prev.exact),
            None => (row.chars, row.exact),
        };
        let mark = if row.after_large.is_some() { " (large result)" } else { "" };
        println!(
            "bosun-bench: | {}{mark} | {} | {} | {} | {} | {added_chars} | {added_tokens} | {:.2} | {:.1} ms |",
            n + 1,
            row.chars,
            row.exact,
            row.estimate,
            percent(row.error()),
            added_chars as f64 / added_tokens.max(1) as f64,
            row.took.as_secs_f64() * 1e3,
        );
    }
    let calibrated = &rows[1..];
    let mean_abs = |rows: &[Row]| rows.iter().map(|r| r.error().abs()).sum::<f64>() / rows.len() as f64;
    let mean = mean_abs(calibrated);
    let signed = calibrated.iter().map(Row::error).sum::<f64>() / calibrated.len() as f64;
    let (worst, worst_row) = calibrated
        .iter()
        .enumerate()
        .map(|(n, r)| (n + 2, r))
        .max_by(|a, b| a.1.error().abs().total_cmp(&b.1.error().abs()))
        .unwrap();
    let last = rows.last().unwrap();
    let fresh = Estimator::new().estimate(last.chars);
    let mut times: Vec<Duration> = rows.iter().map(|r| r.took).collect();
    times.sort();
    println!("bosun-bench: summary, {name}");
    println!("bosun-bench: | figure | value |");
    println!("bosun-bench: |---|---|");
    println!("bosun-bench: | cold error (round 1, 4 chars/token) | {} |", percent(rows[0].error()));
    println!("bosun-bench: | after calibration, mean abs error (rounds 2-{ROUNDS}) | {:.2}% |", mean * 100.0);
    println!(
        "bosun-bench: | after calibration, mean abs error (rounds 11-{ROUNDS}) | {:.2}% |",
        mean_abs(&rows[10..]) * 100.0
    );
    println!(
        "bosun-bench: | after calibration, mean signed error (rounds 2-{ROUNDS}) | {} |",
        percent(signed)
    );
    println!(
        "bosun-bench: | after calibration, max abs error | {} (round {worst}) |",
        percent(worst_row.error())
    );
    for row in rows.iter().filter(|r| r.after_large.is_some()) {
        let n = rows.iter().position(|r| std::ptr::eq(r, row)).unwrap();
        let added = row.chars - rows[n - 1].chars;
        println!(
            "bosun-bench: | round {} after a large result (+{added} chars) | {} |",
            n + 1,
            percent(row.error())
        );
    }
    println!(
        "bosun-bench: | last request | {} chars, {} tokens ({:.2} chars/token) |",
        last.chars,
        last.exact,
        last.chars as f64 / last.exact as f64
    );
    println!(
        "bosun-bench: | last request at 4 chars/token, never calibrated | {} |",
        percent((fresh as f64 - last.exact as f64) / last.exact as f64)
    );
    println!(
        "bosun-bench: | count_tokens time: median, max | {:.1} ms, {:.1} ms |",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let asked: Vec<PathBuf> =
        std::env::args().skip(1).filter(|a| !a.starts_with("--")).map(PathBuf::from).collect();
    let files: Vec<PathBuf> = if asked.is_empty() {
        MODELS.iter().map(|name| root.join(".bosun-cache/models").join(name)).collect()
    } else {
        asked
    };
    let corpus = Corpus::read(&root);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut measured = 0;
    for file in &files {
        if !file.is_file() {
            println!("bosun-bench: skipped {}: missing (scripts/fetch-test-models)", file.display());
            continue;
        }
        // Counting needs the vocabulary only; a small context saves memory.
        let model = LocalModel::load(file, LocalOptions::default().context_cap(512)).unwrap();
        let rows = runtime.block_on(simulate(&model, &corpus));
        let name =
            file.file_name().map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into_owned());
        report(&name, &rows);
        measured += 1;
    }
    assert!(measured > 0, "no model file found; run scripts/fetch-test-models");
}
