//! bosun-store-pg: durable sessions in a PostgreSQL database that several
//! `bosun serve` hosts share. A [`PgJournal`] implements
//! `bosun_core::Journal` as the SQLite store's journal does (each record
//! one committed transaction before the next model round, records in order,
//! out-of-order ones refused, a retried one written once: MISSION.md
//! invariants 11, 12 and 15), and holds the session's lease in the
//! database: one writer per session across hosts, renewed on a heartbeat,
//! taken over when its holder dies or stops renewing it, checked in the
//! transaction of every append. [`PgStore`] also keeps the events a served
//! session emitted ([`PgStore::append_events`]).
//!
//! Not here: the message tree, forks, export and import, artifacts and
//! rewind of `bosun-store` (the SQLite store); TLS (loopback and Unix
//! sockets only for now); reading a URL from the environment (the caller
//! passes it).
#![deny(missing_docs)]

mod error;
mod events;
mod journal;
mod lease;
mod schema;
mod store;
mod url;

pub use error::PgError;
pub use events::PgEvent;
pub use journal::PgJournal;
pub use lease::LeaseSettings;
pub use store::{MIN_ID_PREFIX, PgSession, PgStore};
pub use url::PgUrl;

/// The schema version this build writes.
pub fn schema_version() -> i64 {
    schema::latest()
}
