//! [`LocalModel`]: a GGUF file run in-process by llama.cpp (through
//! `llama-cpp-2`) as a [`bosun_core::Model`].
//!
//! Loading memory-maps the weights, reads the chat template and the BOS/EOS
//! texts from the file's metadata, and starts one generation thread that owns
//! the llama.cpp context for the model's life (`worker`). A request is
//! rendered with the template (`prompt`), tokenized, and handed to that
//! thread, which reuses the KV cache for the prefix the previous request
//! shared, streams text deltas through a bounded channel, and ends with one
//! `Done` (`output`). Tool calls are constrained by a lazy grammar built from
//! the tools' schemas (`grammar`) and applied while sampling (`sampling`);
//! an answer asked for in a JSON Schema, by a grammar from the first token.
//! A request's prompt tokens are counted from the same rendering and
//! tokenization, beside that thread (`count`).
//!
//! Text deltas stop short of anything the tool-call parser might claim, so
//! markup never streams; at the end the whole output is parsed, and parser
//! problems (a malformed call, an unknown tool) are appended to the answer as
//! a `[bosun: tool call not used: …]` note so the model sees them next turn.

mod backends;
mod count;
mod gbnf;
mod grammar;
mod hints;
mod host;
mod output;
mod prompt;
mod prompt_cache;
mod quote;

pub use backends::Device;
pub use hints::{ArgumentHints, ArgumentValues, FileTexts};
pub use prompt_cache::{prompt_caches, remove_prompt_caches};
mod sampling;
mod stream;
mod worker;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc as std_mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use bosun_core::{
    Capabilities, CountFuture, Model, ModelError, ModelRequest, ModelStream, ToolChoice, ToolDefinition,
};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::template::{ChatTemplate, TemplateError};
use crate::toolcall;
use grammar::ToolGrammar;
use sampling::Sampling;
use worker::{Control, Job, Shared, Worker};

/// Output tokens per response when neither the request nor the options say.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Events buffered between the generation thread and the stream.
const CHANNEL: usize = 64;

/// How to load a model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalOptions {
    /// The most context tokens; the file's training context when unset or
    /// larger. llama.cpp rounds the size up to a multiple of 256 (within the
    /// file's context); [`LocalModel::context_size`] says what it chose.
    pub context_cap: Option<u32>,
    /// Threads for llama.cpp; the physical cores when unset.
    pub threads: Option<u32>,
    /// Output tokens per response when a request sets none ([`DEFAULT_MAX_TOKENS`] when unset).
    pub max_tokens: Option<u32>,
    /// A chat template to use instead of the file's (for files without one).
    pub chat_template: Option<String>,
    /// A directory for the prompt cache: the KV cache of the latest long
    /// prompt, kept on disk so the next load of the same file starts from it
    /// (see `prompt_cache`). None when unset.
    pub prompt_cache: Option<PathBuf>,
    /// Whether the chat template sees the system clock (`strftime_now`,
    /// `date_string`). Off by default (invariant 19): the template then sees
    /// the fixed neutral date 2024-01-01.
    pub clock: bool,
    /// Layers offloaded to a GPU; llama.cpp's default (every layer, when the
    /// build has a GPU backend and a device is found) when unset.
    pub gpu_layers: Option<u32>,
}

impl LocalOptions {
    /// Caps the context at `tokens`.
    pub fn context_cap(mut self, tokens: u32) -> Self {
        self.context_cap = Some(tokens);
        self
    }

    /// Runs llama.cpp on `threads` threads.
    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Sets the default output limit.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Uses `source` as the chat template.
    pub fn chat_template(mut self, source: impl Into<String>) -> Self {
        self.chat_template = Some(source.into());
        self
    }

    /// Keeps the prompt cache in `dir` (created when missing).
    pub fn prompt_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.prompt_cache = Some(dir.into());
        self
    }

    /// Offloads `layers` layers to a GPU (0 keeps the model on the CPU).
    pub fn gpu_layers(mut self, layers: u32) -> Self {
        self.gpu_layers = Some(layers);
        self
    }

    /// Lets the chat template see today's date (off by default: the neutral
    /// date 2024-01-01 instead).
    pub fn clock(mut self, on: bool) -> Self {
        self.clock = on;
        self
    }
}

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// There is no file at the path.
    #[error("no model file at {0}")]
    NotFound(PathBuf),
    /// llama.cpp could not start.
    #[error("llama.cpp backend: {0}")]
    Backend(String),
    /// llama.cpp could not load the file.
    #[error("cannot load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// What llama.cpp said.
        reason: String,
    },
    /// The file has no chat template and none was given.
    #[error("{0} has no chat template (tokenizer.chat_template); pass one in LocalOptions")]
    NoChatTemplate(PathBuf),
    /// The chat template is unusable.
    #[error("chat template of {path}: {source}")]
    Template {
        /// The file.
        path: PathBuf,
        /// The template's error.
        #[source]
        source: TemplateError,
    },
    /// llama.cpp could not create a context of this size.
    #[error("cannot create a llama.cpp context of {n_ctx} tokens: {reason}")]
    Context {
        /// The context size asked for.
        n_ctx: u32,
        /// What went wrong.
        reason: String,
    },
}

/// Timings and token counts of the latest generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GenerationStats {
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were kept from the previous request.
    pub reused_tokens: usize,
    /// Time spent decoding the prompt tokens that were not reused.
    pub prompt_time: Duration,
    /// Tokens generated (the end-of-turn token included).
    pub generated_tokens: usize,
    /// Time spent generating.
    pub generation_time: Duration,
    /// Whether tool calls stayed under the grammar to the end.
    pub constrained: bool,
}

/// The tool grammar of the latest tool set and argument values (`None`:
/// llama.cpp could not build one).
type CachedGrammar = ((Vec<ToolDefinition>, ArgumentValues), Option<Arc<ToolGrammar>>);

/// A GGUF model run in-process; see the module docs.
pub struct LocalModel {
    path: PathBuf,
    /// Shared with counts (`count`), which render on the blocking pool.
    template: Arc<ChatTemplate>,
    capabilities: Capabilities,
    max_tokens: u32,
    n_ctx: u32,
    threads: u32,
    /// The weights and vocabulary, shared with the generation thread (whose
    /// context borrows them) and with counts (`count`).
    llama: Arc<LlamaModel>,
    jobs: Option<std_mpsc::Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    grammar: Mutex<Option<CachedGrammar>>,
    hints: Option<Arc<dyn ArgumentHints>>,
    examples: Arc<[bosun_core::Message]>,
    seed: AtomicU32,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("n_ctx", &self.n_ctx)
            .field("threads", &self.threads)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// The llama.cpp backend: initialized once per process, its logs sent to
/// `tracing` (llama.cpp's own state is process-wide).
fn backend() -> Result<&'static LlamaBackend, LocalError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            backends::load()?;
            let backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            // Listing reads /proc/self/maps: only when someone will see it.
            if tracing::enabled!(tracing::Level::DEBUG) {
                let found: Vec<String> = backends::list()
                    .into_iter()
                    .map(|d| format!("{} ({})", d.backend, d.description))
                    .collect();
                tracing::debug!(devices = %found.join(", "), "llama.cpp started");
            }
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| LocalError::Backend(e.clone()))
}

/// The devices llama.cpp runs on in this build and on this machine (the
/// CPU, and any GPU its backends found), starting llama.cpp if need be.
pub fn devices() -> Result<Vec<Device>, LocalError> {
    backend()?;
    Ok(backends::list())
}

impl LocalModel {
    /// Loads the GGUF at `path` and starts its generation thread.
    pub fn load(path: &Path, options: LocalOptions) -> Result<Self, LocalError> {
        if !path.is_file() {
            return Err(LocalError::NotFound(path.to_owned()));
        }
        check_header(path)?;
        let backend = backend()?;
        let mut params = LlamaModelParams::default().with_use_mmap(true);
        if let Some(layers) = options.gpu_layers {
            params = params.with_n_gpu_layers(layers);
        }
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| LocalError::Load {
            path: path.to_owned(),
            // llama.cpp's own reason goes to its log only.
            reason: format!(
                "llama.cpp refused it ({e}): the file may be truncated or its architecture unsupported; \
                 RUST_LOG=llama_cpp_2=info shows llama.cpp's message"
            ),
        })?;
        let source = match options.chat_template {
            Some(source) => source,
            None => model
                .chat_template(None)
                .ok()
                .and_then(|t| t.to_string().ok())
                .ok_or_else(|| LocalError::NoChatTemplate(path.to_owned()))?,
        };
        let tool_use = model.chat_template(Some("tool_use")).ok().and_then(|t| t.to_string().ok());
        let vocab = model.vocab();
        let bos = token_text(&model, vocab.bos());
        let eos = token_text(&model, vocab.eos());
        let template = ChatTemplate::new(&source, tool_use.as_deref(), &bos, &eos)
            .map_err(|source| LocalError::Template { path: path.to_owned(), source })?
            .with_clock(options.clock);
        let capabilities = template.capabilities().to_capabilities();

        let threads = options.threads.filter(|t| *t > 0).unwrap_or_else(host::physical_cores);
        let n_ctx = options.context_cap.map_or(model.n_ctx_train(), |cap| cap.min(model.n_ctx_train()));
        let shared = Arc::new(Shared::default());
        let cache = options.prompt_cache.map(|dir| (dir, path.to_owned()));
        let llama = Arc::new(model);
        let (jobs, worker, n_ctx) =
            spawn(Arc::clone(&llama), backend, n_ctx, threads, cache, Arc::clone(&shared))?;
        Ok(Self {
            path: path.to_owned(),
            template: Arc::new(template),
            capabilities,
            max_tokens: options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            n_ctx,
            threads,
            llama,
            jobs: Some(jobs),
            worker: Some(worker),
            shared,
            grammar: Mutex::new(None),
            hints: None,
            examples: Arc::new([]),
            seed: AtomicU32::new(host::seed()),
        })
    }

    /// Narrows string arguments of tool calls to the values `hints` gives
    /// before each request (see [`ArgumentHints`]).
    pub fn with_argument_hints(mut self, hints: Arc<dyn ArgumentHints>) -> Self {
        self.hints = Some(hints);
        self
    }

    /// Shows the model `examples` (complete turns: a question, calls, their
    /// results and the answer) before every conversation: a small model
    /// imitates what it sees, and learns from one example to answer once a
    /// result holds what it needs. Not part of any session's history.
    pub fn with_examples(mut self, examples: Vec<bosun_core::Message>) -> Self {
        self.examples = examples.into();
        self
    }

    /// The context size in tokens.
    pub fn context_size(&self) -> u32 {
        self.n_ctx
    }

    /// The threads llama.cpp runs on.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Of the latest request's prompt tokens: (kept from the KV cache, total).
    pub fn prompt_tokens_reused(&self) -> (usize, usize) {
        self.last_generation().map_or((0, 0), |s| (s.reused_tokens, s.prompt_tokens))
    }

    /// Timings and counts of the latest generation, if any ran.
    pub fn last_generation(&self) -> Option<GenerationStats> {
        self.shared.last.lock().ok().and_then(|last| *last)
    }

    /// Whether the generation thread is working on a request.
    pub fn is_generating(&self) -> bool {
        self.shared.busy.load(Ordering::Acquire)
    }

    fn start(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<stream::GenerationStream, ModelError> {
        let rendered = prompt::render(&self.template, request, &self.examples)?;
        // `ToolChoice::None` offers the tools to read about but takes no call,
        // as a request without tools does.
        let choice = request.options.tool_choice.unwrap_or_default();
        let tools: &[ToolDefinition] = if choice == ToolChoice::None { &[] } else { &request.tools };
        let tool_names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        let tools_withdrawn = tool_names.is_empty()
            && request.messages.iter().any(|message| message.tool_calls().next().is_some());
        let answer = request.options.output_schema.as_ref().map(|output| &output.schema);
        let grammar = match answer {
            Some(schema) => self.answer_grammar(tools, &request.messages, schema, choice),
            None => self.tool_grammar(tools, &request.messages),
        };
        // A grammar that llama.cpp refused cannot force a call or an answer:
        // the response is then free, as with `Auto` (an answer is still
        // checked by whoever asked for the schema).
        let required = (choice == ToolChoice::Required || answer.is_some()) && grammar.is_some();
        let (events, receiver) = mpsc::channel(CHANNEL);
        let (done, finished) = std_mpsc::sync_channel(0);
        let control = Arc::new(Control::default());
        let seed = self.seed.fetch_add(1, Ordering::Relaxed);
        let job = Job {
            prompt: rendered,
            max_tokens: request.options.max_tokens.unwrap_or(self.max_tokens),
            sampling: Sampling::from_options(&request.options, seed),
            grammar,
            required,
            stops: request.options.stop.clone().unwrap_or_default(),
            tool_names,
            tools_withdrawn,
            events,
            control: Arc::clone(&control),
            cancel,
            _done: done,
        };
        if self.jobs.as_ref().is_none_or(|jobs| jobs.send(job).is_err()) {
            return Err(ModelError::Other("the generation thread has stopped".into()));
        }
        Ok(stream::GenerationStream::new(receiver, control, finished))
    }

    /// The grammar of a response that answers in `schema` or, with `tools`
    /// and a choice other than `Required` (which keeps its call-only root),
    /// calls one of them. Built for each request, not cached: a schema is
    /// a one-task (`exec`) affair.
    fn answer_grammar(
        &self,
        tools: &[ToolDefinition],
        messages: &[bosun_core::Message],
        schema: &serde_json::Value,
        choice: ToolChoice,
    ) -> Option<Arc<ToolGrammar>> {
        if choice == ToolChoice::Required {
            return self.tool_grammar(tools, messages);
        }
        let values = self.hints.as_ref().map(|h| h.argument_values(tools, messages)).unwrap_or_default();
        let format = self.template.capabilities().call_format;
        grammar::answer_grammar(tools, toolcall::CALL_TRIGGERS, format, &values, schema)
            .map_err(|e| tracing::warn!("the answer is not constrained to its schema: {e}"))
            .ok()
            .map(Arc::new)
    }

    /// The grammar for `tools` and the argument values the hints give now,
    /// built again only when either changed.
    fn tool_grammar(
        &self,
        tools: &[ToolDefinition],
        messages: &[bosun_core::Message],
    ) -> Option<Arc<ToolGrammar>> {
        if tools.is_empty() {
            return None;
        }
        let values = self.hints.as_ref().map(|h| h.argument_values(tools, messages)).unwrap_or_default();
        let mut cache = self.grammar.lock().ok()?;
        if let Some(((cached_tools, cached_values), grammar)) = cache.as_ref()
            && cached_tools.as_slice() == tools
            && *cached_values == values
        {
            return grammar.clone();
        }
        let format = self.template.capabilities().call_format;
        let grammar = grammar::tool_grammar(tools, toolcall::CALL_TRIGGERS, format, &values)
            .map_err(|e| tracing::warn!("tool calls are not constrained: {e}"))
            .ok()
            .map(Arc::new);
        *cache = Some(((tools.to_vec(), values), grammar.clone()));
        grammar
    }
}

impl Model for LocalModel {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        match self.start(&request, cancel) {
            Ok(stream) => Box::pin(stream),
            Err(error) => Box::pin(futures_util::stream::iter([Err(error)])),
        }
    }

    /// Exactly the prompt tokens a response to `request` reports
    /// (`usage.input + usage.cache_read`, however much of the KV cache it
    /// reuses): the request rendered with the same template and examples
    /// and tokenized by the same function as a generation's prompt, both on
    /// the blocking pool (see `count`). A count neither waits for a
    /// generation nor touches its KV cache. The weights and vocabulary are
    /// loaded with the `LocalModel` (`load` returns once they are), so there
    /// is never a model to load first. A prompt larger than the context is
    /// counted all the same (that is when compaction needs to know). `None`
    /// when the template cannot render the request: the estimate stands in,
    /// and the round itself reports the error.
    fn count_tokens<'a>(&'a self, request: &'a ModelRequest<'a>) -> CountFuture<'a> {
        let parts = count::Parts {
            model: Arc::clone(&self.llama),
            template: Arc::clone(&self.template),
            examples: Arc::clone(&self.examples),
        };
        Box::pin(parts.count(request))
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        // Closing the job channel ends the thread after its current job.
        self.jobs.take();
        if let Some(worker) = self.worker.take()
            && worker.join().is_err()
        {
            tracing::error!("the generation thread panicked");
        }
    }
}

/// Starts the generation thread with a context of `n_ctx` tokens; returns the
/// job sender, the thread, and the context size llama.cpp chose.
fn spawn(
    model: Arc<LlamaModel>,
    backend: &'static LlamaBackend,
    n_ctx: u32,
    threads: u32,
    cache: Option<(PathBuf, PathBuf)>,
    shared: Arc<Shared>,
) -> Result<(std_mpsc::Sender<Job>, JoinHandle<()>, u32), LocalError> {
    let (jobs, receiver) = std_mpsc::channel::<Job>();
    let (ready, started) = std_mpsc::sync_channel::<Result<u32, String>>(1);
    let threads_i32 = i32::try_from(threads).unwrap_or(i32::MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_threads(threads_i32)
        .with_n_threads_batch(threads_i32);
    let thread = std::thread::Builder::new()
        .name("bosun-local".into())
        .spawn(move || {
            let context = match model.new_context(backend, params) {
                Ok(context) => context,
                Err(error) => {
                    let _ = ready.send(Err(error.to_string()));
                    return;
                }
            };
            let actual = context.n_ctx();
            let _ = ready.send(Ok(actual));
            let batch = LlamaBatch::new(worker::PROMPT_CHUNK, 1);
            let prompt_cache = cache.map(|(dir, model_file)| {
                let file = prompt_cache::file_for(&dir, &model_file, actual);
                worker::DiskCache { dir, file, model: model_file, loaded: false }
            });
            Worker {
                model: &model,
                context,
                batch,
                cached: Vec::new(),
                call_openers: None,
                prompt_cache,
                shared,
            }
            .serve(receiver);
        })
        .map_err(|e| LocalError::Context { n_ctx, reason: format!("cannot start the thread: {e}") })?;
    match started.recv() {
        Ok(Ok(actual)) => Ok((jobs, thread, actual)),
        Ok(Err(reason)) => {
            let _ = thread.join();
            Err(LocalError::Context { n_ctx, reason })
        }
        Err(_) => {
            let _ = thread.join();
            Err(LocalError::Context { n_ctx, reason: "the generation thread ended while starting".into() })
        }
    }
}

/// Refuses a file that is not GGUF (version 2 or 3) before llama.cpp reads
/// it, so the error says what is wrong.
fn check_header(path: &Path) -> Result<(), LocalError> {
    use std::io::Read;
    let error = |reason: String| LocalError::Load { path: path.to_owned(), reason };
    let mut header = [0u8; 8];
    let mut file = std::fs::File::open(path).map_err(|e| error(format!("cannot open it: {e}")))?;
    let read = file.read(&mut header).map_err(|e| error(format!("cannot read it: {e}")))?;
    if read < header.len() || &header[..4] != b"GGUF" {
        return Err(error("not a GGUF file (it does not start with the GGUF magic)".into()));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !(2..=3).contains(&version) {
        return Err(error(format!("GGUF version {version} is not supported (2 and 3 are)")));
    }
    Ok(())
}

/// The text of a special token, or "" when the vocabulary has none.
fn token_text(model: &LlamaModel, token: LlamaToken) -> String {
    if token.0 < 0 || token.0 >= model.n_vocab() {
        return String::new();
    }
    String::from_utf8_lossy(&model.vocab().token_to_piece(token, true, None)).into_owned()
}
