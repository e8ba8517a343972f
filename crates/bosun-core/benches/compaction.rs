//! Compaction's cost over a long turn: `cargo bench -p bosun-core --bench compaction`.
//!
//! One turn of 1,000 rounds on the scripted model, each calling a read tool
//! whose result is 20 KB (each different), on a 16,000-token window, with
//! the in-memory journal: what is sent is compacted as it grows, while
//! history keeps every result. Printed on lines starting `bosun-bench:`:
//! the median time of a round (from one call of the tool to the next, so it
//! holds request assembly, the estimate, compaction, the scripted model,
//! commits and journal appends) over rounds 1–100, 451–550 and 901–1,000;
//! the compactions made, by tier; and the process's peak resident memory.
//! Summary requests (tier 2) are answered at once by a scripted summarizer
//! with a 600-character summary, so this times the view and the journal,
//! not a model. Results and their reading: `docs/benchmarks.md`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bosun_core::compaction::SUMMARY_PROMPT;
use bosun_core::{
    Capabilities, Event, InMemoryJournal, Model, ModelRequest, ModelStream, Session, Tool, ToolCategory,
    ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
use bosun_testing::{Reply, ScriptedModel};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ROUNDS: u32 = 1_000;
const RESULT: usize = 20_000;

/// Answers each call with a different 20 KB text, noting when it was called.
struct Read {
    definition: ToolDefinition,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl Tool for Read {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, _arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        let mut calls = self.calls.lock().unwrap();
        calls.push(Instant::now());
        let text = format!("{}:{}", calls.len(), "x".repeat(RESULT));
        Box::pin(std::future::ready(ToolOutput::text(text)))
    }
}

/// Calls the read tool every round; answers a summary request with a summary.
struct Worker {
    calls: ScriptedModel,
    summaries: ScriptedModel,
}

impl Model for Worker {
    fn capabilities(&self) -> Capabilities {
        self.calls.capabilities()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        if request.system == Some(SUMMARY_PROMPT) {
            self.summaries.stream(request, cancel)
        } else {
            self.calls.stream(request, cancel)
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let read = Read {
        definition: ToolDefinition::new("read", "reads", json!({"type": "object"})),
        calls: Arc::clone(&calls),
    };
    let summary = format!("The agent read {} files; nothing else happened. ", "many").repeat(12);
    let model = Worker {
        calls: ScriptedModel::cycle([Reply::new().tool_call("read", json!({}))]),
        summaries: ScriptedModel::cycle([Reply::new().text(summary)]),
    };
    let mut events: Vec<Event> = Vec::new();
    runtime.block_on(async {
        let mut session = Session::builder(model)
            .tool(read)
            .context_window(16_000)
            .max_rounds(ROUNDS)
            .journal(InMemoryJournal::new())
            .build()
            .await
            .unwrap();
        // The turn ends at its round limit: that is the point.
        let _ = session.run("read for a long time", &mut events).await;
        assert!(session.history().len() > 1_000, "history keeps every result");
    });
    let calls = calls.lock().unwrap();
    let rounds: Vec<Duration> = calls.windows(2).map(|w| w[1] - w[0]).collect();
    let window =
        |from: usize, to: usize| median(rounds[from.min(rounds.len())..to.min(rounds.len())].to_vec());
    let tier =
        |n: u8| events.iter().filter(|e| matches!(e, Event::Compacted { tier, .. } if *tier == n)).count();
    let compactions = format!(
        "{} (tier 1: {}, tier 2: {}, tier 3: {})",
        tier(1) + tier(2) + tier(3),
        tier(1),
        tier(2),
        tier(3)
    );
    println!("bosun-bench: rounds timed: {}", rounds.len());
    println!("bosun-bench: round median, rounds 1-100: {:?}", window(0, 100));
    println!("bosun-bench: round median, rounds 451-550: {:?}", window(450, 550));
    println!("bosun-bench: round median, rounds 901-1000: {:?}", window(900, 1_000));
    println!("bosun-bench: compactions: {compactions}");
    println!("bosun-bench: peak resident memory: {} MiB", peak_rss_kib() / 1024);
}
