//! Chat templates: a GGUF's `tokenizer.chat_template` rendered as Hugging Face
//! renders it, and its capabilities found by rendering probes.
//!
//! [`ChatTemplate::new`] compiles the template (and the named `tool_use`
//! template when the file has one, used whenever tools are active) in a
//! minijinja environment set up like HF's `apply_chat_template`: `trim_blocks`
//! and `lstrip_blocks`, loop controls, Python string/dict methods
//! (minijinja-contrib's pycompat), a `tojson` that is Python's `json.dumps`
//! (separators `", "`/`": "`, no HTML escaping, `indent`, `ensure_ascii`,
//! `separators`, `sort_keys`), `raise_exception(msg)` and `strftime_now(fmt)`.
//! It then probes what the template supports ([`TemplateCaps`]).
//!
//! [`ChatTemplate::render`] turns bosun messages into the OpenAI/HF message
//! shape (described in `convert`; tool-call arguments are objects) and renders
//! them with these variables: `messages`, `tools` (absent, not empty, when
//! there are none: templates test `tools is defined` / `tools is not none`),
//! `add_generation_prompt`, `bos_token`, `eos_token`, `enable_thinking` (only
//! when set) and `date_string` (`"%d %b %Y"`, UTC).
//!
//! The clock is opt-in (invariant 19): `date_string` and `strftime_now` give
//! the fixed neutral date 2024-01-01 unless [`ChatTemplate::with_clock`]
//! turned the clock on; then they give today (UTC).
//!
//! What the capabilities change: without a system role the system prompt is
//! merged into the first user message here; a template that only renders
//! string arguments gets the arguments as JSON text. Reasoning is passed as
//! `reasoning_content` whenever the history has it; the session strips it
//! from requests when the model reports no reasoning replay.
//!
//! Differences from HF left on purpose: object keys that come from `serde_json`
//! values (tool schemas, tool-call arguments) render sorted, because
//! minijinja's maps are sorted (see `json`); maps a template builds itself
//! also iterate sorted; `strftime_now` is UTC; the
//! `{% generation %}` tag is not supported. The rendered text may begin with
//! `bos_token` when the template prints it; the tokenizer must then not add
//! another.

mod clock;
mod convert;
mod env;
mod json;
mod probe;

use std::fmt;

use bosun_core::{Message, ToolDefinition};
use minijinja::value::{Serde, Value};
use minijinja::{Environment, ErrorKind};
use serde::Serialize;

pub use convert::IMAGE_PLACEHOLDER;
pub use probe::{CallFormat, TemplateCaps};

use convert::{TemplateMessage, TemplateTool};

/// A compiled chat template with its probed capabilities.
pub struct ChatTemplate {
    env: Environment<'static>,
    has_tool_use: bool,
    bos_token: String,
    eos_token: String,
    caps: TemplateCaps,
    /// Whether templates see the system clock (else the neutral date).
    clock: bool,
}

/// Options of one rendering.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// End with the opening of an assistant turn (for generation).
    pub add_generation_prompt: bool,
    /// Passed as `enable_thinking` when set; absent otherwise.
    pub enable_thinking: Option<bool>,
}

/// Why a template could not be compiled or rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// The template source does not parse.
    #[error("syntax error in {template}{}: {message}", at_line(.line))]
    Syntax {
        /// `chat_template` or `chat_template.tool_use`.
        template: &'static str,
        /// The line of the error, 1-based, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The template called `raise_exception(message)`, typically to refuse a
    /// conversation it cannot format ("System role not supported").
    #[error("{template} raised an exception: {message}")]
    Raised {
        /// `chat_template` or `chat_template.tool_use`.
        template: &'static str,
        /// The template's message.
        message: String,
    },
    /// Rendering failed otherwise (an undefined value used, a bad operation, …).
    #[error("cannot render {template}{}: {message}", at_line(.line))]
    Render {
        /// `chat_template` or `chat_template.tool_use`.
        template: &'static str,
        /// The line of the error, 1-based, when known.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
}

fn at_line(line: &Option<usize>) -> String {
    line.map(|line| format!(" at line {line}")).unwrap_or_default()
}

impl TemplateError {
    fn from_minijinja(error: &minijinja::Error, template: &'static str) -> Self {
        if let Some(message) = env::raised_message(error) {
            return Self::Raised { template, message: message.to_owned() };
        }
        let line = error.line();
        if error.kind() == ErrorKind::SyntaxError {
            let message = error.detail().unwrap_or("invalid syntax").to_owned();
            return Self::Syntax { template, line, message };
        }
        let message = match error.detail() {
            Some(detail) => format!("{}: {detail}", error.kind()),
            None => error.kind().to_string(),
        };
        Self::Render { template, line, message }
    }
}

/// One rendering's inputs in template form.
struct Request<'a> {
    messages: &'a [TemplateMessage],
    tools: Option<&'a [TemplateTool]>,
    add_generation_prompt: bool,
    enable_thinking: Option<bool>,
}

/// The variables a template sees.
#[derive(Serialize)]
struct Context<'a> {
    messages: &'a [TemplateMessage],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [TemplateTool]>,
    add_generation_prompt: bool,
    bos_token: &'a str,
    eos_token: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    enable_thinking: Option<bool>,
    date_string: String,
}

impl ChatTemplate {
    /// Compiles `source` (`tokenizer.chat_template`) and `tool_use`
    /// (`tokenizer.chat_template.tool_use`, if present and not blank), then
    /// probes the capabilities.
    pub fn new(
        source: &str,
        tool_use: Option<&str>,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<Self, TemplateError> {
        let mut env = env::environment().map_err(|error| TemplateError::from_minijinja(&error, env::MAIN))?;
        env.add_template_owned(env::MAIN, source.to_owned())
            .map_err(|error| TemplateError::from_minijinja(&error, env::MAIN))?;
        let tool_use = tool_use.filter(|text| !text.trim().is_empty());
        if let Some(tool_use) = tool_use {
            env.add_template_owned(env::TOOL_USE, tool_use.to_owned())
                .map_err(|error| TemplateError::from_minijinja(&error, env::TOOL_USE))?;
        }
        let mut template = Self {
            env,
            has_tool_use: tool_use.is_some(),
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
            caps: TemplateCaps::default(),
            clock: false,
        };
        template.caps = probe::probe(&template);
        Ok(template)
    }

    /// The prompt text for a conversation: `system` is the system prompt
    /// (`messages` holds no system message, as bosun's requests do not),
    /// `tools` the tools active for this request (none: `tools` undefined).
    pub fn render(
        &self,
        system: Option<&str>,
        messages: &[Message],
        tools: &[ToolDefinition],
        options: &RenderOptions,
    ) -> Result<String, TemplateError> {
        let string_arguments = self.caps.tool_calls && !self.caps.object_arguments;
        let messages = convert::messages(system, messages, self.caps.system_role, string_arguments);
        let tools = convert::tools(tools);
        self.render_request(&Request {
            messages: &messages,
            tools: (!tools.is_empty()).then_some(tools.as_slice()),
            add_generation_prompt: options.add_generation_prompt,
            enable_thinking: options.enable_thinking,
        })
    }

    /// Lets the template see the system clock (`date_string`,
    /// `strftime_now`) when `on`; off (the default), it sees the neutral
    /// date 2024-01-01 (invariant 19).
    #[must_use]
    pub fn with_clock(mut self, on: bool) -> Self {
        self.clock = on;
        env::set_clock(&mut self.env, on);
        self
    }

    /// Whether the template sees the system clock.
    pub fn clock(&self) -> bool {
        self.clock
    }

    /// What the template supports, found by rendering probes (computed once in `new`).
    pub fn capabilities(&self) -> &TemplateCaps {
        &self.caps
    }

    /// Whether a separate `tool_use` template is used when tools are active.
    pub fn has_tool_use_template(&self) -> bool {
        self.has_tool_use
    }

    fn render_request(&self, request: &Request<'_>) -> Result<String, TemplateError> {
        let name = if request.tools.is_some() && self.has_tool_use { env::TOOL_USE } else { env::MAIN };
        let template =
            self.env.get_template(name).map_err(|error| TemplateError::from_minijinja(&error, name))?;
        let context = Context {
            messages: request.messages,
            tools: request.tools,
            add_generation_prompt: request.add_generation_prompt,
            bos_token: &self.bos_token,
            eos_token: &self.eos_token,
            enable_thinking: request.enable_thinking,
            date_string: clock::strftime_now("%d %b %Y", self.clock),
        };
        template
            .render(Value::from(Serde(&context)))
            .map_err(|error| TemplateError::from_minijinja(&error, name))
    }
}

impl fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("has_tool_use", &self.has_tool_use)
            .field("bos_token", &self.bos_token)
            .field("eos_token", &self.eos_token)
            .field("caps", &self.caps)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_str(source: &str) -> Result<String, TemplateError> {
        let template = ChatTemplate::new(source, None, "<s>", "</s>")?;
        template.render(None, &[Message::user("hi")], &[], &RenderOptions::default())
    }

    #[test]
    fn chat_template_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ChatTemplate>();
    }

    #[test]
    fn tojson_has_python_separators_and_no_html_escaping() {
        let out =
            render_str(r#"{{ {"a": "<b> & 'c'", "n": [1, 2.0]} | tojson }}|{{ "é" | tojson }}"#).unwrap();
        assert_eq!(out, r#"{"a": "<b> & 'c'", "n": [1, 2.0]}|"é""#);
        let out = render_str(r#"{{ [1, {"k": none}] | tojson(indent=2) }}"#).unwrap();
        assert_eq!(out, "[\n  1,\n  {\n    \"k\": null\n  }\n]");
        let out =
            render_str(r#"{{ "é" | tojson(ensure_ascii=true) }}{{ [1,2] | tojson(separators=(",", ":")) }}"#);
        assert_eq!(out.unwrap(), r#""\u00e9"[1,2]"#);
    }

    #[test]
    fn raise_exception_surfaces_its_message() {
        let error =
            render_str("{{ raise_exception('Only user and assistant roles are supported!') }}").unwrap_err();
        assert!(
            matches!(&error, TemplateError::Raised { template: "chat_template", message }
                if message == "Only user and assistant roles are supported!"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "chat_template raised an exception: Only user and assistant roles are supported!"
        );
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let error = ChatTemplate::new("line one\n{% if messages %}\n{{ x }}\n", None, "", "").unwrap_err();
        let TemplateError::Syntax { template, line, .. } = &error else { panic!("{error:?}") };
        assert_eq!((*template, *line), ("chat_template", Some(3)));
        assert!(error.to_string().starts_with("syntax error in chat_template at line 3: "), "{error}");
        let error = ChatTemplate::new("ok", Some("{{ }"), "", "").unwrap_err();
        assert!(
            matches!(error, TemplateError::Syntax { template: "chat_template.tool_use", .. }),
            "{error:?}"
        );
    }

    #[test]
    fn render_errors_carry_the_line() {
        let error =
            render_str("{{ messages[0].content }}\n{{ messages[0].content.nope.deeper }}").unwrap_err();
        assert!(matches!(error, TemplateError::Render { line: Some(2), .. }), "{error:?}");
    }

    #[test]
    fn python_methods_and_globals_are_available() {
        let source = "{{ messages[0].content.upper().strip() }} {{ messages[0].get('role') }} \
                      {{ strftime_now('%Y') | length }} {{ bos_token }}{{ eos_token }} {{ date_string | length > 0 }}";
        assert_eq!(render_str(source).unwrap(), "HI user 4 <s></s> True");
    }

    #[test]
    fn invariant_19_the_date_is_neutral_unless_the_clock_is_on() {
        let source = "{{ date_string }}|{{ strftime_now('%Y-%m-%d') }}";
        let render = |template: &ChatTemplate| {
            template.render(None, &[Message::user("hi")], &[], &RenderOptions::default()).unwrap()
        };
        let off = ChatTemplate::new(source, None, "", "").unwrap();
        assert_eq!(render(&off), "01 Jan 2024|2024-01-01", "the clock is off by default");
        let on = ChatTemplate::new(source, None, "", "").unwrap().with_clock(true);
        let before = clock::now_unix();
        let shown = render(&on);
        let after = clock::now_unix();
        let today = |t| format!("{}|{}", clock::strftime("%d %b %Y", t), clock::strftime("%Y-%m-%d", t));
        assert!(shown == today(before) || shown == today(after), "{shown}");
        assert_eq!(render(&on.with_clock(false)), "01 Jan 2024|2024-01-01");
    }
}
