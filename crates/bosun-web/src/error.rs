//! [`WebError`]: why a web call failed, in words the model can act on.

use std::time::Duration;

/// Why a URL was refused or a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The text is not a URL.
    #[error("`{url}` is not a URL: {reason}")]
    NotAUrl {
        /// The text given.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// Only http and https are fetched.
    #[error("`{url}`: only http and https URLs are fetched, not `{scheme}:`")]
    Scheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A user name or password in the URL.
    #[error("`{url}` holds credentials (user name or password); they are never sent")]
    Credentials {
        /// The URL, credentials removed.
        url: String,
    },
    /// The URL names no host.
    #[error("`{url}` names no host")]
    NoHost {
        /// The URL.
        url: String,
    },
    /// The whole call took longer than its bound.
    #[error("no complete answer within {} s (the time bound of a web call)", after.as_secs_f64())]
    TimedOut {
        /// The bound.
        after: Duration,
    },
    /// More redirects than the bound.
    #[error("more than {max} redirects: {chain}")]
    TooManyRedirects {
        /// The bound.
        max: usize,
        /// The redirects followed, `a → b → c`.
        chain: String,
    },
    /// A redirect without a usable `Location`.
    #[error("a {status} redirect from {from} without a usable Location header")]
    BadRedirect {
        /// The status.
        status: u16,
        /// The URL that redirected.
        from: String,
    },
    /// The request failed on the way (connection, TLS, reading).
    #[error("{url}: {message}")]
    Request {
        /// The URL asked.
        url: String,
        /// What failed, with its causes.
        message: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// An OpenAPI spec that cannot be used.
    #[error("OpenAPI spec `{name}`: {message}")]
    Spec {
        /// The spec's name (`[openapi.NAME]`).
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// The search provider answered something bosun cannot read.
    #[error("the search provider at {host} answered {message}")]
    Provider {
        /// The provider's host.
        host: String,
        /// What was wrong.
        message: String,
    },
}

impl WebError {
    /// A failed request, described from its whole `source()` chain.
    pub(crate) fn request(url: &reqwest::Url, error: &reqwest::Error) -> Self {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::Request { url: url.to_string(), message }
    }
}
