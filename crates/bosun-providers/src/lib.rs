//! bosun-providers: hosted model APIs as [`bosun_core::Model`]s.
//!
//! Four wire protocols — OpenAI Chat Completions (and every compatible
//! server), Anthropic Messages, OpenAI Responses, Google Gemini — over one
//! transport ([`HostedModel`]): one SSE reader, one error classification, one
//! retry policy, one idle-stream watchdog. Deployments are data
//! ([`ProviderConfig::preset`]), not code.
//!
//! Not here: reading environment variables or config files (the caller
//! passes keys in), tools, sessions.

pub mod classify;
pub mod config;
mod hosted;
mod protocol;
mod retry;
pub mod secret;
pub mod sse;

pub use config::{Api, ProviderConfig, Quirks, ReasoningFormat, RetryPolicy, Sleeper, TokioSleeper};
pub use hosted::{HostedModel, ProviderError, decode_recorded};
pub use secret::ApiKey;
