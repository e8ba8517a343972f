//! Runtime overhead of one turn: `cargo bench -p bosun-core --bench turn_overhead`.
//!
//! Every turn is two model rounds on the scripted model (one tool call to an
//! in-memory read tool, then a text answer), with the in-memory journal and a
//! sink that drops events, so what is timed is bosun's own work: request
//! assembly, stream reconciliation, id minting, schema validation, the
//! permission check, tool dispatch, commits and journal appends.
//!
//! Criterion group `turn` times one turn on a session that already holds 0,
//! 100 or 1,000 turns (resumed from a journal; the resume and one turn after
//! it, which grows the exactly-full vectors of a resumed session, are not
//! timed). After criterion, `main` runs one 1,000-turn session end to end and
//! prints, on lines starting `bosun-bench:`, the median turn time and the live
//! heap (counted by the allocator below) at turns 100, 550 and 1,000.
//! Results and their reading: `docs/benchmarks.md`.

// The counting allocator needs `unsafe impl GlobalAlloc`; the workspace lint
// is `deny` (not `forbid`) so that this bench, and only it, can allow it.
#![allow(unsafe_code)]
#![allow(clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bosun_core::{
    InMemoryJournal, JournalRecord, Message, Mode, NullSink, Session, Tool, ToolCategory, ToolContext,
    ToolDefinition, ToolFuture, ToolOutput,
};
use bosun_testing::{Reply, ScriptedModel};
use criterion::{BenchmarkId, Criterion, criterion_group};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

// ---------------------------------------------------------------------------
// Counting allocator: live bytes (as requested, not counting the system
// allocator's own overhead), peak live bytes, and the number of allocations.

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes as isize, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged and only updates counters on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(new_size);
            shrank(layout.size());
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// The workload.

/// An in-memory read tool. Not `bosun_testing::FnTool`: that double records
/// the arguments of every call, which would add memory per turn that no real
/// tool holds.
#[derive(Debug)]
struct Lookup {
    definition: ToolDefinition,
}

impl Lookup {
    fn new() -> Self {
        Self {
            definition: ToolDefinition::new(
                "lookup",
                "Looks a key up in an in-memory table.",
                json!({
                    "type": "object",
                    "properties": {"key": {"type": "string", "maxLength": 64}},
                    "required": ["key"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

impl Tool for Lookup {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        let answer = match arguments.get("key").and_then(Value::as_str) {
            Some("a") => "alpha",
            Some("b") => "beta",
            _ => "no such key",
        };
        Box::pin(async move { ToolOutput::text(answer) })
    }
}

/// Plays "call lookup", "answer" forever without recording requests.
fn model() -> ScriptedModel {
    ScriptedModel::cycle([
        Reply::new().tool_call("lookup", json!({"key": "a"})),
        Reply::new().text("The value of a is alpha."),
    ])
}

const PROMPT: &str = "What is the value of a?";

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_time().build().expect("tokio runtime")
    })
}

async fn new_session(journal: InMemoryJournal) -> Session {
    Session::builder(model())
        .tool(Lookup::new())
        .mode(Mode::Propose)
        .journal(journal)
        .build()
        .await
        .expect("build the session")
}

/// A session resumed from `records`, as a long-running agent would be.
async fn resumed_session(records: &[JournalRecord]) -> Session {
    Session::builder(model())
        .tool(Lookup::new())
        .mode(Mode::Propose)
        .resume(InMemoryJournal::from_records(records.to_vec()))
        .await
        .expect("resume the session")
}

async fn turn(session: &mut Session) {
    let outcome = session.run(PROMPT, &mut NullSink).await.expect("a turn");
    debug_assert_eq!(outcome.rounds, 2);
}

/// The journal of a session after `turns` turns.
fn journal_after(turns: usize) -> Vec<JournalRecord> {
    let journal = InMemoryJournal::new();
    runtime().block_on(async {
        let mut session = new_session(journal.clone()).await;
        for _ in 0..turns {
            turn(&mut session).await;
        }
    });
    journal.records()
}

// ---------------------------------------------------------------------------
// Criterion: one turn with 0, 100 and 1,000 turns already in the session.

/// Turns timed on one resumed session before it is replaced by a fresh one,
/// so the history stays within `CHUNK` turns of the nominal size.
const CHUNK: u64 = 20;

fn bench_turn(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("turn");
    for prior in [0usize, 100, 1_000] {
        let records = journal_after(prior);
        group.bench_with_input(BenchmarkId::new("prior_turns", prior), &records, |b, records| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let n = left.min(CHUNK);
                    // A resumed session's vectors are exactly full; one
                    // untimed turn makes them grow once, so the chunk times
                    // the steady state rather than a copy of the whole
                    // history every CHUNK turns.
                    let mut session = rt.block_on(async {
                        let mut session = resumed_session(records).await;
                        turn(&mut session).await;
                        session
                    });
                    total += rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..n {
                            turn(&mut session).await;
                        }
                        start.elapsed()
                    });
                    drop(session);
                    left -= n;
                }
                total
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = bench_turn
}

// ---------------------------------------------------------------------------
// One 1,000-turn session end to end: time per turn, live heap.

const TURNS: usize = 1_000;
const CHECKPOINTS: [usize; 3] = [100, 550, 1_000];

#[derive(Debug, Clone, Copy)]
struct Checkpoint {
    turn: usize,
    /// Live heap of the whole process.
    live: isize,
    /// Heap a copy of the history takes (exact capacities).
    history_heap: isize,
    /// Heap a copy of the journal's records takes (exact capacities).
    journal_heap: isize,
    /// Spare capacity of the history and journal vectors, estimated: both
    /// grow by doubling from pushes and small extends.
    spare: isize,
    history_json: usize,
    journal_json: usize,
}

impl Checkpoint {
    /// What the history and journal contents do not explain.
    fn other(&self) -> isize {
        self.live - self.history_heap - self.journal_heap - self.spare
    }
}

fn spare<T>(len: usize) -> isize {
    ((len.next_power_of_two().max(4) - len) * size_of::<T>()) as isize
}

fn checkpoint(turn: usize, session: &Session, journal: &InMemoryJournal) -> Checkpoint {
    // Read first, before the measurements below allocate anything.
    let live = live_bytes();
    let before = live_bytes();
    let history = session.history().to_vec();
    let history_heap = live_bytes() - before;
    let before = live_bytes();
    let records = journal.records();
    let journal_heap = live_bytes() - before;
    let spare = spare::<Message>(history.len()) + spare::<JournalRecord>(records.len());
    let history_json = serde_json::to_vec(&history).expect("history to JSON").len();
    let journal_json = serde_json::to_vec(&records).expect("journal to JSON").len();
    Checkpoint { turn, live, history_heap, journal_heap, spare, history_json, journal_json }
}

fn per_turn(from: &Checkpoint, to: &Checkpoint, value: impl Fn(&Checkpoint) -> isize) -> f64 {
    (value(to) - value(from)) as f64 / (to.turn - from.turn) as f64
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median<T: Ord + Copy>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

fn long_run() {
    let rt = runtime();
    let mut times = Vec::with_capacity(TURNS);
    // live[n]: live heap after turn n (live[0]: after the build).
    let mut live = Vec::with_capacity(TURNS + 1);
    let mut points = Vec::with_capacity(CHECKPOINTS.len());
    let mut allocations = 0;
    let baseline = live_bytes();
    {
        let journal = InMemoryJournal::new();
        let mut session = rt.block_on(new_session(journal.clone()));
        PEAK.store(live_bytes(), Ordering::Relaxed);
        live.push(live_bytes());
        rt.block_on(async {
            for n in 1..=TURNS {
                let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
                let start = Instant::now();
                turn(&mut session).await;
                times.push(start.elapsed());
                allocations += ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
                live.push(live_bytes());
                if CHECKPOINTS.contains(&n) {
                    points.push(checkpoint(n, &session, &journal));
                }
            }
        });
        assert_eq!(session.history().len(), 4 * TURNS, "every turn commits four messages");
    }
    let left_after_drop = live_bytes() - baseline;
    let peak = PEAK.load(Ordering::Relaxed) - baseline;

    let mut sorted = times.clone();
    sorted.sort_unstable();
    let quantile = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    let total: Duration = times.iter().sum();

    println!();
    println!(
        "bosun-bench: {TURNS}-turn session, scripted model, 1 in-memory tool call per turn, InMemoryJournal"
    );
    println!(
        "bosun-bench: per turn: median {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us, mean {:.1} us",
        micros(median(&times)),
        micros(quantile(0.90)),
        micros(quantile(0.99)),
        micros(quantile(1.0)),
        micros(total) / TURNS as f64,
    );
    println!(
        "bosun-bench: median of turns 1-100: {:.1} us; of turns 901-1000: {:.1} us",
        micros(median(&times[..100])),
        micros(median(&times[TURNS - 100..])),
    );
    println!("bosun-bench: allocations: {:.0} per turn", allocations as f64 / TURNS as f64);
    println!(
        "bosun-bench: sizes: Message {} B, JournalRecord {} B",
        size_of::<Message>(),
        size_of::<JournalRecord>()
    );
    for p in &points {
        println!(
            "bosun-bench: after turn {:>4}: live heap {:>9} B = history {:>8} + journal {:>8} + spare capacity (est.) \
             {:>8} + other {:>7}; history JSON {:>7} B, journal JSON {:>8} B",
            p.turn,
            p.live - baseline,
            p.history_heap,
            p.journal_heap,
            p.spare,
            p.other() - baseline,
            p.history_json,
            p.journal_json,
        );
    }
    if let [a, b, c] = points[..] {
        for (from, to) in [(a, b), (b, c), (a, c)] {
            let steady =
                median(&live[from.turn..=to.turn].windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>());
            println!(
                "bosun-bench: turns {:>3}..{:>4}: live heap {:>6.0} B/turn (history {:>5.0}, journal {:>5.0}, \
                 spare {:>5.0}, other {:>4.0}); median turn-to-turn growth {steady} B; history JSON {:>4.0} B/turn",
                from.turn,
                to.turn,
                per_turn(&from, &to, |p| p.live),
                per_turn(&from, &to, |p| p.history_heap),
                per_turn(&from, &to, |p| p.journal_heap),
                per_turn(&from, &to, |p| p.spare),
                per_turn(&from, &to, Checkpoint::other),
                per_turn(&from, &to, |p| p.history_json as isize),
            );
        }
    }
    println!("bosun-bench: peak live heap during the run: {peak} B above the start");
    println!("bosun-bench: live heap left after dropping the session and journal: {left_after_drop} B");
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    long_run();
}
