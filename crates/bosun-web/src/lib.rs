//! bosun-web: the network tools, each a [`bosun_core::Tool`] of category
//! `Network`: [`WebFetch`] (`web_fetch`: one http(s) URL, HTML turned into
//! Markdown) and [`WebSearch`] (`web_search`: a search provider the user
//! named, [`SearchProvider`]), and the operations of OpenAPI specs the user
//! names ([`OpenApiSpec`]).
//!
//! MISSION invariant 19: network tools are opt-in and ask. Nothing here is
//! built unless the front end's configuration turns it on (bosun-agent's
//! `[web]` table, the user's own file), and every call reports an
//! escalation ([`bosun_core::CallEffects::with_escalation`]): it asks in
//! every mode, and no rule or session grant answers for the person. The
//! requests run inside bosun's own process, so the OS sandbox (which wraps
//! the processes bosun starts) does not cover them; the approval does.
//!
//! Every request is bounded: one total deadline, a cap on the bytes read, a
//! cap on redirects (followed by hand, each shown in the result; one to
//! another host or to plain http is not followed but told, so that a new
//! call asks for it), no cookies, a `User-Agent` naming this version of
//! bosun. URLs with credentials or another scheme than http(s) are refused.
//!
//! Not here: configuration files, environment variables (the caller passes
//! a search key), permissions (the session decides).

mod convert;
mod error;
mod fetch;
mod http;
mod nesting;
mod network;
mod openapi;
mod search;
mod url;

use std::time::Duration;

pub use error::WebError;
pub use fetch::WebFetch;
pub use openapi::{ApiAuth, MAX_SPEC_BYTES, OpenApiSpec, OpenApiTools};
pub use search::{SearchKind, SearchProvider, WebSearch};
pub use url::checked_url;

/// The `User-Agent` of every request: `bosun/VERSION`.
pub const USER_AGENT: &str = concat!("bosun/", env!("CARGO_PKG_VERSION"));

/// Bounds of the web tools, clamped by hard maxima.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebLimits {
    /// Longest a call may take, redirects and body included.
    pub timeout: Duration,
    /// Most bytes of a response body read; the rest is left unread.
    pub max_response_bytes: usize,
    /// Most redirects followed.
    pub max_redirects: usize,
    /// Most bytes of output a call returns (as the workspace tools').
    pub max_output_bytes: usize,
}

impl WebLimits {
    /// Hard maximum of [`WebLimits::timeout`]: 2 minutes.
    pub const HARD_MAX_TIMEOUT: Duration = Duration::from_secs(120);
    /// Hard maximum of [`WebLimits::max_response_bytes`]: 10 MiB.
    pub const HARD_MAX_RESPONSE_BYTES: usize = 10 << 20;
    /// Hard maximum of [`WebLimits::max_redirects`].
    pub const HARD_MAX_REDIRECTS: usize = 10;

    /// Sets the deadline, clamped to `1 ms..=HARD_MAX_TIMEOUT`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.clamp(Duration::from_millis(1), Self::HARD_MAX_TIMEOUT);
        self
    }

    /// Sets the body cap, clamped to `1..=HARD_MAX_RESPONSE_BYTES`.
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes.clamp(1, Self::HARD_MAX_RESPONSE_BYTES);
        self
    }

    /// Sets the redirect cap, clamped to `0..=HARD_MAX_REDIRECTS`.
    pub fn with_max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects.min(Self::HARD_MAX_REDIRECTS);
        self
    }

    /// Sets the output cap, clamped as [`bosun_tools::ToolLimits`] clamps it.
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes =
            bosun_tools::ToolLimits::default().with_max_output_bytes(bytes).max_output_bytes;
        self
    }
}

impl Default for WebLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_response_bytes: 2 << 20,
            max_redirects: 5,
            max_output_bytes: bosun_tools::ToolLimits::default().max_output_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_clamp_to_hard_maxima_and_the_agent_names_this_version() {
        let limits = WebLimits::default()
            .with_timeout(Duration::from_secs(3600))
            .with_max_response_bytes(usize::MAX)
            .with_max_redirects(99)
            .with_max_output_bytes(0);
        assert_eq!(limits.timeout, WebLimits::HARD_MAX_TIMEOUT);
        assert_eq!(limits.max_response_bytes, WebLimits::HARD_MAX_RESPONSE_BYTES);
        assert_eq!(limits.max_redirects, WebLimits::HARD_MAX_REDIRECTS);
        assert_eq!(limits.max_output_bytes, 1024);
        assert_eq!(USER_AGENT, format!("bosun/{}", env!("CARGO_PKG_VERSION")));
    }
}
