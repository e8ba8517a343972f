//! The model table: context windows, output limits and prices of hosted
//! models, as data (`data/models.json`, embedded), checked when loaded, and
//! what a response cost from its [`bosun_core::Usage`].
//!
//! # Lookup
//!
//! [`ModelTable::find`] takes the provider preset and the model name as
//! given to `--model PROVIDER/MODEL`:
//! 1. the provider: a preset that bills as another (`openai-responses` is
//!    `openai`, Azure's are `openai`) is looked up as that one; a cloud
//!    that resells several vendors (Vertex) bills each model as its vendor,
//!    by the model name's prefix (`claude-…` as `anthropic`, the rest as
//!    `gemini`); Bedrock's ids name their vendor
//!    (`us.anthropic.claude-sonnet-4-5-20250929-v1:0` is Anthropic's
//!    `claude-sonnet-4-5-20250929`, its inference-profile geography and
//!    Bedrock version suffix dropped);
//! 2. the model: its exact id or one of its aliases (ASCII case ignored),
//!    with Gemini's `models/` prefix dropped;
//! 3. failing that, the name without a dated snapshot suffix:
//!    `claude-haiku-4-5-20251001` → `claude-haiku-4-5`,
//!    `gpt-6.2-sol-2026-11-17` → `gpt-6.2-sol`, and Vertex's
//!    `claude-sonnet-4-5@20250929` → `claude-sonnet-4-5`.
//!
//! Nothing looser: a name that only starts like a known one
//! (`claude-opus-5-5-fast`) is unknown, since variants are priced apart.
//! An unknown model has no entry, hence no window and "cost unknown".
//!
//! # Cost
//!
//! Every decoder in this crate gives `Usage::input` without the cached
//! prompt tokens (`cache_read`), and Anthropic's without cache writes
//! (`cache_write`), which only Anthropic Messages reports apart. So a cost
//! is `input × input price + cache_read × cached price + cache_write ×
//! write price + output`, where output is billed as `output × output price`
//! plus reasoning at its own price where one is set; a provider whose
//! `output` leaves reasoning out (xAI) has its reasoning added at that price
//! or the output price. See [`Pricing`].

mod cost;
mod imported_index;
mod raw;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use cost::{Cost, LongContext, Price, Prices, Pricing};

use crate::config::{Api, ProviderConfig};

/// The table shipped with bosun, written by hand from the providers' pages.
const BUILTIN: &str = include_str!("../../data/models.json");

/// The snapshot of LiteLLM's model database that `scripts/refresh-models`
/// writes; it fills in models the hand-written table lacks.
const IMPORTED: &str = include_str!("../../data/models-litellm.json");

/// The table's format this code reads.
const FORMAT: u32 = 1;

/// A model table that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelTableError {
    /// Not the table's JSON form.
    #[error("the model table does not parse: {0}")]
    Json(#[from] serde_json::Error),
    /// A format this code does not read.
    #[error("the model table has format {0}; this bosun reads format {FORMAT}")]
    Format(u32),
    /// A price that is not one.
    #[error("{value} is not a usable price per million tokens: {why}")]
    Price {
        /// The value given.
        value: f64,
        /// Why it was refused.
        why: &'static str,
    },
    /// An entry that breaks a rule of the table.
    #[error("model table entry `{provider}/{id}`: {why}")]
    Entry {
        /// Its provider.
        provider: String,
        /// Its id.
        id: String,
        /// The rule it breaks.
        why: String,
    },
    /// The import's index (`imported_index.rs`) names text the import
    /// does not have: it was not written from this import.
    #[error("the model table's index names bytes {start}..{end} of the import, which it does not have")]
    Index {
        /// The first byte named.
        start: usize,
        /// The end named.
        end: usize,
    },
    /// A provider entry that breaks a rule.
    #[error("model table provider `{provider}`: {why}")]
    Provider {
        /// The provider.
        provider: String,
        /// The rule it breaks.
        why: String,
    },
}

/// What is known of one model.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInfo {
    /// The provider preset it is billed by (`anthropic`, `openai`, …).
    pub provider: String,
    /// The model id, as the API takes it.
    pub id: String,
    /// Other names of the same model at the same prices.
    pub aliases: Vec<String>,
    /// The context window the provider publishes, in tokens.
    pub context_window: Option<u32>,
    /// The largest prompt, where the provider publishes it apart.
    pub max_input_tokens: Option<u32>,
    /// The largest output of one response.
    pub max_output_tokens: Option<u32>,
    /// The base prices.
    pub prices: Prices,
    /// Higher prices for long prompts.
    pub long_context: Option<LongContext>,
    /// Where the figures were read (the provider's pages).
    pub sources: Vec<String>,
    /// When they were read (`YYYY-MM-DD`); `None` for a model the user's
    /// config added.
    pub checked: Option<String>,
    /// Whether it takes images in its input, when the entry says; else its
    /// provider's rule applies ([`ModelTable::images`]).
    pub images: Option<bool>,
}

impl ModelInfo {
    /// A model nothing is known of yet (one a config file adds).
    pub fn new(provider: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            id: id.into(),
            aliases: Vec::new(),
            context_window: None,
            max_input_tokens: None,
            max_output_tokens: None,
            prices: Prices::default(),
            long_context: None,
            sources: Vec::new(),
            checked: None,
            images: None,
        }
    }

    /// The settings of `over` over these. Prices from a config are flat:
    /// once any price is set, the table's long-context tier, priced for
    /// the table's prices, no longer applies.
    pub fn apply(&mut self, over: &ModelOverride) {
        if let Some(tokens) = over.context_window {
            self.context_window = Some(tokens);
        }
        if let Some(tokens) = over.max_output_tokens {
            self.max_output_tokens = Some(tokens);
        }
        if let Some(images) = over.images {
            self.images = Some(images);
        }
        let prices = &mut self.prices;
        let fields = [
            (over.input, &mut prices.input),
            (over.cached_input, &mut prices.cached_input),
            (over.cache_write, &mut prices.cache_write),
            (over.output, &mut prices.output),
            (over.reasoning, &mut prices.reasoning),
        ];
        let mut priced = false;
        for (value, field) in fields {
            if let Some(value) = value {
                *field = Some(value);
                priced = true;
            }
        }
        if priced {
            self.long_context = None;
        }
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.id.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
}

/// What a config file says of one model (`[models."MODEL"]`); unset keys
/// keep the table's values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelOverride {
    /// `context_window`.
    pub context_window: Option<u32>,
    /// `max_output_tokens`.
    pub max_output_tokens: Option<u32>,
    /// `price_input`.
    pub input: Option<Price>,
    /// `price_cached_input`.
    pub cached_input: Option<Price>,
    /// `price_cache_write`.
    pub cache_write: Option<Price>,
    /// `price_output`.
    pub output: Option<Price>,
    /// `price_reasoning`.
    pub reasoning: Option<Price>,
    /// `images`: whether the model takes images.
    pub images: Option<bool>,
}

impl ModelOverride {
    /// `later`'s values over these, key by key.
    pub fn merged(self, later: Self) -> Self {
        Self {
            context_window: later.context_window.or(self.context_window),
            max_output_tokens: later.max_output_tokens.or(self.max_output_tokens),
            input: later.input.or(self.input),
            cached_input: later.cached_input.or(self.cached_input),
            cache_write: later.cache_write.or(self.cache_write),
            output: later.output.or(self.output),
            reasoning: later.reasoning.or(self.reasoning),
            images: later.images.or(self.images),
        }
    }
}

/// How a provider counts tokens, and whose prices it bills at.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ProviderRules {
    prices_of: Option<String>,
    /// Model-name prefixes billed as another provider (Vertex's `claude`).
    prices_by_prefix: BTreeMap<String, String>,
    output_includes_reasoning: bool,
    /// Whether its models take images, unless an entry says otherwise.
    images: Option<bool>,
}

/// The model table, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelTable {
    providers: BTreeMap<String, ProviderRules>,
    models: Vec<ModelInfo>,
}

impl ModelTable {
    /// [`ModelTable::builtin`], parsed once per process and shared: a run
    /// asks for its session model several times (its window, its costing,
    /// its prices, whether it takes images), and the table with its import
    /// is over 100 KB of JSON to parse and check.
    pub fn shared() -> Result<&'static Self, ModelTableError> {
        static TABLE: std::sync::OnceLock<ModelTable> = std::sync::OnceLock::new();
        if let Some(table) = TABLE.get() {
            return Ok(table);
        }
        let table = Self::builtin()?;
        Ok(TABLE.get_or_init(|| table))
    }

    /// The table shipped with bosun: `data/models.json`, then the entries
    /// of `data/models-litellm.json` that name no model it has. The
    /// hand-written entries win because they are read from the providers'
    /// own pages and carry notes the import cannot.
    pub fn builtin() -> Result<Self, ModelTableError> {
        let mut table = Self::parse(BUILTIN)?;
        table.add_under(Self::parse(IMPORTED)?);
        Ok(table)
    }

    /// The imported snapshot alone (for checking it).
    pub fn imported() -> Result<Self, ModelTableError> {
        Self::parse(IMPORTED)
    }

    /// `other`'s entries none of whose names this table has, also once a
    /// dated snapshot suffix is dropped (so `claude-haiku-4-5-20251001`
    /// keeps resolving to the hand-written `claude-haiku-4-5`); its provider
    /// rules are ignored (this table's say how tokens are counted).
    fn add_under(&mut self, other: Self) {
        for model in other.models {
            let known = |name: &str| {
                self.models
                    .iter()
                    .any(|m| m.provider == model.provider && m.names().any(|n| n.eq_ignore_ascii_case(name)))
            };
            let taken = model.names().any(|name| known(name) || without_snapshot(name).is_some_and(known));
            if !taken && self.providers.contains_key(&model.provider) {
                self.models.push(model);
            }
        }
    }

    /// A table from its JSON form, every rule checked.
    pub fn parse(json: &str) -> Result<Self, ModelTableError> {
        let raw: raw::RawTable = serde_json::from_str(json)?;
        if raw.format != FORMAT {
            return Err(ModelTableError::Format(raw.format));
        }
        let mut providers = BTreeMap::new();
        for (name, rules) in &raw.providers {
            for target in rules.prices_of.iter().chain(rules.prices_by_prefix.values()) {
                let chained = raw.providers.get(target).map(|t| t.prices_of.is_some());
                if chained != Some(false) {
                    return Err(ModelTableError::Provider {
                        provider: name.clone(),
                        why: format!("prices_of `{target}` must name a provider that has its own prices"),
                    });
                }
            }
            providers.insert(name.clone(), rules.rules());
        }
        let mut table = Self { providers, models: Vec::with_capacity(raw.models.len()) };
        for model in raw.models {
            let info = model.check(&table)?;
            table.models.push(info);
        }
        Ok(table)
    }

    /// What [`ModelTable::find`] of `model` of `provider` needs of the
    /// table shipped with bosun: all of `data/models.json` (the provider
    /// rules and the hand-written entries), and of the import only the
    /// entries named as the lookup tries, found through its index
    /// (`imported_index.rs`) and parsed alone. A run looks up one model, and
    /// parsing and checking all of the import was over a tenth of a hosted
    /// run's time to its first request (docs/benchmarks.md). Both files are
    /// checked whole by the tests, and the index against the import.
    pub fn builtin_for(provider: &str, model: &str) -> Result<Self, ModelTableError> {
        let mut table = Self::parse(BUILTIN)?;
        let mut spans = Vec::new();
        for (provider, name) in table.lookups(provider, model) {
            spans.extend(imported_spans(provider, &name.to_ascii_lowercase()));
        }
        // The import's order, as `add_under` takes entries in it.
        spans.sort_unstable();
        spans.dedup();
        let mut imported = Self { providers: imported_providers(), models: Vec::with_capacity(spans.len()) };
        for (start, end) in spans {
            let text = IMPORTED.get(start..end).ok_or(ModelTableError::Index { start, end })?;
            let entry: raw::RawModel = serde_json::from_str(text)?;
            let info = entry.check(&imported)?;
            imported.models.push(info);
        }
        table.add_under(imported);
        Ok(table)
    }

    /// [`ModelTable::builtin_for`], kept for the model last asked for: a run
    /// asks for its session model several times (its window, its costing,
    /// whether it takes images).
    pub fn shared_for(provider: &str, model: &str) -> Result<Arc<Self>, ModelTableError> {
        static LAST: Mutex<Option<(String, String, Arc<ModelTable>)>> = Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((p, m, table)) = last.as_ref()
            && p == provider
            && m == model
        {
            return Ok(Arc::clone(table));
        }
        let table = Arc::new(Self::builtin_for(provider, model)?);
        *last = Some((provider.to_owned(), model.to_owned(), Arc::clone(&table)));
        Ok(table)
    }

    /// Every entry.
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// Whether the table says how `provider` counts tokens.
    pub fn knows_provider(&self, provider: &str) -> bool {
        self.providers.contains_key(provider)
    }

    /// The entry for `model` of `provider`, by the rule in the module docs.
    pub fn find(&self, provider: &str, model: &str) -> Option<&ModelInfo> {
        self.lookups(provider, model).into_iter().find_map(|(provider, name)| {
            self.models
                .iter()
                .find(|m| m.provider == provider && m.names().any(|n| n.eq_ignore_ascii_case(name)))
        })
    }

    /// The provider and name [`ModelTable::find`] tries, in order.
    fn lookups<'a>(&'a self, provider: &'a str, model: &'a str) -> Vec<(&'a str, &'a str)> {
        if provider == "bedrock" {
            return bedrock_model(model).map(|(vendor, name)| self.lookups(vendor, name)).unwrap_or_default();
        }
        let provider = self.billing_provider(provider, model);
        let model = model.strip_prefix("models/").unwrap_or(model);
        std::iter::once(model).chain(without_snapshot(model)).map(|name| (provider, name)).collect()
    }

    /// Whether `model` of `provider` takes images: its entry's `images`
    /// (`info`, the entry as the config left it), else the provider's rule
    /// (looked up as `provider`, then the provider it bills as); `None`
    /// when nothing says.
    pub fn images(&self, provider: &str, info: Option<&ModelInfo>) -> Option<bool> {
        let rule = |name: &str| self.providers.get(name).and_then(|r| r.images);
        info.and_then(|i| i.images)
            .or_else(|| rule(provider))
            .or_else(|| rule(self.billing_provider(provider, info.map_or("", |i| i.id.as_str()))))
    }

    /// How `info` is priced when run through `provider` (the session's
    /// preset, which says how its API counts tokens).
    pub fn pricing(&self, provider: &str, info: &ModelInfo) -> Pricing {
        // A provider the table does not list (a generic compatible server)
        // counts as Chat Completions defines `completion_tokens`: reasoning in.
        // Bedrock bills each model as its vendor does, and Converse reports
        // cache reads and writes apart from `inputTokens`.
        let bedrock = provider == "bedrock";
        let billing =
            if bedrock { info.provider.as_str() } else { self.billing_provider(provider, &info.id) };
        let rules = self.providers.get(billing);
        let output_includes_reasoning = rules.is_none_or(|r| r.output_includes_reasoning);
        // A cloud is no preset: its usage reads as its vendor's API reports it.
        let api = ProviderConfig::preset(provider).or_else(|| ProviderConfig::preset(billing)).map(|c| c.api);
        Pricing {
            prices: info.prices,
            long_context: info.long_context,
            output_includes_reasoning,
            usage_separates_cache_writes: bedrock || api == Some(Api::AnthropicMessages),
        }
    }

    fn billing_provider<'a>(&'a self, provider: &'a str, model: &str) -> &'a str {
        let Some(rules) = self.providers.get(provider) else { return provider };
        let by_prefix = rules.prices_by_prefix.iter().find(|(prefix, _)| model.starts_with(prefix.as_str()));
        by_prefix.map(|(_, target)| target.as_str()).or(rules.prices_of.as_deref()).unwrap_or(provider)
    }
}

/// Where in the import (start and end byte) the entries are that
/// `provider` names `lower_name` (ASCII lower case), from its index.
fn imported_spans(provider: &str, lower_name: &str) -> impl Iterator<Item = (usize, usize)> {
    let entries = imported_index::ENTRIES;
    let first = entries.partition_point(|&(p, n, _, _)| (p, n) < (provider, lower_name));
    entries[first..]
        .iter()
        .take_while(move |&&(p, n, _, _)| (p, n) == (provider, lower_name))
        .map(|&(_, _, start, end)| (start, end))
}

/// The import's providers, with the rules an empty entry gives (the import
/// sets none; its tests check so).
fn imported_providers() -> BTreeMap<String, ProviderRules> {
    let plain = raw::RawProvider::default().rules();
    imported_index::PROVIDERS.iter().map(|name| ((*name).to_owned(), plain.clone())).collect()
}

/// The vendor (as the table names it) and model of a Bedrock model id:
/// `us.anthropic.claude-sonnet-4-5-20250929-v1:0` is Anthropic's
/// `claude-sonnet-4-5-20250929`. A cross-region inference profile's
/// geography (`us.`, `eu.`, `apac.`, `global.`, …) and the Bedrock version
/// suffix (`-v1:0`, `-v2`) are dropped. `None` for a vendor the table has
/// no prices of.
fn bedrock_model(model: &str) -> Option<(&'static str, &str)> {
    let model = model.trim();
    // An inference profile's id is `GEO.VENDOR.MODEL`.
    const GEOGRAPHIES: &[&str] = &["us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"];
    let (first, rest) = model.split_once('.')?;
    let (vendor, name) = match GEOGRAPHIES.contains(&first) {
        true => rest.split_once('.')?,
        false => (first, rest),
    };
    let vendor = match vendor {
        "anthropic" => "anthropic",
        "openai" => "openai",
        _ => return None,
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let name = match name.rsplit_once("-v") {
        Some((base, version))
            if version
                .split_once(':')
                .map_or(digits(version), |(major, minor)| digits(major) && digits(minor)) =>
        {
            base
        }
        _ => name,
    };
    Some((vendor, name))
}

/// `model` without a dated snapshot suffix (`-20251001`, `-2026-11-17`).
fn without_snapshot(model: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    // Vertex names Claude snapshots `claude-sonnet-4-5@20250929`.
    if let Some((base, date)) = model.rsplit_once('@') {
        return (date.len() == 8 && digits(date) && date.starts_with("20")).then_some(base);
    }
    let (base, date) = model.rsplit_once('-')?;
    if date.len() == 8 && digits(date) && date.starts_with("20") {
        return Some(base);
    }
    // `YYYY-MM-DD`: the last three dash-separated parts.
    let (rest, day) = (base, date);
    let (rest, month) = rest.rsplit_once('-')?;
    let (base, year) = rest.rsplit_once('-')?;
    let dated =
        [(year, 4), (month, 2), (day, 2)].iter().all(|(part, len)| part.len() == *len && digits(part));
    (dated && year.starts_with("20")).then_some(base)
}
