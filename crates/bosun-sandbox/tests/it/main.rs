//! bosun-sandbox's integration tests, one binary: the escape suite run
//! inside the sandbox and unconfined.

mod escape;
