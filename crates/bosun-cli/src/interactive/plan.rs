//! Plan mode's end: when a turn in plan mode set a plan, the person is
//! asked whether to go on with it and in which mode (as Claude Code asks on
//! leaving its plan mode). Yes sets that mode and sends the library's
//! approval prompt as the next turn; no stays in plan mode.

use bosun_core::Mode;
use bosun_core::plan::PLAN_APPROVED;
use bosun_tui::{FromUi, NoticeKind, PickItem};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Conversation, Flow};

/// The choices, by the mode each goes on in (`None`: keep planning).
const CHOICES: [(&str, Option<Mode>, &str); 3] = [
    ("write", Some(Mode::Write), "Yes, go on in write mode: edits run, commands ask"),
    ("propose", Some(Mode::Propose), "Yes, go on in propose mode: every change asks"),
    ("keep", None, "No, keep planning (say what to change)"),
];

impl Conversation<'_> {
    /// Asks whether to carry out the plan the last turn set in plan mode.
    pub(super) async fn offer_plan(&mut self, from_ui: &mut UnboundedReceiver<FromUi>) -> Flow {
        let items = CHOICES.iter().map(|(id, _, label)| PickItem::new(*id, *label)).collect();
        let chosen = self.pick("The plan is ready. Go on with it?", items).await;
        let mode =
            CHOICES.iter().find(|(id, ..)| Some(*id) == chosen.as_deref()).and_then(|(_, mode, _)| *mode);
        let Some(mode) = mode else {
            self.notice(NoticeKind::Info, "still in plan mode: say what to change in the plan");
            return Flow::Continue;
        };
        self.session.set_mode(mode);
        self.send_status();
        self.notice(NoticeKind::Info, format!("plan approved; mode: {mode}"));
        self.turn(Some(PLAN_APPROVED.into()), from_ui).await
    }
}
