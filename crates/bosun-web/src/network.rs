//! What both network tools share about a call: why it asks, and how a
//! cancelled turn ends it.

use std::future::Future;

use bosun_core::{CallEffects, ToolContext, ToolOutput};

/// The effects of a call described by `what`: an escalation, so that it
/// asks in every mode and no rule or grant answers for the person (the
/// request runs in bosun's own process, where the OS sandbox is not).
pub(crate) fn effects(what: &str) -> CallEffects {
    // One line, every control shown: the URL or query is the model's text,
    // and the person must see exactly what would be sent.
    let what = bosun_core::sanitize::line(what);
    CallEffects::none()
        .with_escalation(format!("{what} from inside bosun's own process, outside the OS sandbox"))
}

/// `work`, unless the turn is cancelled first; dropping it drops the
/// request, so nothing is left running.
pub(crate) async fn cancellable(context: &ToolContext, work: impl Future<Output = ToolOutput>) -> ToolOutput {
    tokio::select! {
        biased;
        () = context.cancel.cancelled() => ToolOutput::error("cancelled"),
        output = work => output,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reason_is_one_line_that_shows_what_would_be_sent() {
        let why = super::effects("`web_search` sends \"a\nb\u{1b}[2J\"").escalation.unwrap_or_default();
        assert!(!why.contains('\n') && !why.contains('\u{1b}'), "{why}");
        assert!(why.starts_with("`web_search` sends \"a\\nb"), "{why}");
    }
}
