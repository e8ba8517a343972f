//! bosun-agent's integration tests, one binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod embed;
