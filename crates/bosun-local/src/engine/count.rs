//! Counting a request's prompt tokens ([`bosun_core::Model::count_tokens`])
//! beside the generation thread, not through it.
//!
//! A count is the length of what [`prompt::tokens`] makes of what
//! [`prompt::render`] makes of the request, with the model's own template,
//! examples and vocabulary: the two functions a generation's prompt comes
//! from (`LocalModel::start` renders, the generation thread tokenizes), so a
//! count cannot drift from a response's `usage.input + usage.cache_read` for
//! the same request.
//!
//! Neither step needs the llama.cpp context: a count touches neither the KV
//! cache nor a generation in progress, and does not queue behind one.
//! llama.cpp's tokenizer only reads the vocabulary (its own server tokenizes
//! on its HTTP threads while slots decode), and `LlamaModel` is `Sync`. Both
//! steps together take tens of milliseconds for a 145 KB request
//! (`benches/estimate_error.rs`), so they run on tokio's blocking pool, or on
//! a thread of their own when no tokio runtime is there: the async caller
//! only awaits them. The request is copied for that (a memory copy, far
//! below the rendering's cost).

use std::sync::Arc;

use bosun_core::{Message, ModelRequest};
use llama_cpp_2::model::LlamaModel;

use super::prompt;
use crate::template::ChatTemplate;

/// What a prompt is made from, shared with the model.
pub(crate) struct Parts {
    pub(crate) model: Arc<LlamaModel>,
    pub(crate) template: Arc<ChatTemplate>,
    pub(crate) examples: Arc<[Message]>,
}

impl Parts {
    /// The prompt tokens of `request`. `None` when the template cannot
    /// render it, or the counting thread could not run.
    pub(crate) async fn count(self, request: &ModelRequest<'_>) -> Option<u64> {
        let system = request.system.map(str::to_owned);
        let (messages, tools) = (request.messages.to_vec(), request.tools.to_vec());
        let options = request.options.clone();
        let work = move || {
            let request = ModelRequest::new(system.as_deref(), messages, tools, options);
            let text = prompt::render(&self.template, &request, &self.examples).ok()?;
            Some(prompt::tokens(&self.model, &text).len() as u64)
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(work).await.ok().flatten(),
            Err(_) => {
                let (sender, receiver) = tokio::sync::oneshot::channel();
                std::thread::Builder::new()
                    .name("bosun-local-count".into())
                    .spawn(move || {
                        // The receiver may be gone (the count was dropped).
                        let _ = sender.send(work());
                    })
                    .ok()?;
                receiver.await.ok().flatten()
            }
        }
    }
}
