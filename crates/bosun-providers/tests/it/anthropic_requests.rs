//! Anthropic Messages requests: the exact request body, with its caching
//! breakpoints, thinking budget and token limits, consecutive messages
//! merged and tool results leading their turn, and what is sent back of an
//! earlier answer: signed and redacted thinking replayed, reasoning from
//! other APIs or unsigned left out; the tool choice, only beside tools.
//! (Decoding responses is in `anthropic.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use bosun_core::message::ProviderData;
use bosun_core::{
    CallId, ContentPart, GenerationOptions, Message, ModelRequest, ResponsePart, StopReason, Thinking,
    ToolChoice, ToolDefinition, Usage,
};
use serde_json::{Value, json};
use support::Canned;
use support::anthropic::{
    block_delta, block_start, block_stop, deltas, done, hello, message_delta, message_start, message_stop,
    ok_stream, serve, stream, text_delta, thinking_tag,
};

// ---------------------------------------------------------------------------
// 1. Redacted and signed thinking, kept and sent back.

#[tokio::test]
async fn redacted_thinking_is_kept_and_replayed_with_signed_thinking() {
    let body = stream(&[
        message_start(7, 0, 0),
        block_start(0, json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})),
        block_stop(0),
        block_start(1, json!({"type": "thinking", "thinking": "", "signature": ""})),
        block_delta(1, json!({"type": "thinking_delta", "thinking": "Hmm."})),
        block_delta(1, json!({"type": "signature_delta", "signature": "c2ln"})),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": ""})),
        text_delta(2, "Done."),
        block_stop(2),
        message_delta("end_turn", 9),
        message_stop(),
    ]);
    let (events, _) = serve(vec![Canned::sse(body)], hello()).await;
    let response = done(&events);
    let redacted = ContentPart::Reasoning {
        text: String::new(),
        signature: None,
        provider_data: Some(ProviderData::new(
            "anthropic-messages",
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        )),
    };
    let thinking = ContentPart::Reasoning {
        text: "Hmm.".into(),
        signature: Some("c2ln".into()),
        provider_data: Some(thinking_tag()),
    };
    assert_eq!(
        response.content,
        [
            ResponsePart::Content(redacted.clone()),
            ResponsePart::Content(thinking.clone()),
            ResponsePart::text("Done."),
        ]
    );
    assert_eq!(deltas(&events).reasoning, ["Hmm."]);

    // Put into history as the session would, then sent back.
    let content: Vec<ContentPart> = response
        .content
        .iter()
        .map(|p| match p {
            ResponsePart::Content(part) => part.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    let history = vec![
        Message::user("hi"),
        Message::Assistant { content, usage: response.usage, stop_reason: response.stop_reason },
        Message::user("and?"),
    ];
    let body = request_body(ModelRequest::new(None, history, Vec::new(), GenerationOptions::default())).await;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"},
            {"type": "text", "text": "Done."},
        ]})
    );
}

// ---------------------------------------------------------------------------
// 2. The request.

/// The JSON body the server received for `request`.
async fn request_body(request: ModelRequest<'_>) -> Value {
    let (events, requests) = serve(vec![Canned::sse(ok_stream())], request).await;
    done(&events);
    assert_eq!(requests.len(), 1);
    requests[0].json()
}

/// Compares field by field (for a readable failure), then as a whole.
fn assert_body(body: &Value, expected: &Value) {
    let (Value::Object(body_fields), Value::Object(expected_fields)) = (body, expected) else {
        panic!("not objects: {body}");
    };
    for (key, value) in expected_fields {
        assert_eq!(body_fields.get(key), Some(value), "field {key}");
    }
    let mut keys: Vec<&String> = body_fields.keys().collect();
    let mut expected_keys: Vec<&String> = expected_fields.keys().collect();
    keys.sort();
    expected_keys.sort();
    assert_eq!(keys, expected_keys);
    assert_eq!(body, expected);
}

fn tools() -> Vec<ToolDefinition> {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    vec![
        ToolDefinition::new("read", "Reads a file.", path.clone()),
        ToolDefinition::new("write", "Writes a file.", path),
    ]
}

/// A conversation: text + image, an answer with reasoning (`reasoning`), text
/// and a tool call, its result, and a new question.
fn conversation(call: CallId, reasoning: ContentPart) -> Vec<Message> {
    vec![
        Message::User {
            content: vec![
                ContentPart::text("What is in this image?"),
                ContentPart::image("image/png", vec![1, 2, 3]),
            ],
        },
        Message::Assistant {
            content: vec![
                reasoning,
                ContentPart::text("Let me read the notes."),
                ContentPart::ToolCall {
                    id: call,
                    name: "read".into(),
                    arguments: json!({"path": "notes.md"}),
                    provider_data: None,
                },
            ],
            usage: Usage::new(10, 20),
            stop_reason: StopReason::ToolUse,
        },
        Message::tool_result(call, "read", "a cat", false),
        Message::user("So what is it?"),
    ]
}

fn expected_tools() -> Value {
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    json!([
        {"name": "read", "description": "Reads a file.", "input_schema": path},
        {"name": "write", "description": "Writes a file.", "input_schema": path,
         "cache_control": {"type": "ephemeral"}},
    ])
}

fn expected_messages(call: CallId, replayed: Option<Value>) -> Value {
    let id = call.to_string();
    let mut answer = vec![
        json!({"type": "text", "text": "Let me read the notes."}),
        json!({"type": "tool_use", "id": id, "name": "read", "input": {"path": "notes.md"}}),
    ];
    if let Some(block) = replayed {
        answer.insert(0, block);
    }
    json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AQID"}},
        ]},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "a cat"}],
             "is_error": false},
            {"type": "text", "text": "So what is it?", "cache_control": {"type": "ephemeral"}},
        ]},
    ])
}

#[tokio::test]
async fn the_request_body_has_breakpoints_and_replays_anthropic_thinking() {
    let call = CallId::new_v7();
    let signed = ContentPart::Reasoning {
        text: "Look closely.".into(),
        signature: Some("sig-1".into()),
        provider_data: Some(thinking_tag()),
    };
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(4096);
    options.thinking = Some(Thinking::On { budget: Some(2000) });
    options.temperature = Some(0.5); // not allowed with thinking: left out
    options.stop = Some(vec!["END".into()]);
    let tools = tools();
    let request = ModelRequest::new(Some("You are terse."), conversation(call, signed), tools, options);
    let (events, requests) = serve(vec![Canned::sse(ok_stream())], request).await;
    assert_eq!(done(&events).text(), "ok");
    let recorded = &requests[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.header("x-api-key"), Some("test-key"));
    assert_eq!(recorded.header("anthropic-version"), Some("2023-06-01"));

    let expected = json!({
        "model": "claude",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": expected_messages(
            call,
            Some(json!({"type": "thinking", "thinking": "Look closely.", "signature": "sig-1"})),
        ),
        "tools": expected_tools(),
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "stop_sequences": ["END"],
        "stream": true,
    });
    assert_body(&recorded.json(), &expected);
}

#[tokio::test]
async fn reasoning_from_other_apis_or_unsigned_is_not_replayed() {
    let call = CallId::new_v7();
    let foreign = ContentPart::Reasoning {
        text: "Encrypted elsewhere.".into(),
        signature: Some("not-for-anthropic".into()),
        provider_data: Some(ProviderData::new("openai-responses", json!({"encrypted_content": "gAAAA"}))),
    };
    let unsigned = ContentPart::Reasoning {
        text: "No signature.".into(),
        signature: None,
        provider_data: Some(thinking_tag()),
    };
    for reasoning in [foreign, unsigned, ContentPart::reasoning("Plain text reasoning.")] {
        let mut options = GenerationOptions::default();
        options.temperature = Some(0.7);
        let request =
            ModelRequest::new(Some("You are terse."), conversation(call, reasoning), tools(), options);
        let expected = json!({
            "model": "claude",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": expected_messages(call, None),
            "tools": expected_tools(),
            "temperature": 0.7,
            "stream": true,
        });
        assert_body(&request_body(request).await, &expected);
    }
}

#[tokio::test]
async fn thinking_budget_and_token_limits() {
    let body_for = |max_tokens: Option<u32>, thinking: Option<Thinking>| {
        let mut options = GenerationOptions::default();
        options.max_tokens = max_tokens;
        options.thinking = thinking;
        options.top_p = Some(0.5);
        request_body(ModelRequest::new(None, vec![Message::user("hi")], Vec::new(), options))
    };
    let on = |budget| Some(Thinking::On { budget });
    // (max_tokens, thinking) → (max_tokens sent, budget sent)
    let cases = [
        (None, None, 8192, None),
        (Some(100), None, 100, None),
        (None, Some(Thinking::Off), 8192, None),
        (None, Some(Thinking::Auto), 8192, None),
        (None, on(None), 8192 + 4096, Some(4096)),
        (None, on(Some(10)), 8192 + 1024, Some(1024)),
        (Some(16000), on(Some(8000)), 16000, Some(8000)),
        (Some(3000), on(Some(8000)), 3000, Some(2999)),
        (Some(500), on(None), 1025, Some(1024)),
    ];
    for (max_tokens, thinking, sent_max, sent_budget) in cases {
        let body = body_for(max_tokens, thinking).await;
        let case = format!("{max_tokens:?} {thinking:?}");
        assert_eq!(body["max_tokens"], json!(sent_max), "{case}");
        match sent_budget {
            Some(budget) => {
                assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{case}");
                // top_p outside 0.95..=1 is refused with thinking: left out.
                assert!(body.get("top_p").is_none(), "{case}");
            }
            None => {
                assert!(body.get("thinking").is_none(), "{case}");
                assert_eq!(body["top_p"], json!(0.5), "{case}");
            }
        }
        assert!(body.get("system").is_none() && body.get("tools").is_none(), "{case}");
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
        );
    }
}

#[tokio::test]
async fn consecutive_messages_merge_and_tool_results_lead_their_turn() {
    let (first, second) = (CallId::new_v7(), CallId::new_v7());
    let history = vec![
        Message::System { text: "Also this.".into() },
        Message::user("one"),
        Message::user(""), // nothing to send
        Message::user("two"),
        Message::Assistant {
            content: vec![
                ContentPart::text(""),
                ContentPart::ToolCall {
                    id: first,
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id: second,
                name: "read".into(),
                arguments: json!("{not json"),
                provider_data: None,
            }],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        Message::user("wait"),
        Message::tool_result(first, "read", "A", false),
        Message::ToolResult {
            call_id: second,
            tool_name: "read".into(),
            content: Vec::new(),
            is_error: true,
            usage: Usage::default(),
            spent_by: bosun_core::SpentBy::Tool,
        },
    ];
    let body =
        request_body(ModelRequest::new(Some("Be brief."), history, Vec::new(), GenerationOptions::default()))
            .await;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief."},
               {"type": "text", "text": "Also this.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": first.to_string(), "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": second.to_string(), "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": first.to_string(),
                 "content": [{"type": "text", "text": "A"}], "is_error": false},
                {"type": "tool_result", "tool_use_id": second.to_string(), "is_error": true},
                {"type": "text", "text": "wait", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

// ---------------------------------------------------------------------------
// 3. The tool choice.

/// The body sent for one question with `tools`, `choice` and `thinking`.
async fn body_with_choice(
    tools: Vec<ToolDefinition>,
    choice: Option<ToolChoice>,
    thinking: Option<Thinking>,
) -> Value {
    let mut options = GenerationOptions::default();
    options.tool_choice = choice;
    options.thinking = thinking;
    request_body(ModelRequest::new(None, vec![Message::user("hi")], tools, options)).await
}

#[tokio::test]
async fn tool_choice_is_a_typed_object_beside_tools_and_absent_without_them() {
    let unset = body_with_choice(tools(), None, None).await;
    assert!(unset.get("tool_choice").is_none(), "{unset}");
    assert_eq!(unset["tools"], expected_tools());
    for (choice, kind) in
        [(ToolChoice::Required, "any"), (ToolChoice::None, "none"), (ToolChoice::Auto, "auto")]
    {
        let body = body_with_choice(tools(), Some(choice), None).await;
        assert_eq!(body["tool_choice"], json!({"type": kind}), "{choice:?}");
        let mut expected = unset.clone();
        expected["tool_choice"] = json!({"type": kind});
        assert_body(&body, &expected);
    }
    let toolless = body_with_choice(Vec::new(), None, None).await;
    assert!(toolless.get("tools").is_none(), "{toolless}");
    for choice in [ToolChoice::Required, ToolChoice::None, ToolChoice::Auto] {
        assert_body(&body_with_choice(Vec::new(), Some(choice), None).await, &toolless);
    }
}

#[tokio::test]
async fn required_falls_back_to_auto_with_thinking_on() {
    let thinking = Some(Thinking::On { budget: Some(2000) });
    let body = body_with_choice(tools(), Some(ToolChoice::Required), thinking).await;
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2000}));
    assert_eq!(body["tool_choice"], json!({"type": "auto"}), "the API refuses `any` with thinking");
    let body = body_with_choice(tools(), Some(ToolChoice::None), thinking).await;
    assert_eq!(body["tool_choice"], json!({"type": "none"}), "`none` is allowed with thinking");
    // Thinking off or left to the model is not extended thinking: `any` stands.
    for off in [Thinking::Off, Thinking::Auto] {
        let body = body_with_choice(tools(), Some(ToolChoice::Required), Some(off)).await;
        assert!(body.get("thinking").is_none(), "{off:?}");
        assert_eq!(body["tool_choice"], json!({"type": "any"}), "{off:?}");
    }
}
