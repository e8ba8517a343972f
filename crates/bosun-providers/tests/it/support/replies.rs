//! Helpers for `stable_prefix.rs`: each of the four APIs configured against
//! a local server, one scripted reply as that API streams it, and the raw
//! bytes of a request body's parts.
//!
//! A reply opens with reasoning in the form its API wants sent back (a
//! signed thinking block, OpenRouter's `reasoning_details`, an encrypted
//! reasoning item, a thought signature), so every replay path is part of
//! what must stay stable; then text and tool calls, or an answer. Replies
//! are numbered, and each one's ids and signatures are its own. No reply
//! reports token usage: the session's estimate is then characters / 4
//! exactly, and the round compaction starts at is known in advance.

use bosun_providers::{Api, ApiKey, ProviderConfig, RetryPolicy};
use serde_json::{Value, json};

use super::anthropic::{block_delta, block_start, block_stop, message_delta, message_stop, text_delta};
use super::shapes::{data_events, named_events};

/// The four APIs, in the order the tests run them.
pub use super::APIS;

/// What the model says in one round.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A sentence, then these calls (tool name, arguments), in order.
    Calls(Vec<(&'static str, Value)>),
    /// The turn's answer.
    Answer(&'static str),
}

impl Reply {
    /// One call of `tool` with `arguments`.
    pub fn call(tool: &'static str, arguments: Value) -> Self {
        Self::Calls(vec![(tool, arguments)])
    }
}

/// `api`'s preset pointed at `url`, with no retries (each request takes
/// exactly the next canned reply). Chat Completions is OpenRouter's, whose
/// `reasoning_details` are sent back on every turn.
pub fn config(api: Api, url: &str) -> ProviderConfig {
    let (preset, base) = match api {
        Api::OpenAiChat => ("openrouter", format!("{url}/v1")),
        Api::AnthropicMessages => ("anthropic", url.to_owned()),
        Api::OpenAiResponses => ("openai-responses", format!("{url}/v1")),
        Api::Gemini => ("gemini", url.to_owned()),
        other => panic!("no preset for {other:?}"),
    };
    ProviderConfig::preset(preset)
        .unwrap()
        .with_base_url(base)
        .with_key(ApiKey::new("test-key"))
        .with_retry(RetryPolicy::none())
}

/// The reasoning of reply `n`.
pub fn thought(n: usize) -> String {
    format!("Step {n}: the next thing to look at.")
}

/// The sentence before reply `n`'s calls.
fn preamble(n: usize) -> String {
    format!("Looking, step {n}.")
}

/// Reply `n` as `api` streams it.
pub fn stream(api: Api, n: usize, reply: &Reply) -> Vec<u8> {
    match api {
        Api::OpenAiChat => chat(n, reply, false),
        Api::AnthropicMessages => anthropic(n, reply),
        Api::OpenAiResponses => responses(n, reply),
        Api::Gemini => gemini(n, reply),
        other => panic!("no stream for {other:?}"),
    }
}

/// Reply `n` as Chat Completions streams it: the reasoning as
/// `reasoning_content` (DeepSeek, vLLM, llama.cpp) when `reasoning_content`,
/// else as OpenRouter's `reasoning` with its `reasoning_details`.
pub fn chat(n: usize, reply: &Reply, reasoning_content: bool) -> Vec<u8> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": format!("gen-{n}"), "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let reasoning = if reasoning_content {
        json!({"role": "assistant", "reasoning_content": thought(n)})
    } else {
        json!({"role": "assistant", "reasoning": thought(n), "reasoning_details": [
            {"type": "reasoning.text", "text": thought(n), "signature": format!("sig-{n}"),
             "format": "anthropic-claude-v1", "index": 0}]})
    };
    let mut chunks = vec![chunk(reasoning, None)];
    let finish = match reply {
        Reply::Calls(calls) => {
            chunks.push(chunk(json!({"content": preamble(n)}), None));
            for (i, (name, arguments)) in calls.iter().enumerate() {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": i, "id": format!("call_{n}_{i}"), "type": "function",
                                           "function": {"name": name, "arguments": arguments.to_string()}}]}),
                    None,
                ));
            }
            "tool_calls"
        }
        Reply::Answer(text) => {
            chunks.push(chunk(json!({"content": text}), None));
            "stop"
        }
    };
    chunks.push(chunk(json!({}), Some(finish)));
    let mut body = data_events(&chunks);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn anthropic(n: usize, reply: &Reply) -> Vec<u8> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        block_start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
        block_delta(0, json!({"type": "thinking_delta", "thinking": thought(n)})),
        block_delta(0, json!({"type": "signature_delta", "signature": format!("sig-{n}")})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
    ];
    let stop = match reply {
        Reply::Calls(calls) => {
            events.extend([text_delta(1, &preamble(n)), block_stop(1)]);
            for (i, (name, arguments)) in calls.iter().enumerate() {
                let index = 2 + i as u64;
                events.extend([
                    block_start(
                        index,
                        json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": {}}),
                    ),
                    block_delta(index, json!({"type": "input_json_delta", "partial_json": arguments.to_string()})),
                    block_stop(index),
                ]);
            }
            "tool_use"
        }
        Reply::Answer(text) => {
            events.extend([text_delta(1, text), block_stop(1)]);
            "end_turn"
        }
    };
    events.extend([message_delta(stop, 0), message_stop()]);
    named_events(&events)
}

fn responses(n: usize, reply: &Reply) -> Vec<u8> {
    let mut events = Vec::new();
    let mut sequence = 0u64;
    let mut push = |mut event: Value| {
        event["sequence_number"] = json!(sequence);
        sequence += 1;
        events.push(event);
    };
    push(
        json!({"type": "response.created", "response": {"id": format!("resp_{n}"), "status": "in_progress"}}),
    );
    let reasoning_id = format!("rs_{n}");
    push(json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": reasoning_id, "type": "reasoning", "summary": []}}));
    push(json!({"type": "response.reasoning_summary_text.delta", "item_id": reasoning_id, "output_index": 0,
                "summary_index": 0, "delta": thought(n)}));
    push(json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": reasoning_id, "type": "reasoning", "encrypted_content": format!("enc-{n}"),
                         "summary": [{"type": "summary_text", "text": thought(n)}]}}));
    let text = match reply {
        Reply::Calls(_) => preamble(n),
        Reply::Answer(text) => (*text).to_owned(),
    };
    let message_id = format!("msg_{n}");
    push(json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"id": message_id, "type": "message", "role": "assistant", "content": []}}));
    push(json!({"type": "response.output_text.delta", "item_id": message_id, "output_index": 1,
                "content_index": 0, "delta": text}));
    push(json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"id": message_id, "type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": text}]}}));
    if let Reply::Calls(calls) = reply {
        for (i, (name, arguments)) in calls.iter().enumerate() {
            let (item_id, call_id, index) = (format!("fc_{n}_{i}"), format!("call_{n}_{i}"), 2 + i);
            push(json!({"type": "response.output_item.added", "output_index": index,
                        "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                                 "call_id": call_id, "name": name, "arguments": ""}}));
            push(json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                        "output_index": index, "delta": arguments.to_string()}));
            push(json!({"type": "response.output_item.done", "output_index": index,
                        "item": {"id": item_id, "type": "function_call", "status": "completed",
                                 "call_id": call_id, "name": name, "arguments": arguments.to_string()}}));
        }
    }
    push(json!({"type": "response.completed", "response": {"id": format!("resp_{n}"), "status": "completed",
                "output": [], "usage": {"input_tokens": 0, "output_tokens": 0}}}));
    named_events(&events)
}

fn gemini(n: usize, reply: &Reply) -> Vec<u8> {
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        json!({"candidates": [candidate]})
    };
    let mut chunks = vec![chunk(
        json!([{"text": thought(n), "thought": true, "thoughtSignature": format!("sig-{n}")}]),
        None,
    )];
    match reply {
        Reply::Calls(calls) => {
            chunks.push(chunk(json!([{"text": preamble(n)}]), None));
            let parts: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, arguments))| {
                    let mut part = json!({"functionCall": {"name": name, "args": arguments}});
                    // Gemini signs the first call of a response only.
                    if i == 0 {
                        part["thoughtSignature"] = json!(format!("sig-call-{n}"));
                    }
                    part
                })
                .collect();
            chunks.push(chunk(Value::Array(parts), Some("STOP")));
        }
        Reply::Answer(text) => chunks.push(chunk(json!([{"text": text}]), Some("STOP"))),
    }
    data_events(&chunks)
}

// ------------------------------------------------------------ raw request bytes

/// The raw bytes of the members of the JSON array or object `container`
/// (an object's members as `"key":value`), exactly as they were sent.
pub fn members(container: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut start = 1;
    for (at, &byte) in container.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    let last = container[start..at].trim_ascii();
                    if !last.is_empty() {
                        out.push(last);
                    }
                    break;
                }
            }
            b',' if depth == 1 => {
                out.push(container[start..at].trim_ascii());
                start = at + 1;
            }
            _ => {}
        }
    }
    out
}

/// The raw bytes of the value of top-level field `key` in the JSON object
/// `object`, exactly as sent; `None` when there is no such field.
pub fn field<'a>(object: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let name = serde_json::to_vec(key).unwrap();
    members(object).into_iter().find_map(|member| {
        let rest = member.strip_prefix(name.as_slice())?.trim_ascii_start();
        Some(rest.strip_prefix(b":")?.trim_ascii_start())
    })
}
