//! Chat templates rendered byte for byte and probed, with published templates:
//! Qwen2.5-Instruct's (Hermes-style tools, `tokenizer_config.json` of
//! Qwen/Qwen2.5-0.5B-Instruct), Qwen3's (thinking toggle), SmolLM2's (plain
//! ChatML, no tools) and Gemma 2's (no system role). The expected texts are
//! written from the templates' documented formats; tool-schema keys are sorted
//! (see `template::json`), the wrapper keys keep HF's order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_core::{CallId, ContentPart, Message, StopReason, Support, ToolDefinition, Usage};
use bosun_local::template::{CallFormat, ChatTemplate, RenderOptions, TemplateCaps, TemplateError};
use serde_json::json;

const QWEN25: &str = include_str!("../templates/qwen2.5.jinja");
const QWEN3: &str = include_str!("../templates/qwen3.jinja");
const SMOLLM2: &str = include_str!("../templates/smollm2.jinja");
const GEMMA2: &str = include_str!("../templates/gemma2.jinja");

fn call_id(n: u8) -> CallId {
    serde_json::from_value(json!(format!("01900000-0000-7000-8000-0000000000{n:02}"))).unwrap()
}

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "read_file",
            "Read a file from the workspace.",
            json!({"type": "object", "properties": {"path": {"type": "string",
                "description": "Path relative to the workspace."}}, "required": ["path"]}),
        ),
        ToolDefinition::new(
            "run_shell",
            "Run a shell command.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
    ]
}

fn assistant(parts: Vec<ContentPart>, stop_reason: StopReason) -> Message {
    Message::Assistant { content: parts, usage: Usage::default(), stop_reason }
}

fn tool_call(n: u8, name: &str, arguments: serde_json::Value) -> ContentPart {
    ContentPart::ToolCall { id: call_id(n), name: name.into(), arguments, provider_data: None }
}

/// user, assistant tool call, tool result.
fn tool_conversation() -> Vec<Message> {
    vec![
        Message::user("Show me src/main.rs."),
        assistant(vec![tool_call(1, "read_file", json!({"path": "src/main.rs"}))], StopReason::ToolUse),
        Message::tool_result(call_id(1), "read_file", "fn main() {}", false),
    ]
}

fn generation() -> RenderOptions {
    RenderOptions { add_generation_prompt: true, enable_thinking: None }
}

const QWEN_TOOLS_HEADER: &str = "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n\
{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"Read a file from the workspace.\", \
\"parameters\": {\"properties\": {\"path\": {\"description\": \"Path relative to the workspace.\", \"type\": \"string\"}}, \
\"required\": [\"path\"], \"type\": \"object\"}}}\n\
{\"type\": \"function\", \"function\": {\"name\": \"run_shell\", \"description\": \"Run a shell command.\", \
\"parameters\": {\"properties\": {\"command\": {\"type\": \"string\"}}, \"required\": [\"command\"], \"type\": \"object\"}}}\n\
</tools>\n\nFor each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n\
</tool_call><|im_end|>\n";

#[test]
fn qwen25_renders_a_tool_conversation_byte_for_byte() {
    let template = ChatTemplate::new(QWEN25, None, "", "<|im_end|>").unwrap();
    let out = template
        .render(Some("You are a coding agent."), &tool_conversation(), &tools(), &generation())
        .unwrap();
    let expected = format!(
        "<|im_start|>system\nYou are a coding agent.{QWEN_TOOLS_HEADER}\
         <|im_start|>user\nShow me src/main.rs.<|im_end|>\n\
         <|im_start|>assistant\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"src/main.rs\"}}}}\n\
         </tool_call><|im_end|>\n\
         <|im_start|>user\n<tool_response>\nfn main() {{}}\n</tool_response><|im_end|>\n\
         <|im_start|>assistant\n"
    );
    assert_eq!(out, expected);
}

#[test]
fn qwen25_renders_parallel_calls_and_grouped_results() {
    let template = ChatTemplate::new(QWEN25, None, "", "<|im_end|>").unwrap();
    let messages = vec![
        Message::user("Build and show the manifest."),
        assistant(
            vec![
                ContentPart::text("Let me look."),
                tool_call(1, "run_shell", json!({"command": "cargo build"})),
                tool_call(2, "read_file", json!({"path": "Cargo.toml"})),
            ],
            StopReason::ToolUse,
        ),
        Message::tool_result(call_id(1), "run_shell", "ok", false),
        Message::tool_result(call_id(2), "read_file", "[package]", false),
        assistant(vec![ContentPart::text("Built; the manifest is empty.")], StopReason::Stop),
    ];
    let options = RenderOptions::default();
    let out = template.render(None, &messages, &[], &options).unwrap();
    let expected = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n\
        <|im_start|>user\nBuild and show the manifest.<|im_end|>\n\
        <|im_start|>assistant\nLet me look.\n\
        <tool_call>\n{\"name\": \"run_shell\", \"arguments\": {\"command\": \"cargo build\"}}\n</tool_call>\n\
        <tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}}\n</tool_call><|im_end|>\n\
        <|im_start|>user\n<tool_response>\nok\n</tool_response>\n<tool_response>\n[package]\n</tool_response><|im_end|>\n\
        <|im_start|>assistant\nBuilt; the manifest is empty.<|im_end|>\n";
    assert_eq!(out, expected);
}

#[test]
fn qwen25_capabilities() {
    let template = ChatTemplate::new(QWEN25, None, "", "<|im_end|>").unwrap();
    assert_eq!(
        *template.capabilities(),
        TemplateCaps {
            system_role: true,
            tools: true,
            tool_calls: true,
            object_arguments: true,
            parallel_calls: true,
            preserve_reasoning: false,
            thinking_toggle: false,
            call_format: CallFormat::Tagged,
        }
    );
    let capabilities = template.capabilities().to_capabilities();
    assert_eq!(capabilities.system_role, Support::Yes);
    assert_eq!(capabilities.tools, Support::Yes);
    assert_eq!(capabilities.parallel_calls, Support::Yes);
    assert_eq!(capabilities.reasoning_replay, Support::No);
    assert_eq!(capabilities.thinking_toggle, Support::No);
    assert_eq!(capabilities.images, Support::No, "whatever the template, the engine takes no images");
}

#[test]
fn tool_use_template_is_used_only_when_tools_are_active() {
    let template = ChatTemplate::new(SMOLLM2, Some(QWEN25), "", "<|im_end|>").unwrap();
    assert!(template.has_tool_use_template());
    let with_tools = template.render(Some("S."), &[Message::user("Hi")], &tools(), &generation()).unwrap();
    assert!(with_tools.starts_with("<|im_start|>system\nS.\n\n# Tools\n"), "{with_tools}");
    let without = template.render(Some("S."), &[Message::user("Hi")], &[], &generation()).unwrap();
    assert_eq!(
        without,
        "<|im_start|>system\nS.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    let caps = template.capabilities();
    assert!(caps.tools && caps.tool_calls && caps.parallel_calls, "{caps:?}");
}

#[test]
fn smollm2_renders_chatml_byte_for_byte() {
    let template = ChatTemplate::new(SMOLLM2, None, "<|im_start|>", "<|im_end|>").unwrap();
    let messages = vec![
        Message::user("What is 2 + 2?"),
        assistant(vec![ContentPart::text("4.")], StopReason::Stop),
        Message::user("And 3 + 3?"),
    ];
    let out = template.render(Some("Answer briefly."), &messages, &[], &generation()).unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n\
         <|im_start|>assistant\n4.<|im_end|>\n<|im_start|>user\nAnd 3 + 3?<|im_end|>\n<|im_start|>assistant\n"
    );
    let out = template.render(None, &messages[..1], &[], &RenderOptions::default()).unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nWhat is 2 + 2?<|im_end|>\n"
    );
}

#[test]
fn smollm2_capabilities() {
    let template = ChatTemplate::new(SMOLLM2, None, "", "").unwrap();
    assert_eq!(*template.capabilities(), TemplateCaps { system_role: true, ..TemplateCaps::default() });
    let capabilities = template.capabilities().to_capabilities();
    assert_eq!((capabilities.system_role, capabilities.tools), (Support::Yes, Support::No));
}

#[test]
fn gemma2_has_no_system_role_and_gets_the_system_text_in_the_first_user_message() {
    let template = ChatTemplate::new(GEMMA2, None, "<bos>", "<eos>").unwrap();
    assert_eq!(*template.capabilities(), TemplateCaps::default());
    assert_eq!(template.capabilities().to_capabilities().system_role, Support::No);
    let messages = vec![
        Message::user("Hi"),
        assistant(vec![ContentPart::text("Hello!")], StopReason::Stop),
        Message::user("Bye"),
    ];
    let out = template.render(Some("Be brief."), &messages, &[], &generation()).unwrap();
    assert_eq!(
        out,
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n\
         <start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"
    );
}

#[test]
fn raise_exception_from_a_template_is_a_raised_error() {
    let template = ChatTemplate::new(GEMMA2, None, "<bos>", "<eos>").unwrap();
    let messages = vec![assistant(vec![ContentPart::text("first")], StopReason::Stop)];
    let error = template.render(None, &messages, &[], &generation()).unwrap_err();
    assert!(
        matches!(&error, TemplateError::Raised { message, .. }
            if message == "Conversation roles must alternate user/assistant/user/assistant/..."),
        "{error:?}"
    );
}

#[test]
fn qwen3_probes_thinking_toggle_and_drops_old_reasoning() {
    let template = ChatTemplate::new(QWEN3, None, "", "<|im_end|>").unwrap();
    assert_eq!(
        *template.capabilities(),
        TemplateCaps {
            system_role: true,
            tools: true,
            tool_calls: true,
            object_arguments: true,
            parallel_calls: true,
            preserve_reasoning: false,
            thinking_toggle: true,
            call_format: CallFormat::Tagged,
        }
    );
    let off = RenderOptions { add_generation_prompt: true, enable_thinking: Some(false) };
    let out = template.render(None, &[Message::user("Hi")], &[], &off).unwrap();
    assert_eq!(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    // Reasoning of the current turn (after the last user message) is rendered.
    let messages = vec![
        Message::user("Read it."),
        assistant(
            vec![ContentPart::reasoning("Need the file."), tool_call(1, "read_file", json!({"path": "a"}))],
            StopReason::ToolUse,
        ),
        Message::tool_result(call_id(1), "read_file", "A", false),
    ];
    let out = template.render(None, &messages, &[], &generation()).unwrap();
    assert_eq!(
        out,
        "<|im_start|>user\nRead it.<|im_end|>\n<|im_start|>assistant\n<think>\nNeed the file.\n</think>\n\n\
         <tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call><|im_end|>\n\
         <|im_start|>user\n<tool_response>\nA\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn string_only_templates_get_json_text_arguments() {
    // Concatenating the arguments fails for an object and works for a string.
    let source = "{% for m in messages %}{% for c in m.tool_calls %}\
                  {{ '[' + c.function.name + ' ' + c.function.arguments + ']' }}{% endfor %}{% endfor %}";
    let template = ChatTemplate::new(source, None, "", "").unwrap();
    let caps = template.capabilities();
    assert!(caps.tool_calls && !caps.object_arguments && caps.parallel_calls, "{caps:?}");
    let messages =
        vec![assistant(vec![tool_call(1, "run_shell", json!({"command": "ls"}))], StopReason::ToolUse)];
    let out = template.render(None, &messages, &[], &RenderOptions::default()).unwrap();
    assert_eq!(out, r#"[run_shell {"command": "ls"}]"#);
}

#[test]
fn tools_are_absent_not_empty_when_none_are_active() {
    let source = "{{ tools is defined }}";
    let template = ChatTemplate::new(source, None, "", "").unwrap();
    assert_eq!(
        template.render(None, &[Message::user("x")], &[], &RenderOptions::default()).unwrap(),
        "False"
    );
    assert_eq!(
        template.render(None, &[Message::user("x")], &tools(), &RenderOptions::default()).unwrap(),
        "True"
    );
    let source = "{{ enable_thinking is defined }}";
    let template = ChatTemplate::new(source, None, "", "").unwrap();
    let set = RenderOptions { add_generation_prompt: false, enable_thinking: Some(true) };
    assert_eq!(template.render(None, &[], &[], &set).unwrap(), "True");
    assert_eq!(template.render(None, &[], &[], &RenderOptions::default()).unwrap(), "False");
}

#[test]
fn the_call_format_is_the_markup_a_rendered_call_carries() {
    let render_calls = |markup: &str| {
        format!(
            "{{% for m in messages %}}{{% if m.tool_calls %}}{{% for c in m.tool_calls %}}{markup}{{% endfor %}}\
             {{% else %}}{{{{ m.role }}}}: {{{{ m.content }}}}\n{{% endif %}}{{% endfor %}}\
             {{% if tools %}}{{% for t in tools %}}{{{{ t.function.name }}}}{{% endfor %}}{{% endif %}}"
        )
    };
    let cases = [
        ("<tool_call>{{ c.function.arguments | tojson }}</tool_call>", CallFormat::Tagged),
        (
            "<function={{ c.function.name }}>{{ c.function.arguments | tojson }}</function>",
            CallFormat::Functions,
        ),
        (
            "{\"name\": \"{{ c.function.name }}\", \"parameters\": {{ c.function.arguments | tojson }}}",
            CallFormat::Bare,
        ),
    ];
    for (markup, format) in cases {
        let template = ChatTemplate::new(&render_calls(markup), None, "", "").unwrap();
        assert!(template.capabilities().tool_calls, "{markup}");
        assert_eq!(template.capabilities().call_format, format, "{markup}");
    }
    let gemma = ChatTemplate::new(GEMMA2, None, "<bos>", "<eos>").unwrap();
    assert_eq!(gemma.capabilities().call_format, CallFormat::Bare, "no calls render: the default");
}
