//! bosun-providers: hosted model APIs as [`bosun_core::Model`]s.
//!
//! Four wire protocols — OpenAI Chat Completions (and every compatible
//! server), Anthropic Messages, OpenAI Responses, Google Gemini, served by
//! their vendors or by Azure OpenAI and Vertex AI ([`cloud`]) — over one
//! transport ([`HostedModel`]): one SSE reader, one error classification, one
//! retry policy (what the official SDKs retry, only before content, each
//! retry announced as `ModelEvent::Retrying`), one set of limits on every
//! wait (first byte, idle stream, whole request, the grace of a finished
//! stream) and on what a response may hold. Deployments are data
//! ([`ProviderConfig::preset`]), not code, and so are the models'
//! windows, output limits and prices ([`ModelTable`]: `data/models.json`
//! over the imported `data/models-litellm.json`).
//!
//! Not here: reading environment variables or config files (the caller
//! passes keys in), tools, sessions.

pub mod classify;
pub mod cloud;
pub mod config;
pub mod eventstream;
mod failure;
mod hosted;
pub mod models;
mod network;
mod protocol;
mod retry;
mod run;
pub mod secret;
pub mod sse;
pub mod tls;
mod watch;

pub use cloud::{
    Cloud, CommandConfiner, CommandToken, GoogleAuthError, GoogleCredentials, StaticToken, TokenSource,
};
pub use config::{
    Api, ProviderConfig, Quirks, ReasoningFormat, RetryPolicy, Sleeper, StreamLimits, TokioSleeper, key_vars,
    needs_key,
};
pub use hosted::{HostedModel, ProviderError, decode_recorded};
pub use models::{Cost, ModelInfo, ModelOverride, ModelTable, ModelTableError, Price, Pricing};
pub use secret::ApiKey;
