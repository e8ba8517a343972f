//! What a chat template supports, found by rendering probe conversations.
//!
//! Each probe renders a small conversation carrying a marker string and looks
//! for the marker in the output (llama.cpp's `common/jinja/caps.cpp` does the
//! same by recording which inputs a template reads). A template that raises or
//! fails on a probe simply lacks that capability.
//!
//! | capability | probe |
//! |---|---|
//! | `system_role` | a system message's content appears |
//! | `tools` | a tool's name appears (the tool-use template when there is one) |
//! | `tool_calls` | an assistant tool call's argument value appears (object, else JSON text) |
//! | `object_arguments` | the argument object's key and value appear when passed as an object |
//! | `parallel_calls` | both calls of a two-call assistant message appear |
//! | `preserve_reasoning` | `reasoning_content` of an assistant message before the last user message appears |
//! | `thinking_toggle` | `enable_thinking` false and true render differently |
//! | `call_format` | how a rendered assistant call is marked up: `<tool_call>`, `<function=`, or neither |

use bosun_core::{Capabilities, Support};
use serde_json::json;

use super::convert::{TemplateMessage, TemplateTool, TemplateToolCall};
use super::{ChatTemplate, Request};

const SYSTEM_MARK: &str = "bosun_probe_system_5e1c";
const TOOL_MARK: &str = "bosun_probe_tool_5e1c";
const CALL_TOOL: &str = "bosun_probe";
const ARG_KEY: &str = "bosun_probe_key";
const ARG_MARK: &str = "bosun_probe_value_5e1c";
const SECOND_MARK: &str = "bosun_probe_second_5e1c";
const REASONING_MARK: &str = "bosun_probe_reasoning_5e1c";

/// How a template writes an assistant's tool call, so that a call the
/// engine forces is written the way the model saw calls written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallFormat {
    /// Hermes tags: `<tool_call>{"name": …, "arguments": …}</tool_call>` (Qwen2.5, Qwen3).
    Tagged,
    /// Function tags: `<function=NAME>…</function>` (Llama 3.1, Functionary, Qwen3-Coder).
    Functions,
    /// Neither: JSON on its own (Llama 3.2), or calls do not render at all.
    #[default]
    Bare,
}

/// What a chat template supports, as found by rendering probes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TemplateCaps {
    /// System messages are rendered (else the system prompt is merged into the first user message).
    pub system_role: bool,
    /// Tool definitions are rendered.
    pub tools: bool,
    /// Assistant tool calls in history are rendered.
    pub tool_calls: bool,
    /// Tool-call arguments are rendered when passed as an object (else they are passed as JSON text).
    pub object_arguments: bool,
    /// Several tool calls in one assistant message are all rendered.
    pub parallel_calls: bool,
    /// Reasoning of earlier turns (before the last user message) is kept in the prompt.
    pub preserve_reasoning: bool,
    /// `enable_thinking` changes the prompt.
    pub thinking_toggle: bool,
    /// How an assistant's call is marked up.
    pub call_format: CallFormat,
}

impl TemplateCaps {
    /// The capabilities a [`bosun_core::Model`] running this template reports:
    /// tools need both tool definitions and tool calls to render; parallel
    /// calls need tools too; reasoning replay is `preserve_reasoning`.
    pub fn to_capabilities(&self) -> Capabilities {
        let support = |yes: bool| if yes { Support::Yes } else { Support::No };
        let tools = self.tools && self.tool_calls;
        let mut capabilities = Capabilities::default();
        capabilities.system_role = support(self.system_role);
        capabilities.tools = support(tools);
        capabilities.parallel_calls = support(tools && self.parallel_calls);
        capabilities.reasoning_replay = support(self.preserve_reasoning);
        capabilities.thinking_toggle = support(self.thinking_toggle);
        // The engine loads no vision projector: an image could only reach
        // the model as a placeholder, so a message with one is refused.
        capabilities.images = Support::No;
        capabilities
    }
}

/// Runs every probe against `template`.
pub(super) fn probe(template: &ChatTemplate) -> TemplateCaps {
    let named_tools = [TemplateTool::new(
        TOOL_MARK,
        "Probe tool.",
        json!({"type": "object", "properties": {ARG_KEY: {"type": "string"}}}),
    )];
    let call_tools = [TemplateTool::new(
        CALL_TOOL,
        "Probe tool.",
        json!({"type": "object", "properties": {ARG_KEY: {"type": "string"}}}),
    )];

    let system = [TemplateMessage::system(SYSTEM_MARK), TemplateMessage::user("Hello.")];
    let system_role = shows(template, &system, None, None, &[SYSTEM_MARK]);
    let tools =
        shows(template, &[TemplateMessage::user("Hello.")], Some(&named_tools[..]), None, &[TOOL_MARK]);
    let (tool_calls, object_arguments) = probe_calls(template, &call_tools);
    let call_format = if tool_calls {
        let rendered = render(
            template,
            &call_conversation(vec![call("call_1", ARG_MARK, !object_arguments)]),
            Some(&call_tools[..]),
            None,
        )
        .unwrap_or_default();
        if rendered.contains("<tool_call>") {
            CallFormat::Tagged
        } else if rendered.contains("<function=") {
            CallFormat::Functions
        } else {
            CallFormat::Bare
        }
    } else {
        CallFormat::Bare
    };
    let parallel_calls = tool_calls && {
        let calls =
            vec![call("call_1", ARG_MARK, !object_arguments), call("call_2", SECOND_MARK, !object_arguments)];
        shows(template, &call_conversation(calls), Some(&call_tools[..]), None, &[ARG_MARK, SECOND_MARK])
    };
    let history = [
        TemplateMessage::user("What is 1 + 1?"),
        TemplateMessage::assistant("2", Some(REASONING_MARK.into()), Vec::new()),
        TemplateMessage::user("And 2 + 2?"),
    ];
    let preserve_reasoning = shows(template, &history, None, None, &[REASONING_MARK]);
    let hello = [TemplateMessage::user("Hello.")];
    let thinking_toggle =
        match (render(template, &hello, None, Some(false)), render(template, &hello, None, Some(true))) {
            (Some(off), Some(on)) => off != on,
            _ => false,
        };
    TemplateCaps {
        system_role,
        tools,
        tool_calls,
        object_arguments,
        parallel_calls,
        preserve_reasoning,
        thinking_toggle,
        call_format,
    }
}

/// Whether tool calls render, and whether they do with object arguments.
fn probe_calls(template: &ChatTemplate, tools: &[TemplateTool]) -> (bool, bool) {
    let object =
        render(template, &call_conversation(vec![call("call_1", ARG_MARK, false)]), Some(tools), None);
    let object = object.filter(|output| output.contains(ARG_MARK));
    if object.as_ref().is_some_and(|output| output.contains(ARG_KEY)) {
        return (true, true);
    }
    let string = call_conversation(vec![call("call_1", ARG_MARK, true)]);
    if shows(template, &string, Some(tools), None, &[ARG_MARK]) {
        return (true, false);
    }
    // The value shows without its key: the object was still consumed.
    (object.is_some(), object.is_some())
}

fn call(id: &str, value: &str, string_arguments: bool) -> TemplateToolCall {
    TemplateToolCall::new(id, CALL_TOOL, &json!({ARG_KEY: value}), string_arguments)
}

/// A user request, the assistant's calls and one result per call.
fn call_conversation(calls: Vec<TemplateToolCall>) -> Vec<TemplateMessage> {
    let results: Vec<TemplateMessage> = calls
        .iter()
        .map(|call| TemplateMessage::tool(call.id.as_str(), call.function.name.as_str(), "Done."))
        .collect();
    let mut messages = vec![TemplateMessage::user("Hello."), TemplateMessage::assistant("", None, calls)];
    messages.extend(results);
    messages
}

/// Renders with a generation prompt; `None` when the template fails.
fn render(
    template: &ChatTemplate,
    messages: &[TemplateMessage],
    tools: Option<&[TemplateTool]>,
    enable_thinking: Option<bool>,
) -> Option<String> {
    let request = Request { messages, tools, add_generation_prompt: true, enable_thinking };
    template.render_request(&request).ok()
}

/// Whether the rendering succeeds and shows every marker.
fn shows(
    template: &ChatTemplate,
    messages: &[TemplateMessage],
    tools: Option<&[TemplateTool]>,
    enable_thinking: Option<bool>,
    markers: &[&str],
) -> bool {
    render(template, messages, tools, enable_thinking)
        .is_some_and(|output| markers.iter().all(|marker| output.contains(marker)))
}
