//! Every hosted model bosun's own words name — the README, the docs, the
//! command-line help and the error messages that give an example — is in
//! the model table with a context window and input and output prices, so a
//! person who copies one sees a cost and no unknown-window warning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use bosun_providers::ModelTable;

/// Presets whose models the table prices (a self-hosted server's models
/// have no public price).
const PRICED: &[&str] = &[
    "openai",
    "openai-responses",
    "anthropic",
    "gemini",
    "openrouter",
    "groq",
    "deepseek",
    "mistral",
    "xai",
];

/// Files whose model ids are test names, not advice (a mock's `gpt-test`).
const NOT_ADVICE: &[&str] = &["benchmarks.md"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `PROVIDER/MODEL` spans of a priced preset in `text`.
fn named_models(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices('/') {
        let before = &text[..start];
        let provider_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
        let provider = &before[provider_start..];
        if !PRICED.contains(&provider) {
            continue;
        }
        // A path such as `crates/openai/…` or a URL is no model.
        if before[..provider_start].ends_with(['/', '.']) {
            continue;
        }
        let rest = &text[start + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_' | '/')))
            .unwrap_or(rest.len());
        // Groq's ids hold a slash (`groq/openai/gpt-oss-120b`).
        let model = rest[..end].trim_end_matches(['.', ':', '-', '/']);
        if !model.is_empty() {
            found.push((provider.to_owned(), model.to_owned()));
        }
    }
    found
}

fn sources() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![
        root.join("README.md"),
        root.join("crates/bosun-cli/src/cli.rs"),
        root.join("crates/bosun-agent/src/model.rs"),
        root.join("crates/bosun-providers/src/config.rs"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".md") && !NOT_ADVICE.contains(&name.as_str()) {
            files.push(path);
        }
    }
    files
}

#[test]
fn every_model_the_docs_and_help_name_has_a_window_and_prices() {
    let table = ModelTable::shared().unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (provider, model) in named_models(&text) {
            checked += 1;
            let shown =
                format!("{provider}/{model} ({})", file.strip_prefix(root()).unwrap_or(&file).display());
            match table.find(&provider, &model) {
                None => missing.push(format!("{shown}: not in the table")),
                Some(info) => {
                    if info.context_window.is_none() {
                        missing.push(format!("{shown}: no context window"));
                    }
                    if info.prices.input.is_none() || info.prices.output.is_none() {
                        missing.push(format!("{shown}: no input or output price"));
                    }
                }
            }
        }
    }
    assert!(checked >= 5, "only {checked} model names found: is the scan broken?");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_scan_finds_models_and_skips_paths() {
    let text = "use `anthropic/claude-sonnet-4-5`, or groq/openai/gpt-oss-120b. \
                Not crates/openai/x nor https://x.ai/openai/y; ollama/llama3.2 has no price.";
    assert_eq!(
        named_models(text),
        [
            ("anthropic".to_owned(), "claude-sonnet-4-5".to_owned()),
            ("groq".to_owned(), "openai/gpt-oss-120b".to_owned())
        ]
    );
}
