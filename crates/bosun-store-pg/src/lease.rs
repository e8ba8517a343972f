//! Leases across hosts: one writer per session. A lease row names its
//! holder (host, boot id, pid and a random token) and runs until
//! `expires_at`, by the database's clock (`clock_timestamp()`), so hosts
//! whose clocks disagree still agree on it. The holder renews it on a
//! heartbeat; every append checks, under the row's lock, that its holder
//! still has it unexpired, so a host that lost it (paused, cut off) writes
//! nothing after another took the session over.
//!
//! A lease is taken over when it expired, or at once when its holder is a
//! process of this same machine (same host name and boot id) that is gone,
//! as the SQLite store does for its pid-only leases.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio_postgres::GenericClient;

use crate::error::{PgError, column};

/// How long a lease runs and how often its holder renews it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseSettings {
    /// How long a lease runs past its last renewal.
    pub lifetime: Duration,
    /// How often the holder renews it; well under `lifetime`.
    pub heartbeat: Duration,
    /// The host name leases are recorded under (this machine's by default).
    pub host: String,
}

impl Default for LeaseSettings {
    /// A 15 s lease renewed every 5 s, under this machine's name.
    fn default() -> Self {
        Self { lifetime: Duration::from_secs(15), heartbeat: Duration::from_secs(5), host: host_name() }
    }
}

impl LeaseSettings {
    /// These settings with a lease of `lifetime` renewed every `heartbeat`.
    pub fn with_timing(mut self, lifetime: Duration, heartbeat: Duration) -> Self {
        self.lifetime = lifetime;
        self.heartbeat = heartbeat;
        self
    }

    /// These settings recording leases under `host` (tests stand for two
    /// machines in one process this way).
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    fn lifetime_ms(&self) -> i64 {
        i64::try_from(self.lifetime.as_millis()).unwrap_or(i64::MAX)
    }
}

/// Lease tokens this process holds now. A lease row naming this process
/// with a token not in here was left behind (its release failed) and is
/// stale, though the pid lives.
fn live_tokens() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

fn is_live_here(token: &str) -> bool {
    live_tokens().lock().map(|set| set.contains(token)).unwrap_or(true)
}

/// This machine's name.
pub(crate) fn host_name() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// This boot of this machine and this process's pid namespace (Linux),
/// so a pid is only judged where it means the same process: containers
/// share the boot id but not, unless told to, their pids. Empty where
/// unknown, and then never judged.
fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned());
        let namespace = std::fs::read_link("/proc/self/ns/pid").map(|p| p.to_string_lossy().into_owned());
        match (boot, namespace) {
            (Ok(boot), Ok(namespace)) if !boot.is_empty() => format!("{boot} {namespace}"),
            _ => String::new(),
        }
    })
}

fn alive(pid: i64) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(rustix::io::Errno::PERM) => true,
        Err(_) => false,
    }
}

/// A lease's holder as its row names it.
struct Holder {
    host: String,
    boot_id: String,
    pid: i64,
    token: String,
    /// Milliseconds until it expires (negative: expired).
    remaining_ms: i64,
}

impl Holder {
    /// Whether another may take the lease now.
    fn is_gone(&self, settings: &LeaseSettings) -> bool {
        if self.remaining_ms <= 0 {
            return true;
        }
        let this_machine =
            self.host == settings.host && !self.boot_id.is_empty() && self.boot_id == boot_id();
        if !this_machine {
            // On another machine we cannot tell whether it lives: its
            // lease runs out unless it renews it.
            return false;
        }
        if self.pid == i64::from(std::process::id()) {
            return !is_live_here(&self.token);
        }
        !alive(self.pid)
    }
}

/// Takes `session`'s lease for `token` inside the caller's transaction:
/// a new row, or over a row whose holder is gone.
///
/// # Errors
/// [`PgError::Leased`] naming the holder while it lives.
pub(crate) async fn acquire(
    client: &impl GenericClient,
    session: &str,
    token: &str,
    settings: &LeaseSettings,
    url: &str,
) -> Result<(), PgError> {
    let db = |e: tokio_postgres::Error| PgError::from_db(url, &e);
    // Two takers of a new session race on the insert: the loser finds the
    // winner's row, locked, on its second pass.
    for _ in 0..2 {
        let Some(holder) = holder(client, session, url).await? else {
            let inserted = client
                .execute(
                    "INSERT INTO leases (session_id, host, boot_id, pid, token, acquired_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5, clock_timestamp(),
                             clock_timestamp() + $6::bigint * interval '1 millisecond')
                     ON CONFLICT (session_id) DO NOTHING",
                    &[&session, &settings.host, &boot_id(), &own_pid(), &token, &settings.lifetime_ms()],
                )
                .await
                .map_err(db)?;
            if inserted == 1 {
                remember(token);
                return Ok(());
            }
            continue;
        };
        if holder.token != token && !holder.is_gone(settings) {
            return Err(PgError::Leased {
                session: session.to_owned(),
                host: holder.host,
                pid: holder.pid,
                expires_in_ms: holder.remaining_ms,
            });
        }
        client
            .execute(
                "UPDATE leases SET host = $2, boot_id = $3, pid = $4, token = $5, acquired_at = clock_timestamp(),
                        expires_at = clock_timestamp() + $6::bigint * interval '1 millisecond'
                 WHERE session_id = $1",
                &[&session, &settings.host, &boot_id(), &own_pid(), &token, &settings.lifetime_ms()],
            )
            .await
            .map_err(db)?;
        remember(token);
        return Ok(());
    }
    Err(PgError::Database(format!("session {session}'s lease row changed while it was taken")))
}

/// Fails unless `token` holds `session`'s lease unexpired, locking the row
/// until the caller's transaction ends (so no one takes it over meanwhile).
///
/// # Errors
/// [`PgError::LeaseLost`] when it does not.
pub(crate) async fn check_held(
    client: &impl GenericClient,
    session: &str,
    token: &str,
    url: &str,
) -> Result<(), PgError> {
    let row = client
        .query_opt(
            "SELECT token = $2 AND expires_at > clock_timestamp() FROM leases WHERE session_id = $1 FOR UPDATE",
            &[&session, &token],
        )
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    match row.map(|row| row.try_get::<_, bool>(0)).transpose().map_err(column)? {
        Some(true) => Ok(()),
        _ => Err(PgError::LeaseLost { session: session.to_owned() }),
    }
}

/// Renews `token`'s lease of `session` for another lifetime, if it still
/// holds it unexpired; whether it did.
pub(crate) async fn renew(
    client: &impl GenericClient,
    session: &str,
    token: &str,
    settings: &LeaseSettings,
    url: &str,
) -> Result<bool, PgError> {
    let renewed = client
        .execute(
            "UPDATE leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond'
             WHERE session_id = $1 AND token = $2 AND expires_at > clock_timestamp()",
            &[&session, &token, &settings.lifetime_ms()],
        )
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    Ok(renewed == 1)
}

/// Gives the lease back if `token` still holds it.
pub(crate) async fn release(
    client: &impl GenericClient,
    session: &str,
    token: &str,
    url: &str,
) -> Result<(), PgError> {
    forget(token);
    client
        .execute("DELETE FROM leases WHERE session_id = $1 AND token = $2", &[&session, &token])
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    Ok(())
}

/// Deletes leases that ran out on sessions that do not exist (a process
/// that died between taking a new session's lease and its first record).
pub(crate) async fn sweep(client: &impl GenericClient, url: &str) -> Result<(), PgError> {
    client
        .execute(
            "DELETE FROM leases l WHERE l.expires_at < clock_timestamp()
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = l.session_id)",
            &[],
        )
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    Ok(())
}

/// Fails when a live holder has `session` (for a delete).
pub(crate) async fn check_free(
    client: &impl GenericClient,
    session: &str,
    settings: &LeaseSettings,
    url: &str,
) -> Result<(), PgError> {
    let Some(holder) = holder(client, session, url).await? else { return Ok(()) };
    if holder.is_gone(settings) {
        return Ok(());
    }
    Err(PgError::Leased {
        session: session.to_owned(),
        host: holder.host,
        pid: holder.pid,
        expires_in_ms: holder.remaining_ms,
    })
}

/// `session`'s lease row, locked until the caller's transaction ends.
async fn holder(client: &impl GenericClient, session: &str, url: &str) -> Result<Option<Holder>, PgError> {
    let row = client
        .query_opt(
            "SELECT host, boot_id, pid, token,
                    (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint
             FROM leases WHERE session_id = $1 FOR UPDATE",
            &[&session],
        )
        .await
        .map_err(|e| PgError::from_db(url, &e))?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(Holder {
        host: row.try_get(0).map_err(column)?,
        boot_id: row.try_get(1).map_err(column)?,
        pid: row.try_get(2).map_err(column)?,
        token: row.try_get(3).map_err(column)?,
        remaining_ms: row.try_get(4).map_err(column)?,
    }))
}

fn own_pid() -> i64 {
    i64::from(std::process::id())
}

fn remember(token: &str) {
    if let Ok(mut set) = live_tokens().lock() {
        set.insert(token.to_owned());
    }
}

/// Forgotten first: even if the row cannot be deleted, it is stale now.
pub(crate) fn forget(token: &str) {
    if let Ok(mut set) = live_tokens().lock() {
        set.remove(token);
    }
}
