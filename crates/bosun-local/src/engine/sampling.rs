//! Token choice: greedy or temperature/top-p sampling, behind llama.cpp's lazy
//! grammar sampler that constrains a tool call once its opening appears.
//!
//! The grammar (`grammar`) stays off until a call opens; from there on every
//! token must continue a valid call. With no tools offered, call openings
//! can be banned instead ([`TokenSampler::ban_first`] and the `banned` tokens).
//!
//! Tokens are chosen here rather than by `llama_sampler_sample`, so that a
//! grammar that refuses a token reports an error (llama.cpp throws, and the
//! `llama-cpp-2` wrapper catches it in `try_accept`) instead of aborting the
//! process; the generation then continues without the grammar. That happens
//! when the token completing a trigger carries text the grammar cannot
//! start with (say `<tool_call>` then three newlines in one token).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;

use bosun_core::GenerationOptions;

use super::grammar::{ROOT, ToolGrammar};

/// How tokens are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sampling {
    /// `None` (or ≤ 0): greedy.
    pub(crate) temperature: Option<f32>,
    /// Nucleus sampling, when sampling.
    pub(crate) top_p: Option<f32>,
    /// Seed of the random choice.
    pub(crate) seed: u32,
}

impl Sampling {
    /// Greedy when the request sets no temperature or zero (deterministic).
    pub(crate) fn from_options(options: &GenerationOptions, seed: u32) -> Self {
        Self { temperature: options.temperature.filter(|t| *t > 0.0), top_p: options.top_p, seed }
    }
}

/// Chooses tokens for one generation: the choice (greedy or sampling) and,
/// apart from it, the lazy tool grammar.
///
/// As llama.cpp's `common_sampler` does, the token is first chosen without
/// the grammar and then checked against it alone; only when the grammar
/// refuses it is the grammar applied to the whole vocabulary and the choice
/// made again. Checking all 150k tokens of a Qwen vocabulary costs tens of
/// milliseconds, one token almost nothing.
pub(crate) struct TokenSampler {
    grammar: Option<LlamaSampler>,
    /// Applied to the first token only (see [`TokenSampler::ban_first`]).
    first: Option<LlamaSampler>,
    choice: LlamaSampler,
    /// Whether a grammar was asked for and has held so far.
    constrained: bool,
}

impl std::fmt::Debug for TokenSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSampler").field("constrained", &self.constrained).finish_non_exhaustive()
    }
}

impl TokenSampler {
    /// A sampler for one generation; without the grammar (and a warning) if
    /// llama.cpp refuses it. With `required`, the grammar applies from the
    /// first token: the output is calls and nothing else. `banned` tokens
    /// are never chosen.
    pub(crate) fn new(
        model: &LlamaModel,
        sampling: Sampling,
        grammar: Option<&ToolGrammar>,
        required: bool,
        banned: &[LlamaToken],
    ) -> Self {
        let grammar = grammar.and_then(|g| {
            let sampler = if required {
                LlamaSampler::grammar(model, &g.gbnf, g.required_root)
            } else {
                LlamaSampler::grammar_lazy_patterns(model, &g.gbnf, ROOT, &g.patterns, &[])
            };
            sampler
                .map_err(|e| {
                    tracing::warn!("llama.cpp refused the tool grammar ({e}); calls are unconstrained")
                })
                .ok()
        });
        let constrained = grammar.is_some();
        let mut choice = choice(sampling);
        if !banned.is_empty() {
            choice = LlamaSampler::chain_simple([ban(model, banned), choice]);
        }
        Self { grammar, first: None, choice, constrained }
    }

    /// Whether tool calls were constrained by the grammar throughout.
    pub(crate) fn constrained(&self) -> bool {
        self.constrained
    }

    /// Never chooses one of `tokens` as the first token of the output.
    pub(crate) fn ban_first(&mut self, model: &LlamaModel, tokens: &[LlamaToken]) {
        self.first = Some(ban(model, tokens));
    }

    /// Chooses the next token from the logits at batch index `index`.
    pub(crate) fn sample(&mut self, context: &LlamaContext<'_>, index: i32) -> Option<LlamaToken> {
        let mut candidates = context.token_data_array_ith(index);
        if let Some(mut first) = self.first.take() {
            candidates.apply_sampler(&mut first);
        }
        candidates.apply_sampler(&mut self.choice);
        let mut token = candidates.selected_token()?;
        if let Some(grammar) = self.grammar.as_mut() {
            let mut alone = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
            alone.apply_sampler(grammar);
            if !alone.data.first().is_some_and(|d| d.logit().is_finite()) {
                let mut candidates = context.token_data_array_ith(index);
                candidates.apply_sampler(grammar);
                candidates.apply_sampler(&mut self.choice);
                token = candidates.selected_token()?;
            }
            if grammar.try_accept(token).is_err() {
                tracing::warn!(
                    token = token.0,
                    "the tool grammar refused a token; the rest of this output is unconstrained"
                );
                self.grammar = None;
                self.constrained = false;
            }
        }
        self.choice.accept(token);
        Some(token)
    }
}

/// A sampler that rules `tokens` out.
fn ban(model: &LlamaModel, tokens: &[LlamaToken]) -> LlamaSampler {
    let biases: Vec<LlamaLogitBias> =
        tokens.iter().map(|token| LlamaLogitBias::new(*token, f32::NEG_INFINITY)).collect();
    LlamaSampler::logit_bias(model.n_vocab(), &biases)
}

/// The choice: greedy, or top-p, temperature and a seeded draw.
fn choice(sampling: Sampling) -> LlamaSampler {
    match sampling.temperature {
        None => LlamaSampler::greedy(),
        Some(temperature) => {
            let mut samplers = Vec::new();
            if let Some(p) = sampling.top_p.filter(|p| *p > 0.0 && *p < 1.0) {
                samplers.push(LlamaSampler::top_p(p, 1));
            }
            samplers.push(LlamaSampler::temp(temperature));
            samplers.push(LlamaSampler::dist(sampling.seed));
            LlamaSampler::chain_simple(samplers)
        }
    }
}
