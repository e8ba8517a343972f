//! Decoding a Responses stream: output items tracked by `output_index`,
//! deltas passed on as they arrive, the final items taken from
//! `response.output_item.done`, and the end from `response.completed`,
//! `response.incomplete` or `response.failed`.
//!
//! - Reasoning: summary text deltas become reasoning deltas; summary parts
//!   are joined with a blank line (the `\n\n` is streamed as a delta too, so
//!   the deltas always add up to the final text). The `encrypted_content` is
//!   taken from `response.output_item.done`: the one in `output_item.added`
//!   is a different, provisional value.
//! - Function calls: `output_item.added` starts the call (its `call_id` is the
//!   provider id; its `fc_…` item id is kept as provider data), argument
//!   deltas follow, `output_item.done` ends it.
//! - Text: `output_text` and `refusal` deltas; a refusal without a function
//!   call ends with `StopReason::Refusal`.
//! - Items whose deltas never came (a server that only sends `done` events,
//!   or only the final `response.output`) are filled in from the final items,
//!   and their text is emitted then, so deltas and the final response agree.
//! - `sequence_number`: an event numbered below one already seen is a replay
//!   and is ignored.
//! - Usage: `input` excludes cached tokens (`input_tokens` minus
//!   `input_tokens_details.cached_tokens`, which becomes `cache_read`);
//!   `output` is `output_tokens`, which includes the reasoning tokens also
//!   reported as `reasoning`.

use std::collections::BTreeMap;

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, ModelError, ModelEvent, ModelResponse, ResponsePart, StopReason, Usage};
use serde_json::{Value, json};

use super::tag;
use crate::classify::classify_stream_error;
use crate::config::ProviderConfig;
use crate::protocol::{Decoder, bad_json, ended_early};
use crate::sse::SseEvent;

/// Decodes one Responses stream.
pub(crate) struct ResponsesDecoder {
    config: ProviderConfig,
    /// Output items by `output_index`.
    items: BTreeMap<u64, Item>,
    /// Function calls started so far (the next call's index).
    calls: u32,
    /// The highest `sequence_number` seen.
    sequence: Option<u64>,
    usage: Usage,
    /// How the response ended, once it has.
    end: Option<StopReason>,
    refused: bool,
}

enum Item {
    Reasoning {
        id: String,
        /// Summary parts by `summary_index`.
        summary: Vec<String>,
        encrypted: Option<String>,
    },
    Message {
        text: String,
    },
    Call {
        item_id: String,
        call_id: String,
        name: String,
        arguments: String,
        index: u32,
        ended: bool,
    },
    /// Built-in tool calls and other items bosun does not use.
    Other,
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl ResponsesDecoder {
    pub(crate) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            items: BTreeMap::new(),
            calls: 0,
            sequence: None,
            usage: Usage::default(),
            end: None,
            refused: false,
        }
    }

    /// The output index an event refers to: its `output_index`, else the
    /// item whose id is its `item_id`.
    fn locate(&self, payload: &Value) -> Option<u64> {
        if let Some(index) = payload.get("output_index").and_then(Value::as_u64) {
            return Some(index);
        }
        let wanted = text_of(payload, "item_id");
        self.items.iter().find_map(|(index, item)| match item {
            Item::Reasoning { id, .. } | Item::Call { item_id: id, .. }
                if !wanted.is_empty() && id == wanted =>
            {
                Some(*index)
            }
            _ => None,
        })
    }

    fn item_added(&mut self, index: u64, item: &Value, out: &mut Vec<ModelEvent>) {
        if self.items.contains_key(&index) {
            return;
        }
        let entry = match text_of(item, "type") {
            "reasoning" => Item::Reasoning {
                id: text_of(item, "id").to_owned(),
                summary: Vec::new(),
                encrypted: item.get("encrypted_content").and_then(Value::as_str).map(str::to_owned),
            },
            "message" => Item::Message { text: String::new() },
            "function_call" => {
                let call_index = self.calls;
                self.calls += 1;
                let call_id = text_of(item, "call_id").to_owned();
                let name = text_of(item, "name").to_owned();
                out.push(ModelEvent::ToolCallStart {
                    index: call_index,
                    id: call_id.clone(),
                    name: name.clone(),
                });
                Item::Call {
                    item_id: text_of(item, "id").to_owned(),
                    call_id,
                    name,
                    arguments: String::new(),
                    index: call_index,
                    ended: false,
                }
            }
            _ => Item::Other,
        };
        self.items.insert(index, entry);
        // Anything the added item already holds counts as its first deltas.
        self.fill(index, item, out);
    }

    /// Takes the final state of an item from `output_item.done` (or the
    /// response's `output`), emitting what no delta carried.
    fn item_done(&mut self, index: u64, item: &Value, out: &mut Vec<ModelEvent>) {
        self.item_added(index, item, out);
        self.fill(index, item, out);
        match self.items.get_mut(&index) {
            Some(Item::Reasoning { encrypted, id, .. }) => {
                if let Some(last) = item.get("encrypted_content").and_then(Value::as_str) {
                    *encrypted = Some(last.to_owned());
                }
                if id.is_empty() {
                    text_of(item, "id").clone_into(id);
                }
            }
            Some(Item::Call { index, ended, .. }) if !*ended => {
                *ended = true;
                out.push(ModelEvent::ToolCallEnd { index: *index });
            }
            _ => {}
        }
    }

    /// Brings an item's text up to what `item` holds: empty pieces are filled
    /// in (and emitted as deltas); pieces that already streamed are replaced
    /// by the final value silently.
    fn fill(&mut self, index: u64, item: &Value, out: &mut Vec<ModelEvent>) {
        let Some(entry) = self.items.get_mut(&index) else { return };
        match entry {
            Item::Reasoning { summary, .. } => {
                let parts =
                    item.get("summary").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                for (at, part) in parts.iter().enumerate() {
                    let text = text_of(part, "text");
                    if summary.get(at).is_some_and(|s| !s.is_empty()) {
                        if !text.is_empty() {
                            text.clone_into(&mut summary[at]);
                        }
                    } else {
                        summary_delta(summary, at, text, out);
                    }
                }
            }
            Item::Message { text } => {
                let parts =
                    item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                let mut last = String::new();
                for part in parts {
                    match text_of(part, "type") {
                        "output_text" => last.push_str(text_of(part, "text")),
                        "refusal" => {
                            self.refused = true;
                            last.push_str(text_of(part, "refusal"));
                        }
                        _ => {}
                    }
                }
                if text.is_empty() {
                    if !last.is_empty() {
                        out.push(ModelEvent::TextDelta(last.clone()));
                    }
                    *text = last;
                } else if !last.is_empty() {
                    *text = last;
                }
            }
            Item::Call { arguments, index, item_id, call_id, name, .. } => {
                let last = text_of(item, "arguments");
                if arguments.is_empty() {
                    if !last.is_empty() {
                        out.push(ModelEvent::ToolCallArgs { index: *index, fragment: last.to_owned() });
                    }
                    last.clone_into(arguments);
                } else if !last.is_empty() {
                    last.clone_into(arguments);
                }
                for (field, key) in [(item_id, "id"), (call_id, "call_id"), (name, "name")] {
                    if field.is_empty() {
                        text_of(item, key).clone_into(field);
                    }
                }
            }
            Item::Other => {}
        }
    }

    fn text_delta(&mut self, index: u64, delta: &str, refusal: bool, out: &mut Vec<ModelEvent>) {
        let entry = self.items.entry(index).or_insert_with(|| Item::Message { text: String::new() });
        if let Item::Message { text } = entry {
            text.push_str(delta);
            self.refused |= refusal;
            if !delta.is_empty() {
                out.push(ModelEvent::TextDelta(delta.to_owned()));
            }
        }
    }

    fn reasoning_delta(&mut self, index: u64, payload: &Value, delta: &str, out: &mut Vec<ModelEvent>) {
        let entry = self.items.entry(index).or_insert_with(|| Item::Reasoning {
            id: text_of(payload, "item_id").to_owned(),
            summary: Vec::new(),
            encrypted: None,
        });
        if let Item::Reasoning { summary, .. } = entry {
            let at = summary_index(payload, summary.len());
            summary_delta(summary, at, delta, out);
        }
    }

    /// Called with the done text of a summary part, an output text or a
    /// call's arguments: fills in what no delta carried.
    fn piece_done(&mut self, index: u64, payload: &Value, out: &mut Vec<ModelEvent>) {
        match (text_of(payload, "type"), self.items.get(&index)) {
            ("response.reasoning_summary_text.done", Some(Item::Reasoning { .. })) => {
                if let Some(Item::Reasoning { summary, .. }) = self.items.get_mut(&index) {
                    let at = summary_index(payload, summary.len());
                    if summary.get(at).is_none_or(String::is_empty) {
                        summary_delta(summary, at, text_of(payload, "text"), out);
                    }
                }
            }
            ("response.output_text.done", Some(Item::Message { text })) if text.is_empty() => {
                let done = text_of(payload, "text").to_owned();
                self.text_delta(index, &done, false, out);
            }
            ("response.function_call_arguments.done", Some(Item::Call { .. })) => {
                let item = json!({"arguments": text_of(payload, "arguments")});
                self.fill(index, &item, out);
            }
            _ => {}
        }
    }

    fn args_delta(&mut self, index: u64, delta: &str, out: &mut Vec<ModelEvent>) {
        // Deltas of a call that never started are left to its done item.
        if let Some(Item::Call { arguments, index: call, .. }) = self.items.get_mut(&index) {
            arguments.push_str(delta);
            if !delta.is_empty() {
                out.push(ModelEvent::ToolCallArgs { index: *call, fragment: delta.to_owned() });
            }
        }
    }

    /// `response.completed` or a length-limited `response.incomplete`.
    fn ended(&mut self, response: &Value, reason: StopReason, out: &mut Vec<ModelEvent>) {
        let output = response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for (at, item) in output.iter().enumerate() {
            let at = at as u64;
            // Known items only take text that never streamed: their
            // encrypted reasoning stays the one from `output_item.done`.
            if self.items.contains_key(&at) {
                self.fill(at, item, out);
            } else {
                self.item_done(at, item, out);
            }
        }
        for item in self.items.values_mut() {
            if let Item::Call { index, ended, .. } = item
                && !*ended
            {
                *ended = true;
                out.push(ModelEvent::ToolCallEnd { index: *index });
            }
        }
        self.usage = usage(response.get("usage"));
        self.end = Some(reason);
    }

    fn failed(&self, response: &Value) -> ModelError {
        match response.get("error").filter(|e| !e.is_null()) {
            Some(error) => classify_stream_error(&json!({"error": error}), &self.config),
            None => ModelError::Server(format!(
                "{}: the response failed (status {})",
                self.config.name,
                text_of(response, "status")
            )),
        }
    }

    fn incomplete(&mut self, response: &Value, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let reason =
            response.pointer("/incomplete_details/reason").and_then(Value::as_str).unwrap_or_default();
        if reason == "max_output_tokens" {
            self.ended(response, StopReason::Length, out);
            return Ok(());
        }
        let reason = if reason.is_empty() { "no reason given" } else { reason };
        Err(ModelError::Server(format!("{}: the response is incomplete: {reason}", self.config.name)))
    }

    fn response(&self) -> ModelResponse {
        let mut content = Vec::new();
        let mut calls = false;
        for item in self.items.values() {
            match item {
                Item::Reasoning { id, summary, encrypted } => {
                    let parts: Vec<&String> = summary.iter().filter(|s| !s.is_empty()).collect();
                    if parts.is_empty() && encrypted.is_none() {
                        continue;
                    }
                    let text = parts.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n\n");
                    let summary: Vec<Value> =
                        parts.iter().map(|t| json!({"type": "summary_text", "text": t})).collect();
                    let data = json!({"id": id, "encrypted_content": encrypted, "summary": summary});
                    content.push(ResponsePart::Content(ContentPart::Reasoning {
                        text,
                        signature: None,
                        provider_data: Some(ProviderData::new(tag(), data)),
                    }));
                }
                Item::Message { text } if !text.is_empty() => content.push(ResponsePart::text(text.clone())),
                Item::Call { item_id, call_id, name, arguments, .. } => {
                    calls = true;
                    let mut part = ResponsePart::tool_call(call_id.clone(), name.clone(), parse(arguments));
                    if !item_id.is_empty() {
                        part = part.with_provider_data(ProviderData::new(tag(), json!({"id": item_id})));
                    }
                    content.push(part);
                }
                _ => {}
            }
        }
        let stop_reason = match self.end {
            Some(StopReason::Length) => StopReason::Length,
            _ if calls => StopReason::ToolUse,
            _ if self.refused => StopReason::Refusal,
            _ => StopReason::Stop,
        };
        ModelResponse::new(content, self.usage, stop_reason)
    }
}

/// An event's `summary_index`, bounded so a wild value cannot allocate
/// much.
fn summary_index(payload: &Value, parts: usize) -> usize {
    let at = payload.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
    usize::try_from(at).unwrap_or(usize::MAX).min(parts + 64)
}

/// Appends `delta` to summary part `at`, streaming a `\n\n` first when it
/// opens a part after earlier text.
fn summary_delta(summary: &mut Vec<String>, at: usize, delta: &str, out: &mut Vec<ModelEvent>) {
    if delta.is_empty() {
        return;
    }
    if summary.len() <= at {
        summary.resize(at + 1, String::new());
    }
    let opens_after_text = summary[at].is_empty() && summary.iter().any(|s| !s.is_empty());
    if opens_after_text {
        out.push(ModelEvent::ReasoningDelta("\n\n".to_owned()));
    }
    summary[at].push_str(delta);
    out.push(ModelEvent::ReasoningDelta(delta.to_owned()));
}

/// Call arguments as JSON: `{}` when empty, the raw text as a string when
/// they do not parse.
fn parse(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

fn usage(value: Option<&Value>) -> Usage {
    let count = |pointer: &str| value.and_then(|v| v.pointer(pointer)).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("/input_tokens_details/cached_tokens");
    let mut usage = Usage::new(count("/input_tokens").saturating_sub(cached), count("/output_tokens"));
    usage.cache_read = cached;
    usage.reasoning = count("/output_tokens_details/reasoning_tokens");
    usage
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" || self.end.is_some() {
            return Ok(());
        }
        let payload: Value = serde_json::from_str(data).map_err(|e| bad_json(&self.config, &e, data))?;
        if let Some(sequence) = payload.get("sequence_number").and_then(Value::as_u64) {
            if self.sequence.is_some_and(|last| sequence < last) {
                return Ok(());
            }
            self.sequence = Some(sequence);
        }
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        let index = self.locate(&payload);
        let delta = text_of(&payload, "delta");
        let response = payload.get("response").unwrap_or(&Value::Null);
        match (kind, index) {
            ("response.output_item.added", Some(index)) => {
                self.item_added(index, payload.get("item").unwrap_or(&Value::Null), out);
            }
            ("response.output_item.done", Some(index)) => {
                self.item_done(index, payload.get("item").unwrap_or(&Value::Null), out);
            }
            ("response.output_text.delta", Some(index)) => self.text_delta(index, delta, false, out),
            ("response.refusal.delta", Some(index)) => self.text_delta(index, delta, true, out),
            ("response.reasoning_summary_text.delta", Some(index)) => {
                self.reasoning_delta(index, &payload, delta, out);
            }
            ("response.function_call_arguments.delta", Some(index)) => self.args_delta(index, delta, out),
            (
                "response.reasoning_summary_text.done"
                | "response.output_text.done"
                | "response.function_call_arguments.done",
                Some(index),
            ) => self.piece_done(index, &payload, out),
            ("response.completed", _) => self.ended(response, StopReason::Stop, out),
            ("response.incomplete", _) => self.incomplete(response, out)?,
            ("response.failed", _) => return Err(self.failed(response)),
            ("error", _) => return Err(classify_stream_error(&payload, &self.config)),
            _ => {}
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.end.is_some()
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        match self.end {
            Some(_) => Ok(self.response()),
            None => Err(ended_early(&self.config, "`response.completed`")),
        }
    }
}
