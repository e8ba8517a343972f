//! Token choice: greedy or temperature/top-p sampling, behind llama.cpp's lazy
//! grammar sampler that constrains a tool call once its opening appears.
//!
//! The grammar comes from the active tools' schemas through llama.cpp's
//! `json_schema_to_grammar`: a call is a JSON object whose `name` is one of
//! the tools and whose `arguments` follow that tool's schema. The sampler
//! stays unconstrained until a call opens (`<tool_call>` anywhere, or JSON
//! starting like a call at the very start of the output; see [`tool_grammar`]
//! for the exact forms and which of the parser's
//! [`CALL_TRIGGERS`](crate::toolcall::CALL_TRIGGERS) are left out); from
//! there on every token must continue a valid call.
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

use bosun_core::{GenerationOptions, ToolDefinition};

/// The grammar rule the wrapper grammar starts at.
const ROOT: &str = "bosun-root";
/// The Hermes call tags.
const TOOL_OPEN: &str = "<tool_call>";
const TOOL_CLOSE: &str = "</tool_call>";

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

/// A lazy grammar for tool calls: GBNF text and the patterns that switch it on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolGrammar {
    /// The grammar, rooted at [`ROOT`].
    pub(crate) gbnf: String,
    /// Regular expressions (ECMAScript, as llama.cpp's `std::regex`) over the
    /// output so far; the grammar applies from the first capture group on.
    pub(crate) patterns: Vec<String>,
}

/// Builds the tool-call grammar for `tools`, or says why it cannot.
///
/// One call is `{"name": "<tool>", "arguments": <object valid for that
/// tool's schema>}`, or a JSON list of them. Two of the parser's triggers
/// switch the grammar on:
/// - `<tool_call>` anywhere: then one or more `<tool_call>` blocks, each
///   holding a call or a list, closed by `</tool_call>`;
/// - `{"name"` or `[{"name"` (spaces allowed) at the very start of the
///   output, possibly inside a ```` ```json ```` fence: then one call or one
///   list (and the closing fence, if one opened), and the end (a small model
///   otherwise repeats the call until its token limit). Only at the start, as
///   llama.cpp does for Hermes models, so JSON the person asked for is not
///   forced into a call.
///
/// Not constrained: `<function=name>…` (its arguments are not one JSON value
/// after the trigger) and fences that do not open the output; the parser
/// still reads them.
pub(crate) fn tool_grammar(tools: &[ToolDefinition], triggers: &[&str]) -> Result<ToolGrammar, String> {
    if tools.is_empty() {
        return Err("no tools".into());
    }
    let schema = call_schema(tools)?;
    let mut gbnf = llama_cpp_2::json_schema_to_grammar(&schema)
        .map_err(|e| format!("llama.cpp could not turn the tool schemas into a grammar: {e}"))?;
    let mut forms = Vec::new();
    let mut patterns = Vec::new();
    if triggers.contains(&TOOL_OPEN) {
        forms.push("bosun-tagged");
        patterns.push(regex_escape(TOOL_OPEN));
    }
    if triggers.iter().any(|t| t.trim_start_matches('[').replace(' ', "") == "{\"name\"") {
        forms.push("bosun-bare");
        patterns.push(r#"^\s*((?:```(?:json)?\s*)?\[?\s*\{\s*"name")[\s\S]*$"#.to_owned());
    }
    if forms.is_empty() {
        return Err("the tool-call parser offers no trigger the grammar knows".into());
    }
    let open = gbnf_literal(TOOL_OPEN);
    let close = gbnf_literal(TOOL_CLOSE);
    gbnf.push_str(&format!(
        "\n{ROOT} ::= {}\n\
         bosun-calls ::= root | \"[\" space root (space \",\" space root)* space \"]\"\n\
         bosun-tagged ::= {open} space bosun-calls space {close} (space {open} space bosun-calls space {close})*\n\
         bosun-bare ::= bosun-calls | \"```\" \"json\"? space bosun-calls space \"```\"\n",
        forms.join(" | ")
    ));
    Ok(ToolGrammar { gbnf, patterns })
}

/// The JSON Schema of one call: one alternative per tool.
fn call_schema(tools: &[ToolDefinition]) -> Result<String, String> {
    // Built as text so `name` comes before `arguments` whatever serde_json's
    // map order is: the grammar fixes the property order.
    let mut alternatives = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = serde_json::to_string(&tool.name).map_err(|e| e.to_string())?;
        let parameters = if tool.parameters.is_object() {
            serde_json::to_string(&tool.parameters).map_err(|e| e.to_string())?
        } else {
            r#"{"type":"object"}"#.to_owned()
        };
        alternatives.push(format!(
            r#"{{"type":"object","properties":{{"name":{{"const":{name}}},"arguments":{parameters}}},"required":["name","arguments"],"additionalProperties":false}}"#
        ));
    }
    Ok(format!(r#"{{"anyOf":[{}]}}"#, alternatives.join(",")))
}

/// `text` as an ECMAScript regular expression matching it literally.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a GBNF string literal.
fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
    /// llama.cpp refuses it. `banned` tokens are never chosen.
    pub(crate) fn new(
        model: &LlamaModel,
        sampling: Sampling,
        grammar: Option<&ToolGrammar>,
        banned: &[LlamaToken],
    ) -> Self {
        let grammar = grammar.and_then(|g| {
            LlamaSampler::grammar_lazy_patterns(model, &g.gbnf, ROOT, &g.patterns, &[])
                .map_err(|e| {
                    tracing::warn!("llama.cpp refused the tool grammar ({e}); calls are unconstrained")
                })
                .ok()
        });
        let constrained = grammar.is_some();
        let mut choice = choice(sampling);
        if !banned.is_empty() {
            let biases: Vec<LlamaLogitBias> =
                banned.iter().map(|token| LlamaLogitBias::new(*token, f32::NEG_INFINITY)).collect();
            choice = LlamaSampler::chain_simple([LlamaSampler::logit_bias(model.n_vocab(), &biases), choice]);
        }
        Self { grammar, first: None, choice, constrained }
    }

    /// Whether tool calls were constrained by the grammar throughout.
    pub(crate) fn constrained(&self) -> bool {
        self.constrained
    }

    /// Never chooses one of `tokens` as the first token of the output.
    pub(crate) fn ban_first(&mut self, model: &LlamaModel, tokens: &[LlamaToken]) {
        let biases: Vec<LlamaLogitBias> =
            tokens.iter().map(|token| LlamaLogitBias::new(*token, f32::NEG_INFINITY)).collect();
        self.first = Some(LlamaSampler::logit_bias(model.n_vocab(), &biases));
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
    use serde_json::json;

    use super::*;

    #[test]
    fn the_call_schema_puts_name_before_arguments() {
        let tools = [ToolDefinition::new("read_file", "", json!({"type": "object"}))];
        let schema = call_schema(&tools).unwrap_or_default();
        let name = schema.find("\"name\"").unwrap_or(usize::MAX);
        let arguments = schema.find("\"arguments\"").unwrap_or(0);
        assert!(name < arguments, "{schema}");
    }

    #[test]
    fn the_grammar_is_switched_on_by_tags_anywhere_and_json_at_the_start() {
        let tools = [ToolDefinition::new("read_file", "", json!({"type": "object"}))];
        let grammar = tool_grammar(&tools, crate::toolcall::CALL_TRIGGERS).unwrap();
        assert!(grammar.gbnf.contains("bosun-root ::= bosun-tagged | bosun-bare"), "{}", grammar.gbnf);
        assert_eq!(grammar.patterns[0], "<tool_call>");
        assert!(grammar.patterns[1].starts_with('^') && grammar.patterns[1].ends_with('$'));
        assert!(tool_grammar(&tools, &["<function="]).is_err());
        assert!(tool_grammar(&[], crate::toolcall::CALL_TRIGGERS).is_err());
    }

    #[test]
    fn regex_escape_quotes_metacharacters() {
        assert_eq!(regex_escape("a.b[c]{d}"), r"a\.b\[c\]\{d\}");
    }

    #[test]
    fn gbnf_literals_escape_quotes_and_newlines() {
        assert_eq!(gbnf_literal("a\"b\\\n"), r#""a\"b\\\n""#);
    }
}
