//! The message model: what history is made of, and its stable serde form.
//!
//! Every type here serializes as tagged JSON with `snake_case` names; the form
//! is pinned by `serde_form::message_json_form_is_frozen`. Adding a variant is a minor change,
//! renaming a tag is a breaking one.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A session-minted tool-call id (a UUIDv7). Model-supplied ids never enter
/// history (invariant 4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallId(Uuid);

impl CallId {
    /// Mints a fresh time-ordered id.
    pub fn new_v7() -> Self {
        Self(Uuid::now_v7())
    }

    /// The underlying UUID.
    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl From<Uuid> for CallId {
    fn from(value: Uuid) -> Self {
        Self(value)
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallId({})", self.0)
    }
}

/// One message of a conversation.
///
/// JSON: `{"role":"user","content":[…]}`, `{"role":"assistant","content":[…],
/// "usage":{…},"stop_reason":"stop"}`, `{"role":"tool_result","call_id":"…",
/// "tool_name":"…","content":[…],"is_error":false}` (with `"usage":{…}` and
/// `"spent_by":"subagents"` when the tool spent on a model),
/// `{"role":"system","text":"…"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model; only ever the first message of a history.
    System {
        /// The system prompt.
        text: String,
    },
    /// What the person (or calling program) said.
    User {
        /// Text and images.
        content: Vec<ContentPart>,
    },
    /// A final model response: answer text, reasoning and tool calls.
    Assistant {
        /// Text, reasoning and tool-call parts in the order the model produced them.
        content: Vec<ContentPart>,
        /// Tokens this response cost.
        #[serde(default)]
        usage: Usage,
        /// Why the model stopped.
        stop_reason: StopReason,
    },
    /// The observation of one tool call.
    ToolResult {
        /// The session-minted id of the call this answers.
        call_id: CallId,
        /// The tool that was called.
        tool_name: String,
        /// What the tool returned (text and images).
        content: Vec<ContentPart>,
        /// Whether the call failed, was refused or was not run.
        #[serde(default)]
        is_error: bool,
        /// Tokens the tool itself spent on a model (an MCP server's
        /// sampling; later, a sub-agent): counted in the turn's usage and
        /// budget. Left out while zero, so older records read the same.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
        /// Whose spending `usage` is: the tool's own (an MCP server's
        /// sampling) or sub-agents'. Left out for the tool's own, so older
        /// records read the same.
        #[serde(default, skip_serializing_if = "SpentBy::is_tool")]
        spent_by: SpentBy,
    },
}

/// Whose model spending a tool result's usage is; the turn's spend is split
/// by it (`Spend::tools`, `Spend::subagents`). Set by the tool on its output
/// ([`crate::ToolOutput::with_subagent_usage`]), so no tool is told apart by
/// its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpentBy {
    /// The tool itself.
    #[default]
    Tool,
    /// Sub-agents the tool ran.
    Subagents,
}

impl SpentBy {
    /// Whether this is the tool's own spending (the default).
    pub fn is_tool(&self) -> bool {
        *self == Self::Tool
    }
}

impl Message {
    /// A user message holding one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { content: vec![ContentPart::text(text)] }
    }

    /// A tool result holding one text part.
    pub fn tool_result(
        call_id: CallId,
        tool_name: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolResult {
            call_id,
            tool_name: tool_name.into(),
            content: vec![ContentPart::text(text)],
            is_error,
            usage: Usage::default(),
            spent_by: SpentBy::Tool,
        }
    }

    /// The content parts of a user, assistant or tool-result message.
    pub fn content(&self) -> &[ContentPart] {
        match self {
            Self::System { .. } => &[],
            Self::User { content } | Self::Assistant { content, .. } | Self::ToolResult { content, .. } => {
                content
            }
        }
    }

    /// The message without its reasoning parts (for models that would not
    /// keep them); other messages are returned as they are.
    pub fn without_reasoning(&self) -> Message {
        match self {
            Message::Assistant { content, usage, stop_reason } => Message::Assistant {
                content: content
                    .iter()
                    .filter(|p| !matches!(p, ContentPart::Reasoning { .. }))
                    .cloned()
                    .collect(),
                usage: *usage,
                stop_reason: *stop_reason,
            },
            other => other.clone(),
        }
    }

    /// The message with each image replaced by a note saying it was left
    /// out (for models that do not accept images); a message without
    /// images is returned as it is.
    pub fn without_images(&self) -> Message {
        let mut message = self.clone();
        let content = match &mut message {
            Self::System { .. } => return message,
            Self::User { content } | Self::Assistant { content, .. } | Self::ToolResult { content, .. } => {
                content
            }
        };
        for part in content.iter_mut() {
            if let ContentPart::Image { media_type, data } = part {
                *part = ContentPart::text(format!(
                    "[an image ({media_type}, {}) was left out: this model does not accept images]",
                    byte_size(data.len())
                ));
            }
        }
        message
    }

    /// The concatenated text parts (for a system message, its text).
    pub fn text(&self) -> String {
        match self {
            Self::System { text } => text.clone(),
            _ => concat_text(self.content()),
        }
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCall<'_>> {
        let parts = match self {
            Self::Assistant { content, .. } => content.as_slice(),
            _ => &[],
        };
        parts.iter().filter_map(|part| match part {
            ContentPart::ToolCall { id, name, arguments, .. } => Some(ToolCall { id: *id, name, arguments }),
            _ => None,
        })
    }

    /// Whether this is a tool result flagged as an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::ToolResult { is_error: true, .. })
    }
}

/// A borrowed view of one tool-call part.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The session-minted id.
    pub id: CallId,
    /// The tool's name.
    pub name: &'a str,
    /// The argument object.
    pub arguments: &'a serde_json::Value,
}

/// Concatenates the text parts of a content list.
pub fn concat_text(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    for part in parts {
        if let ContentPart::Text { text } = part {
            out.push_str(text);
        }
    }
    out
}

/// The text parts of a content list, one per line (a prompt's words, as a
/// reader of the whole prompt sees them; [`concat_text`] joins a streamed
/// answer's pieces without a separator).
pub fn text_lines(parts: &[ContentPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// A size as people read it: `812 B`, `120 KiB`, `3.75 MiB`.
pub fn byte_size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let size = bytes as f64;
    if size < KIB {
        format!("{bytes} B")
    } else if size < KIB * KIB {
        format!("{:.0} KiB", size / KIB)
    } else {
        let mib = format!("{:.2}", size / (KIB * KIB));
        format!("{} MiB", mib.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// Concatenates the reasoning parts of a content list.
pub fn concat_reasoning(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    for part in parts {
        if let ContentPart::Reasoning { text, .. } = part {
            out.push_str(text);
        }
    }
    out
}

/// One part of a message's content.
///
/// JSON: `{"type":"text","text":"…"}`, `{"type":"image","media_type":"image/png",
/// "data":"<base64>"}`, `{"type":"reasoning","text":"…","signature":"…",
/// "provider_data":{"api":"…","data":…}}`, `{"type":"tool_call","id":"…",
/// "name":"…","arguments":{…}}`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, carried as bytes (base64 in JSON).
    Image {
        /// The IANA media type, e.g. `image/png`.
        media_type: String,
        /// The encoded image bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// Model reasoning ("thinking").
    Reasoning {
        /// The readable reasoning text (may be a summary, or empty when redacted).
        text: String,
        /// A provider's signature over the reasoning, needed to replay it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Opaque provider state (encrypted or redacted reasoning), tagged with
        /// the API that produced it so it is only replayed to that API.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_data: Option<ProviderData>,
    },
    /// A call of a tool, with the session-minted id.
    ToolCall {
        /// The session-minted id.
        id: CallId,
        /// The tool's name.
        name: String,
        /// The argument object, as the model gave it.
        arguments: serde_json::Value,
        /// Opaque provider state tied to this call (a Gemini thought
        /// signature, a Responses item id), tagged with its API so it is only
        /// replayed there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_data: Option<ProviderData>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A reasoning part with readable text only.
    pub fn reasoning(text: impl Into<String>) -> Self {
        Self::Reasoning { text: text.into(), signature: None, provider_data: None }
    }

    /// An image part.
    pub fn image(media_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Image { media_type: media_type.into(), data }
    }
}

// Images can be megabytes; print their size, not their bytes.
impl fmt::Debug for ContentPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text { text } => f.debug_struct("Text").field("text", text).finish(),
            Self::Image { media_type, data } => {
                f.debug_struct("Image").field("media_type", media_type).field("bytes", &data.len()).finish()
            }
            Self::Reasoning { text, signature, provider_data } => f
                .debug_struct("Reasoning")
                .field("text", text)
                .field("signature", &signature.as_ref().map(|_| "<signed>"))
                .field("provider_data", provider_data)
                .finish(),
            Self::ToolCall { id, name, arguments, provider_data } => f
                .debug_struct("ToolCall")
                .field("id", id)
                .field("name", name)
                .field("arguments", arguments)
                .field("provider_data", provider_data)
                .finish(),
        }
    }
}

/// Opaque provider state attached to reasoning, tagged with the wire API
/// (`anthropic-messages`, `openai-responses`, `gemini`, …) that produced it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderData {
    /// The wire API that produced the data; only that API may receive it back.
    pub api: String,
    /// The opaque payload.
    pub data: serde_json::Value,
}

impl ProviderData {
    /// Tags `data` with the API that produced it.
    pub fn new(api: impl Into<String>, data: serde_json::Value) -> Self {
        Self { api: api.into(), data }
    }
}

// The payload may be encrypted reasoning; it is opaque and not for logs.
impl fmt::Debug for ProviderData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderData").field("api", &self.api).field("data", &"<opaque>").finish()
    }
}

/// Token counts of one response (or a sum of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens not served from a cache.
    pub input: u64,
    /// Generated tokens (including reasoning, where the provider counts it so).
    pub output: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
    /// Reasoning tokens, where reported.
    pub reasoning: u64,
}

impl Usage {
    /// Whether every count is zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// Usage with input and output counts only.
    pub fn new(input: u64, output: u64) -> Self {
        Self { input, output, ..Self::default() }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input += rhs.input;
        self.output += rhs.output;
        self.cache_read += rhs.cache_read;
        self.cache_write += rhs.cache_write;
        self.reasoning += rhs.reasoning;
    }
}

/// Why a model stopped generating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end of the answer.
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The model refused.
    Refusal,
    /// The provider reported an error.
    Error,
    /// Generation was cancelled.
    Cancelled,
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// What a turn takes as input: text or content parts from the user.
#[derive(Clone, Debug)]
pub struct UserInput(pub(crate) Result<Vec<ContentPart>, &'static str>);

impl From<&str> for UserInput {
    fn from(value: &str) -> Self {
        Self(Ok(vec![ContentPart::text(value)]))
    }
}

impl From<String> for UserInput {
    fn from(value: String) -> Self {
        Self(Ok(vec![ContentPart::text(value)]))
    }
}

impl From<Vec<ContentPart>> for UserInput {
    fn from(value: Vec<ContentPart>) -> Self {
        Self(Ok(value))
    }
}

impl From<Message> for UserInput {
    fn from(value: Message) -> Self {
        match value {
            Message::User { content } => Self(Ok(content)),
            Message::System { .. } => Self(Err("a system message")),
            Message::Assistant { .. } => Self(Err("an assistant message")),
            Message::ToolResult { .. } => Self(Err("a tool result")),
        }
    }
}

/// When a message a person queued while a turn ran ([`Inbox`](crate::Inbox))
/// is delivered; journaled with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// At the running turn's next safe point (after the current tool batch
    /// commits, before the next model round; never inside a batch); as the
    /// next turn when the turn ends first.
    Steer,
    /// As a turn of its own, after the running turn ends.
    FollowUp,
}

#[cfg(test)]
mod serde_form {
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_read_as_people_read_them() {
        let shown: Vec<String> =
            [0, 812, 1024, 122_880, 1_048_576, 3_932_160, 7_549_747].into_iter().map(byte_size).collect();
        assert_eq!(shown, ["0 B", "812 B", "1 KiB", "120 KiB", "1 MiB", "3.75 MiB", "7.2 MiB"]);
    }

    #[test]
    fn without_images_leaves_a_note_in_each_images_place() {
        let message = Message::User {
            content: vec![ContentPart::text("see"), ContentPart::image("image/png", vec![0; 2048])],
        };
        let blind = message.without_images();
        assert_eq!(
            blind.content(),
            [
                ContentPart::text("see"),
                ContentPart::text(
                    "[an image (image/png, 2 KiB) was left out: this model does not accept images]"
                )
            ]
        );
        assert_eq!(Message::user("plain").without_images(), Message::user("plain"));
    }

    #[test]
    fn text_lines_puts_each_text_part_on_its_own_line() {
        let parts = [
            ContentPart::text("fix a.py"),
            ContentPart::image("image/png", vec![1]),
            ContentPart::text("and b.py"),
        ];
        assert_eq!(text_lines(&parts), "fix a.py\nand b.py");
        assert_eq!(concat_text(&parts), "fix a.pyand b.py");
        assert_eq!(text_lines(&[]), "");
    }

    #[test]
    fn message_json_form_is_frozen() {
        let id = CallId::from(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0002));
        let idj = "01900000-0000-7000-8000-000000000002";
        let samples = vec![
            (Message::System { text: "be brief".into() }, json!({"role": "system", "text": "be brief"})),
            (
                Message::User {
                    content: vec![ContentPart::text("hi"), ContentPart::image("image/png", vec![1, 2, 3])],
                },
                json!({"role": "user", "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "media_type": "image/png", "data": "AQID"}
                ]}),
            ),
            (
                Message::Assistant {
                    content: vec![
                        ContentPart::Reasoning {
                            text: "think".into(),
                            signature: Some("sig".into()),
                            provider_data: Some(ProviderData::new(
                                "anthropic-messages",
                                json!({"redacted": "x"}),
                            )),
                        },
                        ContentPart::text("ok"),
                        ContentPart::ToolCall {
                            id,
                            name: "read".into(),
                            arguments: json!({"path": "a"}),
                            provider_data: None,
                        },
                    ],
                    usage: Usage { input: 1, output: 2, cache_read: 3, cache_write: 4, reasoning: 5 },
                    stop_reason: StopReason::ToolUse,
                },
                json!({"role": "assistant", "content": [
                    {"type": "reasoning", "text": "think", "signature": "sig",
                     "provider_data": {"api": "anthropic-messages", "data": {"redacted": "x"}}},
                    {"type": "text", "text": "ok"},
                    {"type": "tool_call", "id": idj, "name": "read", "arguments": {"path": "a"}}
                ], "usage": {"input": 1, "output": 2, "cache_read": 3, "cache_write": 4, "reasoning": 5},
                "stop_reason": "tool_use"}),
            ),
            (
                Message::tool_result(id, "read", "contents", false),
                json!({"role": "tool_result", "call_id": idj, "tool_name": "read",
                       "content": [{"type": "text", "text": "contents"}], "is_error": false}),
            ),
        ];
        for (message, expected) in samples {
            let value = serde_json::to_value(&message).unwrap();
            assert_eq!(value, expected);
            assert_eq!(serde_json::from_value::<Message>(value).unwrap(), message);
        }
        for (reason, tag) in [
            (StopReason::Stop, "stop"),
            (StopReason::Length, "length"),
            (StopReason::ToolUse, "tool_use"),
            (StopReason::Refusal, "refusal"),
            (StopReason::Error, "error"),
            (StopReason::Cancelled, "cancelled"),
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), json!(tag));
        }
    }

    #[test]
    fn debug_hides_image_bytes_and_provider_payloads() {
        let image = format!("{:?}", ContentPart::image("image/png", vec![7; 4096]));
        assert!(image.contains("bytes: 4096") && !image.contains("7, 7"), "{image}");
        let data =
            format!("{:?}", ProviderData::new("openai-responses", json!({"encrypted_content": "SECRET"})));
        assert!(!data.contains("SECRET"), "{data}");
    }
}
