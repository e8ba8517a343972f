//! Sampling for MCP servers whose config sets `sampling = true`: a server's
//! `sampling/createMessage` is one completion by the session's own model
//! (its messages and system prompt, `maxTokens` capped by bosun-mcp at
//! [`bosun_mcp::MAX_SAMPLING_TOKENS`], no tools), after approval.
//!
//! Approval follows the tools' path for external effects: allowed in the
//! autonomous mode and when the person approved everything up front;
//! otherwise asked of a [`SamplingApprover`] (the front end's prompt), or
//! refused with a reason when there is no one to ask. An approval for the
//! server covers its later requests for the rest of the run. A refusal
//! reaches the server as a JSON-RPC error.
//!
//! Usage: the session's accounting counts its own rounds only and is not
//! reachable from here, so each completion's tokens are told as a notice
//! (and logged by bosun-mcp, `RUST_LOG=bosun_mcp=info`).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bosun_core::Model;
use bosun_mcp::{SampleFuture, Sampler, SamplingRefused, SamplingRequest};

use crate::mcp::SessionSampler;
use crate::notice::Notices;

/// A person's answer to one sampling request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SamplingAnswer {
    /// This request only.
    Once,
    /// This one and the server's later requests in this run.
    ForServer,
    /// Refused, with the person's reason.
    Deny(String),
}

/// What an asking approver returns.
pub type SamplingAnswerFuture<'a> = Pin<Box<dyn Future<Output = SamplingAnswer> + Send + 'a>>;

/// Asks the person about a sampling request (a front end's prompt).
pub trait SamplingApprover: Send + Sync {
    /// The answer to `request`.
    fn ask<'a>(&'a self, request: &'a SamplingRequest) -> SamplingAnswerFuture<'a>;
}

/// How requests are approved in a run.
#[derive(Clone)]
#[non_exhaustive]
pub enum SamplingPolicy {
    /// Every request runs (autonomous mode, or everything approved up front).
    Allow,
    /// Each server's first request is asked of the approver.
    Ask(Arc<dyn SamplingApprover>),
    /// Every request is refused, for this reason.
    Refuse(String),
}

impl std::fmt::Debug for SamplingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Allow => "Allow",
            Self::Ask(_) => "Ask",
            Self::Refuse(_) => "Refuse",
        })
    }
}

/// Answers sampling with the session's model, once it is built (servers
/// start before it).
pub struct ModelSampler {
    model: OnceLock<(Arc<dyn Model>, String)>,
    policy: SamplingPolicy,
    /// Servers the person allowed for the rest of the run.
    granted: Mutex<BTreeSet<String>>,
    notices: Notices,
}

impl std::fmt::Debug for ModelSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSampler")
            .field("model", &self.model.get().map(|(_, name)| name))
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl ModelSampler {
    /// A sampler approving under `policy`, telling each completion's usage
    /// to `notices`.
    pub fn new(policy: SamplingPolicy, notices: Notices) -> Self {
        Self { model: OnceLock::new(), policy, granted: Mutex::new(BTreeSet::new()), notices }
    }

    /// The policy it approves under.
    pub fn policy(&self) -> &SamplingPolicy {
        &self.policy
    }

    async fn approve(&self, request: &SamplingRequest) -> Result<(), SamplingRefused> {
        let approver = match &self.policy {
            SamplingPolicy::Allow => return Ok(()),
            SamplingPolicy::Refuse(reason) => return Err(SamplingRefused::new(reason.clone())),
            SamplingPolicy::Ask(approver) => approver,
        };
        if self.granted.lock().unwrap_or_else(PoisonError::into_inner).contains(&request.server) {
            return Ok(());
        }
        match approver.ask(request).await {
            SamplingAnswer::Once => Ok(()),
            SamplingAnswer::ForServer => {
                self.granted.lock().unwrap_or_else(PoisonError::into_inner).insert(request.server.clone());
                Ok(())
            }
            SamplingAnswer::Deny(reason) => Err(SamplingRefused::new(reason)),
        }
    }
}

impl SessionSampler for ModelSampler {
    fn model_ready(&self, model: &Arc<dyn Model>, name: &str) {
        let _ = self.model.set((Arc::clone(model), name.to_owned()));
    }
}

impl Sampler for ModelSampler {
    fn sample(&self, request: SamplingRequest) -> SampleFuture<'_> {
        Box::pin(async move {
            let Some((model, name)) = self.model.get() else {
                return Err(SamplingRefused::new("bosun has no model to sample yet"));
            };
            self.approve(&request).await?;
            let response = bosun_mcp::complete(model.as_ref(), name, &request)
                .await
                .map_err(|error| SamplingRefused::new(format!("the model failed: {error}")))?;
            let usage = response.usage;
            self.notices.info(format!(
                "mcp: {} sampled the model ({} tokens in, {} out)",
                request.server,
                usage.input + usage.cache_read,
                usage.output
            ));
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::Message;
    use bosun_testing::{Reply, ScriptedModel};

    fn request(server: &str) -> SamplingRequest {
        SamplingRequest::new(server, vec![Message::user("hi")], 100)
    }

    /// Answers from a list, counting the questions.
    struct Answers(Mutex<Vec<SamplingAnswer>>);

    impl SamplingApprover for Answers {
        fn ask<'a>(&'a self, _: &'a SamplingRequest) -> SamplingAnswerFuture<'a> {
            let answer = self.0.lock().unwrap().remove(0);
            Box::pin(std::future::ready(answer))
        }
    }

    #[tokio::test]
    async fn allowed_requests_reach_the_model_and_others_are_refused() {
        let model: Arc<dyn Model> = Arc::new(ScriptedModel::new().reply(Reply::new().text("sampled")));
        let told = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&told);
        let notices = Notices::new(move |notice| seen.lock().unwrap().push(notice.text().to_owned()));
        let allowed = ModelSampler::new(SamplingPolicy::Allow, notices);
        let early = allowed.sample(request("ev")).await.unwrap_err();
        assert!(early.reason.contains("no model"), "{early}");
        allowed.model_ready(&model, "openai/test");
        let answer = allowed.sample(request("ev")).await.unwrap();
        assert_eq!((answer.text.as_str(), answer.model.as_str()), ("sampled", "openai/test"));
        assert_eq!(told.lock().unwrap().len(), 1, "the usage is told: {told:?}");

        let refusing = ModelSampler::new(SamplingPolicy::Refuse("no one to ask".into()), Notices::ignored());
        refusing.model_ready(&model, "openai/test");
        let refused = refusing.sample(request("ev")).await.unwrap_err();
        assert_eq!(refused.reason, "no one to ask");
    }

    #[tokio::test]
    async fn an_approval_for_the_server_covers_its_later_requests_only() {
        let replies = (0..3).fold(ScriptedModel::new(), |model, _| model.reply(Reply::new().text("ok")));
        let model: Arc<dyn Model> = Arc::new(replies);
        let answers = vec![SamplingAnswer::ForServer, SamplingAnswer::Deny("not that one".into())];
        let sampler = ModelSampler::new(
            SamplingPolicy::Ask(Arc::new(Answers(Mutex::new(answers)))),
            Notices::ignored(),
        );
        sampler.model_ready(&model, "openai/test");
        assert!(sampler.sample(request("a")).await.is_ok());
        // Not asked again: the list holds one answer, for the other server.
        assert!(sampler.sample(request("a")).await.is_ok());
        let other = sampler.sample(request("b")).await.unwrap_err();
        assert_eq!(other.reason, "not that one");
    }
}
