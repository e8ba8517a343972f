//! [`StoreJournal`]: `bosun_core::Journal` on the store. Each record is one
//! SQLite transaction, synced before `append` returns (invariant 15); a
//! committed batch also enters the message tree in the same transaction.
//!
//! The SQLite work (a synced commit, waits of up to [`crate::BUSY_TIMEOUT`]
//! for another process's transaction) runs on the journal's own writer
//! thread, never on the caller's executor: `append` hands the record over a
//! channel and awaits the thread's answer, so other tasks run and a
//! cancelled turn is noticed while a write waits. The thread takes records in
//! order; one handed over is written even if its `append` is dropped, and the
//! next waits for it.

use std::sync::mpsc;
use std::thread::JoinHandle;

use bosun_core::journal::JournalFuture;
use bosun_core::{
    Journal, JournalError, JournalErrorKind, JournalRecord, Message, Spend, Spent, TurnRecordOutcome, Usage,
};
use rusqlite::{Connection, TransactionBehavior, params};
use tokio::sync::oneshot;

use crate::error::StoreError;
use crate::lease;
use crate::rows::{insert_record, now_ms};
use crate::store::Store;

/// Longest title kept from the first user message, in characters.
const TITLE_CHARS: usize = 80;

/// The journal of one branch of one session, holding its lease.
pub struct StoreJournal {
    session: String,
    branch: String,
    writer: Writer,
}

/// What the writer thread owns: the connection's store and the journal's
/// view of what is on disk.
struct State {
    store: Store,
    session: String,
    branch: String,
    token: String,
    next_seq: i64,
    head: Option<i64>,
    /// The user message of the open turn, until its first commit.
    pending_user: Option<Message>,
    /// Where the open turn began, and the messages it added (for a roll back).
    turn_entry: Option<i64>,
    turn_messages: Vec<i64>,
    /// Whether a turn is open, and the usage of it the session row already
    /// counts (committed messages, summaries).
    turn_open: bool,
    turn_usage: Usage,
    /// The model the session runs on, recorded with each turn.
    model: Option<String>,
    /// The base URL the model is reached at, when the user gave one,
    /// recorded with the model.
    base_url: Option<String>,
    /// The reasoning effort the model runs at, when the user set one,
    /// recorded with the model.
    effort: Option<String>,
    /// The parent session and its tool call, for a sub-agent's session:
    /// written when the session is created, never after.
    parent: Option<(String, String)>,
    leased: bool,
}

/// One piece of work for the writer thread, with where its answer goes.
enum Job {
    Write(Box<JournalRecord>, oneshot::Sender<Result<(), StoreError>>),
    Read(oneshot::Sender<Result<Vec<JournalRecord>, StoreError>>),
    Model((String, Option<String>), oneshot::Sender<Result<(), StoreError>>),
    Effort(Option<String>, oneshot::Sender<Result<(), StoreError>>),
    Parent((String, String), oneshot::Sender<Result<(), StoreError>>),
}

/// The writer thread, or why there is none.
enum Writer {
    Running { jobs: mpsc::Sender<Job>, thread: JoinHandle<()> },
    Failed(String),
}

impl Writer {
    fn start(state: State) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("bosun-journal".into()).spawn(move || {
            let mut state = state;
            // Ends when the journal is dropped; the state's drop then
            // releases the lease.
            while let Ok(job) = queue.recv() {
                match job {
                    // The caller may have stopped waiting; the record is
                    // written all the same.
                    Job::Write(record, reply) => drop(reply.send(state.write(&record))),
                    Job::Read(reply) => drop(reply.send(state.read())),
                    Job::Model((model, base_url), reply) => {
                        state.model = Some(model);
                        state.base_url = base_url;
                        drop(reply.send(Ok(())));
                    }
                    Job::Effort(effort, reply) => {
                        state.effort = effort;
                        drop(reply.send(Ok(())));
                    }
                    Job::Parent(parent, reply) => {
                        state.parent = Some(parent);
                        drop(reply.send(Ok(())));
                    }
                }
            }
        });
        match spawned {
            Ok(thread) => Self::Running { jobs, thread },
            Err(error) => Self::Failed(format!("cannot start the journal's writer thread: {error}")),
        }
    }

    /// Hands `job` to the thread; the receiver resolves with its answer.
    fn submit<T>(
        &self,
        job: impl FnOnce(oneshot::Sender<Result<T, StoreError>>) -> Job,
    ) -> Result<oneshot::Receiver<Result<T, StoreError>>, JournalError> {
        match self {
            Self::Running { jobs, .. } => {
                let (reply, answer) = oneshot::channel();
                jobs.send(job(reply)).map_err(|_| stopped())?;
                Ok(answer)
            }
            Self::Failed(reason) => Err(JournalError::new(JournalErrorKind::Unavailable, reason.clone())),
        }
    }
}

fn stopped() -> JournalError {
    JournalError::new(JournalErrorKind::Unavailable, "the journal's writer thread stopped")
}

impl std::fmt::Debug for StoreJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreJournal").field("session", &self.session).field("branch", &self.branch).finish()
    }
}

impl Store {
    /// A journal for a new session; the session exists (and is leased) once
    /// its first record is written.
    pub fn new_session(&self) -> StoreJournal {
        StoreJournal::start(State {
            store: self.clone(),
            session: uuid::Uuid::now_v7().to_string(),
            branch: uuid::Uuid::now_v7().to_string(),
            token: uuid::Uuid::now_v7().to_string(),
            next_seq: 0,
            head: None,
            pending_user: None,
            turn_entry: None,
            turn_messages: Vec::new(),
            turn_open: false,
            turn_usage: Usage::default(),
            model: None,
            base_url: None,
            effort: None,
            parent: None,
            leased: false,
        })
    }

    /// The journal of an existing session's head branch, for resuming it.
    /// Fails with [`StoreError::Leased`] while another live process runs it.
    pub fn open_session(&self, session: &str) -> Result<StoreJournal, StoreError> {
        let token = uuid::Uuid::now_v7().to_string();
        let mut connection = self.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.sql(e))?;
        let branch: Option<String> = transaction
            .query_row("SELECT head_branch FROM sessions WHERE id = ?1", [session], |r| r.get(0))
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => {
                    StoreError::NotFound { what: "session", id: session.into() }
                }
                e => self.sql(e),
            })?;
        let branch = branch.unwrap_or_default();
        lease::acquire(&transaction, session, &token).map_err(|e| e.in_store(self))?;
        transaction.commit().map_err(|e| self.sql(e))?;
        drop(connection);
        Ok(StoreJournal::start(State {
            store: self.clone(),
            session: session.to_owned(),
            branch,
            token,
            next_seq: 0,
            head: None,
            pending_user: None,
            turn_entry: None,
            turn_messages: Vec::new(),
            turn_open: false,
            turn_usage: Usage::default(),
            model: None,
            base_url: None,
            effort: None,
            parent: None,
            leased: true,
        }))
    }
}

impl StoreJournal {
    /// Records `model` (`PROVIDER/MODEL`, or the local model's name) as the
    /// session's model from its next turn on: `sessions show` names it and
    /// prices older turns by it.
    pub fn with_model(self, model: impl Into<String>) -> Self {
        self.with_model_at(model, None)
    }

    /// [`StoreJournal::with_model`], with the base URL the model is reached
    /// at when the user gave one (never a key): resuming the session
    /// reaches the same server ([`crate::SessionSummary::base_url`]).
    pub fn with_model_at(self, model: impl Into<String>, base_url: Option<String>) -> Self {
        let run = (model.into(), base_url);
        let _ = self.writer.submit(|reply| Job::Model(run, reply));
        self
    }

    /// Records the reasoning effort the session's model runs at from its
    /// next turn on (`low`, `medium`, `high` or `off`; `None`: the model's
    /// default), with the model: resuming the session runs at it again
    /// ([`crate::SessionSummary::effort`]).
    pub fn with_effort(self, effort: Option<String>) -> Self {
        self.set_effort(effort);
        self
    }

    /// [`StoreJournal::with_effort`] on a journal in use (`/effort`).
    pub fn set_effort(&self, effort: Option<String>) {
        let _ = self.writer.submit(|reply| Job::Effort(effort, reply));
    }

    /// Records that the session is a sub-agent of `session`, started by its
    /// tool call `call`: `show` names the parent, `list` leaves the session
    /// out unless asked for children ([`crate::ListFilter::with_children`]),
    /// [`Store::children`] lists it, and its artifacts include its
    /// ancestors'. Only a new session records it, when its first record
    /// creates it; on a session that exists already (one
    /// [`Store::open_session`] resumed) it changes nothing.
    pub fn with_parent(self, session: impl Into<String>, call: impl Into<String>) -> Self {
        let parent = (session.into(), call.into());
        let _ = self.writer.submit(|reply| Job::Parent(parent, reply));
        self
    }

    fn start(state: State) -> Self {
        Self { session: state.session.clone(), branch: state.branch.clone(), writer: Writer::start(state) }
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// The branch id.
    pub fn branch_id(&self) -> &str {
        &self.branch
    }
}

impl State {
    fn write(&mut self, record: &JournalRecord) -> Result<(), StoreError> {
        let store = self.store.clone();
        let mut connection = store.lock_to_write()?;
        let transaction =
            connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| store.sql(e))?;
        let now = now_ms();
        let mut head = self.head;
        let mut pending_user = self.pending_user.clone();
        let mut turn_entry = self.turn_entry;
        let mut turn_messages = self.turn_messages.clone();
        let mut turn_open = self.turn_open;
        let mut turn_usage = self.turn_usage;
        let mut leased = self.leased;
        match record {
            JournalRecord::SessionStarted { authority, .. } if self.next_seq == 0 => {
                let workspace = authority.workspace.as_ref().map(|w| w.path.clone());
                let authority_json =
                    serde_json::to_string(authority).map_err(|e| StoreError::Invalid(e.to_string()))?;
                transaction
                    .execute(
                        "INSERT OR IGNORE INTO sessions (id, created_at, updated_at, workspace, title, authority,
                         authority_digest, head_branch, model, parent_session, parent_call, base_url)
                         VALUES (?1, ?2, ?2, ?3, NULL, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        params![
                            self.session,
                            now,
                            workspace,
                            authority_json,
                            authority.digest().as_str(),
                            self.branch,
                            self.model,
                            self.parent.as_ref().map(|(session, _)| session),
                            self.parent.as_ref().map(|(_, call)| call),
                            self.base_url,
                        ],
                    )
                    .map_err(|e| store.sql(e))?;
                transaction
                    .execute(
                        "INSERT OR IGNORE INTO branches (id, session_id, parent_branch, fork_message, head_message,
                         created_at) VALUES (?1, ?2, NULL, NULL, NULL, ?3)",
                        params![self.branch, self.session, now],
                    )
                    .map_err(|e| store.sql(e))?;
                lease::acquire(&transaction, &self.session, &self.token).map_err(|e| e.in_store(&store))?;
                leased = true;
            }
            JournalRecord::TurnStarted { message, .. } => {
                pending_user = Some(message.clone());
                turn_entry = head;
                turn_messages.clear();
                turn_open = true;
                turn_usage = Usage::default();
                if let Some(model) = &self.model {
                    transaction
                        .execute(
                            "UPDATE sessions SET model = ?1, base_url = ?2, effort = ?3 WHERE id = ?4",
                            params![model, self.base_url, self.effort, self.session],
                        )
                        .map_err(|e| store.sql(e))?;
                }
                // The first prompt names the session even if its turn is
                // rolled back (invariant 21).
                transaction
                    .execute(
                        "UPDATE sessions SET title = COALESCE(title, ?1) WHERE id = ?2",
                        params![title_of(message), self.session],
                    )
                    .map_err(|e| store.sql(e))?;
            }
            JournalRecord::Committed { messages, .. } => {
                let user = pending_user.take();
                let mut usage = Usage::default();
                let mut title = None;
                for message in user.iter().chain(messages.iter()) {
                    let id =
                        insert_message(&store, &transaction, &self.session, &self.branch, head, message)?;
                    head = Some(id);
                    turn_messages.push(id);
                    match message {
                        // What tools spent on models (sampling) counts too.
                        Message::Assistant { usage: used, .. } | Message::ToolResult { usage: used, .. } => {
                            usage += *used
                        }
                        Message::User { .. } if title.is_none() => title = Some(title_of(message)),
                        _ => {}
                    }
                }
                turn_usage += usage;
                let count = (user.is_some() as i64) + messages.len() as i64;
                update_session(
                    &transaction,
                    &self.session,
                    &self.branch,
                    head,
                    count,
                    usage,
                    title.as_deref(),
                    now,
                )
                .map_err(|e| store.sql(e))?;
            }
            JournalRecord::TurnEnded { outcome: TurnRecordOutcome::RolledBack, spend, .. } => {
                for id in turn_messages.iter().rev() {
                    transaction
                        .execute("DELETE FROM messages WHERE id = ?1", [id])
                        .map_err(|e| store.sql(e))?;
                }
                head = turn_entry;
                let removed = -(turn_messages.len() as i64);
                // What the turn spent stays spent, though its messages go.
                let unseen = uncounted(spend, turn_usage);
                update_session(&transaction, &self.session, &self.branch, head, removed, unseen, None, now)
                    .map_err(|e| store.sql(e))?;
                add_spend(&transaction, &self.session, spend).map_err(|e| store.sql(e))?;
                pending_user = None;
                turn_messages.clear();
                turn_open = false;
            }
            JournalRecord::TurnEnded { spend, .. } => {
                // Rounds whose response never entered history (a failed
                // or cancelled round) are counted from the turn's spend.
                let unseen = uncounted(spend, turn_usage);
                if !unseen.is_zero() {
                    update_session(&transaction, &self.session, &self.branch, head, 0, unseen, None, now)
                        .map_err(|e| store.sql(e))?;
                }
                add_spend(&transaction, &self.session, spend).map_err(|e| store.sql(e))?;
                pending_user = None;
                turn_messages.clear();
                turn_open = false;
            }
            // Steering enters the turn's history between two batches.
            JournalRecord::Steered { message, .. } => {
                let id = insert_message(&store, &transaction, &self.session, &self.branch, head, message)?;
                head = Some(id);
                turn_messages.push(id);
                update_session(
                    &transaction,
                    &self.session,
                    &self.branch,
                    head,
                    1,
                    Usage::default(),
                    None,
                    now,
                )
                .map_err(|e| store.sql(e))?;
            }
            // A summary request is model usage like a round's: the session's
            // totals (and so its cost) include it. Inside a turn, its spend
            // arrives with `turn_ended`; outside one (asked for by the
            // person) it is the session's now.
            JournalRecord::Compacted { usage: used, cost_micros, .. } if !used.is_zero() => {
                update_session(&transaction, &self.session, &self.branch, head, 0, *used, None, now)
                    .map_err(|e| store.sql(e))?;
                if turn_open {
                    turn_usage += *used;
                } else {
                    let mut spend = Spend::default();
                    spend.compaction = Spent::new(*used, *cost_micros);
                    add_spend(&transaction, &self.session, &spend).map_err(|e| store.sql(e))?;
                }
            }
            // The session row shows the authority it runs under now, which
            // a fork of it starts from.
            JournalRecord::AuthorityChanged { authority, .. } => {
                let authority_json =
                    serde_json::to_string(authority).map_err(|e| StoreError::Invalid(e.to_string()))?;
                transaction
                    .execute(
                        "UPDATE sessions SET authority = ?1, authority_digest = ?2 WHERE id = ?3",
                        params![authority_json, authority.digest().as_str(), self.session],
                    )
                    .map_err(|e| store.sql(e))?;
            }
            _ => {}
        }
        insert_record(&transaction, &self.branch, self.next_seq, record).map_err(|e| store.sql(e))?;
        transaction.commit().map_err(|e| store.sql(e))?;
        // Only what is on disk changes the journal's view of itself.
        self.next_seq += 1;
        self.head = head;
        self.pending_user = pending_user;
        self.turn_entry = turn_entry;
        self.turn_messages = turn_messages;
        self.turn_open = turn_open;
        self.turn_usage = turn_usage;
        self.leased = leased;
        Ok(())
    }

    fn read(&mut self) -> Result<Vec<JournalRecord>, StoreError> {
        let store = self.store.clone();
        let connection = store.lock()?;
        let mut statement = connection
            .prepare_cached("SELECT seq, body FROM records WHERE branch_id = ?1 ORDER BY seq")
            .map_err(|e| store.sql(e))?;
        let rows = statement
            .query_map([&self.branch], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
            .map_err(|e| store.sql(e))?;
        let mut records = Vec::new();
        for row in rows {
            let (seq, body) = row.map_err(|e| store.sql(e))?;
            // Bytes bosun wrote that no longer parse: the file was damaged.
            let record: JournalRecord = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
                path: store.path().to_owned(),
                detail: format!("record {seq} of branch {} is unreadable: {e}", self.branch),
            })?;
            records.push(record);
        }
        let head: Option<i64> = connection
            .query_row("SELECT head_message FROM branches WHERE id = ?1", [&self.branch], |r| r.get(0))
            .map_err(|e| store.sql(e))?;
        self.next_seq = records.len() as i64;
        self.head = head;
        // A turn left open by a crash: its user message is still to be
        // committed with the turn's first batch.
        self.pending_user = None;
        for record in &records {
            match record {
                JournalRecord::TurnStarted { message, .. } => self.pending_user = Some(message.clone()),
                JournalRecord::Committed { .. } | JournalRecord::TurnEnded { .. } => self.pending_user = None,
                _ => {}
            }
        }
        self.turn_entry = head;
        self.turn_messages.clear();
        Ok(records)
    }
}

#[allow(clippy::too_many_arguments)]
fn update_session(
    connection: &Connection,
    session: &str,
    branch: &str,
    head: Option<i64>,
    added: i64,
    usage: Usage,
    title: Option<&str>,
    now: i64,
) -> rusqlite::Result<()> {
    connection.execute("UPDATE branches SET head_message = ?1 WHERE id = ?2", params![head, branch])?;
    let current: String =
        connection.query_row("SELECT usage FROM sessions WHERE id = ?1", [session], |r| r.get(0))?;
    let mut total: Usage = serde_json::from_str(&current).unwrap_or_default();
    total += usage;
    let total = serde_json::to_string(&total).unwrap_or_else(|_| "{}".into());
    connection.execute(
        "UPDATE sessions SET message_count = message_count + ?1, usage = ?2, updated_at = ?3,
         title = COALESCE(title, ?4) WHERE id = ?5",
        params![added, total, now, title, session],
    )?;
    Ok(())
}

/// What `spend` holds beyond `counted`, field by field.
/// Puts one message of the branch after `head`; its row id.
fn insert_message(
    store: &Store,
    transaction: &rusqlite::Transaction<'_>,
    session: &str,
    branch: &str,
    head: Option<i64>,
    message: &Message,
) -> Result<i64, StoreError> {
    let body = serde_json::to_string(message).map_err(|e| StoreError::Invalid(e.to_string()))?;
    transaction
        .execute(
            "INSERT INTO messages (session_id, branch_id, parent_id, body) VALUES (?1, ?2, ?3, ?4)",
            params![session, branch, head, body],
        )
        .map_err(|e| store.sql(e))?;
    Ok(transaction.last_insert_rowid())
}

fn uncounted(spend: &Spend, counted: Usage) -> Usage {
    let total = spend.total().usage;
    let mut rest = Usage::default();
    rest.input = total.input.saturating_sub(counted.input);
    rest.output = total.output.saturating_sub(counted.output);
    rest.cache_read = total.cache_read.saturating_sub(counted.cache_read);
    rest.cache_write = total.cache_write.saturating_sub(counted.cache_write);
    rest.reasoning = total.reasoning.saturating_sub(counted.reasoning);
    rest
}

/// Adds `spend` to the session row's.
fn add_spend(connection: &Connection, session: &str, spend: &Spend) -> rusqlite::Result<()> {
    if spend.is_zero() {
        return Ok(());
    }
    let current: String =
        connection.query_row("SELECT spend FROM sessions WHERE id = ?1", [session], |r| r.get(0))?;
    let mut total: Spend = serde_json::from_str(&current).unwrap_or_default();
    total.add(spend);
    let total = serde_json::to_string(&total).unwrap_or_else(|_| "{}".into());
    connection.execute("UPDATE sessions SET spend = ?1 WHERE id = ?2", params![total, session])?;
    Ok(())
}

fn title_of(message: &Message) -> String {
    let text = message.text();
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > TITLE_CHARS {
        format!("{}…", line.chars().take(TITLE_CHARS).collect::<String>())
    } else {
        line
    }
}

impl Journal for StoreJournal {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        let answer = self.writer.submit(|reply| Job::Write(Box::new(record.clone()), reply));
        Box::pin(async move { answer?.await.map_err(|_| stopped())?.map_err(JournalError::from) })
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        let answer = self.writer.submit(Job::Read);
        Box::pin(async move { answer?.await.map_err(|_| stopped())?.map_err(JournalError::from) })
    }
}

impl Drop for StoreJournal {
    /// Closes the queue and waits for the thread to write what it was given
    /// and release the lease, so the session is free once this returns.
    fn drop(&mut self) {
        if let Writer::Running { jobs, thread } =
            std::mem::replace(&mut self.writer, Writer::Failed(String::new()))
        {
            drop(jobs);
            if thread.join().is_err() {
                tracing::warn!(session = %self.session, "the journal's writer thread panicked");
            }
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        if self.leased
            && let Ok(connection) = self.store.lock()
            && let Err(error) = lease::release(&connection, &self.session, &self.token)
        {
            tracing::warn!(%error, session = %self.session, "could not release the session lease");
        }
    }
}
