//! The embedded table, the lookup rule, costs against figures worked by
//! hand, and the checks a broken table fails.

use bosun_core::Usage;

use super::*;

fn table() -> ModelTable {
    ModelTable::builtin().unwrap()
}

fn usage(input: u64, cache_read: u64, cache_write: u64, output: u64, reasoning: u64) -> Usage {
    let mut usage = Usage::new(input, output);
    usage.cache_read = cache_read;
    usage.cache_write = cache_write;
    usage.reasoning = reasoning;
    usage
}

fn dollars(value: f64) -> Price {
    Price::from_dollars_per_million(value).unwrap()
}

/// `$amount` as picodollars, for readable expectations.
fn pico(whole_micro_dollars: u128) -> u128 {
    whole_micro_dollars * 1_000_000
}

fn cost(provider: &str, model: &str, used: &Usage) -> Option<Cost> {
    let table = table();
    let info = table.find(provider, model).unwrap();
    table.pricing(provider, info).cost_of_response(used)
}

#[test]
fn the_embedded_table_parses_and_covers_the_presets() {
    let table = table();
    for preset in ProviderConfig::PRESETS {
        assert!(table.knows_provider(preset), "{preset} has no providers entry");
    }
    for model in table.models() {
        assert!(ProviderConfig::preset(&model.provider).is_some(), "{} is not a preset", model.provider);
        assert!(model.checked.is_some() && !model.sources.is_empty(), "{}", model.id);
    }
    // The presets carry no default model; the first-party APIs' current
    // models are in the table.
    for provider in ["anthropic", "openai", "gemini"] {
        assert!(table.models().iter().any(|m| m.provider == provider), "no {provider} model");
    }
    let opus = table.find("anthropic", "claude-opus-5-5").unwrap();
    assert_eq!((opus.context_window, opus.max_output_tokens), (Some(1_000_000), Some(128_000)));
    assert_eq!(opus.prices.input, Some(dollars(4.0)));
}

#[test]
fn lookup_is_exact_then_without_a_dated_snapshot_and_nothing_looser() {
    let table = table();
    let id = |provider: &str, model: &str| table.find(provider, model).map(|m| m.id.as_str());
    assert_eq!(id("anthropic", "claude-haiku-4-5-20251001"), Some("claude-haiku-4-5"));
    assert_eq!(id("anthropic", "CLAUDE-OPUS-5-5"), Some("claude-opus-5-5"));
    assert_eq!(id("openai", "gpt-6.2-sol-2026-11-17"), Some("gpt-6.2-sol"));
    // The Responses preset bills at OpenAI's prices.
    assert_eq!(id("openai-responses", "gpt-6.2-sol"), Some("gpt-6.2-sol"));
    assert_eq!(id("gemini", "models/gemini-3.1-pro-preview"), Some("gemini-3.1-pro-preview"));
    for (provider, model) in [
        ("anthropic", "claude-opus-5-5-fast"),
        ("anthropic", "claude-opus"),
        ("anthropic", "claude-haiku-4-5-2025100"),
        ("openai", "claude-opus-5-5"),
        ("openrouter", "gpt-6.2-sol"),
        ("nope", "gpt-6.2-sol"),
    ] {
        assert_eq!(id(provider, model), None, "{provider}/{model}");
    }
}

#[test]
fn anthropic_cost_prices_cache_reads_and_writes_apart_from_input() {
    // claude-opus-5-5: $4 input, $0.20 cached, $5 written (5 min), $20 out.
    // 1,000 × 4 + 200,000 × 0.20 + 10,000 × 5 + 2,000 × 20 micro-dollars
    // = 4,000 + 40,000 + 50,000 + 40,000 = 134,000 µ$ = $0.1340.
    let used = usage(1_000, 200_000, 10_000, 2_000, 500);
    let spent = cost("anthropic", "claude-opus-5-5", &used).unwrap();
    assert_eq!(spent.picodollars(), pico(134_000));
    assert_eq!(spent.micro_dollars(), 134_000);
    assert!(!spent.is_lower_bound(), "Anthropic reports its cache writes");
    assert_eq!(spent.to_string(), "$0.1340");
}

#[test]
fn openai_long_prompts_are_billed_whole_at_the_higher_tier() {
    // gpt-6.2-sol up to 272K prompt tokens: $2 in, $0.10 cached, $10 out.
    // 50,000 × 2 + 100,000 × 0.10 + 4,000 × 10 = 100,000 + 10,000 + 40,000 µ$.
    let short = usage(50_000, 100_000, 0, 4_000, 3_000);
    let spent = cost("openai", "gpt-6.2-sol", &short).unwrap();
    assert_eq!(spent.picodollars(), pico(150_000));
    // Above: $4 in, $0.20 cached, $15 out for every token of the request.
    // 200,000 × 4 + 100,000 × 0.20 + 1,000 × 15 = 800,000 + 20,000 + 15,000 µ$.
    let long = usage(200_000, 100_000, 0, 1_000, 0);
    assert_eq!(cost("openai", "gpt-6.2-sol", &long).unwrap().picodollars(), pico(835_000));
    // Exactly at the threshold is still the base tier: 272,000 × 2 µ$.
    let edge = usage(272_000, 0, 0, 0, 0);
    assert_eq!(cost("openai", "gpt-6.2-sol", &edge).unwrap().picodollars(), pico(544_000));
    assert_eq!(
        cost("openai", "gpt-6.2-sol", &usage(272_001, 0, 0, 0, 0)).unwrap().picodollars(),
        pico(1_088_004)
    );
}

#[test]
fn a_sum_of_responses_is_priced_only_when_the_tier_of_each_is_known() {
    let table = table();
    let info = table.find("openai", "gpt-6.2-sol").unwrap();
    let pricing = table.pricing("openai", info);
    let round = usage(100_000, 50_000, 0, 1_000, 0);
    let mut two = round;
    two += round;
    // 300,000 prompt tokens in the sum, 150,000 in each: not tellable.
    assert_eq!(pricing.cost_of_total(&two), None);
    // Per response: 2 × (100,000 × 2 + 50,000 × 0.10 + 1,000 × 10) µ$.
    assert_eq!(pricing.cost_of_responses([&round, &round]).unwrap().picodollars(), pico(430_000));
    // A sum within the base tier is exact.
    assert_eq!(pricing.cost_of_total(&round), pricing.cost_of_response(&round));
    // Flat prices: the sum is always exact.
    let opus = table.find("anthropic", "claude-opus-5").unwrap();
    let flat = table.pricing("anthropic", opus);
    let big = usage(900_000, 900_000, 0, 0, 0);
    assert_eq!(flat.cost_of_total(&big), flat.cost_of_response(&big));
}

#[test]
fn an_ambiguous_sum_has_an_upper_bound_and_a_cost_limit_keeps_to_it() {
    use bosun_core::Pricing as _;
    let table = table();
    let pricing = table.pricing("openai", table.find("openai", "gpt-6.2-sol").unwrap());
    let round = usage(100_000, 50_000, 0, 1_000, 0);
    let mut two = round;
    two += round;
    // Every token at the higher tier: 200,000 × 4 + 100,000 × 0.20 + 2,000 × 15.
    assert_eq!(pricing.upper_bound_of_total(&two).unwrap().picodollars(), pico(850_000));
    assert_eq!(pricing.cost_micros(&two), Some(850_000), "a limit is kept against the bound");
    assert_eq!(pricing.cost_micros(&round), Some(215_000), "and against the exact figure when known");
    // Unknown stays unknown.
    let sonnet = table.pricing("anthropic", table.find("anthropic", "claude-sonnet-5-5").unwrap());
    assert_eq!(sonnet.cost_micros(&usage(1, 1, 0, 1, 0)), None);
}

#[test]
fn openai_costs_are_a_lower_bound_while_its_cache_writes_are_not_decoded() {
    // OpenAI bills cache writes above the input price; bosun's decoders
    // leave written tokens in `input`, so some input may cost more.
    let spent = cost("openai", "gpt-6.2-sol", &usage(10, 0, 0, 0, 0)).unwrap();
    assert!(spent.is_lower_bound());
    assert_eq!(spent.to_string(), "at least <$0.0001");
    // With no uncached input there is nothing hidden.
    assert!(!cost("openai", "gpt-6.2-sol", &usage(0, 10, 0, 10, 0)).unwrap().is_lower_bound());
}

#[test]
fn a_bucket_without_a_confirmed_price_makes_the_cost_unknown() {
    // claude-sonnet-5-5's cache read price is not confirmed.
    assert_eq!(cost("anthropic", "claude-sonnet-5-5", &usage(10, 1, 0, 10, 0)), None);
    // 10 × 2 + 10 × 10 = 120 µ$ when no cache read happened.
    let spent = cost("anthropic", "claude-sonnet-5-5", &usage(10, 0, 0, 10, 0)).unwrap();
    assert_eq!(spent.picodollars(), pico(120));
    // A model with no prices at all.
    assert_eq!(cost("gemini", "gemini-3.1-pro-preview", &usage(1, 0, 0, 1, 0)), None);
    // Nothing used costs nothing, priced or not.
    assert_eq!(cost("gemini", "gemini-3.1-pro-preview", &Usage::default()), Some(Cost::ZERO));
}

#[test]
fn haiku_5_5_switches_tier_on_the_whole_prompt_above_100k() {
    // Base: $0.10 in, $0.125 written, $0.50 out; above 100,000: $0.50,
    // $0.625, $2.50. 60,000 input + 40,000 written = 100,000: base:
    // 60,000 × 0.10 + 40,000 × 0.125 + 1,000 × 0.50 = 6,000 + 5,000 + 500 µ$.
    let at_edge = usage(60_000, 0, 40_000, 1_000, 0);
    assert_eq!(cost("anthropic", "claude-haiku-5-5", &at_edge).unwrap().picodollars(), pico(11_500));
    // One more written token: 60,000 × 0.50 + 40,001 × 0.625 + 1,000 × 2.50
    // = 30,000 + 25,000.625 + 2,500 µ$.
    let over = usage(60_000, 0, 40_001, 1_000, 0);
    let spent = cost("anthropic", "claude-haiku-5-5", &over).unwrap();
    assert_eq!(spent.picodollars(), pico(57_500) + 625_000);
    assert_eq!(spent.to_string(), "$0.0575");
}

#[test]
fn reasoning_left_out_of_output_is_added_at_the_output_price() {
    // The recorded xAI stream (tests/fixtures/providers/openai-chat/
    // xai-reasoning-tool-call.chunks.jsonl): 307 prompt tokens (306 cached),
    // 26 completion and 227 reasoning tokens, and xAI's own figure of
    // 1,497,500 ticks (10⁻¹⁰ USD) = 149.75 µ$. Under per-million prices of
    // $0.30 in, $0.075 cached and $0.50 out (test prices that reproduce it):
    // 1 × 0.30 + 306 × 0.075 + (26 + 227) × 0.50 = 0.30 + 22.95 + 126.5 µ$.
    let table = table();
    let mut info = ModelInfo::new("xai", "grok-test");
    let over = ModelOverride {
        input: Some(dollars(0.3)),
        cached_input: Some(dollars(0.075)),
        output: Some(dollars(0.5)),
        ..ModelOverride::default()
    };
    info.apply(&over);
    let used = usage(1, 306, 0, 26, 227);
    let spent = table.pricing("xai", &info).cost_of_response(&used).unwrap();
    assert_eq!(spent.picodollars(), 149_750_000);
    // Counted as OpenAI counts (reasoning inside output) it would be less.
    let inside = table.pricing("openai", &info).cost_of_response(&used).unwrap();
    assert_eq!(inside.picodollars(), 36_250_000);
}

#[test]
fn a_separate_reasoning_price_applies_to_the_reasoning_part_only() {
    let table = table();
    let mut info = ModelInfo::new("anthropic", "made-up-for-test");
    let over = ModelOverride {
        output: Some(dollars(10.0)),
        reasoning: Some(dollars(2.0)),
        ..ModelOverride::default()
    };
    info.apply(&over);
    // 1,000 output of which 600 reasoning: 400 × 10 + 600 × 2 µ$.
    let spent = table.pricing("anthropic", &info).cost_of_response(&usage(0, 0, 0, 1_000, 600)).unwrap();
    assert_eq!(spent.picodollars(), pico(5_200));
}

#[test]
fn overrides_replace_what_they_set_and_prices_drop_the_tables_tiers() {
    let table = table();
    let mut info = table.find("openai", "gpt-6.2-sol").unwrap().clone();
    let window = ModelOverride { context_window: Some(400_000), ..ModelOverride::default() };
    info.apply(&window);
    assert_eq!(info.context_window, Some(400_000));
    assert!(info.long_context.is_some(), "a window alone keeps the tiers");
    let price = ModelOverride { output: Some(dollars(12.0)), ..ModelOverride::default() };
    info.apply(&price);
    assert_eq!((info.prices.output, info.prices.input), (Some(dollars(12.0)), Some(dollars(2.0))));
    assert_eq!(info.long_context, None);
    let merged = window.merged(price);
    assert_eq!((merged.context_window, merged.output), (Some(400_000), Some(dollars(12.0))));
}

#[test]
fn the_local_engine_is_free() {
    let spent = Pricing::free().cost_of_response(&usage(1_000_000, 5, 5, 1_000_000, 9)).unwrap();
    assert_eq!((spent, spent.to_string()), (Cost::ZERO, "$0.0000".to_owned()));
}

#[test]
fn costs_show_four_decimals_rounded_half_up() {
    let shown = |pico: u128| Cost::from_picodollars(pico).to_string();
    assert_eq!(shown(0), "$0.0000");
    assert_eq!(shown(1), "<$0.0001");
    assert_eq!(shown(49_999_999), "<$0.0001");
    assert_eq!(shown(50_000_000), "$0.0001");
    assert_eq!(shown(12_345_600_000_000), "$12.3456");
    assert_eq!(shown(12_345_650_000_000), "$12.3457");
}

#[test]
fn prices_are_exact_integers_and_bad_ones_are_refused() {
    assert_eq!(dollars(0.125).micros_per_million(), 125_000);
    assert_eq!(dollars(0.1).micros_per_million(), 100_000);
    assert_eq!(dollars(12.5).micros_per_million(), 12_500_000);
    for bad in [-0.01, f64::NAN, f64::INFINITY, 0.000_000_1, 2_000_000.0] {
        assert!(Price::from_dollars_per_million(bad).is_err(), "{bad}");
    }
}

fn one_model(entry: &str) -> Result<ModelTable, ModelTableError> {
    ModelTable::parse(&format!(
        r#"{{"format": 1, "providers": {{"openai": {{}}, "alias": {{"prices_of": "openai"}}}}, "models": [{entry}]}}"#
    ))
}

const GOOD: &str = r#"{"provider": "openai", "id": "m", "context_window": 100, "max_output_tokens": 10,
    "price": {"input": 1, "cached_input": null, "cache_write": null, "output": 2, "reasoning": null},
    "sources": ["https://example.com/pricing"], "checked": "2026-12-02"}"#;

#[test]
fn a_broken_table_is_refused_naming_the_rule() {
    assert!(one_model(GOOD).is_ok());
    for (from, to, expected) in [
        (r#""input": 1"#, r#""input": -1"#, "not a price"),
        (r#""context_window": 100"#, r#""context_window": 0"#, "more than 0"),
        (r#""context_window": 100"#, r#""context_window": -5"#, "does not parse"),
        (r#""max_output_tokens": 10"#, r#""max_output_tokens": 100"#, "less than the context window"),
        (r#""checked": "2026-12-02""#, r#""checked": "2026-13-02""#, "not a YYYY-MM-DD"),
        ("https://example.com", "http://example.com", "https URL"),
        (r#""provider": "openai""#, r#""provider": "alias""#, "another provider's prices"),
        (r#""provider": "openai""#, r#""provider": "other""#, "not in the table's providers"),
        (r#""id": "m""#, r#""id": "m", "colour": "red""#, "does not parse"),
        (r#""id": "m""#, r#""id": "two words""#, "not a model name"),
    ] {
        let entry = GOOD.replace(from, to);
        assert_ne!(entry, GOOD, "{from}");
        let error = one_model(&entry).unwrap_err().to_string();
        assert!(error.contains(expected), "{to}: {error}");
    }
    let twice = format!("{GOOD}, {}", GOOD.replace(r#""id": "m""#, r#""id": "n", "aliases": ["M"]"#));
    assert!(one_model(&twice).unwrap_err().to_string().contains("already names"));
    let unknown_rule =
        ModelTable::parse(r#"{"format": 1, "providers": {"p": {"colour": "red"}}, "models": []}"#);
    assert!(unknown_rule.unwrap_err().to_string().contains("unknown field"));
    // A provider that says nothing counts reasoning in its output.
    let plain = one_model(GOOD).unwrap();
    assert!(plain.pricing("openai", plain.find("openai", "m").unwrap()).output_includes_reasoning);
    let wrong_format = ModelTable::parse(r#"{"format": 2, "providers": {}, "models": []}"#).unwrap_err();
    assert!(matches!(wrong_format, ModelTableError::Format(2)));
}

#[test]
fn images_come_from_the_entry_then_the_provider_and_unknown_providers_say_nothing() {
    let table = table();
    let opus = table.find("anthropic", "claude-opus-5-5");
    assert_eq!(table.images("anthropic", opus), Some(true));
    assert_eq!(table.images("openai", None), Some(true), "a model the table lacks takes its provider's rule");
    assert_eq!(table.images("openai-responses", None), Some(true), "as the provider it bills as");
    assert_eq!(table.images("gemini", None), Some(true));
    assert_eq!(table.images("deepseek", None), Some(false));
    assert_eq!(table.images("ollama", None), None, "a server that runs any model: not known");
    let mut vision = ModelInfo::new("deepseek", "deepseek-vision");
    vision.apply(&ModelOverride { images: Some(true), ..ModelOverride::default() });
    assert_eq!(table.images("deepseek", Some(&vision)), Some(true), "the config's word wins");
    let entry = GOOD.replace(r#""id": "m""#, r#""id": "m", "images": false"#);
    let parsed = one_model(&entry).unwrap();
    assert_eq!(parsed.images("openai", parsed.find("openai", "m")), Some(false));
}

#[test]
fn the_imported_snapshot_parses_and_every_entry_passes_the_rules() {
    // `parse` checks each entry against the table's rules and refuses the
    // whole file on the first broken one.
    let imported = ModelTable::imported().unwrap();
    assert!(imported.models().len() > 100, "{} entries", imported.models().len());
    for model in imported.models() {
        assert!(ProviderConfig::preset(&model.provider).is_some(), "{} is not a preset", model.provider);
        assert!(model.sources.iter().any(|s| s.contains("BerriAI/litellm")), "{}", model.id);
    }
    // Every imported entry is in the merged table unless a hand-written one
    // answers for its name.
    let table = table();
    for model in imported.models() {
        assert!(table.find(&model.provider, &model.id).is_some(), "{}/{}", model.provider, model.id);
    }
}

#[test]
fn common_models_and_their_snapshots_resolve_with_a_window_and_prices() {
    let table = table();
    for (provider, model) in [
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o-2024-08-06"),
        ("openai-responses", "gpt-4o"),
        ("openai", "gpt-4o-mini"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-sonnet-4-5-20250929"),
        ("gemini", "gemini-2.5-pro"),
        ("deepseek", "deepseek-chat"),
        ("mistral", "mistral-large-latest"),
    ] {
        let info = table.find(provider, model).unwrap_or_else(|| panic!("{provider}/{model} not found"));
        assert!(info.context_window.is_some(), "{provider}/{model} has no window");
        assert!(info.prices.input.is_some() && info.prices.output.is_some(), "{provider}/{model} unpriced");
    }
    let gpt4o = table.find("openai", "gpt-4o").unwrap();
    assert_eq!(gpt4o.context_window, Some(128_000));
    assert_eq!((gpt4o.prices.input, gpt4o.prices.output), (Some(dollars(2.5)), Some(dollars(10.0))));
    let sonnet = table.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.context_window, Some(200_000));
    assert_eq!(sonnet.prices.cache_write, Some(dollars(3.75)));
}

#[test]
fn hand_written_entries_win_over_the_import_and_its_snapshots() {
    let table = table();
    let haiku = table.find("anthropic", "claude-haiku-4-5").unwrap();
    assert_eq!(haiku.checked.as_deref(), Some("2026-12-02"));
    assert!(haiku.sources.iter().all(|s| !s.contains("litellm")));
    // The import's dated entry of a hand-written model is left out, so the
    // snapshot resolves to the hand-written entry.
    assert_eq!(
        table.find("anthropic", "claude-haiku-4-5-20251001").map(|m| m.id.as_str()),
        Some("claude-haiku-4-5")
    );
}

#[test]
fn cloud_models_are_found_as_the_clouds_name_them_and_billed_as_their_vendor() {
    let table = table();
    let id = |provider: &str, model: &str| {
        table.find(provider, model).map(|m| (m.provider.as_str(), m.id.as_str()))
    };
    // Vertex: Claude by its `@` snapshot, at Anthropic's prices; Gemini at Gemini's.
    assert_eq!(id("vertex", "claude-sonnet-4-5@20250929"), Some(("anthropic", "claude-sonnet-4-5")));
    assert_eq!(id("vertex", "claude-opus-5-5"), Some(("anthropic", "claude-opus-5-5")));
    assert_eq!(id("vertex", "gemini-2.5-pro"), Some(("gemini", "gemini-2.5-pro")));
    assert_eq!(id("vertex", "claude-sonnet-4-5@2025"), None, "only a dated snapshot is dropped");
    // Bedrock: model ids and cross-region inference profiles, at the vendor's prices.
    let sonnet = Some(("anthropic", "claude-sonnet-4-5"));
    assert_eq!(id("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"), sonnet);
    for geo in ["us", "eu", "apac", "global"] {
        assert_eq!(
            id("bedrock", &format!("{geo}.anthropic.claude-sonnet-4-5-20250929-v1:0")),
            sonnet,
            "{geo}"
        );
    }
    assert_eq!(id("bedrock", "anthropic.claude-sonnet-4-5"), sonnet);
    assert_eq!(id("bedrock", "meta.llama3-70b-instruct-v1:0"), None, "no Meta prices in the table");
    assert_eq!(id("bedrock", "claude-sonnet-4-5"), None, "a Bedrock id names its vendor");
    let opus = table.find("bedrock", "us.anthropic.claude-opus-5-5-20251101-v1:0").unwrap();
    let spent = table.pricing("bedrock", opus).cost_of_response(&usage(1_000, 200_000, 10_000, 2_000, 500));
    assert_eq!(spent.map(|c| c.picodollars()), Some(pico(134_000)), "priced as on Anthropic's API");
    // Azure: a deployment named after its model, at OpenAI's prices.
    assert_eq!(id("azure", "gpt-4o"), Some(("openai", "gpt-4o")));
    assert_eq!(id("azure-responses", "gpt-6.2-sol"), Some(("openai", "gpt-6.2-sol")));
    assert_eq!(id("azure", "my-deployment"), None);
    // Claude on Vertex reports cache writes apart, as Anthropic's API does.
    let opus = table.find("vertex", "claude-opus-5-5@20251101").unwrap();
    let spent = table.pricing("vertex", opus).cost_of_response(&usage(1_000, 200_000, 10_000, 2_000, 500));
    assert_eq!(spent.map(|c| c.picodollars()), Some(pico(134_000)));
    assert_eq!(table.images("vertex", Some(opus)), Some(true));
}

/// Ways a run may name the models of the table (and some it does not
/// have), through presets that bill as themselves, as another, or as no
/// one: each entry's names with one of the variants, the variant and the
/// preset turning with each name, so every model, variant and preset is
/// tried.
fn names_a_run_may_ask_for(table: &ModelTable) -> Vec<(String, String)> {
    let presets: Vec<&str> = ProviderConfig::PRESETS.iter().copied().chain(["vertex", "nope"]).collect();
    let variants: [fn(&str) -> String; 7] = [
        |name| name.to_owned(),
        |name| name.to_ascii_uppercase(),
        |name| format!("{name}-20250929"),
        |name| format!("{name}-2026-11-17"),
        |name| format!("{name}@20250929"),
        |name| format!("models/{name}"),
        |name| format!("{name}-fast"),
    ];
    let mut asked = Vec::new();
    let names = table.models().iter().flat_map(|model| model.names().map(move |name| (model, name)));
    for (turn, (model, name)) in names.enumerate() {
        let variant = variants[turn % variants.len()](name);
        asked.push((model.provider.clone(), variant.clone()));
        asked.push((presets[turn % presets.len()].to_owned(), variant.clone()));
        asked.push(("bedrock".into(), format!("us.{}.{variant}-v1:0", model.provider)));
    }
    asked.push(("openai".into(), "gpt-test".into()));
    asked
}

#[test]
fn a_lookup_in_the_table_cut_down_for_it_finds_what_the_whole_table_finds() {
    let whole = table();
    let hand_written = ModelTable::parse(BUILTIN).unwrap().models().len();
    let asked = names_a_run_may_ask_for(&whole);
    assert!(asked.len() > 700, "{} lookups", asked.len());
    let mut found = 0;
    for (provider, model) in &asked {
        let cut = ModelTable::builtin_for(provider, model).unwrap();
        let (expected, got) = (whole.find(provider, model), cut.find(provider, model));
        assert_eq!(got, expected, "{provider}/{model}");
        if let Some(info) = got {
            found += 1;
            assert_eq!(cut.pricing(provider, info), whole.pricing(provider, info), "{provider}/{model}");
            assert_eq!(
                cut.images(provider, Some(info)),
                whole.images(provider, Some(info)),
                "{provider}/{model}"
            );
        }
        // Nothing of the import but what the lookup names.
        assert!(cut.models().len() <= hand_written + 2, "{provider}/{model}");
    }
    assert!(found > asked.len() / 3, "{found} of {} found", asked.len());
}

#[test]
fn the_cut_down_table_is_kept_for_the_model_last_asked_for() {
    let first = ModelTable::shared_for("openai", "gpt-4o").unwrap();
    assert!(Arc::ptr_eq(&first, &ModelTable::shared_for("openai", "gpt-4o").unwrap()));
    let other = ModelTable::shared_for("anthropic", "claude-opus-5-5").unwrap();
    assert!(!Arc::ptr_eq(&first, &other));
    assert_eq!(other.find("anthropic", "claude-opus-5-5").map(|m| m.id.as_str()), Some("claude-opus-5-5"));
}

/// `imported_index.rs` as it must read for the import as it is.
fn imported_index_source() -> String {
    #[derive(serde::Deserialize)]
    struct Spans<'a> {
        #[serde(borrow)]
        models: Vec<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Names {
        provider: String,
        id: String,
        #[serde(default)]
        aliases: Vec<String>,
    }
    let spans: Spans = serde_json::from_str(IMPORTED).unwrap();
    let mut entries = Vec::new();
    for entry in spans.models {
        let start = entry.get().as_ptr() as usize - IMPORTED.as_ptr() as usize;
        let end = start + entry.get().len();
        let names: Names = serde_json::from_str(entry.get()).unwrap();
        for name in std::iter::once(&names.id).chain(&names.aliases) {
            entries.push((names.provider.clone(), name.to_ascii_lowercase(), start, end));
        }
    }
    entries.sort();
    let providers = ModelTable::imported().unwrap().providers;
    let mut text = String::from(
        "//! Where each entry of `data/models-litellm.json` is: its provider, each\n\
         //! of its names in ASCII lower case and the byte range of its text,\n\
         //! sorted by provider and name, so that a run parses only the entries\n\
         //! its model could be. Written by the test\n\
         //! `models::tests::the_index_of_the_import_is_written_from_it` when\n\
         //! `BOSUN_WRITE_MODEL_INDEX=1` (after `scripts/refresh-models`); it fails\n\
         //! while this file does not match the import.\n\n\
         /// The import's providers.\n\
         #[rustfmt::skip]\n\
         pub(super) const PROVIDERS: &[&str] = &[\n",
    );
    for name in providers.keys() {
        text += &format!("    {name:?},\n");
    }
    text += "];\n\n/// `(provider, name, start, end)`.\n#[rustfmt::skip]\npub(super) const ENTRIES: &[(&str, &str, usize, usize)] = &[\n";
    for (provider, name, start, end) in entries {
        text += &format!("    ({provider:?}, {name:?}, {start}, {end}),\n");
    }
    text + "];\n"
}

#[test]
fn the_index_of_the_import_is_written_from_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/models/imported_index.rs");
    let expected = imported_index_source();
    if std::env::var_os("BOSUN_WRITE_MODEL_INDEX").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == expected,
        "src/models/imported_index.rs does not match data/models-litellm.json: run \
         BOSUN_WRITE_MODEL_INDEX=1 cargo test -p bosun-providers --lib the_index_of_the_import"
    );
    // The cut-down table gives the import's providers the rules an empty
    // entry gives; the import sets none.
    assert_eq!(ModelTable::imported().unwrap().providers, imported_providers());
}
