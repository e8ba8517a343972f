//! The ConverseStream request body: `system` text blocks, alternating
//! `messages` (tool results are user content), `toolConfig`, and
//! `inferenceConfig`. Reasoning comes back as `reasoningContent` only when
//! it was produced by Bedrock and carries its signature.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_core::{ContentPart, Message, ModelRequest, Thinking, ToolChoice};
use serde_json::{Map, Value, json};

use super::tag;

/// `maxTokens` when the options leave it unset.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body (the model is in the URL).
pub(super) fn body(request: &ModelRequest<'_>) -> Value {
    let options = &request.options;
    let mut system = Vec::new();
    if let Some(text) = request.system.filter(|t| !t.is_empty()) {
        system.push(json!({"text": text}));
    }
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter() {
        match message {
            Message::System { text } if !text.is_empty() => system.push(json!({"text": text})),
            Message::User { content } => {
                append(&mut turns, "user", content.iter().filter_map(user_block).collect())
            }
            Message::Assistant { content, .. } => {
                append(&mut turns, "assistant", content.iter().filter_map(assistant_block).collect())
            }
            Message::ToolResult { call_id, content, is_error, .. } => {
                let mut blocks: Vec<Value> = content.iter().filter_map(user_block).collect();
                if blocks.is_empty() {
                    blocks.push(json!({"text": ""}));
                }
                let status = if *is_error { "error" } else { "success" };
                let block = json!({"toolResult": {
                    "toolUseId": call_id.to_string(), "content": blocks, "status": status,
                }});
                append(&mut turns, "user", vec![block]);
            }
            _ => {}
        }
    }
    if let Some(output) = &options.output_schema {
        system.push(json!({"text": crate::protocol::structured::instruction(output)}));
    }
    let mut body = Map::new();
    let messages = turns.into_iter().map(|(role, content)| json!({"role": role, "content": content}));
    body.insert("messages".into(), Value::Array(messages.collect()));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    inference.insert("maxTokens".into(), json!(options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).max(1)));
    if let Some(t) = options.temperature.and_then(number) {
        inference.insert("temperature".into(), t);
    }
    if let Some(p) = options.top_p.and_then(number) {
        inference.insert("topP".into(), p);
    }
    if let Some(stop) = options.stop.as_ref().filter(|s| !s.is_empty()) {
        inference.insert("stopSequences".into(), json!(stop));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name, "description": t.description, "inputSchema": {"json": t.parameters},
                }})
            })
            .collect();
        let mut config = Map::new();
        config.insert("tools".into(), Value::Array(tools));
        // Converse has no "none": leaving the choice out is `auto`.
        match options.tool_choice {
            Some(ToolChoice::Required) => {
                config.insert("toolChoice".into(), json!({"any": {}}));
            }
            Some(ToolChoice::Auto) => {
                config.insert("toolChoice".into(), json!({"auto": {}}));
            }
            _ => {}
        }
        body.insert("toolConfig".into(), Value::Object(config));
    }
    // Claude's extended thinking on Bedrock travels in the model-specific
    // fields; other families ignore the request or refuse it, so it is only
    // sent when asked for.
    if let Some(Thinking::On { budget }) = options.thinking {
        let budget = budget.unwrap_or(4096).max(1024);
        body.insert(
            "additionalModelRequestFields".into(),
            json!({"thinking": {"type": "enabled", "budget_tokens": budget}}),
        );
        if let Some(Value::Object(inference)) = body.get_mut("inferenceConfig") {
            inference.remove("temperature");
            inference.remove("topP");
            let max = options.max_tokens.unwrap_or(budget.saturating_add(DEFAULT_MAX_TOKENS));
            inference.insert("maxTokens".into(), json!(max.max(budget.saturating_add(1))));
        }
    }
    Value::Object(body)
}

fn append(turns: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, content)) if *last == role => content.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

fn number(value: f32) -> Option<Value> {
    let shortest: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

/// The image format Converse names (`png`, `jpeg`, `gif`, `webp`).
fn format(media_type: &str) -> &str {
    media_type.strip_prefix("image/").map(|f| if f == "jpg" { "jpeg" } else { f }).unwrap_or("png")
}

fn user_block(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text { text } if !text.is_empty() => Some(json!({"text": text})),
        ContentPart::Image { media_type, data } => Some(json!({"image": {
            "format": format(media_type), "source": {"bytes": STANDARD.encode(data)},
        }})),
        _ => None,
    }
}

fn assistant_block(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text { text } if !text.is_empty() => Some(json!({"text": text})),
        ContentPart::Reasoning { text, signature, provider_data } => {
            let data = provider_data.as_ref().filter(|d| d.api == tag())?;
            if data.data["type"] == "redactedContent" {
                let opaque = data.data["data"].as_str()?;
                return Some(json!({"reasoningContent": {"redactedContent": opaque}}));
            }
            let signature = signature.as_deref().filter(|s| !s.is_empty())?;
            Some(json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}))
        }
        ContentPart::ToolCall { id, name, arguments, .. } => {
            let input = if arguments.is_object() { arguments.clone() } else { json!({}) };
            Some(json!({"toolUse": {"toolUseId": id.to_string(), "name": name, "input": input}}))
        }
        _ => None,
    }
}
