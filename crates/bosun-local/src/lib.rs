//! bosun-local: a GGUF model run in-process as a [`bosun_core::Model`]. The
//! chat template from the file is rendered with minijinja (`template`), its
//! capabilities probed by rendering, and tool calls parsed tolerantly from
//! the output (`toolcall`); generation runs on llama.cpp (`engine`).
//!
//! Not here: downloading models (the CLI does that), HTTP, configuration.

pub mod engine;
pub mod template;
pub mod toolcall;

pub use engine::{
    ArgumentHints, ArgumentValues, DEFAULT_MAX_TOKENS, Device, FileTexts, GenerationStats, LocalError,
    LocalModel, LocalOptions, devices, prompt_caches, remove_prompt_caches,
};
