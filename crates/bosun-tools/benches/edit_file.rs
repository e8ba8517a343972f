//! One `edit_file` call changing one line of a 10 MiB file:
//! `cargo bench -p bosun-tools --bench edit_file`.
//!
//! The tool is called directly (`Tool::execute` on the tools `WorkspaceTools`
//! builds, no session), so a call is the whole of the tool's work: read and
//! hash the file, find and replace, the atomic write with its `fsync`s, and the
//! unified diff it answers with. The file is written once into a temporary
//! directory (the default temp dir, so the `fsync`s are those of a real disk);
//! each call changes one line near the middle, alternately forth and back, so
//! every call is a real edit of the same file. After criterion, `main` prints
//! the median of [`TIMED_CALLS`] more calls on a line starting `bosun-bench:`.
//! Results and their reading: `docs/benchmarks.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext};
use bosun_tools::{ToolLimits, Workspace, WorkspaceTools};
use criterion::{Criterion, SamplingMode};
use serde_json::json;
use tempfile::TempDir;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

const FILE_BYTES: usize = 10 * 1024 * 1024;
const TIMED_CALLS: usize = 21;
/// The one line the bench edits, in the middle of the file.
const MIDDLE: &str = "    let unique_middle_marker = compute_the_middle(42); // edited by the benchmark";
const EDITED: &str = "    let unique_middle_marker = compute_the_middle(43); // edited by the benchmark";

/// A workspace holding `big.txt` and the file tools over it.
struct Fixture {
    _dir: TempDir,
    tools: Vec<Arc<dyn Tool>>,
    runtime: Runtime,
    forth: bool,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.txt"), content()).unwrap();
        let limits = ToolLimits::default().with_max_file_bytes(ToolLimits::HARD_MAX_FILE_BYTES);
        let workspace = Workspace::open(dir.path()).unwrap();
        let tools = WorkspaceTools::new(workspace).limits(limits).without_shell().build();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        Self { _dir: dir, tools, runtime, forth: true }
    }

    /// One edit of the middle line; fails the bench if the edit failed, so
    /// a refusal is never timed as a fast edit.
    fn edit(&mut self) -> usize {
        let (old, new) = if self.forth { (MIDDLE, EDITED) } else { (EDITED, MIDDLE) };
        self.forth = !self.forth;
        let tool = self.tools.iter().find(|t| t.definition().name == "edit_file").unwrap();
        let context = ToolContext::detached(CallId::new_v7(), CancellationToken::new());
        let arguments = json!({"path": "big.txt", "old_text": old, "new_text": new});
        let output = self.runtime.block_on(tool.execute(arguments, context));
        let text = concat_text(&output.content);
        assert!(!output.is_error && text.starts_with("edited `big.txt`: 1 replacement\n"), "{text}");
        text.len()
    }
}

/// 10 MiB of numbered lines of varied length, [`MIDDLE`] once in the middle.
fn content() -> String {
    let mut out = String::with_capacity(FILE_BYTES + 128);
    let mut line = 0_u64;
    let mut placed = false;
    while out.len() < FILE_BYTES {
        if !placed && out.len() >= FILE_BYTES / 2 {
            out.push_str(MIDDLE);
            out.push('\n');
            placed = true;
        }
        let words = 2 + (line.wrapping_mul(0x9e37_79b9) >> 7) % 9;
        let _ = write!(out, "line {line:07}:");
        for word in 0..words {
            let _ = write!(out, " w{}", (line * 31 + word * 7) % 1000);
        }
        out.push('\n');
        line += 1;
    }
    out
}

fn main() {
    let mut fixture = Fixture::new();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .sample_size(20)
        .configure_from_args();
    let mut group = criterion.benchmark_group("edit_file");
    // A call takes tens of milliseconds: as many calls per sample as fit.
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("one_line_of_10MiB", |b| b.iter(|| fixture.edit()));
    group.finish();
    criterion.final_summary();

    let mut times: Vec<Duration> = (0..TIMED_CALLS)
        .map(|_| {
            let started = Instant::now();
            fixture.edit();
            started.elapsed()
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "bosun-bench: edit_file, one line of {:.1} MB: median {:.1} ms (min {:.1}, max {:.1}, n={TIMED_CALLS})",
        content().len() as f64 / 1e6,
        ms(times[TIMED_CALLS / 2]),
        ms(times[0]),
        ms(times[TIMED_CALLS - 1]),
    );
}
