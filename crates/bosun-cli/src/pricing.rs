//! Prices for the session's model, for a cost limit: bosun-core holds no
//! prices, so the CLI brings a `Pricing` built from the model table.

use std::sync::Arc;

use bosun_core::Pricing;

use crate::config::Settings;

/// The session model's prices, when bosun has them. None until the model
/// table is wired in: a cost limit is then refused at start, never kept
/// against a made-up price.
pub fn for_settings(settings: &Settings) -> Option<Arc<dyn Pricing>> {
    let _ = settings;
    None
}
