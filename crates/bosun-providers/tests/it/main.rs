//! bosun-providers' integration tests, in one binary: a module per area
//! (each API's decoding, requests and shapes, the shared transport, faults,
//! retries, stop reasons, byte-stable prefixes, the recorded streams, and
//! the aimock peer), with their shared `support` module (a local HTTP
//! server, a manual clock, loaders for `tests/fixtures/providers/`).
//!
//! Run one area with `cargo test -p bosun-providers --test it <module>::`.

mod support;

mod aimock;
mod anthropic;
mod anthropic_requests;
mod anthropic_shapes;
mod aws_credentials;
mod aws_roles;
mod aws_sso;
mod bedrock;
mod chat;
mod chat_shapes;
mod clouds;
mod faults;
mod gemini;
mod gemini_shapes;
mod google_auth;
mod named_models;
mod recordings;
mod responses;
mod responses_shapes;
mod retries;
mod stable_prefix;
mod stop_reasons;
mod structured;
mod transport;
