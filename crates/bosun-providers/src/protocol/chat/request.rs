//! The Chat Completions request body: the conversation as `messages`, the
//! tools as `function` tools (with `tool_choice`, when one is set, as
//! `"auto"`, `"required"` or `"none"`), and the generation options under the
//! names the server's quirks ask for (an output schema as a `json_schema`
//! `response_format`).
//!
//! Reasoning is sent back only to the provider that produced it (the
//! `provider` in its provider data, tagged with this API), in the field it
//! came in: DeepSeek's `reasoning_content`, which its tool loops require on
//! the assistant messages of the loop in progress (those after the latest
//! user message; earlier turns' reasoning is not sent, as its API documents
//! and as servers that reject the field on old turns need), and
//! OpenRouter's `reasoning_details`, verbatim, which carry the
//! signatures and encrypted reasoning its upstream models need between tool
//! calls. Other reasoning is dropped.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_core::message::concat_text;
use bosun_core::{ContentPart, Effort, GenerationOptions, Message, ModelRequest, Thinking};
use serde_json::{Map, Value, json};

use crate::config::{Api, ProviderConfig};
use crate::protocol::openai_tool_choice;

/// The JSON body for `request`.
pub(super) fn body(config: &ProviderConfig, model: &str, request: &ModelRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages(config, request)));
    if config.quirks.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(crate::protocol::prompt_cache_key(request)));
    }
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        // Only beside tools: servers refuse `tool_choice` without them.
        if let Some(choice) = request.options.tool_choice.and_then(openai_tool_choice) {
            body.insert("tool_choice".into(), json!(choice));
        }
    }
    body.insert("stream".into(), json!(true));
    if config.quirks.stream_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    options(config, &request.options, &mut body);
    Value::Object(body)
}

fn options(config: &ProviderConfig, options: &GenerationOptions, body: &mut Map<String, Value>) {
    if let Some(max_tokens) = options.max_tokens {
        body.insert(config.quirks.max_tokens_field.into(), json!(max_tokens));
    }
    if let Some(temperature) = options.temperature.and_then(float) {
        body.insert("temperature".into(), temperature);
    }
    if let Some(top_p) = options.top_p.and_then(float) {
        body.insert("top_p".into(), top_p);
    }
    if let Some(stop) = options.stop.as_ref().filter(|s| !s.is_empty()) {
        body.insert("stop".into(), json!(stop));
    }
    if let Some(output) = &options.output_schema {
        let format = crate::protocol::structured::openai_format(output);
        body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": format}));
    }
    if let Some(Thinking::On { budget }) = options.thinking {
        let effort = match Effort::of_budget(budget) {
            Effort::Medium if !config.quirks.medium_effort => Effort::High,
            effort => effort,
        };
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
}

/// An `f32` as the JSON number it was written as (0.2, not 0.20000000298…);
/// `None` for NaN and infinities, which JSON cannot carry.
fn float(value: f32) -> Option<Value> {
    value.to_string().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
}

/// The conversation, system prompt first.
fn messages(config: &ProviderConfig, request: &ModelRequest<'_>) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    // Tool messages carry text only; images a tool returned follow the run
    // of tool messages as one user message.
    let mut tool_images: Vec<Value> = Vec::new();
    let loop_start = request.messages.iter().rposition(|m| matches!(m, Message::User { .. })).unwrap_or(0);
    for (index, message) in request.messages.iter().enumerate() {
        if !matches!(message, Message::ToolResult { .. }) {
            flush_tool_images(&mut tool_images, &mut out);
        }
        match message {
            Message::System { text } => out.push(json!({"role": "system", "content": text})),
            Message::User { content } => out.push(json!({"role": "user", "content": user_content(content)})),
            Message::Assistant { content, .. } => out.extend(assistant(config, content, index > loop_start)),
            Message::ToolResult { call_id, content, .. } => {
                let images: Vec<Value> = content.iter().filter_map(image).collect();
                let mut text = concat_text(content);
                if !images.is_empty() {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{} image(s) follow in the next message]", images.len()));
                    tool_images
                        .push(json!({"type": "text", "text": format!("Images from tool call {call_id}:")}));
                    tool_images.extend(images);
                }
                out.push(json!({"role": "tool", "tool_call_id": call_id.to_string(), "content": text}));
            }
            _ => {}
        }
    }
    flush_tool_images(&mut tool_images, &mut out);
    out
}

fn flush_tool_images(images: &mut Vec<Value>, out: &mut Vec<Value>) {
    if !images.is_empty() {
        out.push(json!({"role": "user", "content": std::mem::take(images)}));
    }
}

/// Text alone as a plain string (what every compatible server accepts);
/// with images, an array of `text` and `image_url` parts.
fn user_content(content: &[ContentPart]) -> Value {
    if !content.iter().any(|part| matches!(part, ContentPart::Image { .. })) {
        return json!(concat_text(content));
    }
    let parts = content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            other => image(other),
        })
        .collect();
    Value::Array(parts)
}

/// An image part as an `image_url` with a `data:` URL.
fn image(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Image { media_type, data } => Some(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{media_type};base64,{}", STANDARD.encode(data))},
        })),
        _ => None,
    }
}

/// An assistant message: its text, tool calls and the reasoning this
/// provider wants back; a message with neither text nor calls is left out.
fn assistant(config: &ProviderConfig, content: &[ContentPart], in_tool_loop: bool) -> Option<Value> {
    let text = concat_text(content);
    let mut reasoning_content = String::new();
    let mut details: Vec<Value> = Vec::new();
    for part in content {
        let ContentPart::Reasoning { text, provider_data: Some(tagged), .. } = part else { continue };
        let data = &tagged.data;
        if tagged.api != Api::OpenAiChat.tag() || data["provider"] != config.name.as_str() {
            continue;
        }
        if data["reasoning_content"] == true && in_tool_loop {
            reasoning_content.push_str(text);
        }
        if let Some(more) = data["reasoning_details"].as_array() {
            details.extend(more.iter().cloned());
        }
    }
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|part| match part {
            ContentPart::ToolCall { id, name, arguments, .. } => Some(json!({
                "id": id.to_string(),
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })),
            _ => None,
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
    if !reasoning_content.is_empty() {
        message.insert("reasoning_content".into(), json!(reasoning_content));
    }
    if !details.is_empty() {
        message.insert("reasoning_details".into(), Value::Array(details));
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(message))
}

#[cfg(test)]
mod cache_key_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use bosun_core::{GenerationOptions, Message, ModelRequest, ToolDefinition};

    use super::body;
    use crate::ProviderConfig;

    fn request<'a>(system: &'a str, messages: Vec<Message>) -> ModelRequest<'a> {
        let tools =
            vec![ToolDefinition::new("read_file", "Read a file.", serde_json::json!({"type": "object"}))];
        ModelRequest::new(Some(system), messages, tools, GenerationOptions::default())
    }

    #[test]
    fn openai_gets_a_prompt_cache_key_of_the_stable_prefix_and_other_servers_none() {
        let openai = ProviderConfig::preset("openai").unwrap();
        let first = body(&openai, "m", &request("sys", vec![Message::user("a")]));
        let later = body(&openai, "m", &request("sys", vec![Message::user("a"), Message::user("b")]));
        let other = body(&openai, "m", &request("another system", vec![Message::user("a")]));
        let key = first["prompt_cache_key"].as_str().unwrap();
        assert!(key.starts_with("bosun-"), "{key}");
        assert_eq!(later["prompt_cache_key"], first["prompt_cache_key"], "the history does not change it");
        assert_ne!(other["prompt_cache_key"], first["prompt_cache_key"], "the system prompt does");
        let xai = ProviderConfig::preset("xai").unwrap();
        assert!(body(&xai, "m", &request("sys", vec![Message::user("a")])).get("prompt_cache_key").is_none());
    }
}
