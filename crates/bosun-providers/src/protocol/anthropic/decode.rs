//! The Anthropic Messages stream decoder: `message_start`, content blocks
//! by wire index (text, thinking, redacted thinking, tool use; server-tool
//! and unknown blocks skipped), `message_delta` with the stop reason and
//! final usage, `message_stop`, `ping`, and `error` events.
//!
//! A paused turn (`pause_turn`) is continued (see `pause.rs`): the decoder
//! hands the transport the continuation's body and reads its stream on top
//! of what it has, so the session sees one response — the blocks of every
//! stream in order, the usage of every request summed — up to
//! [`MAX_CONTINUATIONS`] continuations.
//!
//! Usage: `output_tokens_details.thinking_tokens`, where the API reports it,
//! is the `reasoning` count (already included in `output_tokens`).

use std::collections::HashMap;

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, ModelError, ModelEvent, ModelResponse, ResponsePart, StopReason, Usage};
use serde_json::{Value, json};

use super::pause::{self, MAX_CONTINUATIONS, Segment};
use super::tag;
use crate::classify::classify_stream_error;
use crate::config::ProviderConfig;
use crate::protocol::{Decoder, bad_json, ended_early};
use crate::sse::SseEvent;

/// Decodes one response stream.
pub(super) struct MessagesDecoder {
    config: ProviderConfig,
    /// The kept blocks, in stream order.
    blocks: Vec<Block>,
    /// Wire block index → what became of it. Skipped blocks take no place
    /// in `blocks`, so later blocks are unaffected.
    slots: HashMap<u64, Slot>,
    /// Tool calls started so far (the next call's event index).
    calls: u32,
    /// This stream's usage.
    usage: Usage,
    /// The usage of the streams before this one (paused turns).
    earlier: Usage,
    /// From `message_delta`.
    stop_reason: Option<StopReason>,
    /// The explanation in `message_delta`'s `stop_details` (a refusal's
    /// category and explanation), shown to the person with the stop.
    stop_details: Option<String>,
    /// The stop reason was `pause_turn`.
    paused: bool,
    /// Continuations so far.
    continued: u32,
    /// This stream's blocks as the API would return them, for a continuation.
    segment: Segment,
    /// `message_stop` arrived.
    stopped: bool,
}

#[derive(Clone, Copy)]
enum Slot {
    Kept(usize),
    Skipped,
}

enum Block {
    Text(String),
    Thinking { text: String, signature: String },
    Redacted(String),
    Tool { index: u32, id: String, name: String, json: String, initial: Value },
}

impl MessagesDecoder {
    pub(super) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            blocks: Vec::new(),
            slots: HashMap::new(),
            calls: 0,
            usage: Usage::default(),
            earlier: Usage::default(),
            stop_reason: None,
            stop_details: None,
            paused: false,
            continued: 0,
            segment: Segment::default(),
            stopped: false,
        }
    }

    /// The usage of every stream of this response so far.
    fn total_usage(&self) -> Usage {
        let mut total = self.earlier;
        total += self.usage;
        total
    }

    fn protocol(&self, what: &str) -> ModelError {
        ModelError::Protocol(format!("{}: {what}", self.config.name))
    }

    fn index(&self, value: &Value) -> Result<u64, ModelError> {
        value
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.protocol("a content block event has no index"))
    }

    fn block_start(&mut self, value: &Value, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let index = self.index(value)?;
        if self.slots.contains_key(&index) {
            return Err(self.protocol(&format!("content block {index} started twice")));
        }
        let block = value.get("content_block").unwrap_or(&Value::Null);
        self.segment.start(index, block);
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let kept = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let initial = text("text");
                if !initial.is_empty() {
                    out.push(ModelEvent::TextDelta(initial.clone()));
                }
                Some(Block::Text(initial))
            }
            Some("thinking") => {
                let initial = text("thinking");
                if !initial.is_empty() {
                    out.push(ModelEvent::ReasoningDelta(initial.clone()));
                }
                Some(Block::Thinking { text: initial, signature: text("signature") })
            }
            Some("redacted_thinking") => Some(Block::Redacted(text("data"))),
            Some("tool_use") => {
                let (id, name) = (text("id"), text("name"));
                let index = self.calls;
                self.calls += 1;
                out.push(ModelEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
                let initial = block.get("input").cloned().unwrap_or(Value::Null);
                Some(Block::Tool { index, id, name, json: String::new(), initial })
            }
            // server_tool_use, web_search_tool_result, and types yet to come.
            _ => None,
        };
        let slot = match kept {
            Some(block) => {
                self.blocks.push(block);
                Slot::Kept(self.blocks.len() - 1)
            }
            None => Slot::Skipped,
        };
        self.slots.insert(index, slot);
        Ok(())
    }

    /// The kept block for a delta or stop event; `None` for a skipped one.
    fn block_mut(&mut self, value: &Value) -> Result<Option<&mut Block>, ModelError> {
        let index = self.index(value)?;
        match self.slots.get(&index).copied() {
            Some(Slot::Kept(at)) => Ok(self.blocks.get_mut(at)),
            Some(Slot::Skipped) => Ok(None),
            None => Err(self.protocol(&format!("an event for content block {index}, which never started"))),
        }
    }

    fn block_delta(&mut self, value: &Value, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let delta = value.get("delta").unwrap_or(&Value::Null);
        if let Some(index) = value.get("index").and_then(Value::as_u64) {
            self.segment.delta(index, delta);
        }
        let Some(block) = self.block_mut(value)? else { return Ok(()) };
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        // Deltas of other kinds (citations, types yet to come) carry nothing kept.
        match (delta.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), Block::Text(text)) => {
                let piece = field("text");
                if !piece.is_empty() {
                    text.push_str(piece);
                    out.push(ModelEvent::TextDelta(piece.to_owned()));
                }
            }
            (Some("thinking_delta"), Block::Thinking { text, .. }) => {
                let piece = field("thinking");
                if !piece.is_empty() {
                    text.push_str(piece);
                    out.push(ModelEvent::ReasoningDelta(piece.to_owned()));
                }
            }
            (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                signature.push_str(field("signature"))
            }
            (Some("input_json_delta"), Block::Tool { index, json, .. }) => {
                // The first fragment is often empty.
                let piece = field("partial_json");
                if !piece.is_empty() {
                    json.push_str(piece);
                    out.push(ModelEvent::ToolCallArgs { index: *index, fragment: piece.to_owned() });
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn block_stop(&mut self, value: &Value, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if let Some(Block::Tool { index, .. }) = self.block_mut(value)? {
            out.push(ModelEvent::ToolCallEnd { index: *index });
        }
        Ok(())
    }

    /// Usage fields present in `usage` replace the ones known so far.
    fn read_usage(&mut self, usage: Option<&Value>) {
        let Some(usage) = usage else { return };
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        let thinking = usage.pointer("/output_tokens_details/thinking_tokens").and_then(Value::as_u64);
        let fields = [
            (count("input_tokens"), &mut self.usage.input),
            (count("output_tokens"), &mut self.usage.output),
            (count("cache_read_input_tokens"), &mut self.usage.cache_read),
            (count("cache_creation_input_tokens"), &mut self.usage.cache_write),
            (thinking, &mut self.usage.reasoning),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
    }

    fn response(&mut self) -> ModelResponse {
        let content = std::mem::take(&mut self.blocks).into_iter().filter_map(part).collect();
        ModelResponse::new(content, self.total_usage(), self.stop_reason.unwrap_or_default())
            .with_stop_details(self.stop_details.take())
    }

    /// Whether the stream reached its end (see the module docs of `mod.rs`).
    fn complete(&self) -> bool {
        self.stopped || self.stop_reason.is_some()
    }

    /// Ready for the continuation's stream: wire indexes start again, the
    /// kept blocks and the call count stay, this stream's usage is added up.
    fn next_stream(&mut self) {
        self.slots.clear();
        self.earlier = self.total_usage();
        self.usage = Usage::default();
        self.stop_reason = None;
        self.paused = false;
        self.stopped = false;
        self.continued += 1;
    }
}

/// A finished block as a response part; empty text and empty unsigned
/// thinking are left out.
fn part(block: Block) -> Option<ResponsePart> {
    match block {
        Block::Text(text) if text.is_empty() => None,
        Block::Text(text) => Some(ResponsePart::text(text)),
        Block::Thinking { text, signature } if text.is_empty() && signature.is_empty() => None,
        Block::Thinking { text, signature } => Some(ResponsePart::Content(ContentPart::Reasoning {
            text,
            signature: Some(signature).filter(|s| !s.is_empty()),
            provider_data: Some(ProviderData::new(tag(), json!({"type": "thinking"}))),
        })),
        Block::Redacted(data) => Some(ResponsePart::Content(ContentPart::Reasoning {
            text: String::new(),
            signature: None,
            provider_data: Some(ProviderData::new(tag(), json!({"type": "redacted_thinking", "data": data}))),
        })),
        Block::Tool { id, name, json, initial, .. } => {
            // A call streamed with no deltas keeps the input it started with.
            let arguments = if json.trim().is_empty() && initial.is_object() {
                initial
            } else {
                crate::protocol::call_arguments(&json)
            };
            Some(ResponsePart::tool_call(id, name, arguments))
        }
    }
}

/// `stop_details` as text for a person: its explanation, after its
/// category when it names one (`{"type": "refusal", "category": "cyber",
/// "explanation": "…"}`). `None` when it says neither.
fn stop_details(details: Option<&Value>) -> Option<String> {
    let field = |key: &str| {
        details.and_then(|d| d.get(key)).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty())
    };
    match (field("category"), field("explanation")) {
        (Some(category), Some(explanation)) => Some(format!("{category}: {explanation}")),
        (None, Some(text)) | (Some(text), None) => Some(text.to_owned()),
        (None, None) => None,
    }
}

/// The API's stop reasons; ones yet to come count as a natural stop.
fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        "refusal" => StopReason::Refusal,
        // end_turn, stop_sequence, and pause_turn when it is not continued
        _ => StopReason::Stop,
    }
}

impl Decoder for MessagesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if self.stopped || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| bad_json(&self.config, &e, data))?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        if kind == "error" || event.event == "error" {
            return Err(classify_stream_error(&value, &self.config));
        }
        match kind {
            // No usage event here: an event would count as having reached the
            // caller, and an error right after `message_start` (overloaded)
            // must stay retryable.
            "message_start" => self.read_usage(value.pointer("/message/usage")),
            "content_block_start" => self.block_start(&value, out)?,
            "content_block_delta" => self.block_delta(&value, out)?,
            "content_block_stop" => self.block_stop(&value, out)?,
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(stop_reason(reason));
                    self.stop_details = stop_details(value.pointer("/delta/stop_details"));
                    self.paused = reason == "pause_turn";
                }
                self.read_usage(value.get("usage"));
                out.push(ModelEvent::Usage(self.total_usage()));
            }
            "message_stop" => self.stopped = true,
            _ => {} // ping, and event types yet to come
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.stopped
    }

    fn continuation(&mut self, body: &[u8]) -> Result<Option<Vec<u8>>, ModelError> {
        if !self.complete() || !self.paused {
            return Ok(None);
        }
        if self.continued >= MAX_CONTINUATIONS {
            return Err(self.protocol(&format!(
                "the turn was paused again after {MAX_CONTINUATIONS} continuations; giving up"
            )));
        }
        let blocks = std::mem::take(&mut self.segment).into_blocks();
        let next = pause::continued(body, blocks).ok_or_else(|| {
            self.protocol("cannot continue a paused turn: the request is not a Messages body")
        })?;
        self.next_stream();
        Ok(Some(next))
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        if self.complete() { Ok(self.response()) } else { Err(ended_early(&self.config, "message_stop")) }
    }

    /// `message_delta` brought the stop reason and the final usage.
    fn finished(&self) -> bool {
        self.complete()
    }
}
