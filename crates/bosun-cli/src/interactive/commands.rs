//! Slash commands and `!cmd`, as the conversation answers them.

use bosun_core::permission::{Permission, ProposedCall, decide};
use bosun_core::{CallId, Message, TurnOptions};
use bosun_tui::{FromUi, NoticeKind, ToUi};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Conversation, Flow, first_line};
use crate::exec::Stored;

/// What `/init` asks the model to do.
pub(super) const INIT_PROMPT: &str = "Look at this project (its layout, build and test files, README and \
    existing docs) and write an AGENTS.md at its root for coding agents: how to build, test and lint it, \
    where things live, and the conventions its code follows. Keep it short and factual; say only what you \
    checked. If an AGENTS.md already exists, improve it and keep what is still true.";

/// What `/init` asks. bosun reads AGENTS.md before CLAUDE.md in a folder
/// (`bosun_agent::instructions`), so an AGENTS.md written beside a CLAUDE.md
/// hides it: the model is told to carry it over.
fn init_prompt(workspace: &bosun_tools::Workspace) -> String {
    let is_file = |name: &str| {
        let path = bosun_tools::workspace::RelPath::parse(name).ok();
        path.and_then(|path| workspace.kind(&path).ok().flatten()).is_some_and(|kind| kind.is_file())
    };
    let mut prompt = INIT_PROMPT.to_owned();
    if is_file("CLAUDE.md") && !is_file("AGENTS.md") {
        prompt.push_str(
            " There is a CLAUDE.md at the root and no AGENTS.md yet: once AGENTS.md exists, CLAUDE.md in the same \
             folder is no longer read, so read CLAUDE.md first and carry over everything in it that is still true.",
        );
    }
    prompt
}

impl Conversation<'_> {
    pub(super) async fn command(
        &mut self,
        name: &str,
        args: &str,
        from_ui: &mut UnboundedReceiver<FromUi>,
    ) -> Flow {
        let done = match name {
            "quit" | "exit" => return Flow::Exit,
            "init" => return self.turn(Some(init_prompt(self.agent.workspace()).into()), from_ui).await,
            "model" => self.model(args).await,
            "effort" => self.effort(args).await,
            "mode" => self.mode(args),
            "new" => self.new_session().await,
            // Claude Code's name for the same: the conversation starts over,
            // the old session stays stored.
            "clear" => self.new_session().await,
            "status" => self.status_report(),
            "permissions" => self.permissions(args),
            "mcp" => {
                self.mcp_report();
                Ok(())
            }
            "review" => return self.review(args, from_ui).await,
            "resume" => self.resume(args).await,
            "fork" => self.fork().await,
            "rewind" => self.rewind(args).await,
            "compact" => self.compact().await,
            "cost" => self.cost(),
            "diff" => {
                self.diff();
                Ok(())
            }
            other => match self.custom.get(other).cloned() {
                Some(custom) => return self.custom(custom, args, from_ui).await,
                None => Err(anyhow::anyhow!("unknown command /{other}; /help lists them")),
            },
        };
        if let Err(error) = done {
            self.notice(NoticeKind::Error, format!("{error:#}"));
        }
        // Whatever the command did or failed to do, the line shows the
        // session as it is now.
        self.send_status();
        Flow::Continue
    }

    /// This session, as `resume` names it.
    pub(super) fn current(&self) -> Stored {
        Stored { id: Some(self.id.clone()), last: false, words: Vec::new(), branch: None }
    }

    /// Goes on in another session (`which`; a new one when `None`), or this
    /// one rebuilt, built with `settings`; the mode chosen with `/mode` stays.
    pub(super) async fn reopen(
        &mut self,
        settings: &crate::config::Settings,
        which: Option<Stored>,
    ) -> anyhow::Result<()> {
        let mode = self.session.mode();
        // The same stored session: this process holds its lease through the
        // session (and its inbox), so let go of it first.
        let same = which.as_ref().and_then(|w| w.id.as_deref()) == Some(self.id.as_str());
        if same {
            self.park().await?;
        }
        let opened = super::setup::session(self.agent, settings, &self.approver, which).await;
        let (mut session, id, running) = match opened {
            Ok(opened) => opened,
            Err(error) if same => {
                // Back to the session as it was, on the settings it ran with.
                let back =
                    super::setup::session(self.agent, &self.settings, &self.approver, Some(self.current()))
                        .await;
                return match back {
                    Ok((mut session, id, running)) => {
                        session.set_mode(mode);
                        self.switch(session, id, running);
                        Err(error)
                    }
                    Err(again) => {
                        Err(error.context(format!("and reopening it as it was failed too: {again:#}")))
                    }
                };
            }
            Err(error) => return Err(error),
        };
        session.set_mode(mode);
        self.switch(session, id, running);
        Ok(())
    }

    fn mode(&mut self, args: &str) -> anyhow::Result<()> {
        if !args.is_empty() {
            let mode = crate::config::parse_mode(args)?;
            self.session.set_mode(mode);
            self.send_status();
        }
        self.notice(NoticeKind::Info, format!("mode: {}", self.session.mode()));
        Ok(())
    }

    /// Shift+Tab: propose → write → plan → read-only → propose. Autonomous
    /// is never reached by a key (only `/mode autonomous` or `--mode`); from
    /// it the key narrows to plan.
    pub(super) fn cycle_mode(&mut self) {
        use bosun_core::Mode::{Autonomous, Plan, Propose, ReadOnly, Write};
        let next = match self.session.mode() {
            Propose => Write,
            Write | Autonomous => Plan,
            Plan => ReadOnly,
            ReadOnly => Propose,
        };
        self.session.set_mode(next);
        self.send_status();
        self.notice(NoticeKind::Info, format!("mode: {next} (shift+tab: the next mode)"));
    }

    async fn new_session(&mut self) -> anyhow::Result<()> {
        self.reopen(&self.settings.clone(), None).await?;
        self.notice(NoticeKind::Info, format!("new session {}", self.id));
        Ok(())
    }

    async fn resume(&mut self, args: &str) -> anyhow::Result<()> {
        let id = if args.is_empty() {
            match self.pick_recent().await? {
                Some(id) => id,
                None => return Ok(()),
            }
        } else {
            args.to_owned()
        };
        let which = Stored { id: Some(id), last: false, words: Vec::new(), branch: None };
        self.reopen(&self.settings.clone(), Some(which)).await?;
        self.show_opening();
        Ok(())
    }

    /// The session picker: this workspace's recent sessions, newest first
    /// (the choices `bosun resume` with no id offers too).
    async fn pick_recent(&self) -> anyhow::Result<Option<String>> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let workspace = self.agent.workspace().identity().path.clone();
        let items = crate::picker::recent_items(&store, &workspace, Some(&self.id))?;
        if items.is_empty() {
            self.notice(NoticeKind::Info, "no other session of this workspace to resume");
            return Ok(None);
        }
        let (reply, answer) = oneshot::channel();
        let title = "resume a session".to_owned();
        if self.to_ui.send(ToUi::Picker { title, items, reply }).is_err() {
            return Ok(None);
        }
        Ok(answer.await.ok().flatten())
    }

    async fn fork(&mut self) -> anyhow::Result<()> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let at = store.show(&self.id)?.history.last().map(|(m, _)| *m);
        let Some(at) = at else { anyhow::bail!("nothing to fork yet: the session has no messages") };
        let left = store.show(&self.id)?.head_branch;
        let branch = store.fork(&self.id, at)?;
        self.reopen(&self.settings.clone(), Some(self.current())).await?;
        let id = &self.id;
        self.notice(
            NoticeKind::Info,
            format!(
                "forked at message {at}: branch {branch} goes on from here; the branch it left stays (`bosun \
                 resume {id} --branch {left}`)"
            ),
        );
        Ok(())
    }

    async fn compact(&mut self) -> anyhow::Result<()> {
        let _ = self.to_ui.send(ToUi::Busy(true));
        let mut sink = super::UiSink::new(self.to_ui.clone(), std::sync::Arc::clone(&self.spent));
        let compacted = self.session.compact_now(TurnOptions::default(), &mut sink).await;
        let _ = self.to_ui.send(ToUi::Busy(false));
        match compacted? {
            Some(_) => {
                self.notice(NoticeKind::Info, "compacted: older turns are sent as a summary from now on")
            }
            None => self.notice(NoticeKind::Info, "nothing to compact yet"),
        }
        self.send_status();
        Ok(())
    }

    /// `/status`: what this conversation runs on and under, in one place.
    fn status_report(&self) -> anyhow::Result<()> {
        let settings = &self.settings;
        let servers = self.agent.mcp_servers().map(|s| s.server_names()).unwrap_or_default();
        let network = if settings.sandbox.network { ", network on" } else { "" };
        let mut lines = vec![
            format!("session {} ({} messages)", self.id, self.session.history().len()),
            format!("model: {}", bosun_agent::model::model_label(settings)),
            format!("mode: {}", self.session.mode()),
            format!("workspace: {}", self.agent.workspace().identity().path),
            format!("sandbox: {}{network}", settings.sandbox.mode),
            format!(
                "MCP servers: {}",
                if servers.is_empty() { "none".to_owned() } else { servers.join(", ") }
            ),
        ];
        let store = bosun_agent::parts::store(settings, self.env)?;
        lines.push(crate::sessions::usage_line(&store.show(&self.id)?, settings)?);
        self.notice(NoticeKind::Info, lines.join("\n"));
        Ok(())
    }

    fn cost(&self) -> anyhow::Result<()> {
        let store = bosun_agent::parts::store(&self.settings, self.env)?;
        let detail = store.show(&self.id)?;
        self.notice(NoticeKind::Info, crate::sessions::usage_line(&detail, &self.settings)?);
        Ok(())
    }

    /// The diffs of this session's edits and patches, in order; writes by
    /// name (their result carries no diff).
    fn diff(&self) {
        let (diffs, written) = self.session_changes();
        if diffs.is_empty() && written.is_empty() {
            self.notice(NoticeKind::Info, "this session changed no file yet");
            return;
        }
        if !diffs.is_empty() {
            let _ = self.to_ui.send(ToUi::Diff(diffs));
        }
        for line in written {
            self.notice(NoticeKind::Info, line);
        }
    }

    /// The diffs of this session's edits and patches, and the first lines
    /// of its whole-file writes.
    pub(super) fn session_changes(&self) -> (String, Vec<String>) {
        let mut diffs = String::new();
        let mut written = Vec::new();
        for message in self.session.history() {
            let Message::ToolResult { tool_name, is_error: false, .. } = message else { continue };
            let text = message.text();
            match tool_name.as_str() {
                "edit_file" | "apply_patch" => {
                    if let Some(at) = text.find("--- ") {
                        diffs.push_str(&text[at..]);
                        if !diffs.ends_with('\n') {
                            diffs.push('\n');
                        }
                    }
                }
                "write_file" => written.push(first_line(&text)),
                _ => {}
            }
        }
        (diffs, written)
    }

    pub(super) async fn shell(&mut self, command: &str, from_ui: &mut UnboundedReceiver<FromUi>) -> Flow {
        let Some(tool) = self.agent.tool("shell") else {
            self.notice(NoticeKind::Error, "no shell tool in this session (disabled in the config?)");
            return Flow::Continue;
        };
        let arguments = serde_json::json!({ "command": command });
        let effects = tool.effects(&arguments);
        let call = ProposedCall::new("shell", tool.category(), &arguments, &effects);
        let decided = decide(self.session.mode(), &self.settings.rules, &call);
        if decided.permission == Permission::Deny {
            self.notice(NoticeKind::Error, format!("not run: {}", decided.reason));
            return Flow::Continue;
        }
        let cancel = CancellationToken::new();
        let context = bosun_core::ToolContext::detached(CallId::new_v7(), cancel.clone());
        let _ = self.to_ui.send(ToUi::Busy(true));
        let run = tool.execute(arguments, context);
        tokio::pin!(run);
        let mut exit = false;
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                message = from_ui.recv() => match message {
                    Some(FromUi::Cancel) => cancel.cancel(),
                    Some(FromUi::Exit) | None => { cancel.cancel(); exit = true; }
                    _ => {}
                },
            }
        };
        let _ = self.to_ui.send(ToUi::Busy(false));
        let kind = if output.is_error { NoticeKind::Error } else { NoticeKind::Info };
        let text: String = output
            .content
            .iter()
            .filter_map(|part| match part {
                bosun_core::ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        self.notice(kind, format!("$ {command}\n{}", text.trim_end()));
        if exit { Flow::Exit } else { Flow::Continue }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_carries_over_a_claude_md_that_an_agents_md_would_hide() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = bosun_tools::Workspace::open(dir.path()).unwrap();
        assert_eq!(init_prompt(&workspace), INIT_PROMPT, "nothing to carry over");
        std::fs::write(dir.path().join("CLAUDE.md"), "use tabs").unwrap();
        assert!(init_prompt(&workspace).contains("read CLAUDE.md first and carry over"));
        std::fs::write(dir.path().join("AGENTS.md"), "use tabs").unwrap();
        assert_eq!(init_prompt(&workspace), INIT_PROMPT, "AGENTS.md is already the one read");
    }
}
