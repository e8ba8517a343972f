//! Decoding a Gemini stream. Every `data:` event is a whole
//! `GenerateContentResponse`; only candidate 0 is read (one is asked for).
//!
//! - `{text}` parts are answer text, `{text, thought: true}` parts reasoning;
//!   empty text is skipped.
//! - `{functionCall: {name, args}}` arrives whole, `args` already an object,
//!   usually without an id: the call gets `call_<n>` (its position), and is
//!   reported as a start, one fragment holding the whole JSON, and an end.
//! - A call streamed in fragments (`partialArgs` entries of `jsonPath` and
//!   a `stringValue`, `numberValue`, `boolValue` or `nullValue`, with
//!   `willContinue: true` until the last) is merged into one call: the
//!   first fragment names it, string values at the same path are joined,
//!   and it ends at the fragment without `willContinue` (or the finish).
//! - A `thoughtSignature` on a function call is kept in the call's provider
//!   data as `{"thoughtSignature": …}` tagged `gemini`. A signature on a
//!   thought part is kept in that `Reasoning` part's provider data; one on a
//!   visible text part becomes a `Reasoning` part with no text placed just
//!   before that text, so the request builder can put it back on the text.
//!   A signature on a part with no text to show (an empty text part, an
//!   empty thought part, a part of another kind) becomes a `Reasoning` part
//!   with no text whose provider data also holds that part whole (`{"part":
//!   …}`), so it goes back as it came, where it came.
//!   (The `Reasoning` part's own `signature` field is left empty: it is what
//!   other APIs replay, and this signature is for Gemini only.)
//! - `finishReason` ends the response: `STOP` is a normal stop, or a tool
//!   call stop when the response holds function calls (Gemini says `STOP`
//!   for those too); `MAX_TOKENS` is the length limit; the safety family
//!   (`SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`,
//!   `LANGUAGE`, `IMAGE_*` blocks) is a refusal; `MALFORMED_FUNCTION_CALL`
//!   and other broken tool calls are a server error,
//!   `MISSING_THOUGHT_SIGNATURE` an invalid request; `OTHER` and reasons
//!   not known here end the response with the `Error` stop reason.
//! - `promptFeedback.blockReason` (the prompt itself was blocked; no
//!   candidate follows) ends the response as a refusal.
//! - `usageMetadata` is repeated in every chunk, each time the total so far:
//!   the last one is kept, never summed. `input` is `promptTokenCount` (plus
//!   `toolUsePromptTokenCount`) minus `cachedContentTokenCount`, which is
//!   `cache_read`; `reasoning` is `thoughtsTokenCount`; `output` is
//!   `candidatesTokenCount + thoughtsTokenCount`, since thoughts are billed
//!   as output and `output` counts reasoning wherever a provider bills it so
//!   (`candidatesTokenCount` alone excludes them).
//! - `{"error": …}` in the stream is classified like an HTTP error body.
//!
//! Gemini sends no terminal event: the stream is complete when it ends
//! after a `finishReason` (or a blocked prompt), and ended early otherwise.

use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, ModelError, ModelEvent, ModelResponse, ResponsePart, StopReason, Usage};
use serde_json::{Value, json};

use super::{SIGNATURE, tag};
use crate::classify::classify_stream_error;
use crate::config::ProviderConfig;
use crate::protocol::{Decoder, bad_json, ended_early};
use crate::sse::SseEvent;

/// Which part the next delta of the same kind extends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Reasoning,
}

/// Decodes one Gemini response stream.
pub(super) struct GeminiDecoder {
    config: ProviderConfig,
    parts: Vec<ResponsePart>,
    open: Open,
    calls: u32,
    usage: Usage,
    reported: Option<Usage>,
    finish: Option<StopReason>,
    /// A call whose arguments are still streaming as `partialArgs`
    /// fragments (`willContinue: true`): merged here into one call.
    pending: Option<Pending>,
}

/// A call streamed in fragments: its index, id, name, arguments so far and
/// signature.
struct Pending {
    index: u32,
    id: String,
    name: String,
    arguments: Value,
    signature: Option<String>,
}

impl GeminiDecoder {
    pub(super) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            parts: Vec::new(),
            open: Open::None,
            calls: 0,
            usage: Usage::default(),
            reported: None,
            finish: None,
            pending: None,
        }
    }

    fn response(&mut self, value: &Value, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(classify_stream_error(value, &self.config));
        }
        if let Some(candidate) = candidate(value) {
            let parts = candidate.pointer("/content/parts").and_then(Value::as_array);
            for part in parts.into_iter().flatten() {
                self.part(part, out);
            }
            if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
                // A call still marked to continue ends with the response.
                self.end_pending(out);
                self.finish = Some(self.stop_reason(reason, candidate)?);
            }
        }
        if let Some(block) = value.pointer("/promptFeedback/blockReason").and_then(Value::as_str)
            && block != "BLOCK_REASON_UNSPECIFIED"
        {
            self.finish = Some(StopReason::Refusal);
        }
        if let Some(metadata) = value.get("usageMetadata") {
            self.usage = usage(metadata);
            if self.reported != Some(self.usage) {
                self.reported = Some(self.usage);
                out.push(ModelEvent::Usage(self.usage));
            }
        }
        Ok(())
    }

    fn part(&mut self, part: &Value, out: &mut Vec<ModelEvent>) {
        let signature = part.get(SIGNATURE).and_then(Value::as_str).filter(|s| !s.is_empty());
        let signed = |sig: &str| ProviderData::new(tag(), json!({SIGNATURE: sig}));
        if let Some(call) = part.get("functionCall") {
            if self.pending.is_some() || is_fragment(call) {
                self.fragment(call, signature, out);
                return;
            }
            let index = self.calls;
            self.calls += 1;
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let arguments = call.get("args").filter(|a| !a.is_null()).cloned().unwrap_or_else(|| json!({}));
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("call_{index}"),
            };
            out.push(ModelEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
            out.push(ModelEvent::ToolCallArgs { index, fragment: arguments.to_string() });
            out.push(ModelEvent::ToolCallEnd { index });
            let mut call = ResponsePart::tool_call(id, name, arguments);
            if let Some(sig) = signature {
                call = call.with_provider_data(signed(sig));
            }
            self.parts.push(call);
            self.open = Open::None;
            return;
        }
        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
        if text.is_empty() {
            // Other parts (inline data, code execution) are not asked for,
            // but a signature on one, or on an empty part, is Gemini's state.
            if let Some(sig) = signature {
                self.parts.push(ResponsePart::Content(ContentPart::Reasoning {
                    text: String::new(),
                    signature: None,
                    provider_data: Some(ProviderData::new(tag(), json!({SIGNATURE: sig, "part": part}))),
                }));
                self.open = Open::None;
            }
            return;
        }
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            out.push(ModelEvent::ReasoningDelta(text.to_owned()));
            self.extend(Open::Reasoning, text);
            if let Some(sig) = signature {
                if let Some(ResponsePart::Content(ContentPart::Reasoning { provider_data, .. })) =
                    self.parts.last_mut()
                {
                    *provider_data = Some(signed(sig));
                }
                self.open = Open::None; // a signed part is closed: more thoughts start a new one
            }
            return;
        }
        if let Some(sig) = signature {
            self.parts.push(ResponsePart::Content(ContentPart::Reasoning {
                text: String::new(),
                signature: None,
                provider_data: Some(signed(sig)),
            }));
            self.open = Open::None;
        }
        out.push(ModelEvent::TextDelta(text.to_owned()));
        self.extend(Open::Text, text);
    }

    /// One fragment of a call streamed as `partialArgs`: the first starts
    /// the call (it names it), each sets or extends one argument at its
    /// `jsonPath`, and the one without `willContinue: true` ends it. Without
    /// this each fragment became a call of its own.
    fn fragment(&mut self, call: &Value, signature: Option<&str>, out: &mut Vec<ModelEvent>) {
        let pending = match self.pending.as_mut() {
            Some(pending) => pending,
            None => {
                let index = self.calls;
                self.calls += 1;
                let id = match call.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => format!("call_{index}"),
                };
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                out.push(ModelEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
                self.open = Open::None;
                self.pending.insert(Pending { index, id, name, arguments: json!({}), signature: None })
            }
        };
        if let Some(sig) = signature {
            pending.signature = Some(sig.to_owned());
        }
        if let Some(Value::Object(args)) = call.get("args")
            && let Value::Object(into) = &mut pending.arguments
        {
            into.extend(args.clone());
        }
        for partial in call.get("partialArgs").and_then(Value::as_array).into_iter().flatten() {
            merge_partial(&mut pending.arguments, partial);
        }
        if call.get("willContinue").and_then(Value::as_bool) != Some(true) {
            self.end_pending(out);
        }
    }

    /// Ends the call streaming in fragments, if one is.
    fn end_pending(&mut self, out: &mut Vec<ModelEvent>) {
        let Some(Pending { index, id, name, arguments, signature }) = self.pending.take() else { return };
        out.push(ModelEvent::ToolCallArgs { index, fragment: arguments.to_string() });
        out.push(ModelEvent::ToolCallEnd { index });
        let mut call = ResponsePart::tool_call(id, name, arguments);
        if let Some(sig) = signature {
            call = call.with_provider_data(ProviderData::new(tag(), json!({SIGNATURE: sig})));
        }
        self.parts.push(call);
    }

    /// Appends to the open part of `kind`, or starts one.
    fn extend(&mut self, kind: Open, delta: &str) {
        if self.open == kind
            && let Some(ResponsePart::Content(
                ContentPart::Text { text } | ContentPart::Reasoning { text, .. },
            )) = self.parts.last_mut()
        {
            text.push_str(delta);
            return;
        }
        self.parts.push(ResponsePart::Content(match kind {
            Open::Reasoning => ContentPart::reasoning(delta),
            _ => ContentPart::text(delta),
        }));
        self.open = kind;
    }

    fn stop_reason(&self, reason: &str, candidate: &Value) -> Result<StopReason, ModelError> {
        let described = || {
            let message = candidate.get("finishMessage").and_then(Value::as_str).unwrap_or_default();
            format!("{} ended the response with {reason}: {message}", self.config.name)
        };
        Ok(match reason {
            "STOP" => StopReason::Stop,
            // Not sent by Google, but by compatible servers (and aimock).
            "FUNCTION_CALL" | "TOOL_CALL" => StopReason::ToolUse,
            "MAX_TOKENS" => StopReason::Length,
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "LANGUAGE"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION" => StopReason::Refusal,
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => {
                return Err(ModelError::Server(described()));
            }
            "MISSING_THOUGHT_SIGNATURE" => return Err(ModelError::InvalidRequest(described())),
            _ => StopReason::Error,
        })
    }
}

/// Candidate 0 of a response.
/// Whether a `functionCall` is a fragment of a call streamed in parts.
fn is_fragment(call: &Value) -> bool {
    call.get("partialArgs").is_some() || call.get("willContinue").and_then(Value::as_bool) == Some(true)
}

/// Sets (or, for a string continuing one already there, extends) the
/// argument at a fragment's `jsonPath` (`$.a.b`; only object keys).
fn merge_partial(arguments: &mut Value, partial: &Value) {
    let path = partial.get("jsonPath").and_then(Value::as_str).unwrap_or_default();
    let keys: Vec<&str> = path.trim_start_matches('$').split('.').filter(|k| !k.is_empty()).collect();
    let Some((last, parents)) = keys.split_last() else { return };
    let mut at = arguments;
    for key in parents {
        let Value::Object(map) = at else { return };
        at = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
    let Value::Object(map) = at else { return };
    let value = if let Some(text) = partial.get("stringValue").and_then(Value::as_str) {
        match map.get(*last) {
            Some(Value::String(before)) => Value::String(format!("{before}{text}")),
            _ => Value::String(text.to_owned()),
        }
    } else if let Some(value) = ["numberValue", "boolValue"].iter().find_map(|k| partial.get(*k)) {
        value.clone()
    } else if partial.get("nullValue").is_some() {
        Value::Null
    } else {
        return;
    };
    map.insert(last.to_string(), value);
}

fn candidate(value: &Value) -> Option<&Value> {
    let candidates = value.get("candidates")?.as_array()?;
    candidates.iter().find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
}

fn usage(metadata: &Value) -> Usage {
    let count = |key: &str| metadata.get(key).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count("promptTokenCount").saturating_add(count("toolUsePromptTokenCount"));
    let cached = count("cachedContentTokenCount").min(prompt);
    let thoughts = count("thoughtsTokenCount");
    let mut usage = Usage::new(prompt - cached, count("candidatesTokenCount").saturating_add(thoughts));
    usage.cache_read = cached;
    usage.reasoning = thoughts;
    usage
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| bad_json(&self.config, &e, data))?;
        match &value {
            // The JSON-array form of the stream, should a server send it as one event.
            Value::Array(items) => items.iter().try_for_each(|item| self.response(item, out)),
            one => self.response(one, out),
        }
    }

    /// Gemini has no terminal event: the stream is read to its end, since
    /// usage may follow the chunk with the finish reason.
    fn done(&self) -> bool {
        false
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        let Some(reason) = self.finish else {
            return Err(ended_early(&self.config, "a finishReason"));
        };
        let stop = if reason == StopReason::Stop && self.calls > 0 { StopReason::ToolUse } else { reason };
        Ok(ModelResponse::new(std::mem::take(&mut self.parts), self.usage, stop))
    }

    /// A `finishReason` (or a blocked prompt) is in; the same chunk carries
    /// the final `usageMetadata`.
    fn finished(&self) -> bool {
        self.finish.is_some()
    }
}
