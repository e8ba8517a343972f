//! The one sanitiser for untrusted text on its way to a terminal (invariant
//! 20). It lives in `bosun-tui`, which shows the same texts interactively;
//! the line-oriented output here uses the same two functions.

pub use bosun_tui::sanitize::{block, line};
