//! Sampling for MCP servers whose config sets `sampling = true`: a server's
//! `sampling/createMessage` is one completion by the session's own model
//! (its messages and system prompt, `maxTokens` capped by bosun-mcp at
//! [`bosun_mcp::MAX_SAMPLING_TOKENS`], no tools), after approval.
//!
//! Approval follows the tools' path for external effects: allowed in the
//! autonomous mode and with `--dangerously-approve-all`; otherwise asked on
//! the terminal with the same prompt, showing the server and what it sends
//! (sanitised: all of it is the server's); denied without a terminal. `[a]`
//! allows that server's later requests for the rest of the run. A refusal
//! reaches the server as a JSON-RPC error.
//!
//! Usage: the session's accounting counts its own rounds only and is not
//! reachable from here, so each completion's tokens are shown as one line
//! on stderr (and logged by bosun-mcp, `RUST_LOG=bosun_mcp=info`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bosun_core::permission::Mode;
use bosun_core::{ContentPart, Message, Model};
use bosun_mcp::{SampleFuture, Sampler, SamplingRefused, SamplingRequest, SamplingResponse};

use crate::approve::{self, Answer};
use crate::output::Palette;
use crate::sanitize;

/// Most lines of each message the approval prompt shows.
const SHOWN_LINES: usize = 12;

/// How requests are approved in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Autonomous mode, or `--dangerously-approve-all`.
    Allow,
    /// The terminal prompt.
    Ask(Palette),
    /// No terminal to ask on.
    Deny,
}

/// Answers sampling with the session's model, once it is built (servers
/// start before it).
pub struct ModelSampler {
    model: OnceLock<(Arc<dyn Model>, String)>,
    policy: Policy,
    /// Servers the person allowed for the rest of the run.
    granted: Mutex<BTreeSet<String>>,
    stderr: Palette,
}

impl std::fmt::Debug for ModelSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSampler")
            .field("model", &self.model.get().map(|(_, name)| name))
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl bosun_agent::mcp::SessionSampler for ModelSampler {
    fn model_ready(&self, model: &Arc<dyn Model>, name: &str) {
        let _ = self.model.set((Arc::clone(model), name.to_owned()));
    }
}

impl ModelSampler {
    /// A sampler for a run in `mode`, approving all when `approve_all`.
    pub fn new(mode: Mode, approve_all: bool, tty: Palette, stderr: Palette) -> Self {
        let policy = if approve_all || mode == Mode::Autonomous {
            Policy::Allow
        } else if approve::has_terminal() {
            Policy::Ask(tty)
        } else {
            Policy::Deny
        };
        Self { model: OnceLock::new(), policy, granted: Mutex::new(BTreeSet::new()), stderr }
    }

    /// A sampler with no model, refusing every request (for commands that
    /// run no session).
    pub fn refusing() -> Self {
        Self {
            model: OnceLock::new(),
            policy: Policy::Deny,
            granted: Mutex::new(BTreeSet::new()),
            stderr: Palette::default(),
        }
    }

    async fn approve(&self, request: &SamplingRequest) -> Result<(), SamplingRefused> {
        let palette = match self.policy {
            Policy::Allow => return Ok(()),
            Policy::Deny => {
                return Err(SamplingRefused::new(
                    "sampling needs the user's approval and bosun is running without a terminal to ask on",
                ));
            }
            Policy::Ask(palette) => palette,
        };
        if self.granted.lock().unwrap_or_else(PoisonError::into_inner).contains(&request.server) {
            return Ok(());
        }
        let server = sanitize::line(&request.server).into_owned();
        let heading = format!(
            "{} MCP server {} asks the model for a completion:",
            palette.bold("?"),
            palette.bold(&format!("`{server}`"))
        );
        let body = describe(request);
        let label = format!("approve all later sampling requests of `{server}` in this run");
        let asked =
            tokio::task::spawn_blocking(move || approve::prompt(palette, &heading, &body, "", &label)).await;
        match asked {
            Ok(Ok(Answer::Once)) => Ok(()),
            Ok(Ok(Answer::ForSession)) => {
                self.granted.lock().unwrap_or_else(PoisonError::into_inner).insert(request.server.clone());
                Ok(())
            }
            Ok(Ok(Answer::Deny(reason))) => {
                Err(SamplingRefused::new(format!("the user denied it: {reason}")))
            }
            Ok(Err(error)) => Err(SamplingRefused::new(format!("the approval prompt failed: {error}"))),
            Err(_) => Err(SamplingRefused::new("the approval prompt failed")),
        }
    }
}

impl Sampler for ModelSampler {
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_> {
        Box::pin(async move {
            let Some((model, name)) = self.model.get() else {
                return Err(SamplingRefused::new("bosun has no model to sample yet"));
            };
            self.approve(&request).await?;
            let response: SamplingResponse = bosun_mcp::complete(model.as_ref(), name, &request)
                .await
                .map_err(|error| SamplingRefused::new(format!("the model failed: {error}")))?;
            let usage = response.usage;
            let line = format!(
                "mcp: {} sampled the model ({} tokens in, {} out)",
                request.server,
                usage.input + usage.cache_read,
                usage.output
            );
            eprintln!("{}", self.stderr.dim(&sanitize::line(&line)));
            Ok(response)
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
    use bosun_agent::mcp::SessionSampler;
    use bosun_testing::{Reply, ScriptedModel};

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

    #[tokio::test]
    async fn allowed_requests_reach_the_model_and_others_are_refused() {
        let model: Arc<dyn Model> = Arc::new(ScriptedModel::new().reply(Reply::new().text("sampled")));
        let allowed = ModelSampler::new(Mode::Autonomous, false, Palette::PLAIN, Palette::PLAIN);
        let early = allowed.sample(request(vec![Message::user("hi")])).await.unwrap_err();
        assert!(early.reason.contains("no model"), "{early}");
        allowed.model_ready(&model, "openai/test");
        let answer = allowed.sample(request(vec![Message::user("hi")])).await.unwrap();
        assert_eq!((answer.text.as_str(), answer.model.as_str()), ("sampled", "openai/test"));

        // Propose mode with no terminal to ask on: denied, saying why.
        let denied = ModelSampler { policy: Policy::Deny, ..ModelSampler::refusing() };
        denied.model_ready(&model, "openai/test");
        let refused = denied.sample(request(vec![Message::user("hi")])).await.unwrap_err();
        assert!(refused.reason.contains("without a terminal"), "{refused}");
        let approve_all = ModelSampler::new(Mode::Propose, true, Palette::PLAIN, Palette::PLAIN);
        assert_eq!(approve_all.policy, Policy::Allow);
    }
}
