//! Token choice: greedy or temperature/top-p sampling, behind the tool
//! grammar that constrains a call once its opening appears.
//!
//! The grammar waits until one of its trigger patterns matches the output
//! so far; then it is armed, fed the output from the trigger on, and from
//! there every token must continue a valid call. With no tools offered,
//! call openings can be banned instead ([`TokenSampler::ban_first`] and the
//! `banned` tokens).
//!
//! bosun arms the grammar itself rather than through llama.cpp's lazy
//! grammar, and checks every token against it before accepting it: llama.cpp
//! throws (through C, so the process aborts) when its grammar is made to
//! accept text it refuses, such as a trigger token that carries text no call
//! can start with (`<tool_call>` then three newlines in one token). Refused,
//! the generation continues without the grammar.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use regex::Regex;

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
/// apart from it, the tool grammar.
///
/// As llama.cpp's `common_sampler` does, the token is first chosen without
/// the grammar and then checked against it alone; only when the grammar
/// refuses it is the grammar applied to the whole vocabulary and the choice
/// made again. Checking all 150k tokens of a Qwen vocabulary costs tens of
/// milliseconds, one token almost nothing.
pub(crate) struct TokenSampler<'m> {
    model: &'m LlamaModel,
    grammar: Grammar<'m>,
    /// Applied to the first token only (see [`TokenSampler::ban_first`]).
    first: Option<LlamaSampler>,
    choice: LlamaSampler,
    /// Whether a grammar was asked for and has held so far.
    constrained: bool,
}

/// Where the tool grammar stands.
enum Grammar<'m> {
    /// None asked for, or given up.
    Off,
    /// Waiting for a trigger in the output so far (`seen`).
    Waiting { grammar: &'m ToolGrammar, triggers: Vec<Regex>, seen: Vec<u8> },
    /// Every token from here on must continue the call.
    Armed(LlamaSampler),
}

impl std::fmt::Debug for TokenSampler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSampler").field("constrained", &self.constrained).finish_non_exhaustive()
    }
}

impl<'m> TokenSampler<'m> {
    /// A sampler for one generation; without the grammar (and a warning) if
    /// llama.cpp refuses it. With `required`, the grammar applies from the
    /// first token: the output is calls and nothing else. `banned` tokens
    /// are never chosen.
    pub(crate) fn new(
        model: &'m LlamaModel,
        sampling: Sampling,
        grammar: Option<&'m ToolGrammar>,
        required: bool,
        banned: &[LlamaToken],
    ) -> Self {
        let grammar = match grammar {
            None => Grammar::Off,
            Some(g) if required => match LlamaSampler::grammar(model, &g.gbnf, g.required_root) {
                Ok(sampler) => Grammar::Armed(sampler),
                Err(e) => refused(&e),
            },
            Some(g) => match g.patterns.iter().map(|p| Regex::new(p)).collect::<Result<Vec<_>, _>>() {
                Ok(triggers) => Grammar::Waiting { grammar: g, triggers, seen: Vec::new() },
                Err(e) => refused(&e),
            },
        };
        let constrained = !matches!(grammar, Grammar::Off);
        let mut choice = choice(sampling);
        if !banned.is_empty() {
            choice = LlamaSampler::chain_simple([ban(model, banned), choice]);
        }
        Self { model, grammar, first: None, choice, constrained }
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
        let model = self.model;
        // `None`: nothing changes; `Some(None)`: the grammar refused;
        // `Some(Some(sampler))`: a trigger armed it.
        let change = match &mut self.grammar {
            Grammar::Off => None,
            Grammar::Armed(grammar) => {
                if !allows(grammar, token) {
                    let mut candidates = context.token_data_array_ith(index);
                    candidates.apply_sampler(grammar);
                    candidates.apply_sampler(&mut self.choice);
                    token = candidates.selected_token()?;
                }
                if allows(grammar, token) {
                    grammar.accept(token);
                    None
                } else {
                    Some(None)
                }
            }
            Grammar::Waiting { grammar, triggers, seen } => {
                seen.extend_from_slice(&model.vocab().token_to_piece(token, true, None));
                trigger_start(triggers, seen).map(|start| arm(model, grammar, &seen[start..]))
            }
        };
        match change {
            None => {}
            Some(Some(sampler)) => self.grammar = Grammar::Armed(sampler),
            Some(None) => self.give_up(token),
        }
        self.choice.accept(token);
        Some(token)
    }

    fn give_up(&mut self, token: LlamaToken) {
        tracing::warn!(
            token = token.0,
            "the tool grammar refused a token; the rest of this output is unconstrained"
        );
        self.grammar = Grammar::Off;
        self.constrained = false;
    }
}

/// The grammar from its root, fed `text` (the output from the trigger on);
/// `None` when llama.cpp refuses the grammar or the grammar the text.
fn arm(model: &LlamaModel, grammar: &ToolGrammar, text: &[u8]) -> Option<LlamaSampler> {
    let mut sampler = LlamaSampler::grammar(model, &grammar.gbnf, ROOT).ok()?;
    for token in spelling(model, text)? {
        if !allows(&mut sampler, token) {
            return None;
        }
        sampler.accept(token);
    }
    Some(sampler)
}

/// A grammar or trigger llama.cpp or the regex engine would not take.
fn refused<'m>(error: &dyn std::fmt::Display) -> Grammar<'m> {
    tracing::warn!("the tool grammar was refused ({error}); calls are unconstrained");
    Grammar::Off
}

/// Whether `grammar` lets `token` come next: the token alone, given to the
/// grammar, keeps a finite logit. Accepting only such tokens is what keeps
/// llama.cpp from throwing.
pub(super) fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut alone = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    alone.apply_sampler(grammar);
    alone.data.first().is_some_and(|d| d.logit().is_finite())
}

/// Where the grammar starts in `seen` if a trigger matched it: the first
/// non-empty capture group, else the match. Matched over the whole
/// characters so far (a token may end inside one), as llama.cpp's lazy
/// grammar does over its buffer.
fn trigger_start(triggers: &[Regex], seen: &[u8]) -> Option<usize> {
    let text = match std::str::from_utf8(seen) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&seen[..e.valid_up_to()]).ok()?,
    };
    triggers.iter().find_map(|trigger| {
        let captures = trigger.captures(text)?;
        let group = captures.iter().skip(1).flatten().find(|m| !m.is_empty());
        Some(group.or(captures.get(0))?.start())
    })
}

/// Tokens whose pieces spell `text` exactly: the vocabulary's own
/// tokenization when it spells it (a SentencePiece vocabulary may put a
/// space in front), else one token per byte.
fn spelling(model: &LlamaModel, text: &[u8]) -> Option<Vec<LlamaToken>> {
    let vocab = model.vocab();
    let tokens = vocab.tokenize(text, false, false);
    let spelled: Vec<u8> = tokens.iter().flat_map(|t| vocab.token_to_piece(*t, true, None)).collect();
    if spelled == text {
        return Some(tokens);
    }
    let bytes = byte_tokens(model);
    text.iter().map(|b| bytes[usize::from(*b)]).collect()
}

/// For each byte, a token whose piece is that byte alone (the first in the
/// vocabulary), if any: one pass over the vocabulary.
pub(super) fn byte_tokens(model: &LlamaModel) -> [Option<LlamaToken>; 256] {
    let vocab = model.vocab();
    let mut bytes = [None; 256];
    for id in 0..model.n_vocab() {
        let token = LlamaToken(id);
        if let [byte] = vocab.token_to_piece(token, true, None)[..] {
            bytes[usize::from(byte)].get_or_insert(token);
        }
    }
    bytes
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A vocabulary whose tokenizer puts a space in front of text, as
    /// SentencePiece's do by default.
    fn prefixing() -> (tempfile::TempDir, LlamaModel) {
        use llama_cpp_2::model::params::LlamaModelParams;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prefixing.gguf");
        let mut gguf = bosun_testing::TinyModel::new().to_gguf().unwrap();
        gguf.set("tokenizer.ggml.add_space_prefix", bosun_testing::GgufValue::Bool(true));
        gguf.write(&path).unwrap();
        let backend = super::super::backend().unwrap();
        let params = LlamaModelParams::default().with_vocab_only(true);
        let model = LlamaModel::load_from_file(backend, &path, &params).unwrap();
        (dir, model)
    }

    #[test]
    fn a_spelling_writes_exactly_the_text_even_where_the_tokenizer_adds_a_space() {
        let (_dir, model) = prefixing();
        let vocab = model.vocab();
        let pieces = |tokens: &[LlamaToken]| -> String {
            let bytes: Vec<u8> = tokens.iter().flat_map(|t| vocab.token_to_piece(*t, true, None)).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        assert_eq!(pieces(&vocab.tokenize(b"abc", false, false)), " abc", "the vocabulary adds a space");
        for text in ["abc", "<tool_call>\n{\"name\"", "```json é", ""] {
            assert_eq!(pieces(&spelling(&model, text.as_bytes()).unwrap_or_default()), text);
        }
        let (plain, _) = super::super::gbnf::tests::vocabulary();
        let text = "<tool_call>\n{\"name\"";
        let spelled = spelling(plain, text.as_bytes()).unwrap_or_default();
        assert_eq!(
            spelled,
            plain.vocab().tokenize(text.as_bytes(), false, false),
            "its own tokens when they spell it"
        );
    }

    #[test]
    fn a_trigger_starts_the_grammar_at_its_first_non_empty_group() {
        let triggers = [
            Regex::new(r#"^\s*((?:```(?:json)?\s*)?\[?\s*\{\s*"name")[\s\S]*$"#).unwrap(),
            Regex::new("<tool_call>").unwrap(),
        ];
        assert_eq!(trigger_start(&triggers, b"  {\"name\": 1"), Some(2));
        assert_eq!(trigger_start(&triggers, b"text <tool_call>"), Some(5));
        assert_eq!(trigger_start(&triggers, b"text {\"name\""), None, "JSON after text is no call");
        // A token that ends inside a character: matched over the whole ones.
        assert_eq!(trigger_start(&triggers, b"<tool_call>\xC3"), Some(0));
        assert_eq!(trigger_start(&triggers, b"\xC3"), None);
    }
}
