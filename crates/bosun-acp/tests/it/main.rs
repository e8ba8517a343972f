//! `bosun acp` driven end to end by a client built from the same SDK's
//! client half: the real binary started over stdio against aimock, a
//! prompt's streamed updates, approvals answered both ways, a cancel while
//! an approval waits, a stored session loaded with its history replayed,
//! and the mode rules an untrusted workspace cannot widen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod editor;
mod files;
mod shell;
mod support;
mod terminals;
