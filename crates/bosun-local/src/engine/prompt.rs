//! A request rendered to prompt text with the model's chat template.
//!
//! The template merges the system prompt into the first user message when it
//! has no system role (`template` does that); here, earlier reasoning is
//! dropped when the template would not keep it (the session already does so
//! for its own requests; this covers direct callers), and the request's
//! thinking option becomes `enable_thinking`.

use std::borrow::Cow;

use bosun_core::{Message, ModelError, ModelRequest, Thinking};

use crate::template::{ChatTemplate, RenderOptions};

/// The prompt for `request`, ending with the opening of the assistant's turn.
pub(crate) fn render(template: &ChatTemplate, request: &ModelRequest<'_>) -> Result<String, ModelError> {
    let messages: Cow<'_, [Message]> = if template.capabilities().preserve_reasoning {
        Cow::Borrowed(&request.messages)
    } else {
        Cow::Owned(request.messages.iter().map(Message::without_reasoning).collect())
    };
    let options = RenderOptions {
        add_generation_prompt: true,
        enable_thinking: match request.options.thinking {
            Some(Thinking::Off) => Some(false),
            Some(Thinking::On { .. }) => Some(true),
            Some(Thinking::Auto) | None => None,
        },
    };
    template
        .render(request.system, &messages, &request.tools, &options)
        .map_err(|e| ModelError::InvalidRequest(format!("cannot render the chat template: {e}")))
}
