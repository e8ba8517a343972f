//! The parent side of the crash harness: runs a child at a kill point and
//! checks what it left — the records against the kill point, the resumed
//! history against the records, the effects against the results, and the
//! store's listing and leases against the journal.

use std::collections::HashMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use bosun_core::results::{INTERRUPTED_RESULT, NOT_STARTED_RESULT};
use bosun_core::{CallId, JournalRecord, Message, TurnRecordOutcome, validate_history};

use super::driver::{
    COUNTS, DIR_VARIABLE, EFFECTS, EXECUTION_VARIABLE, FINAL, KILL_VARIABLE, MODE_VARIABLE, NO_SESSION,
    RESUME_ANSWER, RESUME_PROMPT, RESUMED, SESSION_ID, TAG_VARIABLE, WORKSPACE,
};
use super::{Counts, CrashStore, DRIVER_VARIABLE, Execution, Harness, Kill, Scenario};

/// A child's exit status, stdout and stderr, for assertion messages.
fn describe(output: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
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
    batch: Option<(Message, HashMap<CallId, Message>)>,
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
    let results: HashMap<CallId, &Message> = history
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

impl<S: CrashStore> Harness<S> {
    /// Runs the driver in a child for the scenario in `dir`.
    fn child(&self, dir: &Path, mode: &str, execution: Execution, kill: Kill, tag: &str) -> Output {
        Command::new(std::env::current_exe().unwrap())
            .args([self.driver.as_str(), "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(DRIVER_VARIABLE, "1")
            .env(DIR_VARIABLE, dir)
            .env(MODE_VARIABLE, mode)
            .env(EXECUTION_VARIABLE, execution.label())
            .env(KILL_VARIABLE, kill.label())
            .env(TAG_VARIABLE, tag)
            .envs(self.store.child_env())
            .output()
            .unwrap()
    }

    /// The session's journal as the store holds it, in order, after
    /// checking the store's integrity and that its numbering has no gap.
    fn records(&self, dir: &Path, session: &str, what: &str) -> Vec<JournalRecord> {
        self.store.check_integrity(dir, what);
        self.store
            .records(dir, session)
            .iter()
            .enumerate()
            .map(|(index, (seq, body))| {
                assert_eq!(*seq, index as i64, "{what}: record sequence numbers have a gap");
                serde_json::from_str(body)
                    .unwrap_or_else(|e| panic!("{what}: record {seq} is unreadable: {e}"))
            })
            .collect()
    }

    /// A crashed child left this: the journal checks out against the kill
    /// point.
    fn check_crash(
        &self,
        dir: &Path,
        id: &str,
        kill: Kill,
        before: &[JournalRecord],
        what: &str,
    ) -> Vec<JournalRecord> {
        let after = self.records(dir, id, what);
        assert!(after.starts_with(before), "{what}: a crash changed records written before it");
        let appended = after.len() - before.len();
        match kill {
            // Invariant 15: an append that returned is on disk; one that
            // never started is not.
            Kill::BeforeAppend(n) => assert_eq!(appended, n - 1, "{what}: records after the crash"),
            Kill::AfterAppend(n) => assert_eq!(appended, n, "{what}: records after the crash"),
            _ => {}
        }
        // What a listing reads (the message tree, the session's row) agrees
        // with the journal at every crash point, not only after a resume.
        if !after.is_empty() {
            self.check_stored(dir, id, &after, what);
        }
        after
    }

    /// The stored messages and counts of the session are those of the
    /// history `records` replay to; its title is the first prompt, whether
    /// or not its turn was committed (invariant 21).
    fn check_stored(&self, dir: &Path, id: &str, records: &[JournalRecord], what: &str) {
        let history = committed_messages(records);
        let stored = self.store.stored(dir, id);
        if let Some(messages) = &stored.messages {
            assert_eq!(messages, &history, "{what}: the stored message tree");
        }
        if let Some(count) = stored.record_count {
            assert_eq!(count, records.len() as i64, "{what}: the row's record count");
        }
        assert_eq!(stored.message_count, history.len() as i64, "{what}: the listed message count");
        let first_prompt = records.iter().find_map(|r| match r {
            JournalRecord::TurnStarted { message, .. } => Some(message.text()),
            _ => None,
        });
        assert_eq!(stored.title, first_prompt, "{what}: the listed title");
    }

    pub(super) fn check_scenario(&self, scenario: Scenario) {
        let what = scenario.label();
        let what = what.as_str();
        let temp = fresh_dir();
        let dir = temp.path();

        expect_killed(&self.child(dir, "run", scenario.execution, scenario.run, ""), what);
        let id = fs::read_to_string(dir.join(SESSION_ID)).unwrap();
        let mut journal = self.check_crash(dir, &id, scenario.run, &[], what);
        // The markers of the calls killed in their middle (their effect is
        // the last line written before the kill).
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
            expect_killed(&self.child(dir, "resume", scenario.execution, kill, "r1"), what);
            journal = self.check_crash(dir, &id, kill, &journal, what);
            if let Kill::MidTool(k) = kill {
                let written = effects(dir);
                assert_eq!(written.len(), before.len() + k, "{what}: effects before the second kill");
                killed_in_tool.push(written.last().unwrap().clone());
            }
            tag = 2;
        }
        let tag = format!("r{tag}");
        let effects_before = effects(dir);

        let resumed_child = self.child(dir, "resume", scenario.execution, Kill::Never, &tag);
        expect_success(&resumed_child, what);
        if dir.join(NO_SESSION).exists() {
            // Killed before the session's first record: nothing to resume,
            // and nothing may have happened.
            assert!(journal.is_empty(), "{what}: records of a session that does not exist");
            assert!(effects_before.is_empty(), "{what}: effects of a session that never started");
            assert!(
                self.records(dir, &id, what).is_empty(),
                "{what}: records of a session that does not exist"
            );
            return;
        }
        let resumed = read_history(&dir.join(RESUMED));
        let finished = read_history(&dir.join(FINAL));
        let effects_after = effects(dir);

        // Every tool call has exactly one result, ids unique.
        validate_history(&resumed).unwrap_or_else(|e| panic!("{what}: resumed history: {e}"));
        validate_history(&finished).unwrap_or_else(|e| panic!("{what}: history after resuming: {e}"));

        // Every committed message is there, in order, and after it at most
        // the batch the crash left open, closed with a result for each call.
        check_resumed(&journal, &resumed, what);

        // No effect happened twice, resuming repeated none, and each effect
        // belongs to a call whose result says it ran (or may have).
        assert_eq!(
            effects_after,
            [effects_before.clone(), vec![format!("{tag}-1")]].concat(),
            "{what}: resuming must only add the new turn's effect"
        );
        check_effects(&resumed, &effects_before, &effects_after, &killed_in_tool, what);

        // The resumed session went on: one more turn with its call, answered.
        assert!(finished.starts_with(&resumed), "{what}: the new turn rewrote history");
        let new_turn = &finished[resumed.len()..];
        assert_eq!(new_turn.len(), 4, "{what}: the new turn: {new_turn:#?}");
        assert_eq!(new_turn[0], Message::user(RESUME_PROMPT), "{what}");
        assert_eq!(new_turn[2].text(), format!("done {tag}-1"), "{what}");
        assert_eq!(new_turn[3].text(), RESUME_ANSWER, "{what}");

        // The store agrees: intact, the journal replays to what the session
        // holds, its listing shows it, and the lease was given back.
        let journal = self.records(dir, &id, what);
        assert_eq!(committed_messages(&journal), finished, "{what}: the journal after resuming");
        self.check_stored(dir, &id, &journal, what);
        assert_eq!(self.store.leases(dir, &id), 0, "{what}: the lease was not released");
    }

    /// Runs the script to its end once, checks it, and counts its points.
    pub(super) fn dry_run(&self, execution: Execution) -> Counts {
        let temp = fresh_dir();
        let dir = temp.path();
        let output = self.child(dir, "run", execution, Kill::Never, "");
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
        let journal = self.records(dir, &id, "dry run");
        assert_eq!(journal.len(), counts.appends);
        assert_eq!(committed_messages(&journal), history);
        let mut written = effects(dir);
        written.sort();
        assert_eq!(written, ["t1-a", "t1-b", "t1-c", "t2-a", "t2-b", "t2-c"]);
        let calls = calls_and_results(&history);
        assert!(calls.iter().all(|(m, r)| r.text() == format!("done {m}")), "{calls:?}");
        // session, 3 turns × (start, end), 3 batches × (start, commit), 6
        // calls × (started, finished), 3 answers.
        assert_eq!((counts.appends, counts.tools, counts.rounds), (28, 6, 6), "{execution:?}");
        counts
    }
}

/// The resumed history holds every committed message, in order, and after
/// them at most the batch the crash left open, closed with a result for
/// each call: a finished call's journaled result, an unfinished one's
/// interrupted or not-started error.
fn check_resumed(journal: &[JournalRecord], resumed: &[Message], what: &str) {
    let committed = committed_messages(journal);
    assert!(
        resumed.starts_with(&committed),
        "{what}: committed messages are missing from the resumed history\ncommitted: {committed:#?}\nresumed: {resumed:#?}"
    );
    let mut tail = &resumed[committed.len()..];
    if tail.is_empty() {
        return;
    }
    let open = open_turn(journal).unwrap_or_else(|| panic!("{what}: messages beyond the journal"));
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

/// No effect happened twice; each effect from before the resume belongs to
/// a call of the resumed history; each call's result agrees with its
/// effect (done: once, not started: never); and a call killed in its middle
/// reads as interrupted (invariant 12).
fn check_effects(
    resumed: &[Message],
    effects_before: &[String],
    effects_after: &[String],
    killed_in_tool: &[String],
    what: &str,
) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for marker in effects_after {
        *counts.entry(marker).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n == 1), "{what}: an effect happened twice: {effects_after:?}");
    let calls = calls_and_results(resumed);
    for marker in effects_before {
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
    for marker in killed_in_tool {
        let (_, result) = calls.iter().find(|(m, _)| m == marker).unwrap();
        assert_eq!(result.text(), INTERRUPTED_RESULT, "{what}: the call killed in its middle ({marker})");
    }
}
