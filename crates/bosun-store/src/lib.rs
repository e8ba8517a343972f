//! bosun-store: durable sessions in one embedded SQLite database. A
//! [`StoreJournal`] implements `bosun_core::Journal`: every record is synced
//! before the next model round, so a killed process loses no committed work
//! and resuming never repeats a tool's effect (MISSION.md invariants 11, 12
//! and 15). Sessions are trees of messages with branches; they can be
//! listed, shown, deleted, forked, exported to JSONL and imported back.
//!
//! Not here: deciding where the database lives from the environment (the
//! caller passes a path; [`default_path`] computes the conventional one from
//! values it is given), models, tools.

mod artifacts;
mod branches;
mod error;
mod events;
mod export;
mod files;
mod import;
mod integrity;
mod journal;
mod lease;
mod open;
mod paths;
mod rows;
mod schema;
mod store;

pub use artifacts::StoreArtifacts;
pub use branches::TurnStart;
pub use error::StoreError;
pub use events::StoredEvent;
pub use export::EXPORT_VERSION;
pub use files::{
    After, Before, FileChange, KeepBounds, ManifestEntry, NewChange, NotKept, Offered, TurnBudget, blob_hash,
    looks_binary,
};
pub use journal::StoreJournal;
pub use paths::default_path;
pub use store::{
    BUSY_TIMEOUT, BranchInfo, FailedTurn, ListFilter, MIN_ID_PREFIX, ParentLink, SessionDetail,
    SessionSummary, Store, TurnSpend,
};

/// The schema version this build writes.
pub fn schema_version() -> i64 {
    schema::latest()
}
