//! Tiny GGUF models built by the tests themselves: a GGUF (version 3) writer,
//! [`Gguf`], and [`TinyModel`], a builder of llama-architecture models of
//! under a megabyte whose answers are programmed, not learned.
//!
//! How a [`TinyModel`] answers: one block whose attention output and
//! feed-forward down projection are zero (its query, key, value, gate and up
//! projections hold seeded pseudo-random values: the "random weights"), so the
//! residual stream is the token's embedding; embeddings are one-hot
//! (`n_embd` ≥ the vocabulary) and every norm is 1, so the logits are
//! `output.weight` times a scaled one-hot vector: `output.weight` is a bigram
//! table. [`TinyModel::after`] programs it: after `token` the model says
//! `next`. A token with no programmed successor prefers the end of the turn
//! (`<|im_end|>`), weakly. Greedy decoding therefore replays the program
//! exactly; of the prompt only the last token matters.
//!
//! Where nothing is programmed (say a grammar refused the programmed token)
//! the remaining logits tie at zero and llama.cpp's greedy choice takes the
//! lowest id. The vocabulary lists the special tokens first, then the
//! caller's words in the order they were named, then the space `▁`, then the
//! 256 byte tokens, so a word (say `{`) wins over whitespace wherever both
//! fit.
//!
//! The tokenizer is SentencePiece's (`tokenizer.ggml.model` = `llama`): a word
//! with a space in front is the token `▁word`, a space alone is `▁`, and text
//! is otherwise tokenized as bytes (`<0x0A>` for a newline). Words longer
//! than a character are only ever generated: SentencePiece builds one from a
//! prompt only through pieces that are tokens themselves, which a
//! [`TinyModel`] lacks, so a prompt is bytes, spaces, one-character words and
//! special tokens. The default chat template is
//! Qwen2.5's ([`QWEN25_TEMPLATE`]), whose generation prompt ends with a
//! newline, so `.after("\n", "Hello")` makes the answer start with `Hello`.
//!
//! Everything here is pure except [`Gguf::write`] and [`TinyModel::write`],
//! which write the file.

use std::collections::HashMap;
use std::io::{Error, ErrorKind, Result};
use std::path::Path;

/// Qwen2.5-Instruct's chat template (ChatML with Hermes `<tool_call>` tools),
/// a copy of the one in its GGUF files; the default of a [`TinyModel`].
pub const QWEN25_TEMPLATE: &str = include_str!("qwen2.5.jinja");

/// The end-of-turn token of a [`TinyModel`] (its EOS).
pub const END_OF_TURN: &str = "<|im_end|>";

/// The special tokens every [`TinyModel`] has, in id order, with their GGUF
/// token types (2 unknown, 3 control, 4 user-defined, as in Qwen2.5).
pub const SPECIAL_TOKENS: [(&str, i32); 9] = [
    ("<unk>", 2),
    ("<s>", 3),
    ("</s>", 3),
    ("<|im_start|>", 3),
    (END_OF_TURN, 3),
    ("<tool_call>", 4),
    ("</tool_call>", 4),
    ("<think>", 4),
    ("</think>", 4),
];

/// SentencePiece's space, a word of every [`TinyModel`] (else a space would
/// be its three UTF-8 bytes: three tokens).
const SPACE: &str = "\u{2581}";

const TYPE_NORMAL: i32 = 1;
const TYPE_BYTE: i32 = 6;
const UNK: u32 = 0;
const BOS: u32 = 1;
const PAD: u32 = 2;
const EOS: u32 = 4;

/// Size of the one attention head (keys, values and rotary dimensions);
/// `n_embd` is a multiple of it too. One narrow head keeps a prompt of
/// thousands of tokens (the CLI's system prompt and tools) cheap.
const HEAD_DIM: usize = 32;
/// Width of the feed-forward layer.
const N_FF: usize = 32;
/// Weight of a programmed successor in the bigram table.
const PROGRAMMED: f32 = 4.0;
/// Weight of a second choice: what the model says where its first is refused.
const SECOND: f32 = 2.0;
/// Weight of the end of turn after a token with no programmed successor.
const FALLBACK: f32 = 1.0;
/// Range of the random weights: uniform in `[-RANDOM, RANDOM)`.
const RANDOM: f32 = 0.1;

/// The GGUF default alignment, written as `general.alignment`.
pub const ALIGNMENT: u32 = 32;

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GgufValue {
    /// `GGUF_TYPE_UINT32`.
    U32(u32),
    /// `GGUF_TYPE_INT32`.
    I32(i32),
    /// `GGUF_TYPE_FLOAT32`.
    F32(f32),
    /// `GGUF_TYPE_BOOL`.
    Bool(bool),
    /// `GGUF_TYPE_STRING`.
    Str(String),
    /// An array of strings.
    Strs(Vec<String>),
    /// An array of `FLOAT32`.
    F32s(Vec<f32>),
    /// An array of `INT32`.
    I32s(Vec<i32>),
}

const GGUF_UINT32: u32 = 4;
const GGUF_INT32: u32 = 5;
const GGUF_FLOAT32: u32 = 6;
const GGUF_BOOL: u32 = 7;
const GGUF_STRING: u32 = 8;
const GGUF_ARRAY: u32 = 9;
/// `GGML_TYPE_F32`.
const GGML_F32: u32 = 0;
/// `GGML_MAX_NAME`: tensor names are shorter.
const MAX_TENSOR_NAME: usize = 64;

/// One F32 tensor.
#[derive(Clone, Debug, PartialEq)]
struct Tensor {
    name: String,
    /// `ne[0]` (the contiguous dimension) first.
    dims: Vec<u64>,
    data: Vec<f32>,
}

/// A GGUF file in memory: metadata in insertion order and F32 tensors, laid
/// out by [`to_bytes`](Self::to_bytes) as llama.cpp's `gguf.cpp` reads it
/// (header, metadata, tensor infos, data section aligned to
/// `general.alignment`, each tensor at the running padded offset).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gguf {
    metadata: Vec<(String, GgufValue)>,
    tensors: Vec<Tensor>,
}

impl Gguf {
    /// An empty file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` (replacing an earlier value in place).
    pub fn set(&mut self, key: &str, value: GgufValue) -> &mut Self {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.metadata.push((key.to_owned(), value)),
        }
        self
    }

    /// Removes `key`; returns its value if it was set.
    pub fn remove(&mut self, key: &str) -> Option<GgufValue> {
        let at = self.metadata.iter().position(|(k, _)| k == key)?;
        Some(self.metadata.remove(at).1)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Adds an F32 tensor of shape `dims` (`ne[0]`, the contiguous dimension,
    /// first); `data` must hold their product of values.
    pub fn tensor(&mut self, name: &str, dims: &[u64], data: Vec<f32>) -> Result<&mut Self> {
        let elements = dims.iter().try_fold(1u64, |n, d| n.checked_mul(*d));
        if elements != Some(data.len() as u64) || dims.is_empty() || dims.len() > 4 {
            return Err(invalid(format!("tensor {name}: {} values for shape {dims:?}", data.len())));
        }
        if name.len() >= MAX_TENSOR_NAME || self.tensors.iter().any(|t| t.name == name) {
            return Err(invalid(format!("tensor name {name:?} is too long or repeated")));
        }
        self.tensors.push(Tensor { name: name.to_owned(), dims: dims.to_vec(), data });
        Ok(self)
    }

    /// The names of the tensors, in file order.
    pub fn tensor_names(&self) -> impl Iterator<Item = &str> {
        self.tensors.iter().map(|t| t.name.as_str())
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let alignment = match self.get("general.alignment") {
            None => ALIGNMENT as usize,
            Some(GgufValue::U32(a)) if a.is_power_of_two() => *a as usize,
            Some(other) => return Err(invalid(format!("general.alignment {other:?} is not a power of two"))),
        };
        let data_size: usize = self.tensors.iter().map(|t| padded(t.data.len() * 4, alignment)).sum();
        let mut out = Vec::with_capacity(data_size + 64 * 1024);
        out.extend_from_slice(b"GGUF");
        put_u32(&mut out, 3);
        put_u64(&mut out, self.tensors.len() as u64);
        put_u64(&mut out, self.metadata.len() as u64);
        for (key, value) in &self.metadata {
            put_str(&mut out, key);
            put_value(&mut out, value);
        }
        let mut offset = 0;
        for tensor in &self.tensors {
            put_str(&mut out, &tensor.name);
            put_u32(&mut out, tensor.dims.len() as u32);
            for dim in &tensor.dims {
                put_u64(&mut out, *dim);
            }
            put_u32(&mut out, GGML_F32);
            put_u64(&mut out, offset as u64);
            offset += padded(tensor.data.len() * 4, alignment);
        }
        out.resize(padded(out.len(), alignment), 0);
        for tensor in &self.tensors {
            for value in &tensor.data {
                out.extend_from_slice(&value.to_le_bytes());
            }
            out.resize(padded(out.len(), alignment), 0);
        }
        Ok(out)
    }

    /// Writes the file to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_bytes()?)
    }
}

fn padded(n: usize, alignment: usize) -> usize {
    n.div_ceil(alignment) * alignment
}

fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &GgufValue) {
    let array = |out: &mut Vec<u8>, kind: u32, n: usize| {
        put_u32(out, GGUF_ARRAY);
        put_u32(out, kind);
        put_u64(out, n as u64);
    };
    match value {
        GgufValue::U32(n) => {
            put_u32(out, GGUF_UINT32);
            put_u32(out, *n);
        }
        GgufValue::I32(n) => {
            put_u32(out, GGUF_INT32);
            out.extend_from_slice(&n.to_le_bytes());
        }
        GgufValue::F32(x) => {
            put_u32(out, GGUF_FLOAT32);
            out.extend_from_slice(&x.to_le_bytes());
        }
        GgufValue::Bool(b) => {
            put_u32(out, GGUF_BOOL);
            out.push(u8::from(*b));
        }
        GgufValue::Str(s) => {
            put_u32(out, GGUF_STRING);
            put_str(out, s);
        }
        GgufValue::Strs(items) => {
            array(out, GGUF_STRING, items.len());
            items.iter().for_each(|s| put_str(out, s));
        }
        GgufValue::F32s(items) => {
            array(out, GGUF_FLOAT32, items.len());
            items.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        GgufValue::I32s(items) => {
            array(out, GGUF_INT32, items.len());
            items.iter().for_each(|n| out.extend_from_slice(&n.to_le_bytes()));
        }
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidInput, message)
}

/// A tiny llama-architecture model whose next token is programmed; see the
/// module docs.
///
/// ```
/// use bosun_testing::TinyModel;
/// // Answers "Hello from tiny" to anything (the prompt ends with a newline).
/// let model = TinyModel::new().chain(&["\n", "Hello", " from", " tiny", "<|im_end|>"]);
/// let bytes = model.to_bytes().unwrap();
/// assert_eq!(&bytes[..4], b"GGUF");
/// assert!(bytes.len() < 4 << 20);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TinyModel {
    name: String,
    words: Vec<String>,
    edges: Vec<(String, String)>,
    seconds: Vec<(String, String)>,
    template: Option<String>,
    context_length: u32,
    seed: u64,
}

impl Default for TinyModel {
    fn default() -> Self {
        Self::new()
    }
}

impl TinyModel {
    /// A model with the Qwen2.5 template, a 1,024-token training context and
    /// nothing programmed (it ends every turn at once).
    pub fn new() -> Self {
        Self {
            name: "bosun-tiny".to_owned(),
            words: Vec::new(),
            edges: Vec::new(),
            seconds: Vec::new(),
            template: Some(QWEN25_TEMPLATE.to_owned()),
            context_length: 1024,
            seed: 0x5eed_b05a_u64,
        }
    }

    /// Sets `general.name`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Uses `source` as `tokenizer.chat_template`.
    pub fn chat_template(mut self, source: &str) -> Self {
        self.template = Some(source.to_owned());
        self
    }

    /// Writes no chat template.
    pub fn without_chat_template(mut self) -> Self {
        self.template = None;
        self
    }

    /// Sets the training context (`llama.context_length`).
    pub fn context_length(mut self, tokens: u32) -> Self {
        self.context_length = tokens;
        self
    }

    /// Seeds the random weights (they do not change the answers).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Adds `text` to the vocabulary as one token (spaces become `▁`), even
    /// a single character, which would otherwise be its byte token.
    pub fn word(mut self, text: &str) -> Self {
        self.words.push(text.to_owned());
        self
    }

    /// Programs the model to say `next` after `token`. Each is a special
    /// token's text, a word (added to the vocabulary if longer than one
    /// byte), or a single byte such as `"\n"`.
    pub fn after(mut self, token: &str, next: &str) -> Self {
        self.edges.push((token.to_owned(), next.to_owned()));
        self
    }

    /// Programs `next` as the second choice after `token`: what the model
    /// says when its first choice is refused (banned, or outside a grammar).
    pub fn or_else(mut self, token: &str, next: &str) -> Self {
        self.seconds.push((token.to_owned(), next.to_owned()));
        self
    }

    /// Programs each token of `tokens` to be followed by the next one.
    pub fn chain(self, tokens: &[&str]) -> Self {
        tokens.windows(2).fold(self, |model, pair| model.after(pair[0], pair[1]))
    }

    /// The vocabulary, in id order (SentencePiece texts: `▁` for spaces).
    pub fn vocabulary(&self) -> Result<Vec<String>> {
        Ok(self.program()?.tokens)
    }

    /// The model as a GGUF file in memory (to change before writing).
    pub fn to_gguf(&self) -> Result<Gguf> {
        let Program { tokens, next, second } = self.program()?;
        let n_vocab = tokens.len();
        let n_embd = padded(n_vocab, HEAD_DIM);
        let mut file = Gguf::new();
        self.metadata(&mut file, &tokens, n_embd);
        let mut random = XorShift(self.seed | 1);
        let (embd, vocab, ff, head) = (n_embd as u64, n_vocab as u64, N_FF as u64, HEAD_DIM as u64);
        let mut one_hot = vec![0.0; n_embd * n_vocab];
        (0..n_vocab).for_each(|t| one_hot[t * n_embd + t] = 1.0);
        let mut bigrams = vec![0.0; n_embd * n_vocab];
        for (token, successor) in next.iter().enumerate() {
            match successor {
                Some(next) => bigrams[*next as usize * n_embd + token] = PROGRAMMED,
                None => bigrams[EOS as usize * n_embd + token] = FALLBACK,
            }
        }
        for (token, successor) in second.iter().enumerate() {
            if let Some(next) = successor {
                bigrams[*next as usize * n_embd + token] = SECOND;
            }
        }
        let ones = || vec![1.0; n_embd];
        file.tensor("token_embd.weight", &[embd, vocab], one_hot)?
            .tensor("output_norm.weight", &[embd], ones())?
            .tensor("output.weight", &[embd, vocab], bigrams)?
            .tensor("blk.0.attn_norm.weight", &[embd], ones())?
            .tensor("blk.0.attn_q.weight", &[embd, head], random.values(n_embd * HEAD_DIM))?
            .tensor("blk.0.attn_k.weight", &[embd, head], random.values(n_embd * HEAD_DIM))?
            .tensor("blk.0.attn_v.weight", &[embd, head], random.values(n_embd * HEAD_DIM))?
            .tensor("blk.0.attn_output.weight", &[head, embd], vec![0.0; HEAD_DIM * n_embd])?
            .tensor("blk.0.ffn_norm.weight", &[embd], ones())?
            .tensor("blk.0.ffn_gate.weight", &[embd, ff], random.values(n_embd * N_FF))?
            .tensor("blk.0.ffn_up.weight", &[embd, ff], random.values(n_embd * N_FF))?
            .tensor("blk.0.ffn_down.weight", &[ff, embd], vec![0.0; N_FF * n_embd])?;
        Ok(file)
    }

    /// The model's file bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_gguf()?.to_bytes()
    }

    /// Writes the model to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        self.to_gguf()?.write(path)
    }

    fn metadata(&self, file: &mut Gguf, tokens: &[String], n_embd: usize) {
        let n_vocab = tokens.len();
        let types = (0..n_vocab)
            .map(|id| match SPECIAL_TOKENS.get(id) {
                Some((_, kind)) => *kind,
                None if id >= n_vocab - 256 => TYPE_BYTE,
                None => TYPE_NORMAL,
            })
            .collect();
        let u32_of = |n: usize| GgufValue::U32(u32::try_from(n).unwrap_or(u32::MAX));
        file.set("general.architecture", GgufValue::Str("llama".into()))
            .set("general.name", GgufValue::Str(self.name.clone()))
            .set("general.alignment", GgufValue::U32(ALIGNMENT))
            .set("llama.context_length", GgufValue::U32(self.context_length))
            .set("llama.embedding_length", u32_of(n_embd))
            .set("llama.block_count", GgufValue::U32(1))
            .set("llama.feed_forward_length", u32_of(N_FF))
            .set("llama.attention.head_count", GgufValue::U32(1))
            .set("llama.attention.head_count_kv", GgufValue::U32(1))
            .set("llama.attention.key_length", u32_of(HEAD_DIM))
            .set("llama.attention.value_length", u32_of(HEAD_DIM))
            .set("llama.attention.layer_norm_rms_epsilon", GgufValue::F32(1e-6))
            .set("llama.rope.dimension_count", u32_of(HEAD_DIM))
            .set("llama.vocab_size", u32_of(n_vocab))
            .set("tokenizer.ggml.model", GgufValue::Str("llama".into()))
            .set("tokenizer.ggml.tokens", GgufValue::Strs(tokens.to_vec()))
            .set("tokenizer.ggml.scores", GgufValue::F32s(vec![0.0; n_vocab]))
            .set("tokenizer.ggml.token_type", GgufValue::I32s(types))
            .set("tokenizer.ggml.bos_token_id", GgufValue::U32(BOS))
            .set("tokenizer.ggml.eos_token_id", GgufValue::U32(EOS))
            .set("tokenizer.ggml.unknown_token_id", GgufValue::U32(UNK))
            .set("tokenizer.ggml.padding_token_id", GgufValue::U32(PAD))
            .set("tokenizer.ggml.add_bos_token", GgufValue::Bool(false))
            .set("tokenizer.ggml.add_space_prefix", GgufValue::Bool(false));
        if let Some(template) = &self.template {
            file.set("tokenizer.chat_template", GgufValue::Str(template.clone()));
        }
    }

    /// The vocabulary (specials, words, bytes) and each token's programmed
    /// successors.
    fn program(&self) -> Result<Program> {
        let specials: Vec<&str> = SPECIAL_TOKENS.iter().map(|(text, _)| *text).collect();
        let mut words: Vec<String> = Vec::new();
        let implied =
            self.edges.iter().chain(&self.seconds).flat_map(|(a, b)| [a, b]).filter(|t| t.len() > 1);
        for text in self.words.iter().chain(implied) {
            if text.is_empty() {
                return Err(invalid("an empty token".into()));
            }
            if specials.contains(&text.as_str()) {
                continue;
            }
            let piece = text.replace(' ', "\u{2581}");
            if is_byte_token(&piece) {
                return Err(invalid(format!("{piece:?} would be a byte token")));
            }
            if !words.contains(&piece) {
                words.push(piece);
            }
        }
        if !words.iter().any(|w| w == SPACE) {
            words.push(SPACE.to_owned());
        }
        let mut tokens: Vec<String> = specials.iter().map(|s| (*s).to_owned()).collect();
        tokens.extend(words);
        tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
        let ids: HashMap<&str, u32> =
            tokens.iter().enumerate().map(|(id, t)| (t.as_str(), id as u32)).collect();
        let resolve = |text: &str| -> Result<u32> {
            let piece = text.replace(' ', "\u{2581}");
            let id = match text.as_bytes() {
                _ if ids.contains_key(piece.as_str()) => ids.get(piece.as_str()).copied(),
                [byte] => ids.get(format!("<0x{byte:02X}>").as_str()).copied(),
                _ => None,
            };
            id.ok_or_else(|| invalid(format!("{text:?} is not in the vocabulary")))
        };
        let table = |edges: &[(String, String)]| -> Result<Vec<Option<u32>>> {
            let mut next = vec![None; tokens.len()];
            for (token, successor) in edges {
                let (token_id, successor_id) = (resolve(token)?, resolve(successor)?);
                match next[token_id as usize] {
                    Some(earlier) if earlier != successor_id => {
                        return Err(invalid(format!("{token:?} is followed by two tokens")));
                    }
                    _ => next[token_id as usize] = Some(successor_id),
                }
            }
            Ok(next)
        };
        let (next, second) = (table(&self.edges)?, table(&self.seconds)?);
        Ok(Program { tokens, next, second })
    }
}

/// A model's vocabulary and bigram table.
struct Program {
    tokens: Vec<String>,
    /// Each token's first choice.
    next: Vec<Option<u32>>,
    /// Each token's second choice.
    second: Vec<Option<u32>>,
}

fn is_byte_token(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 6 && text.starts_with("<0x") && text.ends_with('>')
}

/// xorshift64: the random weights, reproducible from the seed.
struct XorShift(u64);

impl XorShift {
    fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                // 24 random bits → [0, 1) → [-RANDOM, RANDOM).
                ((self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * RANDOM
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn u64_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn the_header_counts_and_the_data_is_aligned() {
        let mut file = Gguf::new();
        file.set("general.architecture", GgufValue::Str("llama".into()));
        file.tensor("a", &[3], vec![1.0, 2.0, 3.0]).unwrap().tensor("b", &[2, 1], vec![4.0, 5.0]).unwrap();
        let bytes = file.to_bytes().unwrap();
        assert_eq!(&bytes[..4], b"GGUF");
        assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 3);
        assert_eq!(u64_at(&bytes, 8), 2, "tensors");
        assert_eq!(u64_at(&bytes, 16), 1, "metadata");
        // The data: two tensors, each padded to 32 bytes, at the end.
        assert_eq!(bytes.len() % 32, 0);
        let data = bytes.len() - 64;
        assert_eq!(bytes[data..data + 4], 1.0f32.to_le_bytes());
        assert_eq!(bytes[data + 32..data + 36], 4.0f32.to_le_bytes());
        // Tensor b's info ends with its offset: 32 (a, 12 bytes, padded).
        let b_info = bytes.windows(9).rposition(|w| w == b"\x01\0\0\0\0\0\0\0b").unwrap();
        let offset_at = b_info + 9 + 4 + 16 + 4;
        assert_eq!(u64_at(&bytes, offset_at), 32);
    }

    #[test]
    fn bad_tensors_and_alignments_are_refused() {
        let mut file = Gguf::new();
        assert!(file.tensor("a", &[2, 2], vec![0.0; 3]).is_err());
        assert!(file.tensor(&"x".repeat(64), &[1], vec![0.0]).is_err());
        file.tensor("a", &[1], vec![0.0]).unwrap();
        assert!(file.tensor("a", &[1], vec![0.0]).is_err());
        file.set("general.alignment", GgufValue::U32(24));
        assert!(file.to_bytes().is_err());
    }

    #[test]
    fn the_vocabulary_lists_specials_words_then_bytes() {
        let model = TinyModel::new().word("{").chain(&["\n", "Hello", " from", END_OF_TURN]);
        let vocabulary = model.vocabulary().unwrap();
        assert_eq!(vocabulary[..9], SPECIAL_TOKENS.map(|(t, _)| t.to_owned()));
        assert_eq!(vocabulary[9..12], ["{", "Hello", "\u{2581}from"]);
        assert_eq!(vocabulary[12], "\u{2581}");
        assert_eq!(vocabulary[13], "<0x00>");
        assert_eq!(vocabulary.last().unwrap(), "<0xFF>");
        assert_eq!(vocabulary.len(), 9 + 3 + 1 + 256);
        let spaced = TinyModel::new().word(" ").word("a").vocabulary().unwrap();
        assert_eq!(spaced[9..11], ["\u{2581}", "a"], "a space named by the caller keeps its place");
    }

    #[test]
    fn the_bigram_table_holds_the_program() {
        let model = TinyModel::new().chain(&["\n", "Hi", END_OF_TURN]).or_else("\n", "Ho");
        let Program { tokens, next, second } = model.program().unwrap();
        let id = |t: &str| tokens.iter().position(|x| x == t).unwrap() as u32;
        assert_eq!(next[id("<0x0A>") as usize], Some(id("Hi")));
        assert_eq!(second[id("<0x0A>") as usize], Some(id("Ho")));
        assert_eq!(next[id("Hi") as usize], Some(EOS));
        assert_eq!(second[id("Hi") as usize], None);
        assert_eq!(next[id("<s>") as usize], None);
        let file = model.to_gguf().unwrap();
        assert!(matches!(file.get("llama.embedding_length"), Some(GgufValue::U32(288))));
        assert_eq!(file.tensor_names().count(), 12);
    }

    #[test]
    fn contradictions_and_impostors_are_refused() {
        assert!(TinyModel::new().after("a b", "c").after("a b", "d").vocabulary().is_err());
        assert!(TinyModel::new().after("x", "x").after("x", "x").vocabulary().is_ok());
        assert!(TinyModel::new().or_else("a", "b").or_else("a", "c").vocabulary().is_err());
        assert!(TinyModel::new().word("<0x41>").vocabulary().is_err());
        assert!(TinyModel::new().word("").vocabulary().is_err());
    }

    #[test]
    fn the_file_is_small_and_reproducible() {
        let model = TinyModel::new().chain(&["\n", "Hello"]);
        let bytes = model.to_bytes().unwrap();
        assert!(bytes.len() < 1 << 20, "{} bytes", bytes.len());
        assert_eq!(bytes, model.to_bytes().unwrap());
        assert_ne!(bytes, model.seed(7).to_bytes().unwrap());
    }
}
