//! `/rewind` and Esc Esc in the conversation: the session back to the start
//! of one of its turns (`bosun_agent::rewind`), the session reopened on the
//! new branch when the conversation went back, what was done told as
//! notices. Esc Esc puts the previous message in the editor; sending it
//! goes back to before that message (the conversation only) and sends the
//! new text there.

use bosun_agent::rewind::{Restore, RewindReport, RewindRequest};
use bosun_tui::{FromUi, NoticeKind, PickItem, ToUi};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;

use super::{Conversation, Flow, first_line};

/// What `/rewind` takes after the turn.
const USAGE: &str = "/rewind [TURN [both|files|conversation] [force]]";

impl Conversation<'_> {
    /// `/rewind`: a turn and what to restore from the arguments, or picked.
    pub(super) async fn rewind(&mut self, args: &str) -> anyhow::Result<()> {
        let mut words = args.split_whitespace();
        let turn = match words.next() {
            Some(turn) => {
                turn.parse::<u64>().map_err(|_| anyhow::anyhow!("`{turn}` is not a turn: {USAGE}"))?
            }
            None => match self.pick_turn().await? {
                Some(turn) => turn,
                None => return Ok(()),
            },
        };
        let mut restore = None;
        let mut force = false;
        for word in words {
            match word {
                "both" => restore = Some(Restore::Both),
                "files" => restore = Some(Restore::Files),
                "conversation" => restore = Some(Restore::Conversation),
                "force" => force = true,
                other => anyhow::bail!("`{other}`: {USAGE}"),
            }
        }
        let restore = match restore {
            Some(restore) => restore,
            None if args.trim().is_empty() => match self.pick_what().await {
                Some(restore) => restore,
                None => return Ok(()),
            },
            None => Restore::Both,
        };
        let report = self.rewind_to(RewindRequest::new(turn).restoring(restore).forced(force)).await?;
        self.tell(&report);
        Ok(())
    }

    /// Runs the rewind off the executor; when the conversation went back,
    /// the session goes on from the new branch.
    pub(super) async fn rewind_to(&mut self, request: RewindRequest) -> anyhow::Result<RewindReport> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let workspace = crate::rewind::session_workspace(&store, &self.id)?;
        let id = self.id.clone();
        let report = tokio::task::spawn_blocking(move || {
            bosun_agent::rewind::rewind(&store, &workspace, &id, &request)
        })
        .await??;
        if report.branch.is_some() {
            self.reopen(&self.settings.clone(), Some(self.current())).await?;
        }
        Ok(report)
    }

    /// The report, line by line.
    fn tell(&self, report: &RewindReport) {
        let ids: Vec<String> = bosun_agent::parts::store(&self.settings, self.env)
            .and_then(|store| Ok(store.show(&self.id)?.branches))
            .map(|branches| branches.into_iter().map(|b| b.id).collect())
            .unwrap_or_default();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let kind = if report.held_back() { NoticeKind::Warning } else { NoticeKind::Info };
        let lines = crate::rewind::report_lines(report, |branch| crate::rewind::short_id(branch, &ids));
        self.notice(kind, lines.join("\n"));
    }

    /// The turns to pick from, newest first.
    async fn pick_turn(&self) -> anyhow::Result<Option<u64>> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let items: Vec<PickItem> = store
            .turns(&self.id)?
            .iter()
            .rev()
            .map(|t| {
                PickItem::new(
                    t.turn.to_string(),
                    format!("turn {} · {}", t.turn, first_line(&t.prompt.text())),
                )
            })
            .collect();
        if items.is_empty() {
            self.notice(NoticeKind::Info, "nothing to rewind: the session has no turns yet");
            return Ok(None);
        }
        let picked = self.pick("rewind to the start of", items).await;
        Ok(picked.and_then(|turn| turn.parse().ok()))
    }

    async fn pick_what(&self) -> Option<Restore> {
        let items = vec![
            PickItem::new("both", "the files and the conversation"),
            PickItem::new("conversation", "the conversation only (the files stay)"),
            PickItem::new("files", "the files only (the conversation goes on)"),
        ];
        match self.pick("restore", items).await?.as_str() {
            "files" => Some(Restore::Files),
            "conversation" => Some(Restore::Conversation),
            _ => Some(Restore::Both),
        }
    }

    /// The id the person picks among `items`, or `None` when they cancel.
    pub(super) async fn pick(&self, title: &str, items: Vec<PickItem>) -> Option<String> {
        let (reply, answer) = oneshot::channel();
        self.to_ui.send(ToUi::Picker { title: title.to_owned(), items, reply }).ok()?;
        answer.await.ok().flatten()
    }

    /// Esc Esc: the previous message into the editor, to edit.
    pub(super) fn edit_previous(&self) -> anyhow::Result<()> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let Some(last) = store.turns(&self.id)?.pop() else {
            self.notice(NoticeKind::Info, "no message to edit yet");
            return Ok(());
        };
        let text = bosun_core::plan::typed_text(&last.prompt);
        let _ = self.to_ui.send(ToUi::Edit { turn: last.turn, text });
        self.notice(
            NoticeKind::Info,
            format!(
                "editing your message of turn {}: Enter sends it, and the session goes on from before it as a new \
                 branch (this one stays; the files stay as they are, /rewind restores them); clear the text to give \
                 the edit up",
                last.turn
            ),
        );
        Ok(())
    }

    /// The message of `turn`, edited: the conversation back to before it,
    /// then `text` sent there.
    pub(super) async fn resend(
        &mut self,
        turn: u64,
        text: String,
        from_ui: &mut UnboundedReceiver<FromUi>,
    ) -> Flow {
        // Read before anything moves: a refused attachment leaves the
        // conversation as it was and the edit in the editor.
        let Some(prompt) = self.message(&text, super::setup::Writer::Person) else {
            let _ = self.to_ui.send(ToUi::Edit { turn, text });
            return Flow::Continue;
        };
        let request = RewindRequest::new(turn).restoring(Restore::Conversation);
        match self.rewind_to(request).await {
            Ok(report) => {
                let shown = report
                    .branch
                    .as_ref()
                    .map(|moved| {
                        format!(
                            " (the branch it left: `bosun resume {} --branch {}`)",
                            self.id,
                            &moved.from[..]
                        )
                    })
                    .unwrap_or_default();
                self.notice(
                    NoticeKind::Info,
                    format!("going on from before turn {turn} as a new branch{shown}"),
                );
                self.send_status();
            }
            Err(error) => {
                self.notice(NoticeKind::Error, format!("the message was not sent: {error:#}"));
                return Flow::Continue;
            }
        }
        self.turn(Some(prompt), from_ui).await
    }
}
