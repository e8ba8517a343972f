//! The generation thread: it owns the llama.cpp context (and so the KV cache)
//! for the model's whole life and runs one [`Job`] at a time.
//!
//! KV reuse: the thread remembers the tokens whose keys and values are in the
//! cache. A new prompt keeps the longest common prefix with them (at least
//! one prompt token is always decoded again, for its logits), drops the
//! cache entries past it, and decodes only the rest. A session's next
//! request repeats the previous prompt and answer, so mostly only the new
//! message is processed.
//!
//! Stopping: the job's stop flag and cancellation token are checked before
//! every decode, that is every generated token and every prompt chunk of
//! [`PROMPT_CHUNK`] tokens.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::time::Instant;

use bosun_core::{ModelError, ModelEvent, ModelResponse, StopReason, Usage};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::path::PathBuf;

use super::GenerationStats;
use super::grammar::ToolGrammar;
use super::output::{self, Streamer, Utf8Joiner};
use super::sampling::{Sampling, TokenSampler};
use super::{prompt, prompt_cache};

/// Prompt tokens decoded per call: bounds how long a cancelled request keeps
/// the thread (about 0.75 s for a 0.5B model on two cores; 128 keeps 97% of
/// the prompt speed of 512-token batches, measured).
pub(crate) const PROMPT_CHUNK: usize = 128;

/// The opening of a reasoning block.
const THINK: &str = "<think>";

/// What the events channel carries.
pub(crate) type EventResult = Result<ModelEvent, ModelError>;

/// One request for the thread.
pub(crate) struct Job {
    pub(crate) prompt: String,
    pub(crate) max_tokens: u32,
    pub(crate) sampling: Sampling,
    pub(crate) grammar: Option<Arc<ToolGrammar>>,
    /// The response must call a tool: the grammar applies from the first
    /// token (`ToolChoice::Required`), not from a trigger.
    pub(crate) required: bool,
    pub(crate) stops: Vec<String>,
    pub(crate) tool_names: Vec<String>,
    /// No tools are offered, but the conversation called some: the tools
    /// were withdrawn (bosun-core does that after repeated calls), so the
    /// output must not open like a call.
    pub(crate) tools_withdrawn: bool,
    pub(crate) events: mpsc::Sender<EventResult>,
    pub(crate) control: Arc<Control>,
    pub(crate) cancel: CancellationToken,
    /// Dropped with the job: tells the stream's guard the job is over.
    pub(crate) _done: std_mpsc::SyncSender<()>,
}

impl Job {
    fn stopped(&self) -> bool {
        self.control.stop.load(Ordering::Acquire) || self.cancel.is_cancelled() || self.events.is_closed()
    }
}

/// What a job and its stream share.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// The stream is gone or wants no more.
    stop: AtomicBool,
    /// [`QUEUED`], [`RUNNING`] or [`ABANDONED`].
    phase: AtomicU8,
}

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const ABANDONED: u8 = 2;

impl Control {
    /// Asks the job to stop. Returns whether the thread has started it (and
    /// must be waited for); a job not yet started never will be.
    pub(crate) fn stop(&self) -> bool {
        self.stop.store(true, Ordering::Release);
        self.phase.compare_exchange(QUEUED, ABANDONED, Ordering::AcqRel, Ordering::Acquire).is_err()
    }

    /// Called by the thread: whether the job may run (it was not abandoned).
    fn start(&self) -> bool {
        self.phase.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// State shared between the thread and [`LocalModel`](super::LocalModel).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) busy: AtomicBool,
    pub(crate) last: Mutex<Option<GenerationStats>>,
}

/// Where the prompt cache lives (see `prompt_cache`).
pub(crate) struct DiskCache {
    pub(crate) dir: PathBuf,
    pub(crate) file: PathBuf,
    /// The model file the cache is of.
    pub(crate) model: PathBuf,
    /// Whether the file was read (or found missing) already.
    pub(crate) loaded: bool,
}

/// How the thread ended a job.
enum Ending {
    /// A response to send as `Done`.
    Done(Box<ModelResponse>),
    /// Stopped by the caller: the stream ends with `Cancelled`.
    Stopped,
}

/// The thread's state between jobs.
pub(crate) struct Worker<'m> {
    pub(crate) model: &'m LlamaModel,
    pub(crate) context: LlamaContext<'m>,
    pub(crate) batch: LlamaBatch<'static>,
    /// Tokens whose keys and values are in the cache, in position order.
    pub(crate) cached: Vec<LlamaToken>,
    /// Tokens that may open a call or a blank (see [`Worker::call_openers`]), found once.
    pub(crate) call_openers: Option<Arc<[LlamaToken]>>,
    /// The prompt cache on disk, if one was asked for.
    pub(crate) prompt_cache: Option<DiskCache>,
    pub(crate) shared: Arc<Shared>,
}

impl Worker<'_> {
    /// Runs jobs until the model is dropped (the job channel closes).
    pub(crate) fn serve(mut self, jobs: std_mpsc::Receiver<Job>) {
        while let Ok(job) = jobs.recv() {
            if !job.control.start() {
                continue;
            }
            self.shared.busy.store(true, Ordering::Release);
            let ending = if job.stopped() {
                Ok(Ending::Stopped)
            } else {
                // A panic in the bindings must not take the thread (and every
                // later request) down: it fails this request only.
                catch_unwind(AssertUnwindSafe(|| self.run(&job))).unwrap_or_else(|_| {
                    self.context.clear_kv_cache();
                    self.cached.clear();
                    Err(ModelError::Other("the generation panicked".into()))
                })
            };
            let last = match ending {
                Ok(Ending::Done(response)) => Ok(ModelEvent::Done(*response)),
                Ok(Ending::Stopped) => Err(ModelError::Cancelled),
                Err(error) => Err(error),
            };
            // The receiver may be gone (the stream was dropped): nothing to tell.
            let _ = job.events.blocking_send(last);
            self.shared.busy.store(false, Ordering::Release);
            drop(job);
        }
    }

    fn run(&mut self, job: &Job) -> Result<Ending, ModelError> {
        let vocab = self.model.vocab();
        let tokens = prompt::tokens(self.model, &job.prompt);
        let n_ctx = self.context.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(ModelError::InvalidRequest("the prompt rendered to no tokens".into()));
        }
        if tokens.len() >= n_ctx {
            return Err(ModelError::ContextOverflow(format!(
                "the prompt is {} tokens; the context holds {n_ctx}",
                tokens.len()
            )));
        }
        self.load_prompt_cache();
        let reused = self.keep_prefix(&tokens);
        let mut stats =
            GenerationStats { prompt_tokens: tokens.len(), reused_tokens: reused, ..Default::default() };
        let prompt_started = Instant::now();
        let decoded = self.decode_prompt(job, &tokens[reused..]);
        stats.prompt_time = prompt_started.elapsed();
        let Some(mut index) = decoded? else {
            self.record(stats);
            return Ok(Ending::Stopped);
        };
        if tokens.len() - reused >= prompt_cache::SAVE_AFTER {
            self.save_prompt_cache();
        }

        let grammar = job.grammar.as_deref();
        // With no tools offered, a call cannot be taken: a call opening that
        // is one token is banned, so the model answers in words instead
        // (other openings are cut below).
        let banned = if job.tool_names.is_empty() { self.call_tag_tokens() } else { Vec::new() };
        let mut sampler = TokenSampler::new(self.model, job.sampling, grammar, job.required, &banned);
        if job.tools_withdrawn {
            sampler.ban_first(self.model, &self.call_openers());
        }
        let budget = (job.max_tokens as usize).min(n_ctx - tokens.len());
        // A prompt that ends inside an opened `<think>` leaves the output
        // with only the closing tag; the parser and streamer need the opening.
        let mut output = if opens_reasoning(&job.prompt) { THINK.to_owned() } else { String::new() };
        let mut joiner = Utf8Joiner::default();
        let mut streamer = Streamer::default();
        let generation_started = Instant::now();
        let mut cut_at_call = false;
        let stop_reason = loop {
            if stats.generated_tokens >= budget {
                break StopReason::Length;
            }
            if job.stopped() {
                stats.generation_time = generation_started.elapsed();
                self.record(stats);
                return Ok(Ending::Stopped);
            }
            let token = sampler
                .sample(&self.context, index)
                .ok_or_else(|| ModelError::Other("llama.cpp selected no token".into()))?;
            stats.generated_tokens += 1;
            if vocab.is_eog(token) {
                break StopReason::Stop;
            }
            let appended_at = output.len();
            joiner.push(&vocab.token_to_piece(token, true, None), &mut output);
            tracing::trace!(token = token.0, output = %&output[appended_at..], "generated");
            if let Some(cut) = output::find_stop(&output, appended_at, &job.stops) {
                output.truncate(cut);
                break StopReason::Stop;
            }
            let call_at = if job.tools_withdrawn { output::json_call_start(&output) } else { None };
            if job.tool_names.is_empty()
                && let Some(cut) = output::find_stop(&output, appended_at, &output::CALL_TAGS).or(call_at)
            {
                output.truncate(cut);
                cut_at_call = true;
                break StopReason::Stop;
            }
            let (reasoning, text) = streamer.advance(&output, &job.stops);
            let deltas =
                reasoning.map(ModelEvent::ReasoningDelta).into_iter().chain(text.map(ModelEvent::TextDelta));
            for delta in deltas {
                if job.events.blocking_send(Ok(delta)).is_err() {
                    stats.generation_time = generation_started.elapsed();
                    self.record(stats);
                    return Ok(Ending::Stopped);
                }
            }
            index = self.decode_one(token)?;
        };
        joiner.finish(&mut output);
        tracing::debug!(
            prompt_tokens = stats.prompt_tokens,
            reused = stats.reused_tokens,
            generated = stats.generated_tokens,
            output = %output,
            "generation finished"
        );
        stats.generation_time = generation_started.elapsed();
        stats.constrained = sampler.constrained();
        let mut usage =
            Usage::new((stats.prompt_tokens - stats.reused_tokens) as u64, stats.generated_tokens as u64);
        usage.cache_read = stats.reused_tokens as u64;
        self.record(stats);
        let tools: Vec<&str> = job.tool_names.iter().map(String::as_str).collect();
        let response = output::finish(&output, &streamer, &tools, stop_reason, usage, cut_at_call);
        Ok(Ending::Done(Box::new(response)))
    }

    /// The tokens that are, alone, the opening of a tagged call (Qwen's
    /// `<tool_call>`, say); none when the vocabulary spells them out.
    fn call_tag_tokens(&self) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        output::CALL_TAGS
            .iter()
            .filter_map(|tag| match vocab.tokenize(tag.as_bytes(), false, true).as_slice() {
                [token] => Some(*token),
                _ => None,
            })
            .collect()
    }

    /// The tokens an output may not start with once tools were withdrawn:
    /// all but those that, leading whitespace aside, begin with a letter or
    /// a digit (and `<think>`). A small model given a round without tools
    /// otherwise writes the call it can no longer make, in any of its forms
    /// (`{`, `[`, a fence, a tag), or stray punctuation before one; made to
    /// start with a word, it answers. Found by one pass over the
    /// vocabulary, the first time it is needed.
    fn call_openers(&mut self) -> Arc<[LlamaToken]> {
        if let Some(openers) = &self.call_openers {
            return Arc::clone(openers);
        }
        let vocab = self.model.vocab();
        let openers: Arc<[LlamaToken]> = (0..self.model.n_vocab())
            .map(LlamaToken)
            .filter(|token| {
                let piece = vocab.token_to_piece(*token, true, None);
                let text = String::from_utf8_lossy(&piece);
                let body = text.trim_start();
                let reasoning = !body.is_empty() && (body.starts_with(THINK) || THINK.starts_with(body));
                let word = body.chars().next().is_some_and(char::is_alphanumeric);
                !word && !reasoning
            })
            .collect();
        self.call_openers = Some(Arc::clone(&openers));
        openers
    }

    /// Fills the KV cache from the prompt cache file, once, before the first
    /// job; a file llama.cpp refuses is deleted.
    fn load_prompt_cache(&mut self) {
        let Some(cache) = self.prompt_cache.as_mut().filter(|c| !c.loaded) else { return };
        cache.loaded = true;
        if !cache.file.is_file() {
            return;
        }
        let n_ctx = self.context.n_ctx() as usize;
        match self.context.state_load_file(&cache.file, n_ctx) {
            Ok(tokens) => {
                tracing::debug!(tokens = tokens.len(), file = %cache.file.display(), "prompt cache loaded");
                self.cached = tokens;
            }
            Err(error) => {
                tracing::warn!(file = %cache.file.display(), "prompt cache refused ({error}); deleting it");
                self.context.clear_kv_cache();
                self.cached.clear();
                let _ = std::fs::remove_file(&cache.file);
            }
        }
    }

    /// Saves the KV cache of the tokens decoded so far (the prompt just
    /// processed) to the prompt cache file. A failure only costs the cache.
    fn save_prompt_cache(&self) {
        let Some(cache) = &self.prompt_cache else { return };
        let temporary = prompt_cache::temporary(&cache.file);
        let saved = std::fs::create_dir_all(&cache.dir)
            .map_err(|e| e.to_string())
            .and_then(|()| self.context.state_save_file(&temporary, &self.cached).map_err(|e| e.to_string()))
            .and_then(|()| std::fs::rename(&temporary, &cache.file).map_err(|e| e.to_string()))
            .and_then(|()| {
                prompt_cache::remove_prompt_caches(&cache.dir, &cache.model, Some(&cache.file))
                    .map(drop)
                    .map_err(|e| format!("cannot remove older caches: {e}"))
            });
        if let Err(error) = saved {
            tracing::warn!(file = %cache.file.display(), "cannot save the prompt cache: {error}");
            let _ = std::fs::remove_file(&temporary);
        }
    }

    /// Keeps the cached prefix `tokens` shares (all but its last token at
    /// most) and drops the rest of the cache; returns how many tokens stay.
    fn keep_prefix(&mut self, tokens: &[LlamaToken]) -> usize {
        let common = self.cached.iter().zip(tokens).take_while(|(a, b)| a == b).count();
        let mut keep = common.min(tokens.len() - 1);
        if keep < self.cached.len() {
            let position = u32::try_from(keep).unwrap_or(u32::MAX);
            if self.context.kv_cache_seq_rm(0, Some(position), None).is_err() {
                // Some caches (recurrent, sliding-window) cannot drop a tail.
                self.context.clear_kv_cache();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        keep
    }

    /// Decodes prompt tokens after the cached ones, in chunks; returns the
    /// batch index of the last token's logits, or `None` when stopped.
    fn decode_prompt(&mut self, job: &Job, tokens: &[LlamaToken]) -> Result<Option<i32>, ModelError> {
        let chunks = tokens.len().div_ceil(PROMPT_CHUNK);
        for (n, chunk) in tokens.chunks(PROMPT_CHUNK).enumerate() {
            if job.stopped() {
                return Ok(None);
            }
            let last = n + 1 == chunks;
            self.batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let position = position(self.cached.len() + i)?;
                self.batch.add(*token, position, &[0], last && i + 1 == chunk.len()).map_err(other)?;
            }
            self.decode()?;
            self.cached.extend_from_slice(chunk);
        }
        Ok(Some(self.batch.n_tokens() - 1))
    }

    /// Decodes one generated token; returns the batch index of its logits.
    fn decode_one(&mut self, token: LlamaToken) -> Result<i32, ModelError> {
        self.batch.clear();
        self.batch.add(token, position(self.cached.len())?, &[0], true).map_err(other)?;
        self.decode()?;
        self.cached.push(token);
        Ok(0)
    }

    fn decode(&mut self) -> Result<(), ModelError> {
        self.context.decode(&mut self.batch).map_err(|e| {
            // What the cache holds after a failed decode is unknown.
            self.context.clear_kv_cache();
            self.cached.clear();
            ModelError::Other(format!("llama.cpp could not decode: {e}"))
        })
    }

    fn record(&self, stats: GenerationStats) {
        if let Ok(mut last) = self.shared.last.lock() {
            *last = Some(stats);
        }
    }
}

/// Whether the prompt leaves the assistant inside an opened `<think>` block.
fn opens_reasoning(prompt: &str) -> bool {
    prompt.trim_end().ends_with(THINK)
}

fn position(index: usize) -> Result<i32, ModelError> {
    i32::try_from(index).map_err(|_| ModelError::ContextOverflow("position out of range".into()))
}

fn other(error: impl std::fmt::Display) -> ModelError {
    ModelError::Other(format!("llama.cpp: {error}"))
}
