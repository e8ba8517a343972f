//! The terminal side of MCP sampling (`bosun_agent::sampling` answers with
//! the session's model): which policy a run approves under, and the prompt
//! that asks, showing the server and what it sends (sanitised: all of it is
//! the server's); `[a]` allows that server's later requests for the rest of
//! the run. Denied without a terminal.

use std::sync::Arc;

use bosun_agent::Notices;
use bosun_agent::sampling::{
    ModelSampler, SamplingAnswer, SamplingAnswerFuture, SamplingApprover, SamplingPolicy,
};
use bosun_core::permission::Mode;
use bosun_core::{ContentPart, Message};
use bosun_mcp::SamplingRequest;

use crate::approve::{self, Answer};
use crate::output::Palette;
use crate::sanitize;

/// Most lines of each message the approval prompt shows.
const SHOWN_LINES: usize = 12;

/// Why requests are refused with no terminal to ask on.
const NO_TERMINAL: &str =
    "sampling needs the user's approval and bosun is running without a terminal to ask on";

/// A sampler for a run in `mode`, approving all when `approve_all`, asking
/// on the terminal otherwise (refusing without one); usage lines on stderr.
pub fn sampler(mode: Mode, approve_all: bool, tty: Palette, notices: Notices) -> ModelSampler {
    let policy = if approve_all || mode == Mode::Autonomous {
        SamplingPolicy::Allow
    } else if approve::has_terminal() {
        SamplingPolicy::Ask(Arc::new(TerminalApprover { palette: tty }))
    } else {
        SamplingPolicy::Refuse(NO_TERMINAL.to_owned())
    };
    ModelSampler::new(policy, notices)
}

/// A sampler with no model to be given, refusing every request (for
/// commands that run no session).
pub fn refusing() -> ModelSampler {
    ModelSampler::new(SamplingPolicy::Refuse(NO_TERMINAL.to_owned()), Notices::ignored())
}

/// The `/dev/tty` prompt.
struct TerminalApprover {
    palette: Palette,
}

impl SamplingApprover for TerminalApprover {
    fn ask<'a>(&'a self, request: &'a SamplingRequest) -> SamplingAnswerFuture<'a> {
        let palette = self.palette;
        let server = sanitize::line(&request.server).into_owned();
        let heading = format!(
            "{} MCP server {} asks the model for a completion:",
            palette.bold("?"),
            palette.bold(&format!("`{server}`"))
        );
        let body = describe(request);
        let label = format!("approve all later sampling requests of `{server}` in this run");
        Box::pin(async move {
            let asked =
                tokio::task::spawn_blocking(move || approve::prompt(palette, &heading, &body, "", &label))
                    .await;
            match asked {
                Ok(Ok(Answer::Once)) => SamplingAnswer::Once,
                Ok(Ok(Answer::ForSession)) => SamplingAnswer::ForServer,
                Ok(Ok(Answer::Deny(reason))) => SamplingAnswer::Deny(format!("the user denied it: {reason}")),
                Ok(Err(error)) => SamplingAnswer::Deny(format!("the approval prompt failed: {error}")),
                Err(_) => SamplingAnswer::Deny("the approval prompt failed".to_owned()),
            }
        })
    }
}

/// What the approval prompt shows of a request: the system prompt and each
/// message, a few lines of each, sanitised; then the bounds.
fn describe(request: &SamplingRequest) -> String {
    let mut out = String::new();
    if let Some(system) = &request.system_prompt {
        push_text(&mut out, "system", system);
    }
    for message in &request.messages {
        let role = match message {
            Message::Assistant { .. } => "assistant",
            _ => "user",
        };
        for part in message.content() {
            match part {
                ContentPart::Text { text } => push_text(&mut out, role, text),
                ContentPart::Image { media_type, data } => {
                    let note = format!("[image ({media_type}), {} bytes]", data.len());
                    push_text(&mut out, role, &note);
                }
                _ => {}
            }
        }
    }
    let mut bounds = format!("  (at most {} tokens", request.max_tokens);
    if !request.model_hints.is_empty() {
        bounds.push_str(&format!("; the server prefers {}", request.model_hints.join(", ")));
    }
    bounds.push(')');
    out.push_str(&sanitize::line(&bounds));
    out
}

fn push_text(out: &mut String, role: &str, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().take(SHOWN_LINES).enumerate() {
        let lead = if i == 0 { format!("  {role}: ") } else { "    ".to_owned() };
        out.push_str(&format!("{lead}{}\n", sanitize::line(line)));
    }
    if lines.len() > SHOWN_LINES {
        out.push_str(&format!("    … {} more lines\n", lines.len() - SHOWN_LINES));
    }
    if lines.is_empty() {
        out.push_str(&format!("  {role}: \n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Vec<Message>) -> SamplingRequest {
        let mut request = SamplingRequest::new("ev\x1b[2Jil", messages, 100);
        request.system_prompt = Some("be \u{202e}brief".into());
        request.model_hints = vec!["claude".into()];
        request
    }

    #[test]
    fn the_prompt_shows_every_message_sanitised_and_cut() {
        let long: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let shown = describe(&request(vec![
            Message::user("hello\x1b]0;t\x07"),
            Message::User { content: vec![ContentPart::image("image/png", vec![1, 2, 3])] },
            Message::user(long),
        ]));
        assert!(!shown.contains('\x1b'), "{shown:?}");
        for expected in [
            "  system: be ⟪U+202E⟫brief\n",
            "  user: hello\\x1b]0;t\\x07\n",
            "  user: [image (image/png), 3 bytes]\n",
            "  user: line 0\n    line 1\n",
            "    line 11\n    … 8 more lines\n",
            "  (at most 100 tokens; the server prefers claude)",
        ] {
            assert!(shown.contains(expected), "no {expected:?} in:\n{shown}");
        }
    }

    #[test]
    fn without_a_terminal_or_an_approval_up_front_requests_are_refused_saying_why() {
        assert!(
            matches!(refusing().policy(), SamplingPolicy::Refuse(why) if why.contains("without a terminal"))
        );
        let approve_all = sampler(Mode::Propose, true, Palette::PLAIN, Notices::ignored());
        assert!(matches!(approve_all.policy(), SamplingPolicy::Allow));
        let autonomous = sampler(Mode::Autonomous, false, Palette::PLAIN, Notices::ignored());
        assert!(matches!(autonomous.policy(), SamplingPolicy::Allow));
    }
}
