//! Crash tests on a real Postgres database (MISSION.md invariants 11, 12
//! and 15): bosun-store's crash harness (`bosun-store/tests/it/crash.rs`),
//! its kill points and checks, run against [`PgJournal`].
//!
//! The test executable doubles as the program that crashes: `crash_driver`
//! (ignored, and inert unless `BOSUN_CRASH_DRIVER=1`) runs a scripted session
//! whose one tool appends a marker line to a file in a temporary workspace
//! (synced), and SIGKILLs its own process at a chosen point: before or after
//! the N-th journal append, inside the K-th tool call once its effect is on
//! disk, or inside the R-th model stream once its first delta is out. The
//! tests run it as a child at every such point, then resume the session in a
//! fresh child and check that every committed message is still there, in
//! order; that every tool call has exactly one result; that no effect
//! happened twice or behind the journal's back (a call whose effect is on
//! disk reads as done or as interrupted, never as not run); that the
//! resumed session goes on working; that the stored numbering has no gap
//! and the session's row (its record count, its title) agrees with the
//! records; and that the lease was given back. A resume takes over the
//! lease the killed child left at once: its holder is a dead process of
//! this machine. The child's exit is the only synchronisation.
//!
//! Every scenario's session lives in one database of the shared server
//! (`support`), handed to each child in `BOSUN_PG_URL`; sessions are told
//! apart by their ids.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::support::{self, block_on, describe};
use bosun_core::journal::JournalFuture;
use bosun_core::results::{INTERRUPTED_RESULT, NOT_STARTED_RESULT};
use bosun_core::{
    Event, EventSink, Journal, JournalRecord, Message, Session, SessionBuilder, SinkError, ToolCategory,
    ToolOutput, TurnRecordOutcome, WorkspaceIdentity, validate_history,
};
use bosun_store_pg::{PgError, PgJournal, PgStore};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

/// Set (to `1`) only in the environment of a child run.
const DRIVER: &str = "BOSUN_CRASH_DRIVER";
/// Files in a scenario's temporary directory.
/// The database's URL, in a child's environment.
const URL: &str = "BOSUN_PG_URL";
const WORKSPACE: &str = "workspace";
const EFFECTS: &str = "effects.log";
const SESSION_ID: &str = "session-id";
const RESUMED: &str = "resumed.json";
const FINAL: &str = "final.json";
const COUNTS: &str = "counts";
const NO_SESSION: &str = "no-session";

const SYSTEM: &str = "You are being crashed on purpose.";
const PROMPTS: [&str; 3] = ["Write three notes.", "Two more, then one.", "Anything else?"];
const RESUME_PROMPT: &str = "Still there?";
const RESUME_ANSWER: &str = "Resumed fine.";
/// Each point is crashed this many times, in a fresh directory each time:
/// once in the default tier, three times in `scripts/test --full` (a crash
/// lands at a slightly different moment each run).
fn runs() -> usize {
    bosun_testing::by_tier(1, 3)
}
/// Children run at once.
const WORKERS: usize = 2;

/// Where a child kills itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kill {
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

// ---------------------------------------------------------------------------
// The driver: the child process.
// ---------------------------------------------------------------------------

/// Ends this process the way a crash does: no destructors, no flushing, no
/// lease released.
fn die() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    panic!("SIGKILL did not end the process");
}

/// What the driver counts, and where it is told to die.
struct Probes {
    kill: Kill,
    effects: PathBuf,
    appends: AtomicUsize,
    tools: AtomicUsize,
    rounds: AtomicUsize,
}

impl Probes {
    fn counts(&self) -> String {
        let load = |n: &AtomicUsize| n.load(Ordering::SeqCst);
        format!("{} {} {}", load(&self.appends), load(&self.tools), load(&self.rounds))
    }
}

/// The store's journal, dying just before or just after one append.
struct KillingJournal {
    inner: PgJournal,
    probes: Arc<Probes>,
}

impl Journal for KillingJournal {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        Box::pin(async move {
            let n = self.probes.appends.fetch_add(1, Ordering::SeqCst) + 1;
            if self.probes.kill == Kill::BeforeAppend(n) {
                die();
            }
            let written = self.inner.append(record).await;
            if self.probes.kill == Kill::AfterAppend(n) {
                die();
            }
            written
        })
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        self.inner.load()
    }
}

/// Counts model rounds and dies at the first text delta of the chosen one,
/// with the rest of that response still in the stream.
struct KillingSink(Arc<Probes>);

impl EventSink for KillingSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        match event {
            Event::ModelRoundStart { .. } => {
                self.0.rounds.fetch_add(1, Ordering::SeqCst);
            }
            Event::TextDelta { .. }
                if self.0.kill == Kill::MidStream(self.0.rounds.load(Ordering::SeqCst)) =>
            {
                die()
            }
            _ => {}
        }
        Ok(())
    }
}

/// The one tool: appends its marker to the effects file and syncs it (the
/// effect), then answers `done <marker>`.
fn effect_tool(probes: &Arc<Probes>) -> FnTool {
    let probes = Arc::clone(probes);
    FnTool::new("effect", ToolCategory::Read, move |arguments, _| {
        let probes = Arc::clone(&probes);
        Box::pin(async move {
            let marker = arguments["marker"].as_str().unwrap_or_default().to_owned();
            let mut file = OpenOptions::new().create(true).append(true).open(&probes.effects).unwrap();
            file.write_all(format!("{marker}\n").as_bytes()).unwrap();
            file.sync_all().unwrap();
            let n = probes.tools.fetch_add(1, Ordering::SeqCst) + 1;
            if probes.kill == Kill::MidTool(n) {
                die();
            }
            ToolOutput::text(format!("done {marker}"))
        })
    })
    .description("Appends the marker to the effects file.")
    .schema(json!({
        "type": "object",
        "properties": { "marker": { "type": "string" } },
        "required": ["marker"],
        "additionalProperties": false
    }))
}

/// The same settings for a new session and for every resume.
fn builder(
    model: ScriptedModel,
    probes: &Arc<Probes>,
    workspace: &Path,
    execution: Execution,
) -> SessionBuilder {
    let builder = Session::builder(model).tool(effect_tool(probes)).workspace(WorkspaceIdentity::new(
        workspace.display().to_string(),
        1,
        2,
    ));
    match execution {
        Execution::Parallel => builder,
        Execution::Sequential => builder.sequential_tools(),
    }
}

fn effect(marker: &str) -> serde_json::Value {
    json!({ "marker": marker })
}

/// Three turns, six model rounds, six tool calls: a batch of three, an
/// answer; a batch of two, a batch of one, an answer; an answer.
fn script() -> ScriptedModel {
    ScriptedModel::new()
        .reply(
            Reply::new()
                .text("Writing ")
                .text("three.")
                .tool_call("effect", effect("t1-a"))
                .tool_call("effect", effect("t1-b"))
                .tool_call("effect", effect("t1-c")),
        )
        .reply(Reply::new().text("Turn one ").text("done."))
        .reply(
            Reply::new()
                .text("Two ")
                .text("now.")
                .tool_call("effect", effect("t2-a"))
                .tool_call("effect", effect("t2-b")),
        )
        .reply(Reply::new().text("And ").text("one more.").tool_call("effect", effect("t2-c")))
        .reply(Reply::new().text("Turn two ").text("done."))
        .reply(Reply::new().text("Nothing ").text("else."))
}

/// The script of a resumed session: one more turn with one call, marked
/// with the resume's tag so each resume's effect is told apart.
fn resume_script(tag: &str) -> ScriptedModel {
    ScriptedModel::new()
        .reply(Reply::new().text("Checking ").text("again.").tool_call("effect", effect(&format!("{tag}-1"))))
        .reply(Reply::new().text("Resumed ").text("fine."))
}

fn write_history(path: &Path, history: &[Message]) {
    fs::write(path, serde_json::to_string(history).unwrap()).unwrap();
}

/// The child process. `BOSUN_CRASH_MODE=run` starts the session and runs the
/// script; `resume` resumes it, records the resumed history, and runs one
/// more turn. Either dies at `BOSUN_CRASH_KILL`.
#[tokio::test(flavor = "current_thread")]
#[ignore = "a child process of the crash tests; inert without BOSUN_CRASH_DRIVER=1"]
async fn crash_driver() {
    if std::env::var_os(DRIVER).is_none() {
        return;
    }
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let dir = PathBuf::from(var("BOSUN_CRASH_DIR"));
    let execution = Execution::parse(&var("BOSUN_CRASH_EXECUTION"));
    let workspace = dir.join(WORKSPACE);
    let probes = Arc::new(Probes {
        kill: Kill::parse(&var("BOSUN_CRASH_KILL")),
        effects: workspace.join(EFFECTS),
        appends: AtomicUsize::new(0),
        tools: AtomicUsize::new(0),
        rounds: AtomicUsize::new(0),
    });
    let store = PgStore::connect(&var(URL)).await.unwrap();
    let mut sink = KillingSink(Arc::clone(&probes));
    match var("BOSUN_CRASH_MODE").as_str() {
        "run" => {
            let journal = store.new_session().await.unwrap();
            fs::write(dir.join(SESSION_ID), journal.session_id()).unwrap();
            let journal = KillingJournal { inner: journal, probes: Arc::clone(&probes) };
            let mut session = builder(script(), &probes, &workspace, execution)
                .system_prompt(SYSTEM)
                .journal(journal)
                .build()
                .await
                .unwrap();
            for prompt in PROMPTS {
                session.run(prompt, &mut sink).await.unwrap();
            }
            write_history(&dir.join(FINAL), session.history());
        }
        "resume" => {
            let id = fs::read_to_string(dir.join(SESSION_ID)).unwrap();
            let journal = match store.open_session(&id).await {
                Ok(journal) => journal,
                Err(PgError::NotFound { .. }) => {
                    fs::write(dir.join(NO_SESSION), "").unwrap();
                    return;
                }
                Err(error) => panic!("cannot open session {id}: {error}"),
            };
            let journal = KillingJournal { inner: journal, probes: Arc::clone(&probes) };
            let model = resume_script(&var("BOSUN_CRASH_TAG"));
            let mut session = builder(model, &probes, &workspace, execution).resume(journal).await.unwrap();
            assert_eq!(session.system_prompt(), Some(SYSTEM));
            write_history(&dir.join(RESUMED), session.history());
            session.run(RESUME_PROMPT, &mut sink).await.unwrap();
            write_history(&dir.join(FINAL), session.history());
        }
        other => panic!("bad mode {other:?}"),
    }
    fs::write(dir.join(COUNTS), probes.counts()).unwrap();
}

// ---------------------------------------------------------------------------
// The parent: runs children and checks what they left.
// ---------------------------------------------------------------------------

fn child(url: &str, dir: &Path, mode: &str, execution: Execution, kill: Kill, tag: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            bosun_testing::test_path!("crash_driver").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DRIVER, "1")
        .env(URL, url)
        .env("BOSUN_CRASH_DIR", dir)
        .env("BOSUN_CRASH_MODE", mode)
        .env("BOSUN_CRASH_EXECUTION", execution.label())
        .env("BOSUN_CRASH_KILL", kill.label())
        .env("BOSUN_CRASH_TAG", tag)
        .output()
        .unwrap()
}

fn expect_killed(output: &Output, what: &str) {
    assert_eq!(
        output.status.signal(),
        Some(9),
        "{what}: the child was not killed by SIGKILL\n{}",
        describe(output)
    );
}

fn expect_success(output: &Output, what: &str) {
    assert!(output.status.success(), "{what}: the child failed\n{}", describe(output));
}

/// The session's journal as the database holds it, in order, after
/// checking that its numbering has no gap.
fn records(url: &str, session: &str, what: &str) -> Vec<JournalRecord> {
    block_on(async {
        let client = support::sql(url).await;
        let rows = client
            .query("SELECT seq, body FROM records WHERE session_id = $1 ORDER BY seq", &[&session])
            .await
            .unwrap();
        rows.iter()
            .enumerate()
            .map(|(index, row)| {
                let (seq, body): (i64, String) = (row.get(0), row.get(1));
                assert_eq!(seq, index as i64, "{what}: record sequence numbers have a gap");
                serde_json::from_str(&body)
                    .unwrap_or_else(|e| panic!("{what}: record {seq} is unreadable: {e}"))
            })
            .collect()
    })
}

/// The leases left on `session`.
fn leases(url: &str, session: &str) -> i64 {
    block_on(async {
        let client = support::sql(url).await;
        client
            .query_one("SELECT count(*) FROM leases WHERE session_id = $1", &[&session])
            .await
            .unwrap()
            .get(0)
    })
}

/// The messages the records commit, independently of `bosun_core::replay`.
fn committed_messages(records: &[JournalRecord]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut pending_user = None;
    let mut entry = 0;
    for record in records {
        match record {
            JournalRecord::TurnStarted { message, .. } => {
                pending_user = Some(message.clone());
                entry = messages.len();
            }
            JournalRecord::Committed { messages: committed, .. } => {
                messages.extend(pending_user.take());
                messages.extend(committed.iter().cloned());
            }
            JournalRecord::TurnEnded { outcome: TurnRecordOutcome::RolledBack, .. } => {
                messages.truncate(entry);
                pending_user = None;
            }
            JournalRecord::TurnEnded { .. } => pending_user = None,
            _ => {}
        }
    }
    messages
}

/// The turn the records leave open: its user message if no batch of it was
/// committed, and the batch in flight (its assistant message and the results
/// of the calls that finished).
struct OpenTurn {
    uncommitted_user: Option<Message>,
    batch: Option<(Message, HashMap<bosun_core::CallId, Message>)>,
}

fn open_turn(records: &[JournalRecord]) -> Option<OpenTurn> {
    let mut open: Option<OpenTurn> = None;
    for record in records {
        match record {
            JournalRecord::TurnStarted { message, .. } => {
                open = Some(OpenTurn { uncommitted_user: Some(message.clone()), batch: None });
            }
            JournalRecord::BatchStarted { assistant, .. } => {
                open.as_mut().unwrap().batch = Some((assistant.clone(), HashMap::new()));
            }
            JournalRecord::InvocationFinished { call_id, result } => {
                open.as_mut().unwrap().batch.as_mut().unwrap().1.insert(*call_id, result.clone());
            }
            JournalRecord::Committed { .. } => {
                let turn = open.as_mut().unwrap();
                turn.uncommitted_user = None;
                turn.batch = None;
            }
            JournalRecord::TurnEnded { .. } => open = None,
            _ => {}
        }
    }
    open
}

fn marker_of(call: &bosun_core::message::ToolCall<'_>) -> String {
    call.arguments["marker"].as_str().unwrap().to_owned()
}

/// Each call of `history` with its result: (marker, result message).
fn calls_and_results(history: &[Message]) -> Vec<(String, Message)> {
    let results: HashMap<bosun_core::CallId, &Message> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { call_id, .. } => Some((*call_id, m)),
            _ => None,
        })
        .collect();
    history
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| (marker_of(&c), results[&c.id].clone())).collect::<Vec<_>>())
        .collect()
}

fn effects(dir: &Path) -> Vec<String> {
    match fs::read_to_string(dir.join(WORKSPACE).join(EFFECTS)) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("cannot read the effects: {e}"),
    }
}

fn read_history(path: &Path) -> Vec<Message> {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn fresh_dir() -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    fs::create_dir(temp.path().join(WORKSPACE)).unwrap();
    temp
}

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

/// A crashed child left this: the journal checks out against the kill point.
fn check_crash(url: &str, id: &str, kill: Kill, before: &[JournalRecord], what: &str) -> Vec<JournalRecord> {
    let after = records(url, id, what);
    assert!(after.starts_with(before), "{what}: a crash changed records written before it");
    let appended = after.len() - before.len();
    match kill {
        // Invariant 15: an append that returned is on disk; one that never
        // started is not.
        Kill::BeforeAppend(n) => assert_eq!(appended, n - 1, "{what}: records after the crash"),
        Kill::AfterAppend(n) => assert_eq!(appended, n, "{what}: records after the crash"),
        _ => {}
    }
    // The session's row (what a listing reads) agrees with the journal at
    // every crash point, not only after a resume.
    if !after.is_empty() {
        check_row(url, id, &after, what);
    }
    after
}

/// The session's row counts `records` and the messages they commit, and is
/// titled with the first prompt,
/// whether or not its turn was committed (invariant 21).
fn check_row(url: &str, id: &str, records: &[JournalRecord], what: &str) {
    let row = block_on(async { PgStore::connect(url).await.unwrap().session(id).await.unwrap() });
    assert_eq!(row.record_count, records.len() as i64, "{what}: the row's record count");
    let history = committed_messages(records);
    assert_eq!(row.message_count, history.len() as i64, "{what}: the listed message count");
    let first_prompt = records.iter().find_map(|r| match r {
        JournalRecord::TurnStarted { message, .. } => Some(message.text()),
        _ => None,
    });
    assert_eq!(row.title, first_prompt, "{what}: the listed title");
}

fn check_scenario(url: &str, scenario: Scenario) {
    let what = scenario.label();
    let what = what.as_str();
    let temp = fresh_dir();
    let dir = temp.path();

    expect_killed(&child(url, dir, "run", scenario.execution, scenario.run, ""), what);
    let id = fs::read_to_string(dir.join(SESSION_ID)).unwrap();
    let mut journal = check_crash(url, &id, scenario.run, &[], what);
    // The markers of the calls killed in their middle (their effect is the
    // last line written before the kill).
    let mut killed_in_tool = Vec::new();
    if let Kill::MidTool(k) = scenario.run {
        let written = effects(dir);
        assert_eq!(written.len(), k, "{what}: effects before the kill");
        killed_in_tool.push(written[k - 1].clone());
    }
    if let Kill::MidStream(r) = scenario.run {
        // Every round of the script commits once: the kill came in round r.
        let commits = journal.iter().filter(|r| matches!(r, JournalRecord::Committed { .. })).count();
        assert_eq!(commits, r - 1, "{what}: commits before the kill");
    }
    let mut tag = 1;
    if let Some(kill) = scenario.resume {
        let before = effects(dir);
        expect_killed(&child(url, dir, "resume", scenario.execution, kill, "r1"), what);
        journal = check_crash(url, &id, kill, &journal, what);
        if let Kill::MidTool(k) = kill {
            let written = effects(dir);
            assert_eq!(written.len(), before.len() + k, "{what}: effects before the second kill");
            killed_in_tool.push(written.last().unwrap().clone());
        }
        tag = 2;
    }
    let tag = format!("r{tag}");
    let effects_before = effects(dir);

    let resumed_child = child(url, dir, "resume", scenario.execution, Kill::Never, &tag);
    expect_success(&resumed_child, what);
    if dir.join(NO_SESSION).exists() {
        // Killed before the session's first record: nothing to resume, and
        // nothing may have happened.
        assert!(journal.is_empty(), "{what}: records of a session that does not exist");
        assert!(effects_before.is_empty(), "{what}: effects of a session that never started");
        assert!(records(url, &id, what).is_empty(), "{what}: records of a session that does not exist");
        return;
    }
    let resumed = read_history(&dir.join(RESUMED));
    let finished = read_history(&dir.join(FINAL));
    let effects_after = effects(dir);

    // Every tool call has exactly one result, ids unique.
    validate_history(&resumed).unwrap_or_else(|e| panic!("{what}: resumed history: {e}"));
    validate_history(&finished).unwrap_or_else(|e| panic!("{what}: history after resuming: {e}"));

    // Every committed message is there, in order, and after it at most the
    // batch the crash left open, closed with a result for each call.
    let committed = committed_messages(&journal);
    assert!(
        resumed.starts_with(&committed),
        "{what}: committed messages are missing from the resumed history\ncommitted: {committed:#?}\nresumed: {resumed:#?}"
    );
    let mut tail = &resumed[committed.len()..];
    if !tail.is_empty() {
        let open = open_turn(&journal).unwrap_or_else(|| panic!("{what}: messages beyond the journal"));
        if let Some(user) = &open.uncommitted_user {
            assert_eq!(&tail[0], user, "{what}: the open turn's user message");
            tail = &tail[1..];
        }
        let (assistant, finished_results) =
            open.batch.unwrap_or_else(|| panic!("{what}: messages beyond the journal without a batch"));
        assert_eq!(tail[0], assistant, "{what}: the open batch");
        let calls: Vec<_> = assistant.tool_calls().collect();
        assert_eq!(tail.len(), 1 + calls.len(), "{what}: the closed batch");
        for (call, result) in calls.iter().zip(&tail[1..]) {
            match finished_results.get(&call.id) {
                Some(journaled) => assert_eq!(result, journaled, "{what}: a finished call's result"),
                None => assert!(
                    [INTERRUPTED_RESULT, NOT_STARTED_RESULT].contains(&result.text().as_str())
                        && result.is_error(),
                    "{what}: an unfinished call's result: {result:?}"
                ),
            }
        }
    }

    // No effect happened twice, resuming repeated none, and each effect
    // belongs to a call whose result says it ran (or may have).
    assert_eq!(
        effects_after,
        [effects_before.clone(), vec![format!("{tag}-1")]].concat(),
        "{what}: resuming must only add the new turn's effect"
    );
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for marker in &effects_after {
        *counts.entry(marker).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n == 1), "{what}: an effect happened twice: {effects_after:?}");
    let calls = calls_and_results(&resumed);
    for marker in &effects_before {
        assert!(calls.iter().any(|(m, _)| m == marker), "{what}: effect {marker} has no call in history");
    }
    for (marker, result) in &calls {
        let happened = counts.get(marker.as_str()).copied().unwrap_or_default();
        match result.text() {
            text if text == format!("done {marker}") => {
                assert!(
                    !result.is_error() && happened == 1,
                    "{what}: {marker} is done but happened {happened}x"
                )
            }
            text if text == INTERRUPTED_RESULT => assert!(result.is_error(), "{what}: {marker}"),
            text if text == NOT_STARTED_RESULT => {
                assert!(result.is_error() && happened == 0, "{what}: {marker} was not run but happened")
            }
            text => panic!("{what}: unexpected result for {marker}: {text}"),
        }
    }
    // Invariant 12: a call killed in its middle reads as interrupted.
    for marker in &killed_in_tool {
        let (_, result) = calls.iter().find(|(m, _)| m == marker).unwrap();
        assert_eq!(result.text(), INTERRUPTED_RESULT, "{what}: the call killed in its middle ({marker})");
    }

    // The resumed session went on: one more turn with its call, answered.
    assert!(finished.starts_with(&resumed), "{what}: the new turn rewrote history");
    let new_turn = &finished[resumed.len()..];
    assert_eq!(new_turn.len(), 4, "{what}: the new turn: {new_turn:#?}");
    assert_eq!(new_turn[0], Message::user(RESUME_PROMPT), "{what}");
    assert_eq!(new_turn[2].text(), format!("done {tag}-1"), "{what}");
    assert_eq!(new_turn[3].text(), RESUME_ANSWER, "{what}");

    // The database agrees: the journal replays to what the session holds,
    // the row counts it, and the lease was given back.
    let journal = records(url, &id, what);
    assert_eq!(committed_messages(&journal), finished, "{what}: the journal after resuming");
    check_row(url, &id, &journal, what);
    assert_eq!(leases(url, &id), 0, "{what}: the lease was not released");
}

/// What an uninterrupted run does: journal appends, tool calls, model rounds.
#[derive(Clone, Copy, Debug)]
struct Counts {
    appends: usize,
    tools: usize,
    rounds: usize,
}

/// Runs the script to its end once, checks it, and counts its points.
fn dry_run(url: &str, execution: Execution) -> Counts {
    let temp = fresh_dir();
    let dir = temp.path();
    let output = child(url, dir, "run", execution, Kill::Never, "");
    expect_success(&output, "dry run");
    let counts: Vec<usize> = fs::read_to_string(dir.join(COUNTS))
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let counts = Counts { appends: counts[0], tools: counts[1], rounds: counts[2] };
    let history = read_history(&dir.join(FINAL));
    validate_history(&history).unwrap();
    let id = fs::read_to_string(dir.join(SESSION_ID)).unwrap();
    let journal = records(url, &id, "dry run");
    assert_eq!(journal.len(), counts.appends);
    assert_eq!(committed_messages(&journal), history);
    let mut written = effects(dir);
    written.sort();
    assert_eq!(written, ["t1-a", "t1-b", "t1-c", "t2-a", "t2-b", "t2-c"]);
    let calls = calls_and_results(&history);
    assert!(calls.iter().all(|(m, r)| r.text() == format!("done {m}")), "{calls:?}");
    // session, 3 turns × (start, end), 3 batches × (start, commit), 6 calls
    // × (started, finished), 3 answers.
    assert_eq!((counts.appends, counts.tools, counts.rounds), (28, 6, 6), "{execution:?}");
    counts
}

/// Runs every scenario [`runs`] times, `WORKERS` at a time, and fails naming
/// every scenario that failed (each failure's message is printed as it
/// happens).
fn run_all(url: &str, scenarios: &[Scenario]) {
    let started = Instant::now();
    let runs = runs();
    let jobs: Vec<Scenario> = scenarios.iter().flat_map(|s| std::iter::repeat_n(*s, runs)).collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                while let Some(job) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                    if std::panic::catch_unwind(AssertUnwindSafe(|| check_scenario(url, *job))).is_err() {
                        failures.lock().unwrap().push(job.label());
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!("{} kill points × {runs} runs in {:.1} s", scenarios.len(), started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {} runs failed: {failures:#?}", failures.len(), jobs.len());
}

fn points_for(
    url: &str,
    executions: &[Execution],
    points: impl Fn(Counts) -> Vec<Kill>,
    resume: Option<Kill>,
) -> Vec<Scenario> {
    executions
        .iter()
        .flat_map(|&execution| {
            let counts = dry_run(url, execution);
            points(counts).into_iter().map(move |run| Scenario { execution, run, resume })
        })
        .collect()
}

const BOTH: [Execution; 2] = [Execution::Parallel, Execution::Sequential];

/// A database of its own for one test's scenarios; `None` when the tests
/// skip for want of Postgres.
fn database() -> Option<String> {
    let server = support::server()?;
    Some(block_on(server.create_database()))
}

#[test]
fn invariant_15_sigkill_at_every_journal_point_loses_nothing_and_repeats_nothing() {
    let Some(url) = database() else { return };
    let scenarios = points_for(
        &url,
        &BOTH,
        |counts| (1..=counts.appends).flat_map(|n| [Kill::BeforeAppend(n), Kill::AfterAppend(n)]).collect(),
        None,
    );
    assert!(scenarios.len() >= 20);
    run_all(&url, &scenarios);
}

#[test]
fn invariant_12_sigkill_inside_a_tool_reports_it_interrupted_and_never_reruns_it() {
    let Some(url) = database() else { return };
    let scenarios = points_for(&url, &BOTH, |counts| (1..=counts.tools).map(Kill::MidTool).collect(), None);
    run_all(&url, &scenarios);
}

#[test]
fn invariant_15_sigkill_inside_a_model_stream_loses_nothing() {
    let Some(url) = database() else { return };
    let scenarios =
        points_for(&url, &BOTH, |counts| (1..=counts.rounds).map(Kill::MidStream).collect(), None);
    run_all(&url, &scenarios);
}

/// A resume that is itself killed — while journaling the records that close
/// the crashed turn, or in its own turn — leaves a session the next resume
/// still takes up without loss or repetition.
#[test]
fn invariant_15_sigkill_while_resuming_then_resuming_again_loses_nothing() {
    let Some(url) = database() else { return };
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
    run_all(&url, &scenarios);
}
