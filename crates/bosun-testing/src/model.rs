//! A model that plays a script, one [`Reply`] per request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bosun_core::{
    Capabilities, ContentPart, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, ModelStream, ResponsePart, StopReason, Usage,
};
use futures_util::stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One step of a scripted reply, in stream order.
#[derive(Clone, Debug)]
enum Step {
    Text(String),
    Reasoning(String),
    ToolCall { id: String, name: String, arguments: Value },
    Error(ModelError),
    Event(ModelEvent),
    HangUntilCancelled,
}

/// One scripted response: the deltas to stream and the final response.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    steps: Vec<Step>,
    usage: Usage,
    final_text: Option<String>,
    final_reasoning: Option<String>,
    stop_reason: Option<StopReason>,
    no_final: bool,
}

impl Reply {
    /// An empty reply (streams nothing, ends with an empty response).
    pub fn new() -> Self {
        Self::default()
    }

    /// Streams a text delta (also part of the final text).
    pub fn text(mut self, delta: impl Into<String>) -> Self {
        self.steps.push(Step::Text(delta.into()));
        self
    }

    /// Streams a reasoning delta (also part of the final reasoning).
    pub fn reasoning(mut self, delta: impl Into<String>) -> Self {
        self.steps.push(Step::Reasoning(delta.into()));
        self
    }

    /// A tool call; its provider id is `call_<n>` with n its position.
    pub fn tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        let n = self.steps.iter().filter(|s| matches!(s, Step::ToolCall { .. })).count();
        self.tool_call_with_id(format!("call_{n}"), name, arguments)
    }

    /// A tool call with a chosen provider id (ids may repeat across replies).
    pub fn tool_call_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.steps.push(Step::ToolCall { id: id.into(), name: name.into(), arguments });
        self
    }

    /// Usage reported in the final response.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Makes the final text differ from the streamed deltas.
    pub fn final_text(mut self, text: impl Into<String>) -> Self {
        self.final_text = Some(text.into());
        self
    }

    /// Makes the final reasoning differ from the streamed deltas.
    pub fn final_reasoning(mut self, text: impl Into<String>) -> Self {
        self.final_reasoning = Some(text.into());
        self
    }

    /// The stop reason of the final response.
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Streams `event` as it is at this point (a `Retrying`, a `Usage`).
    pub fn event(mut self, event: ModelEvent) -> Self {
        self.steps.push(Step::Event(event));
        self
    }

    /// Fails the stream with `error` at this point.
    pub fn error(mut self, error: ModelError) -> Self {
        self.steps.push(Step::Error(error));
        self
    }

    /// Waits here until the request is cancelled, then ends the stream.
    pub fn hang(mut self) -> Self {
        self.steps.push(Step::HangUntilCancelled);
        self
    }

    /// Ends the stream without a final response.
    pub fn truncated(mut self) -> Self {
        self.no_final = true;
        self
    }

    fn final_response(&self) -> ModelResponse {
        let streamed_text: String = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let streamed_reasoning: String = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Reasoning(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let text = self.final_text.clone().unwrap_or(streamed_text);
        let reasoning = self.final_reasoning.clone().unwrap_or(streamed_reasoning);
        let mut content = Vec::new();
        if !reasoning.is_empty() {
            content.push(ResponsePart::Content(ContentPart::reasoning(reasoning)));
        }
        if !text.is_empty() {
            content.push(ResponsePart::text(text));
        }
        let mut has_calls = false;
        for step in &self.steps {
            if let Step::ToolCall { id, name, arguments } = step {
                has_calls = true;
                content.push(ResponsePart::tool_call(id.clone(), name.clone(), arguments.clone()));
            }
        }
        let stop = self.stop_reason.unwrap_or(if has_calls { StopReason::ToolUse } else { StopReason::Stop });
        ModelResponse::new(content, self.usage, stop)
    }
}

/// What the model was asked, as recorded.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The messages sent.
    pub messages: Vec<Message>,
    /// Names of the tools offered, in order.
    pub tools: Vec<String>,
    /// Generation options.
    pub options: GenerationOptions,
}

#[derive(Debug)]
struct Inner {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    capabilities: Capabilities,
    cycle: bool,
}

/// A model that plays [`Reply`]s in order and records every request.
/// Clones share the script and the record.
#[derive(Clone, Debug)]
pub struct ScriptedModel {
    inner: Arc<Inner>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedModel {
    /// A model with an empty script and every capability.
    pub fn new() -> Self {
        Self::with_capabilities(Capabilities::all())
    }

    /// A model reporting `capabilities`.
    pub fn with_capabilities(capabilities: Capabilities) -> Self {
        Self {
            inner: Arc::new(Inner {
                replies: Mutex::new(VecDeque::new()),
                requests: Mutex::new(Vec::new()),
                capabilities,
                cycle: false,
            }),
        }
    }

    /// A model that plays `replies` in a loop, forever, without recording
    /// requests (for long runs and benchmarks).
    pub fn cycle(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self {
            inner: Arc::new(Inner {
                replies: Mutex::new(replies.into_iter().collect()),
                requests: Mutex::new(Vec::new()),
                capabilities: Capabilities::all(),
                cycle: true,
            }),
        }
    }

    /// Adds a reply to the script.
    pub fn reply(self, reply: Reply) -> Self {
        self.push(reply);
        self
    }

    /// Adds a reply that calls one tool.
    pub fn tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.reply(Reply::new().tool_call(name, arguments))
    }

    /// Adds a reply that answers `text` in one delta.
    pub fn answer(self, text: impl Into<String>) -> Self {
        self.reply(Reply::new().text(text))
    }

    /// Adds a reply to a shared model.
    pub fn push(&self, reply: Reply) {
        if let Ok(mut replies) = self.inner.replies.lock() {
            replies.push_back(reply);
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Replies not yet played.
    pub fn remaining(&self) -> usize {
        self.inner.replies.lock().map(|r| r.len()).unwrap_or_default()
    }

    fn next_reply(&self) -> Option<Reply> {
        let mut replies = self.inner.replies.lock().ok()?;
        let reply = replies.pop_front()?;
        if self.inner.cycle {
            replies.push_back(reply.clone());
        }
        Some(reply)
    }
}

enum Cursor {
    Steps(usize),
    Finished,
}

impl Model for ScriptedModel {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>, cancel: CancellationToken) -> ModelStream<'a> {
        // Recording copies the whole history; long benchmark runs skip it.
        if !self.inner.cycle
            && let Ok(mut requests) = self.inner.requests.lock()
        {
            requests.push(RecordedRequest {
                system: request.system.map(str::to_owned),
                messages: request.messages.to_vec(),
                tools: request.tools.iter().map(|t| t.name.clone()).collect(),
                options: request.options.clone(),
            });
        }
        let Some(reply) = self.next_reply() else {
            let error = ModelError::Other("the scripted model has no reply left".into());
            return Box::pin(stream::iter([Err(error)]));
        };
        Box::pin(stream::unfold((reply, Cursor::Steps(0), cancel), |(reply, cursor, cancel)| async move {
            let Cursor::Steps(mut index) = cursor else { return None };
            loop {
                if cancel.is_cancelled() {
                    return None;
                }
                let Some(step) = reply.steps.get(index).cloned() else {
                    if reply.no_final {
                        return None;
                    }
                    let done = ModelEvent::Done(reply.final_response());
                    return Some((Ok(done), (reply, Cursor::Finished, cancel)));
                };
                index += 1;
                let event = match step {
                    Step::Text(text) => Ok(ModelEvent::TextDelta(text)),
                    Step::Reasoning(text) => Ok(ModelEvent::ReasoningDelta(text)),
                    Step::ToolCall { .. } => continue,
                    Step::Event(event) => Ok(event),
                    Step::Error(error) => return Some((Err(error), (reply, Cursor::Finished, cancel))),
                    Step::HangUntilCancelled => {
                        cancel.cancelled().await;
                        return None;
                    }
                };
                return Some((event, (reply, Cursor::Steps(index), cancel)));
            }
        }))
    }
}
