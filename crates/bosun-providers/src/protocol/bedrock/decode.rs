//! Decoding a ConverseStream response. The transport's event-stream reader
//! (`eventstream.rs`) turns each binary frame into an event named by its
//! `:event-type` with the JSON payload as data, and an exception frame into
//! an `exception` event holding `{"error": {type, code, message}}`.
//!
//! - `contentBlockStart` with `start.toolUse` opens a tool call;
//! - `contentBlockDelta` carries `text`, `toolUse.input` (partial JSON) or
//!   `reasoningContent` (`text`, `signature`; or `redactedContent`, kept
//!   in the part's provider data to be sent back as it came);
//! - `messageStop.stopReason` is the finish; `metadata.usage` the usage,
//!   after which the stream ends.

use std::collections::HashMap;

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, ModelError, ModelEvent, ModelResponse, ResponsePart, StopReason, Usage};
use serde_json::{Value, json};

use super::tag;
use crate::config::ProviderConfig;
use crate::protocol::{Decoder, bad_json, ended_early};
use crate::sse::SseEvent;

enum Block {
    Text(String),
    Reasoning {
        text: String,
        signature: String,
    },
    /// Reasoning the model's guardrails encrypted: kept only to send back.
    Redacted(String),
    Tool {
        index: u32,
        id: String,
        name: String,
        json: String,
    },
}

/// Decodes one ConverseStream response.
pub(super) struct ConverseDecoder {
    config: ProviderConfig,
    blocks: Vec<Block>,
    /// Wire block index → position in `blocks`.
    slots: HashMap<u64, usize>,
    calls: u32,
    usage: Usage,
    stop: Option<StopReason>,
    metadata: bool,
}

impl ConverseDecoder {
    pub(super) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            blocks: Vec::new(),
            slots: HashMap::new(),
            calls: 0,
            usage: Usage::default(),
            stop: None,
            metadata: false,
        }
    }

    /// The block at wire `index`, opened as `make` says when new.
    fn slot(&mut self, index: u64, make: impl FnOnce(&mut Self) -> Block) -> &mut Block {
        let at = match self.slots.get(&index) {
            Some(at) => *at,
            None => {
                let block = make(self);
                self.blocks.push(block);
                self.slots.insert(index, self.blocks.len() - 1);
                self.blocks.len() - 1
            }
        };
        &mut self.blocks[at]
    }

    fn start(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let index = value.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
        if let Some(tool) = value.pointer("/start/toolUse") {
            let text = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            let (id, name) = (text("toolUseId"), text("name"));
            self.slot(index, |this| {
                let index = this.calls;
                this.calls += 1;
                out.push(ModelEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
                Block::Tool { index, id, name, json: String::new() }
            });
        }
    }

    fn delta(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let index = value.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = value.get("delta") else { return };
        if let Some(piece) = delta.get("text").and_then(Value::as_str) {
            if let Block::Text(text) = self.slot(index, |_| Block::Text(String::new()))
                && !piece.is_empty()
            {
                text.push_str(piece);
                out.push(ModelEvent::TextDelta(piece.to_owned()));
            }
        } else if let Some(piece) = delta.pointer("/toolUse/input").and_then(Value::as_str) {
            if let Some(Block::Tool { index, json, .. }) =
                self.slots.get(&index).and_then(|at| self.blocks.get_mut(*at))
                && !piece.is_empty()
            {
                json.push_str(piece);
                out.push(ModelEvent::ToolCallArgs { index: *index, fragment: piece.to_owned() });
            }
        } else if let Some(data) = delta.pointer("/reasoningContent/redactedContent").and_then(Value::as_str)
        {
            if let Block::Redacted(kept) = self.slot(index, |_| Block::Redacted(String::new())) {
                kept.push_str(data);
            }
        } else if let Some(reasoning) = delta.get("reasoningContent") {
            let block =
                self.slot(index, |_| Block::Reasoning { text: String::new(), signature: String::new() });
            if let Block::Reasoning { text, signature } = block {
                if let Some(piece) = reasoning.get("text").and_then(Value::as_str).filter(|p| !p.is_empty()) {
                    text.push_str(piece);
                    out.push(ModelEvent::ReasoningDelta(piece.to_owned()));
                }
                if let Some(piece) = reasoning.get("signature").and_then(Value::as_str) {
                    signature.push_str(piece);
                }
            }
        }
    }

    fn stop_block(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let index = value.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
        if let Some(Block::Tool { index, .. }) = self.slots.get(&index).and_then(|at| self.blocks.get(*at)) {
            out.push(ModelEvent::ToolCallEnd { index: *index });
        }
    }

    /// An exception frame's error, classified by its type (`errors.rs`).
    fn exception(&self, value: &Value) -> ModelError {
        super::errors::exception(value, &self.config)
    }

    fn read_usage(&mut self, usage: &Value) {
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        let mut next = Usage::default();
        next.input = count("inputTokens");
        next.output = count("outputTokens");
        next.cache_read = count("cacheReadInputTokens");
        next.cache_write = count("cacheWriteInputTokens");
        self.usage = next;
    }
}

/// Converse's stop reasons.
pub(super) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "guardrail_intervened" | "content_filtered" => StopReason::Refusal,
        // end_turn, stop_sequence, and reasons yet to come
        _ => StopReason::Stop,
    }
}

fn part(block: Block) -> Option<ResponsePart> {
    match block {
        Block::Text(text) if text.is_empty() => None,
        Block::Text(text) => Some(ResponsePart::text(text)),
        Block::Reasoning { text, signature } if text.is_empty() && signature.is_empty() => None,
        Block::Reasoning { text, signature } => Some(ResponsePart::Content(ContentPart::Reasoning {
            text,
            signature: Some(signature).filter(|s| !s.is_empty()),
            provider_data: Some(ProviderData::new(tag(), json!({"type": "reasoningText"}))),
        })),
        Block::Redacted(data) => Some(ResponsePart::Content(ContentPart::Reasoning {
            text: String::new(),
            signature: None,
            provider_data: Some(ProviderData::new(tag(), json!({"type": "redactedContent", "data": data}))),
        })),
        Block::Tool { id, name, json, .. } => {
            Some(ResponsePart::tool_call(id, name, crate::protocol::call_arguments(&json)))
        }
    }
}

impl Decoder for ConverseDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        let value: Value = if data.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(data).map_err(|e| bad_json(&self.config, &e, data))?
        };
        match event.event.as_str() {
            "exception" => return Err(self.exception(&value)),
            "contentBlockStart" => self.start(&value, out),
            "contentBlockDelta" => self.delta(&value, out),
            "contentBlockStop" => self.stop_block(&value, out),
            "messageStop" => {
                let reason = value.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
                self.stop = Some(stop_reason(reason));
            }
            "metadata" => {
                if let Some(usage) = value.get("usage") {
                    self.read_usage(usage);
                    out.push(ModelEvent::Usage(self.usage));
                }
                self.metadata = true;
            }
            _ => {} // messageStart, and events yet to come
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.metadata && self.stop.is_some()
    }

    fn finished(&self) -> bool {
        self.stop.is_some()
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        let Some(stop) = self.stop else { return Err(ended_early(&self.config, "messageStop")) };
        let content = std::mem::take(&mut self.blocks).into_iter().filter_map(part).collect();
        Ok(ModelResponse::new(content, self.usage, stop))
    }
}
