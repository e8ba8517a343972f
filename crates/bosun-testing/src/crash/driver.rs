//! The child process of the crash harness: the scripted session, its
//! marker-writing tool, and the probes that count journal appends, tool
//! calls and model rounds and SIGKILL the process at the chosen one.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bosun_core::journal::JournalFuture;
use bosun_core::{
    Event, EventSink, Journal, JournalRecord, Message, Session, SessionBuilder, SinkError, ToolCategory,
    ToolOutput, WorkspaceIdentity,
};
use serde_json::json;

use super::{CrashStore, DRIVER_VARIABLE, Execution, Kill};
use crate::{FnTool, Reply, ScriptedModel};

/// Files in a scenario's temporary directory.
pub(super) const WORKSPACE: &str = "workspace";
pub(super) const EFFECTS: &str = "effects.log";
pub(super) const SESSION_ID: &str = "session-id";
pub(super) const RESUMED: &str = "resumed.json";
pub(super) const FINAL: &str = "final.json";
pub(super) const COUNTS: &str = "counts";
pub(super) const NO_SESSION: &str = "no-session";

/// What the parent tells a child, in its environment.
pub(super) const DIR_VARIABLE: &str = "BOSUN_CRASH_DIR";
pub(super) const MODE_VARIABLE: &str = "BOSUN_CRASH_MODE";
pub(super) const EXECUTION_VARIABLE: &str = "BOSUN_CRASH_EXECUTION";
pub(super) const KILL_VARIABLE: &str = "BOSUN_CRASH_KILL";
pub(super) const TAG_VARIABLE: &str = "BOSUN_CRASH_TAG";

const SYSTEM: &str = "You are being crashed on purpose.";
const PROMPTS: [&str; 3] = ["Write three notes.", "Two more, then one.", "Anything else?"];
pub(super) const RESUME_PROMPT: &str = "Still there?";
pub(super) const RESUME_ANSWER: &str = "Resumed fine.";

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
struct KillingJournal<J> {
    inner: J,
    probes: Arc<Probes>,
}

impl<J: Journal> Journal for KillingJournal<J> {
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

/// The child process, for the test executable's `crash_driver` test (which
/// the harness runs in children); returns at once unless
/// `BOSUN_CRASH_DRIVER` is set. `BOSUN_CRASH_MODE=run` starts the session
/// in `S`'s store and runs the script; `resume` resumes it, records the
/// resumed history, and runs one more turn. Either dies at
/// `BOSUN_CRASH_KILL`.
///
/// # Panics
/// When the parent's variables are missing or wrong, or the session fails.
pub async fn drive<S: CrashStore>() {
    if std::env::var_os(DRIVER_VARIABLE).is_none() {
        return;
    }
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let dir = PathBuf::from(var(DIR_VARIABLE));
    let execution = Execution::parse(&var(EXECUTION_VARIABLE));
    let workspace = dir.join(WORKSPACE);
    let probes = Arc::new(Probes {
        kill: Kill::parse(&var(KILL_VARIABLE)),
        effects: workspace.join(EFFECTS),
        appends: AtomicUsize::new(0),
        tools: AtomicUsize::new(0),
        rounds: AtomicUsize::new(0),
    });
    let mut sink = KillingSink(Arc::clone(&probes));
    match var(MODE_VARIABLE).as_str() {
        "run" => {
            let (journal, id) = S::new_session(&dir).await;
            fs::write(dir.join(SESSION_ID), id).unwrap();
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
            let Some(journal) = S::open_session(&dir, &id).await else {
                fs::write(dir.join(NO_SESSION), "").unwrap();
                return;
            };
            let journal = KillingJournal { inner: journal, probes: Arc::clone(&probes) };
            let model = resume_script(&var(TAG_VARIABLE));
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
