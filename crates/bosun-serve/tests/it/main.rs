//! bosun-serve's integration tests, in one binary: the API driven over real
//! HTTP against a real server (in this process, on a loopback port), real
//! sessions in a real SQLite store, and aimock as the model.

mod support;

mod api;
mod browser;
mod shared;
