//! bosun-store's integration tests, in one binary: a module per area (the
//! store itself, artifacts, migrations, spend, steering, subagents, crash
//! and durability harnesses, hostile conditions), with their shared
//! `support` module. The crash, durability and robustness modules run this
//! binary again as a child (`--exact <module>::<driver> --ignored`).
//!
//! Run one area with `cargo test -p bosun-store --test it <module>::`.

mod support;

mod artifacts;
mod crash;
mod durability;
mod faults;
mod migrations;
mod rewind;
mod robustness;
mod session_ids;
mod spend;
mod steering;
mod store;
mod subagents;
