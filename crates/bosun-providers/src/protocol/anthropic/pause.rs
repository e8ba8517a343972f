//! A turn the API paused (`stop_reason: "pause_turn"`: a server tool's
//! sampling loop ran long) and its continuation.
//!
//! The API documents the continuation: send the request again with the
//! paused response as the last assistant message, content and all, and the
//! model carries on from there. So every content block of the stream is
//! rebuilt here as the API would return it in a non-streamed response —
//! including the server-tool blocks (`server_tool_use`,
//! `web_search_tool_result`, …) the session never sees but the continuation
//! must carry, and thinking blocks with their signatures — and the next body
//! is the last one with these blocks appended to its final assistant message
//! (a new one after the user's turn, the paused one on later pauses).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// The most continuations of one response: past this many pauses the
/// response fails with a protocol error rather than loop on.
pub(super) const MAX_CONTINUATIONS: u32 = 8;

/// The content blocks of one stream, as the API would return them whole.
#[derive(Default)]
pub(super) struct Segment {
    blocks: Vec<Value>,
    /// Wire index → position in `blocks`.
    slots: HashMap<u64, usize>,
    /// Tool input still arriving as `input_json_delta` text, by position.
    json: HashMap<usize, String>,
}

impl Segment {
    /// `content_block_start`: the block as it started.
    pub(super) fn start(&mut self, index: u64, block: &Value) {
        self.slots.insert(index, self.blocks.len());
        self.blocks.push(block.clone());
    }

    /// `content_block_delta`: text, thinking, signatures, tool input and
    /// citations added to their block.
    pub(super) fn delta(&mut self, index: u64, delta: &Value) {
        let Some(&at) = self.slots.get(&index) else { return };
        let Some(Value::Object(block)) = self.blocks.get_mut(at) else { return };
        let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => append(block, "text", piece("text")),
            Some("thinking_delta") => append(block, "thinking", piece("thinking")),
            Some("signature_delta") => append(block, "signature", piece("signature")),
            Some("input_json_delta") => self.json.entry(at).or_default().push_str(piece("partial_json")),
            Some("citations_delta") => {
                if let Some(citation) = delta.get("citation") {
                    let citations = block.entry("citations").or_insert_with(|| json!([]));
                    if let Value::Array(list) = citations {
                        list.push(citation.clone());
                    } else {
                        *citations = json!([citation]);
                    }
                }
            }
            _ => {}
        }
    }

    /// The blocks, tool inputs parsed from their streamed text (an input
    /// that does not parse stays as it started: the API accepts objects
    /// only). Empty text blocks are left out: the API refuses them.
    pub(super) fn into_blocks(mut self) -> Vec<Value> {
        for (at, text) in std::mem::take(&mut self.json) {
            if let (Some(Value::Object(block)), Ok(input @ Value::Object(_))) =
                (self.blocks.get_mut(at), serde_json::from_str::<Value>(&text))
            {
                block.insert("input".into(), input);
            }
        }
        self.blocks.retain(|b| b["type"] != "text" || b["text"].as_str().is_some_and(|t| !t.is_empty()));
        self.blocks
    }
}

fn append(block: &mut Map<String, Value>, key: &str, piece: &str) {
    match block.get_mut(key) {
        Some(Value::String(text)) => text.push_str(piece),
        _ => {
            block.insert(key.into(), json!(piece));
        }
    }
}

/// `body` (the request that was paused) with `blocks` appended to its last
/// assistant message, or in a new assistant message when the last message
/// is the user's. `None` when `body` is not a Messages request body.
pub(super) fn continued(body: &[u8], blocks: Vec<Value>) -> Option<Vec<u8>> {
    let mut body: Value = serde_json::from_slice(body).ok()?;
    let messages = body.get_mut("messages")?.as_array_mut()?;
    match messages.last_mut() {
        Some(last) if last.get("role").and_then(Value::as_str) == Some("assistant") => {
            let content = last.get_mut("content")?;
            if let Value::String(text) = content {
                *content = json!([{"type": "text", "text": text}]);
            }
            content.as_array_mut()?.extend(blocks);
        }
        _ => messages.push(json!({"role": "assistant", "content": blocks})),
    }
    // The API refuses a final assistant turn that ends in whitespace; the
    // response the caller gets keeps the text as streamed.
    if let Some(content) =
        messages.last_mut().and_then(|m| m.get_mut("content")).and_then(Value::as_array_mut)
    {
        if let Some(Value::String(text)) =
            content.last_mut().filter(|b| b["type"] == "text").map(|b| &mut b["text"])
        {
            text.truncate(text.trim_end().len());
        }
        if content.last().is_some_and(|b| b["type"] == "text" && b["text"] == "") {
            content.pop();
        }
    }
    serde_json::to_vec(&body).ok()
}

#[cfg(test)]
mod trailing {
    use serde_json::{Value, json};

    #[test]
    fn the_continued_assistant_turn_does_not_end_in_whitespace() {
        let body = serde_json::to_vec(&json!({"messages": [{"role": "user", "content": "go"}]})).unwrap();
        let blocks = vec![json!({"type": "text", "text": "Searching now.\n\n "})];
        let continued: Value = serde_json::from_slice(&super::continued(&body, blocks).unwrap()).unwrap();
        assert_eq!(continued["messages"][1]["content"], json!([{"type": "text", "text": "Searching now."}]));
        let only_space = vec![
            json!({"type": "tool_use", "id": "t", "name": "n", "input": {}}),
            json!({"type": "text", "text": " \n"}),
        ];
        let continued: Value = serde_json::from_slice(&super::continued(&body, only_space).unwrap()).unwrap();
        assert_eq!(continued["messages"][1]["content"].as_array().unwrap().len(), 1, "{continued}");
    }
}
