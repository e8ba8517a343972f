//! Decoding a Chat Completions stream: `chat.completion.chunk` payloads with
//! text, reasoning and tool-call deltas, a usage chunk (usually with
//! `"choices":[]`), and `data: [DONE]`.
//!
//! Tool calls are assembled by their `index`: the id and name come in the
//! first fragment, the arguments are the concatenation of every fragment (a
//! call whole in one delta works the same). Servers that omit `index` are
//! matched by id, and a new id at an index already taken starts a new call
//! (some servers number every call 0).
//!
//! Reasoning arrives as a string (`reasoning_content`: DeepSeek, xAI, vLLM,
//! llama.cpp; `reasoning`: OpenRouter, Ollama) and, from OpenRouter, as
//! `reasoning_details`: typed pieces (`reasoning.text`, `reasoning.summary`,
//! `reasoning.encrypted`) streamed in fragments, which are merged by their
//! `index` into the whole pieces the server wants back. Their text counts as
//! reasoning only when the delta has no reasoning string (the two carry the
//! same words). Reasoning the server may want back is tagged with this API
//! and the provider's name: `{"provider": …, "reasoning_content": true}`
//! when it came as `reasoning_content`, `{"provider": …, "reasoning_details":
//! […]}` for the merged details (see `request.rs` for the replay).

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, ModelError, ModelEvent, ModelResponse, ResponsePart, StopReason, Usage};
use serde_json::{Map, Value, json};

use crate::classify::classify_stream_error;
use crate::config::{Api, ProviderConfig, ReasoningFormat};
use crate::protocol::{Decoder, bad_json, ended_early};
use crate::sse::SseEvent;

/// One response being decoded.
pub(super) struct ChatDecoder {
    config: ProviderConfig,
    text: String,
    reasoning: String,
    /// Some reasoning came as `reasoning_content`.
    reasoning_content: bool,
    /// OpenRouter's `reasoning_details`, merged.
    details: Vec<Value>,
    /// Whether the text is a refusal (`delta.refusal`).
    refused: bool,
    calls: Vec<Call>,
    usage: Usage,
    finish_reason: Option<StopReason>,
    /// `data: [DONE]` arrived.
    done: bool,
}

/// A tool call being assembled.
#[derive(Default)]
struct Call {
    /// The server's `index`, if it sent one.
    key: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    /// `ToolCallStart` was emitted (it waits for the name).
    started: bool,
    /// `ToolCallEnd` was emitted.
    ended: bool,
}

impl ChatDecoder {
    pub(super) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            text: String::new(),
            reasoning: String::new(),
            reasoning_content: false,
            details: Vec::new(),
            refused: false,
            calls: Vec::new(),
            usage: Usage::default(),
            finish_reason: None,
            done: false,
        }
    }

    /// The reasoning fields to read, the configured one first. Only the first
    /// present is used: servers in transition send both with the same text.
    fn reasoning_fields(&self) -> [&'static str; 2] {
        match self.config.quirks.reasoning {
            ReasoningFormat::Reasoning => ["reasoning", "reasoning_content"],
            _ => ["reasoning_content", "reasoning"],
        }
    }

    fn delta(&mut self, delta: &Value, out: &mut Vec<ModelEvent>) {
        match delta.get("content") {
            Some(Value::String(text)) => self.push_text(text, out),
            // Mistral's reasoning models stream content as typed parts.
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            self.push_text(part.get("text").and_then(Value::as_str).unwrap_or_default(), out);
                        }
                        Some("thinking") => {
                            let texts = part.get("thinking").and_then(Value::as_array).into_iter().flatten();
                            for text in texts.filter_map(|t| t.get("text").and_then(Value::as_str)) {
                                self.push_reasoning(text, out);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(refusal) = delta.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty()) {
            self.refused = true;
            self.push_text(refusal, out);
        }
        let reasoning = self
            .reasoning_fields()
            .into_iter()
            .find_map(|field| delta.get(field).and_then(Value::as_str).map(|text| (field, text)));
        if let Some((field, text)) = reasoning {
            self.reasoning_content |= field == "reasoning_content" && !text.is_empty();
            self.push_reasoning(text, out);
        }
        for detail in delta.get("reasoning_details").and_then(Value::as_array).into_iter().flatten() {
            if reasoning.is_none() {
                let text =
                    ["text", "summary"].into_iter().find_map(|k| detail.get(k).and_then(Value::as_str));
                self.push_reasoning(text.unwrap_or_default(), out);
            }
            merge_detail(&mut self.details, detail);
        }
        for fragment in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.tool_fragment(fragment, out);
        }
    }

    fn push_text(&mut self, text: &str, out: &mut Vec<ModelEvent>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push(ModelEvent::TextDelta(text.to_owned()));
        }
    }

    fn push_reasoning(&mut self, text: &str, out: &mut Vec<ModelEvent>) {
        if !text.is_empty() {
            self.reasoning.push_str(text);
            out.push(ModelEvent::ReasoningDelta(text.to_owned()));
        }
    }

    /// The call a fragment belongs to, or `None` for a new call.
    fn find_call(&self, key: Option<u64>, id: Option<&str>) -> Option<usize> {
        let found = match (key, id) {
            (Some(key), _) => self.calls.iter().rposition(|c| c.key == Some(key)),
            (None, Some(id)) => self.calls.iter().rposition(|c| c.id == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        match (found, id) {
            (Some(at), Some(id)) if self.calls.get(at).is_some_and(|c| !c.id.is_empty() && c.id != id) => {
                None
            }
            (found, _) => found,
        }
    }

    fn tool_fragment(&mut self, fragment: &Value, out: &mut Vec<ModelEvent>) {
        let key = fragment.get("index").and_then(Value::as_u64);
        let id = fragment.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let function = fragment.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default();
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            None | Some(Value::Null) => String::new(),
            // A server that sends the arguments as an object.
            Some(other) => other.to_string(),
        };
        let at = match self.find_call(key, id) {
            Some(at) => at,
            None => {
                self.calls.push(Call { key, ..Call::default() });
                self.calls.len() - 1
            }
        };
        let index = event_index(at);
        let Some(call) = self.calls.get_mut(at) else { return };
        if call.id.is_empty()
            && let Some(id) = id
        {
            call.id = id.to_owned();
        }
        if call.name.is_empty() {
            call.name = name.to_owned();
        }
        call.arguments.push_str(&arguments);
        if call.started {
            if !arguments.is_empty() {
                out.push(ModelEvent::ToolCallArgs { index, fragment: arguments });
            }
        } else if !call.name.is_empty() {
            start(call, index, out);
        }
    }

    /// Ends every open call (at `finish_reason` or `[DONE]`), starting any
    /// that never got a name so each call has its events.
    fn end_calls(&mut self, out: &mut Vec<ModelEvent>) {
        for (at, call) in self.calls.iter_mut().enumerate() {
            let index = event_index(at);
            if !call.started {
                start(call, index, out);
            }
            if !call.ended {
                call.ended = true;
                out.push(ModelEvent::ToolCallEnd { index });
            }
        }
    }
}

/// Adds one streamed fragment of a reasoning detail to the details so far:
/// to the detail with its `index` (and type) if there is one, its text
/// fields appended and its other fields filling in what is missing; else as
/// a new detail.
fn merge_detail(details: &mut Vec<Value>, fragment: &Value) {
    let Value::Object(fragment) = fragment else { return };
    let index = fragment.get("index").filter(|i| !i.is_null());
    let same = details
        .iter_mut()
        .rev()
        .find(|d| d.get("index").filter(|i| !i.is_null()) == index && d.get("type") == fragment.get("type"));
    let Some(Value::Object(detail)) = same else {
        details.push(Value::Object(fragment.clone()));
        return;
    };
    for (key, value) in fragment {
        merge_field(detail, key, value);
    }
}

fn merge_field(detail: &mut Map<String, Value>, key: &str, value: &Value) {
    const APPENDED: [&str; 4] = ["text", "summary", "data", "signature"];
    match (detail.get_mut(key), value) {
        (Some(Value::String(have)), Value::String(more)) if APPENDED.contains(&key) => have.push_str(more),
        (Some(have), _) if !have.is_null() => {}
        _ => {
            detail.insert(key.to_owned(), value.clone());
        }
    }
}

/// Emits a call's start and the arguments it has so far.
fn start(call: &mut Call, index: u32, out: &mut Vec<ModelEvent>) {
    call.started = true;
    out.push(ModelEvent::ToolCallStart { index, id: call.id.clone(), name: call.name.clone() });
    if !call.arguments.is_empty() {
        out.push(ModelEvent::ToolCallArgs { index, fragment: call.arguments.clone() });
    }
}

fn event_index(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "length" | "max_tokens" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::Refusal,
        "error" => StopReason::Error,
        _ => StopReason::Stop,
    }
}

/// A Chat Completions `usage` object. `input` excludes the cached prompt
/// tokens (`prompt_tokens_details.cached_tokens`, or DeepSeek's
/// `prompt_cache_hit_tokens`), which are `cache_read`.
fn usage(value: &Value) -> Usage {
    let count = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64);
    let prompt = count("/prompt_tokens").unwrap_or(0);
    let cached = count("/prompt_tokens_details/cached_tokens")
        .or_else(|| count("/prompt_cache_hit_tokens"))
        .unwrap_or(0)
        .min(prompt);
    let mut usage = Usage::new(prompt - cached, count("/completion_tokens").unwrap_or(0));
    usage.cache_read = cached;
    usage.reasoning = count("/completion_tokens_details/reasoning_tokens").unwrap_or(0);
    usage
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            self.end_calls(out);
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| bad_json(&self.config, &e, data))?;
        if value.get("error").is_some_and(|e| !e.is_null()) || event.event == "error" {
            return Err(classify_stream_error(&value, &self.config));
        }
        for choice in value.get("choices").and_then(Value::as_array).into_iter().flatten() {
            // Only the first choice is asked for (no `n`).
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            // A server that sends the whole message in its last chunk names it `message`.
            if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
                self.delta(delta, out);
            }
            if let Some(reason) =
                choice.get("finish_reason").and_then(Value::as_str).filter(|r| !r.is_empty())
            {
                self.finish_reason = Some(stop_reason(reason));
                self.end_calls(out);
            }
        }
        // Usage comes in its own chunk with `"choices":[]` (Groq: under `x_groq`).
        let reported = [value.get("usage"), value.pointer("/x_groq/usage")]
            .into_iter()
            .flatten()
            .find(|u| u.is_object());
        if let Some(reported) = reported {
            self.usage = usage(reported);
            out.push(ModelEvent::Usage(self.usage));
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ended_early(&self.config, "a finish_reason or data: [DONE]"));
        }
        let mut content = Vec::new();
        if !self.reasoning.is_empty() || !self.details.is_empty() {
            let mut data = Map::new();
            if self.reasoning_content {
                data.insert("reasoning_content".into(), json!(true));
            }
            if !self.details.is_empty() {
                data.insert("reasoning_details".into(), Value::Array(std::mem::take(&mut self.details)));
            }
            let provider_data = (!data.is_empty()).then(|| {
                data.insert("provider".into(), json!(self.config.name));
                ProviderData::new(Api::OpenAiChat.tag(), Value::Object(data))
            });
            content.push(ResponsePart::Content(ContentPart::Reasoning {
                text: std::mem::take(&mut self.reasoning),
                signature: None,
                provider_data,
            }));
        }
        if !self.text.is_empty() {
            content.push(ResponsePart::text(std::mem::take(&mut self.text)));
        }
        let has_calls = !self.calls.is_empty();
        for call in std::mem::take(&mut self.calls) {
            content.push(ResponsePart::tool_call(
                call.id,
                call.name,
                crate::protocol::call_arguments(&call.arguments),
            ));
        }
        // Some servers finish a tool-calling turn with "stop".
        let stop_reason = match self.finish_reason.unwrap_or_default() {
            StopReason::Stop if has_calls => StopReason::ToolUse,
            StopReason::Stop if self.refused => StopReason::Refusal,
            other => other,
        };
        Ok(ModelResponse::new(content, self.usage, stop_reason))
    }

    /// The finish reason (or `[DONE]`) is in; a usage chunk may follow.
    fn finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }
}
