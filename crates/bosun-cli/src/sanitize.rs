//! The one sanitiser for untrusted text on its way to a terminal (invariant
//! 20), from `bosun-core`; the line-oriented output uses its two functions.

pub use bosun_core::sanitize::{block, line};
