//! bosun-store-pg's integration tests, in one binary, against a real
//! PostgreSQL server the tests start (`support`): a module per area (the
//! journal, leases across hosts, events, migrations, the crash harness).
//! The crash module runs this binary again as a child
//! (`--exact crash::crash_driver --ignored`), handing it the database.
//!
//! Run one area with `cargo nextest run -p bosun-store-pg -E 'test(/^leases::/)'`.

mod support;

mod crash;
mod events;
mod full;
mod journal;
mod leases;
mod migrations;
mod setup;
