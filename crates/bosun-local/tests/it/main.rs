//! bosun-local's integration tests, one binary: chat templates and tool-call
//! parsing, tiny GGUF models the tests build, and real GGUF models from
//! `.bosun-cache/models/`. `support` holds what they share, among it the
//! lock that keeps model loads one at a time.

mod support;

mod local;
mod template;
mod tiny;
mod toolcall;
