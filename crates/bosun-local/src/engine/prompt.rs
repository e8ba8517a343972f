//! A request rendered to prompt text with the model's chat template, and
//! that text as the tokens the engine decodes. Generation (`worker`) and
//! counting (`count`) both go through [`render`] and [`tokens`], so a count
//! is the prompt a response to the same request reports.
//!
//! The template merges the system prompt into the first user message when it
//! has no system role (`template` does that); here, earlier reasoning is
//! dropped when the template would not keep it (the session already does so
//! for its own requests; this covers direct callers), and the request's
//! thinking option becomes `enable_thinking`. Example turns given to the
//! model ([`crate::LocalModel::with_examples`]) go between the system prompt
//! and the conversation, the same in every request, so their KV entries are
//! reused.

use std::borrow::Cow;

use bosun_core::{Message, ModelError, ModelRequest, Thinking};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use crate::template::{ChatTemplate, RenderOptions};

/// The prompt for `request`, ending with the opening of the assistant's turn.
pub(crate) fn render(
    template: &ChatTemplate,
    request: &ModelRequest<'_>,
    examples: &[Message],
) -> Result<String, ModelError> {
    let keep_reasoning = template.capabilities().preserve_reasoning;
    let messages: Cow<'_, [Message]> = if keep_reasoning && examples.is_empty() {
        Cow::Borrowed(&request.messages)
    } else {
        let all = examples.iter().chain(request.messages.iter());
        Cow::Owned(all.map(|m| if keep_reasoning { m.clone() } else { m.without_reasoning() }).collect())
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

/// The tokens of a rendered prompt: special tokens in the text (the
/// template's `<|im_start|>`, say) parsed as such, and the vocabulary's BOS
/// put first when it asks for one and the template did not write it.
pub(crate) fn tokens(model: &LlamaModel, prompt: &str) -> Vec<LlamaToken> {
    let vocab = model.vocab();
    let mut tokens = vocab.tokenize(prompt.as_bytes(), false, true);
    if vocab.should_add_bos() && tokens.first() != Some(&vocab.bos()) {
        tokens.insert(0, vocab.bos());
    }
    tokens
}

#[cfg(test)]
mod tests {
    use bosun_core::GenerationOptions;

    use super::*;

    const QWEN25: &str = include_str!("../../tests/templates/qwen2.5.jinja");

    #[test]
    fn examples_go_between_the_system_prompt_and_the_conversation() -> Result<(), String> {
        let template = ChatTemplate::new(QWEN25, None, "", "<|im_end|>").map_err(|e| e.to_string())?;
        let answer = Message::Assistant {
            content: vec![bosun_core::ContentPart::text("EXAMPLE ANSWER")],
            usage: bosun_core::Usage::default(),
            stop_reason: bosun_core::StopReason::Stop,
        };
        let examples = [Message::user("EXAMPLE QUESTION"), answer];
        let messages = [Message::user("REAL QUESTION")];
        let request = ModelRequest::new(Some("SYSTEM"), &messages, &[], GenerationOptions::default());
        let prompt = render(&template, &request, &examples).map_err(|e| e.to_string())?;
        let at = |text: &str| prompt.find(text).ok_or(format!("{text} not in {prompt}"));
        assert!(at("SYSTEM")? < at("EXAMPLE QUESTION")?);
        assert!(at("EXAMPLE QUESTION")? < at("EXAMPLE ANSWER")?);
        assert!(at("EXAMPLE ANSWER")? < at("REAL QUESTION")?);
        let plain = render(&template, &request, &[]).map_err(|e| e.to_string())?;
        assert!(!plain.contains("EXAMPLE"), "{plain}");
        Ok(())
    }
}
