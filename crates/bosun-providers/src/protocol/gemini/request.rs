//! The Gemini request body: `systemInstruction`, `contents`, `tools`,
//! `toolConfig` (a set tool choice, only beside tools) and
//! `generationConfig` (an output schema as `responseJsonSchema`, JSON).
//!
//! History becomes `user` and `model` turns; consecutive messages of the
//! same role are merged into one turn (tool results and a following user
//! message share a `user` turn, so parallel calls' responses stay
//! together), and turns left without parts are dropped.
//!
//! In a `model` turn:
//! - text is sent as `{text}`;
//! - a tool call is sent as `{functionCall: {name, args}}`, with its
//!   `thoughtSignature` on the same part when the call's provider data came
//!   from Gemini (calls from other APIs go without one);
//! - reasoning is sent only when it carries a Gemini signature:
//!   `{text, thought: true, thoughtSignature}`. A signed reasoning part with
//!   no text stands for a signature that arrived on a visible text part
//!   (see `decode`): it is put back on the text part that follows it, or
//!   sent as `{text: "", thoughtSignature}` when no text follows, as Gemini
//!   sent it. A signed part kept whole (an empty text or thought part, a
//!   part of another kind) is sent back whole, in its place.
//!
//! Tool results become `functionResponse {name, response}` parts in a `user`
//! turn: `response` is `{content: text}`, or `{error: text}` for a failed
//! call (the key Gemini documents for error details). Images in a tool
//! result follow as `inlineData` parts of the same turn.
//!
//! Tool schemas are converted to the OpenAPI subset Gemini's `parameters`
//! accepts; see [`schema`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_core::message::{ProviderData, concat_text};
use bosun_core::{
    ContentPart, GenerationOptions, Message, ModelRequest, Thinking, ToolChoice, ToolDefinition,
};
use serde_json::{Map, Value, json};

use super::{SIGNATURE, tag};

/// The request body for `request`.
pub(super) fn body(request: &ModelRequest<'_>) -> Value {
    let mut body = Map::new();
    if let Some(system) = system_text(request) {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
    }
    body.insert("contents".into(), contents(&request.messages));
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
        // Only beside tools: a function-calling mode without functions is refused.
        if let Some(mode) = request.options.tool_choice.and_then(calling_mode) {
            body.insert("toolConfig".into(), json!({"functionCallingConfig": {"mode": mode}}));
        }
    }
    if let Some(config) = generation_config(&request.options) {
        body.insert("generationConfig".into(), config);
    }
    Value::Object(body)
}

/// The function-calling mode for a tool choice: `AUTO`, `ANY` (must call
/// one of the declared functions) or `NONE`. `None` for a choice this build
/// does not know: no `toolConfig` is sent and Gemini's default (`AUTO`)
/// applies.
fn calling_mode(choice: ToolChoice) -> Option<&'static str> {
    match choice {
        ToolChoice::Auto => Some("AUTO"),
        ToolChoice::Required => Some("ANY"),
        ToolChoice::None => Some("NONE"),
        _ => None,
    }
}

/// The system prompt, with any system messages of the history appended.
fn system_text(request: &ModelRequest<'_>) -> Option<String> {
    let mut pieces: Vec<&str> = request.system.into_iter().collect();
    for message in request.messages.iter() {
        if let Message::System { text } = message {
            pieces.push(text);
        }
    }
    let text = pieces.into_iter().filter(|p| !p.trim().is_empty()).collect::<Vec<_>>().join("\n\n");
    (!text.is_empty()).then_some(text)
}

fn contents(messages: &[Message]) -> Value {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message {
            Message::User { content } => ("user", user_parts(content)),
            Message::Assistant { content, .. } => ("model", model_parts(content)),
            Message::ToolResult { tool_name, content, is_error, .. } => {
                ("user", tool_result_parts(tool_name, content, *is_error))
            }
            _ => continue,
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    Value::Array(turns.into_iter().map(|(role, parts)| json!({"role": role, "parts": parts})).collect())
}

fn inline_data(media_type: &str, data: &[u8]) -> Value {
    json!({"inlineData": {"mimeType": media_type, "data": STANDARD.encode(data)}})
}

fn user_parts(content: &[ContentPart]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } if !text.is_empty() => Some(json!({"text": text})),
            ContentPart::Image { media_type, data } => Some(inline_data(media_type, data)),
            _ => None,
        })
        .collect()
}

/// The Gemini thought signature in provider data, if it came from Gemini.
fn signature(data: Option<&ProviderData>) -> Option<&str> {
    let data = data.filter(|d| d.api == tag())?;
    data.data.get(SIGNATURE).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn model_parts(content: &[ContentPart]) -> Vec<Value> {
    let mut parts = Vec::new();
    // A signature that arrived on a visible text part, waiting for that text.
    let mut pending: Option<&str> = None;
    let flush = |pending: &mut Option<&str>, parts: &mut Vec<Value>| {
        if let Some(sig) = pending.take() {
            parts.push(json!({"text": "", SIGNATURE: sig}));
        }
    };
    for part in content {
        match part {
            ContentPart::Text { text } => {
                if let Some(sig) = pending.take() {
                    parts.push(json!({"text": text, SIGNATURE: sig}));
                } else if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
            }
            ContentPart::Reasoning { text, provider_data, .. } => {
                let Some(sig) = signature(provider_data.as_ref()) else { continue };
                flush(&mut pending, &mut parts);
                if let Some(whole) = signed_part(provider_data.as_ref(), sig) {
                    parts.push(whole);
                } else if text.is_empty() {
                    pending = Some(sig);
                } else {
                    parts.push(json!({"text": text, "thought": true, SIGNATURE: sig}));
                }
            }
            ContentPart::ToolCall { name, arguments, provider_data, .. } => {
                flush(&mut pending, &mut parts);
                let mut call = json!({"functionCall": {"name": name, "args": args_object(arguments)}});
                if let Some(sig) = signature(provider_data.as_ref()) {
                    call[SIGNATURE] = json!(sig);
                }
                parts.push(call);
            }
            ContentPart::Image { media_type, data } => {
                flush(&mut pending, &mut parts);
                parts.push(inline_data(media_type, data));
            }
            _ => {}
        }
    }
    flush(&mut pending, &mut parts);
    parts
}

/// A signed part kept whole (see `decode`), with its signature, as Gemini
/// sent it; one that came without any content field gets an empty text, the
/// form Gemini itself uses for a bare signature.
fn signed_part(data: Option<&ProviderData>, sig: &str) -> Option<Value> {
    const CONTENT: [&str; 7] = [
        "text",
        "inlineData",
        "fileData",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
    ];
    let Some(Value::Object(part)) = data.and_then(|d| d.data.get("part")) else { return None };
    let mut part = part.clone();
    part.insert(SIGNATURE.into(), json!(sig));
    if !CONTENT.iter().any(|key| part.contains_key(*key)) {
        part.insert("text".into(), json!(""));
    }
    Some(Value::Object(part))
}

/// Gemini takes `args` as an object only. Arguments from Gemini always are
/// one; anything else (another API's unparsable arguments kept as a string)
/// is wrapped as `{"arguments": …}` so the turn can still be sent.
fn args_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => json!({}),
        other => json!({"arguments": other}),
    }
}

fn tool_result_parts(tool_name: &str, content: &[ContentPart], is_error: bool) -> Vec<Value> {
    let text = concat_text(content);
    let response = if is_error { json!({"error": text}) } else { json!({"content": text}) };
    let mut parts = vec![json!({"functionResponse": {"name": tool_name, "response": response}})];
    for part in content {
        if let ContentPart::Image { media_type, data } = part {
            parts.push(inline_data(media_type, data));
        }
    }
    parts
}

fn declaration(tool: &ToolDefinition) -> Value {
    let mut declaration = json!({"name": tool.name, "description": tool.description});
    // Gemini refuses an object schema without properties: a tool without
    // parameters is declared without `parameters`.
    let parameters = schema(&tool.parameters);
    if parameters.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty())) {
        declaration["parameters"] = parameters;
    }
    declaration
}

/// Converts one node of a bosun tool schema (its bounded JSON Schema
/// vocabulary) to the OpenAPI-style subset Gemini's `parameters` accepts.
/// Only keywords Gemini knows are copied; the rest are converted or dropped:
///
/// - `type: [T, "null"]` becomes `type: T, nullable: true`; several non-null
///   types become `anyOf` (when the node has no `anyOf` of its own);
/// - `const: "x"` becomes `enum: ["x"]`;
/// - `enum` and `const` with non-string values (Gemini's enums are strings
///   only) are described in `description` instead;
/// - `exclusiveMinimum`/`exclusiveMaximum` become `minimum`/`maximum` when
///   those are not set (a looser bound);
/// - `additionalProperties` and `default` are dropped, as are empty
///   `properties` (Gemini refuses them).
///
/// What is loosened or dropped still holds: the session validates every
/// call's arguments against the original schema.
pub(super) fn schema(node: &Value) -> Value {
    let Value::Object(node) = node else {
        return json!({}); // `true`: any value
    };
    let mut out = Map::new();
    let mut notes: Vec<String> = Vec::new();
    match node.get("type") {
        Some(Value::String(name)) => {
            out.insert("type".into(), json!(name));
        }
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            let others: Vec<&str> = names.iter().copied().filter(|n| *n != "null").collect();
            match others.as_slice() {
                [] => {
                    out.insert("type".into(), json!("null"));
                }
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many if !node.contains_key("anyOf") => {
                    let options: Vec<Value> = many.iter().map(|n| json!({"type": n})).collect();
                    out.insert("anyOf".into(), Value::Array(options));
                }
                _ => {}
            }
            if !others.is_empty() && others.len() < names.len() {
                out.insert("nullable".into(), json!(true));
            }
        }
        _ => {}
    }
    if let Some(Value::Object(properties)) = node.get("properties")
        && !properties.is_empty()
    {
        let converted: Map<String, Value> =
            properties.iter().map(|(name, sub)| (name.clone(), schema(sub))).collect();
        out.insert("properties".into(), Value::Object(converted));
    }
    for keyword in
        ["required", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"]
    {
        if let Some(value) = node.get(keyword) {
            out.insert(keyword.into(), value.clone());
        }
    }
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(value) = node.get(exclusive)
            && !out.contains_key(bound)
        {
            out.insert(bound.into(), value.clone());
        }
    }
    if let Some(items) = node.get("items") {
        out.insert("items".into(), schema(items));
    }
    if let Some(Value::Array(options)) = node.get("anyOf") {
        out.insert("anyOf".into(), Value::Array(options.iter().map(schema).collect()));
    }
    let values = match (node.get("enum"), node.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (_, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(values) = values {
        if values.iter().all(Value::is_string) {
            out.entry("type").or_insert_with(|| json!("string"));
            out.insert("enum".into(), Value::Array(values));
        } else {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            notes.push(match listed.as_slice() {
                [one] => format!("Must be {one}."),
                _ => format!("One of: {}.", listed.join(", ")),
            });
        }
    }
    let description = node.get("description").and_then(Value::as_str).filter(|d| !d.is_empty());
    let description = description.into_iter().map(str::to_owned).chain(notes).collect::<Vec<_>>().join(" ");
    if !description.is_empty() {
        out.insert("description".into(), json!(description));
    }
    Value::Object(out)
}

/// `generationConfig`, or `None` when every option is left to the model.
///
/// Thinking: `On` asks for thoughts (`includeThoughts`) with its budget, or
/// `-1` (Gemini decides) without one; `Off` sets a budget of 0; `Auto` and
/// unset leave `thinkingConfig` out.
fn generation_config(options: &GenerationOptions) -> Option<Value> {
    let mut config = Map::new();
    if let Some(max) = options.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = options.temperature.and_then(float) {
        config.insert("temperature".into(), temperature);
    }
    if let Some(top_p) = options.top_p.and_then(float) {
        config.insert("topP".into(), top_p);
    }
    if let Some(stop) = options.stop.as_ref().filter(|s| !s.is_empty()) {
        config.insert("stopSequences".into(), json!(stop));
    }
    if let Some(output) = &options.output_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), crate::protocol::structured::gemini_schema(output));
    }
    match options.thinking {
        Some(Thinking::On { budget }) => {
            let budget = budget.map_or(-1, i64::from);
            config
                .insert("thinkingConfig".into(), json!({"thinkingBudget": budget, "includeThoughts": true}));
        }
        Some(Thinking::Off) => {
            config.insert("thinkingConfig".into(), json!({"thinkingBudget": 0}));
        }
        Some(Thinking::Auto) | None => {}
    }
    (!config.is_empty()).then_some(Value::Object(config))
}

/// An `f32` as the decimal it was written as (`0.2`, not
/// `0.20000000298023224`); `None` when not finite.
fn float(value: f32) -> Option<Value> {
    let value: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(value).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_lose_what_gemini_refuses() {
        let converted = schema(&json!({
            "type": "object",
            "properties": {
                "mode": {"const": "fast", "description": "Speed."},
                "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
                "name": {"type": ["string", "null"], "minLength": 1},
                "either": {"type": ["string", "integer"]},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "flag": {"const": true},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "meta": {"type": "object", "properties": {}, "additionalProperties": true}
            },
            "required": ["mode"],
            "additionalProperties": false
        }));
        assert_eq!(
            converted,
            json!({
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["fast"], "description": "Speed."},
                    "level": {"type": "integer", "description": "One of: 1, 2, 3."},
                    "name": {"type": "string", "nullable": true, "minLength": 1},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
                    "flag": {"description": "Must be true."},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "meta": {"type": "object"}
                },
                "required": ["mode"]
            })
        );
    }

    #[test]
    fn floats_keep_their_written_form() {
        assert_eq!(float(0.2), Some(json!(0.2)));
        assert_eq!(float(f32::NAN), None);
    }
}
