//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! from `test-peers/`, found by `bosun_testing::conformance`) against the
//! real `bosun` binary's `bosun mcp conformance`: the handshake, a tool call,
//! and an OAuth authorization with metadata discovery, registration and
//! PKCE. `scripts/mcp-conformance` runs every client scenario; these keep
//! the core of it in `cargo test`.
//!
//! Without the suite every test FAILS, unless `BOSUN_SKIP_MCP=1` says to
//! skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_testing::conformance::Conformance;

/// Runs `scenario` against the binary and fails on any failed or warned check.
#[track_caller]
fn passes(scenario: &str) {
    let Some(suite) = Conformance::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let home = home.to_str().unwrap();
    let run = suite.run_client(
        &[env!("CARGO_BIN_EXE_bosun"), "mcp", "conformance"],
        scenario,
        dir.path(),
        &[("HOME", home), ("BOSUN_HOME", home), ("XDG_CONFIG_HOME", home)],
    );
    let problems = run.problems();
    assert!(problems.is_empty(), "{scenario}: {problems:#?}\n{}", run.log());
    assert!(run.output.status.success(), "{scenario}: the suite said it failed:\n{}", run.log());
    let passed = run.checks.iter().filter(|check| check["status"] == "SUCCESS").count();
    assert!(passed > 0, "{scenario}: no check passed:\n{}", run.log());
}

#[test]
fn the_initialize_handshake_passes_the_conformance_suite() {
    passes("initialize");
}

#[test]
fn a_tool_call_passes_the_conformance_suite() {
    passes("tools_call");
}

#[test]
fn an_oauth_authorization_with_metadata_discovery_passes_the_conformance_suite() {
    passes("auth/metadata-default");
}
