//! bosun-cli's integration tests, as one test binary (one link of the crate
//! graph instead of one per suite): each runs the real `bosun` binary. Each
//! former `tests/NAME.rs` is the module `NAME` here (run one with
//! `cargo test -p bosun-cli --test it NAME::`), and `support` is the harness
//! they share.

mod support;

mod bedrock;
mod clouds;
mod command_line;
mod custom_commands;
mod e2e;
mod effort;
mod faults;
mod hardening;
mod hooks;
mod hostile_repo;
mod human_output;
mod images;
mod inspect;
mod interactive;
mod interactive_keys;
mod limits;
mod mcp;
mod mcp_asks;
mod mcp_conformance;
mod models;
mod notifications;
mod openapi;
mod output_schema;
mod plan;
mod prices;
mod resume_authority;
mod rewind;
mod skills;
mod stored_sessions;
mod subagents;
mod terminal;
mod tiny;
mod web;
mod workspace;
