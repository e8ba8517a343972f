//! Times the `search`, `read_file` and `edit_file` tools on a large tree.
//!
//! ```text
//! bench_tools DIR [RUNS]                        generate DIR/tree and DIR/big (once), time the tools
//! bench_tools --search-once ROOT PATTERN [--literal]   one search over ROOT, then exit
//! ```
//!
//! The tree is 500 directories of 100 files each (50,000 files of 2–4 KB of
//! pseudo-source, about 150 MB), deterministic, plus a `.gitignore`d
//! directory of 1,000 more files that a search must skip. [`RARE`] appears
//! in one file of every 167 (300 files, once each) and with a numeric suffix
//! that the regex pattern matches. `DIR/big/big.txt` is a 10 MB text file
//! for `read_file` and `edit_file`. `scripts/bench-tools` builds this in
//! release mode, runs it, and compares whole-process searches with ripgrep.
//!
//! Figures are wall-clock medians of RUNS runs (default 10) after one
//! warm-up run, with the tools called directly (`Tool::execute`), so they
//! include the tool's own argument parsing and output rendering but not a
//! session around it.

use std::error::Error;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext, ToolOutput};
use bosun_tools::{ToolLimits, Workspace, WorkspaceTools};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The rare token: in 300 of the 50,000 files.
const RARE: &str = "ZQXJ_RARE_TOKEN";
/// A regex matching the same lines (the token is followed by `_` and three digits).
const RARE_REGEX: &str = r"ZQXJ_[A-Z]+_TOKEN_\d{3}\b";
const DIRS: usize = 500;
const FILES_PER_DIR: usize = 100;
/// One file in this many carries [`RARE`].
const RARE_EVERY: usize = 167;
const IGNORED_FILES: usize = 1_000;
const BIG_BYTES: usize = 10 * 1024 * 1024;
/// Marks a completely generated tree (kept outside the tree).
const COMPLETE_MARK: &str = ".bench-tree-complete-v1";

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--search-once") => search_once(&args[1..]),
        Some(dir) if !dir.starts_with('-') => bench(Path::new(dir), args.get(1).map(String::as_str)),
        _ => Err("usage: bench_tools DIR [RUNS] | bench_tools --search-once ROOT PATTERN [--literal]".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench_tools: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------
// Calling the tools
// ---------------------------------------------------------------------------

struct Tools {
    tools: Vec<Arc<dyn Tool>>,
    runtime: tokio::runtime::Runtime,
}

impl Tools {
    fn open(root: &Path) -> Result<Self> {
        let limits = ToolLimits::default()
            .with_max_results(10_000)
            .with_max_file_bytes(ToolLimits::HARD_MAX_FILE_BYTES);
        let tools = WorkspaceTools::new(Workspace::open(root)?).limits(limits).without_shell().build();
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        Ok(Self { tools, runtime })
    }

    fn call(&self, name: &str, arguments: Value) -> Result<ToolOutput> {
        let tool = self.tools.iter().find(|t| t.definition().name == name).ok_or("no such tool")?;
        let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        let output = self.runtime.block_on(tool.execute(arguments.clone(), context));
        if output.is_error {
            return Err(format!("{name} {arguments} failed: {}", concat_text(&output.content)).into());
        }
        Ok(output)
    }
}

// ---------------------------------------------------------------------------
// Whole-process mode
// ---------------------------------------------------------------------------

/// One search, for timing as a whole process next to `rg`.
fn search_once(args: &[String]) -> Result<()> {
    let (Some(root), Some(pattern)) = (args.first(), args.get(1)) else {
        return Err("usage: bench_tools --search-once ROOT PATTERN [--literal]".into());
    };
    let literal = args.iter().skip(2).any(|a| a == "--literal");
    let tools = Tools::open(Path::new(root))?;
    let output = tools.call("search", json!({"pattern": pattern, "literal": literal}))?;
    let text = concat_text(&output.content);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.write_all(b"\n")?;
    Ok(())
}

// ---------------------------------------------------------------------------
// The benchmark
// ---------------------------------------------------------------------------

fn bench(dir: &Path, runs: Option<&str>) -> Result<()> {
    let runs: usize = runs.map(str::parse).transpose()?.unwrap_or(10).max(1);
    fs::create_dir_all(dir)?;
    let dir = fs::canonicalize(dir)?;
    let tree = dir.join("tree");
    let big_root = dir.join("big");
    generate(&dir, &tree, &big_root)?;

    println!(
        "bench_tools: tree {} ({} files + {IGNORED_FILES} ignored), {runs} runs each",
        tree.display(),
        DIRS * FILES_PER_DIR
    );
    let tools = Tools::open(&tree)?;
    for (label, arguments) in [
        ("search literal", json!({"pattern": RARE, "literal": true})),
        ("search regex", json!({"pattern": RARE_REGEX})),
    ] {
        let mut summary = String::new();
        let times = time_runs(runs, || {
            let output = tools.call("search", arguments.clone())?;
            summary = last_line(&concat_text(&output.content));
            Ok(())
        })?;
        report(label, &times, &summary);
    }

    let tools = Tools::open(&big_root)?;
    let size = fs::metadata(big_root.join("big.txt"))?.len();
    let mut summary = String::new();
    let times = time_runs(runs, || {
        let output = tools.call("read_file", json!({"path": "big.txt"}))?;
        summary = last_line(&concat_text(&output.content));
        Ok(())
    })?;
    report(&format!("read_file {:.1} MB", size as f64 / 1e6), &times, &summary);

    // Each run changes one line near the middle, alternately forth and back,
    // so every run is a real edit (read, match, atomic write, diff).
    let mut forth = true;
    let times = time_runs(runs, || {
        let (old, new) = if forth { (MIDDLE_LINE, MIDDLE_EDITED) } else { (MIDDLE_EDITED, MIDDLE_LINE) };
        forth = !forth;
        let output = tools.call("edit_file", json!({"path": "big.txt", "old_text": old, "new_text": new}))?;
        summary = concat_text(&output.content).lines().next().unwrap_or_default().to_owned();
        Ok(())
    })?;
    report(&format!("edit_file {:.1} MB", size as f64 / 1e6), &times, &summary);
    if !forth {
        // Leave the file as generated.
        tools.call(
            "edit_file",
            json!({"path": "big.txt", "old_text": MIDDLE_EDITED, "new_text": MIDDLE_LINE}),
        )?;
    }
    Ok(())
}

fn last_line(text: &str) -> String {
    text.lines().last().unwrap_or_default().to_owned()
}

/// One warm-up run, then `runs` timed runs.
fn time_runs(runs: usize, mut run: impl FnMut() -> Result<()>) -> Result<Vec<Duration>> {
    run()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        run()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times)
}

fn report(label: &str, sorted: &[Duration], summary: &str) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = if sorted.len() % 2 == 1 {
        ms(sorted[sorted.len() / 2])
    } else {
        (ms(sorted[sorted.len() / 2 - 1]) + ms(sorted[sorted.len() / 2])) / 2.0
    };
    let (min, max) =
        (sorted.first().copied().unwrap_or_default(), sorted.last().copied().unwrap_or_default());
    println!(
        "bosun-bench: {label}: median {median:.1} ms (min {:.1}, max {:.1}, n={}) — {summary}",
        ms(min),
        ms(max),
        sorted.len()
    );
}

// ---------------------------------------------------------------------------
// Generating the data
// ---------------------------------------------------------------------------

/// A line that occurs once in `big.txt`, in the middle.
const MIDDLE_LINE: &str = "    let unique_middle_marker = compute_the_middle(42); // edited by the benchmark";
const MIDDLE_EDITED: &str =
    "    let unique_middle_marker = compute_the_middle(43); // edited by the benchmark";

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 32] = [
    "value", "count", "index", "buffer", "state", "config", "result", "handle", "parse", "render", "update",
    "reader", "writer", "token", "stream", "layout", "cursor", "offset", "length", "matcher", "walker",
    "entry", "record", "ledger", "limit", "budget", "session", "journal", "message", "content", "schema",
    "event",
];

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.below(WORDS.len() as u64) as usize]
}

/// One line of pseudo-Rust.
fn source_line(rng: &mut Rng, out: &mut String) {
    use std::fmt::Write as _;
    let indent = "    ".repeat(rng.below(3) as usize);
    let _ = match rng.below(6) {
        0 => writeln!(
            out,
            "{indent}// {} the {} before the {} is {}",
            word(rng),
            word(rng),
            word(rng),
            word(rng)
        ),
        1 => writeln!(
            out,
            "{indent}let {}_{} = {}(&{}, {});",
            word(rng),
            rng.below(100),
            word(rng),
            word(rng),
            rng.below(10_000)
        ),
        2 => writeln!(out, "{indent}fn {}_{}({}: u64) -> Option<usize> {{", word(rng), word(rng), word(rng)),
        3 => writeln!(
            out,
            "{indent}if {}.{}() > {} {{ return Err(Error::Limit); }}",
            word(rng),
            word(rng),
            rng.below(64)
        ),
        4 => writeln!(out, "{indent}{}.push({}.{}({}));", word(rng), word(rng), word(rng), rng.below(1_000)),
        _ => writeln!(out, "{indent}}}"),
    };
}

fn pseudo_source(seed: u64, min_bytes: usize, rare: Option<usize>) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let target = min_bytes + rng.below(2048) as usize;
    let mut out = String::with_capacity(target + 128);
    let rare_at = rare.map(|_| target / 2);
    let mut placed = false;
    while out.len() < target {
        if let (Some(at), Some(n)) = (rare_at, rare)
            && !placed
            && out.len() >= at
        {
            out.push_str(&format!("    const MARK: &str = \"{RARE}_{:03}\";\n", n % 1000));
            placed = true;
        }
        source_line(&mut rng, &mut out);
    }
    out
}

fn generate(dir: &Path, tree: &Path, big_root: &Path) -> Result<()> {
    let mark = dir.join(COMPLETE_MARK);
    if mark.exists() {
        return Ok(());
    }
    eprintln!(
        "bench_tools: generating {} files under {} …",
        DIRS * FILES_PER_DIR + IGNORED_FILES,
        tree.display()
    );
    let started = Instant::now();
    if tree.exists() {
        fs::remove_dir_all(tree)?;
    }
    fs::create_dir_all(tree)?;
    fs::write(tree.join(".gitignore"), "generated/\n*.log\n")?;
    let mut rare_files = 0;
    for d in 0..DIRS {
        let sub = tree.join(format!("mod_{d:03}"));
        fs::create_dir_all(&sub)?;
        for f in 0..FILES_PER_DIR {
            let index = d * FILES_PER_DIR + f;
            let rare = index.is_multiple_of(RARE_EVERY).then_some(index);
            rare_files += usize::from(rare.is_some());
            fs::write(sub.join(format!("file_{f:03}.rs")), pseudo_source(index as u64 + 1, 2048, rare))?;
        }
    }
    // Ignored files: they hold the token too, and must not be found.
    let ignored = tree.join("generated");
    fs::create_dir_all(&ignored)?;
    for f in 0..IGNORED_FILES {
        fs::write(
            ignored.join(format!("gen_{f:04}.rs")),
            pseudo_source(1_000_000 + f as u64, 2048, Some(f)),
        )?;
    }
    fs::create_dir_all(big_root)?;
    fs::write(big_root.join("big.txt"), big_file())?;
    fs::write(&mark, format!("{rare_files} files hold {RARE}\n"))?;
    eprintln!(
        "bench_tools: generated in {:.1} s ({rare_files} files hold the token)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// About 10 MB of lines, with [`MIDDLE_LINE`] once in the middle.
fn big_file() -> String {
    let mut rng = Rng(7);
    let mut out = String::with_capacity(BIG_BYTES + 256);
    let mut placed = false;
    while out.len() < BIG_BYTES {
        if !placed && out.len() >= BIG_BYTES / 2 {
            out.push_str(MIDDLE_LINE);
            out.push('\n');
            placed = true;
        }
        source_line(&mut rng, &mut out);
    }
    out
}
