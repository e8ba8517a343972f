//! The crash harness (MISSION.md invariants 11, 12 and 15), one for every
//! durable journal: bosun-store's SQLite file and bosun-store-pg's
//! Postgres database each implement [`CrashStore`] in their
//! `tests/it/crash.rs`, and their tests run it through [`Harness`].
//!
//! The test executable doubles as the program that crashes: its
//! `crash_driver` test (ignored, and inert unless `BOSUN_CRASH_DRIVER=1`)
//! calls [`drive`], which runs a scripted session whose one tool appends a
//! marker line to a file in a temporary workspace (synced), and SIGKILLs
//! its own process at a chosen point: before or after the N-th
//! journal append, inside the K-th tool call once its effect is on disk, or
//! inside the R-th model stream once its first delta is out. The harness
//! runs it as a child at every such point, then resumes the session in a
//! fresh child and checks that every committed message is still there, in
//! order; that every tool call has exactly one result; that no effect
//! happened twice or behind the journal's back (a call whose effect is on
//! disk reads as done or as interrupted, never as not run); that the
//! resumed session goes on working; that the stored numbering has no gap
//! and what a listing reads of the session (its messages, counts, title)
//! agrees with the records, at every crash point and after resuming; that
//! the store is intact where it can tell ([`CrashStore::check_integrity`]);
//! and that the lease was given back. The child's exit is the only
//! synchronisation.
//!
//! Each kill point is crashed once in the default tier and three times in
//! `scripts/test --full` ([`crate::by_tier`]), in a fresh directory each
//! time, [`WORKERS`] children at once.
//!
//! Test support: a failed check panics, failing the calling test (or, in a
//! child, ending it with a failure the parent reports), as in
//! [`crate::postgres`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod check;
mod driver;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bosun_core::{Journal, Message};

pub use driver::drive;

/// Set (to `1`) only in the environment of a child run.
pub const DRIVER_VARIABLE: &str = "BOSUN_CRASH_DRIVER";
/// Children run at once.
pub const WORKERS: usize = 2;

/// Each point is crashed this many times, in a fresh directory each time:
/// once in the default tier, three times in `scripts/test --full` (a crash
/// lands at a slightly different moment each run).
fn runs() -> usize {
    crate::by_tier(1, 3)
}

/// What differs between durable stores: where a session's journal lives
/// and how the checks read it back. The child side (`new_session`,
/// `open_session`) finds the store from the scenario's directory and the
/// variables [`CrashStore::child_env`] handed it; the parent side reads
/// what a child left.
pub trait CrashStore: Sync {
    /// The store's journal of one session.
    type Journal: Journal + 'static;

    /// In a child: a new session in the scenario's store, its journal and
    /// its id.
    fn new_session(dir: &Path) -> impl Future<Output = (Self::Journal, String)>;

    /// In a child: session `id`'s journal, or `None` when the store holds
    /// no such session (the run was killed before its first record).
    fn open_session(dir: &Path, id: &str) -> impl Future<Output = Option<Self::Journal>>;

    /// What a child needs in its environment, beside the scenario's
    /// directory, to find the store.
    fn child_env(&self) -> Vec<(&'static str, String)>;

    /// The session's records as stored, in order (its head branch where
    /// there are several): each one's sequence number and JSON body.
    fn records(&self, dir: &Path, session: &str) -> Vec<(i64, String)>;

    /// Checks what the store can tell of its own integrity (`what` names
    /// the scenario in failures). Nothing to check by default.
    fn check_integrity(&self, dir: &Path, what: &str) {
        let _ = (dir, what);
    }

    /// What a listing reads of the session.
    fn stored(&self, dir: &Path, session: &str) -> Stored;

    /// The leases left on the session (or in the scenario's store).
    fn leases(&self, dir: &Path, session: &str) -> i64;
}

/// What a store lists of a session, checked against its records.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// Its messages as the store shows them (its message tree's head
    /// branch), where it keeps them apart from the records.
    pub messages: Option<Vec<Message>>,
    /// The message count it lists.
    pub message_count: i64,
    /// The record count it keeps, where it keeps one.
    pub record_count: Option<i64>,
    /// The title it lists.
    pub title: Option<String>,
}

/// Where a child kills itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kill {
    /// Runs to the end.
    Never,
    /// Before the N-th journal append of the process (from 1).
    BeforeAppend(usize),
    /// After the N-th journal append returned.
    AfterAppend(usize),
    /// In the K-th tool invocation, after its effect is synced.
    MidTool(usize),
    /// In the R-th model round, at its first text delta.
    MidStream(usize),
}

impl Kill {
    fn label(self) -> String {
        match self {
            Self::Never => "never".into(),
            Self::BeforeAppend(n) => format!("before-append:{n}"),
            Self::AfterAppend(n) => format!("after-append:{n}"),
            Self::MidTool(n) => format!("mid-tool:{n}"),
            Self::MidStream(n) => format!("mid-stream:{n}"),
        }
    }

    fn parse(text: &str) -> Self {
        if text == "never" {
            return Self::Never;
        }
        let (kind, n) = text.split_once(':').unwrap_or_else(|| panic!("bad kill point {text:?}"));
        let n: usize = n.parse().unwrap_or_else(|_| panic!("bad kill point {text:?}"));
        match kind {
            "before-append" => Self::BeforeAppend(n),
            "after-append" => Self::AfterAppend(n),
            "mid-tool" => Self::MidTool(n),
            "mid-stream" => Self::MidStream(n),
            _ => panic!("bad kill point {text:?}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Execution {
    Parallel,
    Sequential,
}

impl Execution {
    fn label(self) -> &'static str {
        match self {
            Self::Parallel => "parallel",
            Self::Sequential => "sequential",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "parallel" => Self::Parallel,
            "sequential" => Self::Sequential,
            _ => panic!("bad execution {text:?}"),
        }
    }
}

const BOTH: [Execution; 2] = [Execution::Parallel, Execution::Sequential];

/// One crash: the session runs (dying at `run`), is optionally resumed and
/// killed again (at `resume`), then resumed to the end.
#[derive(Clone, Copy, Debug)]
struct Scenario {
    execution: Execution,
    run: Kill,
    resume: Option<Kill>,
}

impl Scenario {
    fn label(&self) -> String {
        let resume = self.resume.map(|k| format!(", resume killed {}", k.label())).unwrap_or_default();
        format!("{} run killed {}{resume}", self.execution.label(), self.run.label())
    }
}

/// What an uninterrupted run does: journal appends, tool calls, model rounds.
#[derive(Clone, Copy, Debug)]
struct Counts {
    appends: usize,
    tools: usize,
    rounds: usize,
}

/// The harness over one store: runs the crash scenarios, each in children
/// of the test executable, and checks what they leave.
#[derive(Debug)]
pub struct Harness<S> {
    store: S,
    driver: String,
}

impl<S: CrashStore> Harness<S> {
    /// The harness over `store`; `driver` is the libtest name of the test
    /// that calls [`drive`] (`bosun_testing::test_path!("crash_driver")`
    /// in its module), which children run.
    pub fn new(store: S, driver: String) -> Self {
        Self { store, driver }
    }

    /// SIGKILL before and after every journal append of the script, with
    /// tools run in parallel and in sequence.
    ///
    /// # Panics
    /// When a scenario fails its checks (each failure's message is printed
    /// as it happens; the panic names every failed scenario).
    pub fn every_journal_point(&self) {
        let scenarios = self.points_for(|counts| {
            (1..=counts.appends).flat_map(|n| [Kill::BeforeAppend(n), Kill::AfterAppend(n)]).collect()
        });
        assert!(scenarios.len() >= 20);
        self.run_all(&scenarios);
    }

    /// SIGKILL inside every tool call, once its effect is on disk.
    ///
    /// # Panics
    /// As [`Harness::every_journal_point`].
    pub fn every_tool_call(&self) {
        let scenarios = self.points_for(|counts| (1..=counts.tools).map(Kill::MidTool).collect());
        self.run_all(&scenarios);
    }

    /// SIGKILL inside every model stream, at its first text delta.
    ///
    /// # Panics
    /// As [`Harness::every_journal_point`].
    pub fn every_model_stream(&self) {
        let scenarios = self.points_for(|counts| (1..=counts.rounds).map(Kill::MidStream).collect());
        self.run_all(&scenarios);
    }

    /// A resume that is itself killed — while journaling the records that
    /// close the crashed turn, or in its own turn — leaves a session the
    /// next resume still takes up without loss or repetition.
    ///
    /// # Panics
    /// As [`Harness::every_journal_point`].
    pub fn killed_while_resuming(&self) {
        let first_crashes = [Kill::MidTool(1), Kill::MidTool(5), Kill::AfterAppend(17), Kill::MidStream(2)];
        let second_crashes = [
            Kill::BeforeAppend(1),
            Kill::AfterAppend(1),
            Kill::BeforeAppend(2),
            Kill::AfterAppend(2),
            Kill::AfterAppend(4),
            Kill::MidTool(1),
            Kill::MidStream(1),
        ];
        let mut scenarios = Vec::new();
        for execution in BOTH {
            for run in first_crashes {
                for resume in second_crashes {
                    scenarios.push(Scenario { execution, run, resume: Some(resume) });
                }
            }
        }
        self.run_all(&scenarios);
    }

    /// The scenarios killed once at each of `points`, for both executions
    /// (each counted by a dry run first).
    fn points_for(&self, points: impl Fn(Counts) -> Vec<Kill>) -> Vec<Scenario> {
        BOTH.iter()
            .flat_map(|&execution| {
                let counts = self.dry_run(execution);
                points(counts).into_iter().map(move |run| Scenario { execution, run, resume: None })
            })
            .collect()
    }

    /// Runs every scenario [`runs`] times, `WORKERS` at a time, and fails
    /// naming every scenario that failed (each failure's message is printed
    /// as it happens).
    fn run_all(&self, scenarios: &[Scenario]) {
        let started = Instant::now();
        let runs = runs();
        let jobs: Vec<Scenario> = scenarios.iter().flat_map(|s| std::iter::repeat_n(*s, runs)).collect();
        let next = AtomicUsize::new(0);
        let failures = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..WORKERS {
                scope.spawn(|| {
                    while let Some(job) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                        if std::panic::catch_unwind(AssertUnwindSafe(|| self.check_scenario(*job))).is_err() {
                            failures.lock().unwrap().push(job.label());
                        }
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap();
        eprintln!(
            "{} kill points × {runs} runs in {:.1} s",
            scenarios.len(),
            started.elapsed().as_secs_f64()
        );
        assert!(failures.is_empty(), "{} of {} runs failed: {failures:#?}", failures.len(), jobs.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_point_reads_back_as_written() {
        for kill in
            [Kill::Never, Kill::BeforeAppend(3), Kill::AfterAppend(1), Kill::MidTool(2), Kill::MidStream(6)]
        {
            assert_eq!(Kill::parse(&kill.label()), kill);
        }
        for execution in BOTH {
            assert_eq!(Execution::parse(execution.label()), execution);
        }
    }
}
