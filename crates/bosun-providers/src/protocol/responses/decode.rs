//! Decoding a Responses stream: output items kept in output order (placed by
//! `output_index` while streaming), deltas passed on as they arrive, the
//! final items taken from `response.output_item.done`, and the end from
//! `response.completed`, `response.incomplete` or `response.failed`.
//!
//! - Reasoning: summary text deltas (`reasoning_summary_text`) and raw
//!   reasoning deltas (`reasoning_text`, which LM Studio, OpenRouter and
//!   DeepSeek send for open-weight models) become reasoning deltas. An
//!   item's pieces (summary parts and `reasoning_text` content parts) are
//!   joined with a blank line in the order they opened (the `\n\n` is
//!   streamed as a delta too, so the deltas always add up to the final
//!   text). The item keeps its id, its summary and its raw content in
//!   provider data, to be replayed. The `encrypted_content` is taken from
//!   `response.output_item.done`: the one in `output_item.added` is a
//!   different, provisional value.
//! - Function calls: `output_item.added` starts the call (its `call_id` is the
//!   provider id; its `fc_…` item id is kept as provider data), argument
//!   deltas follow, `output_item.done` ends it.
//! - Text: `output_text` and `refusal` deltas; a refusal without a function
//!   call ends with `StopReason::Refusal`.
//! - Items whose deltas never came (a server that only sends `done` events,
//!   or only the final `response.output`) are filled in from the final items,
//!   and their text is emitted then, so deltas and the final response agree.
//!   The final `response.output` is matched to the streamed items by item
//!   id, not by position: a server whose `output_index` skips numbers would
//!   otherwise have its answer taken for a new item and doubled. An output
//!   item without an id, or whose id never streamed while the item streamed
//!   at its position has an id the final output does not name (a server
//!   that rotates ids), falls back to its position.
//! - `sequence_number`: an event numbered below one already seen is a replay
//!   and is ignored.
//! - Endings: `response.incomplete` for `max_output_tokens` ends with
//!   `StopReason::Length`, for `content_filter` with `StopReason::Refusal`;
//!   other incomplete reasons are a server error.
//! - Usage: `input` excludes cached tokens (`input_tokens` minus
//!   `input_tokens_details.cached_tokens`, which becomes `cache_read`);
//!   `output` is `output_tokens`, which includes the reasoning tokens also
//!   reported as `reasoning`.

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
    /// Output items in output order.
    items: Vec<Entry>,
    /// Function calls started so far (the next call's index).
    calls: u32,
    /// The highest `sequence_number` seen.
    sequence: Option<u64>,
    usage: Usage,
    /// How the response ended, once it has.
    end: Option<StopReason>,
    refused: bool,
}

struct Entry {
    /// The `output_index` it streamed under; `None` for an item known only
    /// from the final `response.output`.
    index: Option<u64>,
    item: Item,
}

enum Item {
    Reasoning {
        id: String,
        /// Summary and raw-text pieces, in the order they opened.
        pieces: Vec<Piece>,
        encrypted: Option<String>,
    },
    Message {
        id: String,
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
    Other {
        id: String,
    },
}

impl Item {
    /// Whether the output item JSON `item` is of this item's type.
    fn is_a(&self, item: &Value) -> bool {
        let kind = text_of(item, "type");
        match self {
            Item::Reasoning { .. } => kind == "reasoning",
            Item::Message { .. } => kind == "message",
            Item::Call { .. } => kind == "function_call",
            Item::Other { .. } => !matches!(kind, "reasoning" | "message" | "function_call"),
        }
    }

    fn id(&self) -> &str {
        match self {
            Item::Reasoning { id, .. }
            | Item::Message { id, .. }
            | Item::Call { item_id: id, .. }
            | Item::Other { id } => id,
        }
    }
}

/// Which part of a reasoning item a piece of text belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `summary[n]` (`summary_text`).
    Summary,
    /// `content[n]` (`reasoning_text`).
    Raw,
}

struct Piece {
    kind: Kind,
    /// `summary_index` or `content_index`.
    at: u64,
    text: String,
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl ResponsesDecoder {
    pub(crate) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            items: Vec::new(),
            calls: 0,
            sequence: None,
            usage: Usage::default(),
            end: None,
            refused: false,
        }
    }

    fn position_of_index(&self, index: u64) -> Option<usize> {
        self.items.iter().position(|e| e.index == Some(index))
    }

    fn position_of_id(&self, id: &str) -> Option<usize> {
        if id.is_empty() {
            return None;
        }
        self.items.iter().position(|e| e.item.id() == id)
    }

    /// Where an event's item is (or goes): its `output_index`, else the
    /// item whose id is its `item_id`. `Err(index)` is an index not seen yet.
    fn locate(&self, payload: &Value) -> Option<Result<usize, u64>> {
        if let Some(index) = payload.get("output_index").and_then(Value::as_u64) {
            return Some(self.position_of_index(index).ok_or(index));
        }
        self.position_of_id(text_of(payload, "item_id")).map(Ok)
    }

    /// Inserts a streamed item in `output_index` order.
    fn place(&mut self, index: u64, item: Item) -> usize {
        let at =
            self.items.iter().position(|e| e.index.is_some_and(|i| i > index)).unwrap_or(self.items.len());
        self.items.insert(at, Entry { index: Some(index), item });
        at
    }

    /// The item an event refers to, made by `make` when its index is new.
    fn entry(&mut self, payload: &Value, make: impl FnOnce() -> Item) -> Option<usize> {
        match self.locate(payload)? {
            Ok(at) => Some(at),
            Err(index) => Some(self.place(index, make())),
        }
    }

    /// A new item from its JSON; a function call is started here.
    fn new_item(&mut self, item: &Value, out: &mut Vec<ModelEvent>) -> Item {
        let id = text_of(item, "id").to_owned();
        match text_of(item, "type") {
            "reasoning" => Item::Reasoning {
                id,
                pieces: Vec::new(),
                encrypted: item.get("encrypted_content").and_then(Value::as_str).map(str::to_owned),
            },
            "message" => Item::Message { id, text: String::new() },
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
                    item_id: id,
                    call_id,
                    name,
                    arguments: String::new(),
                    index: call_index,
                    ended: false,
                }
            }
            _ => Item::Other { id },
        }
    }

    /// `output_item.added`: a new item at `index` (a repeated one is ignored).
    fn item_added(&mut self, index: u64, item: &Value, out: &mut Vec<ModelEvent>) -> usize {
        if let Some(at) = self.position_of_index(index) {
            return at;
        }
        let entry = self.new_item(item, out);
        let at = self.place(index, entry);
        // Anything the added item already holds counts as its first deltas.
        self.fill(at, item, out);
        at
    }

    /// Takes the final state of an item from `output_item.done` (or the
    /// response's `output`), emitting what no delta carried.
    fn item_done(&mut self, at: usize, item: &Value, out: &mut Vec<ModelEvent>) {
        self.fill(at, item, out);
        match self.items.get_mut(at).map(|e| &mut e.item) {
            Some(Item::Reasoning { encrypted, .. }) => {
                if let Some(last) = item.get("encrypted_content").and_then(Value::as_str) {
                    *encrypted = Some(last.to_owned());
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
    /// by the final value silently. An id the item lacked is taken too.
    fn fill(&mut self, at: usize, item: &Value, out: &mut Vec<ModelEvent>) {
        let Some(entry) = self.items.get_mut(at) else { return };
        match &mut entry.item {
            Item::Reasoning { pieces, id, .. } => {
                for (kind, key, field) in [(Kind::Summary, "summary", "text"), (Kind::Raw, "content", "text")]
                {
                    let parts =
                        item.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                    for (n, part) in parts.iter().enumerate() {
                        fill_piece(pieces, kind, n as u64, text_of(part, field), out);
                    }
                }
                adopt(id, item);
            }
            Item::Message { text, id } => {
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
                adopt(id, item);
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
            Item::Other { id } => adopt(id, item),
        }
    }

    fn text_delta(&mut self, payload: &Value, delta: &str, refusal: bool, out: &mut Vec<ModelEvent>) {
        let id = text_of(payload, "item_id").to_owned();
        let Some(at) = self.entry(payload, || Item::Message { id, text: String::new() }) else { return };
        if let Some(Item::Message { text, .. }) = self.items.get_mut(at).map(|e| &mut e.item) {
            text.push_str(delta);
            self.refused |= refusal;
            if !delta.is_empty() {
                out.push(ModelEvent::TextDelta(delta.to_owned()));
            }
        }
    }

    fn reasoning_delta(&mut self, payload: &Value, kind: Kind, delta: &str, out: &mut Vec<ModelEvent>) {
        let id = text_of(payload, "item_id").to_owned();
        let make = || Item::Reasoning { id, pieces: Vec::new(), encrypted: None };
        let Some(at) = self.entry(payload, make) else { return };
        if let Some(Item::Reasoning { pieces, .. }) = self.items.get_mut(at).map(|e| &mut e.item) {
            piece_delta(pieces, kind, piece_index(payload, kind), delta, out);
        }
    }

    /// Called with the done text of a reasoning piece, an output text or a
    /// call's arguments: fills in what no delta carried.
    fn piece_done(&mut self, at: usize, payload: &Value, out: &mut Vec<ModelEvent>) {
        let kind = match text_of(payload, "type") {
            "response.reasoning_summary_text.done" => Some(Kind::Summary),
            "response.reasoning_text.done" => Some(Kind::Raw),
            _ => None,
        };
        let Some(entry) = self.items.get_mut(at) else { return };
        match (kind, &mut entry.item) {
            (Some(kind), Item::Reasoning { pieces, .. }) => {
                let n = piece_index(payload, kind);
                if pieces.iter().all(|p| p.kind != kind || p.at != n || p.text.is_empty()) {
                    piece_delta(pieces, kind, n, text_of(payload, "text"), out);
                }
            }
            (None, Item::Message { text, .. })
                if text.is_empty() && text_of(payload, "type") == "response.output_text.done" =>
            {
                let done = text_of(payload, "text");
                text.push_str(done);
                if !done.is_empty() {
                    out.push(ModelEvent::TextDelta(done.to_owned()));
                }
            }
            (None, Item::Call { .. })
                if text_of(payload, "type") == "response.function_call_arguments.done" =>
            {
                let item = json!({"arguments": text_of(payload, "arguments")});
                self.fill(at, &item, out);
            }
            _ => {}
        }
    }

    fn args_delta(&mut self, payload: &Value, delta: &str, out: &mut Vec<ModelEvent>) {
        // Deltas of a call that never started are left to its done item.
        let Some(Ok(at)) = self.locate(payload) else { return };
        if let Some(Item::Call { arguments, index: call, .. }) = self.items.get_mut(at).map(|e| &mut e.item) {
            arguments.push_str(delta);
            if !delta.is_empty() {
                out.push(ModelEvent::ToolCallArgs { index: *call, fragment: delta.to_owned() });
            }
        }
    }

    /// The streamed item a final output item is: the one with its id; else
    /// the one streamed at its position (its `output_index`) when that one
    /// has no id of its own or an id the final output does not name, and is
    /// of the same type. Servers rotate ids (GitHub Copilot; OpenRouter's
    /// final reasoning item): without this the item would count as new and
    /// its text be emitted, and sent back, twice.
    fn matching(&self, position: u64, item: &Value, final_ids: &[&str]) -> Option<usize> {
        let id = text_of(item, "id");
        if let Some(at) = self.position_of_id(id) {
            return Some(at);
        }
        let at = self.position_of_index(position)?;
        let theirs = self.items.get(at)?;
        let unnamed = theirs.item.id().is_empty() || !final_ids.contains(&theirs.item.id());
        (id.is_empty() || theirs.item.id().is_empty() || (unnamed && theirs.item.is_a(item))).then_some(at)
    }

    /// `response.completed` or a `response.incomplete` that still counts as
    /// a response.
    fn ended(&mut self, response: &Value, reason: StopReason, out: &mut Vec<ModelEvent>) {
        let output = response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        // Where the last output item went: an item never streamed goes right
        // after it, so the final order is the output's.
        let mut last: Option<usize> = None;
        let final_ids: Vec<&str> = output.iter().map(|item| text_of(item, "id")).collect();
        for (position, item) in output.iter().enumerate() {
            let at = match self.matching(position as u64, item, &final_ids) {
                // Known items only take text that never streamed: their
                // encrypted reasoning stays the one from `output_item.done`.
                Some(at) => {
                    self.fill(at, item, out);
                    at
                }
                None => {
                    let entry = self.new_item(item, out);
                    let at = last.map_or(0, |l| l + 1);
                    self.items.insert(at, Entry { index: None, item: entry });
                    self.item_done(at, item, out);
                    at
                }
            };
            last = Some(at);
        }
        for entry in &mut self.items {
            if let Item::Call { index, ended, .. } = &mut entry.item
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
        let stop = match reason {
            "max_output_tokens" => StopReason::Length,
            "content_filter" => StopReason::Refusal,
            "" => return Err(self.incomplete_error("no reason given")),
            other => return Err(self.incomplete_error(other)),
        };
        self.ended(response, stop, out);
        Ok(())
    }

    fn incomplete_error(&self, reason: &str) -> ModelError {
        ModelError::Server(format!("{}: the response is incomplete: {reason}", self.config.name))
    }

    fn response(&self) -> ModelResponse {
        let mut content = Vec::new();
        let mut calls = false;
        for entry in &self.items {
            match &entry.item {
                Item::Reasoning { id, pieces, encrypted } => {
                    if let Some(part) = reasoning_part(id, pieces, encrypted.as_deref()) {
                        content.push(ResponsePart::Content(part));
                    }
                }
                Item::Message { text, .. } if !text.is_empty() => {
                    content.push(ResponsePart::text(text.clone()))
                }
                Item::Call { item_id, call_id, name, arguments, .. } => {
                    calls = true;
                    let mut part = ResponsePart::tool_call(
                        call_id.clone(),
                        name.clone(),
                        crate::protocol::call_arguments(arguments),
                    );
                    if !item_id.is_empty() {
                        part = part.with_provider_data(ProviderData::new(tag(), json!({"id": item_id})));
                    }
                    content.push(part);
                }
                _ => {}
            }
        }
        // A limit or a filter that cut the response wins over the calls it
        // may have cut short.
        let stop_reason = match self.end {
            Some(StopReason::Length) => StopReason::Length,
            Some(StopReason::Refusal) => StopReason::Refusal,
            _ if calls => StopReason::ToolUse,
            _ if self.refused => StopReason::Refusal,
            _ => StopReason::Stop,
        };
        ModelResponse::new(content, self.usage, stop_reason)
    }
}

/// A reasoning item as a part: its pieces joined as they streamed, and its
/// id, summary, raw content and encrypted content as provider data. `None`
/// for an item with nothing in it.
fn reasoning_part(id: &str, pieces: &[Piece], encrypted: Option<&str>) -> Option<ContentPart> {
    let kept: Vec<&Piece> = pieces.iter().filter(|p| !p.text.is_empty()).collect();
    if kept.is_empty() && encrypted.is_none() {
        return None;
    }
    let text = kept.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
    let of_kind = |kind: Kind, tag: &str| {
        let mut parts: Vec<&&Piece> = kept.iter().filter(|p| p.kind == kind).collect();
        parts.sort_by_key(|p| p.at);
        parts.iter().map(|p| json!({"type": tag, "text": p.text})).collect::<Vec<Value>>()
    };
    let mut data = json!({
        "id": id,
        "encrypted_content": encrypted,
        "summary": of_kind(Kind::Summary, "summary_text"),
    });
    let raw = of_kind(Kind::Raw, "reasoning_text");
    if !raw.is_empty() {
        data["content"] = Value::Array(raw);
    }
    Some(ContentPart::Reasoning {
        text,
        signature: None,
        provider_data: Some(ProviderData::new(tag(), data)),
    })
}

/// Takes the item's `id` when none is known yet.
fn adopt(id: &mut String, item: &Value) {
    if id.is_empty() {
        text_of(item, "id").clone_into(id);
    }
}

/// An event's `summary_index` or `content_index`.
fn piece_index(payload: &Value, kind: Kind) -> u64 {
    let key = match kind {
        Kind::Summary => "summary_index",
        Kind::Raw => "content_index",
    };
    payload.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Appends `delta` to piece (`kind`, `at`), streaming a `\n\n` first when it
/// opens a piece after earlier text.
fn piece_delta(pieces: &mut Vec<Piece>, kind: Kind, at: u64, delta: &str, out: &mut Vec<ModelEvent>) {
    if delta.is_empty() {
        return;
    }
    let earlier_text = pieces.iter().any(|p| !p.text.is_empty());
    let n = match pieces.iter().position(|p| p.kind == kind && p.at == at) {
        Some(n) => n,
        None => {
            pieces.push(Piece { kind, at, text: String::new() });
            pieces.len() - 1
        }
    };
    if pieces[n].text.is_empty() && earlier_text {
        out.push(ModelEvent::ReasoningDelta("\n\n".to_owned()));
    }
    pieces[n].text.push_str(delta);
    out.push(ModelEvent::ReasoningDelta(delta.to_owned()));
}

/// A piece's final text: fills an empty (or new) piece as a delta, replaces
/// one that streamed.
fn fill_piece(pieces: &mut Vec<Piece>, kind: Kind, at: u64, text: &str, out: &mut Vec<ModelEvent>) {
    match pieces.iter_mut().find(|p| p.kind == kind && p.at == at && !p.text.is_empty()) {
        Some(piece) if !text.is_empty() => text.clone_into(&mut piece.text),
        Some(_) => {}
        None => piece_delta(pieces, kind, at, text, out),
    }
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
        let delta = text_of(&payload, "delta");
        let response = payload.get("response").unwrap_or(&Value::Null);
        let item = payload.get("item").unwrap_or(&Value::Null);
        let index = payload.get("output_index").and_then(Value::as_u64);
        match kind {
            "response.output_item.added" => {
                if let Some(index) = index {
                    self.item_added(index, item, out);
                }
            }
            "response.output_item.done" => {
                let at = match index {
                    Some(index) => Some(self.item_added(index, item, out)),
                    None => self.position_of_id(text_of(item, "id")),
                };
                if let Some(at) = at {
                    self.item_done(at, item, out);
                }
            }
            "response.output_text.delta" => self.text_delta(&payload, delta, false, out),
            "response.refusal.delta" => self.text_delta(&payload, delta, true, out),
            "response.reasoning_summary_text.delta" => {
                self.reasoning_delta(&payload, Kind::Summary, delta, out);
            }
            "response.reasoning_text.delta" => self.reasoning_delta(&payload, Kind::Raw, delta, out),
            "response.function_call_arguments.delta" => self.args_delta(&payload, delta, out),
            "response.reasoning_summary_text.done"
            | "response.reasoning_text.done"
            | "response.output_text.done"
            | "response.function_call_arguments.done" => {
                if let Some(Ok(at)) = self.locate(&payload) {
                    self.piece_done(at, &payload, out);
                }
            }
            "response.completed" => self.ended(response, StopReason::Stop, out),
            "response.incomplete" => self.incomplete(response, out)?,
            "response.failed" => return Err(self.failed(response)),
            "error" => return Err(classify_stream_error(&payload, &self.config)),
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

    /// `response.completed` (or a length-limited `response.incomplete`),
    /// which carries the usage, is in.
    fn finished(&self) -> bool {
        self.end.is_some()
    }
}
