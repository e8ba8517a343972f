//! The table's JSON form and the rules each entry is checked against.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{LongContext, ModelInfo, ModelTable, ModelTableError, Price, Prices, ProviderRules};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTable {
    pub(super) format: u32,
    #[serde(default, rename = "about")]
    _about: Option<String>,
    /// Where an imported table came from (name, version, date, licence).
    #[serde(default, rename = "source")]
    _source: Option<serde_json::Value>,
    pub(super) providers: BTreeMap<String, RawProvider>,
    pub(super) models: Vec<RawModel>,
}

/// A provider's rules as written; a key left out takes [`Default`]'s value.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawProvider {
    pub(super) prices_of: Option<String>,
    pub(super) prices_by_prefix: BTreeMap<String, String>,
    output_includes_reasoning: bool,
    images: Option<bool>,
    #[serde(rename = "note")]
    _note: Option<String>,
}

impl Default for RawProvider {
    fn default() -> Self {
        Self {
            prices_of: None,
            prices_by_prefix: BTreeMap::new(),
            output_includes_reasoning: true,
            images: None,
            _note: None,
        }
    }
}

impl RawProvider {
    pub(super) fn rules(&self) -> ProviderRules {
        ProviderRules {
            prices_of: self.prices_of.clone(),
            prices_by_prefix: self.prices_by_prefix.clone(),
            output_includes_reasoning: self.output_includes_reasoning,
            images: self.images,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrices {
    input: Option<f64>,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
    output: Option<f64>,
    reasoning: Option<f64>,
}

impl RawPrices {
    fn check(&self) -> Result<Prices, ModelTableError> {
        let price = |value: Option<f64>| value.map(Price::from_dollars_per_million).transpose();
        Ok(Prices {
            input: price(self.input)?,
            cached_input: price(self.cached_input)?,
            cache_write: price(self.cache_write)?,
            output: price(self.output)?,
            reasoning: price(self.reasoning)?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLongContext {
    above_prompt_tokens: u64,
    price: RawPrices,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    provider: String,
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    context_window: Option<u32>,
    max_input_tokens: Option<u32>,
    max_output_tokens: Option<u32>,
    price: RawPrices,
    long_context: Option<RawLongContext>,
    sources: Vec<String>,
    checked: String,
    #[serde(default)]
    images: Option<bool>,
    #[serde(default, rename = "note")]
    _note: Option<String>,
}

impl RawModel {
    pub(super) fn check(self, table: &ModelTable) -> Result<ModelInfo, ModelTableError> {
        let fail = |why: String| ModelTableError::Entry {
            provider: self.provider.clone(),
            id: self.id.clone(),
            why,
        };
        match table.providers.get(&self.provider) {
            None => return Err(fail("its provider is not in the table's providers".into())),
            Some(rules) if rules.prices_of.is_some() => {
                return Err(fail("its provider bills at another provider's prices".into()));
            }
            Some(_) => {}
        }
        let names = std::iter::once(&self.id).chain(&self.aliases);
        for name in names.clone() {
            if name.is_empty() || name.chars().any(char::is_whitespace) {
                return Err(fail(format!("`{name}` is not a model name")));
            }
            let taken = table
                .models
                .iter()
                .any(|m| m.provider == self.provider && m.names().any(|n| n.eq_ignore_ascii_case(name)));
            if taken {
                return Err(fail(format!("`{name}` already names another entry")));
            }
        }
        for (what, tokens) in [
            ("context_window", self.context_window),
            ("max_input_tokens", self.max_input_tokens),
            ("max_output_tokens", self.max_output_tokens),
        ] {
            if tokens == Some(0) {
                return Err(fail(format!("{what} must be more than 0")));
            }
        }
        if let Some(window) = self.context_window {
            if self.max_output_tokens.is_some_and(|out| out >= window) {
                return Err(fail("max_output_tokens must be less than the context window".into()));
            }
            if self.max_input_tokens.is_some_and(|input| input > window) {
                return Err(fail("max_input_tokens cannot exceed the context window".into()));
            }
        }
        let prices = self.price.check()?;
        let long_context = match &self.long_context {
            None => None,
            Some(long) => {
                if long.above_prompt_tokens == 0 {
                    return Err(fail("long_context.above_prompt_tokens must be more than 0".into()));
                }
                if !prices.any() {
                    return Err(fail("a long-context tier needs base prices".into()));
                }
                Some(LongContext {
                    above_prompt_tokens: long.above_prompt_tokens,
                    prices: long.price.check()?,
                })
            }
        };
        if self.sources.is_empty() || self.sources.iter().any(|s| !s.starts_with("https://")) {
            return Err(fail("sources must name the provider's pages by https URL".into()));
        }
        if !is_date(&self.checked) {
            return Err(fail(format!("checked `{}` is not a YYYY-MM-DD date", self.checked)));
        }
        Ok(ModelInfo {
            provider: self.provider,
            id: self.id,
            aliases: self.aliases,
            context_window: self.context_window,
            max_input_tokens: self.max_input_tokens,
            max_output_tokens: self.max_output_tokens,
            prices,
            long_context,
            sources: self.sources,
            checked: Some(self.checked),
            images: self.images,
        })
    }
}

/// `YYYY-MM-DD` with a plausible month and day.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let number = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok()).flatten()
    };
    match parts.as_slice() {
        [year, month, day] => {
            number(year, 4).is_some()
                && number(month, 2).is_some_and(|m| (1..=12).contains(&m))
                && number(day, 2).is_some_and(|d| (1..=31).contains(&d))
        }
        _ => false,
    }
}
