//! The Anthropic Messages request body: the system prompt as text blocks,
//! history as strictly alternating user/assistant turns (tool results are
//! user content), tools and the tool choice, thinking, sampling options, an
//! output schema as a system instruction, and the three prompt-caching
//! breakpoints.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_core::{
    ContentPart, GenerationOptions, Message, ModelRequest, Thinking, ToolChoice, ToolDefinition,
};
use serde_json::{Map, Value, json};

use super::tag;

/// `max_tokens` when the options leave it unset (the API requires one).
pub(super) const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The thinking budget for `Thinking::On { budget: None }`.
pub(super) const DEFAULT_THINKING_BUDGET: u32 = 4096;
/// The smallest budget the API accepts.
pub(super) const MIN_THINKING_BUDGET: u32 = 1024;
/// Sampling with thinking on is only allowed for `top_p` in this range.
const THINKING_TOP_P: std::ops::RangeInclusive<f32> = 0.95..=1.0;

/// The request body for `model`.
///
/// Option rules: `max_tokens` defaults to [`DEFAULT_MAX_TOKENS`] (plus the
/// thinking budget when thinking is on, so the answer keeps its room); with
/// thinking on, the budget (default [`DEFAULT_THINKING_BUDGET`], at least
/// [`MIN_THINKING_BUDGET`]) is kept below `max_tokens`, shrinking the budget
/// or, below the minimum, raising `max_tokens`. Thinking `Off` and `Auto`
/// send nothing. Temperature is not sent with thinking on (the API refuses
/// it), nor `top_p` outside 0.95..=1; when both temperature and `top_p` are
/// set only temperature is sent (current models refuse both).
///
/// A tool choice is sent only when the request offers tools; see
/// [`tool_choice`] for its form and its one exception with thinking on.
pub(super) fn body(model: &str, request: &ModelRequest<'_>) -> Value {
    let options = &request.options;
    let (max_tokens, budget) = limits(options);
    let mut system = Vec::new();
    if let Some(text) = request.system {
        push_system(&mut system, text);
    }
    let messages = messages(&request.messages, &mut system);
    // The API has no structured-output field: the schema is an instruction,
    // last, so the cached prefix before it stays the same without one.
    if let Some(output) = &options.output_schema {
        push_system(&mut system, &crate::protocol::structured::instruction(output));
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(Value::Object(last)) = system.last_mut() {
        last.insert("cache_control".into(), ephemeral());
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools(&request.tools)));
        // Only beside tools: the API refuses `tool_choice` without them.
        if let Some(choice) = options.tool_choice.and_then(|c| tool_choice(c, budget.is_some())) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(budget) = budget {
        body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
    }
    let temperature = options.temperature.filter(|_| budget.is_none()).and_then(number);
    let top_p = options
        .top_p
        .filter(|p| budget.is_none() || THINKING_TOP_P.contains(p))
        .filter(|_| temperature.is_none())
        .and_then(number);
    if let Some(temperature) = temperature {
        body.insert("temperature".into(), temperature);
    }
    if let Some(top_p) = top_p {
        body.insert("top_p".into(), top_p);
    }
    if let Some(stop) = options.stop.as_ref().filter(|s| !s.is_empty()) {
        body.insert("stop_sequences".into(), json!(stop));
    }
    body.insert("stream".into(), Value::Bool(true));
    Value::Object(body)
}

/// The `tool_choice` object for `choice`: `auto`, `any` (what the API
/// calls "must use a tool") or `none`.
///
/// With extended thinking on the API accepts only `auto` and `none`, and
/// refuses the request outright for `any`. Required then falls back to
/// `auto`: the turn still gets its answer (the model may well call a tool),
/// where dropping thinking instead would silently change the reasoning the
/// caller asked for. `None` for a choice this build does not know: the field
/// is left out and the API's default (`auto`) applies.
fn tool_choice(choice: ToolChoice, thinking: bool) -> Option<Value> {
    let kind = match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::Required if thinking => "auto",
        ToolChoice::Required => "any",
        ToolChoice::None => "none",
        _ => return None,
    };
    Some(json!({"type": kind}))
}

/// `max_tokens` and the thinking budget (when thinking is on).
fn limits(options: &GenerationOptions) -> (u32, Option<u32>) {
    let budget = match options.thinking {
        Some(Thinking::On { budget }) => {
            Some(budget.unwrap_or(DEFAULT_THINKING_BUDGET).max(MIN_THINKING_BUDGET))
        }
        _ => None,
    };
    match (options.max_tokens, budget) {
        (None, None) => (DEFAULT_MAX_TOKENS, None),
        (Some(max), None) => (max.max(1), None),
        (None, Some(budget)) => (budget.saturating_add(DEFAULT_MAX_TOKENS), Some(budget)),
        (Some(max), Some(budget)) => {
            let budget = budget.min(max.saturating_sub(1)).max(MIN_THINKING_BUDGET);
            (max.max(budget.saturating_add(1)), Some(budget))
        }
    }
}

/// A sampling value as the shortest decimal that reads back as the same
/// `f32` (`0.7`, not `0.699999988079071`); `None` for NaN and infinities.
fn number(value: f32) -> Option<Value> {
    let shortest: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn push_system(system: &mut Vec<Value>, text: &str) {
    if !text.is_empty() {
        system.push(json!({"type": "text", "text": text}));
    }
}

fn tools(definitions: &[ToolDefinition]) -> Vec<Value> {
    let mut tools: Vec<Value> = definitions
        .iter()
        .map(|tool| {
            json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
        })
        .collect();
    if let Some(Value::Object(last)) = tools.last_mut() {
        last.insert("cache_control".into(), ephemeral());
    }
    tools
}

/// One turn being built.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// History as alternating turns. Consecutive messages of one role are
/// merged (tool results join the user turn, ahead of its other content, as
/// the API requires); messages with nothing to send are left out; system
/// messages found in history join `system`. The last block of the latest
/// user turn gets a caching breakpoint.
fn messages(history: &[Message], system: &mut Vec<Value>) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::new();
    for message in history {
        match message {
            Message::System { text } => push_system(system, text),
            Message::User { content } => {
                let blocks = content.iter().filter_map(user_block).collect();
                append(&mut turns, "user", blocks);
            }
            Message::Assistant { content, .. } => {
                let blocks = content.iter().filter_map(assistant_block).collect();
                append(&mut turns, "assistant", blocks);
            }
            Message::ToolResult { call_id, content, is_error, .. } => {
                let mut block = Map::new();
                block.insert("type".into(), json!("tool_result"));
                block.insert("tool_use_id".into(), json!(call_id.to_string()));
                let content: Vec<Value> = content.iter().filter_map(user_block).collect();
                if !content.is_empty() {
                    block.insert("content".into(), Value::Array(content));
                }
                block.insert("is_error".into(), Value::Bool(*is_error));
                let turn = turn_for(&mut turns, "user");
                let at = turn.blocks.iter().take_while(|b| b["type"] == "tool_result").count();
                turn.blocks.insert(at, Value::Object(block));
            }
            _ => {}
        }
    }
    if let Some(turn) = turns.iter_mut().rev().find(|t| t.role == "user")
        && let Some(Value::Object(last)) = turn.blocks.last_mut()
    {
        last.insert("cache_control".into(), ephemeral());
    }
    turns.into_iter().map(|turn| json!({"role": turn.role, "content": turn.blocks})).collect()
}

fn append(turns: &mut Vec<Turn>, role: &'static str, blocks: Vec<Value>) {
    if !blocks.is_empty() {
        turn_for(turns, role).blocks.extend(blocks);
    }
}

/// The last turn if it has `role`, else a new one.
fn turn_for<'t>(turns: &'t mut Vec<Turn>, role: &'static str) -> &'t mut Turn {
    if turns.last().is_none_or(|t| t.role != role) {
        turns.push(Turn { role, blocks: Vec::new() });
    }
    let last = turns.len() - 1;
    &mut turns[last]
}

/// A user (or tool-result) content block: non-empty text and images.
fn user_block(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
        ContentPart::Image { media_type, data } => Some(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": STANDARD.encode(data)},
        })),
        _ => None,
    }
}

/// An assistant content block: non-empty text, replayable thinking, tool
/// calls (with the session's call id, the one tool results refer to).
/// Arguments that are not an object (text the model produced that did not
/// parse) are sent as `{}`: the API accepts only objects, and the tool
/// result already told the model what went wrong.
fn assistant_block(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
        ContentPart::Reasoning { text, signature, provider_data } => {
            let data = provider_data.as_ref().filter(|d| d.api == tag())?;
            if data.data["type"] == "redacted_thinking" {
                let opaque = data.data["data"].as_str()?;
                return Some(json!({"type": "redacted_thinking", "data": opaque}));
            }
            let signature = signature.as_deref().filter(|s| !s.is_empty())?;
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        ContentPart::ToolCall { id, name, arguments, .. } => {
            let input = if arguments.is_object() { arguments.clone() } else { json!({}) };
            Some(json!({"type": "tool_use", "id": id.to_string(), "name": name, "input": input}))
        }
        _ => None,
    }
}
