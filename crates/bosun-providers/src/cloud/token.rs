//! Bearer tokens that may have to be fetched (and fetched again once they
//! expire) before a request is sent: Google's access tokens, Entra ID
//! tokens for Azure.

use std::future::Future;
use std::pin::Pin;

use bosun_core::ModelError;

use crate::secret::ApiKey;

/// What [`TokenSource::token`] returns.
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<ApiKey, ModelError>> + Send + 'a>>;

/// Where the transport gets the bearer token of each request
/// (`Authorization: Bearer …`). Asked before every attempt, so a source
/// caches its token and fetches another only when it is about to expire.
/// An error fails the attempt as classified: a network error is retried
/// like any other, a refused credential (`ModelError::Authentication`) is
/// not.
pub trait TokenSource: Send + Sync + std::fmt::Debug {
    /// A token valid for at least the next minute or so.
    fn token(&self) -> TokenFuture<'_>;
}

/// A token given as it is (`AZURE_OPENAI_AD_TOKEN`): never refreshed.
#[derive(Clone, Debug)]
pub struct StaticToken(ApiKey);

impl StaticToken {
    /// The token.
    pub fn new(token: ApiKey) -> Self {
        Self(token)
    }
}

impl TokenSource for StaticToken {
    fn token(&self) -> TokenFuture<'_> {
        let token = self.0.clone();
        Box::pin(async move { Ok(token) })
    }
}
