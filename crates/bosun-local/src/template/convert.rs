//! bosun's messages and tools in the OpenAI/HF shape chat templates expect.
//!
//! - user → `{"role": "user", "content": text}`; an image part becomes the
//!   placeholder [`IMAGE_PLACEHOLDER`] on a line of its own (local models here
//!   are text-only, and the model should know something was there).
//! - assistant → `{"role": "assistant", "content": text, "reasoning_content":
//!   reasoning, "tool_calls": [{"id", "type": "function", "function": {"name",
//!   "arguments"}}]}`. `content` is `""`, never null, when there is only tool
//!   calls (Qwen2.5 tests `if message.content`, others concatenate it);
//!   `reasoning_content` only when there is reasoning text; `tool_calls` only
//!   when there are calls (templates test `'tool_calls' in message`).
//!   Arguments are the argument object, or its JSON text (Python separators)
//!   for a template that only renders string arguments.
//! - tool result → `{"role": "tool", "content": text, "tool_call_id", "name"}`.
//! - the system prompt → `{"role": "system", "content"}` first, or merged into
//!   the first user message as `"{system}\n\n{user text}"` when the template has
//!   no system role (a user message holding only the system text is inserted
//!   when the conversation does not start with one). System messages found
//!   inside the history are appended to the system prompt the same way.
//!
//! Fields keep the order written here (struct order survives into minijinja),
//! so `tool | tojson` prints `{"type": "function", "function": {"name": …,
//! "description": …, "parameters": …}}` as HF does; see `json` for schema keys.

use bosun_core::message::{concat_reasoning, concat_text};
use bosun_core::{ContentPart, Message, ToolDefinition};
use serde::Serialize;

use super::json::{JsonStyle, dumps};

/// What an image part becomes in the prompt text.
pub const IMAGE_PLACEHOLDER: &str = "[image omitted]";

/// One message as a template sees it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TemplateMessage {
    pub role: &'static str,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<TemplateToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl TemplateMessage {
    fn plain(role: &'static str, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    pub(crate) fn system(content: impl Into<String>) -> Self {
        Self::plain("system", content)
    }

    pub(crate) fn user(content: impl Into<String>) -> Self {
        Self::plain("user", content)
    }

    pub(crate) fn assistant(
        content: impl Into<String>,
        reasoning: Option<String>,
        tool_calls: Vec<TemplateToolCall>,
    ) -> Self {
        Self { reasoning_content: reasoning, tool_calls, ..Self::plain("assistant", content) }
    }

    pub(crate) fn tool(id: impl Into<String>, name: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(id.into()), name: Some(name.into()), ..Self::plain("tool", content) }
    }
}

/// One tool call in an assistant message.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TemplateToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCall,
}

/// The function part of a tool call.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FunctionCall {
    pub name: String,
    pub arguments: serde_json::Value,
}

impl TemplateToolCall {
    /// A call; `string_arguments` passes the arguments as JSON text instead of an object.
    pub(crate) fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
        string_arguments: bool,
    ) -> Self {
        let arguments = if string_arguments {
            let text = dumps(arguments, &JsonStyle::default()).unwrap_or_else(|_| arguments.to_string());
            serde_json::Value::String(text)
        } else {
            arguments.clone()
        };
        Self { id: id.into(), kind: "function", function: FunctionCall { name: name.into(), arguments } }
    }
}

/// One tool definition: `{"type": "function", "function": {…}}`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TemplateTool {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionDefinition,
}

/// The function part of a tool definition.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FunctionDefinition {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

impl TemplateTool {
    pub(crate) fn new(name: &str, description: &str, parameters: serde_json::Value) -> Self {
        Self {
            kind: "function",
            function: FunctionDefinition { name: name.into(), description: description.into(), parameters },
        }
    }
}

/// The tools of a request in template form.
pub(crate) fn tools(definitions: &[ToolDefinition]) -> Vec<TemplateTool> {
    definitions
        .iter()
        .map(|tool| TemplateTool::new(&tool.name, &tool.description, tool.parameters.clone()))
        .collect()
}

/// The text of user or tool-result content, with images as placeholders.
fn user_text(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    let mut after_image = false;
    for part in parts {
        match part {
            ContentPart::Text { text } => {
                if after_image && !text.starts_with('\n') {
                    out.push('\n');
                }
                out.push_str(text);
                after_image = false;
            }
            ContentPart::Image { .. } => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(IMAGE_PLACEHOLDER);
                after_image = true;
            }
            _ => {}
        }
    }
    out
}

/// The conversation in template form: the system prompt (plus any system
/// messages in `history`) first or merged into the first user message.
pub(crate) fn messages(
    system: Option<&str>,
    history: &[Message],
    system_role: bool,
    string_arguments: bool,
) -> Vec<TemplateMessage> {
    let mut system_text: Vec<&str> = system.into_iter().filter(|text| !text.is_empty()).collect();
    let mut out = Vec::with_capacity(history.len() + 1);
    for message in history {
        match message {
            Message::System { text } if !text.is_empty() => system_text.push(text),
            Message::User { content } => out.push(TemplateMessage::user(user_text(content))),
            Message::Assistant { content, .. } => {
                let reasoning = concat_reasoning(content);
                let calls = message
                    .tool_calls()
                    .map(|call| {
                        TemplateToolCall::new(
                            call.id.to_string(),
                            call.name,
                            call.arguments,
                            string_arguments,
                        )
                    })
                    .collect();
                out.push(TemplateMessage::assistant(
                    concat_text(content),
                    (!reasoning.is_empty()).then_some(reasoning),
                    calls,
                ));
            }
            Message::ToolResult { call_id, tool_name, content, .. } => {
                out.push(TemplateMessage::tool(call_id.to_string(), tool_name.as_str(), user_text(content)));
            }
            _ => {}
        }
    }
    if system_text.is_empty() {
        return out;
    }
    let system = system_text.join("\n\n");
    if system_role {
        out.insert(0, TemplateMessage::system(system));
    } else {
        merge_into_first_user(&mut out, system);
    }
    out
}

/// Prepends `system` to the first message when it is a user message, else
/// inserts a user message holding it.
fn merge_into_first_user(messages: &mut Vec<TemplateMessage>, system: String) {
    match messages.first_mut() {
        Some(first) if first.role == "user" => {
            first.content =
                if first.content.is_empty() { system } else { format!("{system}\n\n{}", first.content) };
        }
        _ => messages.insert(0, TemplateMessage::user(system)),
    }
}

#[cfg(test)]
mod tests {
    use bosun_core::{CallId, StopReason, Usage};
    use serde_json::json;

    use super::*;

    #[test]
    fn images_become_placeholders_on_their_own_line() {
        let parts = vec![
            ContentPart::text("look:"),
            ContentPart::image("image/png", vec![1]),
            ContentPart::text("ok"),
        ];
        assert_eq!(user_text(&parts), "look:\n[image omitted]\nok");
        assert_eq!(user_text(&[ContentPart::image("image/png", vec![1])]), "[image omitted]");
    }

    #[test]
    fn system_is_merged_into_the_first_user_message_without_a_system_role() {
        let history = vec![Message::user("Hi")];
        let merged = messages(Some("Be brief."), &history, false, false);
        assert_eq!(merged.len(), 1);
        assert_eq!((merged[0].role, merged[0].content.as_str()), ("user", "Be brief.\n\nHi"));
        let kept = messages(Some("Be brief."), &history, true, false);
        assert_eq!((kept[0].role, kept[0].content.as_str()), ("system", "Be brief."));
        let alone = messages(Some("Be brief."), &[], false, false);
        assert_eq!((alone[0].role, alone[0].content.as_str()), ("user", "Be brief."));
    }

    #[test]
    fn assistant_calls_carry_object_or_string_arguments() {
        let id = CallId::new_v7();
        let history = vec![Message::Assistant {
            content: vec![
                ContentPart::reasoning("hmm"),
                ContentPart::ToolCall {
                    id,
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        }];
        let object = messages(None, &history, true, false);
        assert_eq!(object[0].content, "");
        assert_eq!(object[0].reasoning_content.as_deref(), Some("hmm"));
        assert_eq!(object[0].tool_calls[0].function.arguments, json!({"path": "a"}));
        assert_eq!(object[0].tool_calls[0].id, id.to_string());
        let string = messages(None, &history, true, true);
        assert_eq!(string[0].tool_calls[0].function.arguments, json!(r#"{"path": "a"}"#));
    }
}
