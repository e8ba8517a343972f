//! Prices for the session's model, for a cost limit: bosun-core holds no
//! prices, so the CLI brings a `Pricing` built from the model table and the
//! config (`config::models`).

use std::sync::Arc;

use bosun_core::Pricing;

use crate::config::Settings;
use crate::config::models::{Costing, session_model};

/// The session model's prices, when bosun has them (the local engine's are
/// nothing). None otherwise: a cost limit is then refused at start, never
/// kept against a made-up price.
pub fn for_settings(settings: &Settings) -> Option<Arc<dyn Pricing>> {
    match session_model(settings).ok()?.costing {
        Costing::Local => Some(Arc::new(bosun_providers::Pricing::free())),
        Costing::Priced(pricing) => Some(Arc::new(pricing)),
        Costing::Unknown => None,
    }
}
