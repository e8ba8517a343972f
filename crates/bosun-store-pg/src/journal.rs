//! [`PgJournal`]: `bosun_core::Journal` on Postgres. Each record is one
//! transaction, committed before `append` returns (invariant 15), that
//! first checks under the lease row's lock that this journal still holds
//! the session's lease unexpired: a host that lost it writes nothing.
//!
//! The journal has its own connection and its own thread (a current-thread
//! runtime), as the SQLite journal has its writer thread: records are
//! written in the order handed over, one handed over is written even if its
//! `append` is dropped, the lease is renewed on a heartbeat between writes,
//! and dropping the journal releases the lease before `drop` returns,
//! whatever runtime (or none) the caller runs on.

use std::thread::JoinHandle;
use std::time::Duration;

use bosun_core::journal::JournalFuture;
use bosun_core::{
    Journal, JournalError, JournalErrorKind, JournalRecord, Message, Spend, Spent, TurnRecordOutcome, Usage,
};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Client;

use crate::error::{PgError, column};
use crate::lease::{self, LeaseSettings};
use crate::store::{PgStore, connect, read_records};
use crate::url::PgUrl;

/// Longest title kept from the first user message, in characters.
const TITLE_CHARS: usize = 80;
/// Longest a release or a renewal may wait on the server.
const LEASE_CALL_LIMIT: Duration = Duration::from_secs(5);

/// The journal of one session, holding its lease.
pub struct PgJournal {
    session: String,
    jobs: Option<mpsc::UnboundedSender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgJournal").field("session", &self.session).finish()
    }
}

/// One piece of work for the journal's thread.
enum Job {
    Write(Box<JournalRecord>, oneshot::Sender<Result<(), PgError>>),
    Read(oneshot::Sender<Result<Vec<JournalRecord>, PgError>>),
    Model(String, Option<String>),
    Effort(Option<String>),
    Parent(String, String),
}

/// What the thread owns: its connection, the lease, and the journal's view
/// of what is stored.
struct Writer {
    url: PgUrl,
    redacted: String,
    settings: LeaseSettings,
    session: String,
    token: String,
    client: Option<Client>,
    next_seq: i64,
    model: Option<String>,
    base_url: Option<String>,
    effort: Option<String>,
    parent: Option<(String, String)>,
    /// The heartbeat found the lease gone: it renews no more.
    lost: bool,
    /// The open turn, for the session row's counters (as the SQLite
    /// journal keeps them): its user message awaits its first commit, the
    /// messages it added, whether it is open, the usage the row counts.
    pending_user: bool,
    turn_added: i64,
    turn_open: bool,
    turn_usage: Usage,
}

impl PgStore {
    /// A journal for a new session, holding its lease from now on; the
    /// session's row exists once its first record (`session_started`) is
    /// written.
    ///
    /// # Errors
    /// When the server cannot be reached.
    pub async fn new_session(&self) -> Result<PgJournal, PgError> {
        self.start(uuid::Uuid::now_v7().to_string(), false).await
    }

    /// The journal of an existing session, for resuming it: takes its
    /// lease, over a holder that is gone (expired, or a dead process of
    /// this machine).
    ///
    /// # Errors
    /// [`PgError::Leased`] naming the holder while another runs it,
    /// [`PgError::NotFound`] when there is no such session; when the server
    /// cannot be reached.
    pub async fn open_session(&self, session: &str) -> Result<PgJournal, PgError> {
        self.start(session.to_owned(), true).await
    }

    async fn start(&self, session: String, existing: bool) -> Result<PgJournal, PgError> {
        let mut writer = Writer {
            url: self.url().clone(),
            redacted: self.redacted(),
            settings: self.lease_settings().clone(),
            session: session.clone(),
            token: uuid::Uuid::now_v7().to_string(),
            client: None,
            next_seq: 0,
            model: None,
            base_url: None,
            effort: None,
            parent: None,
            lost: false,
            pending_user: false,
            turn_added: 0,
            turn_open: false,
            turn_usage: Usage::default(),
        };
        let (ready, opened) = oneshot::channel();
        let (jobs, queue) = mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("bosun-pg-journal".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ =
                            ready.send(Err(PgError::Database(format!("cannot start a runtime: {error}"))));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match writer.open(existing).await {
                        Ok(()) => {
                            if ready.send(Ok(())).is_err() {
                                // The opener gave up waiting: give the lease back.
                                writer.release().await;
                                return;
                            }
                        }
                        Err(error) => {
                            let _ = ready.send(Err(error));
                            return;
                        }
                    }
                    writer.serve(queue).await;
                });
            })
            .map_err(|e| PgError::Database(format!("cannot start the journal's thread: {e}")))?;
        match opened.await {
            Ok(Ok(())) => Ok(PgJournal { session, jobs: Some(jobs), thread: Some(thread) }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(PgError::Database("the journal's thread stopped while opening".into())),
        }
    }
}

impl PgJournal {
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// Records `model` (`PROVIDER/MODEL`) as the session's model from its
    /// next turn on, with the base URL it is reached at when the user gave
    /// one (never a key).
    pub fn with_model_at(self, model: impl Into<String>, base_url: Option<String>) -> Self {
        self.send(Job::Model(model.into(), base_url));
        self
    }

    /// Records the reasoning effort the session's model runs at from its
    /// next turn on (`None`: the model's default).
    pub fn with_effort(self, effort: Option<String>) -> Self {
        self.set_effort(effort);
        self
    }

    /// [`PgJournal::with_effort`] on a journal in use.
    pub fn set_effort(&self, effort: Option<String>) {
        self.send(Job::Effort(effort));
    }

    /// Records that the session is a sub-agent of `session`, started by its
    /// tool call `call`; only a new session records it, with its first
    /// record.
    pub fn with_parent(self, session: impl Into<String>, call: impl Into<String>) -> Self {
        self.send(Job::Parent(session.into(), call.into()));
        self
    }

    fn send(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    fn submit<T>(
        &self,
        job: impl FnOnce(oneshot::Sender<Result<T, PgError>>) -> Job,
    ) -> Result<oneshot::Receiver<Result<T, PgError>>, JournalError> {
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        let (reply, answer) = oneshot::channel();
        jobs.send(job(reply)).map_err(|_| stopped())?;
        Ok(answer)
    }
}

fn stopped() -> JournalError {
    JournalError::new(JournalErrorKind::Unavailable, "the journal's thread stopped")
}

impl Journal for PgJournal {
    fn append<'a>(&'a mut self, record: &'a JournalRecord) -> JournalFuture<'a, ()> {
        let answer = self.submit(|reply| Job::Write(Box::new(record.clone()), reply));
        Box::pin(async move { answer?.await.map_err(|_| stopped())?.map_err(JournalError::from) })
    }

    fn load(&mut self) -> JournalFuture<'_, Vec<JournalRecord>> {
        let answer = self.submit(Job::Read);
        Box::pin(async move { answer?.await.map_err(|_| stopped())?.map_err(JournalError::from) })
    }
}

impl Drop for PgJournal {
    /// Closes the queue and waits for the thread to write what it was given
    /// and release the lease, so the session is free once this returns.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!(session = %self.session, "the journal's thread panicked");
        }
    }
}

impl Writer {
    /// The connection, made again if the server dropped it.
    async fn client(&mut self) -> Result<&mut Client, PgError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let client = connect(&self.url).await?;
            // A transaction left open longer than a lease (a host paused
            // inside an append) is ended by the server: it holds the lease
            // row's lock, and another host waits on that lock to take over.
            let limit = self.settings.lifetime.as_millis().max(1);
            client
                .batch_execute(&format!("SET idle_in_transaction_session_timeout = {limit}"))
                .await
                .map_err(|e| PgError::from_db(&self.redacted, &e))?;
            self.client = Some(client);
        }
        self.client.as_mut().ok_or_else(|| PgError::Database("the journal's connection vanished".into()))
    }

    /// Takes the lease (of an existing session: one that exists).
    async fn open(&mut self, existing: bool) -> Result<(), PgError> {
        let (session, token, settings, url) =
            (self.session.clone(), self.token.clone(), self.settings.clone(), self.redacted.clone());
        let db = |e: tokio_postgres::Error| PgError::from_db(&url, &e);
        let client = self.client().await?;
        let transaction = client.transaction().await.map_err(db)?;
        let mut next_seq = 0;
        if existing {
            let row = transaction
                .query_opt("SELECT record_count FROM sessions WHERE id = $1", &[&session])
                .await
                .map_err(db)?
                .ok_or_else(|| PgError::NotFound { what: "session", id: session.clone() })?;
            next_seq = row.try_get(0).map_err(column)?;
        }
        lease::acquire(&transaction, &session, &token, &settings, &url).await?;
        transaction.commit().await.map_err(db)?;
        self.next_seq = next_seq;
        Ok(())
    }

    /// Takes jobs in order, renewing the lease between them, until the
    /// journal is dropped; then gives the lease back.
    async fn serve(&mut self, mut queue: mpsc::UnboundedReceiver<Job>) {
        let period = self.settings.heartbeat.max(Duration::from_millis(1));
        let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                job = queue.recv() => match job {
                    Some(job) => self.handle(job).await,
                    None => break,
                },
                _ = beat.tick() => self.heartbeat().await,
            }
        }
        self.release().await;
    }

    async fn handle(&mut self, job: Job) {
        match job {
            // The caller may have stopped waiting; the record is written
            // all the same.
            Job::Write(record, reply) => {
                let written = self.write(&record).await;
                self.forget_lost_connection(&written);
                drop(reply.send(written));
            }
            Job::Read(reply) => {
                let read = self.read().await;
                self.forget_lost_connection(&read);
                drop(reply.send(read));
            }
            Job::Model(model, base_url) => {
                self.model = Some(model);
                self.base_url = base_url;
            }
            Job::Effort(effort) => self.effort = effort,
            Job::Parent(session, call) => self.parent = Some((session, call)),
        }
    }

    /// After a failure of the connection, the next job connects again
    /// (the client may not know yet that the server ended it).
    fn forget_lost_connection<T>(&mut self, result: &Result<T, PgError>) {
        if matches!(result, Err(PgError::Unavailable { .. })) {
            self.client = None;
        }
    }

    async fn heartbeat(&mut self) {
        if self.lost {
            return;
        }
        let (session, token, settings, url) =
            (self.session.clone(), self.token.clone(), self.settings.clone(), self.redacted.clone());
        let renewed = match self.client().await {
            Ok(client) => {
                tokio::time::timeout(
                    LEASE_CALL_LIMIT,
                    lease::renew(&*client, &session, &token, &settings, &url),
                )
                .await
            }
            Err(error) => Ok(Err(error)),
        };
        match renewed {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => {
                tracing::warn!(session = %self.session, "the session's lease expired or was taken over");
                self.lost = true;
            }
            // Tried again at the next beat; an append meanwhile checks the
            // lease itself.
            Ok(Err(error)) => {
                tracing::warn!(%error, session = %self.session, "could not renew the session's lease")
            }
            Err(_) => tracing::warn!(session = %self.session, "renewing the session's lease timed out"),
        }
    }

    async fn release(&mut self) {
        lease::forget(&self.token);
        let (session, token, url) = (self.session.clone(), self.token.clone(), self.redacted.clone());
        let released = match self.client().await {
            Ok(client) => {
                tokio::time::timeout(LEASE_CALL_LIMIT, lease::release(&*client, &session, &token, &url)).await
            }
            Err(error) => Ok(Err(error)),
        };
        match released {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, session = %self.session, "could not release the session's lease")
            }
            Err(_) => tracing::warn!(session = %self.session, "releasing the session's lease timed out"),
        }
    }

    async fn read(&mut self) -> Result<Vec<JournalRecord>, PgError> {
        let (session, url) = (self.session.clone(), self.redacted.clone());
        let client = self.client().await?;
        let records = read_records(&*client, &session, &url).await?;
        self.next_seq = i64::try_from(records.len()).unwrap_or(i64::MAX);
        // A turn left open by a crash: its user message is still to be
        // committed with the turn's first batch.
        self.pending_user = false;
        for record in &records {
            match record {
                JournalRecord::TurnStarted { .. } => self.pending_user = true,
                JournalRecord::Committed { .. } | JournalRecord::TurnEnded { .. } => {
                    self.pending_user = false
                }
                _ => {}
            }
        }
        self.turn_added = 0;
        Ok(records)
    }

    /// Writes `record` at the journal's next number, in one transaction
    /// that holds the lease row. A record already stored at that number with
    /// the same contents (an append whose commit's answer was lost) counts
    /// as written; anything else out of place is refused.
    async fn write(&mut self, record: &JournalRecord) -> Result<(), PgError> {
        let body = serde_json::to_string(record).map_err(|e| PgError::Invalid(format!("a record: {e}")))?;
        let kind = kind_of(record);
        let fields = SessionFields {
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            effort: self.effort.clone(),
            parent: self.parent.clone(),
        };
        let (session, token, url, next_seq) =
            (self.session.clone(), self.token.clone(), self.redacted.clone(), self.next_seq);
        let db = |e: tokio_postgres::Error| PgError::from_db(&url, &e);
        let out_of_order = |detail: String| PgError::OutOfOrder { session: session.clone(), detail };
        let mut pending_user = self.pending_user;
        let mut turn_added = self.turn_added;
        let mut turn_open = self.turn_open;
        let mut turn_usage = self.turn_usage;
        let client = self.client().await?;
        let transaction = client.transaction().await.map_err(db)?;
        lease::check_held(&transaction, &session, &token, &url).await?;
        let stored: Option<i64> = transaction
            .query_opt("SELECT record_count FROM sessions WHERE id = $1", &[&session])
            .await
            .map_err(db)?
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(column)?;
        let stored = match (stored, record) {
            (Some(stored), _) => stored,
            (None, JournalRecord::SessionStarted { authority, .. }) if next_seq == 0 => {
                let authority_json = serde_json::to_string(authority)
                    .map_err(|e| PgError::Invalid(format!("an authority snapshot: {e}")))?;
                let workspace = authority.workspace.as_ref().map(|w| w.path.clone());
                let (parent_session, parent_call) = fields.parent.clone().unzip();
                transaction
                    .execute(
                        "INSERT INTO sessions (id, workspace, authority, authority_digest, model, base_url, effort,
                                               parent_session, parent_call)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        &[
                            &session,
                            &workspace,
                            &authority_json,
                            &authority.digest().as_str(),
                            &fields.model,
                            &fields.base_url,
                            &fields.effort,
                            &parent_session,
                            &parent_call,
                        ],
                    )
                    .await
                    .map_err(db)?;
                0
            }
            (None, _) => {
                return Err(out_of_order(format!("its first record must be session_started, not {kind}")));
            }
        };
        if stored > next_seq {
            let existing: Option<String> = transaction
                .query_opt(
                    "SELECT body FROM records WHERE session_id = $1 AND seq = $2",
                    &[&session, &next_seq],
                )
                .await
                .map_err(db)?
                .map(|row| row.try_get(0))
                .transpose()
                .map_err(column)?;
            if existing.as_deref() == Some(body.as_str()) {
                transaction.commit().await.map_err(db)?;
                self.next_seq += 1;
                return Ok(());
            }
            return Err(out_of_order(format!(
                "record {next_seq} ({kind}) is stored already with other contents ({stored} records are stored)"
            )));
        }
        if stored < next_seq {
            return Err(out_of_order(format!(
                "record {next_seq} ({kind}) would leave a gap: {stored} records are stored"
            )));
        }
        let mut counters = Counters::default();
        match record {
            JournalRecord::SessionStarted { .. } if next_seq != 0 => {
                return Err(out_of_order(format!(
                    "session_started can only be its first record, not record {next_seq}"
                )));
            }
            JournalRecord::TurnStarted { message, .. } => {
                pending_user = true;
                turn_added = 0;
                turn_open = true;
                turn_usage = Usage::default();
                if let Some(model) = &fields.model {
                    transaction
                        .execute(
                            "UPDATE sessions SET model = $1, base_url = $2, effort = $3 WHERE id = $4",
                            &[model, &fields.base_url, &fields.effort, &session],
                        )
                        .await
                        .map_err(db)?;
                }
                // The first prompt names the session even if its turn is
                // rolled back (invariant 21).
                transaction
                    .execute(
                        "UPDATE sessions SET title = COALESCE(title, $1) WHERE id = $2",
                        &[&title_of(message), &session],
                    )
                    .await
                    .map_err(db)?;
            }
            JournalRecord::Committed { messages, .. } => {
                let user = std::mem::take(&mut pending_user);
                let mut usage = Usage::default();
                for message in messages {
                    // What tools spent on models (sampling) counts too.
                    if let Message::Assistant { usage: used, .. } | Message::ToolResult { usage: used, .. } =
                        message
                    {
                        usage += *used;
                    }
                }
                let added = i64::from(user) + i64::try_from(messages.len()).unwrap_or_default();
                turn_usage += usage;
                turn_added += added;
                counters.messages += added;
                counters.usage += usage;
            }
            JournalRecord::TurnEnded { outcome, spend, .. } => {
                // A rolled-back turn's messages leave history; what it spent
                // stays spent. Rounds whose response never entered history
                // are counted from the turn's spend.
                if *outcome == TurnRecordOutcome::RolledBack {
                    counters.messages -= turn_added;
                }
                counters.usage += uncounted(spend, turn_usage);
                counters.spend.add(spend);
                pending_user = false;
                turn_added = 0;
                turn_open = false;
            }
            // Steering enters the turn's history between two batches.
            JournalRecord::Steered { .. } => {
                counters.messages += 1;
                turn_added += 1;
            }
            // A summary request is model usage like a round's; inside a
            // turn its spend arrives with `turn_ended`, outside one it is
            // the session's now.
            JournalRecord::Compacted { usage: used, cost_micros, .. } if !used.is_zero() => {
                counters.usage += *used;
                if turn_open {
                    turn_usage += *used;
                } else {
                    counters.spend.compaction = Spent::new(*used, *cost_micros);
                }
            }
            // The session row shows the authority it runs under now.
            JournalRecord::AuthorityChanged { authority, .. } => {
                let authority_json = serde_json::to_string(authority)
                    .map_err(|e| PgError::Invalid(format!("an authority snapshot: {e}")))?;
                transaction
                    .execute(
                        "UPDATE sessions SET authority = $1, authority_digest = $2 WHERE id = $3",
                        &[&authority_json, &authority.digest().as_str(), &session],
                    )
                    .await
                    .map_err(db)?;
            }
            _ => {}
        }
        transaction
            .execute(
                "INSERT INTO records (session_id, seq, kind, body) VALUES ($1, $2, $3, $4)",
                &[&session, &next_seq, &kind, &body],
            )
            .await
            .map_err(db)?;
        let (usage, spend) = if counters.usage.is_zero() && counters.spend.is_zero() {
            (None, None)
        } else {
            let row = transaction
                .query_one("SELECT usage, spend FROM sessions WHERE id = $1", &[&session])
                .await
                .map_err(db)?;
            let mut usage: Usage = serde_json::from_str(row.try_get(0).map_err(column)?).unwrap_or_default();
            let mut spend: Spend = serde_json::from_str(row.try_get(1).map_err(column)?).unwrap_or_default();
            usage += counters.usage;
            spend.add(&counters.spend);
            let text = |value: serde_json::Result<String>| value.unwrap_or_else(|_| "{}".into());
            (Some(text(serde_json::to_string(&usage))), Some(text(serde_json::to_string(&spend))))
        };
        transaction
            .execute(
                "UPDATE sessions SET record_count = record_count + 1, message_count = message_count + $2,
                        usage = COALESCE($3, usage), spend = COALESCE($4, spend), updated_at = clock_timestamp()
                 WHERE id = $1",
                &[&session, &counters.messages, &usage, &spend],
            )
            .await
            .map_err(db)?;
        transaction.commit().await.map_err(db)?;
        // Only what is committed changes the journal's view of itself.
        self.next_seq += 1;
        self.pending_user = pending_user;
        self.turn_added = turn_added;
        self.turn_open = turn_open;
        self.turn_usage = turn_usage;
        Ok(())
    }
}

/// What one record adds to the session row's counters.
#[derive(Default)]
struct Counters {
    messages: i64,
    usage: Usage,
    spend: Spend,
}

/// What `spend` holds beyond `counted`, field by field.
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

/// What a new session's row records beside its authority.
struct SessionFields {
    model: Option<String>,
    base_url: Option<String>,
    effort: Option<String>,
    parent: Option<(String, String)>,
}

/// The record's tag (`turn_started`, …), for queries.
fn kind_of(record: &JournalRecord) -> String {
    serde_json::to_value(record)
        .ok()
        .and_then(|v| v.get("record").and_then(|k| k.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

/// The first prompt on one line, shortened; without NUL, which Postgres
/// text cannot hold.
fn title_of(message: &Message) -> String {
    let text = message.text().replace('\0', " ");
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > TITLE_CHARS {
        format!("{}…", line.chars().take(TITLE_CHARS).collect::<String>())
    } else {
        line
    }
}
