//! The durable store's costs: `cargo bench -p bosun-store --bench store`.
//!
//! - **Journal cost per turn, against the floor of the same disk.** A
//!   bosun-core `Session` on `ScriptedModel::cycle` (a reply calling one
//!   in-memory read tool, then a text answer: 4 messages and 7 journal records
//!   per turn) writing to a `StoreJournal`, every turn timed, and every append
//!   too (by a pass-through wrapper). Against it, on the same directory and
//!   interleaved with it in blocks of 25, a bare SQLite connection with the
//!   store's durability settings (WAL, `synchronous=FULL`) doing one
//!   `INSERT` and one `COMMIT` of a row the size of an average journal
//!   record. Both are measured in the steady state of a long session: the
//!   journal is warmed up until SQLite has checkpointed its WAL once, and the
//!   floor's WAL is grown and checkpointed before it is timed, so both rewrite
//!   WAL blocks in place. (A commit that appends to a growing WAL also changes
//!   the file's size, which makes its fsync dearer on ext4; a floor on a new
//!   database, which does that, is printed too.) The fsync of each commit
//!   dominates, so this runs in the default temp dir and, when `/dev/shm`
//!   exists, on tmpfs (where fsync costs nothing).
//! - **Resume of a 10,000-message session** (2,500 turns):
//!   `Store::open_session` + `SessionBuilder::resume`, which loads, parses and
//!   replays all 17,501 records, until the session is ready. Also timed phase
//!   by phase: the lease, the SQL read, the JSON parse, the replay.
//! - **Listing 1,000 sessions** (10 workspaces of 100): `Store::list` of all,
//!   of the newest 50, and of one workspace.
//! - **The integrity check** `Store::open` runs before writing to a file
//!   (`PRAGMA quick_check`) on both databases, against an open that skips it
//!   (the side file says nothing wrote the file since it passed) and a
//!   read-only open.
//!
//! The resume and list databases are written through the real store (setup,
//! not timed; on tmpfs when there is one, so that it takes a second rather
//! than minutes of fsyncs), then copied to the default temp dir, and timed in
//! both places. Criterion groups `resume` and `list_1000_sessions` time them
//! on the default temp dir; after criterion, `main` prints medians and the
//! per-turn figures on lines starting `bosun-bench:`. Results and their
//! reading: `docs/benchmarks.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bosun_core::journal::JournalFuture;
use bosun_core::{
    InMemoryJournal, Journal, JournalRecord, Mode, NullSink, Session, SessionBuilder, Tool, ToolCategory,
    ToolContext, ToolDefinition, ToolFuture, ToolOutput, WorkspaceIdentity, replay,
};
use bosun_store::{ListFilter, Store, StoreJournal};
use bosun_testing::{Reply, ScriptedModel};
use criterion::{BenchmarkId, Criterion};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::runtime::Runtime;

// ---------------------------------------------------------------------------
// The workload: the same turn as bosun-core's `turn_overhead` bench.

/// An in-memory read tool.
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

const PROMPT: &str = "What is the value of a?";
const WORKSPACE: &str = "/work/project";

/// A session on a model that plays "call lookup", "answer" forever.
fn builder(workspace: &str) -> SessionBuilder {
    Session::builder(ScriptedModel::cycle([
        Reply::new().tool_call("lookup", json!({"key": "a"})),
        Reply::new().text("The value of a is alpha."),
    ]))
    .tool(Lookup::new())
    .mode(Mode::Propose)
    .workspace(WorkspaceIdentity::new(workspace, 1, 2))
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_time().build().expect("tokio runtime")
    })
}

async fn turn(session: &mut Session) {
    let outcome = session.run(PROMPT, &mut NullSink).await.expect("a turn");
    debug_assert_eq!(outcome.rounds, 2);
}

// ---------------------------------------------------------------------------
// Where the databases live.

/// A directory on one filesystem.
struct Place {
    label: &'static str,
    dir: TempDir,
    filesystem: String,
}

impl Place {
    fn new(label: &'static str, dir: TempDir) -> Self {
        let filesystem = filesystem_of(dir.path());
        Self { label, dir, filesystem }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn name(&self) -> String {
        format!("{} {} ({})", self.label, self.path().display(), self.filesystem)
    }
}

/// The default temp dir and, if there is one, a tmpfs.
fn places() -> Vec<Place> {
    let mut places = vec![Place::new(
        "default temp dir",
        tempfile::Builder::new().prefix("bosun-bench-").tempdir().expect("a temp dir"),
    )];
    if Path::new("/dev/shm").is_dir()
        && let Ok(dir) = tempfile::Builder::new().prefix("bosun-bench-").tempdir_in("/dev/shm")
    {
        places.push(Place::new("tmpfs", dir));
    }
    places
}

/// `df`'s name for the filesystem holding `path` (ext4, overlay, tmpfs…).
fn filesystem_of(path: &Path) -> String {
    Command::new("df")
        .arg("--output=fstype")
        .arg(path)
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().nth(1).map(|l| l.trim().to_owned()))
        .unwrap_or_else(|| "unknown".into())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// Copies a closed database (and its WAL, if one was left) to `to`.
fn copy_database(from: &Path, to: &Path) {
    std::fs::copy(from, to).expect("copy the database");
    let wal = with_suffix(from, "-wal");
    if wal.exists() {
        std::fs::copy(&wal, with_suffix(to, "-wal")).expect("copy the WAL");
    }
}

// ---------------------------------------------------------------------------
// Statistics.

fn median(values: &[Duration]) -> Duration {
    quantile(values, 0.5)
}

fn quantile(values: &[Duration], q: f64) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// "median X ms (min A, max B)".
fn summary_ms(values: &[Duration]) -> String {
    format!(
        "median {:.2} ms (min {:.2}, max {:.2}, {} runs)",
        ms(median(values)),
        ms(quantile(values, 0.0)),
        ms(quantile(values, 1.0)),
        values.len()
    )
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

// ---------------------------------------------------------------------------
// 1. Journal cost per turn against the floor.

const WARM_UP_TURNS: usize = 10;
const TIMED_TURNS: usize = 200;
/// Turns and floor commits alternate in blocks of this many, so all see the
/// same disk weather.
const BLOCK: usize = 25;
/// SQLite's automatic checkpoint threshold (pages) and a WAL frame's size at
/// the default page size: once the WAL has reached this, it is rewritten in
/// place from its start after each checkpoint instead of growing.
const WAL_FRAME_BYTES: u64 = 4_096 + 24;
const WAL_STEADY_BYTES: u64 = 1_000 * WAL_FRAME_BYTES;
const MAX_WARM_UP_TURNS: usize = 1_000;

struct TurnFigures {
    /// Per record kind: median append time, WAL frames written.
    kinds: Vec<(&'static str, Duration, f64)>,
    /// WAL frames of one floor commit.
    floor_frames: f64,
    warm_up_turns: usize,
    turns: Vec<Duration>,
    /// Commits to a database whose WAL is already full-size (the journal's
    /// steady state).
    floor: Vec<Duration>,
    /// Commits to a new database, whose WAL grows with every commit.
    floor_fresh: Vec<Duration>,
    records_per_turn: f64,
    messages_per_turn: f64,
    row_bytes: usize,
}

/// Records in the database.
fn record_count(reader: &Connection) -> i64 {
    reader.query_row("SELECT count(*) FROM records", [], |r| r.get(0)).unwrap()
}

fn wal_bytes(db: &Path) -> u64 {
    std::fs::metadata(with_suffix(db, "-wal")).map(|m| m.len()).unwrap_or(0)
}

/// A bare connection with the store's durability settings and one table. In
/// the steady state its WAL is first grown to beyond the checkpoint threshold
/// (with a ballast table) and checkpointed, so that commits overwrite WAL
/// blocks that already exist, as the journal's do after its first
/// checkpoint; fresh, every commit appends to a growing WAL.
fn floor_connection(db: &Path, steady: bool) -> Connection {
    let connection = Connection::open(db).unwrap();
    connection.pragma_update(None, "journal_mode", "WAL").unwrap();
    connection.pragma_update(None, "synchronous", "FULL").unwrap();
    connection.execute_batch("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").unwrap();
    if steady {
        connection
            .execute_batch(
                "BEGIN;
                 CREATE TABLE ballast (b BLOB);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
                 INSERT INTO ballast SELECT zeroblob(4000) FROM n;
                 COMMIT;",
            )
            .unwrap();
        assert!(wal_bytes(db) >= WAL_STEADY_BYTES);
        connection.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(())).unwrap();
    }
    connection
}

/// One `INSERT` + `COMMIT`, timed.
fn floor_commit(connection: &mut Connection, body: &str) -> Duration {
    let start = Instant::now();
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
    transaction.execute("INSERT INTO rows (body) VALUES (?1)", [body]).unwrap();
    transaction.commit().unwrap();
    start.elapsed()
}

/// One append as [`Timed`] saw it.
#[derive(Clone, Copy)]
struct Append {
    kind: &'static str,
    elapsed: Duration,
    /// How much the WAL file grew (measured in the warm-up, while it grows).
    wal_growth: u64,
}

/// A pass-through journal that times each append of the journal it wraps.
struct Timed {
    inner: StoreJournal,
    db: PathBuf,
    /// Whether to measure the WAL's growth (two `stat`s per append; only in
    /// the warm-up, not in the timed turns).
    watch_wal: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Append>>>,
}

fn kind(record: &JournalRecord) -> &'static str {
    match record {
        JournalRecord::SessionStarted { .. } => "session_started",
        JournalRecord::TurnStarted { .. } => "turn_started",
        JournalRecord::BatchStarted { .. } => "batch_started",
        JournalRecord::InvocationStarted { .. } => "invocation_started",
        JournalRecord::InvocationFinished { .. } => "invocation_finished",
        JournalRecord::Committed { messages, .. } if messages.len() > 1 => "committed (batch)",
        JournalRecord::Committed { .. } => "committed (answer)",
        JournalRecord::TurnEnded { .. } => "turn_ended",
        _ => "other",
    }
}

/// Record kinds of a turn, in order.
const KINDS: [&str; 7] = [
    "turn_started",
    "batch_started",
    "invocation_started",
    "invocation_finished",
    "committed (batch)",
    "committed (answer)",
    "turn_ended",
];

impl Journal for Timed {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        Box::pin(async move {
            let watch = self.watch_wal.load(Ordering::Relaxed);
            let before = if watch { wal_bytes(&self.db) } else { 0 };
            let start = Instant::now();
            let result = self.inner.append(record).await;
            let elapsed = start.elapsed();
            let wal_growth = if watch { wal_bytes(&self.db).saturating_sub(before) } else { 0 };
            self.log.lock().unwrap().push(Append { kind: kind(record), elapsed, wal_growth });
            result
        })
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        self.inner.load()
    }
}

fn journal_against_floor(dir: &Path) -> TurnFigures {
    let rt = runtime();
    let db = dir.join("journal.db");
    let store = Store::open(&db).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let watch_wal = Arc::new(AtomicBool::new(true));
    let journal =
        Timed { inner: store.new_session(), db: db.clone(), watch_wal: watch_wal.clone(), log: log.clone() };
    let mut session = rt.block_on(builder(WORKSPACE).journal(journal).build()).unwrap();
    // Warm up until the WAL has been checkpointed once: from then on a long
    // session's commits rewrite the WAL in place.
    let mut warm_up_turns = 0;
    rt.block_on(async {
        while warm_up_turns < WARM_UP_TURNS
            || (wal_bytes(&db) < WAL_STEADY_BYTES && warm_up_turns < MAX_WARM_UP_TURNS)
        {
            turn(&mut session).await;
            warm_up_turns += 1;
        }
    });
    let reader = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    // The floor's row: as long as an average record of a turn (the first
    // record, the authority, is larger and written once).
    let row_bytes: f64 =
        reader.query_row("SELECT avg(length(body)) FROM records WHERE seq > 0", [], |r| r.get(0)).unwrap();
    let row_bytes = row_bytes.round() as usize;
    let records_before = record_count(&reader);
    let messages_before = session.history().len();
    let warm_up_appends = log.lock().unwrap().len();
    watch_wal.store(false, Ordering::Relaxed);

    let body = "x".repeat(row_bytes);
    let mut floor = floor_connection(&dir.join("floor.db"), true);
    let mut fresh = floor_connection(&dir.join("floor-fresh.db"), false);
    let fresh_wal = wal_bytes(&dir.join("floor-fresh.db"));
    for _ in 0..WARM_UP_TURNS {
        floor_commit(&mut floor, &body);
        floor_commit(&mut fresh, &body);
    }
    let floor_frames = (wal_bytes(&dir.join("floor-fresh.db")) - fresh_wal) as f64
        / WAL_FRAME_BYTES as f64
        / WARM_UP_TURNS as f64;

    let mut turns = Vec::with_capacity(TIMED_TURNS);
    let mut floor_times = Vec::with_capacity(TIMED_TURNS);
    let mut fresh_times = Vec::with_capacity(TIMED_TURNS);
    for _ in 0..TIMED_TURNS / BLOCK {
        for _ in 0..BLOCK {
            floor_times.push(floor_commit(&mut floor, &body));
        }
        for _ in 0..BLOCK {
            fresh_times.push(floor_commit(&mut fresh, &body));
        }
        rt.block_on(async {
            for _ in 0..BLOCK {
                let start = Instant::now();
                turn(&mut session).await;
                turns.push(start.elapsed());
            }
        });
    }
    let records_after = record_count(&reader);
    let messages_after = session.history().len();
    let log = log.lock().unwrap();
    // Per kind: the median time of its appends in the timed turns, and the
    // WAL frames it writes (measured in the warm-up, while the WAL grew).
    let kinds = KINDS
        .iter()
        .map(|&kind| {
            let times: Vec<Duration> =
                log[warm_up_appends..].iter().filter(|a| a.kind == kind).map(|a| a.elapsed).collect();
            let growth: Vec<u64> = log[..warm_up_appends]
                .iter()
                .filter(|a| a.kind == kind && a.wal_growth > 0)
                .map(|a| a.wal_growth)
                .collect();
            let frames =
                growth.iter().sum::<u64>() as f64 / growth.len().max(1) as f64 / WAL_FRAME_BYTES as f64;
            (kind, median(&times), frames)
        })
        .collect();
    TurnFigures {
        kinds,
        floor_frames,
        warm_up_turns,
        turns,
        floor: floor_times,
        floor_fresh: fresh_times,
        records_per_turn: (records_after - records_before) as f64 / TIMED_TURNS as f64,
        messages_per_turn: (messages_after - messages_before) as f64 / TIMED_TURNS as f64,
        row_bytes,
    }
}

/// The same turns with the in-memory journal: bosun's own cost, no store.
fn in_memory_turns() -> Vec<Duration> {
    let rt = runtime();
    rt.block_on(async {
        let mut session = builder(WORKSPACE).journal(InMemoryJournal::new()).build().await.unwrap();
        for _ in 0..WARM_UP_TURNS {
            turn(&mut session).await;
        }
        let mut times = Vec::with_capacity(TIMED_TURNS);
        for _ in 0..TIMED_TURNS {
            let start = Instant::now();
            turn(&mut session).await;
            times.push(start.elapsed());
        }
        times
    })
}

// ---------------------------------------------------------------------------
// 2. Resume of a 10,000-message session.

const RESUME_TURNS: usize = 2_500;
const RESUME_MESSAGES: usize = 4 * RESUME_TURNS;
const RESUME_RUNS: usize = 15;

/// Writes a 2,500-turn session through the real store; returns its id.
fn build_resume_db(db: &Path) -> String {
    let store = Store::open(db).unwrap();
    let journal = store.new_session();
    let id = journal.session_id().to_owned();
    runtime().block_on(async {
        let mut session = builder(WORKSPACE).journal(journal).build().await.unwrap();
        for _ in 0..RESUME_TURNS {
            turn(&mut session).await;
        }
        assert_eq!(session.history().len(), RESUME_MESSAGES);
    });
    id
}

/// The measured thing: take the session's lease, load, parse and replay its
/// records, and build the session. The session is returned so that its drop
/// (which releases the lease) is outside the timing.
fn resume(store: &Store, id: &str) -> (Duration, Session) {
    let start = Instant::now();
    let journal = store.open_session(id).unwrap();
    let session = runtime().block_on(builder(WORKSPACE).resume(journal)).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(session.history().len(), RESUME_MESSAGES);
    (elapsed, session)
}

fn resume_runs(store: &Store, id: &str, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let (elapsed, session) = resume(store, id);
            drop(session);
            elapsed
        })
        .collect()
}

/// Resume as a new process does it: open the store first.
fn open_and_resume_runs(db: &Path, id: &str, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            let store = Store::open(db).unwrap();
            let (_, session) = resume(&store, id);
            let elapsed = start.elapsed();
            drop(session);
            elapsed
        })
        .collect()
}

/// Resume phase by phase (each timed on its own, `RESUME_RUNS` times).
struct Phases {
    lease: Vec<Duration>,
    sql: Vec<Duration>,
    parse: Vec<Duration>,
    replay: Vec<Duration>,
    free: Vec<Duration>,
    records: usize,
    bytes: usize,
}

fn resume_phases(store: &Store, db: &Path, id: &str) -> Phases {
    let mut phases = Phases {
        lease: Vec::new(),
        sql: Vec::new(),
        parse: Vec::new(),
        replay: Vec::new(),
        free: Vec::new(),
        records: 0,
        bytes: 0,
    };
    let reader = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    for _ in 0..RESUME_RUNS {
        let (lease, journal) = time(|| store.open_session(id).unwrap());
        let branch = journal.branch_id().to_owned();
        drop(journal);
        // What `StoreJournal::load` runs.
        let (sql, bodies) = time(|| {
            let mut statement = reader
                .prepare_cached("SELECT seq, body FROM records WHERE branch_id = ?1 ORDER BY seq")
                .unwrap();
            let rows = statement
                .query_map([&branch], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
                .unwrap();
            rows.collect::<Result<Vec<_>, _>>().unwrap()
        });
        let (parse, records) = time(|| {
            bodies
                .iter()
                .map(|(_, body)| serde_json::from_str::<JournalRecord>(body).unwrap())
                .collect::<Vec<_>>()
        });
        let (replay_time, replayed) = time(|| replay(&records).unwrap());
        assert_eq!(replayed.messages.len(), RESUME_MESSAGES);
        phases.records = records.len();
        phases.bytes = bodies.iter().map(|(_, b)| b.len()).sum();
        // `resume` drops the parsed records before it returns.
        let (free, ()) = time(|| drop(records));
        phases.free.push(free);
        phases.lease.push(lease);
        phases.sql.push(sql);
        phases.parse.push(parse);
        phases.replay.push(replay_time);
    }
    phases
}

// ---------------------------------------------------------------------------
// 3. Listing 1,000 sessions.

const SESSIONS: usize = 1_000;
const WORKSPACES: usize = 10;
const LIST_RUNS: usize = 100;

fn workspace(i: usize) -> String {
    format!("/work/project-{}", i % WORKSPACES)
}

/// Writes 1,000 one-turn sessions through the real store.
fn build_list_db(db: &Path) {
    let store = Store::open(db).unwrap();
    runtime().block_on(async {
        for i in 0..SESSIONS {
            let mut session = builder(&workspace(i)).journal(store.new_session()).build().await.unwrap();
            turn(&mut session).await;
        }
    });
}

/// The three listings timed, with the number of sessions each returns.
fn filters() -> [(&'static str, ListFilter, usize); 3] {
    let mut newest = ListFilter::default();
    newest.limit = Some(50);
    [
        ("all", ListFilter::default(), SESSIONS),
        ("newest_50", newest, 50),
        ("one_workspace", ListFilter::workspace(workspace(3)), SESSIONS / WORKSPACES),
    ]
}

// ---------------------------------------------------------------------------
// Fixtures: both databases, written once and copied to every place.

struct Fixture {
    place: Place,
    resume_db: PathBuf,
    list_db: PathBuf,
}

struct Fixtures {
    places: Vec<Fixture>,
    session: String,
}

fn fixtures(places: Vec<Place>) -> Fixtures {
    // Written on the last place (the tmpfs when there is one).
    let setup = places.last().expect("a place");
    let resume_db = setup.path().join("resume.db");
    let list_db = setup.path().join("list.db");
    let (elapsed, session) = time(|| build_resume_db(&resume_db));
    println!(
        "bosun-bench: setup: wrote a {RESUME_TURNS}-turn ({RESUME_MESSAGES}-message) session through the store on {} \
         in {:.1} s",
        setup.name(),
        elapsed.as_secs_f64()
    );
    let (elapsed, ()) = time(|| build_list_db(&list_db));
    println!(
        "bosun-bench: setup: wrote {SESSIONS} one-turn sessions through the store on {} in {:.1} s",
        setup.name(),
        elapsed.as_secs_f64()
    );
    let places = places
        .into_iter()
        .map(|place| {
            let (resume, list) = (place.path().join("resume.db"), place.path().join("list.db"));
            if resume != resume_db {
                copy_database(&resume_db, &resume);
                copy_database(&list_db, &list);
            }
            Fixture { place, resume_db: resume, list_db: list }
        })
        .collect();
    Fixtures { places, session }
}

// ---------------------------------------------------------------------------
// Criterion: resume and list on the default temp dir.

fn bench_resume(c: &mut Criterion, fixture: &Fixture, session: &str) {
    let store = Store::open(&fixture.resume_db).unwrap();
    let mut group = c.benchmark_group("resume");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("messages", RESUME_MESSAGES), |b| {
        b.iter_custom(|iters| resume_runs(&store, session, iters as usize).iter().sum());
    });
    group.finish();
}

fn bench_list(c: &mut Criterion, fixture: &Fixture) {
    let store = Store::open(&fixture.list_db).unwrap();
    let mut group = c.benchmark_group("list_1000_sessions");
    for (name, filter, expected) in filters() {
        assert_eq!(store.list(&filter).unwrap().len(), expected);
        group.bench_function(name, |b| b.iter(|| store.list(&filter).unwrap()));
    }
    group.finish();
}

// ---------------------------------------------------------------------------
// The printed figures.

fn mean(values: &[Duration]) -> Duration {
    values.iter().sum::<Duration>() / values.len() as u32
}

/// "median X ms (p10 A, p90 B, mean C)".
fn spread_ms(values: &[Duration]) -> String {
    format!(
        "median {:.3} ms (p10 {:.3}, p90 {:.3}, mean {:.3})",
        ms(median(values)),
        ms(quantile(values, 0.1)),
        ms(quantile(values, 0.9)),
        ms(mean(values)),
    )
}

fn report_turns(in_memory: &[Duration], place: &Place) {
    let figures = journal_against_floor(place.path());
    let name = place.name();
    let turn = median(&figures.turns);
    let floor = median(&figures.floor);
    let records = figures.records_per_turn;
    println!(
        "bosun-bench: [{name}] journal: per turn {} over {TIMED_TURNS} turns (after {} warm-up turns); \
         {records:.2} records and {:.2} messages per turn, average record {} B",
        spread_ms(&figures.turns),
        figures.warm_up_turns,
        figures.messages_per_turn,
        figures.row_bytes,
    );
    println!(
        "bosun-bench: [{name}] floor: one INSERT of {} B + COMMIT (WAL, synchronous=FULL), WAL at its steady \
         size: {} over {TIMED_TURNS} commits",
        figures.row_bytes,
        spread_ms(&figures.floor),
    );
    println!(
        "bosun-bench: [{name}] floor on a new database (WAL growing): {} over {TIMED_TURNS} commits",
        spread_ms(&figures.floor_fresh),
    );
    for (kind, time, frames) in &figures.kinds {
        println!(
            "bosun-bench: [{name}] journal record {kind}: median {:.3} ms = {:.2} floor commits; {frames:.1} WAL \
             frames (floor commit: {:.1})",
            ms(*time),
            time.as_secs_f64() / floor.as_secs_f64(),
            figures.floor_frames,
        );
    }
    let store_share = turn.saturating_sub(median(in_memory));
    println!(
        "bosun-bench: [{name}] ratio per turn {:.2} floor commits; per record {:.2} (= turn / ({records:.0} x floor)); \
         against the new-database floor {:.2} per record; the store's share of a turn {:.3} ms = {:.1} us per record",
        turn.as_secs_f64() / floor.as_secs_f64(),
        turn.as_secs_f64() / (records * floor.as_secs_f64()),
        turn.as_secs_f64() / (records * median(&figures.floor_fresh).as_secs_f64()),
        ms(store_share),
        us(store_share) / records,
    );
}

fn report_resume(fixtures: &Fixtures) {
    for fixture in &fixtures.places {
        let name = fixture.place.name();
        let store = Store::open(&fixture.resume_db).unwrap();
        let runs = resume_runs(&store, &fixtures.session, RESUME_RUNS);
        println!(
            "bosun-bench: [{name}] resume of {RESUME_MESSAGES} messages (open_session + resume): {}",
            summary_ms(&runs)
        );
        let opened = open_and_resume_runs(&fixture.resume_db, &fixtures.session, 5);
        println!("bosun-bench: [{name}] Store::open + open_session + resume: {}", summary_ms(&opened));
        let phases = resume_phases(&store, &fixture.resume_db, &fixtures.session);
        let parts = [
            ("open_session (lease commit)", &phases.lease),
            ("SQL read of the records", &phases.sql),
            ("JSON parse", &phases.parse),
            ("replay", &phases.replay),
            ("freeing the parsed records", &phases.free),
        ];
        let sum: Duration = parts.iter().map(|(_, v)| median(v)).sum();
        for (what, values) in parts {
            println!("bosun-bench: [{name}] resume phase: {what}: {}", summary_ms(values));
        }
        println!(
            "bosun-bench: [{name}] resume phases: {} records, {} B of JSON; sum of phase medians {:.2} ms, \
             the rest (the authority check, building the session from the replayed history) about {:.2} ms",
            phases.records,
            phases.bytes,
            ms(sum),
            ms(median(&runs).saturating_sub(sum)),
        );
    }
}

fn report_list(fixtures: &Fixtures) {
    for fixture in &fixtures.places {
        let name = fixture.place.name();
        let store = Store::open(&fixture.list_db).unwrap();
        for (what, filter, expected) in filters() {
            let runs: Vec<Duration> = (0..LIST_RUNS)
                .map(|_| {
                    let (elapsed, listed) = time(|| store.list(&filter).unwrap());
                    assert_eq!(listed.len(), expected);
                    elapsed
                })
                .collect();
            println!("bosun-bench: [{name}] list {what} ({expected} sessions): {}", summary_ms(&runs));
        }
        let first: Vec<Duration> = (0..20)
            .map(|_| {
                time(|| {
                    let store = Store::open(&fixture.list_db).unwrap();
                    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), SESSIONS);
                })
                .0
            })
            .collect();
        println!(
            "bosun-bench: [{name}] Store::open + list all (a new process's first listing): {}",
            summary_ms(&first)
        );
    }
}

/// The integrity check `Store::open` runs before writing to an existing
/// file (`PRAGMA quick_check`), against the open that skips it because the
/// side file says nothing has written the file since it passed, on both
/// databases.
fn report_integrity(fixtures: &Fixtures) {
    for fixture in &fixtures.places {
        let name = fixture.place.name();
        for (what, db) in
            [("1,000 sessions", &fixture.list_db), ("one 10,000-message session", &fixture.resume_db)]
        {
            let bytes = std::fs::metadata(db).unwrap().len();
            let mut side = db.as_os_str().to_owned();
            side.push(".checked");
            let side = PathBuf::from(side);
            let check: Vec<Duration> = (0..10)
                .map(|_| {
                    let connection =
                        Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
                    time(|| {
                        let found: String =
                            connection.query_row("PRAGMA quick_check", [], |r| r.get(0)).unwrap();
                        assert_eq!(found, "ok");
                    })
                    .0
                })
                .collect();
            let checked: Vec<Duration> = (0..10)
                .map(|_| {
                    let _ = std::fs::remove_file(&side);
                    let (elapsed, store) = time(|| Store::open(db).unwrap());
                    assert!(!store.is_read_only());
                    elapsed
                })
                .collect();
            assert!(side.exists(), "the check was remembered");
            let skipped: Vec<Duration> = (0..20).map(|_| time(|| Store::open(db).unwrap()).0).collect();
            let read_only: Vec<Duration> =
                (0..20).map(|_| time(|| Store::open_read_only(db).unwrap()).0).collect();
            println!(
                "bosun-bench: [{name}] integrity, {what} ({:.1} MB): PRAGMA quick_check alone: {}",
                bytes as f64 / 1e6,
                summary_ms(&check)
            );
            println!(
                "bosun-bench: [{name}] integrity, {what}: Store::open checking (no side file): {}; skipping (the \
                 side file matches): {}; Store::open_read_only: {}",
                summary_ms(&checked),
                summary_ms(&skipped),
                summary_ms(&read_only)
            );
        }
    }
}

fn main() {
    let fixtures = fixtures(places());
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
        .configure_from_args();
    let default_place = &fixtures.places[0];
    bench_resume(&mut criterion, default_place, &fixtures.session);
    bench_list(&mut criterion, default_place);
    criterion.final_summary();

    println!();
    let in_memory = in_memory_turns();
    println!(
        "bosun-bench: in-memory journal (no store): per turn median {:.1} us (p90 {:.1}) over {TIMED_TURNS} turns",
        us(median(&in_memory)),
        us(quantile(&in_memory, 0.9)),
    );
    for fixture in &fixtures.places {
        report_turns(&in_memory, &fixture.place);
    }
    report_resume(&fixtures);
    report_list(&fixtures);
    report_integrity(&fixtures);
}
