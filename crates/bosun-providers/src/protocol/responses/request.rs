//! The Responses request body: instructions, input items, tools, options.
//!
//! Input items, in history order:
//! - user text and images: `{type:message, role:user, content:[{type:input_text},
//!   {type:input_image, image_url:"data:…;base64,…", detail:"auto"}]}` (the API's
//!   reference lists `detail` as required for a message's image; `auto` is
//!   its default);
//! - assistant text: `{type:message, role:assistant, content:[{type:output_text}]}`
//!   (the output-message form without an `id`, which stateless requests accept);
//! - reasoning: `{type:reasoning, id, summary, content, encrypted_content}`,
//!   only for reasoning this API produced (`provider_data.api ==
//!   "openai-responses"`) that carries encrypted content (with its id: with
//!   `store: false` an item without it cannot be resolved) or raw reasoning
//!   text (`content: [{type:reasoning_text}]`, which servers running
//!   open-weight models send and want back in a tool loop; its id when it
//!   had one). Other APIs' reasoning and plain reasoning text are dropped;
//! - function calls: `{type:function_call, call_id, name, arguments}` with the
//!   session's call id and the arguments as a JSON string. The original `fc_…`
//!   item id is sent as `id` only when a reasoning item of the same assistant
//!   message was replayed before the call: the API pairs a reasoning item with
//!   the item after it, and an item id whose reasoning is absent is rejected;
//! - tool results: `{type:function_call_output, call_id, output}`, the output a
//!   string, or a list of `input_text`/`input_image` parts when the result
//!   holds images. The API has no error flag; the result text says so.
//!
//! Tools are sent with `strict: false`: the Responses API defaults function
//! tools to strict mode, which rejects schemas with optional properties.
//! A set tool choice goes with them as `tool_choice: "auto" | "required" |
//! "none"`; a request without tools sends none.
//! Stop sequences are not supported by the Responses API and are not sent.
//! An output schema goes as `text.format`, a `json_schema` format.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_core::message::ProviderData;
use bosun_core::{ContentPart, Effort, Message, ModelError, ModelRequest, Thinking};
use serde_json::{Map, Value, json};

use super::tag;
use crate::protocol::openai_tool_choice;

/// The request body for `model`.
pub(super) fn body(model: &str, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(system) = request.system.filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("input".into(), Value::Array(input(&request.messages)));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": false,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        // Only beside tools: the API refuses `tool_choice` without them.
        if let Some(choice) = request.options.tool_choice.and_then(openai_tool_choice) {
            body.insert("tool_choice".into(), json!(choice));
        }
    }
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    body.insert("prompt_cache_key".into(), json!(crate::protocol::prompt_cache_key(request)));
    let options = &request.options;
    if let Some(Thinking::On { budget }) = options.thinking {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        body.insert(
            "reasoning".into(),
            json!({"effort": Effort::of_budget(budget).as_str(), "summary": "auto"}),
        );
    }
    if let Some(max) = options.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(output) = &options.output_schema {
        let mut format = crate::protocol::structured::openai_format(output);
        format.insert("type".into(), json!("json_schema"));
        body.insert("text".into(), json!({ "format": format }));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), float(temperature));
    }
    if let Some(top_p) = options.top_p {
        body.insert("top_p".into(), float(top_p));
    }
    Ok(Value::Object(body))
}

/// An `f32` option as the decimal it was written as (0.2, not 0.2000000029…).
fn float(value: f32) -> Value {
    value.to_string().parse::<f64>().map_or(Value::Null, Value::from)
}

fn input(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message {
            Message::System { text } => items.push(json!({
                "type": "message",
                "role": "system",
                "content": [{"type": "input_text", "text": text}],
            })),
            Message::User { content } => {
                let parts = user_content(content);
                if !parts.is_empty() {
                    items.push(json!({"type": "message", "role": "user", "content": parts}));
                }
            }
            Message::Assistant { content, .. } => assistant(content, &mut items),
            Message::ToolResult { call_id, content, .. } => items.push(json!({
                "type": "function_call_output",
                "call_id": call_id.to_string(),
                "output": tool_output(content),
            })),
            _ => {}
        }
    }
    items
}

fn image_url(media_type: &str, data: &[u8]) -> String {
    format!("data:{media_type};base64,{}", STANDARD.encode(data))
}

fn user_content(content: &[ContentPart]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(json!({"type": "input_text", "text": text})),
            ContentPart::Image { media_type, data } => Some(
                json!({"type": "input_image", "image_url": image_url(media_type, data), "detail": "auto"}),
            ),
            _ => None,
        })
        .collect()
}

/// A tool result's `output`: its text, or text and image parts.
fn tool_output(content: &[ContentPart]) -> Value {
    if !content.iter().any(|p| matches!(p, ContentPart::Image { .. })) {
        return json!(bosun_core::message::concat_text(content));
    }
    Value::Array(user_content(content))
}

/// An assistant message's items: reasoning, text messages and function
/// calls, in the order of its parts.
fn assistant(content: &[ContentPart], items: &mut Vec<Value>) {
    let mut text: Vec<Value> = Vec::new();
    let mut reasoning_replayed = false;
    for part in content {
        match part {
            ContentPart::Text { text: t } if !t.is_empty() => {
                text.push(json!({"type": "output_text", "text": t}));
            }
            ContentPart::Reasoning { text: summary, provider_data, .. } => {
                if let Some(item) = reasoning_item(summary, provider_data.as_ref()) {
                    flush_text(&mut text, items);
                    items.push(item);
                    reasoning_replayed = true;
                }
            }
            ContentPart::ToolCall { id, name, arguments, provider_data } => {
                flush_text(&mut text, items);
                let arguments = match arguments {
                    // Arguments that did not parse are kept as their raw text.
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                let mut call = Map::new();
                call.insert("type".into(), json!("function_call"));
                if reasoning_replayed && let Some(item_id) = call_item_id(provider_data.as_ref()) {
                    call.insert("id".into(), json!(item_id));
                }
                call.insert("call_id".into(), json!(id.to_string()));
                call.insert("name".into(), json!(name));
                call.insert("arguments".into(), json!(arguments));
                items.push(Value::Object(call));
            }
            _ => {}
        }
    }
    flush_text(&mut text, items);
}

fn flush_text(text: &mut Vec<Value>, items: &mut Vec<Value>) {
    if !text.is_empty() {
        items.push(json!({"type": "message", "role": "assistant", "content": std::mem::take(text)}));
    }
}

/// The replayed reasoning item, when the part came from this API and holds
/// something the API can use: encrypted content (with the item's id), or
/// raw reasoning text.
fn reasoning_item(text: &str, data: Option<&ProviderData>) -> Option<Value> {
    let data = &data.filter(|d| d.api == tag())?.data;
    let id = data.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
    let encrypted = data.get("encrypted_content").and_then(Value::as_str);
    let raw = data.get("content").and_then(Value::as_array).filter(|c| !c.is_empty());
    if encrypted.is_some() && id.is_none() || encrypted.is_none() && raw.is_none() {
        return None;
    }
    let summary = match data.get("summary") {
        Some(Value::Array(parts)) => parts.clone(),
        _ if text.is_empty() || raw.is_some() => Vec::new(),
        _ => vec![json!({"type": "summary_text", "text": text})],
    };
    let mut item = Map::new();
    item.insert("type".into(), json!("reasoning"));
    if let Some(id) = id {
        item.insert("id".into(), json!(id));
    }
    item.insert("summary".into(), Value::Array(summary));
    if let Some(raw) = raw {
        item.insert("content".into(), Value::Array(raw.clone()));
    }
    if let Some(encrypted) = encrypted {
        item.insert("encrypted_content".into(), json!(encrypted));
    }
    Some(Value::Object(item))
}

/// The `fc_…` item id a call from this API carries.
fn call_item_id(data: Option<&ProviderData>) -> Option<&str> {
    let data = &data.filter(|d| d.api == tag())?.data;
    data.get("id").and_then(Value::as_str).filter(|id| !id.is_empty())
}
