//! What a running call says while it works: a progress notification per
//! model round and per tool call, when the caller gave a progress token.
//! Bounded by the turn's own pace (no per-token notifications).

use bosun_core::{Event, EventSink, SinkError};
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};

pub(crate) struct Progress {
    to: Option<(Peer<RoleServer>, ProgressToken)>,
    step: u32,
}

impl Progress {
    pub(crate) fn for_call(context: &RequestContext<RoleServer>) -> Self {
        Self { to: context.meta.get_progress_token().map(|token| (context.peer.clone(), token)), step: 0 }
    }

    fn say(&mut self, message: String) {
        let Some((peer, token)) = &self.to else { return };
        self.step += 1;
        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(self.step));
        param.message = Some(message);
        let peer = peer.clone();
        // Not awaited: a slow caller must not hold the turn.
        tokio::spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }
}

impl EventSink for Progress {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        match &event {
            Event::ModelRoundStart { round, .. } => self.say(format!("model round {round}")),
            Event::ToolStart { name, .. } => self.say(format!("running {name}")),
            Event::ToolEnd { name, is_error: true, .. } => self.say(format!("{name} failed")),
            _ => {}
        }
        Ok(())
    }
}
