//! What the config says of models: `[models."MODEL"]` tables (window,
//! output limit, prices per million tokens, whether it takes images) over bosun-providers' model
//! table, and a top-level `context_window` for the session's model; and
//! the session model's window and cost basis resolved from both.
//!
//! `MODEL` is either the `--model` form (`anthropic/claude-opus-5-5`) or a
//! bare model name (`claude-opus-5-5`, for that model at any provider); the
//! full form is applied after the bare one, so it wins key by key. Windows
//! and prices say what the user will be billed and how much history is
//! sent, so an untrusted project's config may not set them (`trust.rs`).

use crate::error::{Context, Result, bail};
use bosun_core::{Spend, Support, Usage};
use bosun_providers::{ModelInfo, ModelOverride, ModelTable, Price, Pricing};
use serde::Deserialize;

use super::Settings;

/// One `[models."MODEL"]` table as written.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The context window, in tokens.
    pub context_window: Option<u32>,
    /// The largest output of one response, in tokens.
    pub max_output_tokens: Option<u32>,
    /// US dollars per million uncached input tokens.
    pub price_input: Option<f64>,
    /// Per million input tokens read from the provider's cache.
    pub price_cached_input: Option<f64>,
    /// Per million input tokens written to the provider's cache.
    pub price_cache_write: Option<f64>,
    /// Per million output tokens.
    pub price_output: Option<f64>,
    /// Per million reasoning tokens, where billed unlike output.
    pub price_reasoning: Option<f64>,
    /// Whether the model takes images (over the model table's word).
    pub images: Option<bool>,
}

impl ModelEntry {
    /// The entry as the table's override, every value checked.
    pub fn to_override(&self) -> Result<ModelOverride> {
        let mut over = ModelOverride::default();
        over.images = self.images;
        for (key, tokens, field) in [
            ("context_window", self.context_window, &mut over.context_window),
            ("max_output_tokens", self.max_output_tokens, &mut over.max_output_tokens),
        ] {
            if tokens == Some(0) {
                bail!("{key} = 0: a model takes at least one token");
            }
            *field = tokens;
        }
        for (key, dollars, field) in [
            ("price_input", self.price_input, &mut over.input),
            ("price_cached_input", self.price_cached_input, &mut over.cached_input),
            ("price_cache_write", self.price_cache_write, &mut over.cache_write),
            ("price_output", self.price_output, &mut over.output),
            ("price_reasoning", self.price_reasoning, &mut over.reasoning),
        ] {
            if let Some(dollars) = dollars {
                let price =
                    Price::from_dollars_per_million(dollars).with_context(|| format!("{key} = {dollars}"))?;
                *field = Some(price);
            }
        }
        Ok(over)
    }

    /// The set keys, for `config show`.
    pub fn summary(&self) -> String {
        let numbers = [
            ("context_window", self.context_window.map(f64::from)),
            ("max_output_tokens", self.max_output_tokens.map(f64::from)),
            ("price_input", self.price_input),
            ("price_cached_input", self.price_cached_input),
            ("price_cache_write", self.price_cache_write),
            ("price_output", self.price_output),
            ("price_reasoning", self.price_reasoning),
        ];
        let mut set: Vec<String> =
            numbers.iter().filter_map(|(key, value)| value.map(|v| format!("{key} = {v}"))).collect();
        set.extend(self.images.map(|images| format!("images = {images}")));
        format!("{{ {} }}", set.join(", "))
    }
}

/// How the session's model is billed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Costing {
    /// The local engine: nothing.
    Local,
    /// Priced by the table and the config.
    Priced(Pricing),
    /// A model neither the table nor the config prices.
    Unknown,
}

impl Costing {
    /// What a sum of responses cost, as shown after a turn and by
    /// `sessions show`: `$0.0123`, `at most $0.0123` when a long-context
    /// tier makes the sum ambiguous, `$0 (local model)` or `cost unknown`.
    pub fn describe_total(&self, usage: &Usage) -> String {
        match self {
            Self::Local => "$0 (local model)".to_owned(),
            Self::Priced(pricing) => match pricing.cost_of_total(usage) {
                Some(cost) => cost.to_string(),
                None => match pricing.upper_bound_of_total(usage) {
                    Some(bound) if !bound.is_lower_bound() => format!("at most {bound}"),
                    _ => unknown(),
                },
            },
            Self::Unknown => unknown(),
        }
    }

    /// What these responses cost, each priced on its own (exact for
    /// long-context tiers, which a sum cannot tell).
    pub fn describe_responses<'a>(&self, responses: impl IntoIterator<Item = &'a Usage>) -> String {
        match self {
            Self::Local => "$0 (local model)".to_owned(),
            Self::Priced(pricing) => {
                pricing.cost_of_responses(responses).map_or_else(unknown, |c| c.to_string())
            }
            Self::Unknown => unknown(),
        }
    }
}

impl Costing {
    /// What a turn or session spent: for a priced model, the costs recorded
    /// as each response arrived (see [`recorded_cost`]).
    pub fn describe_spend(&self, spend: &Spend) -> String {
        match self {
            Self::Priced(_) => {
                recorded_cost(spend).unwrap_or_else(|| self.describe_total(&spend.total().usage))
            }
            _ => self.describe_total(&spend.total().usage),
        }
    }
}

/// The cost recorded in `spend` when all of it is known: the total, then
/// the compaction, tools and sub-agents buckets that spent anything, e.g.
/// `$0.0140 (compaction $0.0010)`.
pub fn recorded_cost(spend: &Spend) -> Option<String> {
    let micros = spend.total().cost_micros?;
    let buckets: Vec<String> =
        [("compaction", spend.compaction), ("tools", spend.tools), ("sub-agents", spend.subagents)]
            .into_iter()
            .filter(|(_, spent)| !spent.is_zero())
            .filter_map(|(name, spent)| Some(format!("{name} {}", dollars(spent.cost_micros?))))
            .collect();
    Some(if buckets.is_empty() {
        dollars(micros)
    } else {
        format!("{} ({})", dollars(micros), buckets.join(", "))
    })
}

/// Micro-dollars as shown: `$0.0123`.
pub fn dollars(micros: u64) -> String {
    bosun_providers::Cost::from_picodollars(u128::from(micros) * 1_000_000).to_string()
}

fn unknown() -> String {
    "cost unknown".to_owned()
}

/// The session's model as the table and the config describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionModel {
    /// `PROVIDER/MODEL`, or `local`.
    pub name: String,
    /// The window in effect: the top-level `context_window`, else the
    /// model's (config, then table); `None` when neither says (a local
    /// model's engine reads its file's).
    pub context_window: Option<u32>,
    /// The largest prompt, where the provider publishes it apart.
    pub max_input_tokens: Option<u32>,
    /// The output limit, if known.
    pub max_output_tokens: Option<u32>,
    /// How it is billed.
    pub costing: Costing,
    /// Whether it takes images: the config's `images`, else the model
    /// table's (the entry's, else its provider's); a local model takes none.
    pub images: Support,
}

/// The session model of `settings`, from the table shipped with bosun.
pub fn session_model(settings: &Settings) -> Result<SessionModel> {
    // A local model's run never reads the table: it costs that run nothing.
    let Some((provider, name)) = hosted_spec(settings) else {
        return Ok(local_session_model(settings));
    };
    let looked_up = crate::clouds::underlying(settings, provider, name);
    let table = ModelTable::shared_for(provider, looked_up).context("bosun's model table is broken")?;
    Ok(session_model_in(settings, &table))
}

/// `PROVIDER` and `MODEL` of a hosted session model; `None` for the local one.
fn hosted_spec(settings: &Settings) -> Option<(&str, &str)> {
    let spec = settings.model.as_deref().unwrap_or_default();
    spec.split_once('/').filter(|_| !uses_local_model(settings))
}

/// The local model as a session model: no table entry, no prices, no images.
fn local_session_model(settings: &Settings) -> SessionModel {
    SessionModel {
        name: "local".to_owned(),
        context_window: settings.context_window,
        max_input_tokens: None,
        max_output_tokens: None,
        costing: Costing::Local,
        images: Support::No,
    }
}

/// The session model of `settings`, from `table`.
pub fn session_model_in(settings: &Settings, table: &ModelTable) -> SessionModel {
    let Some((provider, name)) = hosted_spec(settings) else {
        return local_session_model(settings);
    };
    let spec = settings.model.as_deref().unwrap_or_default();
    let overrides: Vec<&ModelOverride> =
        [name, spec].iter().filter_map(|key| settings.models.get(*key)).collect();
    // An Azure deployment is looked up as the model the config says it runs.
    let info = match table.find(provider, crate::clouds::underlying(settings, provider, name)) {
        Some(known) => Some(known.clone()),
        None if !overrides.is_empty() => Some(ModelInfo::new(provider, name)),
        None => None,
    };
    let info = info.map(|mut info| {
        for over in &overrides {
            info.apply(over);
        }
        info
    });
    let costing = match &info {
        Some(info) if info.prices.any() => Costing::Priced(table.pricing(provider, info)),
        _ => Costing::Unknown,
    };
    let images = match table.images(provider, info.as_ref()) {
        Some(true) => Support::Yes,
        Some(false) => Support::No,
        None => Support::Unknown,
    };
    SessionModel {
        name: spec.to_owned(),
        context_window: settings.context_window.or(info.as_ref().and_then(|i| i.context_window)),
        max_input_tokens: info.as_ref().and_then(|i| i.max_input_tokens),
        max_output_tokens: info.as_ref().and_then(|i| i.max_output_tokens),
        costing,
        images,
    }
}

impl SessionModel {
    /// The most a request's prompt may hold, for compaction: the window,
    /// or the provider's input limit when that is smaller.
    pub fn prompt_window(&self) -> Option<u32> {
        let window = self.context_window?;
        Some(self.max_input_tokens.map_or(window, |input| input.min(window)))
    }
}

/// Whether the settings name a local model (the embedded default included).
pub fn uses_local_model(settings: &Settings) -> bool {
    settings.model.as_deref().is_none_or(is_local_spec)
}

/// Whether a model spec names a local model (`local:PATH`, `local/NAME`, `hf:…`).
pub fn is_local_spec(spec: &str) -> bool {
    ["local:", "local/", "hf:"].iter().any(|p| spec.starts_with(p))
}

/// The session model's prices, when bosun has them (the local engine's are
/// nothing), for a cost limit: bosun-core holds no prices. None otherwise: a
/// cost limit is then refused at start, never kept against a made-up price.
pub fn pricing(settings: &Settings) -> Option<std::sync::Arc<dyn bosun_core::Pricing>> {
    match session_model(settings).ok()?.costing {
        Costing::Local => Some(std::sync::Arc::new(bosun_providers::Pricing::free())),
        Costing::Priced(pricing) => Some(std::sync::Arc::new(pricing)),
        Costing::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::write;
    use crate::config::{Env, Source, resolve};

    /// Settings from a user file `user` and a project file `project`,
    /// the project trusted or not.
    fn settings_from(user: &str, project: &str, trusted: bool) -> Settings {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        write(&root, ".bosun/config.toml", project);
        let trust = if trusted {
            format!("\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n", root.display())
        } else {
            String::new()
        };
        write(home.path(), ".config/bosun/config.toml", &format!("{user}{trust}"));
        let home_var = home.path().display().to_string();
        resolve(&root, &Env::from_pairs(&[("HOME", &home_var)]), None, &crate::config::Overrides::default())
            .unwrap()
    }

    fn priced(model: &SessionModel) -> &Pricing {
        match &model.costing {
            Costing::Priced(pricing) => pricing,
            other => panic!("not priced: {other:?}"),
        }
    }

    const USER: &str = r#"
model = "anthropic/claude-opus-5-5"
[models."claude-opus-5-5"]
price_input = 1
price_output = 30
[models."anthropic/claude-opus-5-5"]
price_input = 3
max_output_tokens = 64000
"#;

    const HOSTILE: &str = r#"
context_window = 1000
[models."anthropic/claude-opus-5-5"]
price_output = 0
price_input = 0
[models."claude-opus-5-5"]
context_window = 10
"#;

    #[test]
    fn user_entries_override_the_table_key_by_key_the_full_name_last() {
        let settings = settings_from(USER, "", false);
        let table = ModelTable::builtin().unwrap();
        let model = session_model_in(&settings, &table);
        assert_eq!(model.name, "anthropic/claude-opus-5-5");
        assert_eq!((model.context_window, model.max_output_tokens), (Some(1_000_000), Some(64_000)));
        let pricing = priced(&model);
        let price = |dollars| Some(Price::from_dollars_per_million(dollars).unwrap());
        // The full name's $3 over the bare name's $1; the table's cache prices kept.
        assert_eq!(pricing.prices.input, price(3.0));
        assert_eq!(pricing.prices.output, price(30.0));
        assert_eq!(pricing.prices.cached_input, price(0.2));
        // 1,000 × $3 + 1,000 × $30 + 1,000 cached × $0.20 per million.
        let mut usage = Usage::new(1_000, 1_000);
        usage.cache_read = 1_000;
        assert_eq!(model.costing.describe_total(&usage), "$0.0332");
        assert!(matches!(&settings.sources["models.\"claude-opus-5-5\""].1, Source::File(_)));
    }

    #[test]
    fn a_config_adds_models_the_table_lacks_and_sets_the_window() {
        let user = "model = \"openai-compatible/my-coder\"\ncontext_window = 24000\n\
                    [models.\"openai-compatible/my-coder\"]\ncontext_window = 32000\nprice_input = 0.5\n\
                    price_output = 1.5\n";
        let settings = settings_from(user, "", false);
        let model = session_model(&settings).unwrap();
        assert_eq!(model.context_window, Some(24_000), "the top-level window wins");
        // 2,000 × $0.50 + 1,000 × $1.50 per million = 2,500 µ$.
        assert_eq!(model.costing.describe_total(&Usage::new(2_000, 1_000)), "$0.0025");
        // Without a price for cached input, a cache read makes it unknown.
        let mut cached = Usage::new(2_000, 1_000);
        cached.cache_read = 1;
        assert_eq!(model.costing.describe_total(&cached), "cost unknown");
        let mut bare = settings.clone();
        bare.context_window = None;
        assert_eq!(session_model(&bare).unwrap().context_window, Some(32_000));
    }

    #[test]
    fn unknown_models_cost_unknown_and_local_ones_nothing() {
        let mut settings = settings_from("model = \"openrouter/some/model\"\n", "", false);
        let unknown = session_model(&settings).unwrap();
        assert_eq!((unknown.costing.clone(), unknown.context_window), (Costing::Unknown, None));
        assert_eq!(unknown.costing.describe_total(&Usage::new(1, 1)), "cost unknown");
        for local in [None, Some("local:/models/tiny.gguf"), Some("hf:org/repo/file.gguf")] {
            settings.model = local.map(str::to_owned);
            let model = session_model(&settings).unwrap();
            assert_eq!((model.name.as_str(), &model.costing), ("local", &Costing::Local), "{local:?}");
            assert_eq!(model.costing.describe_total(&Usage::new(5, 5)), "$0 (local model)");
        }
    }

    #[test]
    fn invariant_20_an_untrusted_project_cannot_set_prices_or_windows() {
        let settings = settings_from(USER, HOSTILE, false);
        let model = session_model(&settings).unwrap();
        assert_eq!(model.context_window, Some(1_000_000), "the project's window is ignored");
        assert_eq!(priced(&model).prices.output, Some(Price::from_dollars_per_million(30.0).unwrap()));
        let ignored = &settings.project.as_ref().unwrap().ignored;
        for key in ["context_window", "models.\"anthropic/claude-opus-5-5\"", "models.\"claude-opus-5-5\""] {
            assert!(ignored.iter().any(|i| i == key), "{key} not in {ignored:?}");
        }
        // Trusted, the same file applies: its full-name entry over the user's.
        let trusted = settings_from(USER, HOSTILE, true);
        let model = session_model(&trusted).unwrap();
        assert_eq!(model.context_window, Some(1_000));
        assert_eq!(model.costing.describe_total(&Usage::new(1_000, 1_000)), "$0.0000");
    }

    #[test]
    fn a_long_context_sum_is_shown_as_at_most_and_a_cost_limit_gets_the_prices() {
        let mut settings = settings_from("model = \"openai/gpt-6.2-sol\"\n", "", false);
        let model = session_model(&settings).unwrap();
        assert_eq!(model.context_window, Some(1_050_000));
        assert_eq!(model.prompt_window(), Some(922_000), "the input limit is the smaller");
        // Rounds of cached prompt summing to 300,000 tokens, past the 272,000
        // threshold: every token at the higher price, 300,000 × $0.20 per
        // million = $0.06.
        let mut cached = Usage::new(0, 0);
        cached.cache_read = 300_000;
        assert_eq!(model.costing.describe_total(&cached), "at most $0.0600");
        // Uncached input may also hide cache writes (a lower bound): neither
        // bound holds, so nothing is claimed.
        assert_eq!(model.costing.describe_total(&Usage::new(300_000, 0)), "cost unknown");
        assert_eq!(model.costing.describe_total(&Usage::new(1_000, 0)), "at least $0.0020");
        let pricing = super::pricing(&settings).unwrap();
        assert_eq!(pricing.cost_micros(&Usage::new(0, 1_000)), Some(10_000), "1,000 × $10 per million");
        settings.model = Some("openrouter/unpriced".to_owned());
        assert!(super::pricing(&settings).is_none(), "no limit against a made-up price");
        settings.model = None;
        let local = super::pricing(&settings).unwrap();
        assert_eq!(local.cost_micros(&Usage::new(1_000_000, 1_000_000)), Some(0));
    }

    #[test]
    fn whether_images_go_comes_from_the_table_the_users_config_and_never_for_a_local_model() {
        let model = |user: &str, project: &str| session_model(&settings_from(user, project, false)).unwrap();
        assert_eq!(model("model = \"anthropic/claude-opus-5-5\"\n", "").images, Support::Yes);
        assert_eq!(model("model = \"deepseek/deepseek-chat\"\n", "").images, Support::No);
        assert_eq!(model("model = \"ollama/llava\"\n", "").images, Support::Unknown);
        let vision = "model = \"deepseek/deepseek-vl\"\n[models.\"deepseek/deepseek-vl\"]\nimages = true\n";
        assert_eq!(model(vision, "").images, Support::Yes);
        let denied = "[models.\"anthropic/claude-opus-5-5\"]\nimages = false\n";
        assert_eq!(
            model("model = \"anthropic/claude-opus-5-5\"\n", denied).images,
            Support::Yes,
            "untrusted"
        );
        assert_eq!(model("", "").images, Support::No, "the embedded local model");
        assert_eq!(model("model = \"local:/m.gguf\"\n", "").images, Support::No);
    }

    #[test]
    fn bad_model_entries_are_refused_naming_the_key_and_the_file() {
        for (entry, expected) in [
            ("price_input = -1", "price_input = -1"),
            ("price_output = 0.0000001", "finer than a millionth"),
            ("context_window = 0", "context_window = 0"),
            ("price_inptu = 1", "price_inptu"),
        ] {
            let home = tempfile::tempdir().unwrap();
            let dir = tempfile::tempdir().unwrap();
            write(home.path(), ".config/bosun/config.toml", &format!("[models.\"x\"]\n{entry}\n"));
            let home_var = home.path().display().to_string();
            let env = Env::from_pairs(&[("HOME", &home_var)]);
            let error = resolve(dir.path(), &env, None, &crate::config::Overrides::default()).unwrap_err();
            let shown = format!("{error:#}");
            assert!(shown.contains(expected) && shown.contains("config.toml"), "{entry}: {shown}");
        }
    }
}
