//! bosun-tools' integration tests, as one test binary (one link of the crate
//! graph instead of one per suite): each former `tests/NAME.rs` is the module
//! `NAME` here (run one with `cargo test -p bosun-tools --test it NAME::`),
//! and `common` is the fixture and helpers they share.

mod commands;
mod common;

mod agents;
mod atomic_writes;
mod bounded_search;
mod concurrent_edits;
mod escape_corpus;
mod file_access;
mod file_tools;
mod hooks;
mod path_hints;
mod session;
mod shell;
mod shell_elsewhere;
mod shell_rules;
mod skills;
