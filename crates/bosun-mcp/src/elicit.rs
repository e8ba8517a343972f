//! Elicitation: a server asking the person for input in the middle of a
//! call. bosun advertises form elicitation and hands each request to an
//! [`Elicitor`]; the default, [`DeclineAll`], declines with a reason, since
//! nothing can ask the person yet. The CLI may bring a real one.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// The future an [`Elicitor`] returns.
pub type ElicitFuture<'a> = Pin<Box<dyn Future<Output = ElicitationResponse> + Send + 'a>>;

/// Answers servers' requests for input.
pub trait Elicitor: Send + Sync {
    /// Answers one request. A server's call waits for it (under the call's
    /// timeout), so it should not wait forever.
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_>;
}

/// What a server asks.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    /// Its message for the person (untrusted text).
    pub message: String,
    /// What it wants back.
    pub kind: ElicitationKind,
}

/// The form of input asked for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Values for a (flat) JSON Schema.
    Form {
        /// The requested schema.
        schema: Value,
    },
    /// A visit to a URL (bosun does not advertise this mode).
    Url {
        /// The URL.
        url: String,
    },
}

/// The answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationResponse {
    /// The person gave these values.
    Accept(Value),
    /// The person (or bosun for them) said no; the call goes on without it.
    Decline {
        /// Why, sent to the server in `_meta.reason`.
        reason: String,
    },
    /// The person cancelled the whole operation.
    Cancel,
}

/// Declines every request: bosun cannot ask the person yet.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeclineAll;

/// The reason [`DeclineAll`] gives.
pub const DECLINED: &str = "bosun cannot ask the user for input from an MCP server; continue without it";

impl Elicitor for DeclineAll {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_> {
        tracing::info!(server = %request.server, "mcp: declined an elicitation request");
        Box::pin(std::future::ready(ElicitationResponse::Decline { reason: DECLINED.to_owned() }))
    }
}
